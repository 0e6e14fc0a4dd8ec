"""pTopoFL's privacy study (Sec. 4.6, Figure 6) and its end-to-end DP (issue 29): claim ids.

The attacks and the runs are in :mod:`topofl_lib.privacy`, the DP experiments in
:mod:`~topofl_lib.studies.dp_tradeoff` and :mod:`~topofl_lib.studies.dp_audit`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..claim_keys import METHOD_KEYS
from ..results import load_paper_claims
from .common import per_seed

__all__ = ["DP_CLAIM_EPSILONS", "README_DP_TARGET", "dp_claim_values", "epsilon_key",
           "privacy_claim_values"]

#: The target epsilons that have ``topofl.dp.*`` claim ids (other targets run, unclaimed).
DP_CLAIM_EPSILONS = (1.0, 3.0, 10.0, 30.0, 100.0)
#: The README's private pTopoFL run (:mod:`topofl_lib.readme_sections`): Scenario A
#: (``"hc"``) under the paper's protocol at this target total epsilon per client, with
#: the privacy notebook's defaults otherwise (its ``topofl.dp.t1.hc.eps10.*`` rows).
README_DP_TARGET = 10.0
#: Table 1's scenarios as claim keys.
_T1_KEYS = {"healthcare": "hc", "benchmark": "bm"}

def privacy_claim_values(proxies: pd.DataFrame, gradinv: pd.DataFrame, descinv: pd.DataFrame,
                         mia: pd.DataFrame, dp: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per-seed values of the ``ptopofl.privacy.*`` and ``topofl.privacy.*`` claims.

    Proxies are averaged over all clients of both scenarios within a seed (the paper's
    "mean reconstruction risk across client configurations"); attack and DP claims use
    the healthcare rows, averaged within a seed.

    Parameters
    ----------
    proxies : pandas.DataFrame
        :func:`proxy_table`'s rows.
    gradinv : pandas.DataFrame
        :func:`gradient_inversion_experiment`'s rows.
    descinv : pandas.DataFrame
        :func:`descriptor_inversion_experiment`'s rows.
    mia : pandas.DataFrame
        :func:`membership_experiment`'s rows.
    dp : pandas.DataFrame
        :func:`dp_utility_experiment`'s rows.

    Returns
    -------
    dict of str to ndarray
        Claim id -> per-seed values.
    """
    out = {}
    per_seed = proxies.groupby("seed")
    out["ptopofl.privacy.rho_grad"] = per_seed["rho_grad"].mean().to_numpy()
    out["ptopofl.privacy.rho_topo"] = per_seed["rho_topo"].mean().to_numpy()
    out["ptopofl.privacy.ratio"] = (per_seed["rho_grad"].mean()
                                    / per_seed["rho_topo"].mean()).to_numpy()
    out["ptopofl.privacy.rho_ratio"] = (per_seed["rho_topo"].mean()
                                        / per_seed["rho_grad"].mean()).to_numpy()
    out["ptopofl.privacy.mi_grad"] = per_seed["mi_grad_bits"].mean().to_numpy()
    out["ptopofl.privacy.mi_topo"] = per_seed["mi_topo_bits"].mean().to_numpy()

    def seedwise(df, column, **where):
        m = df["scenario"] == "healthcare"
        for key, value in where.items():
            m &= df[key] == value
        return df[m].groupby("seed")[column].mean().to_numpy()

    g = gradinv
    for attack, key in (("closed_form", "closed_form"), ("optimisation", "optim"),
                        ("population_guess", "guess")):
        v = seedwise(g, "recovered", attack=attack, batch_size=1)
        if v.size:
            out[f"topofl.privacy.gradinv.{key}.b1.recovered"] = v
    v = seedwise(g, "recovered", attack="optimisation", batch_size=4)
    if v.size:
        out["topofl.privacy.gradinv.optim.b4.recovered"] = v
    out["topofl.privacy.gradinv.optim.b1.cosine"] = seedwise(
        g, "cosine", attack="optimisation", batch_size=1)
    out["topofl.privacy.gradinv.guess.b1.cosine"] = seedwise(
        g, "cosine", attack="population_guess", batch_size=1)
    out["topofl.privacy.descinv.recovered"] = seedwise(
        descinv, "recovered", attack="descriptor_inversion")
    out["topofl.privacy.descinv.relerr"] = seedwise(
        descinv, "relative_error", attack="descriptor_inversion")
    out["topofl.privacy.descinv.guess.relerr"] = seedwise(
        descinv, "relative_error", attack="population_guess")
    out["topofl.privacy.mia.gradient.auc"] = seedwise(mia, "auc", channel="gradient", n=100)
    out["topofl.privacy.mia.descriptor.auc"] = seedwise(mia, "auc", channel="descriptor", n=100)
    for eps, key in ((1.0, "eps1"), (100.0, "eps100"), (np.inf, "nodp")):
        v = seedwise(dp, "auc", method="pTopoFL", epsilon=eps)
        if v.size:
            out[f"topofl.privacy.dp.{key}.auc"] = v
    return {k: v for k, v in out.items() if np.size(v)}


