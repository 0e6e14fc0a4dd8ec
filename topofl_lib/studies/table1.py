"""pTopoFL Table 1 (Scenarios A and B): configurations, driver, tables and claim ids.

Table 1 runs under two protocols (:func:`table1_comparison`): ``"paper"``, the data,
evaluation and local solvers of the paper's released code (like for like with the
paper's table), and ``"ours"``, our harder generators and protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..claim_keys import METHOD_KEYS, METRIC_KEYS, PROTOCOL_PREFIXES, SCENARIO_KEYS
from ..data.scenarios import PROTOCOLS
from ..federated.methods import METHODS
from ..results import load_paper_claims
from ..runner import ComparisonResult, run_comparison
from ..statistics import paired_differences
from .common import with_protocol

__all__ = [
    "METHODS_OF_TABLE1", "PAPER_GD_STEPS", "PAPER_ROW_OF", "TABLE1_VARIANTS",
    "clustering_diagnostics", "paper_gaps", "table1", "table1_claim_values",
    "table1_comparison", "table1_text_claims", "table1_variants",
]

#: The capped local solver of the paper's code's FedProx and SCAFFOLD: 30 full-batch
#: gradient steps of size 0.05 per round (pTopoFL and FedAvg fit to convergence instead).
#: Given to pTopoFL or FedAvg it removes the solver asymmetry between the paper's rows.
PAPER_GD_STEPS = {"lr": 0.05, "local_epochs": 30, "batch_size": None}

#: Table 1's configurations per protocol, ``{label: (method, params)}``.
#:
#: ``"paper"``: the local solvers of the paper's released code (v1.0.0): pTopoFL, FedAvg
#: and Local-only fit their logistic regression to convergence every round (lbfgs);
#: FedProx and SCAFFOLD take 30 full-batch gradient steps of size 0.05 (FedProx
#: ``mu=0.1``); pFedMe takes 20 personalisation steps and one outer step, full batch
#: (step sizes 0.01, ``lam=15``); SCAFFOLD also with that code's server rule
#: (``control_update="add_full"``). Other parameters are ours (pTopoFL's descriptor:
#: exact Rips persistence on 80-point subsamples, M = 2, beta = 0.3, tau = 2.0).
#: ``"ours"``: every method with its defaults (mini-batch SGD, 2 epochs, batch 32).
TABLE1_VARIANTS: dict[str, dict[str, tuple[str, dict]]] = {
    "paper": {
        "pTopoFL": ("pTopoFL", {"solver": "lbfgs"}),
        "FedAvg": ("FedAvg", {"solver": "lbfgs"}),
        "FedProx": ("FedProx", {**PAPER_GD_STEPS, "mu": 0.1}),
        "SCAFFOLD": ("SCAFFOLD", dict(PAPER_GD_STEPS)),
        "SCAFFOLD (v1.0.0 rule)": ("SCAFFOLD", {**PAPER_GD_STEPS, "control_update": "add_full"}),
        "pFedMe": ("pFedMe", {"lr": 0.01, "personal_lr": 0.01, "inner_steps": 20,
                              "local_epochs": 1, "batch_size": None, "lam": 15.0}),
        "Local-only": ("Local-only", {"solver": "lbfgs"}),
    },
    "ours": {
        **{m: (m, {}) for m in METHODS},
        "SCAFFOLD (v1.0.0 rule)": ("SCAFFOLD", {"control_update": "add_full"}),
        "Local-only": ("Local-only", {}),
    },
}

#: The row of the paper's Table 1 that a non-paper method label explains: the paper's
#: FedAvg row came from code whose "FedAvg" was Local-only; its SCAFFOLD row from the
#: v1.0.0 server rule.
PAPER_ROW_OF = {"Local-only": "FedAvg", "SCAFFOLD (v1.0.0 rule)": "SCAFFOLD"}

#: The methods of the paper's Table 1.
METHODS_OF_TABLE1 = ("pTopoFL", "FedAvg", "FedProx", "SCAFFOLD", "pFedMe")

def table1_variants(protocol: str, methods: Sequence[str] | None = None) -> dict:
    """The ``{label: (method, params)}`` of Table 1 under a solver protocol.

    Parameters
    ----------
    protocol : {"paper", "ours"}
        A key of :data:`TABLE1_VARIANTS`.
    methods : sequence of str, optional
        Labels of ``TABLE1_VARIANTS[protocol]`` (default: all of them).

    Returns
    -------
    dict
        The chosen configurations, in the order of ``methods``.
    """
    check_choice(protocol, "protocol", PROTOCOLS)
    table = TABLE1_VARIANTS[protocol]
    labels = list(table) if methods is None else list(methods)
    unknown = [m for m in labels if m not in table]
    if unknown or not labels:
        raise ValueError(f"methods must be a non-empty list of {list(table)}, got {labels}")
    return {m: table[m] for m in labels}


def table1_comparison(
    scenario: str,
    protocol: str = "paper",
    seeds: Iterable[int] = range(20),
    methods: Sequence[str] | None = None,
    n_rounds: int = 15,
    keep_models: bool = False,
    progress: bool = True,
) -> ComparisonResult:
    """Table 1 of pTopoFL on one scenario under a data and evaluation protocol.

    Parameters
    ----------
    scenario : {"healthcare", "benchmark"}
    protocol : {"paper", "ours"}
        ``"paper"``: the generators, evaluation (all clients, per-client
        standardisation) and local solvers of the paper's released code
        (:mod:`topofl_lib.data.paper_protocol`, :data:`TABLE1_VARIANTS`), like for like
        with the paper's Table 1. ``"ours"``: our generators and defaults.
    seeds : iterable of int
        One scenario realisation per seed; every method is seeded with it too. (The
        paper's code seeds each baseline with the scenario seed + 100, + 200, ...; under
        its solvers only pTopoFL's persistence subsample draws random numbers, so the
        method seed hardly matters: full-batch steps and lbfgs are deterministic.)
    methods : sequence of str, optional
        Labels of :data:`TABLE1_VARIANTS` ``[protocol]`` (default: all of them).
    n_rounds, keep_models, progress
        As in :func:`run_comparison`.

    Returns
    -------
    ComparisonResult
        ``curves`` and ``final`` carry a ``protocol`` column; the method labels are those
        of :data:`TABLE1_VARIANTS` (see :func:`table1` for the paper's values).
    """
    if scenario not in ("healthcare", "benchmark"):
        raise ValueError(f"Table 1 has the scenarios 'healthcare' and 'benchmark', got "
                         f"{scenario!r}")
    res = run_comparison(scenario, seeds, n_rounds=n_rounds,
                         scenario_params={"protocol": protocol},
                         variants=table1_variants(protocol, methods), keep_models=keep_models,
                         progress=progress)
    return ComparisonResult(res.curves.assign(protocol=protocol),
                            res.final.assign(protocol=protocol), res.models, res.diverged,
                            res.schedule, res.devices, res.machines)

def table1(result: ComparisonResult, single_run: ComparisonResult | None = None
           ) -> pd.DataFrame:
    """Table 1 for one scenario: ours (mean ± sd, 95% CI) next to the paper's values.

    A method label of :data:`PAPER_ROW_OF` (Local-only, the v1.0.0 SCAFFOLD rule) is
    shown beside the paper row it explains (column ``paper row``, present when any label
    differs from its paper row). ``single_run`` (a one-seed result, e.g. seed 42, the
    paper's single run) adds its values in a column ``seed <s>``.

    Parameters
    ----------
    result : ComparisonResult
        A multi-seed comparison on one scenario.
    single_run : ComparisonResult, optional
        A one-seed comparison on the same scenario.

    Returns
    -------
    pandas.DataFrame
        Indexed by (metric, method), with ``scenario``, ``ours``, ``95% CI``, ``paper``, ``seeds``
        and the optional columns above.
    """

    paper = load_paper_claims()["value"]
    scen = result.final["scenario"].iloc[0]
    single = None
    if single_run is not None:
        seeds = single_run.final["seed"].unique()
        if seeds.size != 1:
            raise ValueError(f"single_run must hold one seed, got {sorted(seeds.tolist())}")
        single = single_run.final.set_index("method")
    rows = []
    for metric, key in (("auc", "auc"), ("accuracy", "acc"), ("convergence_round", "conv")):
        s = result.summary(metric)
        for method, r in s.iterrows():
            row_of = PAPER_ROW_OF.get(method, method)
            cid = (f"ptopofl.t1.{SCENARIO_KEYS.get(scen)}.{key}."
                   f"{METHOD_KEYS.get(row_of)}")
            row = {
                "scenario": scen, "metric": metric, "method": method,
                "ours": f"{r['mean']:.3f} ± {r['std']:.3f}",
                "95% CI": f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
                "paper": paper.get(cid, np.nan),
                "seeds": int(r["n_seeds"]),
            }
            if any(m in PAPER_ROW_OF for m in s.index):
                row["paper row"] = row_of if cid in paper.index else ""
            if single is not None:
                row[f"seed {seeds[0]}"] = (single.loc[method, metric] if method in single.index
                                           else np.nan)
            rows.append(row)
    return pd.DataFrame(rows).set_index(["metric", "method"])

def paper_gaps(result: ComparisonResult, reference: str = "pTopoFL",
               metric: str = "auc") -> pd.DataFrame:
    """The paper's Table 1 gaps ``reference - method`` beside our paired ones.

    The paper reports one run, so its gap between two methods is one draw of the
    per-seed paired difference. For every other method label (mapped to its paper row by
    :data:`PAPER_ROW_OF`), the columns are ``paper_gap``, our ``mean_diff`` with its 95%
    t-interval ``ci_low``/``ci_high``, the standard deviation ``sd_seed`` of the per-seed
    differences, and ``z = (paper_gap - mean_diff) / sd_seed``: how unusual the paper's
    gap would be as a single run of our protocol (``|z| > 2``: the paper's gap does not
    come from the same mechanism). Methods without a paper row are left out.

    Parameters
    ----------
    result : ComparisonResult
        A multi-seed comparison on one scenario.
    reference : str, default="pTopoFL"
        The method the gaps are taken from.
    metric : {"auc", "accuracy"}, default="auc"
        The compared metric.

    Returns
    -------
    pandas.DataFrame
        Indexed by method, with the columns above.
    """

    paper = load_paper_claims()["value"]
    scen = result.final["scenario"].iloc[0]
    key = {"auc": "auc", "accuracy": "acc"}.get(metric)
    if key is None:
        raise ValueError(f"paper_gaps compares 'auc' or 'accuracy', got {metric!r}")

    def claim(label):
        cid = (f"ptopofl.t1.{SCENARIO_KEYS.get(scen)}.{key}."
               f"{METHOD_KEYS.get(PAPER_ROW_OF.get(label, label))}")
        return paper.get(cid, np.nan)

    paired = paired_differences(result.final, reference, metric)
    wide = result.final.pivot(index="seed", columns="method", values=metric)
    rows = []
    for method, r in paired.iterrows():
        gap = claim(reference) - claim(method)
        if np.isnan(gap):
            continue
        sd = float((wide[reference] - wide[method]).std(ddof=1))
        rows.append({"method": method, "paper_row": PAPER_ROW_OF.get(method, method),
                     "paper_gap": gap, "mean_diff": r["mean_diff"], "ci_low": r["ci_low"],
                     "ci_high": r["ci_high"], "sd_seed": sd,
                     "z": (gap - r["mean_diff"]) / sd if sd > 0 else np.nan,
                     "n_seeds": int(r["n_seeds"])})
    return pd.DataFrame(rows).set_index("method")

def clustering_diagnostics(result: ComparisonResult) -> pd.DataFrame:
    """What pTopoFL's round-0 server step found, per seed (needs ``keep_models=True``).

    Columns: ``ari_latent_groups`` (adjusted Rand index between the topology clusters
    and the generator's latent client types; NaN when the generator has a single type),
    ``adversarial_trust`` (mean trust weight
    of adversarial clients, NaN if none), ``honest_trust`` (mean over honest clients),
    ``flagged_adversarial`` and ``flagged_honest`` (clients with z > tau).
    """
    from sklearn.metrics import adjusted_rand_score

    rows = []
    for (name, seed), est in sorted(result.models.items(), key=lambda kv: kv[0][1]):
        if name != "pTopoFL":
            continue
        groups = np.array([c.group for c in est.scenario_.clients])
        adv = ~est.honest_
        flagged = est.z_scores_ > est.tau
        rows.append({
            "seed": seed,
            "ari_latent_groups": (adjusted_rand_score(groups, est.labels_)
                                  if np.unique(groups).size > 1 else np.nan),
            "adversarial_trust": est.trust_[adv].mean() if adv.any() else np.nan,
            "honest_trust": est.trust_[~adv].mean(),
            "flagged_adversarial": int((flagged & adv).sum()),
            "flagged_honest": int((flagged & ~adv).sum()),
        })
    if not rows:
        raise ValueError("no fitted pTopoFL models in the result; run with keep_models=True")
    return pd.DataFrame(rows).set_index("seed")

def table1_claim_values(final: pd.DataFrame, protocol: str | None = None
                        ) -> dict[str, np.ndarray]:
    """Map a Table 1 ``final`` table to claim ids, by protocol.

    Parameters
    ----------
    final : pandas.DataFrame
        The ``final`` table of :func:`~topofl_lib.studies.table1.table1_comparison`
        (columns ``protocol, scenario, method, seed`` and the metrics); results of both
        protocols may be concatenated.
    protocol : {"paper", "ours"}, optional
        The protocol of every row, for a table without a ``protocol`` column (e.g. from
        :func:`~topofl_lib.runner.run_comparison`).

    Returns
    -------
    dict
        ``{claim id: per-seed values in seed order}``. Under ``"paper"`` the paper's
        five methods give ``ptopofl.t1.<hc|bm>.<auc|acc|conv>.<method>`` (the paper's
        own protocol, like for like) and Local-only and the v1.0.0 SCAFFOLD rule give
        ``topofl.t1.<scenario>.<metric>.<localonly|scaffold_v1>``; under ``"ours"`` every
        label gives ``topofl.t1.own.<scenario>.<metric>.<method>``. Only ids present in
        the claims table are returned; labels without a claim spelling are left out.

    Raises
    ------
    ValueError
        When the protocol is neither given nor a column, or is unknown.
    """
    known = set(load_paper_claims().index)
    out = {}
    for (prot, scenario, method), g in with_protocol(final, protocol).groupby(
            ["protocol", "scenario", "method"]):
        key, scen = METHOD_KEYS.get(method), SCENARIO_KEYS.get(scenario)
        if key is None or scen is None:
            continue
        paper_row = prot == "paper" and method in METHODS_OF_TABLE1
        prefix = "ptopofl.t1" if paper_row else PROTOCOL_PREFIXES[prot]
        for metric, mkey in METRIC_KEYS.items():
            cid = f"{prefix}.{scen}.{mkey}.{key}"
            if cid in known:
                out[cid] = g.sort_values("seed")[metric].to_numpy(dtype=np.float64)
    return out


def _onset(curves: pd.DataFrame, method: str, metric: str = "auc") -> float | None:
    """The first round whose seed-mean ``metric`` is below the round before (None: never)."""
    mean = curves[curves["method"] == method].groupby("round")[metric].mean().sort_index()
    fell = mean.index[1:][np.diff(mean.to_numpy()) < 0]
    return float(fell[0]) if len(fell) else None


def table1_text_claims(values: dict[str, np.ndarray], curves: pd.DataFrame, key: str
                       ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """pTopoFL Section 4.2's numbers derived from Table 1's rows and curves (paper protocol).

    * ``ptopofl.comp.gain_<key>_vs_fedprox``: pTopoFL's final AUC minus FedProx's, seed by
      seed, in percentage points;
    * ``ptopofl.comp.ptopofl_auc_band`` (healthcare, ``key="hc"``): the half-width of
      Figure 2's band, read as the standard deviation over seeds of pTopoFL's AUC,
      averaged over the rounds;
    * ``ptopofl.comp.scaffold_bm_oscillation_onset`` (benchmark, ``key="bm"``): the first
      round at which SCAFFOLD's seed-mean AUC falls below the round before.

    Parameters
    ----------
    values : dict of str to ndarray
        :func:`table1_claim_values` of the paper protocol's runs.
    curves : pandas.DataFrame
        Those runs' per-round ``curves`` (columns ``method``, ``seed``, ``round``, ``auc``).
    key : {"hc", "bm"}
        The scenario's claim key.

    Returns
    -------
    values : dict of str to ndarray
        The ids that could be derived.
    not_run : dict of str to str
        The others of this scenario, with why.
    """
    out, missing = {}, {}
    mine, fedprox = (values.get(f"ptopofl.t1.{key}.auc.{m}") for m in ("ptopofl", "fedprox"))
    gain = f"ptopofl.comp.gain_{key}_vs_fedprox"
    if mine is not None and fedprox is not None:
        out[gain] = 100.0 * (np.asarray(mine) - np.asarray(fedprox))
    else:
        missing[gain] = "not run: pTopoFL's or FedProx's Table 1 row did not run"
    if key == "hc" and (curves["method"] == "pTopoFL").any():
        band = curves[curves["method"] == "pTopoFL"].groupby("round")["auc"].std(ddof=1)
        out["ptopofl.comp.ptopofl_auc_band"] = np.array([float(band.mean())])
    if key == "bm":
        onset = _onset(curves, "SCAFFOLD")
        cid = "ptopofl.comp.scaffold_bm_oscillation_onset"
        if onset is None:
            missing[cid] = (f"not run: SCAFFOLD's mean AUC never fell in the "
                            f"{int(curves['round'].max())} rounds run")
        else:
            out[cid] = np.array([onset])
    return out, missing
