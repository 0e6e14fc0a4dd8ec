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

Memory
------
Both back-ends need far more memory than the points they summarise, and a large
cloud would exhaust the machine (the triangle method needs about 90 GiB at 2,000
points). :func:`persistence_memory` estimates the peak from what the code allocates,
and :func:`check_persistence_memory` refuses, before anything is computed, a cloud
whose estimate exceeds the budget (:func:`memory_budget`: half of the memory
available when the check runs), naming the largest number of points that fits.

``"triangle"``
    Three float64 arrays of shape ``(E, n)`` are alive at once (``D[iu]``, ``D[ju]``
    and their maximum), ``E = (n - 1)(n - 2) / 2`` non-tree edges, i.e. about
    ``12 n^3`` bytes, plus ``O(n^2)`` for the distance matrix and edge indices.
    Measured peak (resident set, Gaussian points in 20-D): 11.1, 91.8, 309, 732 MiB at
    n = 100, 200, 300, 400, i.e. 12.0 n^3 bytes.
``"ripser"``
    ripser.py holds the float64 distance matrix (8 n^2 bytes) and two int64 index grids
    (16 n^2) while the C++ code runs, which keeps the float32 lower triangle (2 n^2),
    the sorted edge list and the H1 columns to reduce (16 bytes per edge each, 8 n^2
    + 8 n^2): 42 n^2 bytes, before the pivot hash map, the growth of these vectors and
    the matrix reduction's fill-in, which depends on the data. Measured peak (resident set): 66-98
    n^2 bytes for Gaussian points (n = 250 to 4,000 in 2, 3 and 20 dimensions), 167-344
    n^2 for points in eight tight clusters (n = 1,000 to 2,500 in 5-D). The estimate is
    ``RIPSER_BYTES_PER_PAIR * n^2`` with 350 bytes, above every measured peak; so the
    20,000 points that exhausted a 24 GB machine are refused (130 GiB).
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from .._validation import check_choice, check_points, power_of_two_split

__all__ = [
    "PERSISTENCE_METHODS",
    "check_persistence_memory",
    "memory_budget",
    "persistence_diagrams",
    "persistence_memory",
]

PERSISTENCE_METHODS = ("ripser", "triangle")

#: Peak bytes of ripser per squared point count (module docstring: measured 78-344).
RIPSER_BYTES_PER_PAIR = 350
#: Fraction of the available memory one persistence computation may use.
MEMORY_FRACTION = 0.5


def persistence_memory(n_points: int, persistence: str = "ripser") -> int:
    """Estimated peak memory (bytes) of the persistence of ``n_points`` points.

    Derived from what each back-end allocates and checked against measured peaks (see
    the module docstring): ``RIPSER_BYTES_PER_PAIR * n^2`` for ripser,
    ``24 E n + 48 n^2`` with ``E = (n - 1)(n - 2) / 2`` for the triangle method.

    Parameters
    ----------
    n_points : int
        Points in the cloud.
    persistence : str, default="ripser"
        The back-end (``"triangle"``, or any other for ripser's estimate).

    Returns
    -------
    int
        Bytes.
    """
    n = int(n_points)
    if persistence == "triangle":
        edges = (n - 1) * (n - 2) // 2
        return 24 * edges * n + 48 * n * n
    return RIPSER_BYTES_PER_PAIR * n * n


def memory_budget() -> int:
    """Bytes one persistence computation may use: ``MEMORY_FRACTION`` (half) of the
    memory available now (``MemAvailable`` of ``/proc/meminfo``; elsewhere, of the
    physical memory)."""
    available = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if available is None:
        available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return int(MEMORY_FRACTION * available)


def check_persistence_memory(n_points: int, persistence: str = "ripser", name: str = "X",
                             parameter: str | None = "n_sub") -> None:
    """Refuse a persistence computation whose estimated memory exceeds the budget.

    Raises ``MemoryError`` naming ``name``, the estimate, the budget and the largest
    safe number of points, as ``parameter=<value>`` (or "subsample to" if ``None``).

    Parameters
    ----------
    n_points : int
        Points in the cloud.
    persistence : str, default="ripser"
        The back-end (:func:`persistence_memory`).
    name : str, default="X"
        What the message calls the cloud.
    parameter : str or None, default="n_sub"
        The parameter the message advises to lower.
    """
    need, budget = persistence_memory(n_points, persistence), memory_budget()
    if need <= budget:
        return
    lo, hi = 2, int(n_points)  # largest n whose estimate fits (the estimate grows with n)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if persistence_memory(mid, persistence) <= budget else (lo, mid)
    advice = (f"pass {parameter}={lo} or less" if parameter else
              f"subsample {name} to at most {lo} points")
    raise MemoryError(
        f"{name}: persistence of {n_points} points with persistence={persistence!r} needs "
        f"about {need / 2**30:.1f} GiB, more than the budget of {budget / 2**30:.1f} GiB "
        f"({MEMORY_FRACTION:.0%} of the memory available); {advice} "
        "(the pTopoFL paper uses 80)"
    )


