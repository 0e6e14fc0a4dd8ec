"""GFC's clustering study: its claim ids (the runs: :mod:`topofl_lib.clustering.evaluation`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claim_keys import METHOD_KEYS
from ..clustering.evaluation import clustering_experiment, load_clustering_dataset
from ..results import load_paper_claims

__all__ = ["clustering_experiment", "gfc_claim_values", "load_clustering_dataset"]

def gfc_claim_values(main: pd.DataFrame, multiplier: pd.DataFrame | None = None,
                     scalability: pd.DataFrame | None = None) -> dict[str, np.ndarray]:
    """``gfc.*`` ids (MNIST rows measured on MNIST-5k in 2-D; Table 1 is in percent).

    Parameters
    ----------
    main : pandas.DataFrame
        ARI/NMI per dataset, epsilon, method and seed.
    multiplier : pandas.DataFrame, optional
        ARI per ``alpha``, epsilon and seed (Table 3).
    scalability : pandas.DataFrame, optional
        ARI/NMI per ``n_clients``, method, epsilon and seed (Table 6).

    Returns
    -------
    dict of str to ndarray
        Claim id -> per-seed values sorted by seed (only known ids).
    """
    known = set(load_paper_claims().index)
    out = {}
    for (dataset, eps, method), g in main.groupby(["dataset", "epsilon", "method"]):
        for metric in ("ari", "nmi"):
            v = g.sort_values("seed")[metric].to_numpy(dtype=np.float64)
            if dataset == "mnist5k":
                cid = f"gfc.t1.mnist.eps{eps:g}.{metric}.{METHOD_KEYS[method]}"
                v = 100 * v
            else:
                cid = f"topofl.gfc.{dataset}.eps{eps:g}.{metric}.{METHOD_KEYS[method]}"
            if cid in known:
                out[cid] = v
    if multiplier is not None:
        for (alpha, eps), g in multiplier.groupby(["alpha", "epsilon"]):
            cid = f"gfc.t3.eps{eps:g}.alpha{alpha:g}.ari"
            if cid in known:
                out[cid] = g.sort_values("seed")["ari"].to_numpy(dtype=np.float64)
    if scalability is not None:
        g = scalability[(scalability["n_clients"] == 1000) & (scalability["method"] == "GFC")
                        & (scalability["epsilon"] == 0.01)]
        if len(g):
            out["gfc.t6.mnist1000.ari"] = g.sort_values("seed")["ari"].to_numpy(dtype=np.float64)
            out["gfc.t6.mnist1000.nmi"] = g.sort_values("seed")["nmi"].to_numpy(dtype=np.float64)
    return out
