"""The values the FedTopo notebook's comparison with the paper states in prose.

Each function reduces tables the notebook has already shown to the few numbers (and
lists of methods) one paragraph of its "How this compares with the paper" section
states; the notebook fills its templates with :func:`topofl_lib.prose.render`, so a
re-run on other seeds, another profile or another machine rewrites the paragraph and no
measured number is typed by hand. Accuracies are in percent; a paired difference is
``FedTopo - other`` in points, with its Bonferroni-adjusted interval
(:func:`topofl_lib.statistics.holm_family`). A value that the run lacks (a partition or
method not run, a single seed) is NaN, which ``render`` shows as ``n/a``, or the word
``none``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..claim_keys import METHOD_KEYS
from .common import mean_sd, percent

__all__ = ["alpha_floor_values", "diverged_runs", "figure_values", "mean_sd", "nskew_values",
           "paired_grid", "paper_gaps", "personal_values", "seed_range", "table1_values",
           "table2_values", "table3_values", "table4_values"]

NONE = "none"


def _accuracy(final: pd.DataFrame, method: str, partition: str | None = None) -> np.ndarray:
    rows = final[final["method"] == method]
    if partition is not None:
        rows = rows[rows["partition"] == partition]
    return percent(rows)


def _interval(row: pd.Series) -> str:
    """``"+0.99 (-2.65 to +4.64)"``: a paired row's mean difference and adjusted interval,
    in points."""
    d, lo, hi = (100.0 * float(row[k]) for k in ("mean_diff", "ci_low_adj", "ci_high_adj"))
    return f"{d:+.2f}" + ("" if np.isnan(lo) else f" ({lo:+.2f} to {hi:+.2f})")


def _excludes_zero(row: pd.Series) -> int:
    """+1 where a paired row's adjusted interval lies above 0 (FedTopo ahead), -1 below, else
    0 (an interval that contains 0, or none)."""
    return int(row["ci_low_adj"] > 0) - int(row["ci_high_adj"] < 0)


def _names(items) -> str:
    return ", ".join(items) if len(items) else NONE


def table1_values(paired: pd.DataFrame, reference: str = "FedAvg") -> dict:
    """Table 1's verdict: FedTopo against every other run of the family.

    Parameters
    ----------
    paired : pandas.DataFrame
        :func:`~topofl_lib.statistics.holm_family` of ``FedTopo - other`` per partition
        (index: partition, method).
    reference : str, default="FedAvg"
        The method whose difference is given per partition.

    Returns
    -------
    dict
        ``n_comparisons`` (with an interval), ``ahead`` / ``behind`` (the comparisons whose
        adjusted interval lies above / below 0, as ``"method (partition)"``), their counts
        ``n_ahead`` / ``n_behind``, ``vs_reference`` (per partition: difference and
        interval) and ``seeds`` (the fewest and most seeds of a comparison).
    """
    tested = paired[paired["ci_low_adj"].notna()]
    side = {f"{m} ({p})": _excludes_zero(r) for (p, m), r in tested.iterrows()}
    ahead = [s for s, v in side.items() if v > 0]
    behind = [s for s, v in side.items() if v < 0]
    ref = paired.xs(reference, level=1) if reference in paired.index.get_level_values(1) \
        else paired.iloc[:0]
    n = paired["n_seeds"]
    return {"n_comparisons": len(tested), "n_ahead": len(ahead), "ahead": _names(ahead),
            "n_behind": len(behind), "behind": _names(behind),
            "vs_reference": "; ".join(f"{p}-skew {_interval(r)}" for p, r in ref.iterrows())
            or NONE,
            "seeds": f"{n.min()}" if n.min() == n.max() else f"{n.min()} to {n.max()}"}


def paired_grid(paired: pd.DataFrame, order: Sequence[str] | None = None) -> pd.DataFrame:
    """The family of paired differences as one row per method and one column per partition.

    Parameters
    ----------
    paired : pandas.DataFrame
        :func:`~topofl_lib.statistics.holm_family` of ``FedTopo - other`` per partition
        (index: partition, method).
    order : sequence of str, optional
        The methods' row order (Table 1's, say); methods of ``paired`` that it lacks follow
        in their first order of appearance, and names that ``paired`` lacks are skipped.
        By default the first order of appearance in ``paired``.

    Returns
    -------
    pandas.DataFrame
        Index: the methods in ``order``; columns: the partitions in their first order of
        appearance. A cell is ``"+0.99 (-2.65 to +4.64)"`` (difference and adjusted interval,
        points; the difference alone with one seed), with ``*`` after an interval that
        excludes 0, or ``""`` where the method did not run on that partition.

    Examples
    --------
    >>> import pandas as pd
    >>> paired = pd.DataFrame({"mean_diff": [0.01, 0.05], "ci_low_adj": [-0.02, 0.01],
    ...                        "ci_high_adj": [0.04, 0.09]},
    ...                       index=pd.MultiIndex.from_tuples([("N", "FedAvg"), ("L", "FedAvg")]))
    >>> paired_grid(paired).loc["FedAvg"].tolist()
    ['+1.00 (-2.00 to +4.00)', '+5.00 (+1.00 to +9.00) *']
    """
    cells = {(m, p): _interval(r) + (" *" if _excludes_zero(r) else "")
             for (p, m), r in paired.iterrows()}
    present = list(dict.fromkeys(paired.index.get_level_values(1)))
    if isinstance(order, str):
        raise TypeError(f"order must be a sequence of method names, got the str {order!r}")
    first = [] if order is None else list(order)
    methods = [m for m in dict.fromkeys([*first, *present]) if m in present]
    partitions = list(dict.fromkeys(paired.index.get_level_values(0)))
    return pd.DataFrame([[cells.get((m, p), "") for p in partitions] for m in methods],
                        index=pd.Index(methods, name="method"),
                        columns=pd.Index(partitions, name="partition"))


def diverged_runs(final: pd.DataFrame) -> str:
    """The runs whose final accuracy is NaN, as ``"SCAFFOLD on Q-skew (seeds 0, 1)"``."""
    bad = final[final["accuracy"].isna()]
    parts = [f"{m} on {p}-skew (seed{'s' if len(g) > 1 else ''} "
             f"{', '.join(str(s) for s in sorted(g['seed']))})"
             for (m, p), g in bad.groupby(["method", "partition"], sort=True)]
    return "; ".join(parts) or NONE


def paper_gaps(compared: pd.DataFrame, method: str, table: str = "fedtopo.t1.fmnist"
               ) -> str:
    """Ours minus the paper's Table 1 value per partition, ``"N +28.6, L -5.3"``.

    Parameters
    ----------
    compared : pandas.DataFrame
        :func:`~topofl_lib.results.compare_with_paper` of the measured claim rows.
    method : str
        A Table 1 method label.
    table : str, default="fedtopo.t1.fmnist"
        The claim-id prefix of the table.

    Returns
    -------
    str
        One ``"partition difference"`` per measured partition, or ``"none"``.
    """
    key = METHOD_KEYS[method]
    gaps = [f"{p} {compared.loc[i, 'difference']:+.1f}" for p in "NLKQ"
            if (i := f"{table}.{p}.{key}") in compared.index]
    return ", ".join(gaps) or NONE


def nskew_values(final: pd.DataFrame, compared: pd.DataFrame, readings: pd.DataFrame,
                 pixel: pd.DataFrame) -> dict:
    """N-skew: the baselines against the paper's, and FedAvg under every other reading.

    Parameters
    ----------
    final : pandas.DataFrame
        Table 1's final rows (``method``, ``partition``, ``seed``, ``accuracy``).
    compared : pandas.DataFrame
        :func:`~topofl_lib.results.compare_with_paper` of the measured claim rows.
    readings : pandas.DataFrame
        Final rows with a ``reading`` column (Table 1's and each N-skew reading).
    pixel : pandas.DataFrame
        FedAvg's final rows with the noise in pixel units.

    Returns
    -------
    dict
        ``ours_low``/``ours_high`` (the lowest and highest mean of the methods other than
        FedTopo), ``paper_low``/``paper_high`` (the paper's values for the same methods),
        ``pixel`` and ``per_reading`` (FedAvg, mean ± sd), ``lowest`` (FedAvg's lowest mean
        of any reading, the pixel units' included: the nearest to the paper's) and
        ``lowest_reading``.
    """
    n = final[(final["partition"] == "N") & (final["method"] != "FedTopo")]
    means = 100.0 * n.groupby("method")["accuracy"].mean()
    ids = [f"fedtopo.t1.fmnist.N.{METHOD_KEYS[m]}" for m in means.index]
    paper = compared["paper_value"].reindex(ids)
    fedavg = readings[readings["method"] == "FedAvg"]
    by = 100.0 * fedavg.groupby("reading", sort=False)["accuracy"].mean()
    by["pixel units"] = 100.0 * pixel["accuracy"].mean()
    return {"ours_low": means.min(), "ours_high": means.max(), "paper_low": paper.min(),
            "paper_high": paper.max(), "pixel": mean_sd(100.0 * pixel["accuracy"]),
            "per_reading": "; ".join(f"{r} {mean_sd(100.0 * g['accuracy'])}"
                                     for r, g in fedavg.groupby("reading", sort=False)),
            "lowest": by.min() if by.size else np.nan,
            "lowest_reading": by.idxmin() if by.size else NONE}


def personal_values(final: pd.DataFrame) -> str:
    """FedPAC's and FedCCFA's Table 1 accuracy (the global model) beside their accuracy
    scored with each client's own model, on the partitions that ran both.

    Parameters
    ----------
    final : pandas.DataFrame
        Final rows (``method``, ``partition``, ``seed``, ``accuracy``), with the labels of
        :func:`~topofl_lib.deep.deep_variants` (``"FedPAC"``, ``"FedPAC (personal
        models)"``...).

    Returns
    -------
    str
        ``"FedPAC L-skew 71.20 ± 3.10 (personal models 45.70 ± 4.00), ..."``, mean ± sd
        over seeds in percent, or ``none`` where no partition ran both.

    Examples
    --------
    >>> final = pd.DataFrame({"method": ["FedPAC", "FedPAC (personal models)"],
    ...                       "partition": ["L", "L"], "seed": [0, 0],
    ...                       "accuracy": [0.712, 0.457]})
    >>> personal_values(final)
    'FedPAC L-skew 71.20 (personal models 45.70)'
    """
    from ..deep.experiments import DECOUPLED_LABELS, PERSONAL

    parts = []
    for method in DECOUPLED_LABELS:
        for part in sorted(set(final.loc[final["method"] == f"{method}{PERSONAL}", "partition"])):
            table1, own = (_accuracy(final, m, part) for m in (method, f"{method}{PERSONAL}"))
            parts.append(f"{method} {part}-skew {mean_sd(table1)} (personal models "
                         f"{mean_sd(own)})")
    return _names(parts)


def seed_range(final: pd.DataFrame, method: str, partition: str) -> dict:
    """The lowest and highest final accuracy of ``method`` on ``partition`` over seeds.

    Parameters
    ----------
    final : pandas.DataFrame
        Final rows (``method``, ``partition``, ``seed``, ``accuracy``).
    method : str
        The method label.
    partition : str
        The partition's letter.

    Returns
    -------
    dict
        ``low``, ``high`` (percent; NaN without a run) and ``n_seeds``.
    """
    acc = _accuracy(final, method, partition)
    acc = acc[np.isfinite(acc)]
    return {"low": acc.min() if acc.size else np.nan,
            "high": acc.max() if acc.size else np.nan, "n_seeds": int(acc.size)}


def table3_values(final: pd.DataFrame, paired: pd.DataFrame) -> dict:
    """Table 3's Setting B (L-skew): FedTopo without TAL, with it, and with ``alpha_max =
    100``.

    Parameters
    ----------
    final : pandas.DataFrame
        Table 1's final rows (``method``, ``partition``, ``seed``, ``accuracy``).
    paired : pandas.DataFrame
        :func:`~topofl_lib.statistics.holm_family` of ``FedTopo - other`` per partition.

    Returns
    -------
    dict
        ``without``, ``with_tal``, ``strong`` (mean ± sd), ``gain`` (FedTopo - without,
        with interval), ``cost`` (FedTopo - strong, with interval) and ``cost_wins`` /
        ``n_seeds`` (the seeds where the default is ahead of the strong alignment).
    """
    def row(method):
        key = ("L", method)
        return paired.loc[key] if key in paired.index else None

    gain, cost = row("FedTopo w/o TAL"), row("FedTopo (alpha_max=100)")
    return {"without": mean_sd(_accuracy(final, "FedTopo w/o TAL", "L")),
            "with_tal": mean_sd(_accuracy(final, "FedTopo", "L")),
            "strong": mean_sd(_accuracy(final, "FedTopo (alpha_max=100)", "L")),
            "gain": NONE if gain is None else _interval(gain),
            "cost": NONE if cost is None else _interval(cost),
            "cost_wins": np.nan if cost is None else int(cost["wins"]),
            "n_seeds": np.nan if cost is None else int(cost["n_seeds"])}


def table2_values(table2: pd.DataFrame, tgbs: pd.DataFrame) -> dict:
    """Table 2: each block's TGBS AUC and accuracy, and how often conv1 comes first.

    Parameters
    ----------
    table2 : pandas.DataFrame
        :func:`~topofl_lib.studies.fedtopo.block_table` (``block``, ``seed``, ``auc``,
        ``accuracy``, in percent).
    tgbs : pandas.DataFrame
        :func:`~topofl_lib.studies.fedtopo.tgbs_over_seeds` (``seed``, ``selected``).

    Returns
    -------
    dict
        ``auc_conv1``/``auc_conv2``/``acc_conv1``/``acc_conv2`` (mean ± sd),
        ``selected_conv1`` (seeds where TGBS selects conv1), ``conv1_ahead`` (seeds where
        aligning conv1 ends more accurate than conv2), ``n_seeds`` and ``margins`` (conv1 -
        conv2 per seed, points).
    """
    wide = table2.pivot(index="seed", columns="block", values="accuracy")
    margin = (wide["conv1"] - wide["conv2"]).dropna()
    picks = tgbs.groupby("seed")["selected"].first()
    out = {f"{k}_{b}": mean_sd(table2.loc[table2["block"] == b, col])
           for k, col in (("auc", "auc"), ("acc", "accuracy")) for b in ("conv1", "conv2")}
    return {**out, "selected_conv1": int((picks == "conv1").sum()),
            "conv1_ahead": int((margin > 0).sum()), "n_seeds": len(wide),
            "margins": ", ".join(f"{m:+.1f}" for m in margin) or NONE}


def table4_values(curves: pd.DataFrame, paired: pd.DataFrame, setting: str = "b",
                  reference: str = "FedTopo[smooth]") -> dict:
    """Table 4 in one setting: each schedule's final accuracy, the first round's spread,
    and the default schedule against the others.

    Parameters
    ----------
    curves : pandas.DataFrame
        Per-round rows with ``setting``, ``method``, ``seed``, ``round``, ``accuracy``.
    paired : pandas.DataFrame
        :func:`~topofl_lib.statistics.holm_family` of ``reference - other`` per setting.
    setting : str, default="b"
        The setting to state.
    reference : str, default="FedTopo[smooth]"
        FedTopo's default schedule.

    Returns
    -------
    dict
        ``finals`` (schedule mean ± sd, highest mean first), ``round1_low`` /
        ``round1_high`` (the lowest and highest first-round mean) and
        ``versus`` (``reference`` minus each other schedule: difference, interval, seeds
        ahead).
    """
    c = curves[curves["setting"] == setting]
    last = c[c["round"] == c["round"].max()]
    order = (100.0 * last.groupby("method")["accuracy"].mean()).sort_values(ascending=False)
    first = 100.0 * c[c["round"] == 1].groupby("method")["accuracy"].mean()
    rows = paired.xs(setting, level=0) if setting in paired.index.get_level_values(0) \
        else paired.iloc[:0]
    return {"finals": "; ".join(f"{m} {mean_sd(_accuracy(last, m))}" for m in order.index)
            or NONE,
            "round1_low": first.min() if first.size else np.nan,
            "round1_high": first.max() if first.size else np.nan,
            "versus": "; ".join(f"{m}: {_interval(r)}, ahead in {int(r['wins'])} of "
                                f"{int(r['n_seeds'])} seeds" for m, r in rows.iterrows())
            or NONE}


def figure_values(spread: pd.DataFrame) -> dict:
    """Figure 4: the clients' feature-centroid distances to the global model's.

    Parameters
    ----------
    spread : pandas.DataFrame
        :func:`~topofl_lib.fedtopo.projection_spread` (one row per recorded round, one
        column per client).

    Returns
    -------
    dict
        ``first``/``last`` (the recorded rounds), ``mean_first``/``mean_last`` (mean
        distance), ``closer`` (clients whose distance shrank) and ``n_clients``.
    """
    a, b = spread.iloc[0], spread.iloc[-1]
    return {"first": int(spread.index[0]), "last": int(spread.index[-1]),
            "mean_first": float(a.mean()), "mean_last": float(b.mean()),
            "closer": int((b < a).sum()), "n_clients": int(spread.shape[1])}


def alpha_floor_values(medians: pd.DataFrame, loss_low: float, after_round: int = 2,
                       fixed: str = "FedTopo[warmup]") -> dict:
    """Where the TAL sits against the adaptive schedules' range after ``after_round``.

    Parameters
    ----------
    medians : pandas.DataFrame
        Median ``alpha`` and ``TAL`` per (schedule, round) of one client.
    loss_low : float
        The lower end of the schedules' loss range.
    after_round : int, default=2
        Rounds after this one are summarised.
    fixed : str, default="FedTopo[warmup]"
        The schedule that ignores the loss.

    Returns
    -------
    dict
        ``tal`` (median TAL of the later rounds, adaptive schedules), ``loss_low``,
        ``share_below`` (fraction of those medians below ``loss_low``), ``alpha_adaptive``
        and ``alpha_fixed`` (median alpha of the later rounds).
    """
    late = medians[medians.index.get_level_values("round") > after_round]
    adaptive = late[late.index.get_level_values("schedule") != fixed]
    steady = late[late.index.get_level_values("schedule") == fixed]
    return {"tal": float(adaptive["TAL"].median()), "loss_low": float(loss_low),
            "share_below": float((adaptive["TAL"] < loss_low).mean()) if len(adaptive)
            else np.nan,
            "alpha_adaptive": float(adaptive["alpha"].median()),
            "alpha_fixed": float(steady["alpha"].median())}
