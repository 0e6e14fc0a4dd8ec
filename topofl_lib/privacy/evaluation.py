"""Multi-seed privacy experiments of the privacy notebook (proxies, attacks, DP utility).

Each runner returns a tidy :class:`pandas.DataFrame` with one row per (seed, client,
setting); the notebook only aggregates and plots them. The descriptor attacks and the DP
release take ``descriptor`` (default ``"paper"``, the 48-dim descriptor; or
``"class_conditional"`` / ``"model_anchored"``, :func:`~topofl_lib.privacy.attacks.descriptor_map`),
so the same attacks measure what each of pTopoFL's descriptor options leaks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .._validation import check_int, check_real
from ..core.containers import FederatedScenario
from ..core.registry import get_scenario
from ..core.seeds import check_seeds, draw_seed
from ..data.scenarios import make_scenario
from ..federated.fedavg import FedAvg
from ..federated.ptopofl import PTopoFL
from ..topology.descriptor import DESCRIPTOR_NAMES
from .attacks import (
    descriptor_map,
    invert_batch_gradient,
    invert_descriptor,
    invert_single_gradient,
    logistic_data_gradient,
    membership_inference,
    reconstruction_metrics,
    release_map,
)
from .mechanisms import GaussianMechanism
from .proxies import mi_proxy_bits, reconstruction_risk_gradient, reconstruction_risk_topology

__all__ = [
    "descriptor_inversion_experiment",
    "dp_utility_experiment",
    "gradient_inversion_experiment",
    "membership_experiment",
    "proxy_table",
]

M = len(DESCRIPTOR_NAMES)


def _check_max_clients(max_clients: int | None) -> None:
    """``max_clients`` is None (every honest client) or a positive int."""
    if max_clients is not None:
        check_int(max_clients, "max_clients", low=1)


def _attacked_model(scenario: FederatedScenario, seed: int) -> np.ndarray:
    """The global model after one FedAvg round: what the server broadcasts in round 2."""
    return FedAvg(n_rounds=1, random_state=seed).fit(scenario).coef_


def _population(scenario: FederatedScenario, k: int) -> np.ndarray:
    """Records of every other client: the attacker's sample of the population."""
    return np.vstack([c.X_train for j, c in enumerate(scenario.clients) if j != k])


def _population_labels(scenario: FederatedScenario, k: int) -> np.ndarray:
    """The labels of :func:`_population`'s records (in the same order)."""
    return np.concatenate([c.y_train for j, c in enumerate(scenario.clients) if j != k])


def proxy_table(scenarios: Sequence[str] = ("healthcare", "benchmark"),
                seeds: Iterable[int] = range(10), alpha_c: float = 0.1) -> pd.DataFrame:
    """The paper's proxies for every client of every scenario realisation.

    Columns: scenario, seed, client, n, d, p (model parameters: d + 1),
    rho_grad, rho_topo, mi_grad_bits, mi_topo_bits.

    Parameters
    ----------
    scenarios : sequence of str, default=("healthcare", "benchmark")
        Scenario names (:func:`~topofl_lib.data.make_scenario`).
    seeds : iterable of int, default=range(10)
        Realisations of each scenario.
    alpha_c : float, default=0.1
        The paper's compression factor.

    Returns
    -------
    pandas.DataFrame
        One row per (scenario, seed, client).
    """
    seeds = check_seeds(seeds)
    for name in scenarios:
        get_scenario(name)  # an unknown name fails before any run
    rows = []
    for name in scenarios:
        for seed in seeds:
            scen = make_scenario(name, random_state=seed)
            d = scen.n_features
            p = d + 1
            for k, c in enumerate(scen.clients):
                rows.append({
                    "scenario": name, "seed": seed, "client": k, "n": c.n_train, "d": d,
                    "p": p,
                    "rho_grad": float(reconstruction_risk_gradient(p, c.n_train, d)),
                    "rho_topo": float(reconstruction_risk_topology(M, c.n_train, d, alpha_c)),
                    "mi_grad_bits": mi_proxy_bits(p, 1.0),
                    "mi_topo_bits": mi_proxy_bits(M, alpha_c),
                })
    return pd.DataFrame(rows)


