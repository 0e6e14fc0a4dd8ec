"""A store of finished runs on disk, so long multi-seed experiments resume.

:func:`topofl_lib.experiments.run_comparison` with ``cache_dir=`` saves every finished
run (one method on one seed) as one file, written atomically (to a temporary file in
the same folder, then ``os.replace``), and skips the runs whose file exists. A run is
keyed by :func:`fingerprint` of its *complete* configuration: the realised scenario
(every client's arrays, labels, attacks, the scenario's metadata and schedule), the
method's name and parameters (nested estimators by their parameters), the number of
rounds, the seed, :data:`RUN_CACHE_VERSION` and the versions of the libraries the
numbers depend on. Anything that can change a number changes the key, so a stored
result is never reused for a different configuration; changing a parameter simply
computes new runs next to the old ones.

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
import os
import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np

from .environment import package_versions

__all__ = ["ENV_CACHE", "RUN_CACHE_VERSION", "RunCache", "default_cache_dir", "fingerprint"]

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
        _feed(h, obj.get_params(deep=False), memo)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        tag(f"dataclass:{type(obj).__module__}.{type(obj).__qualname__}")
        _feed(h, {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}, memo)
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


class RunCache:
    """Finished runs in ``folder``, one pickle per key, written atomically.

    Parameters
    ----------
    folder : str or Path
        Created on first store.
    """

    def __init__(self, folder):
        if not isinstance(folder, (str, os.PathLike)):
            raise TypeError(f"cache_dir must be a path, got {folder!r}")
        self.folder = Path(folder)

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.pkl"

    def __contains__(self, key: str) -> bool:
        return self.path(key).exists()

    def load(self, key: str) -> dict:
        with open(self.path(key), "rb") as fh:
            record = pickle.load(fh)
        if record.get("key") != key:
            raise ValueError(f"{self.path(key)} holds another run; delete it")
        return record

    def store(self, key: str, record: dict) -> None:
        """Write ``record`` (with ``key`` added) to its file: temp file, then rename.

        Parameters
        ----------
        key : str
            The run's key.
        record : dict
            The run's results (picklable).
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{key[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump({**record, "key": key}, fh, protocol=pickle.HIGHEST_PROTOCOL)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
