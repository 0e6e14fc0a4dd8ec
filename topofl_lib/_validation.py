"""Input validation shared by every layer of :mod:`topofl_lib`.

Every public entry point funnels its arguments through these helpers so that bad
input fails early, with a message that names the parameter and the offending value.
Nothing is converted with a loss: complex values are refused, not cut to their real
part (:func:`as_float_array`). Two arithmetic helpers keep computations on checked
arrays inside float64: :func:`power_of_two_split` (exact rescaling) and :func:`l2_norm`.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "OneLineArgumentParser",
    "as_float_array",
    "check_bool",
    "check_choice",
    "check_class_labels",
    "check_finite",
    "check_int",
    "check_labels",
    "check_n_features",
    "check_points",
    "check_random_state",
    "check_range",
    "check_real",
    "l2_norm",
    "power_of_two_split",
]


class OneLineArgumentParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``prog: error: ...``), exit status 2.

    The command lines of the library (``python -m topofl_lib``, ``python -m
    topofl_lib.flower.security``, ``python -m topofl_lib.flower.node``) use it.
    """

    def error(self, message: str):
        """Exit with status 2 after one line naming the problem (argparse's hook)."""
        self.exit(2, f"{self.prog}: error: {message} (--help shows the usage)\n")


def as_float_array(x: Any, name: str, dtype: type = np.float64) -> np.ndarray:
    """Return ``x`` as a float array, refusing what would lose information on the way.

    A string, ``None``, something not numeric, or complex values (NumPy would drop the
    imaginary part with only a warning) raise ``TypeError`` naming ``name``. Nothing
    else is checked (shape, finiteness: the caller's business).

    Parameters
    ----------
    x : array-like
        The values.
    name : str
        Parameter name used in error messages.
    dtype : type, default=numpy.float64
        The float type (``numpy.float32`` for torch inputs).

    Returns
    -------
    numpy.ndarray
        ``x`` as ``dtype`` (no copy when it already is one).
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    if np.iscomplexobj(x):
        raise TypeError(f"{name} must hold real numbers, got complex values; pass its real "
                        "part or modulus explicitly (np.real, np.abs)")
    try:
        return np.asarray(x, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"{name} must be an array of numbers: {exc}") from None


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
    arr = as_float_array(X, name)
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
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} must hold class labels, got complex values")
    if arr.dtype.kind == "O":  # np.unique would compare the objects: a TypeError naming nothing
        odd = [v for v in arr.ravel() if not isinstance(v, Real)]
        if odd:
            raise TypeError(f"{name} must hold class labels (numbers), got an object array "
                            f"holding {odd[0]!r} ({type(odd[0]).__name__})")
        arr = arr.astype(np.float64)
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


def check_class_labels(y: Any, name: str = "y") -> np.ndarray:
    """Class labels of unknown number: a non-empty 1-D array with no complex values and,
    if float, no NaN or inf (a NaN label equals no other label, not even itself).

    Parameters
    ----------
    y : array-like of shape (n,)
        The labels (ints, floats or strings).
    name : str, default="y"
        Parameter name used in error messages.

    Returns
    -------
    numpy.ndarray
        ``y`` as an array.
    """
    arr = np.asarray(y)
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} must hold class labels, got complex values")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of labels, got shape "
                         f"{arr.shape}")
    if arr.dtype.kind == "f":
        check_finite(arr, name, hint=" (a NaN label equals no other label)")
    return arr


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
    high_open: bool = False,
) -> float:
    """Validate a finite real parameter within ``[low, high]`` (``(low, ...`` if
    ``low_open``, ``..., high)`` if ``high_open``)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        op = ">" if low_open else ">="
        raise ValueError(f"{name} must be {op} {low}, got {value}")
    if high is not None and (value > high or (high_open and value == high)):
        op = "<" if high_open else "<="
        raise ValueError(f"{name} must be {op} {high}, got {value}")
    return value