def gradient_inversion_experiment(
    scenario: str = "healthcare",
    seeds: Iterable[int] = range(3),
    batch_sizes: Sequence[int] = (1, 2, 4, 8, 16),
    tol: float = 0.1,
    n_iter: int = 1500,
    max_clients: int | None = None,
    progress: bool = True,
    model_dp=None,
) -> pd.DataFrame:
    """Invert honest clients' logistic gradients at the round-2 global model.

    For each honest client and batch size ``B`` a batch of ``B`` training records is
    drawn and its data gradient computed (the first ``max_clients`` honest clients, all
    if None). Attacks: ``closed_form`` (B = 1 only),
    ``optimisation`` (all B) and the baseline ``population_guess`` (B records drawn
    from other clients). Columns: scenario, seed, client, batch_size, attack,
    recovered, relative_error, cosine. With ``model_dp`` (a
    :class:`~topofl_lib.privacy.ClientLevelDP`) the attacks see the gradient clipped and
    noised as that option releases a client's update
    (:func:`~topofl_lib.privacy.attacks.release_map`).

    Parameters
    ----------
    scenario : str, default="healthcare"
        Scenario name.
    seeds : iterable of int, default=range(3)
        Scenario realisations.
    batch_sizes : sequence of int, default=(1, 2, 4, 8, 16)
        Batch sizes (larger than a client's data: skipped).
    tol : float, default=0.1
        Relative error of a recovered record.
    n_iter : int, default=1500
        Adam steps of the optimisation attack.
    max_clients : int, optional
        Attack at most this many honest clients per seed.
    progress : bool, default=True
        Show a tqdm bar.
    model_dp : ClientLevelDP, optional
        Privatise the transmitted gradient as this option does; None: in the clear.

    Returns
    -------
    pandas.DataFrame
        One row per (seed, client, batch size, attack).
    """
    check_real(tol, "tol", low=0.0, low_open=True)
    check_int(n_iter, "n_iter", low=1)
    _check_max_clients(max_clients)
    for b in batch_sizes:
        check_int(b, "batch_size", low=1)
    release = release_map("gradient", model_dp)
    rows = []
    seeds = check_seeds(seeds)
    get_scenario(scenario)  # an unknown name fails before any run
    bar = tqdm(total=len(seeds), desc=f"gradient inversion ({scenario})", disable=not progress)
    for seed in seeds:
        scen = make_scenario(scenario, random_state=seed)
        w = _attacked_model(scen, seed)
        rng = np.random.default_rng(seed)
        honest = [k for k, c in enumerate(scen.clients) if not c.adversarial]
        for k in honest[:max_clients]:
            c = scen.clients[k]
            pop = _population(scen, k)
            for B in batch_sizes:
                if B > c.n_train:
                    continue
                idx = rng.choice(c.n_train, B, replace=False)
                X, y = c.X_train[idx], c.y_train[idx]
                g = release(logistic_data_gradient(w, X, y), rng)
                attempts = {
                    "optimisation": invert_batch_gradient(g, w, B, n_iter=n_iter,
                                                          random_state=rng),
                    "population_guess": pop[rng.choice(pop.shape[0], B, replace=False)],
                }
                if B == 1:
                    attempts["closed_form"] = invert_single_gradient(g)[0][None, :]
                for attack, X_hat in attempts.items():
                    rows.append({"scenario": scenario, "seed": seed, "client": k,
                                 "batch_size": B, "attack": attack,
                                 **reconstruction_metrics(X_hat, X, tol)})
        bar.update()
    bar.close()
    return pd.DataFrame(rows)


