"""One thread of each kind per worker: a worker of the runner already has a core."""

from __future__ import annotations


def one_thread_each() -> None:
    """Set torch's threads and the cubical persistence's to one, in this process.

    The runner's worker processes (local or Dask) call it when they start; a run's
    numbers do not depend on either count (torch's CPU kernels are run with one thread
    everywhere in this package, and :func:`~topofl_lib.topology.cubical_unionfind.pairs_batch`
    gives the same pairs for any thread count).
    """
    import torch

    from ..topology.cubical_unionfind import set_persistence_threads

    torch.set_num_threads(1)
    set_persistence_threads(1)
