"""The set-up every worker process of the runner runs once: the local pool's workers,
the helpers and Dask's workers alike."""

from __future__ import annotations

from ..core.device import pin_device
from .malloc import restore_malloc
from .threads import one_thread_each

__all__ = ["set_up_worker"]


def set_up_worker(device: str) -> None:
    """Set this worker process up: one thread of each kind
    (:func:`~topofl_lib.runner.threads.one_thread_each`), glibc's allocator as without
    Dask's environment (:func:`~topofl_lib.runner.malloc.restore_malloc`), and
    ``device`` pinned.

    Parameters
    ----------
    device : str
        The device this worker computes on, e.g. ``"cpu"`` or ``"cuda:1"``.
    """
    one_thread_each()
    restore_malloc()
    pin_device(device)
