"""The device this process computes on: one per process, pinned by whoever starts it.

A worker of :mod:`topofl_lib.runner.executors` (a spawned process or a Dask worker) is
pinned to one device when it starts (:func:`pin_device`); the torch learners then
resolve ``device="auto"`` to it (:func:`topofl_lib.deep.resolve_device`). Nothing is
pinned in a fresh process, and ``"auto"`` keeps its usual meaning there: CUDA when
available, else the CPU.

A device is a string: ``"cpu"``, ``"cuda"`` (the current CUDA device) or ``"cuda:N"``.
:func:`device_kind` is what may go into a run's key (a CPU run and a GPU run must never
share one); :func:`device_description` is what goes into a run's record.

torch is imported only where a CUDA device is asked about, so this module stays as light
as the rest of :mod:`topofl_lib.core`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["check_device", "device_description", "device_kind", "pin_device",
           "pinned", "pinned_device"]

_DEVICE = re.compile(r"cpu|cuda(:(0|[1-9][0-9]*))?")
#: The device this process is pinned to (empty: none).
_PINNED: list[str] = []


def check_device(device) -> str:
    """Validate a device string.

    Parameters
    ----------
    device : str
        ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Returns
    -------
    str
        ``device`` itself.

    Raises
    ------
    ValueError
        ``device`` is not one of these forms; the message names it.
    """
    if not isinstance(device, str) or _DEVICE.fullmatch(device) is None:
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    return device


def device_kind(device: str) -> str:
    """``"cpu"`` or ``"cuda"``: the kind of ``device``, what a run's key may hold.

    Parameters
    ----------
    device : str
        A device string (:func:`check_device`).

    Returns
    -------
    str
        ``"cpu"`` or ``"cuda"``.

    Examples
    --------
    >>> device_kind("cuda:1"), device_kind("cpu")
    ('cuda', 'cpu')
    """
    return check_device(device).split(":")[0]


def pin_device(device: str) -> None:
    """Pin this process to ``device``; ``"auto"`` learners then run there.

    For a CUDA device this also makes it torch's current device
    (``torch.cuda.set_device``) in the calling thread.

    Parameters
    ----------
    device : str
        ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Raises
    ------
    ValueError
        ``device`` is not a device string (the message names it).
    RuntimeError
        A CUDA device where torch sees no CUDA, or an index beyond the devices it sees.
    """
    check_device(device)
    if device_kind(device) == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError(f"cannot pin this process to {device!r}: torch sees no CUDA "
                               "device here (a CPU build of torch, no GPU, or "
                               "CUDA_VISIBLE_DEVICES hides them); pin it to 'cpu'")
        if ":" in device:
            index, count = int(device.split(":")[1]), torch.cuda.device_count()
            if index >= count:
                raise RuntimeError(f"cannot pin this process to {device!r}: torch sees "
                                   f"{count} CUDA device(s) here (cuda:0 to cuda:{count - 1})")
            torch.cuda.set_device(index)
    _PINNED[:] = [device]


def pinned_device(default: str | None = "cpu") -> str | None:
    """The device this process is pinned to.

    Parameters
    ----------
    default : str or None, default="cpu"
        What to return when nothing is pinned.

    Returns
    -------
    str or None
        The pinned device, else ``default``.
    """
    return _PINNED[0] if _PINNED else default


def device_description(device: str) -> str:
    """``device`` with the name of the hardware, for a run's record.

    Parameters
    ----------
    device : str
        A device string (:func:`check_device`).

    Returns
    -------
    str
        ``"cpu"``, or e.g. ``"cuda:0 (NVIDIA H100 80GB HBM3)"``; a CUDA device torch
        cannot see is described as ``"cuda:0 (not available)"``.

    Examples
    --------
    >>> device_description("cpu")
    'cpu'
    """
    if device_kind(device) == "cpu":
        return "cpu"
    import torch

    if not torch.cuda.is_available():
        return f"{device} (not available)"
    index = int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()
    if index >= torch.cuda.device_count():
        return f"{device} (not available)"
    return f"cuda:{index} ({torch.cuda.get_device_name(index)})"


@contextmanager
def pinned(device: str) -> Iterator[str]:
    """Pin this process to ``device`` for a ``with`` block, then restore what was pinned.

    A process already pinned to a device of the same kind keeps it (a worker pinned to
    ``"cuda:1"`` stays there for a ``"cuda"`` block).

    Parameters
    ----------
    device : str
        ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Yields
    ------
    str
        The device pinned inside the block.

    Examples
    --------
    >>> with pinned("cpu") as here:
    ...     here, pinned_device()
    ('cpu', 'cpu')
    """
    before = list(_PINNED)
    if not before or device_kind(before[0]) != device_kind(device):
        pin_device(device)
    try:
        yield _PINNED[0]
    finally:
        _PINNED[:] = before
