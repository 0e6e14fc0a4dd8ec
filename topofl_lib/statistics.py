"""Statistics of multi-seed comparisons: summaries, paired differences, Holm's adjustment.

Every method of a comparison sees the same scenario realisation within a seed (the
scenario and the method are both seeded with it), so per-seed differences between
methods are *paired*: :func:`paired_differences` reports their mean, a t confidence
interval and a Wilcoxon signed-rank p-value, Holm-adjusted over the table
(:func:`holm`), or over all the tables of a notebook (:func:`holm_family`, which also
widens every interval to a simultaneous one over the family: :func:`simultaneous_intervals`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["METRICS", "holm", "holm_family", "paired_differences", "simultaneous_intervals",
           "summarise"]

#: The per-run metrics of a comparison's ``final`` table.
METRICS = ("auc", "accuracy", "convergence_round")


#: The confidence level of every interval of this module (before any adjustment).
LEVEL = 0.95


def _ci(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    n = values.size
    if n < 2:
        return float("nan"), float("nan")
    half = stats.t.ppf(0.5 + level / 2, n - 1) * values.std(ddof=1) / np.sqrt(n)
    return float(values.mean() - half), float(values.mean() + half)


def _real_array(values, name: str) -> np.ndarray:
    """``values`` as float64, once they are real numbers (not strings, flags or complex)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf" and not (arr.dtype.kind == "O" and all(
            isinstance(v, (int, float, np.integer, np.floating))
            and not isinstance(v, (bool, np.bool_)) for v in arr.ravel())):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def _check_final(final, metric: str, columns: tuple[str, ...]) -> None:
    """``final`` is a table of runs with ``columns``; its ``metric`` real and not infinite
    (NaN is a diverged run), one row per (method, seed)."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {list(METRICS)}")
    if not isinstance(final, pd.DataFrame):
        raise TypeError(f"final must be a DataFrame of runs, got {type(final).__name__}")
    missing = [c for c in columns if c not in final.columns]
    if missing:
        raise ValueError(f"final lacks the column(s) {missing}; it has {list(final.columns)}")
    if np.isinf(_real_array(final[metric], f"final[{metric!r}]")).any():
        raise ValueError(f"final[{metric!r}] holds infinite values")
    if "seed" in columns and final.duplicated(["method", "seed"]).any():
        method, seed = final.loc[final.duplicated(["method", "seed"]), ["method", "seed"]].iloc[0]
        raise ValueError(f"final holds more than one row of (method, seed) ({method!r}, {seed})")


def summarise(final: pd.DataFrame, metric: str = "auc") -> pd.DataFrame:
    """Per method: ``mean``, ``std`` (ddof=1), 95% t-interval, ``n_seeds``.

    The interval is in ``ci_low``/``ci_high``.

    Parameters
    ----------
    final : pandas.DataFrame
        One row per (method, seed), as :attr:`topofl_lib.runner.ComparisonResult.final`.
    metric : str, default="auc"
        A name of :data:`METRICS`.

    Returns
    -------
    pandas.DataFrame
        Indexed by method.
    """
    _check_final(final, metric, ("method", metric))
    rows = []
    for method, g in final.groupby("method", sort=False):
        v = g[metric].to_numpy(dtype=np.float64)
        lo, hi = _ci(v)
        rows.append({"method": method, "mean": v.mean(),
                     "std": v.std(ddof=1) if v.size > 1 else 0.0,
                     "ci_low": lo, "ci_high": hi, "n_seeds": v.size})
    return pd.DataFrame(rows).set_index("method")


def paired_differences(final: pd.DataFrame, reference: str = "pTopoFL",
                       metric: str = "auc") -> pd.DataFrame:
    """Per-seed paired differences ``reference - method`` for every other method.

    Columns: ``mean_diff``, 95% t-interval ``ci_low``/``ci_high``, ``wins`` (seeds where
    the reference is strictly better), ``n_seeds``, the two-sided Wilcoxon signed-rank
    ``p_wilcoxon`` (NaN when every difference is zero or n < 2), and ``p_holm``: the
    Wilcoxon p-values Holm-adjusted over the comparisons of this table (:func:`holm`).
    A notebook that reports several tables adjusts over all of them with
    :func:`holm_family`; a difference is called significant only when its adjusted
    p-value is below 0.05.

    Parameters
    ----------
    final : pandas.DataFrame
        One row per (method, seed), as :attr:`topofl_lib.runner.ComparisonResult.final`.
    reference : str, default="pTopoFL"
        The method the others are compared with (must be present).
    metric : str, default="auc"
        A name of :data:`METRICS`.

    Returns
    -------
    pandas.DataFrame
        Indexed by method (every method but ``reference``).
    """
    _check_final(final, metric, ("method", "seed", metric))
    wide = final.pivot(index="seed", columns="method", values=metric)
    if reference not in wide:
        raise ValueError(f"reference method {reference!r} is not in the results")
    rows = []
    for method in wide.columns:
        if method == reference:
            continue
        d = (wide[reference] - wide[method]).dropna().to_numpy(dtype=np.float64)
        lo, hi = _ci(d)
        p = float("nan")
        if d.size >= 2 and np.any(d != 0):
            p = float(stats.wilcoxon(d).pvalue)
        rows.append({"method": method, "mean_diff": d.mean(), "ci_low": lo, "ci_high": hi,
                     "wins": int((d > 0).sum()), "n_seeds": d.size, "p_wilcoxon": p})
    out = pd.DataFrame(rows).set_index("method")
    return out.assign(p_holm=holm(out["p_wilcoxon"].to_numpy(dtype=np.float64)))


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (Holm, 1979).

    The ``i``-th smallest of ``m`` p-values becomes ``max_{j <= i} min(1, (m - j + 1)
    p_(j))``; rejecting where the adjusted value is below ``alpha`` controls the
    family-wise error rate at ``alpha``. NaN entries (no test) stay NaN and do not
    count in ``m``.

    Parameters
    ----------
    pvalues : array-like of float
        The raw p-values, each in [0, 1] or NaN.

    Returns
    -------
    numpy.ndarray
        The adjusted p-values, in the input's order.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    p = _real_array(pvalues, "pvalues")
    if p.ndim != 1:
        raise ValueError(f"pvalues must be 1-D, got shape {p.shape}")
    tested = ~np.isnan(p)
    if np.any((p[tested] < 0) | (p[tested] > 1)):
        raise ValueError(f"pvalues must lie in [0, 1], got {p[tested].min()} to "
                         f"{p[tested].max()}")
    out = np.full_like(p, np.nan)
    idx = np.flatnonzero(tested)[np.argsort(p[tested], kind="stable")]
    m = idx.size
    out[idx] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[idx]))
    return out


def holm_family(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The paired tables of one notebook as one family: ``p_holm`` over all of them.

    Parameters
    ----------
    tables : dict
        ``{name: table}`` of :func:`paired_differences` outputs (each with
        ``p_wilcoxon``), e.g. one per scenario or protocol.

    Returns
    -------
    pandas.DataFrame
        The tables stacked (first index level: the name), with ``p_holm`` recomputed
        over every comparison of the family, ``family_size`` (the number of tests) and
        the intervals widened to hold simultaneously over the family
        (:func:`simultaneous_intervals`: ``ci_low_adj``, ``ci_high_adj``).
    """
    if not isinstance(tables, Mapping) or not tables:
        raise ValueError("tables must be a non-empty dict {name: paired table}")
    stacked = pd.concat(dict(tables), names=["table"])
    if "p_wilcoxon" not in stacked:
        raise ValueError("tables must be paired_differences outputs (no p_wilcoxon column)")
    adjusted = holm(stacked["p_wilcoxon"].to_numpy(dtype=np.float64))
    size = int(stacked["p_wilcoxon"].notna().sum())
    return simultaneous_intervals(stacked.assign(p_holm=adjusted, family_size=size),
                                  max(size, 1))


