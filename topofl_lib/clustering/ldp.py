r"""Record-level local differential privacy for the clustering clients.

Each record is first clipped to the L1 ball of radius ``sensitivity / 2``, so that any
two records differ by at most ``sensitivity`` in L1 norm; adding i.i.d.
Laplace(``sensitivity / epsilon``) noise to every coordinate then makes each released
record epsilon-LDP (the Laplace mechanism). Without the clipping the "sensitivity" of
raw data would be unbounded and the guarantee void.

Valid budgets: any finite ``epsilon > 0`` whose Laplace scale ``sensitivity / epsilon`` is
at most :data:`MAX_LAPLACE_SCALE` (``1e50``). Everything downstream of the release works on
powers of the noisy coordinates (k-means and the potential on squared distances, GFC's
``mass="sse"`` on the variance of squared distances, i.e. fourth powers), and float64
overflows beyond about ``1e308``: a scale above ``~1e77`` turns those into ``inf``/NaN and
the methods fail with unrelated messages (at ``epsilon = 1e-200`` GFC died with "axis 1
index 3300 exceeds matrix dimension"). The bound leaves a wide margin for sums over many
records and features, and it costs nothing in practice: at a scale of ``1e50`` the noise
is ``1e50`` times the bound on the data and the release carries no information. Very large
budgets are fine (the noise just becomes negligible).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.exceptions import NotFittedError

from .._validation import check_n_features, check_points, check_random_state, check_real

__all__ = ["MAX_LAPLACE_SCALE", "check_budget", "check_clients", "check_distinct",
           "laplace_ldp", "nearest_center"]

#: Largest supported Laplace scale ``sensitivity / epsilon`` (see the module docstring).
MAX_LAPLACE_SCALE = 1e50


def check_budget(epsilon, sensitivity) -> tuple[float, float]:
    """Validate ``epsilon`` and ``sensitivity`` of the Laplace mechanism.

    Parameters
    ----------
    epsilon : float
        Per-record LDP budget, finite and > 0.
    sensitivity : float
        L1 sensitivity, finite and > 0.

    Returns
    -------
    tuple of float
        ``(epsilon, sensitivity)``.

    Raises
    ------
    ValueError
        If either is not finite and positive, or if the Laplace scale
        ``sensitivity / epsilon`` exceeds :data:`MAX_LAPLACE_SCALE`.
    """
    eps = check_real(epsilon, "epsilon", low=0.0, low_open=True)
    sens = check_real(sensitivity, "sensitivity", low=0.0, low_open=True)
    scale = sens / eps
    if not scale <= MAX_LAPLACE_SCALE:  # also catches an overflow to inf
        raise ValueError(
            f"epsilon={eps:g} with sensitivity={sens:g} gives the Laplace noise scale "
            f"sensitivity/epsilon = {scale:.3g}, above the largest supported "
            f"{MAX_LAPLACE_SCALE:.0e} (squared distances of such noise overflow float64); "
            f"use epsilon >= {sens / MAX_LAPLACE_SCALE:.3g}")
    return eps, sens


def check_clients(client_datasets) -> list[np.ndarray]:
    """Validate a list of client datasets: non-empty, finite, one shared dimension."""
    if isinstance(client_datasets, np.ndarray) and client_datasets.ndim == 2:
        raise TypeError("client_datasets must be a list of 2-D arrays, one per client")
    clients = list(client_datasets)
    if not clients:
        raise ValueError("client_datasets is empty")
    out = [check_points(X, f"client_datasets[{i}]") for i, X in enumerate(clients)]
    dims = {X.shape[1] for X in out}
    if len(dims) > 1:
        raise ValueError(f"clients have different dimensions {sorted(dims)}")
    return out


def check_distinct(points: np.ndarray, n_clusters: int, owner: str, what: str) -> None:
    """Raise unless ``points`` holds at least ``n_clusters`` distinct rows.

    Every clustering method promises ``n_clusters`` distinct centres; fewer distinct
    uploads (identical records, noise too small to separate them) cannot give them.

    Parameters
    ----------
    points : ndarray of shape (m, d)
        What the server received, or the centres it found.
    n_clusters : int
        The centres asked for.
    owner : str
        The method's name, first in the message.
    what : str
        What ``points`` are, e.g. ``"uploaded centroid(s)"``.
    """
    distinct = len(np.unique(points, axis=0))
    if distinct < n_clusters:
        raise ValueError(
            f"{owner} has {distinct} distinct {what}, fewer than n_clusters={n_clusters}, "
            "so it cannot return n_clusters centres")


def nearest_center(estimator, X) -> np.ndarray:
    """Index of the nearest of ``estimator.cluster_centers_`` for each record of ``X``.

    Parameters
    ----------
    estimator : fitted clustering estimator
        Has ``cluster_centers_`` (else ``NotFittedError``).
    X : array-like of shape (n, d)
        Records with the dimension the estimator was fitted on.

    Returns
    -------
    ndarray of int, shape (n,)
    """
    name = type(estimator).__name__
    if not hasattr(estimator, "cluster_centers_"):
        raise NotFittedError(f"this {name} is not fitted yet")
    X = check_points(X)
    check_n_features(X, estimator.cluster_centers_.shape[1], f"this {name} was fitted on")
    return cdist(X, estimator.cluster_centers_).argmin(axis=1)


def laplace_ldp(X, epsilon: float, sensitivity: float, random_state=None) -> np.ndarray:
    """Clip every record to L1 norm ``sensitivity / 2`` and add Laplace(``sensitivity/epsilon``).

    Parameters
    ----------
    X : array-like (n, d)
        Records.
    epsilon, sensitivity : float
        Budget and L1 sensitivity (validated by :func:`check_budget`).
    random_state : None, int or numpy Generator

    Returns
    -------
    ndarray (n, d)
        The released records.
    """
    X = check_points(X)
    epsilon, sensitivity = check_budget(epsilon, sensitivity)
    rng = check_random_state(random_state)
    radius = sensitivity / 2.0
    l1 = np.abs(X).sum(axis=1, keepdims=True)
    clipped = X * np.minimum(1.0, radius / np.maximum(l1, 1e-300))
    return clipped + rng.laplace(scale=sensitivity / epsilon, size=X.shape)
