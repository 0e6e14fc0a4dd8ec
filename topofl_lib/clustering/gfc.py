r"""Gravitational Federated Clustering (GFC) under local differential privacy.

Client step (Algorithm 2): records are clipped and privatised with the Laplace
mechanism (:func:`~topofl_lib.clustering.ldp.laplace_ldp`), k-means runs on the noisy
records, and each local centroid gets a mass. The paper gives three mass formulas; we
implement all three (``mass``):

* ``"variance"`` (default, Algorithm 2): :math:`\exp(-v_j / 2\sigma^2)` with
  :math:`v_j` the mean squared distance of cluster ``j``'s records to its centroid and
  :math:`\sigma^2` = ``sigma**2`` (default: the mean of the client's :math:`v_j`, so
  masses are comparable across clients of different scales);
* ``"sse"`` (Eq. 1): :math:`\exp(-\text{SSE}_j / 2\sigma_i^2)` with :math:`\sigma_i^2`
  the variance of the squared pairwise distances of the client's (noisy) records,
  estimated on at most 500 records;
* ``"inverse"`` (the analysis): :math:`1/(v_j + \delta)`.

Server step: ``alpha * |S|`` synthetic points uniform in the bounding box of the
uploaded centroids (any dimension; no grid), the potential
:math:`E(g) = \sum_\alpha w_\alpha / (\|g - c_\alpha\|^p + \delta)` (computed in chunks),
and the merge tree of the superlevel sets of E on a neighbourhood graph of the synthetic
points (:mod:`topofl_lib.clustering.merge_tree`). The ``n_clusters`` most persistent
peaks give the centres (Algorithm 4, lines 17-18).

Centre of a peak (``center_from``). Algorithm 4 sweeps the thresholds upwards
(:math:`h_1 < h_2 < \dots`) over the superlevel sets :math:`\{g : E(g) \ge h\}` of the
main text (its line 4 prints ":math:`\le`", which would make components be born at the
minima of E), so the sets shrink and split. A component is "newborn" when it appears at a
split (line 7: present at :math:`h`, not just below), and its centre
:math:`\mu_C = \sum_{g \in C} E(g) g / \sum_{g \in C} E(g)` is computed once, at birth
(lines 8-10); the authors' released code does the same (a node of its region tree is
created only at a split and keeps the energy-weighted position of that moment). The
component that ends at a peak, a leaf of the tree, is therefore born at the highest split
on the peak's side: it is the peak's component just above the highest saddle next to it
(:meth:`~topofl_lib.clustering.merge_tree.MergeTree.leaves`). That is the default,
``center_from="leaf"``: the energy-weighted mean of the hilltop. Two alternatives:

* ``"peak"``: the synthetic point at the peak itself. This is what the main text's reading
  (":math:`h` decreases", each component born as the single point at its peak) gives at
  full threshold resolution; it is the limit of ``"leaf"`` when a bump merges right below
  the peak, and it carries the jitter of the uniform synthetic sample (a sample point is
  only near the true mode when the sample is dense, which it is not in many dimensions).
* ``"basin"``: the energy-weighted mean of the whole basin that drains into the peak
  (unselected peaks joined to the peak they merge into), our rule before. It averages
  every synthetic point of the basin, its low flanks far from the peak included.

The rule changes the scores, but neither is uniformly better: on the notebook's datasets
(paper profile, 10 seeds) the leaf rule scores higher on some dataset/budget cells and
lower on others than the basin rule.

Leaves come from the full merge tree, as in Algorithm 4: a low-persistence bump that
merges into a selected peak still cuts its leaf at the bump's saddle.

Fallback (Algorithm 4, lines 19-23). When the tree has fewer than ``n_clusters`` peaks,
every peak is already a centre, so line 20 (more tree components ranked by energy) has
nothing new to add in a merge tree whose every leaf is taken; line 22 fills the missing
centres with the highest-energy synthetic points that are not already a peak, and
``fallback_`` says ``"top_energy_points"``. These points sit on the flanks of the highest
peak, so the added centres crowd around it: the fallback returns the requested number of
centres, not the clusters the landscape failed to show. The estimator always returns
exactly ``n_clusters`` distinct centres.

Heuristics (paper Sec. "Experimental settings"), each overridable:
``n_local = 15 + n/500`` local centroids, ``delta = 500 exp(-5 epsilon)``
(:func:`paper_delta`; the value used is the fitted ``delta_``),
``alpha = 2 + 20/(epsilon + 1)``, and for ``graph="radius"`` the radius
``r`` = 1st percentile of the non-zero distances between centroids. The default graph
is the ``n_neighbors``-nearest-neighbour graph: with uniform synthetic points in more than
two dimensions the paper's radius graph is mostly disconnected, and every isolated point
would become a "peak".
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist, pdist
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.neighbors import radius_neighbors_graph

from .._validation import (
    as_float_array,
    check_choice,
    check_finite,
    check_int,
    check_n_features,
    check_points,
    check_random_state,
    check_real,
)
from ..core.seeds import draw_seed
from .ldp import check_budget, check_clients, check_distinct, laplace_ldp, nearest_center
from .merge_tree import superlevel_persistence

__all__ = ["GravitationalFederatedClustering", "gravitational_potential", "knn_graph",
           "local_centroids", "paper_delta"]

MASSES = ("variance", "sse", "inverse")
GRAPHS = ("knn", "radius")
CENTERS = ("leaf", "peak", "basin")
#: Floor on the softening delta (the paper's heuristic underflows to 0 for large epsilon).
MIN_DELTA = 1e-12
#: Most synthetic points the server step draws (``alpha`` times the uploaded centroids):
#: 10 million points in 2-D are 160 MB, and the k-NN graph over them hours on a CPU.
MAX_SYNTHETIC_POINTS = 10_000_000


def paper_delta(epsilon: float) -> float:
    """The paper's softening heuristic ``500 exp(-5 epsilon)``, floored at ``MIN_DELTA``.

    Parameters
    ----------
    epsilon : float
        Privacy budget.

    Returns
    -------
    float
        The delta GFC uses when ``delta=None``.
    """
    check_real(epsilon, "epsilon", low=0.0, low_open=True)
    return max(500.0 * float(np.exp(-5.0 * epsilon)), MIN_DELTA)


def local_centroids(X, n_local: int, mass: str = "variance", sigma: float | None = None,
                    delta: float = 1.0, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """k-means centroids of one client's (already privatised) records and their masses.

    Parameters
    ----------
    X : array-like of shape (n, d)
        The client's privatised records (at least ``n_local``).
    n_local : int
        Number of local centroids.
    mass : {"variance", "sse", "inverse"}, default="variance"
        ``exp(-var / 2 sigma^2)`` of each centroid's within-cluster variance,
        ``exp(-sse / 2 s^2)`` of its sum of squares (``s^2`` from a subsample's squared
        distances), or ``1 / (var + delta)``.
    sigma : float, optional
        Scale of ``"variance"`` (default: the root of the mean variance).
    delta : float, default=1.0
        Softening of ``"inverse"``.
    random_state : None, int or Generator

    Returns
    -------
    centroids : ndarray of shape (n_local, d)
    masses : ndarray of shape (n_local,)
    """
    check_int(n_local, "n_local", low=1)
    X = check_points(X, min_points=n_local)
    check_choice(mass, "mass", MASSES)
    if sigma is not None:
        check_real(sigma, "sigma", low=0.0, low_open=True)
    check_real(delta, "delta", low=0.0, low_open=True)
    rng = check_random_state(random_state)
    km = KMeans(n_clusters=n_local, n_init=3, random_state=draw_seed(rng))
    labels = km.fit_predict(X)
    C = km.cluster_centers_
    sq = ((X - C[labels]) ** 2).sum(axis=1)
    counts = np.bincount(labels, minlength=n_local)
    sse = np.bincount(labels, weights=sq, minlength=n_local)
    var = sse / np.maximum(counts, 1)
    if mass == "variance":
        s2 = sigma**2 if sigma is not None else max(var.mean(), 1e-12)
        w = np.exp(-var / (2 * s2))
    elif mass == "sse":
        sub = X[rng.choice(X.shape[0], min(500, X.shape[0]), replace=False)]
        s2 = max(float(np.var(pdist(sub, "sqeuclidean"))), 1e-12)
        w = np.exp(-sse / (2 * s2))
    else:
        w = 1.0 / (var + delta)
    return C, w


def knn_graph(G: np.ndarray, k: int) -> sparse.csr_matrix:
    """Directed k-nearest-neighbour adjacency (scipy's cKDTree, all cores).

    Parameters
    ----------
    G : ndarray of shape (m, d)
        Points.
    k : int
        Neighbours per point (itself excluded), ``k < m``.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (m, m)
        1 at ``(i, j)`` where ``j`` is one of the ``k`` nearest neighbours of ``i``.
    """
    _, idx = cKDTree(G, leafsize=32).query(G, k=k + 1, workers=-1)
    rows = np.repeat(np.arange(G.shape[0]), k)
    return sparse.csr_matrix((np.ones(rows.size), (rows, idx[:, 1:].ravel())),
                             shape=(G.shape[0], G.shape[0]))


def gravitational_potential(G, C, w, p: float = 2.0, delta: float = 1.0,
                            chunk: int = 2048) -> np.ndarray:
    """E(g) = sum_a w_a / (||g - c_a||^p + delta) for every row of ``G``.

    Computed in row chunks (memory stays at ``chunk * len(C)`` floats). For ``p = 2`` the
    squared distances come from one matrix product, ``|g|^2 + |c|^2 - 2 g.c``, which is
    several times faster than ``cdist``; the final sum is a matrix-vector product.

    Parameters
    ----------
    G : array-like of shape (m, d)
        Evaluation points.
    C : array-like of shape (n_c, d)
        Centroids.
    w : array-like of shape (n_c,)
        Their masses.
    p : float, default=2.0
        Decay exponent.
    delta : float, default=1.0
        Softening.
    chunk : int, default=2048
        Rows of ``G`` per block.

    Returns
    -------
    ndarray of shape (m,)
    """
    G = check_points(G, "G")
    C = check_points(C, "C")
    check_n_features(G, C.shape[1], "the centroids C have", name="G")
    w = check_finite(as_float_array(w, "w"), "w")
    if w.shape != (C.shape[0],):
        raise ValueError(f"w must hold one mass per centroid, shape ({C.shape[0]},), got "
                         f"{w.shape}")
    if np.any(w < 0):
        raise ValueError(f"w must hold masses >= 0, got {w.min():.3g}")
    check_real(p, "p", low=0.0, low_open=True)
    check_real(delta, "delta", low=0.0, low_open=True)
    check_int(chunk, "chunk", low=1)
    E = np.empty(G.shape[0])
    # ||g - c||^2 + delta as one matrix product of augmented rows:
    # [g, 1, |g|^2] . [-2c, |c|^2 + delta, 1]
    right = np.hstack([-2.0 * C, (C**2).sum(axis=1, keepdims=True) + delta,
                       np.ones((C.shape[0], 1))]).T
    for start in range(0, G.shape[0], chunk):
        g = G[start:start + chunk]
        if p == 2:
            left = np.hstack([g, np.ones((g.shape[0], 1)), (g**2).sum(axis=1, keepdims=True)])
            d = left @ right
            np.maximum(d, delta, out=d)  # rounding can undercut delta when g is at a centroid
        else:
            d = cdist(g, C) ** p + delta
        np.reciprocal(d, out=d)
        E[start:start + chunk] = d @ w
    return E


class GravitationalFederatedClustering(ClusterMixin, BaseEstimator):
    """One-shot federated clustering under epsilon-LDP (GFC).

    Parameters
    ----------
    n_clusters : int
    epsilon : float > 0
        Per-record LDP budget; the Laplace scale ``sensitivity / epsilon`` must be at most
        ``1e50`` (:mod:`topofl_lib.clustering.ldp` explains why).
    sensitivity : float, default=1.0
        L1 sensitivity; records are clipped to L1 norm ``sensitivity / 2``. Scale the
        features to a public range first (e.g. the unit box).
    n_local, delta, alpha, radius : optional
        Override the paper's heuristics (module docstring). ``alpha`` times the uploaded
        centroids, the synthetic points, is at most :data:`MAX_SYNTHETIC_POINTS`.
    p : float, default=2
        Decay exponent of the potential.
    mass : {"variance", "sse", "inverse"}
    sigma : float, optional
        Mass scale for ``mass="variance"``.
    graph : {"knn", "radius"}
    n_neighbors : int, default=10
    center_from : {"leaf", "peak", "basin"}, default="leaf"
        Where a selected peak's centre comes from: the energy-weighted mean of its leaf
        component (Algorithm 4), the synthetic point at the peak, or the energy-weighted
        mean of its whole basin (module docstring).
    random_state : None or int

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, d)
        Always exactly ``n_clusters`` distinct rows.
    centroids_, masses_ : uploaded local centroids and masses
    synthetic_, energy_ : synthetic points and their potential
    delta_ : float  the softening used (``delta``, or :func:`paper_delta` of epsilon)
    merge_tree_ : :class:`~topofl_lib.clustering.merge_tree.MergeTree`
    n_peaks_ : int  peaks found by the persistence step
    peaks_ : ndarray  synthetic-point index of the peak behind each persistence centre
    fallback_ : str or None  which fallback filled missing centres, if any

    Examples
    --------
    >>> import numpy as np
    >>> from topofl_lib.clustering import GravitationalFederatedClustering
    >>> rng = np.random.default_rng(0)
    >>> centres = np.array([[0.2, 0.2], [0.8, 0.8]])
    >>> clients = [centres[k % 2] + 0.05 * rng.normal(size=(200, 2)) for k in range(4)]
    >>> gfc = GravitationalFederatedClustering(n_clusters=2, epsilon=5.0, random_state=0)
    >>> gfc.fit(clients).cluster_centers_.shape
    (2, 2)
    >>> gfc.predict(centres)
    array([0, 1])
    """

    def __init__(self, n_clusters=2, epsilon=1.0, sensitivity=1.0, n_local=None, delta=None,
                 alpha=None, p=2.0, mass="variance", sigma=None, graph="knn", n_neighbors=10,
                 radius=None, center_from="leaf", random_state=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.sensitivity = sensitivity
        self.n_local = n_local
        self.delta = delta
        self.alpha = alpha
        self.p = p
        self.mass = mass
        self.sigma = sigma
        self.graph = graph
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.center_from = center_from
        self.random_state = random_state

    def _validate(self, clients) -> list[np.ndarray]:
        check_int(self.n_clusters, "n_clusters", low=1)
        check_budget(self.epsilon, self.sensitivity)
        check_real(self.p, "p", low=0.0, low_open=True)
        check_choice(self.mass, "mass", MASSES)
        check_choice(self.graph, "graph", GRAPHS)
        check_choice(self.center_from, "center_from", CENTERS)
        check_int(self.n_neighbors, "n_neighbors", low=1)
        for name in ("delta", "alpha", "radius", "sigma"):
            if getattr(self, name) is not None:
                check_real(getattr(self, name), name, low=0.0, low_open=True)
        if self.n_local is not None:
            check_int(self.n_local, "n_local", low=1)
        return check_clients(clients)

    def fit(self, client_datasets, y=None):
        """Run the client step on every dataset, then the server step.

        Parameters
        ----------
        client_datasets : list of array-like of shape (n_k, d)
            Each client's records.
        y : None
            Ignored (scikit-learn's API).

        Returns
        -------
        self
        """
        clients = self._validate(client_datasets)
        rng = check_random_state(self.random_state)
        eps = float(self.epsilon)
        delta = max(float(self.delta), MIN_DELTA) if self.delta is not None else paper_delta(eps)
        alpha = self.alpha if self.alpha is not None else 2.0 + 20.0 / (eps + 1.0)
        n_local = self._local_counts(clients)
        m = max(int(np.ceil(alpha * sum(n_local))), self.n_clusters + 1)
        if m > MAX_SYNTHETIC_POINTS:
            raise ValueError(
                f"alpha={alpha!r} asks for {m} synthetic points ({sum(n_local)} uploaded "
                f"centroids); at most {MAX_SYNTHETIC_POINTS} (MAX_SYNTHETIC_POINTS): pass a "
                "smaller alpha")
        cents, masses = [], []
        for X, k in zip(clients, n_local, strict=True):
            noisy = laplace_ldp(X, eps, self.sensitivity, rng)
            C, w = local_centroids(noisy, k, self.mass, self.sigma, delta, rng)
            cents.append(C)
            masses.append(w)
        S, w = np.vstack(cents), np.concatenate(masses)
        self.centroids_, self.masses_ = S, w
        check_distinct(S, self.n_clusters, type(self).__name__, "uploaded centroid(s)")
        G = rng.uniform(S.min(axis=0), S.max(axis=0), size=(m, S.shape[1]))
        E = gravitational_potential(G, S, w, self.p, delta)
        if self.graph == "knn":
            A = knn_graph(G, min(self.n_neighbors, m - 1))
        else:
            r = self.radius
            if r is None:
                dists = pdist(S)
                r = float(np.percentile(dists[dists > 0], 1)) if np.any(dists > 0) else 1.0
            A = radius_neighbors_graph(G, r, include_self=False)
        tree = superlevel_persistence(E, A)
        self.synthetic_, self.energy_, self.merge_tree_ = G, E, tree
        self.n_peaks_ = int(tree.peaks.size)
        self.delta_ = delta
        self.peaks_ = tree.peaks[:self.n_clusters]
        centers, self.fallback_ = self._centers(G, E, tree, self.peaks_)
        check_distinct(centers, self.n_clusters, type(self).__name__, "centre(s)")
        self.cluster_centers_ = centers
        return self

    def _local_counts(self, clients: list[np.ndarray]) -> list[int]:
        """Each client's number of local centroids (``n_local``, or the paper's
        ``15 + n/500``), once every client has at least that many records."""
        counts = []
        for i, X in enumerate(clients):
            k = self.n_local if self.n_local is not None else int(15 + X.shape[0] / 500)
            if X.shape[0] < k:
                raise ValueError(
                    f"client_datasets[{i}] has {X.shape[0]} record(s), fewer than the {k} local "
                    "centroids; pass a smaller n_local")
            counts.append(k)
        return counts

    def _centers(self, G, E, tree, chosen) -> tuple[np.ndarray, str | None]:
        """Centres of the chosen peaks (``center_from``), then the fallback if needed."""
        if self.center_from == "peak":
            centers = list(G[chosen])
        else:
            labels = tree.leaves(chosen) if self.center_from == "leaf" else tree.assign(chosen)
            centers = []
            for pk in chosen:
                members = labels == pk
                centers.append(E[members] @ G[members] / E[members].sum())
        if len(centers) == self.n_clusters:
            return np.asarray(centers), None
        # Algorithm 4 line 22: the highest-energy synthetic points not already a peak
        # (m >= n_clusters + 1 synthetic points, so there are always enough)
        ranked = np.argsort(-E, kind="stable")
        ranked = ranked[~np.isin(ranked, chosen)]
        centers.extend(G[ranked[:self.n_clusters - len(centers)]])
        return np.asarray(centers), "top_energy_points"

    def predict(self, X) -> np.ndarray:
        """Index of the nearest cluster centre for each record."""
        return nearest_center(self, X)
