r"""The non-IID partitions of FedTopo (Appendix C.1), seeded.

Every function returns one index array per client; every sample is assigned to exactly
one client (tests check it).

``"N"`` (amplitude-noise skew)
    An IID split into equal parts; client :math:`j` (1-based) later has Gaussian noise of
    standard deviation :math:`\sigma_j = \frac{j-1}{K-1}\bar\sigma` added to its
    training inputs (:func:`noise_levels`). The paper's formula makes the *first*
    client noiseless while its text says :math:`\sigma_K = 0`; the set of levels is the
    same either way, and we follow the formula.
``"L"`` (label skew, also pTopoFL's Dirichlet split)
    For each class, proportions :math:`p_c \sim \mathrm{Dir}_K(\alpha_\ell)` over the
    clients cut the class's shuffled indices into consecutive pieces.
``"K"`` (fixed-k label skew)
    Client :math:`j` holds exactly ``k`` distinct labels: a random permutation of the
    labels read cyclically from offset :math:`\lfloor jC/K \rfloor` (C classes), which
    spreads the labels evenly and covers every label when :math:`Kk \ge C`. Each class is
    split into equal shards among the clients that hold it.
``"Q"`` (quantity skew)
    Proportions :math:`p \sim \mathrm{Dir}_K(\alpha_q)` cut the shuffled indices into
    consecutive pieces of sizes :math:`\approx p_j N`.
``"iid"``
    A random split into equal parts.

The Dirichlet partitions are redrawn (up to 1000 times) until every client has at least
``min_size`` samples, the usual practice; a ``ValueError`` says when that is impossible.
"""

from __future__ import annotations

import numpy as np

from .._validation import (
    check_choice,
    check_class_labels,
    check_int,
    check_labels,
    check_random_state,
    check_real,
)

__all__ = ["DEFAULT_PARAMS", "PARTITIONS", "label_distribution", "noise_levels",
           "partition_indices"]

#: Partition kinds (FedTopo's letters, plus an IID control).
PARTITIONS = ("iid", "N", "L", "K", "Q")
#: Each partition's parameter when none is given (FedTopo Table 1).
DEFAULT_PARAMS = {"iid": None, "N": 0.5, "L": 0.1, "K": 5, "Q": 0.5}


def _cut(indices: np.ndarray, proportions: np.ndarray) -> list[np.ndarray]:
    bounds = (np.cumsum(proportions) * indices.size).astype(np.int64)
    bounds[-1] = indices.size
    return np.split(indices, bounds[:-1])


def _dirichlet(y, n_clients, alpha, rng, min_size, per_class):
    n = y.size
    for _ in range(1000):
        parts = [[] for _ in range(n_clients)]
        if per_class:
            for c in np.unique(y):
                idx = rng.permutation(np.flatnonzero(y == c))
                for j, piece in enumerate(_cut(idx, rng.dirichlet(np.full(n_clients, alpha)))):
                    parts[j].append(piece)
        else:
            pieces = _cut(rng.permutation(n), rng.dirichlet(np.full(n_clients, alpha)))
            parts = [[p] for p in pieces]
        out = [np.sort(np.concatenate(p)) for p in parts]
        if min(o.size for o in out) >= min_size:
            return out
    raise ValueError(
        f"could not give each of {n_clients} clients min_size={min_size} samples with "
        f"alpha={alpha} in 1000 draws; lower min_size or raise alpha"
    )


def _fixed_k(y, n_clients, k, rng):
    classes = np.unique(y)
    C = classes.size
    check_int(k, "k", low=1, high=C)
    if n_clients * k < C:
        raise ValueError(f"k={k} labels for {n_clients} clients cannot cover {C} classes")
    perm = rng.permutation(classes)
    holders = {c: [] for c in classes}
    for j in range(n_clients):
        start = (j * C) // n_clients
        for t in range(k):
            holders[perm[(start + t) % C]].append(j)
    parts = [[] for _ in range(n_clients)]
    for c in classes:
        idx = rng.permutation(np.flatnonzero(y == c))
        for j, shard in zip(holders[c], np.array_split(idx, len(holders[c])), strict=True):
            parts[j].append(shard)
    return [np.sort(np.concatenate(p)) for p in parts]