def _finite(dgm: np.ndarray) -> np.ndarray:
    dgm = np.asarray(dgm, dtype=np.float64).reshape(-1, 2)
    return dgm[np.isfinite(dgm[:, 1])]


def _ripser_diagrams(X: np.ndarray) -> list[np.ndarray]:
    from ripser import ripser  # on first use: the deep models import this module without it

    with warnings.catch_warnings():
        # ripser warns when a cloud has fewer points than dimensions or is square; both
        # are legitimate point clouds here (small clients, inversion attacks).
        warnings.filterwarnings("ignore", message="The input", category=UserWarning)
        dgms = ripser(X, maxdim=1)["dgms"]
    return [_finite(dgms[0]), _finite(dgms[1])]


def _triangle_diagrams(X: np.ndarray) -> list[np.ndarray]:
    # on first use, as ripser: a Flower ClientApp imports this module in every message's
    # interpreter, and scipy's sparse and spatial packages took a quarter of a second of
    # each start
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import minimum_spanning_tree
    from scipy.spatial.distance import pdist, squareform

    D = squareform(pdist(X))
    n = D.shape[0]
    if n < 2:
        return [np.empty((0, 2)), np.empty((0, 2))]
    iu, ju = np.triu_indices(n, k=1)
    # H0: minimum spanning tree edge lengths are exactly the finite H0 deaths. The graph
    # goes in sparse: scipy reads entries of a dense matrix within 1e-8 of 0 as no edge.
    mst = minimum_spanning_tree(csr_matrix((D[iu, ju], (iu, ju)), shape=(n, n))).toarray()
    tree = (mst > 0) | (mst.T > 0)
    deaths0 = np.sort(mst[mst > 0])
    # Duplicate points give zero-length MST edges that scipy drops: restore them.
    deaths0 = np.concatenate([np.zeros(n - 1 - deaths0.size), deaths0])
    h0 = np.column_stack([np.zeros(n - 1), deaths0])
    # H1: each non-tree edge closes a cycle that dies with its first triangle (a
    # zero-length edge joins duplicate points and closes no cycle).
    keep = ~tree[iu, ju] & (D[iu, ju] > 0)
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


def persistence_diagrams(X, persistence: str = "ripser") -> list[np.ndarray]:
    """Finite H0 and H1 persistence pairs of the Vietoris–Rips filtration of ``X``.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features)
        Point cloud; must be finite and non-empty. Any scale float64 holds is
        fine (the diagrams are computed on ``X`` divided by a power of two and scaled
        back); a cloud whose distances exceed float64 is refused.
    persistence : {"ripser", "triangle"}
        The Rips persistence algorithm: ``"ripser"`` is exact; ``"triangle"`` is the
        paper's approximation (see the module docstring). Every function and estimator
        of the package calls this choice ``persistence``.

    Raises
    ------
    MemoryError
        Before computing, if the estimated memory exceeds the budget (module docstring).

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
    check_choice(persistence, "persistence", PERSISTENCE_METHODS)
    check_persistence_memory(X.shape[0], persistence, parameter=None)
    # Rips diagrams scale with X: compute them on X / 2**e (exact) with coordinates below
    # 1 in magnitude, so that no squared distance overflows or underflows float64 and no
    # distance leaves ripser's float32 range, then scale back (same bits for everyday X).
    U, e = power_of_two_split(X)
    dgms = _ripser_diagrams(U) if persistence == "ripser" else _triangle_diagrams(U)
    with np.errstate(over="ignore"):  # refused just below
        dgms = [np.ldexp(d, int(e.item())) for d in dgms]
    if not all(np.all(np.isfinite(d)) for d in dgms):
        raise ValueError(f"X: its persistence values, distances between its points, exceed "
                         f"float64 (largest coordinate {np.abs(X).max():.3g}); divide X by "
                         "a constant first (the diagrams scale with it)")
    return dgms
