"""One-shot federated clustering baselines of the GFC paper, with the same LDP client step.

Every method privatises each client's records with
:func:`~topofl_lib.clustering.ldp.laplace_ldp` first (identical to GFC), then:

* :class:`KFed` (Dennis et al., 2021): each client runs k-means with ``n_local``
  clusters and uploads its centroids; the server runs k-means (k-means++ seeding) with
  ``n_clusters`` on the union of the centroids, unweighted, and the global centres are
  its cluster centres.
* :class:`MUFC` (Pan et al., 2022): each client runs k-means++ and uploads centroids with
  their cluster sizes; the server runs size-weighted k-means on them. The unlearning
  and secure-aggregation machinery of MUFC does not change the clustering and is left out.
* :class:`NNFC` (Wang et al., 2024, as the GFC paper describes it: Long et al., AAAI-26,
  arXiv:2512.00849, ``topofl_lib.citation.reference("gfc")``; local and global
  nearest-neighbour parameters ``k1``, ``k2``): each client keeps its ``n_local`` records
  of highest k1-nearest-neighbour density (inverse mean distance to the ``k1`` nearest
  records) as representatives; the server builds a symmetric ``k2``-nearest-neighbour
  graph on all representatives and splits it by spectral clustering into
  ``n_clusters``; centres are the means of the groups. The original paper is not
  available here, so this is a simplification in its spirit; we say so in the notebook.

``predict`` assigns a record to the nearest centre for every method. Every method returns
exactly ``n_clusters`` distinct centres or raises a ``ValueError`` that says why: all
clients together must upload at least ``n_clusters`` points (``n_local`` per client,
capped by the client's size), NN-FC needs two records per client (a k1-nearest-neighbour
density needs a neighbour), and when the server step finds fewer distinct centres (k-means
on fewer distinct uploads, or an NN-FC spectral split with an empty group) the fit fails
instead of silently returning fewer.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.neighbors import NearestNeighbors, kneighbors_graph

from .._validation import check_int, check_random_state
from ..core.seeds import draw_seed
from .ldp import check_budget, check_clients, check_distinct, laplace_ldp, nearest_center

__all__ = ["KFed", "MUFC", "NNFC", "privatised_clients"]


def privatised_clients(client_datasets, epsilon, sensitivity, rng):
    """Validate client datasets and return their LDP releases (the shared client step).

    Parameters
    ----------
    client_datasets : list of array-like (n_k, d)
        The clients' records.
    epsilon, sensitivity : float
        Per-record budget and L1 sensitivity (validated by
        :func:`~topofl_lib.clustering.ldp.check_budget`).
    rng : None, int or numpy Generator
        Draws the Laplace noise.

    Returns
    -------
    list of ndarray
        Each client's privatised records.
    """
    check_budget(epsilon, sensitivity)
    return [laplace_ldp(X, epsilon, sensitivity, rng) for X in check_clients(client_datasets)]


class _OneShot(ClusterMixin, BaseEstimator):
    #: fewest records a client may hold, and why
    min_records = 1
    _min_records_why = ""

    def __init__(self, n_clusters=2, epsilon=1.0, sensitivity=1.0, n_local=None,
                 random_state=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.sensitivity = sensitivity
        self.n_local = n_local
        self.random_state = random_state

    def _local_k(self, n):
        k = self.n_local if self.n_local is not None else int(15 + n / 500)
        return min(k, n)

    def _check_params(self):
        """Hook for method-specific parameters (validated before any client is touched)."""

    def _validate(self, client_datasets) -> list[np.ndarray]:
        check_int(self.n_clusters, "n_clusters", low=1)
        if self.n_local is not None:
            check_int(self.n_local, "n_local", low=1)
        check_budget(self.epsilon, self.sensitivity)
        self._check_params()
        clients = check_clients(client_datasets)
        name = type(self).__name__
        for i, X in enumerate(clients):
            if len(X) < self.min_records:
                raise ValueError(
                    f"client_datasets[{i}] has {len(X)} record(s); {name} needs at least "
                    f"{self.min_records} per client ({self._min_records_why})")
        uploads = sum(self._local_k(len(X)) for X in clients)
        if uploads < self.n_clusters:
            raise ValueError(
                f"the {len(clients)} client(s) upload {uploads} local points in all "
                f"(n_local={self.n_local}, capped by each client's size), fewer than "
                f"n_clusters={self.n_clusters}; pass a larger n_local or fewer clusters")
        return clients

    def fit(self, client_datasets, y=None):
        """Privatise every client, run the client and server steps; sets ``cluster_centers_``.

        Raises
        ------
        ValueError
            On bad parameters or client data, or when the server step finds fewer than
            ``n_clusters`` distinct centres (see the module docstring).
        """
        clients = self._validate(client_datasets)
        rng = check_random_state(self.random_state)
        noisy = [laplace_ldp(X, self.epsilon, self.sensitivity, rng) for X in clients]
        uploads = [self._client(X, rng) for X in noisy]
        centers = self._server(uploads, rng)
        self._check_distinct(centers, "centre(s)")
        self.cluster_centers_ = centers
        return self

    def _check_distinct(self, points, what):
        check_distinct(points, self.n_clusters, type(self).__name__, what)

    def predict(self, X) -> np.ndarray:
        """Index of the nearest centre (``X`` with the fitted number of features)."""
        return nearest_center(self, X)

    @staticmethod
    def _seed(rng):
        return draw_seed(rng)


class KFed(_OneShot):
    """k-FED: local k-means centroids, server k-means on their union (unweighted).

    Parameters
    ----------
    n_clusters : int, default=2
        Clusters the server returns.
    epsilon, sensitivity : float, default=1.0
        Per-record LDP budget and L1 sensitivity
        (:func:`~topofl_lib.clustering.ldp.laplace_ldp`).
    n_local : int, optional
        Local centroids per client (default ``15 + n / 500``, at most ``n``).
    random_state : None or int
    """

    def _client(self, X, rng):
        return KMeans(self._local_k(len(X)), n_init=3, random_state=self._seed(rng)).fit(
            X).cluster_centers_

    def _server(self, uploads, rng):
        S = np.vstack(uploads)
        self._check_distinct(S, "uploaded centroid(s)")
        km = KMeans(self.n_clusters, n_init=10, random_state=self._seed(rng))
        return km.fit(S).cluster_centers_


class MUFC(_OneShot):
    """MUFC: local k-means++ centroids with cluster sizes, server size-weighted k-means.

    Parameters
    ----------
    n_clusters : int, default=2
        Clusters the server returns.
    epsilon, sensitivity : float, default=1.0
        Per-record LDP budget and L1 sensitivity
        (:func:`~topofl_lib.clustering.ldp.laplace_ldp`).
    n_local : int, optional
        Local centroids per client (default ``15 + n / 500``, at most ``n``).
    random_state : None or int
    """

    def _client(self, X, rng):
        km = KMeans(self._local_k(len(X)), n_init=3, random_state=self._seed(rng)).fit(X)
        return km.cluster_centers_, np.bincount(km.labels_, minlength=km.n_clusters)

    def _server(self, uploads, rng):
        S = np.vstack([u[0] for u in uploads])
        w = np.concatenate([u[1] for u in uploads]).astype(np.float64)
        self._check_distinct(S, "uploaded centroid(s)")
        km = KMeans(self.n_clusters, n_init=10, random_state=self._seed(rng))
        return km.fit(S, sample_weight=w).cluster_centers_


class NNFC(_OneShot):
    """NN-FC (simplified): local density representatives, server k2-NN spectral grouping.

    Parameters
    ----------
    n_clusters, epsilon, sensitivity, n_local, random_state
        As in :class:`KFed`.
    k1, k2 : int
        Local and global numbers of nearest neighbours.
    """

    min_records = 2
    _min_records_why = "a k1-nearest-neighbour density needs a neighbour"

    def __init__(self, n_clusters=2, epsilon=1.0, sensitivity=1.0, n_local=None, k1=20,
                 k2=10, random_state=None):
        super().__init__(n_clusters, epsilon, sensitivity, n_local, random_state)
        self.k1 = k1
        self.k2 = k2

    def _check_params(self):
        check_int(self.k1, "k1", low=1)
        check_int(self.k2, "k2", low=1)

    def _client(self, X, rng):
        k1 = min(self.k1, len(X) - 1)
        dist, _ = NearestNeighbors(n_neighbors=k1 + 1).fit(X).kneighbors(X)
        density = 1.0 / (dist[:, 1:].mean(axis=1) + 1e-12)
        return X[np.argsort(-density)[: self._local_k(len(X))]]

    def _server(self, uploads, rng):
        R = np.vstack(uploads)
        self._check_distinct(R, "representative(s)")
        if self.n_clusters == 1:
            return R.mean(axis=0, keepdims=True)
        A = kneighbors_graph(R, min(self.k2, len(R) - 1), include_self=False)
        A = 0.5 * (A + A.T)
        with warnings.catch_warnings():
            # a disconnected k2-NN graph is a legitimate outcome under heavy noise
            warnings.filterwarnings("ignore", message="Graph is not fully connected")
            labels = SpectralClustering(self.n_clusters, affinity="precomputed",
                                        random_state=self._seed(rng),
                                        assign_labels="cluster_qr").fit_predict(A.toarray())
        filled = np.unique(labels).size
        if filled < self.n_clusters:
            raise ValueError(
                f"NNFC's spectral split of the k2-nearest-neighbour graph of the "
                f"{len(R)} representatives filled {filled} of n_clusters={self.n_clusters} "
                "groups; try another k2 or n_local")
        return np.array([R[labels == j].mean(axis=0) for j in range(self.n_clusters)])