def simultaneous_intervals(table: pd.DataFrame, family_size: int) -> pd.DataFrame:
    """Bonferroni-widened paired intervals: ``ci_low_adj``/``ci_high_adj``.

    Each 95% t-interval of a :func:`paired_differences` table (``mean_diff`` +- ``t(0.975,
    n - 1) s / sqrt(n)``) is rescaled to the level ``1 - 0.05 / family_size``, i.e. its
    half-width is multiplied by ``t(1 - 0.025 / m, n - 1) / t(0.975, n - 1)``; the ``m``
    intervals then hold together with probability at least 95% (Bonferroni), so an
    adjusted interval that excludes 0 is a difference that survives the multiple
    comparisons. ``family_size=1`` leaves the intervals as they are.

    Parameters
    ----------
    table : pandas.DataFrame
        A :func:`paired_differences` table (``mean_diff``, ``ci_low``, ``ci_high``,
        ``n_seeds``), or several stacked.
    family_size : int
        The number of comparisons ``m`` the intervals are adjusted for (at least 1).

    Returns
    -------
    pandas.DataFrame
        ``table`` with ``ci_low_adj`` and ``ci_high_adj`` (NaN where ``n_seeds < 2``).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"mean_diff": [1.0], "ci_low": [0.0], "ci_high": [2.0],
    ...                   "n_seeds": [5]})
    >>> simultaneous_intervals(t, 1)[["ci_low_adj", "ci_high_adj"]].to_numpy().tolist()
    [[0.0, 2.0]]
    """
    if isinstance(family_size, bool) or not isinstance(family_size, (int, np.integer)) \
            or family_size < 1:
        raise ValueError(f"family_size must be an int >= 1, got {family_size!r}")
    missing = {"mean_diff", "ci_low", "ci_high", "n_seeds"} - set(table.columns)
    if missing:
        raise ValueError(f"table must be a paired_differences table; missing {sorted(missing)}")
    n = table["n_seeds"].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        df = np.where(n >= 2, n - 1, np.nan)
        widen = (stats.t.ppf(1 - (1 - LEVEL) / 2 / family_size, df)
                 / stats.t.ppf(1 - (1 - LEVEL) / 2, df))
    half = (table["ci_high"] - table["ci_low"]).to_numpy(dtype=np.float64) / 2 * widen
    mean = table["mean_diff"].to_numpy(dtype=np.float64)
    return table.assign(ci_low_adj=mean - half, ci_high_adj=mean + half)
