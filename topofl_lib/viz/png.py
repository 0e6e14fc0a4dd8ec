"""Static PNG export of plotly figures through kaleido, one Chromium per process.

Each ``fig.write_image`` on its own starts a Chromium and stops it again: 2.3 s a figure
on this project's two-core machine, whatever the figure. kaleido's sync server (its
public ``kaleido.start_sync_server``) keeps one Chromium for every later export of the
process: 0.16 s a figure (measured, kaleido 1.5, plotly 7.1). The first export of a
process still runs on its own, so that a missing Chromium is found by the call that
raises (a server whose Chromium cannot start would wait for it forever); the server
starts after it succeeded.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["serving", "write_png"]

#: The process that started kaleido's server (a forked child inherits the server's
#: state but not its thread, so it starts its own).
_SERVER_PID: int | None = None

#: plotly hands these options to kaleido with every figure; a server takes them once,
#: at its start, and warns that the per-figure copy is ignored.
_KOPTS_IGNORED = "The kopts argument is ignored if using a server"


def _server_options() -> dict:
    """The options plotly would pass with each figure (``plotly.io.defaults``)."""
    d = pio.defaults
    return {k: v for k, v in (("plotlyjs", d.plotlyjs), ("mathjax", d.mathjax),
                              ("headers", getattr(d, "headers", None))) if v}


def _start_server() -> None:
    """Start kaleido's server for this process (after a first export succeeded)."""
    global _SERVER_PID
    import kaleido

    kaleido.start_sync_server(silence_warnings=True, **_server_options())
    _SERVER_PID = os.getpid()


def _forget_inherited_server() -> None:
    """In a process forked from one with a server: mark kaleido's server stopped (its
    thread did not survive the fork; a figure sent to it would wait forever)."""
    global _SERVER_PID
    import kaleido

    kaleido.stop_sync_server(silence_warnings=True)
    _SERVER_PID = None


def serving() -> bool:
    """Whether this process's exports go to its kaleido server (one Chromium for all).

    Returns
    -------
    bool
        True once an export of this process succeeded (its server then started).
    """
    return _SERVER_PID == os.getpid()


def write_png(fig: go.Figure, path: str | Path, scale: float = 1.5) -> None:
    """Write ``fig`` as a PNG image at ``path`` (kaleido; raises where Chromium is missing).

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        The figure.
    path : str or Path
        The file to write.
    scale : float, default=1.5
        Pixels per layout pixel.
    """
    if _SERVER_PID is not None and _SERVER_PID != os.getpid():
        _forget_inherited_server()
    if serving():
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_KOPTS_IGNORED, category=UserWarning)
            fig.write_image(path, format="png", scale=scale)
        return
    fig.write_image(path, format="png", scale=scale)
    _start_server()
