"""A store of finished runs on disk, so long multi-seed experiments resume.

:func:`topofl_lib.runner.run_comparison` with ``cache_dir=`` saves every finished
run (one method on one seed) as one data-only file (:mod:`topofl_lib.storage`: JSON and
NumPy arrays, never a pickle, so opening a stored run cannot run code), written
atomically (to a temporary file in the same folder, then ``os.replace``), and skips the
runs whose file exists. A run is
keyed by :func:`fingerprint` of its *complete* configuration: the realised scenario
(every client's arrays, labels, attacks, the scenario's metadata and schedule), the
method's name and parameters (nested estimators by their parameters), the number of
rounds, the seed, :data:`RUN_CACHE_VERSION` and the versions of the libraries the
numbers depend on. Anything that can change a number changes the key, so a stored
result is never reused for a different configuration; changing a parameter simply
computes new runs next to the old ones.

A dataclass field added later, whose default computes what the code computed before
it existed, is flagged :data:`~topofl_lib.core.containers.UNKEYED_AT_DEFAULT` and left
out of the key while it holds that default (``Client.load_noise_sd``): the stored runs
keep their keys, and any other value is keyed. An estimator's class names such
parameters in its ``unkeyed_at_default`` attribute (``FedTopo.image_backend``).

Bump :data:`RUN_CACHE_VERSION` whenever the code changes what a run computes for the
same configuration (a bug fix, a new default).

Where: :func:`default_cache_dir` (``$TOPOFL_CACHE_DIR/<notebook>/<profile>``, by
default ``<repository>/build/runs/<notebook>/<profile>``), outside every notebook's
output folder, so staged or re-run outputs never lose finished runs. Deleting the
folder forgets them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import os
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np

from . import storage
from .core.containers import UNKEYED_AT_DEFAULT
from .environment import package_versions
from .storage import StoredDataError

__all__ = ["ENV_CACHE", "RUN_CACHE_VERSION", "DamagedRunError", "RunCache", "default_cache_dir",
           "fingerprint"]

#: Bumped whenever a run's numbers change for an unchanged configuration.
RUN_CACHE_VERSION = 1

#: Environment variable overriding the root of :func:`default_cache_dir`.
ENV_CACHE = "TOPOFL_CACHE_DIR"

#: Libraries whose version is part of every key (``None`` when not installed).
KEYED_PACKAGES = ("numpy", "scipy", "scikit-learn", "pandas", "torch", "numba", "gudhi",
                  "cripser", "ripser", "persim")


def default_cache_dir(notebook: str, profile: str) -> Path:
    """``$TOPOFL_CACHE_DIR/<notebook>/<profile>``, else ``<repository>/build/runs/...``.

    The repository is the folder holding ``topofl_lib`` when it has a ``pyproject.toml``
    (a source checkout); an installed package uses ``./build/runs`` instead.

    Parameters
    ----------
    notebook : str
        The notebook's name (a non-empty folder name).
    profile : str
        The run profile (a non-empty folder name).

    Returns
    -------
    Path
        The cache folder (not created).
    """
    for name, value in (("notebook", notebook), ("profile", profile)):
        if not isinstance(value, str) or not value or os.sep in value:
            raise ValueError(f"{name} must be a non-empty folder name, got {value!r}")
    root = os.environ.get(ENV_CACHE)
    if root is None:
        repo = Path(__file__).resolve().parent.parent
        root = (repo if (repo / "pyproject.toml").exists() else Path.cwd()) / "build" / "runs"
    return Path(root) / notebook / profile


def environment() -> dict:
    """Python and :data:`KEYED_PACKAGES` versions (part of every key)."""
    return {"python": sys.version_info[:2], "packages": package_versions(KEYED_PACKAGES),
            "run_cache_version": RUN_CACHE_VERSION}


def _keyed_fields(obj) -> dict:
    """A dataclass's fields as the key sees them: every field, except one flagged
    :data:`~topofl_lib.core.containers.UNKEYED_AT_DEFAULT` while it holds its default
    (so adding such a field keeps the keys of everything stored before it)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)
            if not (f.metadata.get(UNKEYED_AT_DEFAULT)
                    and f.default is not dataclasses.MISSING
                    and _same_value(getattr(obj, f.name), f.default))}