def descriptor_inversion_experiment(
    scenario: str = "healthcare",
    seeds: Iterable[int] = range(3),
    n_sub: int = 80,
    n_iter: int = 1000,
    tol: float = 0.1,
    max_clients: int | None = None,
    progress: bool = True,
    descriptor: str = "paper",
) -> pd.DataFrame:
    """Invert honest clients' descriptors and score the result against their records.

    The client's descriptor uses its private subsample seed; the attacker searches
    ``min(n, n_sub)`` records (:func:`~topofl_lib.privacy.attacks.invert_descriptor`)
    starting from a population sample. Rows for ``attack="descriptor_inversion"`` (after
    the search) and ``"population_guess"`` (the starting sample, i.e. no search) are
    scored against *all* the client's training records. ``descriptor_error`` is the
    scaled descriptor mismatch the search minimises. ``descriptor``: the descriptor the
    clients send (a label-aware one is inverted from labelled population records; the
    model-anchored one is computed against the round-2 FedAvg model, which the server
    broadcast). Column ``descriptor`` names it.

    Parameters
    ----------
    scenario : str, default="healthcare"
        Scenario name.
    seeds : iterable of int, default=range(3)
        Scenario realisations.
    n_sub : int, default=80
        The descriptor's subsample size.
    n_iter : int, default=1000
        Steps of the search.
    tol : float, default=0.1
        Relative error of a recovered record.
    max_clients : int, optional
        Attack at most this many honest clients per seed.
    progress : bool, default=True
        Show a tqdm bar.
    descriptor : str, default="paper"
        The descriptor the clients send: ``"paper"``, ``"class_conditional"`` or
        ``"model_anchored"`` (see :func:`~topofl_lib.privacy.attacks.descriptor_map`).

    Returns
    -------
    pandas.DataFrame
        One row per (seed, client, attack): scenario, seed, client, attack, descriptor_error,
        recovered, relative_error, cosine, descriptor.
    """
    check_int(n_iter, "n_iter", low=1)
    _check_max_clients(max_clients)
    descriptor_map(descriptor, w=np.zeros(2))  # validates the name before any run
    rows = []
    seeds = check_seeds(seeds)
    get_scenario(scenario)  # an unknown name fails before any run
    bar = tqdm(total=len(seeds), desc=f"descriptor inversion ({scenario})", disable=not progress)
    for seed in seeds:
        scen = make_scenario(scenario, random_state=seed)
        w = _attacked_model(scen, seed) if descriptor == "model_anchored" else None
        describe = descriptor_map(descriptor, w=w)
        rng = np.random.default_rng(seed)
        honest = [k for k, c in enumerate(scen.clients) if not c.adversarial]
        for k in honest[:max_clients]:
            c = scen.clients[k]
            phi = describe(c.X_train, c.y_train, n_sub, draw_seed(rng))
            n_points = min(c.n_train, n_sub)
            attack_seed = draw_seed(rng)
            pop, pop_y = _population(scen, k), _population_labels(scen, k)
            X_hat, losses = invert_descriptor(phi, pop, n_points, n_iter=n_iter,
                                              descriptor=descriptor, labels=pop_y, w=w,
                                              random_state=attack_seed)
            X0, _ = invert_descriptor(phi, pop, n_points, n_iter=0, descriptor=descriptor,
                                      labels=pop_y, w=w, random_state=attack_seed)
            for attack, Z, err in (("descriptor_inversion", X_hat, losses[-1]),
                                   ("population_guess", X0, losses[0])):
                rows.append({"scenario": scenario, "seed": seed, "client": k,
                             "descriptor": descriptor,
                             "attack": attack, "descriptor_error": err,
                             **reconstruction_metrics(Z, c.X_train, tol)})
        bar.update()
    bar.close()
    return pd.DataFrame(rows)


def membership_experiment(
    scenario: str = "healthcare",
    seeds: Iterable[int] = range(3),
    n: int = 100,
    n_targets: int = 50,
    n_shadow: int = 16,
    progress: bool = True,
    descriptor: str = "paper",
    channels: Sequence[str] = ("gradient", "descriptor"),
    model_dp=None,
    descriptor_mechanism=None,
    per_trial: bool = False,
) -> pd.DataFrame:
    """Membership-inference AUC on the gradient and the descriptor channel per seed.

    The population is the pooled training data of the scenario realisation; gradients
    (and the model-anchored descriptor) are taken at the round-2 FedAvg model.
    ``descriptor``: what the descriptor channel sends; ``channels``: which channels to
    attack. Columns: scenario, seed, n, channel, descriptor, auc.

    Against DP options the transmitted objects are privatised as the options do
    (:func:`~topofl_lib.privacy.attacks.release_map`): the gradient by ``model_dp`` (a
    :class:`~topofl_lib.privacy.ClientLevelDP`: clipped, noised), the descriptor by
    ``descriptor_mechanism`` (normalised, released). ``per_trial`` returns the trials
    themselves, for an audit (:mod:`topofl_lib.privacy.audit`).

    Parameters
    ----------
    scenario : str, default="healthcare"
        Scenario name.
    seeds : iterable of int, default=range(3)
        Scenario realisations.
    n : int, default=100
        Records per simulated client dataset.
    n_targets : int, default=50
        Target records per seed and channel.
    n_shadow : int, default=16
        Shadow datasets per side.
    progress : bool, default=True
        Show a tqdm bar.
    descriptor : str, default="paper"
        What the descriptor channel sends (``"paper"``, ``"class_conditional"``,
        ``"model_anchored"``).
    channels : sequence of {"gradient", "descriptor"}, default=both
        The channels attacked.
    model_dp : ClientLevelDP, optional
        The gradient channel's DP option; None: in the clear.
    descriptor_mechanism : GaussianMechanism or LaplaceMechanism, optional
        The descriptor channel's DP mechanism; None: in the clear.
    per_trial : bool, default=False
        One row per trial instead, with its ``trial`` number, ``member`` (the target was
        in) and ``score`` (the attack's log-likelihood ratio) in place of ``auc``.

    Returns
    -------
    pandas.DataFrame
        One row per (seed, channel), or per (seed, channel, trial).
    """
    mechanisms = {"gradient": model_dp, "descriptor": descriptor_mechanism}
    for channel in channels:
        if channel not in ("gradient", "descriptor"):
            raise ValueError(f"unknown channel {channel!r}; expected 'gradient' or "
                             "'descriptor'")
        release_map(channel, mechanisms[channel])  # a wrong option fails before any run
    descriptor_map(descriptor, w=np.zeros(2))  # validates the name before any run
    rows = []
    seeds = check_seeds(seeds)
    get_scenario(scenario)  # an unknown name fails before any run
    bar = tqdm(total=len(channels) * len(seeds), desc=f"membership ({scenario})",
               disable=not progress)
    for seed in seeds:
        scen = make_scenario(scenario, random_state=seed)
        X = np.vstack([c.X_train for c in scen.clients])
        y = np.concatenate([c.y_train for c in scen.clients])
        w = _attacked_model(scen, seed)
        for channel in channels:
            res = membership_inference(X, y, n, channel, w=w, n_targets=n_targets,
                                       n_shadow=n_shadow, descriptor=descriptor,
                                       mechanism=mechanisms[channel], random_state=seed)
            row = {"scenario": scenario, "seed": seed, "n": n, "channel": channel,
                   "descriptor": descriptor}
            if per_trial:
                rows += [{**row, "trial": t, "member": bool(m), "score": float(v)}
                         for t, (m, v) in enumerate(zip(res["members"], res["scores"],
                                                        strict=True))]
            else:
                rows.append({**row, "auc": res["auc"]})
            bar.update()
    bar.close()
    return pd.DataFrame(rows)


