r"""The 48-dimensional persistent-homology descriptor of pTopoFL (Eq. 5, Appendix B).

Layout (see :data:`DESCRIPTOR_NAMES`)::

    [ H_0, H_1,   persistence entropy        (2)
      A_0, A_1,   l2 amplitude               (2)
      n_0, n_1,   #pairs above median pers.  (2)
      N_0, N_1,   total finite pair counts   (2)
      b^0_1..b^0_20,  Betti curve of H0      (20)
      b^1_1..b^1_20 ] Betti curve of H1      (20)

Eq. 5 lists "Betti numbers" :math:`\beta_0, \beta_1` as the first two scalars
while Appendix B lists persistent-feature counts and total feature counts; the
total is 48 only with Appendix B's eight scalars, so we follow Appendix B. The
total finite pair counts play the role of Eq. 5's Betti numbers.

Choices where the paper is ambiguous
------------------------------------
* **H0 Betti-curve grid**: ``L`` thresholds linearly spaced from 0 to the 95th
  percentile of the finite H0 death values (Appendix B). The Betti curve counts the
  essential (infinite) H0 class too, so it is the true number of connected
  components at each scale.
* **H1 Betti-curve grid** (``h1_grid``): Appendix B says "the same for H1". We read
  it as *the same rule applied to H1*: 0 to the 95th percentile of the H1 death
  values (``h1_grid="own"``, default). ``h1_grid="h0"`` reuses the H0 grid instead;
  since H1 classes are born around the scale where H0 dies, that grid often sees
  only the start of the H1 curve.
* **Subsampling**: ``n_sub`` points are drawn without replacement with
  ``random_state``. To keep the descriptor invariant to point order, rotations and
  translations, the draw is made over a canonical order of the points (by distance
  to their centroid), not over their storage order.
"""

from __future__ import annotations

import numpy as np

from .._validation import (
    as_float_array,
    check_bool,
    check_choice,
    check_finite,
    check_int,
    check_points,
    check_random_state,
    l2_norm,
)
from .persistence import PERSISTENCE_METHODS, check_persistence_memory, persistence_diagrams

__all__ = [
    "DESCRIPTOR_NAMES",
    "H1_GRIDS",
    "betti_curve",
    "betti_grid",
    "canonical_subsample",
    "check_diagram",
    "check_diagrams",
    "client_topology",
    "descriptor_from_diagrams",
    "descriptor_names",
    "persistence_entropy",
    "topological_descriptor",
]

H1_GRIDS = ("own", "h0")


def descriptor_names(n_thresholds: int) -> list[str]:
    """Names of the ``8 + 2 * n_thresholds`` descriptor entries, in order."""
    check_int(n_thresholds, "n_thresholds", low=2)  # as the descriptor's Betti grid
    scalars = ["entropy_h0", "entropy_h1", "amplitude_h0", "amplitude_h1",
               "n_above_median_h0", "n_above_median_h1", "n_pairs_h0", "n_pairs_h1"]
    curves = [f"betti{d}_{i}" for d in (0, 1) for i in range(n_thresholds)]
    return scalars + curves


#: Names of the 48 descriptor entries (default ``n_thresholds=20``).
DESCRIPTOR_NAMES: list[str] = descriptor_names(20)


def check_diagram(dgm, name: str = "dgm") -> np.ndarray:
    """Return a persistence diagram as a float array of shape ``(n_pairs, 2)``.

    Raises if it is not (birth, death) pairs, holds NaN or infinite values (the
    diagrams here hold finite pairs only), or has a death before its birth.

    Parameters
    ----------
    dgm : array-like
        (birth, death) pairs.
    name : str, default="dgm"
        What the error messages call it.

    Returns
    -------
    ndarray of shape (n_pairs, 2)
    """
    arr = as_float_array(dgm, name)
    if arr.size == 0:
        return arr.reshape(0, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (n_pairs, 2) of (birth, death), "
                         f"got shape {arr.shape}")
    check_finite(arr, name, hint=" (finite pairs only: drop the infinite H0 bar)")
    if np.any(arr[:, 1] < arr[:, 0]):
        raise ValueError(f"{name} has a pair that dies before it is born")
    return arr


def check_diagrams(diagrams, name: str = "diagrams") -> list[np.ndarray]:
    """``[H0, H1]`` (further dimensions are ignored), each checked.

    Parameters
    ----------
    diagrams : list of array-like
        At least two diagrams, H0 first (:func:`check_diagram` each).
    name : str, default="diagrams"
        What the error messages call them.

    Returns
    -------
    list of ndarray
        ``[H0, H1]``, each of shape (n_pairs, 2).
    """
    if isinstance(diagrams, np.ndarray) or len(diagrams) < 2:
        raise ValueError(f"{name} must be a list [H0, H1] of diagrams, got "
                         f"{type(diagrams).__name__} of length {len(diagrams)}")
    return [check_diagram(d, f"{name}[{q}]") for q, d in enumerate(diagrams[:2])]


