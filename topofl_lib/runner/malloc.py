"""glibc's allocator given back its room in a worker process that Dask's environment
reached.

Dask's nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``, and creating a
``LocalCluster`` also writes that variable (with ``OMP_NUM_THREADS=1`` and the like)
into the environment of the process that creates it, so every process that process
starts afterwards inherits it: the runner's local worker processes too, when a user
started a Dask cluster in the same notebook first. :func:`restore_malloc` is part of
:func:`~topofl_lib.runner.worker.set_up_worker`, which every worker process of the runner
runs (Dask's plugin, the local pool, the helpers).
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["restore_malloc"]

#: glibc's ``mallopt`` parameters, and what :func:`restore_malloc` sets them to: the
#: largest mmap threshold glibc allows on 64 bits, and a trim threshold above it.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_TRIM_BYTES, _MMAP_BYTES = 128 * 2**20, 32 * 2**20


def restore_malloc() -> bool:
    """Undo, in this process, the ``MALLOC_TRIM_THRESHOLD_`` Dask's nanny starts workers
    with (64 KiB by default).

    Setting it turns glibc's dynamic mmap threshold off, so every freed block above
    128 KiB goes back to the system and the next allocation faults its pages in again:
    a training run of FedAvg on Fashion-MNIST (10 clients, 5 rounds) took 9.6-10.5 s with
    it and 4.0 s without it, on this machine. With the trim threshold at 128 MiB and the
    mmap threshold at 32 MiB (glibc's ``mallopt``) the run took 4.2 s; a worker keeps
    up to that much freed memory for reuse instead of returning it at once. Nothing is
    done without the variable, or without glibc's ``mallopt``.

    Returns
    -------
    bool
        Whether the thresholds were set.
    """
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):  # no glibc (musl has no mallopt)
        return False
    return (mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES) == 1
            and mallopt(_M_MMAP_THRESHOLD, _MMAP_BYTES) == 1)
