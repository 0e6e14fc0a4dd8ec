"""Input checks of the topology transformers, whose samples are whole clients.

:class:`~topofl_lib.topology.TopologicalDescriptor` takes a sequence of point clouds;
:class:`~topofl_lib.topology.ClassConditionalDescriptor` and
:class:`~topofl_lib.topology.ModelAnchoredDescriptor` take a sequence of per-client
pairs ``(points, labels)`` or ``(points, margins)``. A single 2-D array is refused with a
message saying to wrap it in a list; every array is checked finite.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.exceptions import NotFittedError

from .._validation import as_float_array, check_labels, check_points

__all__ = ["check_client_pairs", "check_clouds", "check_fitted_dimension",
           "common_dimension"]

#: What the second array of a client pair holds.
SECOND = ("labels", "margins")


def _check_sequence(X, what: str) -> None:
    if isinstance(X, np.ndarray) and X.ndim == 2:
        raise TypeError(f"X must be a sequence of {what}, got a single 2-D array; wrap it "
                        "in a list")
    if isinstance(X, np.ndarray) and X.ndim < 2 and X.dtype != object:
        raise ValueError(f"X must be a sequence of {what}, got a {X.ndim}-D array of "
                         "numbers")
    if not isinstance(X, (Sequence, np.ndarray)) or len(X) == 0:
        raise ValueError(f"X must be a non-empty sequence of {what}")


def check_clouds(X) -> list[np.ndarray]:
    """Validate a sequence of point clouds (one 2-D array per client, 2+ points each).

    Parameters
    ----------
    X : sequence of array-like of shape (n_points_k, n_features)

    Returns
    -------
    list of numpy.ndarray
    """
    _check_sequence(X, "point clouds (one 2-D array per client)")
    return [check_points(c, f"X[{i}]", min_points=2) for i, c in enumerate(X)]


def check_client_pairs(X, second: str = "labels", n_classes: int | None = None
                       ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Validate a sequence of per-client pairs ``(points, second)``.

    Parameters
    ----------
    X : sequence of pairs
        ``(points_k, values_k)``: points of shape (n_k, d) (2+ points), values of shape
        (n_k,).
    second : {"labels", "margins"}
        What the values are: class labels in ``0..n_classes-1`` (a client may miss
        classes), or finite reals.
    n_classes : int, optional
        Number of classes (labels only; ``None``: binary).

    Returns
    -------
    list of (numpy.ndarray, numpy.ndarray)
        The checked pairs (labels as int, margins as float64).
    """
    if second not in SECOND:
        raise ValueError(f"second must be one of {list(SECOND)}, got {second!r}")
    _check_sequence(X, f"(points, {second}) pairs, one per client")
    out = []
    for i, item in enumerate(X):
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f"X[{i}] must be a pair (points, {second}), got "
                            f"{type(item).__name__}")
        pts = check_points(item[0], f"X[{i}][0]", min_points=2)
        if second == "labels":
            vals = check_labels(item[1], pts.shape[0], f"X[{i}][1]", require_both=False,
                                n_classes=2 if n_classes is None else n_classes)
        else:
            vals = as_float_array(item[1], f"X[{i}][1]")
            if vals.shape != (pts.shape[0],):
                raise ValueError(f"X[{i}][1] must have shape ({pts.shape[0]},), got "
                                 f"{vals.shape}")
            if not np.all(np.isfinite(vals)):
                raise ValueError(f"X[{i}][1] contains NaN or infinite values")
        out.append((pts, vals))
    return out


def common_dimension(clouds, what: str = "point clouds") -> int:
    """The one dimension of the points of every client (raise if they differ).

    Parameters
    ----------
    clouds : list of ndarray
        The clients' points (from :func:`check_clouds`, or the first arrays of
        :func:`check_client_pairs`'s pairs).
    what : str
        What the error message calls the clients.

    Returns
    -------
    int
    """
    dims = {c.shape[1] for c in clouds}
    if len(dims) > 1:
        raise ValueError(f"{what} in X have different dimensions {sorted(dims)}")
    return dims.pop()


def check_fitted_dimension(estimator, clouds=()) -> None:
    """Raise unless ``estimator`` is fitted and every cloud has its dimension.

    Parameters
    ----------
    estimator : transformer
        Fitted transformers have ``n_features_in_``.
    clouds : list of ndarray, optional
        The clients' points (none: check only that ``estimator`` is fitted).
    """
    if not hasattr(estimator, "n_features_in_"):
        raise NotFittedError(f"this {type(estimator).__name__} is not fitted yet; call fit "
                             "first")
    for i, c in enumerate(clouds):
        if c.shape[1] != estimator.n_features_in_:
            raise ValueError(f"X[{i}] has {c.shape[1]} features, but the transformer was "
                             f"fitted with {estimator.n_features_in_}")
