"""Module-level tasks for tests/test_executors.py: spawned processes and Dask workers
import this module by name (pytest puts tests/ on sys.path, and spawned children
inherit the parent's sys.path)."""

from __future__ import annotations

import os

import numpy as np


class TaskFailed(Exception):
    """Raised by :func:`fail_on` (a type of the tests' own, to check it comes back)."""


def square_plus(x: int, y: int) -> int:
    """``x * x + y``."""
    return x * x + y


def total_plus(values: np.ndarray, y: float) -> float:
    """``values.sum() + y``."""
    return float(np.sum(values)) + y


def fail_on(x: int, bad: int) -> int:
    """``x``, or :class:`TaskFailed` when ``x == bad``."""
    if x == bad:
        raise TaskFailed(f"task {x} failed")
    return x


def train_tiny(seed: int) -> np.ndarray:
    """A seeded torch training loop (a small MLP, 30 SGD steps with momentum): its final
    weights.

    The steps are written out rather than taken by ``torch.optim.SGD``: a torch optimizer's
    first step imports ``torch._dynamo`` (about 5 s of CPU here), in every worker process
    of the executors' tests, while what is tested is the workers' results, not torch's
    optimizers."""
    import torch

    torch.manual_seed(seed)
    X = torch.randn(64, 8)
    y = (X[:, 0] - X[:, 1] > 0).long()
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    params = list(net.parameters())
    velocity = [torch.zeros_like(p) for p in params]
    for _ in range(30):
        idx = torch.randperm(64)[:16]
        net.zero_grad()
        torch.nn.functional.cross_entropy(net(X[idx]), y[idx]).backward()
        with torch.no_grad():
            for p, v in zip(params, velocity, strict=True):
                v.mul_(0.9).add_(p.grad)
                p.sub_(0.1 * v)
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy()


def worker_state() -> dict:
    """The process id, pinned device and torch threads of the process running this."""
    import torch

    from topofl_lib.core.device import pinned_device

    return {"pid": os.getpid(), "device": pinned_device(default=None),
            "threads": torch.get_num_threads()}


def meet_at_barrier(barrier) -> dict:
    """Wait until ``barrier.parties`` calls run at once; then :func:`worker_state`.

    Only calls running in different single-threaded workers can meet, so the pids of
    the calls that pass are those of different worker processes."""
    barrier.wait(timeout=60)
    return worker_state()


def meet_at_dask_event(mine: str, other: str) -> dict:
    """Set the Dask event ``mine``, wait for ``other``; then :func:`worker_state`.

    Two calls meet only when both run at once: on two single-threaded Dask workers."""
    from distributed import Event

    Event(mine).set()
    if not Event(other).wait(timeout=60):
        raise TimeoutError(f"event {other!r} was never set: the calls did not run at once")
    return worker_state()


def healthcare_with_a_helper(seed: int, parent: int, marker: str, bad: int | None = None):
    """The healthcare scenario of ``seed``. In a process other than ``parent`` (a helper
    of the runner's local pool) it first creates the file ``marker``, and raises
    :class:`TaskFailed` for ``seed == bad``; in ``parent``, seeds 2 and above wait for
    ``marker`` (at most 120 s), so that a helper computes some runs however short."""
    import time
    from pathlib import Path

    from topofl_lib.data import make_scenario

    if os.getpid() != parent:
        Path(marker).touch()
        if seed == bad:
            raise TaskFailed(f"seed {seed} failed in a helper")
    elif seed >= 2:
        deadline = time.monotonic() + 120
        while not Path(marker).exists():
            if time.monotonic() > deadline:
                raise TimeoutError("no helper built a scenario in 120 s")
            time.sleep(0.01)
    return make_scenario("healthcare", n_clients=4, n_adversarial=1, random_state=seed)
