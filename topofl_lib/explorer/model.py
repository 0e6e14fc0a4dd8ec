"""The computations behind the persistence explorer (no widgets here).

:class:`ExplorerData` holds one scenario's clients with everything the explorer
shows about them, computed once when the scenario is picked:

* per client: the persistence subsample, its H0/H1 diagrams (ripser), Betti curves on a
  common grid, and the 48-dim pTopoFL descriptor;
* between clients: the l2 distance of normalised descriptors (pTopoFL's :math:`D`) and
  its average-linkage dendrogram (the topology-guided clustering).

Interactions then only do cheap work: :meth:`ExplorerData.server` re-runs the pTopoFL
server rules (Eq. 6-8) for new ``M``, ``beta``, ``tau``; :meth:`ExplorerData.matching`
computes the optimal matching of two diagrams and their 1-Wasserstein distance (persim,
Euclidean ground metric);
:func:`gfc_field` privatises the GFC clients at a new epsilon and evaluates the
potential on a grid. Scenarios: ``"healthcare"`` and ``"benchmark"`` (pTopoFL), and
``"gfc:<dataset>"`` for the GFC datasets split among clients by GFC's Algorithm 5.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import dendrogram, linkage
from scipy.spatial.distance import squareform

from .._validation import check_choice, check_int, check_real
from ..clustering.evaluation import CLUSTERING_DATASETS, load_clustering_dataset
from ..core.seeds import draw_seed
from ..data.partitions import kmeans_noniid_partition
from ..data.scenarios import make_scenario
from ..federated.aggregation import server_state
from ..topology.descriptor import betti_curve, client_topology
from ..topology.distances import descriptor_distances

__all__ = ["EXPLORER_SCENARIOS", "ExplorerData", "gfc_field", "load_explorer_data"]

#: Scenarios the explorer offers.
EXPLORER_SCENARIOS = ("healthcare", "benchmark", *(f"gfc:{d}" for d in CLUSTERING_DATASETS))


@dataclass(frozen=True)
class ClientView:
    """What the explorer shows about one client."""

    points: np.ndarray          # the persistence subsample
    diagrams: list              # [H0, H1], finite pairs
    descriptor: np.ndarray      # (48,)
    betti: np.ndarray           # (2, n_grid) Betti-0 (with the essential class), Betti-1
    n_points: int               # the client's full size
    adversarial: bool


class ExplorerData:
    """One scenario's clients and their topology (see the module docstring).

    Parameters
    ----------
    scenario : str
        One of :data:`EXPLORER_SCENARIOS`.
    n_sub : int
        Points per client for persistence (pTopoFL: 80).
    n_clients : int
        Clients of a GFC dataset (the pTopoFL scenarios fix their own).
    max_points : int
        A GFC dataset larger than this is randomly subsampled first (MNIST-5k), so that
        picking it stays interactive; ``subsampled`` says whether that happened.
    random_state : int
    """

    def __init__(self, scenario: str = "healthcare", n_sub: int = 80, n_clients: int = 10,
                 max_points: int = 2000, random_state: int = 0):
        check_choice(scenario, "scenario", EXPLORER_SCENARIOS)
        check_int(n_sub, "n_sub", low=5)
        check_int(n_clients, "n_clients", low=2)
        check_int(random_state, "random_state", low=0)
        check_int(max_points, "max_points", low=10 * n_clients)
        self.scenario, self.n_sub, self.random_state = scenario, n_sub, random_state
        self.subsampled = False
        if scenario.startswith("gfc:"):
            X, y = _dataset(scenario.removeprefix("gfc:"))
            if len(X) > max_points:
                keep = np.random.default_rng(random_state).choice(len(X), max_points,
                                                                  replace=False)
                X, y, self.subsampled = X[keep], y[keep], True
            parts = kmeans_noniid_partition(X, y, n_clients, random_state=random_state)
            self.gfc_clients = [X[p] for p in parts]
            self.gfc_k = int(np.unique(y).size)
            clouds, adversarial = self.gfc_clients, [False] * n_clients
        else:
            sc = make_scenario(scenario, random_state=random_state)
            self.gfc_clients, self.gfc_k = None, None
            clouds = [c.X_train for c in sc.clients]
            adversarial = [c.adversarial for c in sc.clients]
        rng = np.random.default_rng(random_state)
        tops = [client_topology(X, n_sub, strict=False, random_state=int(s))
                for X, s in zip(clouds, draw_seed(rng, len(clouds)), strict=True)]
        deaths = np.concatenate([t[1][d][:, 1] for t in tops for d in (0, 1)] + [[1.0]])
        self.grid = np.linspace(0.0, float(np.percentile(deaths, 99)), 60)
        self.clients = [
            ClientView(t[2], t[1], t[0],
                       np.array([betti_curve(t[1][0], self.grid, n_essential=1),
                                 betti_curve(t[1][1], self.grid)]), len(X), adv)
            for t, X, adv in zip(tops, clouds, adversarial, strict=True)]
        self.descriptors = np.array([c.descriptor for c in self.clients])
        self.distances = descriptor_distances(self.descriptors)
        self.linkage = linkage(squareform(self.distances, checks=False), "average")
        self.dendrogram = dendrogram(self.linkage, no_plot=True)
        self.sizes = np.array([c.n_points for c in self.clients], dtype=np.float64)

    @property
    def n_clients(self) -> int:
        return len(self.clients)

    def server(self, n_clusters: int, beta: float, tau: float) -> pd.DataFrame:
        """pTopoFL's round-0 server rules for these settings, one row per client.

        Columns: ``cluster``, ``z`` and ``trust`` (Eq. 8), ``weight`` (Eq. 6, sums to 1
        within a cluster), ``consensus`` (the client's share of the global consensus of
        Eq. 7, ``|C_j|/K * weight``), ``own_model`` (its weight in its own cluster's
        blended model, ``(1 - beta) * weight + beta * consensus``), ``adversarial``.

        Parameters
        ----------
        n_clusters : int
            Number of clusters ``M`` (1 to ``n_clients``).
        beta : float
            Eq. 7's blending weight in [0, 1].
        tau : float
            Eq. 8's trust threshold (>= 0).

        Returns
        -------
        pandas.DataFrame
            One row per client, with the columns above.
        """
        check_int(n_clusters, "n_clusters", low=1, high=self.n_clients)
        check_real(beta, "beta", low=0.0, high=1.0)
        check_real(tau, "tau", low=0.0)
        st = server_state(self.descriptors, self.sizes, n_clusters, tau,
                          distances=self.distances)
        weights, consensus = st["weights"], st["consensus_weights"]
        return pd.DataFrame({
            "cluster": st["labels"], "z": st["z"], "trust": st["trust"], "weight": weights,
            "consensus": consensus, "own_model": (1 - beta) * weights + beta * consensus,
            "adversarial": [c.adversarial for c in self.clients]})

    def matching(self, i: int, j: int, dim: int = 1) -> dict:
        """Optimal matching of clients ``i`` and ``j``'s ``H_dim`` diagrams (persim).

        Returns the two diagrams, ``segments`` (rows ``x0, y0, x1, y1``: matched points,
        a point matched to the diagonal goes to its projection), their 1-Wasserstein
        distance with the Euclidean ground metric (:func:`persim.wasserstein`; see
        :mod:`topofl_lib.topology.distances`) and the descriptor distance :math:`D_{ij}`.

        Parameters
        ----------
        i, j : int
            Client indices.
        dim : {0, 1}, default=1
            Homology dimension.

        Returns
        -------
        dict
            ``a``, ``b``, ``segments`` (ndarray (n, 4)), ``wasserstein`` and
            ``descriptor_distance``.
        """
        import persim

        for v, name in ((i, "i"), (j, "j")):
            check_int(v, name, low=0, high=self.n_clients - 1)
        check_int(dim, "dim", low=0, high=1)
        a, b = self.clients[i].diagrams[dim], self.clients[j].diagrams[dim]
        empty = np.empty((0, 2))
        if len(a) == 0 and len(b) == 0:
            return {"a": a, "b": b, "segments": np.empty((0, 4)), "wasserstein": 0.0,
                    "descriptor_distance": float(self.distances[i, j])}
        dist, match = persim.wasserstein(a if len(a) else empty, b if len(b) else empty,
                                         matching=True)
        segments = []
        for p, q, _ in np.asarray(match).reshape(-1, 3):
            p, q = int(p), int(q)
            p, q = (p if 0 <= p < len(a) else -1), (q if 0 <= q < len(b) else -1)
            if p >= 0 and q >= 0:
                segments.append([*a[p], *b[q]])
            elif p >= 0:
                m = a[p].mean()
                segments.append([*a[p], m, m])
            elif q >= 0:
                m = b[q].mean()
                segments.append([m, m, *b[q]])
        return {"a": a, "b": b, "segments": np.array(segments).reshape(-1, 4),
                "wasserstein": float(dist), "descriptor_distance": float(self.distances[i, j])}


@lru_cache(maxsize=8)
def _dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """A GFC dataset, loaded once per session (MNIST-5k parses a 5 000-row CSV)."""
    X, y = load_clustering_dataset(name)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def load_explorer_data(scenario: str = "healthcare", **params) -> ExplorerData:
    """Build :class:`ExplorerData` (a convenience for notebooks).

    Parameters
    ----------
    scenario : str, default="healthcare"
        One of :data:`EXPLORER_SCENARIOS`.
    **params
        Further :class:`ExplorerData` parameters.

    Returns
    -------
    ExplorerData
    """
    return ExplorerData(scenario, **params)


def gfc_field(clients, n_clusters: int, epsilon: float, resolution: int = 60,
              random_state: int = 0) -> dict:
    """GFC's potential over a 2-D view of the data at privacy level ``epsilon``.

    Data with more than two features are first projected on their first two principal
    components (fitted on all clients' raw data); the explorer says so. Returns the grid
    ``xs``, ``ys``, ``log10 E`` on it, the uploaded centroids and their masses, and the
    peaks (positions and persistence) of the fitted model.

    Parameters
    ----------
    clients : list of array-like of shape (n_k, n_features)
        Each client's data.
    n_clusters : int
        Number of clusters.
    epsilon : float
        GFC's privacy level (> 0).
    resolution : int, default=60
        Grid points per axis (at least 10).
    random_state : int, default=0
        Seeds GFC.

    Returns
    -------
    dict
        ``xs``, ``ys``, ``log_energy``, ``centroids``, ``masses``, ``peaks``, ``persistence``,
        ``centers`` and ``projected`` (whether PCA was applied).
    """
    from sklearn.decomposition import PCA

    from ..clustering.gfc import GravitationalFederatedClustering, gravitational_potential

    check_real(epsilon, "epsilon", low=0.0, low_open=True)
    check_int(resolution, "resolution", low=10)
    clients = [np.asarray(c, dtype=np.float64) for c in clients]
    projected = clients[0].shape[1] > 2
    if projected:
        pca = PCA(2, random_state=0).fit(np.vstack(clients))
        clients = [pca.transform(c) for c in clients]
    smallest = min(len(c) for c in clients)
    est = GravitationalFederatedClustering(
        n_clusters, epsilon=epsilon, n_local=min(15, smallest), random_state=random_state,
    ).fit(clients)
    S, w = est.centroids_, est.masses_
    lo, hi = S.min(axis=0), S.max(axis=0)
    xs, ys = np.linspace(lo[0], hi[0], resolution), np.linspace(lo[1], hi[1], resolution)
    grid = np.array(np.meshgrid(xs, ys)).reshape(2, -1).T
    E = gravitational_potential(grid, S, w, est.p, est.delta_)
    tree = est.merge_tree_
    return {"xs": xs, "ys": ys, "log_energy": np.log10(E.reshape(resolution, resolution)),
            "centroids": S, "masses": w, "peaks": est.synthetic_[tree.peaks],
            "persistence": tree.persistence, "centers": est.cluster_centers_,
            "projected": projected}
