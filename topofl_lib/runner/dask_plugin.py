"""What :class:`topofl_lib.runner.executors.DaskExecutor` installs on Dask workers.

* :class:`DevicePinning`, a ``distributed.WorkerPlugin``: when a worker starts (or the
  plugin is registered), the runner's worker set-up
  (:func:`~topofl_lib.runner.worker.set_up_worker`) with that worker's device;
* :func:`run_pinned`, the task every call is wrapped in: one torch thread and the
  pinned CUDA device in the worker thread that runs it (both are per thread in torch:
  OpenMP's thread count and CUDA's current device), then the call.

Imports ``distributed``; :mod:`topofl_lib.runner.executors` imports this module only
when a Dask executor first runs something.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from distributed import WorkerPlugin

from ..core.device import device_kind, pin_device, pinned_device
from .worker import set_up_worker

__all__ = ["DEVICE_VARIABLE", "DevicePinning", "run_pinned"]

#: The environment variable that pins a Dask worker to a device, e.g.
#: ``CUDA_VISIBLE_DEVICES=1 TOPOFL_DEVICE=cuda:0 dask worker tcp://...``.
DEVICE_VARIABLE = "TOPOFL_DEVICE"


class DevicePinning(WorkerPlugin):
    """Pin each Dask worker process to one device, with one torch thread.

    The device: the worker's ``TOPOFL_DEVICE`` environment variable when set, else its
    entry in ``assignment`` (by worker address), else ``"cpu"``.

    Parameters
    ----------
    assignment : mapping of str to str, optional
        ``{worker address: device}``.
    """

    name = "topofl-device-pinning"

    def __init__(self, assignment: Mapping[str, str] | None = None):
        self.assignment = dict(assignment or {})

    def device_for(self, address: str) -> str:
        """The device of the worker at ``address`` (see the class docstring).

        Parameters
        ----------
        address : str
            The worker's address.

        Returns
        -------
        str
            A device string.
        """
        return os.environ.get(DEVICE_VARIABLE) or self.assignment.get(address, "cpu")

    def setup(self, worker) -> None:
        """Pin the worker process (called by the worker when the plugin arrives).

        Parameters
        ----------
        worker : distributed.Worker
            The worker.
        """
        set_up_worker(self.device_for(worker.address))


def run_pinned(fn: Callable, args: Sequence) -> Any:
    """``fn(*args)`` with one torch thread and the pinned device in this thread.

    Parameters
    ----------
    fn : callable
        The call.
    args : sequence
        Its arguments.

    Returns
    -------
    object
        What ``fn`` returned.
    """
    if "torch" in sys.modules:  # the plugin imported it; a call without torch needs none
        import torch

        torch.set_num_threads(1)
        device = pinned_device()
        if device_kind(device) == "cuda":
            pin_device(device)  # CUDA's current device is per thread
    return fn(*args)