def _check_values(x, name: str) -> np.ndarray:
    """A 1-D array of finite reals (thresholds, deaths)."""
    x = as_float_array(x, name)
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {x.shape}")
    return check_finite(x, name)


def persistence_entropy(pers: np.ndarray) -> float:
    r"""Persistence entropy :math:`-\sum_i p_i \log p_i`.

    Here :math:`p_i = \text{pers}_i / \sum_j \text{pers}_j`.

    Returns 0 for an empty diagram or one of zero total persistence.
    """
    pers = check_finite(as_float_array(pers, "pers"), "pers")
    if pers.ndim != 1:
        raise ValueError(f"pers must be 1-D (one persistence per pair), got shape {pers.shape}")
    if np.any(pers < 0):
        raise ValueError(f"pers holds negative persistence {pers.min():.3g}: a pair cannot "
                         "die before it is born")
    pers = pers[pers > 0]
    total = pers.sum()
    if pers.size == 0 or total <= 0:
        return 0.0
    p = pers / total
    return float(-(p * np.log(p)).sum())


def betti_curve(dgm: np.ndarray, thresholds: np.ndarray, n_essential: int = 0) -> np.ndarray:
    """Number of classes alive (``birth <= t < death``) at each threshold ``t``.

    Parameters
    ----------
    dgm : ndarray of shape (n_pairs, 2)
        Finite (birth, death) pairs.
    thresholds : ndarray of shape (L,)
        Filtration values.
    n_essential : int
        Classes that never die (born at 0), added at every threshold.

    Returns
    -------
    ndarray of float, shape (L,)
    """
    dgm = check_diagram(dgm)
    t = _check_values(thresholds, "thresholds")[:, None]
    check_int(n_essential, "n_essential", low=0)
    alive = (dgm[:, 0][None, :] <= t) & (dgm[:, 1][None, :] > t)
    return alive.sum(axis=1).astype(np.float64) + n_essential


def betti_grid(deaths, n_thresholds: int) -> np.ndarray:
    """Appendix B threshold grid: ``n_thresholds`` values from 0 to the 95th percentile
    of ``deaths`` (all zeros when there are none).

    Parameters
    ----------
    deaths : ndarray of shape (n_pairs,)
        Finite death values of one diagram.
    n_thresholds : int
        ``L``, the number of thresholds.

    Returns
    -------
    numpy.ndarray of shape (n_thresholds,)
    """
    deaths = _check_values(deaths, "deaths")
    check_int(n_thresholds, "n_thresholds", low=2)
    top = float(np.percentile(deaths, 95)) if deaths.size else 0.0
    return np.linspace(0.0, top, n_thresholds)


def descriptor_from_diagrams(
    diagrams: list[np.ndarray], n_thresholds: int = 20, h1_grid: str = "own"
) -> np.ndarray:
    """Build the descriptor vector from finite ``[H0, H1]`` diagrams.

    See the module docstring for the layout and the grid conventions.

    Parameters
    ----------
    diagrams : list of ndarray
        Finite ``[H0, H1]`` diagrams.
    n_thresholds : int, default=20
        Points ``L`` of each Betti curve (>= 2).
    h1_grid : {"own", "h0"}, default="own"
        The H1 curve's grid: from H1's own deaths, or H0's grid.

    Returns
    -------
    ndarray of shape (8 + 2 L,)
    """
    check_int(n_thresholds, "n_thresholds", low=2)
    check_choice(h1_grid, "h1_grid", H1_GRIDS)
    h0, h1 = check_diagrams(diagrams)
    pers = [d[:, 1] - d[:, 0] for d in (h0, h1)]
    scalars = []
    scalars += [persistence_entropy(p) for p in pers]
    scalars += [l2_norm(p) for p in pers]
    scalars += [float((p > np.median(p)).sum()) if p.size else 0.0 for p in pers]
    scalars += [float(h0.shape[0]), float(h1.shape[0])]
    grid0 = betti_grid(h0[:, 1], n_thresholds)
    grid1 = grid0 if h1_grid == "h0" else betti_grid(h1[:, 1], n_thresholds)
    curve0 = betti_curve(h0, grid0, n_essential=1)
    curve1 = betti_curve(h1, grid1)
    return np.concatenate([scalars, curve0, curve1])


