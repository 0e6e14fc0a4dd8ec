"""pTopoFL's printed costs and theorem constants, evaluated on the ablation's runs.

The paper prints several numbers as formulas: communication O(p) for FedAvg and O(m) for
pTopoFL (Section 4.8), persistence O(n_k^2) per client (worst case O(n^3)), Theorem 5's
adversarial weight below eps^2 when lambda*Delta >= log((1-eps)/eps), Theorem 7's mutual
information ratio (m/p)(c^2/L^2) and rate O(m/n_k^2), Theorem 9's linear rate and floor,
and Corollary 4's tolerated perturbation gamma/(2c). :func:`overhead_claims` gives each
its row: the formula's value on the quantities of our runs (m, p, n_k, eps, the
clustering margin gamma), or a measurement (bytes a client sends per round, the exponent
of persistence time in n), or no value with why.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from ripser import ripser

from ..data.scenarios import make_scenario
from ..theory import theorem5_bound

__all__ = ["BYTES_PER_NUMBER", "PH_SIZES", "model_parameter_count", "overhead_claims",
           "persistence_exponent"]

#: Bytes per transmitted number (float64, as the engine and the Flower app send them).
BYTES_PER_NUMBER = 8
#: Point counts of the persistence timing (:func:`persistence_exponent`).
PH_SIZES = (50, 100, 200, 400)
#: Why Theorem 9's two formulas get no value.
THEOREM9_NOTE = ("not run: Theorem 9's rate and floor need the constants mu, L and sigma_eff "
                 "of a mu-strongly convex, L-smooth federated objective; the logistic models "
                 "here certify neither mu nor sigma_eff, so the formula has no value to check")


def persistence_exponent(X, sizes: Sequence[int] = PH_SIZES, repeats: int = 3,
                         random_state: int = 0) -> float:
    """The slope of log(time) against log(n) of Vietoris-Rips persistence (H0, H1).

    Parameters
    ----------
    X : array-like of shape (n, d)
        Points to subsample (n at least ``max(sizes)``).
    sizes : sequence of int, default=:data:`PH_SIZES`
        Subsample sizes.
    repeats : int, default=3
        Timings per size (the median is used).
    random_state : int, default=0
        The subsampling seed.

    Returns
    -------
    float
        The least-squares slope (2: time grows like n^2).
    """
    X = np.asarray(X, dtype=np.float64)
    rng = np.random.default_rng(random_state)
    times = []
    for n in sizes:
        pts = X[rng.choice(len(X), size=n, replace=False)]
        runs = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            ripser(pts, maxdim=1)
            runs.append(time.perf_counter() - t0)
        times.append(np.median(runs))
    return float(np.polyfit(np.log(sizes), np.log(times), 1)[0])


def model_parameter_count(architecture: str = "fmnist_cnn") -> int:
    """The number of parameters of one of the deep architectures (:mod:`topofl_lib.deep`)."""
    from ..deep.models import make_model

    return int(sum(p.numel() for p in make_model(architecture).parameters()))


def overhead_claims(models: Mapping[int, object], stability: pd.DataFrame, n_rounds: int,
                    scenario: str = "healthcare", scenario_params: dict | None = None
                    ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The rows of the paper's cost and theorem formulas (module docstring).

    Parameters
    ----------
    models : Mapping of int to PTopoFL
        Seed -> a fitted pTopoFL estimator of the ablation's run (``descriptors_`` and
        ``local_models_``).
    stability : pandas.DataFrame
        :func:`~topofl_lib.theory.clustering_stability` rows with a ``seed`` column (the
        clustering margin gamma).
    n_rounds : int
        The run's rounds (pTopoFL's descriptor is sent once, in round 0).
    scenario : str, default="healthcare"
        The scenario the models ran on.
    scenario_params : dict, optional
        Its parameters.

    Returns
    -------
    values : dict of str to ndarray
        Claim id -> per-seed values (one value where the formula has no seed).
    not_run : dict of str to str
        The ids that get no value, with why.
    """
    seeds = sorted(models)
    m = np.array([np.asarray(models[s].descriptors_).shape[1] for s in seeds], dtype=float)
    p = np.array([_model_size(models[s]) for s in seeds], dtype=float)
    scens = [make_scenario(scenario, random_state=s, **dict(scenario_params or {}))
             for s in seeds]
    n_k = np.array([np.median([c.n_train for c in sc.clients]) for sc in scens])
    adv_share = np.array([sum(c.n_train for c in sc.clients if c.adversarial)
                          / sum(c.n_train for c in sc.clients) for sc in scens])
    eps = float(np.mean([np.mean([c.adversarial for c in sc.clients]) for sc in scens]))
    margin = stability.groupby("seed")["margin"].first().reindex(seeds).to_numpy(dtype=float)
    values = {
        "ptopofl.comm.payload_dim": m,
        "ptopofl.privacy.dim_topo": m,
        "ptopofl.comm.cost_fedavg": BYTES_PER_NUMBER * np.array(  # d weights and a bias
            [sc.n_features + 1.0 for sc in scens]),
        "ptopofl.comm.cost_ptopofl": BYTES_PER_NUMBER * (p + (m + 1) / n_rounds),
        "ptopofl.comm.ph_cost": np.array([persistence_exponent(
            np.concatenate([c.X_train for c in scens[0].clients]))]),
        "ptopofl.theory.thm5_adv_weight": np.array([theorem5_bound(eps, np.log((1 - eps) / eps))]),
        "ptopofl.theory.thm5_fedavg_adv_weight": adv_share,
        "ptopofl.theory.thm7_mi_ratio": m / p,
        "ptopofl.theory.thm7_mi_rate": m / n_k ** 2,
        "ptopofl.theory.thm7_mi_ratio_numeric": np.array([m[0] / model_parameter_count()]),
        "ptopofl.theory.cor4_perturbation_tolerance": margin / 2.0,
    }
    not_run = {
        "ptopofl.comm.ph_worst_case": (
            "not run: no worst-case input is built; ptopofl.comm.ph_cost gives the exponent "
            "measured on the clients' records"),
        "ptopofl.theory.thm9_rate": THEOREM9_NOTE,
        "ptopofl.theory.thm9_error_floor": THEOREM9_NOTE,
    }
    return values, not_run


def _model_size(estimator) -> int:
    """Numbers in one client's model upload (a row of ``local_models_``)."""
    return int(np.asarray(estimator.local_models_).shape[1])