def epsilon_key(epsilon: float) -> str:
    """A target epsilon in a claim id: ``"eps3"``, ``"eps0.5"``; ``"nodp"`` for ``inf``.

    Parameters
    ----------
    epsilon : float
        The target (``inf``: no DP).

    Returns
    -------
    str
    """
    return "nodp" if math.isinf(epsilon) else f"eps{epsilon:g}"


def _t1_values(final: pd.DataFrame) -> dict[str, np.ndarray]:
    """``topofl.dp.t1.*``: per-seed AUC, cost (private - non-private), the accounted
    epsilon and the epsilon against the server."""
    out = {}
    for (scenario, base, target), g in final.groupby(["scenario", "base", "target_epsilon"]):
        prefix = f"topofl.dp.t1.{_T1_KEYS.get(scenario, scenario)}.{epsilon_key(target)}"
        key = METHOD_KEYS[base]
        out[f"{prefix}.auc.{key}"] = per_seed(g, "auc")
        if math.isfinite(target):
            clear = final[(final["scenario"] == scenario) & (final["method"] == base)]
            out[f"{prefix}.cost.{key}"] = _paired(g, clear, "auc")
            out[f"{prefix}.epsilon.{key}"] = per_seed(g, "epsilon")
            if "epsilon_server" in g:
                out[f"{prefix}.epsilon_server.{key}"] = per_seed(g, "epsilon_server")
    return out


def _paired(private: pd.DataFrame, clear: pd.DataFrame, metric: str) -> np.ndarray:
    """Per-seed ``private - clear`` over the seeds both have, in seed order."""
    a = private.set_index("seed")[metric]
    b = clear.set_index("seed")[metric]
    common = a.index.intersection(b.index).sort_values()
    return (a[common] - b[common]).to_numpy(dtype=np.float64)


def _deep_values(final: pd.DataFrame) -> dict[str, np.ndarray]:
    """``topofl.dp.deep.fmnist01.*``: accuracy, its cost and the accounted epsilon."""
    out = {}
    for (base, target), g in final.groupby(["base", "target_epsilon"]):
        prefix, key = f"topofl.dp.deep.fmnist01.{epsilon_key(target)}", METHOD_KEYS[base]
        out[f"{prefix}.acc.{key}"] = per_seed(g, "accuracy")
        if math.isfinite(target):
            out[f"{prefix}.cost.{key}"] = _paired(g, final[final["method"] == base],
                                                  "accuracy")
            out[f"{prefix}.epsilon.{key}"] = per_seed(g, "epsilon")
            if "epsilon_server" in g:
                out[f"{prefix}.epsilon_server.{key}"] = per_seed(g, "epsilon_server")
    return out


