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

Two skews combine as ``"<A>+<B>"`` with ``param=(param of A, param of B)``
(:data:`COMBINED`; FedTopo Table 3's Settings A and C). Appendix C.1 defines each skew
alone; how two compose is our reading:

``"L+N"`` (and ``"K+N"``, ``"Q+N"``)
    N-skew changes no assignment, only the inputs: the split is the first skew's, and
    :func:`noise_levels` of the second parameter add the noise. Every sample is assigned
    once.
``"Q+K"``
    K-skew picks each client's ``k`` labels and their shards (as ``"K"``); Q-skew then
    thins client :math:`j`'s part to a size proportional to :math:`p_j`,
    :math:`p \sim \mathrm{Dir}_K(\alpha_q)`, scaled so that the largest feasible client
    keeps its whole part (a random subset of each part, redrawn until every client keeps
    ``min_size``). When :math:`Kk = C` (Setting A: 5 clients, k = 2, 10 classes) the
    label sets are disjoint and cover every class, so the parts' sizes are fixed by the
    classes: no assignment of every sample can have both exactly ``k`` labels per client
    and Dirichlet sizes, and thinning is the only way both skews hold. Every sample is
    then assigned at most once; the rest are unused.

``"writers"`` (FEMNIST's natural federation, :func:`writer_partition`) splits by the
writer of each image instead of by label.

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

__all__ = ["COMBINED", "DEFAULT_PARAMS", "MAX_CONCENTRATION", "MAX_NOISE_SD", "PARTITIONS",
           "label_distribution", "noise_levels",
           "partition_indices", "split_kind", "writer_partition"]

#: Partition kinds (FedTopo's letters, plus an IID control).
PARTITIONS = ("iid", "N", "L", "K", "Q")
#: Each partition's parameter when none is given (FedTopo Table 1).
DEFAULT_PARAMS = {"iid": None, "N": 0.5, "L": 0.1, "K": 5, "Q": 0.5}
#: Combinations of two skews (see the module docstring); ``param`` is a pair.
COMBINED = ("Q+K", "L+N", "K+N", "Q+N")
#: Largest Dirichlet concentration (L, Q): numpy's draw overflows to all zeros near 1e308,
#: and from about 1e10 on the proportions equal 1/K to float precision (an IID split).
MAX_CONCENTRATION = 1e100
#: Largest N-skew noise scale: the noisy images are float32 (largest value about 3.4e38).
MAX_NOISE_SD = 1e30


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
    kind : {"iid", "N", "L", "K", "Q"} or one of :data:`COMBINED`
    n_clients : int
    param : float or int or None, or a pair for a combined kind
        ``N``: the maximum noise scale :math:`\\bar\\sigma` (used by :func:`noise_levels`,
        the split itself is IID); ``L``/``Q``: the Dirichlet concentration; ``K``: labels
        per client. ``None`` takes FedTopo Table 1's value (0.5, 0.1, 5, 0.5). A combined
        kind (:data:`COMBINED`) takes one per skew, ``(0.5, 2)`` for ``"Q+K"``.
    min_size : int
        Minimum samples per client (Dirichlet kinds are redrawn until it holds).
    random_state : None, int or Generator

    Returns
    -------
    list of ndarray of int
        Sorted indices of each client; together a partition of ``range(n)`` (for
        ``"Q+K"``, disjoint parts of it: see the module docstring).
    """
    check_choice(kind, "kind", PARTITIONS + COMBINED)
    check_int(n_clients, "n_clients", low=1)
    check_int(min_size, "min_size", low=1)
    y = check_class_labels(y)
    if y.size < n_clients * min_size:
        raise ValueError(f"{y.size} samples cannot give {n_clients} clients "
                         f"min_size={min_size} each")
    rng = check_random_state(random_state)
    if kind in COMBINED:
        first, second = split_kind(kind, param)
        if kind == "Q+K":
            return _thinned(_fixed_k(y, n_clients, second[1], rng), first[1], rng, min_size)
        return partition_indices(y, first[0], n_clients, first[1], min_size, rng)
    param = DEFAULT_PARAMS[kind] if param is None else param
    if kind in ("iid", "N"):
        if kind == "N":
            check_real(param, "param", low=0.0, high=MAX_NOISE_SD)
        return [np.sort(p) for p in np.array_split(rng.permutation(y.size), n_clients)]
    if kind == "K":
        return _fixed_k(y, n_clients, param, rng)
    check_real(param, "param", low=0.0, low_open=True, high=MAX_CONCENTRATION)
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
    check_real(sigma_max, "sigma_max", low=0.0, high=MAX_NOISE_SD)
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


def split_kind(kind: str, param) -> tuple[tuple[str, object], tuple[str, object]]:
    """The two skews of a combined kind, each with its parameter.

    Parameters
    ----------
    kind : str
        One of :data:`COMBINED`.
    param : pair or None
        One parameter per skew (``None``: both of FedTopo Table 1's values).

    Returns
    -------
    tuple of two (kind, param) pairs
        ``(("Q", 0.5), ("K", 2))`` for ``("Q+K", (0.5, 2))``.
    """
    check_choice(kind, "kind", COMBINED)
    letters = kind.split("+")
    if param is None:
        param = tuple(DEFAULT_PARAMS[k] for k in letters)
    if not isinstance(param, (tuple, list)) or len(param) != 2:
        raise ValueError(f"param of the combined partition {kind!r} must be a pair (one "
                         f"value per skew, e.g. {tuple(DEFAULT_PARAMS[k] for k in letters)}),"
                         f" got {param!r}")
    return (letters[0], param[0]), (letters[1], param[1])


def _thinned(parts: list[np.ndarray], alpha, rng, min_size: int) -> list[np.ndarray]:
    """Each part cut to a random subset of size proportional to Dir(alpha) weights."""
    check_real(alpha, "param (the Q-skew's alpha)", low=0.0, low_open=True,
               high=MAX_CONCENTRATION)
    sizes = np.array([p.size for p in parts], dtype=np.float64)
    for _ in range(1000):
        p = rng.dirichlet(np.full(len(parts), float(alpha)))
        keep = np.floor(p * np.min(sizes / np.maximum(p, 1e-300))).astype(np.int64)
        keep = np.minimum(keep, sizes.astype(np.int64))
        if keep.min() >= min_size:
            return [np.sort(rng.choice(part, size=k, replace=False))
                    for part, k in zip(parts, keep, strict=True)]
    raise ValueError(f"could not keep min_size={min_size} samples on each of {len(parts)} "
                     f"clients with the Q-skew's alpha={alpha} in 1000 draws; lower min_size "
                     "or raise alpha")


def writer_partition(writers, n_clients: int, random_state=None) -> list[np.ndarray]:
    """Split samples by writer (FEMNIST's natural federation, pTopoFL Scenario D).

    With as many writers as clients, client ``j`` holds the ``j``-th writer's samples (in
    the order of the writers' ids); with more writers, the writers are shuffled and dealt
    into ``n_clients`` groups of equal count (sizes differ by at most one writer), and a
    client holds its group's samples. Every sample is assigned once, and no writer's
    samples are split.

    Parameters
    ----------
    writers : array-like of int (n,)
        The writer of each sample.
    n_clients : int
        Number of clients, at most the number of distinct writers.
    random_state : None, int or Generator
        Seeds the grouping.

    Returns
    -------
    list of ndarray of int
        Sorted indices of each client; together a partition of ``range(n)``.
    """
    writers = np.asarray(writers)
    if writers.ndim != 1 or writers.size == 0 or writers.dtype.kind not in "iu":
        raise ValueError(f"writers must be a non-empty 1-D array of integer writer ids, got "
                         f"shape {writers.shape} and dtype {writers.dtype}")
    check_int(n_clients, "n_clients", low=1)
    ids, inverse = np.unique(writers, return_inverse=True)
    if n_clients > ids.size:
        raise ValueError(f"n_clients={n_clients} exceeds the {ids.size} writers; a client is "
                         "one writer or a group of writers")
    order = (np.arange(ids.size) if n_clients == ids.size
             else check_random_state(random_state).permutation(ids.size))
    group = np.empty(ids.size, dtype=np.int64)
    for j, members in enumerate(np.array_split(order, n_clients)):
        group[members] = j
    of_sample = group[inverse]
    return [np.flatnonzero(of_sample == j) for j in range(n_clients)]
