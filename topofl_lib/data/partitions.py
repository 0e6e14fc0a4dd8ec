"""Non-IID partitions of a labelled dataset across clients.

:func:`kmeans_noniid_partition` is Algorithm 5 of the GFC paper (following MUFC):
k-means with as many groups as classes; each client but the last draws points from two
randomly chosen groups, ``min(r1, r2, r3)`` from each, with ``r1`` uniform in
``[size / (n_groups / 2), size]``, ``r2 = size - (points the client already has)`` (our
reading of the paper's ``size - |s|``) and ``r3`` the group's unassigned points; the last
client takes everything left. As written, the algorithm can hand a client nothing (both
chosen groups already empty) or leave the last client empty; we only pick among non-empty
groups, cap every draw so that each later client can still get a point, and top an empty
client up from the largest remaining group. Every record is assigned exactly once.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

from .._validation import check_class_labels, check_int, check_points, check_random_state
from ..core.seeds import draw_seed

__all__ = ["kmeans_noniid_partition"]


def kmeans_noniid_partition(X, y, n_clients: int = 10, random_state=None) -> list[np.ndarray]:
    """Index arrays of ``n_clients`` non-IID clients (GFC Algorithm 5, made total).

    Parameters
    ----------
    X : array-like (n, d)
    y : array-like (n,)
        Labels; only their number of distinct values is used (the k of k-means).
    n_clients : int
    random_state : None, int or Generator

    Returns
    -------
    list of ndarray of int64
        Sorted row indices of each client; every record belongs to exactly one client.
    """
    X = check_points(X)
    y = check_class_labels(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    check_int(n_clients, "n_clients", low=1)
    n = X.shape[0]
    if n < n_clients:
        raise ValueError(f"X has {n} records, fewer than n_clients={n_clients}")
    rng = check_random_state(random_state)
    k = max(int(np.unique(y).size), 1)
    groups = KMeans(k, n_init=3, random_state=draw_seed(rng)).fit_predict(X)
    pools = [list(rng.permutation(np.flatnonzero(groups == g))) for g in range(k)]
    size = n // n_clients
    low = min(size, int(size / max(k / 2, 1)))
    clients = []
    for i in range(n_clients - 1):
        later = n_clients - 1 - i  # clients that still need at least one record
        mine = []
        non_empty = [g for g in range(k) if pools[g]]
        chosen = rng.choice(non_empty, size=min(2, len(non_empty)), replace=False)
        for g in chosen:
            remaining = sum(len(p) for p in pools)
            r1 = int(rng.integers(low, size + 1))
            take = min(r1, size - len(mine), len(pools[g]), remaining - later)
            mine += [pools[g].pop() for _ in range(max(take, 0))]
        if not mine:  # top up from the largest group
            g = int(np.argmax([len(p) for p in pools]))
            mine.append(pools[g].pop())
        clients.append(np.sort(np.asarray(mine, dtype=np.int64)))
    rest = np.sort(np.asarray([i for p in pools for i in p], dtype=np.int64))
    clients.append(rest)
    return clients
