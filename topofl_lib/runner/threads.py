"""One thread of each kind per worker: a worker of the runner already has a core."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def one_thread_each() -> None:
    """Set torch's threads, the cubical persistence's and the BLAS and OpenMP libraries'
    to one, in this process.

    The runner's worker processes (local or Dask) call it when they start. torch's CPU
    kernels are run with one thread everywhere in this package, and
    :func:`~topofl_lib.topology.cubical_unionfind.pairs_batch` gives the same pairs for
    any thread count; a BLAS library may sum a long reduction in another order on
    another thread count, so a serial run (the BLAS default) and a worker's are compared
    bit for bit by the runner's tests and ``benchmarks/bench_executors.py``, not assumed
    equal. Without the BLAS limit a pTopoFL run's OpenBLAS calls take two threads each in
    two processes on two cores: the run took 47% longer beside another one than alone;
    with it, the deep workload's runs took as long on two workers as in one process (their
    seconds summed to 64.4 s against 64.6 s; ``docs/guide/speed.md``).
    """
    import torch
    from threadpoolctl import threadpool_limits

    from ..topology.cubical_unionfind import set_persistence_threads

    torch.set_num_threads(1)
    set_persistence_threads(1)
    threadpool_limits(1)


@contextmanager
def one_thread_each_meanwhile() -> Iterator[None]:
    """:func:`one_thread_each` for a ``with`` block (this process computes beside worker
    processes), then the counts as they were.

    Yields
    ------
    None
    """
    import torch
    from threadpoolctl import threadpool_limits

    from ..topology.cubical_unionfind import persistence_threads_limited

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1), persistence_threads_limited(1):
            yield
    finally:
        torch.set_num_threads(saved)
