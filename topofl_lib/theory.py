r"""Numerical checks of the pTopoFL paper's theorems (Theorems 3, 5 and 6).

* :func:`weighted_variance_identity` (Theorem 6): for weights
  :math:`\alpha_k \ge 0, \sum\alpha_k = 1`,
  :math:`\sum_k\alpha_k\|g_k-\bar g_\alpha\|^2
  = \sum_k\alpha_k\|g_k-\bar g\|^2 - \|\bar g_\alpha-\bar g\|^2`.
  This is an algebraic identity (it holds for any vectors); checking it on real
  client updates checks our aggregation code, not the paper's claim that topology
  weighting *reduces* variance, which needs the reduction term to outweigh the change
  of weights (the right-hand side's first term uses the weights ``alpha``, not 1/K).
* :func:`theorem5_bound` and :func:`adversarial_separation` (Theorem 5): the bound
  :math:`\epsilon e^{-\lambda\Delta}/((1-\epsilon)+\epsilon e^{-\lambda\Delta})` on the
  total weight of adversarial clients, with :math:`\Delta` the separation of their mean
  descriptor distance from the honest mean and :math:`\lambda = 1/\sigma_\delta` (the
  trust weight is :math:`\exp(-(z-1))` with :math:`z = (\delta-\mu)/\sigma_\delta`).
  The theorem assumes :math:`\Delta > 0`; where adversaries are not separated, it says
  nothing. Its second claim is wrong as stated: at
  :math:`\lambda\Delta = \log\frac{1-\epsilon}{\epsilon}` the bound equals
  :math:`\epsilon^2/((1-\epsilon)^2+\epsilon^2)`, which exceeds :math:`\epsilon^2` for
  every :math:`\epsilon \in (0, 1)`; the bound falls below :math:`\epsilon^2` only from
  :math:`\lambda\Delta \ge \log\frac{1-\epsilon^2}{\epsilon(1-\epsilon)}` on (tested).
* :func:`clustering_stability` (Theorem 3): perturb every normalised descriptor by a
  random vector of norm ``eta`` and record how often average-linkage clustering changes
  the partition, against the separation margin (minimum inter-cluster distance).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.spatial.distance import cdist
from sklearn.metrics import adjusted_rand_score

from ._validation import check_int, check_random_state, check_real
from .federated.aggregation import cluster_clients
from .topology.distances import normalise_descriptors

__all__ = [
    "adversarial_separation",
    "clustering_stability",
    "theorem5_bound",
    "weighted_variance_identity",
]


def weighted_variance_identity(G, alpha) -> dict[str, float]:
    """Both sides of Theorem 6 for client vectors ``G`` (K x p) and weights ``alpha``.

    Returns ``weighted_variance`` (left side), ``uniform_centred`` (first right term),
    ``reduction`` (``||g_alpha - g_bar||^2``) and ``residual`` (left - right).

    Parameters
    ----------
    G : array-like of shape (K, p)
        One vector per client.
    alpha : array-like of shape (K,)
        Non-negative weights summing to 1.

    Returns
    -------
    dict of str to float
        The four values named above; ``residual`` is zero up to rounding.
    """
    G = np.asarray(G, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    if G.ndim != 2 or alpha.shape != (G.shape[0],):
        raise ValueError(f"G must be (K, p) and alpha (K,), got {G.shape} and {alpha.shape}")
    if np.any(alpha < 0) or not np.isclose(alpha.sum(), 1.0):
        raise ValueError("alpha must be non-negative and sum to 1")
    g_bar = G.mean(axis=0)
    g_alpha = alpha @ G
    lhs = float(alpha @ ((G - g_alpha) ** 2).sum(axis=1))
    uniform = float(alpha @ ((G - g_bar) ** 2).sum(axis=1))
    reduction = float(((g_alpha - g_bar) ** 2).sum())
    return {"weighted_variance": lhs, "uniform_centred": uniform, "reduction": reduction,
            "residual": lhs - (uniform - reduction)}


def theorem5_bound(eps: float, lam_delta: float) -> float:
    """Theorem 5's bound on the adversarial aggregation weight.

    Parameters
    ----------
    eps : float
        Fraction of adversarial clients, in [0, 1].
    lam_delta : float
        The product :math:`\\lambda\\Delta` (see :func:`adversarial_separation`).

    Returns
    -------
    float
        :math:`\\epsilon e^{-\\lambda\\Delta} / ((1 - \\epsilon) + \\epsilon e^{-\\lambda\\Delta})`
        (1 when ``eps`` is 1).
    """
    check_real(eps, "eps", low=0.0, high=1.0)
    e = eps * np.exp(-lam_delta)
    return float(e / ((1.0 - eps) + e)) if eps < 1 else 1.0


def adversarial_separation(D, adversarial) -> dict[str, float]:
    """Measured ``Delta`` (min adversarial minus mean honest delta_k), ``lambda`` and their product.

    ``delta_k`` is Eq. 8's mean distance of client ``k`` to the others. Without an
    adversarial client, or without an honest one, the separation is undefined and
    every value is NaN (an attack rate of 0 in a robustness sweep).

    Parameters
    ----------
    D : array-like of shape (K, K)
        Pairwise descriptor distances.
    adversarial : array-like of shape (K,), dtype bool
        Which clients are adversarial.

    Returns
    -------
    dict of str to float
        ``delta_sep`` (:math:`\\Delta`), ``lam`` (:math:`\\lambda`, one over the standard deviation
        of the ``delta_k``) and ``lam_delta``.
    """
    D = np.asarray(D, dtype=np.float64)
    adv = np.asarray(adversarial, dtype=bool)
    K = D.shape[0]
    if D.shape != (K, K) or adv.shape != (K,):
        raise ValueError(f"D must be (K, K) and adversarial (K,), got {D.shape} and "
                         f"{adv.shape}")
    if not adv.any() or adv.all():
        return {"delta_sep": np.nan, "lam": np.nan, "lam_delta": np.nan}
    delta = D.sum(axis=1) / (K - 1)
    sep = float(delta[adv].min() - delta[~adv].mean())
    sd = float(delta.std())
    lam = 1.0 / sd if sd > 0 else np.inf
    return {"delta_sep": sep, "lam": lam, "lam_delta": lam * sep}


def clustering_stability(Phi, n_clusters: int, etas, n_trials: int = 50,
                         random_state=None) -> pd.DataFrame:
    """How often perturbing normalised descriptors by norm ``eta`` changes the clusters.

    Returns one row per ``eta``: ``eta``, ``margin`` (minimum distance between clients of
    different clusters), ``eta_over_margin`` and ``changed`` (fraction of trials whose
    partition differs, ARI < 1).

    Parameters
    ----------
    Phi : array-like of shape (K, d)
        Client descriptors (normalised here).
    n_clusters : int
        Number of clusters.
    etas : iterable of float
        Perturbation norms (>= 0).
    n_trials : int, default=50
        Random perturbations per ``eta``.
    random_state : None, int or Generator
        Seeds the perturbations.

    Returns
    -------
    pandas.DataFrame
        Columns ``eta``, ``margin``, ``eta_over_margin`` and ``changed``.
    """
    P = normalise_descriptors(Phi)
    check_int(n_trials, "n_trials", low=1)
    rng = check_random_state(random_state)
    D = cdist(P, P)
    labels = cluster_clients(D, n_clusters)
    other = labels[:, None] != labels[None, :]
    margin = float(D[other].min()) if other.any() else np.nan
    rows = []
    for eta in etas:
        check_real(eta, "eta", low=0.0)
        changed = 0
        for _ in range(n_trials):
            noise = rng.normal(size=P.shape)
            noise *= eta / np.linalg.norm(noise, axis=1, keepdims=True)
            Q = P + noise
            new = cluster_clients(cdist(Q, Q), n_clusters)
            changed += adjusted_rand_score(labels, new) < 1.0
        rows.append({"eta": eta, "margin": margin, "eta_over_margin": eta / margin,
                     "changed": changed / n_trials})
    return pd.DataFrame(rows)