def dp_utility_experiment(
    scenario: str = "healthcare",
    seeds: Iterable[int] = range(5),
    epsilons: Sequence[float] = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0),
    delta: float = 1e-5,
    n_rounds: int = 15,
    progress: bool = True,
    descriptor: str = "paper",
) -> pd.DataFrame:
    """Final AUC of pTopoFL with Gaussian-DP descriptors for each epsilon.

    ``epsilon = inf`` rows are the non-private pTopoFL, and FedAvg rows give the
    topology-free reference. ``descriptor``: pTopoFL's descriptor option (each release
    of a model-anchored descriptor, one per round, gets the mechanism's noise).
    Columns: scenario, seed, method, descriptor, epsilon, sigma, auc.

    Parameters
    ----------
    scenario : str, default="healthcare"
        Scenario name.
    seeds : iterable of int, default=range(5)
        Scenario realisations.
    epsilons : sequence of float, default=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
        Privacy levels (> 0).
    delta : float, default=1e-5
        The Gaussian mechanism's delta.
    n_rounds : int, default=15
        Communication rounds.
    progress : bool, default=True
        Show a tqdm bar.
    descriptor : str, default="paper"
        pTopoFL's descriptor option (``"paper"``, ``"class_conditional"``,
        ``"model_anchored"``).

    Returns
    -------
    pandas.DataFrame
        One row per (seed, method, epsilon).
    """
    for e in epsilons:
        check_real(e, "epsilon", low=0.0, low_open=True)
    rows = []
    seeds = check_seeds(seeds)
    get_scenario(scenario)  # an unknown name fails before any run
    bar = tqdm(total=len(seeds), desc=f"DP utility ({scenario})", disable=not progress)
    for seed in seeds:
        scen = make_scenario(scenario, random_state=seed)
        fedavg = FedAvg(n_rounds=n_rounds, random_state=seed).fit(scen)
        rows.append({"scenario": scenario, "seed": seed, "method": "FedAvg",
                     "descriptor": "", "epsilon": np.inf, "sigma": 0.0,
                     "auc": fedavg.history_["auc"][-1]})
        for eps in [*epsilons, np.inf]:
            mech = None if np.isinf(eps) else GaussianMechanism(eps, delta)
            est = PTopoFL(n_rounds=n_rounds, descriptor_mechanism=mech, descriptor=descriptor,
                          random_state=seed).fit(scen)
            rows.append({"scenario": scenario, "seed": seed, "method": "pTopoFL",
                         "descriptor": descriptor,
                         "epsilon": eps, "sigma": 0.0 if mech is None else mech.sigma,
                         "auc": est.history_["auc"][-1]})
        bar.update()
    bar.close()
    return pd.DataFrame(rows)