def _keyed_params(estimator) -> dict:
    """An estimator's parameters as the key sees them: every parameter, except one its
    class names in ``unkeyed_at_default`` while it holds its ``__init__`` default (the
    same rule as a dataclass field's :data:`~topofl_lib.core.containers.UNKEYED_AT_DEFAULT`)."""
    params = estimator.get_params(deep=False)
    unkeyed = getattr(type(estimator), UNKEYED_AT_DEFAULT, ())
    if not unkeyed:
        return params
    defaults = inspect.signature(type(estimator).__init__).parameters
    return {name: value for name, value in params.items()
            if not (name in unkeyed and name in defaults
                    and _same_value(value, defaults[name].default))}


def _same_value(a, b) -> bool:
    """``a == b`` for plain values, compared by type as well (``False == 0`` is no match)."""
    return type(a) is type(b) and a == b


def _feed(h, obj, memo: dict) -> None:
    """Add a canonical encoding of ``obj`` to the hash ``h`` (arrays hashed once by id)."""
    from sklearn.base import BaseEstimator

    def tag(text: str) -> None:
        h.update(text.encode() + b"\0")

    if obj is None or isinstance(obj, (bool, str)):
        tag(f"{type(obj).__name__}:{obj}")
    elif isinstance(obj, int):
        tag(f"int:{obj}")
    elif isinstance(obj, float):
        tag(f"float:{obj.hex()}")
    elif isinstance(obj, np.generic):
        tag(f"np:{obj.dtype.str}")
        _feed(h, obj.item(), memo)
    elif isinstance(obj, np.ndarray):
        if id(obj) not in memo:
            sub = hashlib.sha256(f"{obj.dtype.str}{obj.shape}".encode())
            if obj.dtype == object:
                for x in obj.ravel():
                    _feed(sub, x, memo)
            else:
                sub.update(np.ascontiguousarray(obj).data)
            memo[id(obj)] = (obj, sub.digest())  # keep obj alive: its id stays unique
        tag("ndarray")
        h.update(memo[id(obj)][1])
    elif isinstance(obj, (list, tuple)):
        tag(f"{type(obj).__name__}[{len(obj)}]")
        for x in obj:
            _feed(h, x, memo)
    elif isinstance(obj, dict):
        tag(f"dict[{len(obj)}]")
        for k in sorted(obj, key=repr):
            _feed(h, k, memo)
            _feed(h, obj[k], memo)
    elif isinstance(obj, (set, frozenset)):
        _feed(h, sorted(obj, key=repr), memo)
    elif isinstance(obj, BaseEstimator):
        tag(f"estimator:{type(obj).__module__}.{type(obj).__qualname__}")
        _feed(h, _keyed_params(obj), memo)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        tag(f"dataclass:{type(obj).__module__}.{type(obj).__qualname__}")
        _feed(h, _keyed_fields(obj), memo)
    elif type(obj).__module__.startswith("pandas"):
        tag(f"pandas:{type(obj).__name__}")
        _feed(h, pickle.dumps(obj, protocol=4), memo)
    elif isinstance(obj, bytes):
        tag(f"bytes[{len(obj)}]")
        h.update(obj)
    elif type(obj).__module__ == "torch":
        _feed(h, obj.detach().cpu().numpy(), memo)
    else:
        raise TypeError(f"cannot fingerprint a {type(obj).__qualname__} ({obj!r:.80}); "
                        "give plain values, arrays, dataclasses or estimators, or run "
                        "without cache_dir")


def fingerprint(*objs) -> str:
    """Hex SHA-256 of a canonical encoding of ``objs`` (values, arrays, containers,
    dataclasses, scikit-learn estimators by their parameters)."""
    h = hashlib.sha256()
    memo: dict = {}
    for obj in objs:
        _feed(h, obj, memo)
    return h.hexdigest()


class DamagedRunError(StoredDataError):
    """A stored run cannot be read back (truncated, tampered with, of the wrong type)."""


