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
* :class:`NNFC` (Wang et al., 2024, as described in ``gfc.txt``: local and global
  nearest-neighbour parameters ``k1``, ``k2``): each client keeps its ``n_local`` records
  of highest k1-nearest-neighbour density (inverse mean distance to the ``k1`` nearest
  records) as representatives; the server builds a symmetric ``k2``-nearest-neighbour
  graph on all representatives and splits it by spectral clustering into
  ``n_clusters``; centres are the means of the groups. The original paper is not
  available here, so this is a simplification in its spirit; we say so in the notebook.

``predict`` assigns a record to the nearest centre for every method.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.neighbors import NearestNeighbors, kneighbors_graph

from .._validation import check_int, check_points, check_random_state, check_real
from .ldp import check_clients, laplace_ldp

__all__ = ["KFed", "MUFC", "NNFC", "privatised_clients"]


def privatised_clients(client_datasets, epsilon, sensitivity, rng):
    """Validate client datasets and return their LDP releases (the shared client step)."""
    check_real(epsilon, "epsilon", low=0.0, low_open=True)
    check_real(sensitivity, "sensitivity", low=0.0, low_open=True)
    return [laplace_ldp(X, epsilon, sensitivity, rng) for X in check_clients(client_datasets)]


class _OneShot(ClusterMixin, BaseEstimator):
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

    def fit(self, client_datasets, y=None):
        """Privatise every client, run the client and server steps; sets ``cluster_centers_``."""
        check_int(self.n_clusters, "n_clusters", low=1)
        if self.n_local is not None:
            check_int(self.n_local, "n_local", low=1)
        rng = check_random_state(self.random_state)
        noisy = privatised_clients(client_datasets, self.epsilon, self.sensitivity, rng)
        uploads = [self._client(X, rng) for X in noisy]
        self.cluster_centers_ = self._server(uploads, rng)
        return self

    def predict(self, X) -> np.ndarray:
        """Index of the nearest centre."""
        if not hasattr(self, "cluster_centers_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet")
        return cdist(check_points(X), self.cluster_centers_).argmin(axis=1)

    @staticmethod
    def _seed(rng):
        return int(rng.integers(2**31 - 1))


class KFed(_OneShot):
    """k-FED: local k-means centroids, server k-means on their union (unweighted)."""

    def _client(self, X, rng):
        return KMeans(self._local_k(len(X)), n_init=3, random_state=self._seed(rng)).fit(
            X).cluster_centers_

    def _server(self, uploads, rng):
        S = np.vstack(uploads)
        k = min(self.n_clusters, len(S))
        return KMeans(k, n_init=10, random_state=self._seed(rng)).fit(S).cluster_centers_


class MUFC(_OneShot):
    """MUFC: local k-means++ centroids with cluster sizes, server size-weighted k-means."""

    def _client(self, X, rng):
        km = KMeans(self._local_k(len(X)), n_init=3, random_state=self._seed(rng)).fit(X)
        return km.cluster_centers_, np.bincount(km.labels_, minlength=km.n_clusters)

    def _server(self, uploads, rng):
        S = np.vstack([u[0] for u in uploads])
        w = np.concatenate([u[1] for u in uploads]).astype(np.float64)
        k = min(self.n_clusters, len(S))
        km = KMeans(k, n_init=10, random_state=self._seed(rng))
        return km.fit(S, sample_weight=w).cluster_centers_


class NNFC(_OneShot):
    """NN-FC (simplified): local density representatives, server k2-NN spectral grouping.

    Parameters
    ----------
    k1, k2 : int
        Local and global numbers of nearest neighbours.
    """

    def __init__(self, n_clusters=2, epsilon=1.0, sensitivity=1.0, n_local=None, k1=20,
                 k2=10, random_state=None):
        super().__init__(n_clusters, epsilon, sensitivity, n_local, random_state)
        self.k1 = k1
        self.k2 = k2

    def _client(self, X, rng):
        check_int(self.k1, "k1", low=1)
        k1 = min(self.k1, len(X) - 1) if len(X) > 1 else 1
        dist, _ = NearestNeighbors(n_neighbors=k1 + 1).fit(X).kneighbors(X)
        density = 1.0 / (dist[:, 1:].mean(axis=1) + 1e-12)
        return X[np.argsort(-density)[: self._local_k(len(X))]]

    def _server(self, uploads, rng):
        check_int(self.k2, "k2", low=1)
        R = np.vstack(uploads)
        k = min(self.n_clusters, len(R))
        A = kneighbors_graph(R, min(self.k2, len(R) - 1), include_self=False)
        A = 0.5 * (A + A.T)
        with warnings.catch_warnings():
            # a disconnected k2-NN graph is a legitimate outcome under heavy noise
            warnings.filterwarnings("ignore", message="Graph is not fully connected")
            labels = SpectralClustering(k, affinity="precomputed", random_state=self._seed(rng),
                                        assign_labels="cluster_qr").fit_predict(A.toarray())
        return np.array([R[labels == j].mean(axis=0) for j in range(k) if np.any(labels == j)])