def check_range(value: Any, name: str, check, **bounds) -> tuple:
    """``(low, high)`` of a range parameter: a pair of values passing ``check``, low <= high.

    Parameters
    ----------
    value : pair
        The range.
    name : str
        Parameter name used in error messages (the ends are ``name[0]``, ``name[1]``).
    check : callable
        :func:`check_int` or :func:`check_real`, applied to each end with ``**bounds``.
    **bounds
        ``low``, ``high`` (and ``low_open`` for :func:`check_real`) of each end.

    Returns
    -------
    tuple
        ``(low, high)`` as checked.
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a pair (low, high), got {value!r}")
    try:
        low, high = value
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair (low, high), got {value!r}") from None
    low, high = check(low, f"{name}[0]", **bounds), check(high, f"{name}[1]", **bounds)
    if low > high:
        raise ValueError(f"{name} must be (low, high) with low <= high, got {value!r}")
    return low, high


def check_n_features(X: np.ndarray, n_features: int, owner: str, name: str = "X") -> None:
    """Raise ``ValueError`` unless the 2-D array ``X`` has ``n_features`` columns.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Checked points (:func:`check_points`).
    n_features : int
        The number of features ``X`` must have.
    owner : str
        Ends the message before ``n_features``, e.g. ``"this KFed was fitted on"``.
    name : str, default="X"
        Parameter name used in the message.
    """
    if X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features, but {owner} {n_features}")


def power_of_two_split(x: np.ndarray, axis: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(u, e)`` with ``x = u * 2**e`` and the largest ``|u|`` along ``axis`` in [0.5, 1).

    Dividing by a power of two is exact (up to entries some 2**1022 times smaller than
    the largest, which no sum of squares can see), so squares, norms and distances
    computed on ``u`` neither overflow nor underflow, and scale back exactly with
    :func:`numpy.ldexp`. Where ``x`` is finite and neither huge nor tiny, computing on
    ``u`` and scaling back gives the same bits as computing on ``x``.

    Parameters
    ----------
    x : ndarray
        Finite values.
    axis : int or None, default=None
        Scale each slice along ``axis`` separately (``None``: the whole array).

    Returns
    -------
    u : ndarray
        Shaped like ``x``.
    e : ndarray of int
        The exponents, shaped like ``x`` reduced along ``axis`` with ``keepdims``
        (0 where a slice is all zeros).
    """
    if x.size == 0:
        return x.copy(), np.zeros(np.sum(x, axis=axis, keepdims=True).shape, dtype=np.int32)
    e = np.frexp(np.max(np.abs(x), axis=axis, keepdims=True))[1]
    return np.ldexp(x, -e), e


def l2_norm(x: np.ndarray, axis: int | None = None, *, keepdims: bool = False,
            divisor: float = 1.0) -> np.ndarray | float:
    """``sqrt(sum(x**2, axis) / divisor)`` without overflow or underflow.

    The squares are summed over ``x`` divided by a power of two
    (:func:`power_of_two_split`), so the norm of ``[1e300, 1e300]`` is ``1.41e300``,
    not ``inf``, and that of ``[1e-200]`` is ``1e-200``, not 0; the result is the same
    bits as the plain formula wherever that one neither overflows nor underflows. It
    is ``inf`` only if the norm itself exceeds float64.

    Parameters
    ----------
    x : ndarray
        Finite values.
    axis : int or None, default=None
        The axis summed over (``None``: all of ``x``).
    keepdims : bool, default=False
        Keep the summed axis with length one.
    divisor : float, default=1.0
        Divides the sum of squares (``x.shape[axis]`` gives the root mean square).

    Returns
    -------
    float or ndarray
        A float when ``axis`` is ``None`` and not ``keepdims``.
    """
    u, e = power_of_two_split(np.asarray(x, dtype=np.float64), axis)
    norm = np.ldexp(np.sqrt((u * u).sum(axis=axis, keepdims=True) / divisor), e)
    if keepdims:
        return norm
    return float(norm.item()) if axis is None else norm.squeeze(axis=axis)


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
