"""Continual learning with drift (pTopoFL Sec. 4.5, Figure 5).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .._validation import check_real
from ..core.seeds import check_seeds

__all__ = ["continual_claim_values", "continual_experiment"]

def continual_experiment(
    seeds: Iterable[int] = range(10),
    n_rounds: int = 20,
    drift_threshold: float = 0.12,
    scenario_params: dict | None = None,
    progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """pTopoFL on :func:`~topofl_lib.data.make_continual` (Sec. 4.5, Figure 5).

    Each seed is run twice: with drift-triggered re-clustering (``drift_threshold``) and
    without (round-0 clusters kept). Returns

    * ``per_round``: seed, client, round (1-based), shifted, entropy_h0, entropy_h1,
      drift_statistic (of the run without re-clustering, so detection is judged on the
      same statistic for every client);
    * ``per_seed``: seed, mean Eq. 9 drift, the fraction of shifted clients whose
      statistic exceeded the threshold at or after the shift (``detected``), the
      fraction of stable clients that ever exceeded it (``false_alarms``), the rounds at
      which re-clustering fired, and the final AUC with and without re-clustering.

    Parameters
    ----------
    seeds : iterable of int, default=range(10)
        The seeds.
    n_rounds : int, default=20
        Communication rounds.
    drift_threshold : float, default=0.12
        Re-clustering threshold of the adaptive run (> 0).
    scenario_params : dict, optional
        Further :func:`~topofl_lib.data.make_continual` parameters.
    progress : bool, default=True
        Show a tqdm bar.

    Returns
    -------
    per_round : pandas.DataFrame
        See above.
    per_seed : pandas.DataFrame
        See above.
    """
    from ..data.scenarios import make_continual
    from ..federated.ptopofl import PTopoFL
    from ..topology.descriptor import DESCRIPTOR_NAMES

    seeds = check_seeds(seeds)
    check_real(drift_threshold, "drift_threshold", low=0.0, low_open=True)
    scenario_params = dict(scenario_params or {})
    h0 = DESCRIPTOR_NAMES.index("entropy_h0")
    h1 = DESCRIPTOR_NAMES.index("entropy_h1")
    rounds, seeds_rows = [], []
    for seed in tqdm(seeds, desc="continual", disable=not progress):
        scen = make_continual(n_rounds=n_rounds, random_state=seed, **scenario_params)
        shifted = np.zeros(len(scen.clients), dtype=bool)
        shifted[scen.meta["shifted"]] = True
        start = scen.meta["shift_round"]
        static = PTopoFL(n_rounds=n_rounds, random_state=seed).fit(scen)
        adaptive = PTopoFL(n_rounds=n_rounds, drift_threshold=drift_threshold,
                           random_state=seed).fit(scen)
        stat = static.drift_statistic_
        for k in range(len(scen.clients)):
            rounds.append(pd.DataFrame({
                "seed": seed, "client": k, "round": np.arange(1, n_rounds + 1),
                "shifted": shifted[k], "entropy_h0": static.signatures_[:, k, h0],
                "entropy_h1": static.signatures_[:, k, h1], "drift_statistic": stat[:, k]}))
        fired = np.nan_to_num(stat, nan=0.0) > drift_threshold
        seeds_rows.append({
            "seed": seed, "mean_drift": float(static.drift_.mean()),
            "detected": float(fired[start:, shifted].any(axis=0).mean())
            if shifted.any() else np.nan,
            "false_alarms": float(fired[:, ~shifted].any(axis=0).mean()),
            "recluster_rounds": adaptive.recluster_rounds_,
            "auc_static": float(static.history_["auc"][-1]),
            "auc_reclustering": float(adaptive.history_["auc"][-1]),
        })
    return pd.concat(rounds, ignore_index=True), pd.DataFrame(seeds_rows)

def continual_claim_values(per_seed: pd.DataFrame) -> dict[str, np.ndarray]:
    """``ptopofl.continual.drift`` and the drift-trigger detection rates."""
    ordered = per_seed.sort_values("seed")
    return {"ptopofl.continual.drift": ordered["mean_drift"].to_numpy(dtype=np.float64),
            "topofl.continual.detected": ordered["detected"].dropna().to_numpy(dtype=np.float64),
            "topofl.continual.false_alarms": ordered["false_alarms"].to_numpy(dtype=np.float64)}
