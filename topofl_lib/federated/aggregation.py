r"""The pTopoFL server's aggregation rules (Sec. 3.3-3.4, Eqs. 6-8), as pure functions.

These are shared by the in-process engine (:class:`~topofl_lib.federated.PTopoFL`) and
any other transport, so that there is one implementation of each equation.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import AgglomerativeClustering

from .._validation import as_float_array, check_finite, check_int, check_points, check_real
from ..topology.distances import descriptor_distances, normalise_descriptors

__all__ = [
    "aggregate_round",
    "server_state",
    "blend_clusters",
    "cluster_clients",
    "cluster_models",
    "consensus_model",
    "intra_cluster_weights",
    "trust_weights",
]


def _check_square(D, name="D") -> np.ndarray:
    D = as_float_array(D, name)
    if D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise ValueError(f"{name} must be a square distance matrix, got shape {D.shape}")
    if not np.all(np.isfinite(D)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return D


def _check_per_client(a, name: str, K: int, *, positive: bool = False) -> np.ndarray:
    """A finite, non-negative float vector of shape (K,) (positive if asked)."""
    a = as_float_array(a, name)
    if a.shape != (K,):
        raise ValueError(f"{name} must have shape ({K},), got {a.shape}")
    check_finite(a, name)
    if np.any(a <= 0) if positive else np.any(a < 0):
        raise ValueError(f"{name} must be {'positive' if positive else 'non-negative'}, "
                         f"got {a.tolist()[:10]}")
    return a


def _check_labels(labels, K: int) -> np.ndarray:
    """Cluster indices: K non-negative whole numbers (as an int array)."""
    labels = np.asarray(labels)
    whole = labels.dtype.kind in "iu" or (
        labels.dtype.kind == "f" and np.all(np.isfinite(labels))
        and np.all(labels == np.round(labels)))
    if labels.shape != (K,) or not whole or (K and labels.min() < 0):
        raise ValueError(f"labels must be {K} non-negative integer cluster indices, got "
                         f"{labels.tolist()[:10]}")
    return labels.astype(np.int64)


def cluster_clients(D, n_clusters: int) -> np.ndarray:
    """Average-linkage agglomerative clustering of a precomputed distance matrix.

    Labels are renumbered by first appearance (client 0 is always in cluster 0), so
    the result does not depend on scikit-learn's internal numbering.

    Parameters
    ----------
    D : array-like of shape (K, K)
        Finite pairwise client distances.
    n_clusters : int
        Number of clusters, ``1 <= n_clusters <= K``.

    Returns
    -------
    ndarray of int64, shape (K,)
        Each client's cluster.
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

    ``tau`` must be >= 0. A z-score is measured in standard deviations from the mean
    anomaly score, so a negative threshold would "flag" clients that are closer than
    average to the others, which is no anomaly; it is refused rather than silently
    accepted. Since :math:`t_k = 1` whenever :math:`z_k \le 1` (paper: "honest clients
    (z_k <= 1) retain t_k = 1"), every ``tau`` in [0, 1] gives the same weights as
    ``tau = 1``; and since a population z-score never exceeds :math:`\sqrt{K-1}`, a
    ``tau`` at or above it flags no client.

    Parameters
    ----------
    D : array-like of shape (K, K)
        Finite pairwise client distances.
    tau : float
        Z-score threshold (>= 0).

    Returns
    -------
    trust, z : ndarray of shape (K,)
    """
    D = _check_square(D)
    check_real(tau, "tau", low=0.0)
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

    Parameters
    ----------
    Phi_hat : array-like of shape (K, d)
        Normalised client descriptors.
    labels : array-like of shape (K,)
        Cluster of each client.
    sizes : array-like of shape (K,)
        Client sample sizes :math:`n_k`, positive.
    trust : array-like of shape (K,)
        Eq. 8 trust weights, non-negative (every cluster needs one positive).

    Returns
    -------
    ndarray of shape (K,)
    """
    Phi_hat = check_points(Phi_hat, "Phi_hat")
    K = Phi_hat.shape[0]
    labels = _check_labels(labels, K)
    sizes = _check_per_client(sizes, "sizes", K, positive=True)
    trust = _check_per_client(trust, "trust", K)
    w = np.zeros(K)
    for c in np.unique(labels):
        m = labels == c
        centre = Phi_hat[m].mean(axis=0)
        raw = sizes[m] * np.exp(-np.linalg.norm(Phi_hat[m] - centre, axis=1)) * trust[m]
        if not raw.sum() > 0:
            raise ValueError(f"every client of cluster {c} has trust 0: its weights are "
                             "undefined")
        w[m] = raw / raw.sum()
    return w


def cluster_models(models, labels, weights) -> np.ndarray:
    """Eq. 6 aggregate per cluster: ``theta_C = sum_{k in C} w_k theta_k``.

    Parameters
    ----------
    models : array-like of shape (K, dim)
        The clients' models.
    labels : array-like of shape (K,)
        Cluster of each client (``0 .. M-1``).
    weights : array-like of shape (K,)
        Eq. 6 weights (:func:`intra_cluster_weights`).

    Returns
    -------
    ndarray of shape (M, dim)
    """
    models = check_points(models, "models")
    K = models.shape[0]
    labels = _check_labels(labels, K)
    weights = _check_per_client(weights, "weights", K)
    M = int(labels.max()) + 1
    out = np.zeros((M, models.shape[1]))
    np.add.at(out, labels, weights[:, None] * models)
    return out


def consensus_model(theta_clusters, cluster_sizes) -> np.ndarray:
    r"""The consensus of Eq. 7, :math:`\bar\theta = \sum_j \frac{|C_j|}{K}\theta_{C_j}`.

    Parameters
    ----------
    theta_clusters : array-like of shape (M, dim)
        One model per cluster.
    cluster_sizes : array-like of shape (M,)
        :math:`|C_j|`, positive.

    Returns
    -------
    numpy.ndarray of shape (dim,)
    """
    theta = check_points(theta_clusters, "theta_clusters")
    sizes = _check_per_client(cluster_sizes, "cluster_sizes", theta.shape[0], positive=True)
    return sizes @ theta / sizes.sum()


def blend_clusters(theta_clusters, cluster_sizes, beta: float) -> np.ndarray:
    r"""Eq. 7: :math:`\theta^*_{C_j} = (1-\beta)\theta_{C_j} + \beta\bar\theta`,
    :math:`\bar\theta = \sum_j \frac{|C_j|}{K}\theta_{C_j}` (:func:`consensus_model`).

    Parameters
    ----------
    theta_clusters : array-like of shape (M, dim)
        One model per cluster.
    cluster_sizes : array-like of shape (M,)
        :math:`|C_j|`, positive.
    beta : float
        Blending coefficient in [0, 1].

    Returns
    -------
    ndarray of shape (M, dim)
    """
    check_real(beta, "beta", low=0.0, high=1.0)
    theta = check_points(theta_clusters, "theta_clusters")
    return (1.0 - beta) * theta + beta * consensus_model(theta, cluster_sizes)


def server_state(descriptors, sizes, n_clusters: int, tau: float, use_trust: bool = True,
                 distances=None, labels=None) -> dict:
    """pTopoFL's round-0 server step (Algorithm 1), as one pure function.

    From the clients' descriptors (and sizes): the distance matrix (l2 of normalised
    descriptors unless ``distances`` is given), the clusters, Eq. 8 trust, Eq. 6 weights
    and each client's share of the Eq. 7 consensus. Used by
    :class:`~topofl_lib.federated.PTopoFL` and by the Flower strategy
    (:mod:`topofl_lib.flower`), so both run the same server. ``labels`` (one cluster
    index per client) keeps those clusters instead of clustering: trust and weights of
    new descriptors within the current clusters.

    Parameters
    ----------
    descriptors : array-like of shape (K, d)
        The clients' descriptors (not normalised).
    sizes : array-like of shape (K,)
        Client sample sizes.
    n_clusters : int
        Number of clusters.
    tau : float
        Eq. 8 z-score threshold.
    use_trust : bool, default=True
        If False every trust weight is 1.
    distances : array-like of shape (K, K), optional
        Client distances to use instead of the descriptors' l2 distances.
    labels : array-like of shape (K,), optional
        Keep these clusters instead of clustering.

    Returns
    -------
    dict
        ``"distances"``, ``"labels"``, ``"trust"``, ``"z"``, ``"weights"``,
        ``"cluster_sizes"`` and ``"consensus_weights"`` (arrays).
    """
    descriptors = check_points(descriptors, "descriptors")
    K = descriptors.shape[0]
    D = (descriptor_distances(descriptors) if distances is None
         else _check_square(distances, "distances"))
    labels = cluster_clients(D, n_clusters) if labels is None else _check_labels(labels, K)
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

    Parameters
    ----------
    local_models : array-like of shape (K, dim)
        The clients' models (rows of non-responders are ignored).
    labels : array-like of shape (K,)
        Cluster of each client.
    weights : array-like of shape (K,)
        Eq. 6 weights.
    cluster_sizes : array-like of shape (M,)
        :math:`|C_j|` for Eq. 7.
    beta : float
        Eq. 7 blending coefficient.
    previous : array-like of shape (M, dim), optional
        Last round's cluster models; needed when a cluster has no responder.
    responded : array-like of bool, shape (K,), optional
        Which clients replied (``None``: all).

    Returns
    -------
    ndarray of shape (M, dim)
        The blended cluster models.
    """
    if responded is None:
        return blend_clusters(cluster_models(local_models, labels, weights), cluster_sizes,
                              beta)
    models = as_float_array(local_models, "local_models")
    if models.ndim != 2 or models.shape[0] == 0:
        raise ValueError(f"local_models must be 2-D (K, dim), got shape {models.shape}")
    K = models.shape[0]
    labels = _check_labels(labels, K)
    weights = _check_per_client(weights, "weights", K)
    responded = np.asarray(responded)
    if responded.shape != (K,) or responded.dtype.kind != "b":
        raise ValueError(f"responded must be {K} booleans (one per client), got "
                         f"{responded.tolist()[:10]}")
    check_finite(models[responded], "local_models (rows of the responding clients)")
    M = int(labels.max()) + 1
    if previous is None and not all(responded[labels == j].any() for j in range(M)):
        raise ValueError("a cluster has no responding client and no previous model")
    if previous is not None:
        previous = check_points(previous, "previous")
        if previous.shape != (M, models.shape[1]):
            raise ValueError(f"previous must have shape ({M}, {models.shape[1]}), got "
                             f"{previous.shape}")
    theta = np.zeros((M, models.shape[1]))
    for j in range(M):
        m = (labels == j) & responded
        if m.any():
            w = weights[m] / weights[m].sum()
            theta[j] = w @ models[m]
        else:
            theta[j] = previous[j]
    return blend_clusters(theta, cluster_sizes, beta)
