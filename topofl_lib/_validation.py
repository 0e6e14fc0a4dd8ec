"""Input validation shared by every layer of :mod:`topofl_lib`.

Every public entry point funnels its arguments through these helpers so that bad
input fails early, with a message that names the parameter and the offending value.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "check_bool",
    "check_choice",
    "check_finite",
    "check_int",
    "check_labels",
    "check_points",
    "check_random_state",
    "check_real",
]


def check_points(X: Any, name: str = "X", *, min_points: int = 1) -> np.ndarray:
    """Return ``X`` as a finite 2-D float array or raise a clear error.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features)
        The point cloud.
    name : str
        Parameter name used in error messages.
    min_points : int
        Minimum number of rows.

    Returns
    -------
    numpy.ndarray
        A float64 array of shape (n_points, n_features).
    """
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"{name} must be an array-like of numbers, got {type(X).__name__}")
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array-like of numbers: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_points, n_features), got shape {arr.shape}")
    if arr.shape[0] < min_points:
        raise ValueError(
            f"{name} has {arr.shape[0]} points; at least {min_points} required (empty client?)"
        )
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has 0 features, shape {arr.shape}")
    return check_finite(arr, name)


def check_finite(arr: np.ndarray, name: str, *, hint: str = "",
                 error: type[Exception] = ValueError) -> np.ndarray:
    """Return the array ``arr`` unchanged, or raise ``error`` if it holds NaN or inf.

    The message names ``name``, counts the bad values and ends with ``hint``. Only
    reads ``arr``: no copy, no arithmetic on it.
    """
    finite = np.isfinite(arr)
    if not finite.all():
        bad = int(finite.size - np.count_nonzero(finite))
        raise error(f"{name} contains {bad} NaN or infinite value(s){hint}")
    return arr


def check_labels(y: Any, n: int, name: str = "y", *, require_both: bool = True,
                 n_classes: int = 2, why: str = "each client needs both classes") -> np.ndarray:
    """Return class labels ``y`` as an int array of length ``n``.

    Raises if the labels are not in ``0..n_classes-1`` (0/1 by default), have the wrong
    length, or (binary labels with ``require_both``) contain a single class, which makes
    logistic regression and AUC meaningless (``why`` says so in the message).
    Multi-class clients may hold a single class (that is what pathological label skew
    produces).
    """
    arr = np.asarray(y)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be 1-D with {n} entries to match X, got shape {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    values = np.unique(arr)
    if not np.all(np.isin(values, np.arange(n_classes))):
        kind = "binary labels 0/1" if n_classes == 2 else f"labels 0..{n_classes - 1}"
        raise ValueError(f"{name} must contain {kind}, got values {values[:10].tolist()}")
    if require_both and n_classes == 2 and values.size < 2:
        raise ValueError(
            f"{name} has a single class {values.tolist()} in {n} record(s); {why}"
        )
    return arr.astype(np.int64)


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """Validate an integer parameter within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return int(value)


def check_real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float:
    """Validate a finite real parameter within ``[low, high]`` (``(low, high]`` if ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        op = ">" if low_open else ">="
        raise ValueError(f"{name} must be {op} {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def check_bool(value: Any, name: str) -> bool:
    """Validate a flag: ``True`` or ``False`` (a string such as ``"no"`` is refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """Validate that ``value`` is one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; expected one of {list(choices)}")
    return value


def check_random_state(random_state: Any) -> np.random.Generator:
    """Turn ``None``, an int, or a Generator into a :class:`numpy.random.Generator`."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state}")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        f"random_state must be None, a non-negative int or a numpy Generator, got {random_state!r}"
    )
