"""pTopoFL's privacy study (Sec. 4.6, Figure 6): its claim ids.

The attacks and the runs are in :mod:`topofl_lib.privacy`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["privacy_claim_values"]

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
