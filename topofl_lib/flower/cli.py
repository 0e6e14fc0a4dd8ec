"""``python -m topofl_lib flower``: its arguments, checked before anything is written.

:func:`add_parser` adds the ``flower`` sub-command to the library's command line
(:func:`topofl_lib.reproduce.main`) and :func:`run` runs it. Every argument is checked
while it is parsed, with the checks :func:`~topofl_lib.flower.demo.flower_demo` makes
(``--rounds`` 1 to 10000, ``--seed`` 0 to 2**31 - 2, ``--workdir`` a folder that exists
or can be created, and is writable); so is, before the demo starts, that the ``flower``
extra is installed. Every error is one ``error:`` line on stderr, exit status 2, with
nothing written and nothing started. Flower itself is imported only when the demo runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

__all__ = ["INSECURE_WARNING", "NO_FORK", "PROG", "add_parser", "run"]

#: Printed (to stderr) when the federation runs with ``--insecure``.
INSECURE_WARNING = ("WARNING: --insecure: no TLS and no SuperNode authentication; any "
                    "process that can reach the SuperLink's port can join the federation "
                    "and read the models")

#: The command, as its error messages name it (``topofl flower`` from the console script).
PROG = "python -m topofl_lib flower"

#: Why the local federation cannot run where Python has no ``os.fork`` (Windows).
NO_FORK = ("the local federation forks its SuperNodes from one process (os.fork) and ends "
           "them by process group, which Windows does not have: run it on Linux, or in WSL 2 "
           "on Windows")


def _refused(exc: Exception) -> argparse.ArgumentTypeError:
    """A check's error (``"<name> must be ..."`` with an empty name) as argparse's: it
    prefixes ``argument --option:`` itself."""
    return argparse.ArgumentTypeError(str(exc).strip())


def _int_in(low: int, high: int):
    """An argparse ``type``: an integer in ``[low, high]`` (:func:`check_int`'s check)."""
    from .._validation import check_int

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        try:
            return check_int(value, "", low=low, high=high)
        except ValueError as exc:
            raise _refused(exc) from None

    parse.__name__ = f"integer in [{low}, {high}]"
    return parse


def _workdir(text: str) -> str:
    """An argparse ``type``: a folder that exists or can be created (returned as given)."""
    from .federation import check_workdir

    try:
        check_workdir(text, "")
    except ValueError as exc:
        raise _refused(exc) from None
    return text


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``flower`` sub-command to ``subparsers`` (of ``argparse``); returns it."""
    from .demo import MAX_ROUNDS, MAX_SEED
    from .federation import FLOWER_METHODS

    flw = subparsers.add_parser(
        "flower", help="run the healthcare scenario on a local Flower federation "
                       "(needs pip install -e .[flower])",
        description="Run the healthcare scenario on a local Flower federation (a SuperLink "
                    "and one SuperNode per hospital on 127.0.0.1) beside the in-process "
                    "engine. Secure by default: TLS with a certificate authority made at "
                    "start, and SuperNodes authenticated with registered keys.")
    flw.add_argument("--method", default="pTopoFL", choices=list(FLOWER_METHODS))
    flw.add_argument("--rounds", type=_int_in(1, MAX_ROUNDS), default=15,
                     help=f"training rounds (1 to {MAX_ROUNDS})")
    flw.add_argument("--seed", type=_int_in(0, MAX_SEED), default=0,
                     help=f"seed of the scenario and the run (0 to {MAX_SEED})")
    flw.add_argument("--workdir", type=_workdir, default="build/flower",
                     help="data files, credentials, logs and results go here (a folder; "
                          "created if missing)")
    flw.add_argument("--insecure", action="store_true",
                     help="no TLS and no SuperNode authentication (prints a warning)")
    flw.add_argument("--fast-waits", action="store_true",
                     help="opt into the adapter that shortens waits inside Flower's modules "
                          "and runs ClientApps from a long-lived executor "
                          "(topofl_lib.flower.fast_waits; only on the flwr version it was "
                          "verified with, else Flower's own waits and executor with a "
                          "one-line notice)")
    flw.set_defaults(flower_prog=flw.prog)
    return flw


def _fail(message: str, prog: str = PROG) -> NoReturn:
    """Exit as an argparse error does: one line on stderr, status 2."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def run(args: argparse.Namespace) -> int:
    """Run the demo with parsed ``args``; returns the exit status.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments of :func:`add_parser`'s sub-command.

    Returns
    -------
    int
        0 once the demo has run. Without the ``flower`` extra, or on a platform without
        ``os.fork`` (Windows), it exits (``SystemExit`` with status 2, one line on stderr)
        before anything is written.
    """
    from .demo import flower_demo
    from .federation import FlowerNotInstalled, require_flower

    prog = getattr(args, "flower_prog", PROG)
    if not hasattr(os, "fork"):
        _fail(NO_FORK, prog)
    try:
        require_flower()
    except FlowerNotInstalled as exc:
        _fail(str(exc), prog)
    if args.insecure:
        print(INSECURE_WARNING, file=sys.stderr)
    flower_demo(args.method, args.rounds, args.seed, args.workdir, secure=not args.insecure,
                fast_waits=args.fast_waits)
    return 0