def canonical_subsample(X: np.ndarray, n_sub: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``n_sub`` points drawn over an isometry-invariant order of ``X``.

    Points are ranked by distance to the centroid (stable sort), and ``rng`` picks
    ranks. Permuting, rotating or translating ``X`` therefore selects the same points.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Points.
    n_sub : int
        Number of points to draw (``<= n``).
    rng : numpy.random.Generator
        Picks the ranks.

    Returns
    -------
    ndarray of int, shape (n_sub,)
        Row indices into ``X``.
    """
    key = l2_norm(X - X.mean(axis=0), axis=1)
    order = np.argsort(key, kind="stable")
    ranks = np.sort(rng.choice(X.shape[0], size=n_sub, replace=False))
    return order[ranks]


def _checked_subsample(X, n_sub, strict, random_state, persistence, name="X") -> np.ndarray:
    X = check_points(X, name, min_points=2)
    if n_sub is not None:
        check_int(n_sub, "n_sub", low=2)
        if X.shape[0] < n_sub and strict:
            raise ValueError(
                f"{name} has {X.shape[0]} points, fewer than n_sub={n_sub}; pass "
                "strict=False to use all points of small clients, or lower n_sub"
            )
    m = X.shape[0] if n_sub is None else min(n_sub, X.shape[0])
    check_persistence_memory(m, persistence, name)
    if n_sub is not None and X.shape[0] > n_sub:
        X = X[canonical_subsample(X, n_sub, check_random_state(random_state))]
    return X


def client_topology(
    X,
    n_sub: int | None = 80,
    *,
    n_thresholds: int = 20,
    persistence: str = "ripser",
    h1_grid: str = "own",
    strict: bool = True,
    random_state=None,
    name: str = "X",
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Descriptor, diagrams and subsample of one point cloud.

    Callers that also need the diagrams (Wasserstein distances, feature augmentation)
    compute persistence once.

    Parameters
    ----------
    X, n_sub, n_thresholds, persistence, h1_grid, strict, random_state
        As in :func:`topological_descriptor`.
    name : str, default="X"
        What the error messages call ``X`` (e.g. ``"client 3"``).

    Returns
    -------
    descriptor : ndarray of shape (8 + 2 n_thresholds,)
    diagrams : list of ndarray
        ``[H0, H1]``.
    X_subsample : ndarray
        The points persistence was computed on.
    """
    check_choice(persistence, "persistence", PERSISTENCE_METHODS)
    check_bool(strict, "strict")
    Xs = _checked_subsample(X, n_sub, strict, random_state, persistence, name)
    dgms = persistence_diagrams(Xs, persistence)
    with np.errstate(all="ignore"):  # a non-finite result is refused just below
        descriptor = descriptor_from_diagrams(dgms, n_thresholds, h1_grid)
    if not np.all(np.isfinite(descriptor)):
        raise ValueError(f"{name}: its descriptor overflows float64 (largest persistence "
                         f"value {max(float(np.abs(d).max(initial=0)) for d in dgms):.3g}); "
                         f"divide {name} by a constant first")
    return descriptor, dgms, Xs


def topological_descriptor(
    X,
    n_sub: int | None = 80,
    *,
    n_thresholds: int = 20,
    persistence: str = "ripser",
    h1_grid: str = "own",
    strict: bool = True,
    random_state=None,
    name: str = "X",
) -> np.ndarray:
    """The pTopoFL descriptor of one point cloud.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features)
        The client's data (finite, at least 2 points).
    n_sub : int or None
        Number of points subsampled before persistence (paper: 80 for tabular
        scenarios, 200 for deep models). ``None`` uses every point. A number of points
        whose persistence would not fit in memory is refused before anything is
        computed, with the largest safe ``n_sub``
        (:func:`~topofl_lib.topology.persistence.check_persistence_memory`).
    n_thresholds : int
        Betti-curve resolution ``L`` (paper: 20). The vector has ``8 + 2 L`` entries.
    persistence : {"ripser", "triangle"}
        Exact Rips persistence or the paper's triangle approximation of H1
        (:func:`~topofl_lib.topology.persistence_diagrams`).
    h1_grid : {"own", "h0"}
        Threshold grid of the H1 Betti curve (module docstring).
    strict : bool
        If True, fewer than ``n_sub`` points raise ``ValueError``; if False, all
        points are used when there are fewer than ``n_sub``.
    random_state : None, int or numpy.random.Generator
        Seeds the subsample.
    name : str
        What error messages call ``X`` (e.g. ``"client 3"``).

    Returns
    -------
    numpy.ndarray of shape (8 + 2 * n_thresholds,)
    """
    return client_topology(
        X, n_sub, n_thresholds=n_thresholds, persistence=persistence, h1_grid=h1_grid,
        strict=strict, random_state=random_state, name=name,
    )[0]
