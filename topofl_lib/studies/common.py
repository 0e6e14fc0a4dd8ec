"""Helpers every study's claim mapping shares: per-seed selections, the protocol column."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claim_keys import PROTOCOL_PREFIXES

__all__ = ["mean_sd", "per_seed", "percent", "with_protocol"]


def with_protocol(final: pd.DataFrame, protocol: str | None) -> pd.DataFrame:
    """``final`` with a checked ``protocol`` column (its own, or ``protocol`` for all rows).

    Parameters
    ----------
    final : pandas.DataFrame
        A comparison's ``final`` table, with or without a ``protocol`` column.
    protocol : {"paper", "ours"} or None
        The protocol of every row, only for a table without the column.

    Returns
    -------
    pandas.DataFrame
        ``final`` with a ``protocol`` column of known protocols.
    """
    if "protocol" in final:
        if protocol is not None:
            raise ValueError("give protocol only for a table without a 'protocol' column")
    elif protocol is None:
        raise ValueError("final has no 'protocol' column; pass protocol='paper' or 'ours'")
    else:
        final = final.assign(protocol=protocol)
    unknown = sorted(set(final["protocol"]) - set(PROTOCOL_PREFIXES))
    if unknown:
        raise ValueError(f"unknown protocol(s) {unknown}; expected {list(PROTOCOL_PREFIXES)}")
    return final


def per_seed(df: pd.DataFrame, column: str, **where) -> np.ndarray:
    """``column`` of the rows matching ``where`` (``column=value`` pairs), sorted by seed.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows with a ``seed`` column.
    column : str
        The column read.
    **where
        Equalities the rows must satisfy.

    Returns
    -------
    numpy.ndarray
        One value per matching row, in seed order.
    """
    m = np.ones(len(df), dtype=bool)
    for key, value in where.items():
        m &= (df[key] == value).to_numpy()
    return df[m].sort_values("seed")[column].to_numpy(dtype=np.float64)


def percent(g: pd.DataFrame) -> np.ndarray:
    """The ``accuracy`` of ``g``'s rows in percent, in seed order.

    Parameters
    ----------
    g : pandas.DataFrame
        Rows with ``seed`` and ``accuracy`` (a fraction).

    Returns
    -------
    numpy.ndarray
        ``100 * accuracy``, sorted by seed.
    """
    return 100.0 * g.sort_values("seed")["accuracy"].to_numpy(dtype=np.float64)


def mean_sd(values, digits: int = 2) -> str:
    """``"mean ± sd"`` of ``values``, NaN left out (``n/a`` when empty, no sd for one).

    Parameters
    ----------
    values : array-like of float
        The values (one per seed, say).
    digits : int, default=2
        Decimals of both numbers.

    Returns
    -------
    str
        The mean and the sample standard deviation.

    Examples
    --------
    >>> mean_sd([88.0, 89.0, 90.0])
    '89.00 ± 1.00'
    >>> mean_sd([71.5], digits=1)
    '71.5'
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return "n/a"
    return f"{v.mean():.{digits}f}" + (f" ± {v.std(ddof=1):.{digits}f}" if v.size > 1 else "")