def _detection_values(detection: pd.DataFrame) -> dict[str, np.ndarray]:
    """``topofl.dp.robust.*``: flagged and isolated adversaries, their weight, the AUC."""
    out = {}
    for target, g in detection.groupby("target_epsilon"):
        for column, key in (("flagged", "flagged"), ("isolated", "isolated"),
                            ("adversarial_weight", "advweight"), ("auc", "auc")):
            out[f"topofl.dp.robust.{epsilon_key(target)}.{key}"] = per_seed(g, column)
    return out


def _audit_values(audit: pd.DataFrame) -> dict[str, np.ndarray]:
    """``topofl.dp.audit.*``: each lower bound (pooled trials: one value) and the
    accounted epsilon of the release attacked."""
    out = {}
    attacks = {"membership": "mia", "canary": "canary", "defect noise/10": "defect_noise10",
               "defect no clipping": "defect_noclip"}
    for r in audit.itertuples(index=False):
        prefix = (f"topofl.dp.audit.{attacks[r.attack]}.{r.channel}."
                  f"{epsilon_key(r.target_epsilon)}")
        out[f"{prefix}.lb"] = np.array([r.epsilon_lb])
        out[f"{prefix}.design"] = np.array([r.design_epsilon])
        if math.isfinite(r.epsilon_release):
            out[f"{prefix}.accounted"] = np.array([r.epsilon_release])
    return out


def dp_claim_values(table1: pd.DataFrame | None = None, deep: pd.DataFrame | None = None,
                    detection: pd.DataFrame | None = None, audit: pd.DataFrame | None = None,
                    pooled_seeds: int | None = None
                    ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Per-seed values of the ``topofl.dp.*`` claims (end-to-end DP, issue 29), and notes.

    Only targets of :data:`DP_CLAIM_EPSILONS` (and the non-private runs) have ids; an id
    not in the claims table is left out, so a profile's other targets run unclaimed.

    Parameters
    ----------
    table1 : pandas.DataFrame, optional
        :func:`~topofl_lib.studies.dp_tradeoff.dp_table1_comparison`'s ``final`` tables
        (both scenarios concatenated): ``topofl.dp.t1.<hc|bm>.<eps>.<auc|cost|epsilon>.<method>``.
    deep : pandas.DataFrame, optional
        :func:`~topofl_lib.studies.dp_tradeoff.dp_deep_comparison`'s ``final`` table:
        ``topofl.dp.deep.fmnist01.<eps>.<acc|cost|epsilon>.<method>``.
    detection : pandas.DataFrame, optional
        :func:`~topofl_lib.studies.dp_tradeoff.dp_detection`'s rows:
        ``topofl.dp.robust.<eps>.<flagged|isolated|advweight|auc>``.
    audit : pandas.DataFrame, optional
        :func:`~topofl_lib.studies.dp_audit.dp_audit`'s audit table (one value per id,
        the trials pooled): ``topofl.dp.audit.<mia|canary|defect_*>.<channel>.<eps>.``
        ``<lb|accounted|design>`` (ids in the claims table only).
    pooled_seeds : int, optional
        The scenario realisations whose membership trials the audit pooled (for the
        notes of its ids).

    Returns
    -------
    values : dict of str to ndarray
        Claim id -> per-seed values (``cost``: private minus non-private, paired).
    notes : dict of str to str
        Claim id -> note: the audit's ids hold one value (pooled trials, a seeded
        simulation), not one per seed.
    """
    out = {}
    for frame, values in ((table1, _t1_values), (deep, _deep_values),
                          (detection, _detection_values), (audit, _audit_values)):
        if frame is not None:
            out.update(values(frame))
    known = set(load_paper_claims().index)
    out = {k: v for k, v in out.items() if k in known and np.size(v)}
    pooled = ("" if pooled_seeds is None else f" of {pooled_seeds} scenario realisation"
              + ("" if pooled_seeds == 1 else "s"))
    notes = {k: (f"one bound from the membership trials{pooled}, pooled" if ".mia." in k
                 else "one bound from the canary's releases through the package's own "
                      "clipping and noise")
             for k in out if k.startswith("topofl.dp.audit.") and k.endswith(".lb")}
    return out, notes