def partition_indices(y, kind: str, n_clients: int = 5, param=None, min_size: int = 10,
                      random_state=None) -> list[np.ndarray]:
    """Split sample indices among clients.

    Parameters
    ----------
    y : array-like of int (n,)
        Class labels.
    kind : {"iid", "N", "L", "K", "Q"}
    n_clients : int
    param : float or int or None
        ``N``: the maximum noise scale :math:`\\bar\\sigma` (used by :func:`noise_levels`,
        the split itself is IID); ``L``/``Q``: the Dirichlet concentration; ``K``: labels
        per client. ``None`` takes FedTopo Table 1's value (0.5, 0.1, 5, 0.5).
    min_size : int
        Minimum samples per client (Dirichlet kinds are redrawn until it holds).
    random_state : None, int or Generator

    Returns
    -------
    list of ndarray of int
        Sorted indices of each client; together a partition of ``range(n)``.
    """
    check_choice(kind, "kind", PARTITIONS)
    check_int(n_clients, "n_clients", low=1)
    check_int(min_size, "min_size", low=1)
    y = check_class_labels(y)
    if y.size < n_clients * min_size:
        raise ValueError(f"{y.size} samples cannot give {n_clients} clients "
                         f"min_size={min_size} each")
    rng = check_random_state(random_state)
    param = DEFAULT_PARAMS[kind] if param is None else param
    if kind in ("iid", "N"):
        if kind == "N":
            check_real(param, "param", low=0.0)
        return [np.sort(p) for p in np.array_split(rng.permutation(y.size), n_clients)]
    if kind == "K":
        return _fixed_k(y, n_clients, param, rng)
    check_real(param, "param", low=0.0, low_open=True)
    return _dirichlet(y, n_clients, float(param), rng, min_size, per_class=kind == "L")


def noise_levels(n_clients: int, sigma_max: float) -> np.ndarray:
    """N-skew noise scales :math:`\\sigma_j = \\frac{j-1}{K-1}\\bar\\sigma`, j = 1..K.

    Parameters
    ----------
    n_clients : int
        Number of clients ``K`` (at least 1).
    sigma_max : float
        Largest scale :math:`\\bar\\sigma` (at least 0).

    Returns
    -------
    ndarray of shape (n_clients,)
        Evenly spaced from 0 to ``sigma_max`` (``[0]`` for one client).
    """
    check_int(n_clients, "n_clients", low=1)
    check_real(sigma_max, "sigma_max", low=0.0)
    if n_clients == 1:
        return np.zeros(1)
    return np.arange(n_clients) / (n_clients - 1) * sigma_max


def label_distribution(y, parts: list[np.ndarray], n_classes: int | None = None) -> np.ndarray:
    """Row-stochastic (n_clients, n_classes) matrix of each client's label frequencies.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Integer labels.
    parts : list of ndarray of int
        Each client's indices into ``y``.
    n_classes : int, optional
        Number of classes; default ``max(y) + 1``.

    Returns
    -------
    ndarray of shape (n_clients, n_classes)
        Label frequencies per client (an empty client's row is zero).
    """
    y = check_class_labels(y)
    if y.dtype.kind not in "iub" or y.min() < 0:
        raise ValueError(f"y must hold integer labels 0, 1, ..., got {np.unique(y)[:10].tolist()}")
    C = int(y.max()) + 1 if n_classes is None else check_int(n_classes, "n_classes", low=1)
    check_labels(y, y.size, "y", require_both=False, n_classes=C)
    for k, p in enumerate(parts):
        p = np.asarray(p)
        if p.size and (p.dtype.kind not in "iu" or p.min() < -y.size or p.max() >= y.size):
            raise ValueError(f"parts[{k}] must hold indices into y (0..{y.size - 1})")
    counts = np.array([np.bincount(y[p], minlength=C) for p in parts], dtype=np.float64)
    return counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
