"""Page-sized layouts shared by the figures: panel grids, widths, and dodged points."""

from __future__ import annotations

import numpy as np

from .._validation import check_int

__all__ = ["MAX_COLS", "MAX_WIDTH", "dodge", "grid_shape", "panel_position", "page_width"]

#: The widest figure, in pixels at scale 1 (a page or a notebook cell).
MAX_WIDTH = 1400
#: Panels in one row, at most.
MAX_COLS = 4


def grid_shape(n: int, max_cols: int = MAX_COLS) -> tuple[int, int]:
    """``(rows, cols)`` of a grid of ``n`` panels with at most ``max_cols`` columns.

    The columns are as few as keep the rows to ``ceil(n / max_cols)`` (5 panels in
    two rows of 3, not 4 + 1).

    Parameters
    ----------
    n : int
        Panels (>= 1).
    max_cols : int, default=4
        Columns at most (>= 1).

    Returns
    -------
    tuple of int
    """
    n = check_int(n, "n", low=1)
    max_cols = check_int(max_cols, "max_cols", low=1)
    rows = -(-n // max_cols)
    return rows, -(-n // rows)


def panel_position(i: int, cols: int) -> tuple[int, int]:
    """The 1-based ``(row, col)`` of panel ``i`` (0-based, row by row).

    Parameters
    ----------
    i : int
        Panel index.
    cols : int
        Columns of the grid.

    Returns
    -------
    tuple of int
    """
    r, c = divmod(i, cols)
    return r + 1, c + 1


def page_width(cols: int, panel: int, margin: int = 160) -> int:
    """A figure's width for ``cols`` panels of ``panel`` pixels, capped at :data:`MAX_WIDTH`.

    Parameters
    ----------
    cols : int
        Panels in a row.
    panel : int
        Width of one panel in pixels.
    margin : int, default=160
        Room for axis titles and the legend.

    Returns
    -------
    int
    """
    return min(MAX_WIDTH, cols * panel + margin)


def dodge(x, i: int, n: int, log: bool = False, share: float = 0.35) -> np.ndarray:
    """Numeric ``x`` shifted for series ``i`` of ``n``, so that error bars do not overlap.

    The ``n`` series spread over ``share`` of the smallest gap between two x values,
    centred on them (multiplicatively on a log axis). A single x value, or a single
    series, is returned as it is.

    Parameters
    ----------
    x : array-like of float
        The x values of series ``i``.
    i : int
        The series (0-based).
    n : int
        Series in the figure.
    log : bool, default=False
        Whether the axis is logarithmic.
    share : float, default=0.35
        Fraction of the smallest gap the series spread over.

    Returns
    -------
    numpy.ndarray
    """
    x = np.asarray(x, dtype=np.float64)
    u = np.unique(np.log10(x) if log else x)
    if n < 2 or u.size < 2:
        return x
    step = share * float(np.diff(u).min()) / n
    offset = (i - (n - 1) / 2) * step
    return x * 10.0 ** offset if log else x + offset
