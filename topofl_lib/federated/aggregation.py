r"""The pTopoFL server's aggregation rules (Sec. 3.3-3.4, Eqs. 6-8), as pure functions.

These are shared by the in-process engine (:class:`~topofl_lib.federated.PTopoFL`) and
any other transport, so that there is one implementation of each equation.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import AgglomerativeClustering

from .._validation import check_int, check_real
from ..topology.distances import descriptor_distances, normalise_descriptors

__all__ = [
    "aggregate_round",
    "server_state",
    "blend_clusters",
    "cluster_clients",
    "cluster_models",
    "intra_cluster_weights",
    "trust_weights",
]


def _check_square(D, name="D") -> np.ndarray:
    D = np.asarray(D, dtype=np.float64)
    if D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise ValueError(f"{name} must be a square distance matrix, got shape {D.shape}")
    if not np.all(np.isfinite(D)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return D


def cluster_clients(D, n_clusters: int) -> np.ndarray:
    """Average-linkage agglomerative clustering of a precomputed distance matrix.

    Labels are renumbered by first appearance (client 0 is always in cluster 0), so
    the result does not depend on scikit-learn's internal numbering.
    """
    D = _check_square(D)
    K = D.shape[0]
    check_int(n_clusters, "n_clusters", low=1, high=K)
    if n_clusters == 1:
        return np.zeros(K, dtype=np.int64)
    raw = AgglomerativeClustering(
        n_clusters=n_clusters, metric="precomputed", linkage="average"
    ).fit_predict(D)
    _, first = np.unique(raw, return_index=True)
    order = np.argsort(np.argsort(first))
    return order[raw].astype(np.int64)


def trust_weights(D, tau: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Eq. 8: anomaly z-scores and trust weights.

    :math:`\delta_k = \frac{1}{K-1}\sum_{j\ne k} D_{kj}`, :math:`z_k` its z-score
    (population standard deviation), and :math:`t_k = \exp(-\max(z_k - 1, 0))` for
    clients flagged by :math:`z_k > \tau`; unflagged clients keep :math:`t_k = 1`.

    Returns
    -------
    trust, z : ndarray of shape (K,)
    """
    D = _check_square(D)
    check_real(tau, "tau")
    K = D.shape[0]
    if K < 2:
        return np.ones(K), np.zeros(K)
    delta = D.sum(axis=1) / (K - 1)
    sd = delta.std()
    z = (delta - delta.mean()) / sd if sd > 0 else np.zeros(K)
    trust = np.where(z > tau, np.exp(-np.maximum(z - 1.0, 0.0)), 1.0)
    return trust, z


def intra_cluster_weights(Phi_hat, labels, sizes, trust) -> np.ndarray:
    r"""Eq. 6 weights, normalised to sum to 1 within each cluster.

    :math:`w_k \propto n_k \exp(-\|\hat\phi_k - \hat\phi_{C}\|)\, t_k`.

    ``Phi_hat`` holds l2-normalised descriptors; :math:`\hat\phi_C` is their mean over
    the cluster.
    """
    Phi_hat = np.asarray(Phi_hat, dtype=np.float64)
    labels = np.asarray(labels)
    sizes = np.asarray(sizes, dtype=np.float64)
    trust = np.asarray(trust, dtype=np.float64)
    K = Phi_hat.shape[0]
    for name, a in (("labels", labels), ("sizes", sizes), ("trust", trust)):
        if a.shape != (K,):
            raise ValueError(f"{name} must have shape ({K},), got {a.shape}")
    w = np.zeros(K)
    for c in np.unique(labels):
        m = labels == c
        centre = Phi_hat[m].mean(axis=0)
        raw = sizes[m] * np.exp(-np.linalg.norm(Phi_hat[m] - centre, axis=1)) * trust[m]
        w[m] = raw / raw.sum()
    return w


def cluster_models(models, labels, weights) -> np.ndarray:
    """Eq. 6 aggregate per cluster: ``theta_C = sum_{k in C} w_k theta_k`` (M x dim)."""
    models = np.asarray(models, dtype=np.float64)
    labels = np.asarray(labels)
    M = int(labels.max()) + 1
    out = np.zeros((M, models.shape[1]))
    np.add.at(out, labels, np.asarray(weights)[:, None] * models)
    return out


def blend_clusters(theta_clusters, cluster_sizes, beta: float) -> np.ndarray:
    r"""Eq. 7: :math:`\theta^*_{C_j} = (1-\beta)\theta_{C_j} + \beta\bar\theta`,
    :math:`\bar\theta = \sum_j \frac{|C_j|}{K}\theta_{C_j}`."""
    check_real(beta, "beta", low=0.0, high=1.0)
    theta = np.asarray(theta_clusters, dtype=np.float64)
    sizes = np.asarray(cluster_sizes, dtype=np.float64)
    consensus = sizes @ theta / sizes.sum()
    return (1.0 - beta) * theta + beta * consensus


def server_state(descriptors, sizes, n_clusters: int, tau: float, use_trust: bool = True,
                 distances=None) -> dict:
    """pTopoFL's round-0 server step (Algorithm 1), as one pure function.

    From the clients' descriptors (and sizes): the distance matrix (l2 of normalised
    descriptors unless ``distances`` is given), the clusters, Eq. 8 trust, Eq. 6 weights
    and each client's share of the Eq. 7 consensus. Used by
    :class:`~topofl_lib.federated.PTopoFL` and by the Flower strategy
    (:mod:`topofl_lib.flower`), so both run the same server.
    """
    descriptors = np.asarray(descriptors, dtype=np.float64)
    K = descriptors.shape[0]
    D = descriptor_distances(descriptors) if distances is None else np.asarray(distances)
    labels = cluster_clients(D, n_clusters)
    trust, z = trust_weights(D, tau)
    if not use_trust:
        trust = np.ones(K)
    weights = intra_cluster_weights(normalise_descriptors(descriptors), labels, sizes, trust)
    cluster_sizes = np.bincount(labels)
    return {"distances": D, "labels": labels, "trust": trust, "z": z, "weights": weights,
            "cluster_sizes": cluster_sizes,
            "consensus_weights": cluster_sizes[labels] / K * weights}


def aggregate_round(local_models, labels, weights, cluster_sizes, beta: float,
                    previous=None, responded=None) -> np.ndarray:
    """One pTopoFL aggregation: Eq. 6 within each cluster, then Eq. 7 blending.

    ``responded`` (boolean, one per client) handles clients that did not reply in a
    real federation: only responders' models are used, with their Eq. 6 weights
    renormalised within each cluster, and a cluster none of whose clients replied keeps
    its ``previous`` model. No stale or partial model enters the aggregate. With every
    client responding this is exactly ``blend_clusters(cluster_models(...))``.
    """
    models = np.asarray(local_models, dtype=np.float64)
    labels = np.asarray(labels)
    weights = np.asarray(weights, dtype=np.float64)
    if responded is None:
        return blend_clusters(cluster_models(models, labels, weights), cluster_sizes, beta)
    responded = np.asarray(responded, dtype=bool)
    M = int(labels.max()) + 1
    if previous is None and not all(responded[labels == j].any() for j in range(M)):
        raise ValueError("a cluster has no responding client and no previous model")
    theta = np.zeros((M, models.shape[1]))
    for j in range(M):
        m = (labels == j) & responded
        if m.any():
            w = weights[m] / weights[m].sum()
            theta[j] = w @ models[m]
        else:
            theta[j] = np.asarray(previous, dtype=np.float64)[j]
    return blend_clusters(theta, cluster_sizes, beta)
