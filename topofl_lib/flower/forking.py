"""The one way a forked process of the Flower deployment ends.

A child forked from a Python process holds its parent's whole state: its ``finally``
blocks, ``atexit`` handlers and, under pytest, the test session. :func:`finish_child`
runs the child's work and then leaves with :func:`os._exit`, so none of that runs twice.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

__all__ = ["exit_status", "finish_child"]


def exit_status(exit_: SystemExit) -> int:
    """The exit status a :class:`SystemExit` asks for, as the interpreter maps it.

    Parameters
    ----------
    exit_ : SystemExit
        The exception.

    Returns
    -------
    int
        Its code if an int, 0 for ``None``, 1 for anything else (a message).
    """
    if isinstance(exit_.code, int):
        return exit_.code
    return 0 if exit_.code is None else 1


def finish_child(work: Callable[..., object], *args) -> NoReturn:
    """Run ``work(*args)`` in a forked child, then end the child.

    The status is 0 when ``work`` returns, the status a :class:`SystemExit` asks for
    (Flower ends its commands with ``sys.exit``), or 1 after the traceback of any other
    exception is printed. The standard streams are flushed first.

    Parameters
    ----------
    work : callable
        The child's work.
    *args
        Passed to ``work``.

    Returns
    -------
    NoReturn
        Never: the child ends here.
    """
    code = 1
    try:
        work(*args)
        code = 0
    except SystemExit as exit_:
        code = exit_status(exit_)
    except BaseException:  # noqa: BLE001 - report anything, then leave
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