#: What every stored run holds, with its type (``"diverged"`` and ``"model"`` may too).
RECORD_FIELDS = {"key": str, "curves": "DataFrame", "final": dict, "seconds": (int, float)}


class RunCache:
    """Finished runs in ``folder``, one data-only file per key, written atomically.

    Each run is ``<key>.npz``, written by :func:`topofl_lib.storage.dump`: JSON and
    NumPy arrays, read back with ``allow_pickle=False``, so opening a stored run never
    runs code. A file that cannot be read back, or is not a run of that key, raises
    :class:`DamagedRunError` naming it. Pickle files (the store's format before
    ``topofl-data/1``) are never opened: a store that still holds some warns once, and
    ``scripts/convert_run_store.py`` converts trusted ones.

    Parameters
    ----------
    folder : str or Path
        Created on first store.
    """

    suffix = ".npz"

    def __init__(self, folder):
        if not isinstance(folder, (str, os.PathLike)):
            raise TypeError(f"cache_dir must be a path, got {folder!r}")
        self.folder = Path(folder)
        legacy = sorted(self.folder.glob("*.pkl")) if self.folder.is_dir() else []
        if legacy:
            warnings.warn(f"{len(legacy)} pickle file(s) in {self.folder} are ignored and "
                          "never opened (stored runs are data-only .npz files now); "
                          "convert trusted ones with scripts/convert_run_store.py",
                          UserWarning, stacklevel=2)

    def path(self, key: str) -> Path:
        """The file of run ``key`` (a 64-digit hex fingerprint).

        Parameters
        ----------
        key : str
            The run's key.

        Returns
        -------
        Path
            ``folder / "<key>.npz"``.
        """
        if not (isinstance(key, str) and len(key) == 64
                and all(c in "0123456789abcdef" for c in key)):
            raise ValueError(f"key must be a 64-digit hex fingerprint, got {key!r:.80}")
        return self.folder / f"{key}{self.suffix}"

    def __contains__(self, key: str) -> bool:
        return self.path(key).exists()

    def load(self, key: str) -> dict:
        """The stored run ``key``, checked to be a run of that key.

        Parameters
        ----------
        key : str
            The run's key.

        Returns
        -------
        dict
            The record: ``key``, ``curves``, ``final``, ``seconds``, ``model`` and, for a
            diverged run, ``diverged``.

        Raises
        ------
        DamagedRunError
            The file cannot be read, or is not a run of ``key``; the message names the
            file and how to recompute it.
        """
        path = self.path(key)
        hint = ("delete it, or pass on_damaged='recompute' to run_comparison, to "
                "compute the run again")
        try:
            record = storage.load(path)
        except StoredDataError as exc:
            raise DamagedRunError(f"stored run {exc}; {hint}") from None
        problem = _record_problem(record, key)
        if problem:
            raise DamagedRunError(f"stored run {path}: {problem}; {hint}")
        return record

    def store(self, key: str, record: dict) -> None:
        """Write ``record`` (with ``key`` added) to its file: temp file, then rename.

        Parameters
        ----------
        key : str
            The run's key.
        record : dict
            The run's results: data that :func:`topofl_lib.storage.dump` stores.
        """
        record = {**record, "key": key}
        problem = _record_problem(record, key)
        if problem:
            raise ValueError(f"not a run record: {problem}")
        storage.dump(self.path(key), record)


def _record_problem(record, key: str) -> str:
    """What makes ``record`` not a stored run of ``key`` ("" when it is one)."""
    if not isinstance(record, dict):
        return f"holds a {type(record).__name__}, not a run record"
    for field, kind in RECORD_FIELDS.items():
        value = record.get(field)
        ok = (type(value).__name__ == kind if isinstance(kind, str)
              else isinstance(value, kind) and not isinstance(value, bool))
        if not ok:
            return f"field {field!r} is {type(value).__name__}, not a run's"
    if record["key"] != key:
        return f"holds run {record['key'][:16]}..., not {key[:16]}..."
    missing = set(CURVE_FIELDS) - set(record["curves"].columns)
    if missing:
        return f"its curves lack the columns {sorted(missing)}"
    return ""


#: Columns every stored run's ``curves`` has.
CURVE_FIELDS = ("round", "auc", "accuracy")
