"""The environment a run happens in: package versions, the machine, the code's git state.

``python -m topofl_lib reproduce`` records, for each notebook it publishes, the
environment the notebook ran in, in ``results/environment.json`` beside the claim files
(:func:`add_notebook` builds the file's content; :mod:`topofl_lib.publish` writes it
with the notebook's other outputs, all or nothing). The file holds::

    {"notebooks": {"<name>": {"profile": ..., "finished": <ISO 8601, UTC>,
                              "git": {"commit": ..., "dirty": ..., "changed": [...]},
                              "workers": ..., "environment": "<id>"}, ...},
     "environments": {"<id>": <machine_record()>, ...}}

where each distinct environment (:func:`machine_record`: Python, every installed package
and its version, OS, CPU model and cores, memory, torch's threads) is stored once, under
a hash of its content, and only while a notebook refers to it.

The package's own version comes from the installed distribution's metadata
(:func:`distribution_version`); ``pyproject.toml`` is its one source.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "DISTRIBUTION",
    "ENVIRONMENT_FILE",
    "add_notebook",
    "blas_kernels",
    "cpu_model",
    "cpu_signature",
    "distribution_version",
    "git_state",
    "machine_record",
    "package_versions",
    "run_record",
]

#: The distribution (``pip install topofl``) this package comes from.
DISTRIBUTION = "topofl"
#: The environment record's file name, in a results folder.
ENVIRONMENT_FILE = "environment.json"
#: Environment variables that set how many threads the numerical libraries use.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "NUMBA_NUM_THREADS")
#: Folders whose changes do not make the code dirty (reproduce writes them itself).
OUTPUT_FOLDERS = ("figures", "results")


def distribution_version(name: str = DISTRIBUTION) -> str:
    """The installed version of distribution ``name``; ``"0+unknown"`` when not installed.

    ``topofl_lib.__version__`` is ``distribution_version()``: ``pyproject.toml`` holds the
    version, and installing the package (``pip install -e .``) puts it in the metadata.
    """
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def package_versions(names: Iterable[str] | None = None) -> dict[str, str | None]:
    """Distribution name -> installed version (``None``: not installed).

    Parameters
    ----------
    names : iterable of str, optional
        The distributions to look up, in the order given. Default: every installed
        distribution, sorted by lower-cased name.

    Returns
    -------
    dict
    """
    if names is None:
        found = {d.metadata["Name"]: d.version for d in importlib.metadata.distributions()
                 if d.metadata["Name"]}
        return {name: found[name] for name in sorted(found, key=str.lower)}
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _cpuinfo(keys: tuple[str, ...]) -> dict[str, str]:
    """The first processor's ``keys`` in ``/proc/cpuinfo`` (empty where there is none)."""
    found: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in keys:
                    found.setdefault(key.strip(), value.strip())
                elif not line.strip() and found:  # the first processor is enough
                    break
    except OSError:
        pass
    return found


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`)."""
    return (_cpuinfo(("model name",)).get("model name") or platform.processor()
            or platform.machine() or "unknown")


def cpu_signature() -> str:
    """The CPU as a run's numbers can depend on it, for the run's record.

    The same code, data and library versions can round differently on another CPU: MKL
    and oneDNN choose their kernels by the processor. Runs of one table should share it.

    Returns
    -------
    str
        The model name, its x86 family, model and stepping where ``/proc/cpuinfo`` gives
        them, and the vector instruction set torch dispatches to when this process has
        imported torch (a deep run has; a tabular run computes without it), e.g.
        ``"Intel(R) Xeon(R) Processor (family 6, model 207, stepping 2); torch AVX512"``.
    """
    ids = _cpuinfo(("cpu family", "model", "stepping"))
    text = cpu_model()
    if ids:
        text += " (" + ", ".join(f"{k.removeprefix('cpu ')} {v}" for k, v in ids.items()) + ")"
    torch = sys.modules.get("torch")  # imported by every deep run; never imported here
    if torch is not None:
        text += f"; torch {torch.backends.cpu.get_cpu_capability()}"
    return text


def blas_kernels() -> dict[str, str]:
    """The kernel set each loaded BLAS chose for this processor, e.g. ``{"openblas":
    "Haswell"}``.

    OpenBLAS built with ``DYNAMIC_ARCH`` (NumPy's and SciPy's wheels) picks its kernels
    by the processor: ``Haswell`` on an AMD EPYC, ``SkylakeX`` on an Intel Xeon with
    AVX-512, and the two round sums differently. label_aware's tabular rows moved in the
    sixth digit between the two machines; on the AMD machine with
    ``OPENBLAS_CORETYPE=SkylakeX`` they are the Intel machine's to the last digit.

    Returns
    -------
    dict
        ``internal_api`` -> ``architecture`` of :func:`threadpoolctl.threadpool_info` for
        the BLAS libraries loaded in this process (empty where threadpoolctl is missing).
    """
    import numpy  # noqa: F401  (loads NumPy's BLAS, the one the runs use)

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return {}
    return {info["internal_api"]: str(info.get("architecture"))
            for info in threadpool_info() if info.get("user_api") == "blas"}


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (AttributeError, OSError, ValueError):
        return None


def _os_name() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", platform.platform())
    except OSError:
        return platform.platform()


def _torch() -> dict[str, Any] | None:
    """torch's version, default thread counts and CUDA device (None: not installed)."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    cuda = torch.cuda.is_available()
    return {"version": torch.__version__, "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(), "cuda": cuda,
            "device": torch.cuda.get_device_name(0) if cuda else None}


def machine_record() -> dict[str, Any]:
    """The software and the machine: what a rerun needs to match.

    Returns
    -------
    dict
        ``python`` (version, implementation), ``os``, ``platform``, ``cpu`` (model,
        logical cores, cores available to this process, the BLAS kernels:
        :func:`blas_kernels`), ``memory_gib``, ``torch``
        (version, ``threads`` and ``interop_threads`` a fresh process gets, CUDA; None
        without torch; the library's runs set their own count, one thread per run in
        :mod:`topofl_lib.experiments` and :mod:`topofl_lib.deep`), ``thread_variables``
        (those of :data:`THREAD_VARIABLES` that are set) and ``packages`` (every installed
        distribution and its version).
    """
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count()
    return {
        "python": {"version": platform.python_version(),
                   "implementation": platform.python_implementation()},
        "os": _os_name(),
        "platform": platform.platform(),
        "cpu": {"model": cpu_model(), "logical_cores": os.cpu_count(),
                "available_cores": available, "blas_kernels": blas_kernels()},
        "memory_gib": _memory_gib(),
        "torch": _torch(),
        "thread_variables": {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ},
        "packages": package_versions(),
    }


def _git(root: Path, *args: str) -> str | None:
    try:
        res = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout if res.returncode == 0 else None


def git_state(root) -> dict[str, Any]:
    """The commit checked out at ``root`` and whether the code differs from it.

    Parameters
    ----------
    root : path
        A folder of the checkout; the whole checkout is examined.

    Returns
    -------
    dict
        ``commit`` (None outside a git checkout or without git), ``dirty`` (tracked or
        untracked, not ignored, changes outside the top-level :data:`OUTPUT_FOLDERS`; None
        without a commit) and ``changed`` (those paths, relative to the checkout's root).
    """
    root = Path(root)
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None, "changed": []}
    excluded = [f":(top,exclude){folder}" for folder in OUTPUT_FOLDERS]
    status = _git(root, "status", "--porcelain", "--", ":(top)", *excluded) or ""
    changed = sorted(line[3:] for line in status.splitlines() if line.strip())
    return {"commit": commit.strip(), "dirty": bool(changed), "changed": changed}


def run_record(profile: str, git: Mapping[str, Any], workers: int | None = None
               ) -> dict[str, Any]:
    """What one notebook's run adds beside its environment: profile, time, code, workers.

    Parameters
    ----------
    profile : str
        The profile it ran under.
    git : dict
        :func:`git_state` of the checkout when the run started.
    workers : int, optional
        The ``--workers`` given to reproduce (None: each notebook's default).

    Returns
    -------
    dict
        With ``finished``, the current time in UTC (ISO 8601, seconds).
    """
    return {"profile": profile,
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "git": dict(git), "workers": workers}


def _environment_id(machine: Mapping[str, Any]) -> str:
    text = json.dumps(machine, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def add_notebook(document: Mapping[str, Any] | None, notebook: str,
                 run: Mapping[str, Any], machine: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` (an ``environment.json``'s content) with ``notebook``'s run recorded.

    Parameters
    ----------
    document : dict or None
        The current content (None or ``{}``: no file yet); not modified.
    notebook : str
        The notebook's name; its previous entry is replaced.
    run : dict
        :func:`run_record` of its run.
    machine : dict
        :func:`machine_record` of the environment it ran in.

    Returns
    -------
    dict
        The new content: environments no notebook refers to any more are dropped.
    """
    document = document or {}
    environments = dict(document.get("environments", {}))
    notebooks = dict(document.get("notebooks", {}))
    key = _environment_id(machine)
    environments[key] = dict(machine)
    notebooks[notebook] = {**run, "environment": key}
    used = {entry["environment"] for entry in notebooks.values()}
    return {"notebooks": dict(sorted(notebooks.items())),
            "environments": {k: v for k, v in sorted(environments.items()) if k in used}}
