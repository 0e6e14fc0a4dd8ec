"""``python -m topofl_lib flower``: its arguments, checked before anything is written.

:func:`add_parser` adds the ``flower`` sub-command to the library's command line
(:func:`topofl_lib.reproduce.main`) and :func:`run` runs it. Bad values (``--rounds
0``, a negative seed) are argparse errors: one ``error:`` line after the usage, exit
status 2, nothing written. Flower itself is imported only when the demo runs.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["INSECURE_WARNING", "add_parser", "run"]

#: Printed (to stderr) when the federation runs with ``--insecure``.
INSECURE_WARNING = ("WARNING: --insecure: no TLS and no SuperNode authentication; any "
                    "process that can reach the SuperLink's port can join the federation "
                    "and read the models")


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``flower`` sub-command to ``subparsers`` (of ``argparse``); returns it."""
    from .federation import FLOWER_METHODS

    flw = subparsers.add_parser(
        "flower", help="run the healthcare scenario on a local Flower federation "
                       "(needs pip install -e .[flower])",
        description="Run the healthcare scenario on a local Flower federation (a SuperLink "
                    "and one SuperNode per hospital on 127.0.0.1) beside the in-process "
                    "engine. Secure by default: TLS with a certificate authority made at "
                    "start, and SuperNodes authenticated with registered keys.")
    flw.add_argument("--method", default="pTopoFL", choices=list(FLOWER_METHODS))
    flw.add_argument("--rounds", type=_int_at_least(1), default=15,
                     help="training rounds (>= 1)")
    flw.add_argument("--seed", type=_int_at_least(0), default=0)
    flw.add_argument("--workdir", default="build/flower",
                     help="data files, credentials, logs and results go here")
    flw.add_argument("--insecure", action="store_true",
                     help="no TLS and no SuperNode authentication (prints a warning)")
    return flw


def run(args: argparse.Namespace) -> int:
    """Run the demo with parsed ``args``; returns the exit status."""
    from .demo import flower_demo

    if args.insecure:
        print(INSECURE_WARNING, file=sys.stderr)
    flower_demo(args.method, args.rounds, args.seed, args.workdir, secure=not args.insecure)
    return 0
