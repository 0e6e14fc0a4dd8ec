r"""Vietoris–Rips persistence diagrams of point clouds.

Two back-ends are offered:

``"ripser"`` (default)
    Exact H0 and H1 of the Vietoris–Rips filtration, computed by ripser
    (Bauer 2021). Birth and death values are Euclidean edge lengths.
``"triangle"``
    The approximation the pTopoFL paper describes (Sec. 4.1: "H0 exact via
    union-find, H1 approximate via the triangle-filtration algorithm"). The paper
    gives no algorithm, so we implement the usual cheap reading of it: H0 from
    Kruskal's algorithm on the complete graph (exact), and one H1 pair per
    non-tree edge :math:`(i, j)`, born at :math:`d_{ij}` and dying when the first
    triangle containing that edge enters the filtration,
    :math:`\min_k \max(d_{ik}, d_{jk}, d_{ij})`. Pairs of zero persistence are
    dropped. On point clouds in general position it finds as many H1 pairs as exact
    persistence (tested), but every loop dies with its first local triangle, so large
    loops get far too short bars (the unit circle's loop lasts about 0.005 instead of
    about 1.27). It is kept so that the difference can be shown, not for production use;
    it is not faster either beyond about 100 points (``benchmarks/``).

Both return a list ``[H0, H1]`` of arrays of shape ``(n_pairs, 2)`` holding
``(birth, death)``. The single infinite H0 class is *not* included: every
statistic in :mod:`topofl_lib.topology.descriptor` uses finite pairs only.
"""

from __future__ import annotations

import warnings

import numpy as np
from ripser import ripser
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform

from .._validation import check_choice, check_points

__all__ = ["PERSISTENCE_METHODS", "persistence_diagrams"]

PERSISTENCE_METHODS = ("ripser", "triangle")


def _finite(dgm: np.ndarray) -> np.ndarray:
    dgm = np.asarray(dgm, dtype=np.float64).reshape(-1, 2)
    return dgm[np.isfinite(dgm[:, 1])]


def _ripser_diagrams(X: np.ndarray) -> list[np.ndarray]:
    with warnings.catch_warnings():
        # ripser warns when a cloud has fewer points than dimensions or is square; both
        # are legitimate point clouds here (small clients, inversion attacks).
        warnings.filterwarnings("ignore", message="The input", category=UserWarning)
        dgms = ripser(X, maxdim=1)["dgms"]
    return [_finite(dgms[0]), _finite(dgms[1])]


def _triangle_diagrams(X: np.ndarray) -> list[np.ndarray]:
    D = squareform(pdist(X))
    n = D.shape[0]
    if n < 2:
        return [np.empty((0, 2)), np.empty((0, 2))]
    # H0: minimum spanning tree edge lengths are exactly the finite H0 deaths.
    mst = minimum_spanning_tree(D).toarray()
    tree = (mst > 0) | (mst.T > 0)
    deaths0 = np.sort(mst[mst > 0])
    # Duplicate points give zero-length MST edges that scipy drops: restore them.
    deaths0 = np.concatenate([np.zeros(n - 1 - deaths0.size), deaths0])
    h0 = np.column_stack([np.zeros(n - 1), deaths0])
    # H1: each non-tree edge closes a cycle that dies with its first triangle.
    iu, ju = np.triu_indices(n, k=1)
    keep = ~tree[iu, ju]
    iu, ju = iu[keep], ju[keep]
    if iu.size == 0:
        return [h0, np.empty((0, 2))]
    birth = D[iu, ju]
    third = np.maximum(D[iu], D[ju])  # (n_edges, n): filtration value of triangle (i, j, k)
    third[np.arange(iu.size), iu] = np.inf
    third[np.arange(iu.size), ju] = np.inf
    death = np.maximum(third.min(axis=1), birth)
    alive = death > birth
    h1 = np.column_stack([birth[alive], death[alive]])
    return [h0, h1]


def persistence_diagrams(X, method: str = "ripser") -> list[np.ndarray]:
    """Finite H0 and H1 persistence pairs of the Vietoris–Rips filtration of ``X``.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features)
        Point cloud; must be finite and non-empty.
    method : {"ripser", "triangle"}
        ``"ripser"`` is exact; ``"triangle"`` is the paper's approximation (see the
        module docstring).

    Returns
    -------
    list of numpy.ndarray
        ``[H0, H1]``, each of shape ``(n_pairs, 2)`` with columns (birth, death).
        The infinite H0 bar is omitted.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    >>> h0, h1 = persistence_diagrams(np.c_[np.cos(t), np.sin(t)])
    >>> len(h1), bool(h1[0, 1] - h1[0, 0] > 1.0)
    (1, True)
    """
    X = check_points(X)
    check_choice(method, "method", PERSISTENCE_METHODS)
    if method == "ripser":
        return _ripser_diagrams(X)
    return _triangle_diagrams(X)
