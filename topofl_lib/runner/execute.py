"""Execute a plan: a pilot run here, then the rest serially or batched on an executor.

The first run to compute is a *pilot*, run in this process and timed; from its time,
:func:`~topofl_lib.runner.schedule.choose_schedule` decides whether the remaining runs
stay serial (short runs do not pay for starting workers) or go to the executor in
batches (each batch long enough to pay for handing it over). Records are yielded as
runs finish; the workers have already written them to the run store.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

from ..core.device import device_kind, pin_device, pinned_device
from .executors import Executor
from .plan import Plan
from .schedule import Schedule, choose_schedule
from .tasks import RunSpec, forget_scenarios, run_batch

__all__ = ["execute", "run_spec"]


def run_spec(plan: Plan, keep_models: bool, on_divergence: str, slim_models: bool) -> RunSpec:
    """The :class:`~topofl_lib.runner.tasks.RunSpec` of ``plan``'s runs.

    Parameters
    ----------
    plan : Plan
        The planned comparison.
    keep_models : bool
        Return the fitted estimators.
    on_divergence : {"raise", "record"}
        What a diverging run does.
    slim_models : bool
        Keep models slim.

    Returns
    -------
    RunSpec
        What every batch of the comparison shares.
    """
    cache_dir = None if plan.cache is None else str(plan.cache.folder)
    return RunSpec(plan.scenario, plan.scenario_params, plan.runs, plan.n_rounds,
                   keep_models, on_divergence, cache_dir, plan.device, slim_models,
                   uuid.uuid4().hex)


def _batches(todo: list, size: int) -> list[list]:
    """``todo`` cut into consecutive batches of ``size`` (runs of one seed stay close)."""
    return [todo[k:k + size] for k in range(0, len(todo), size)]


def _pin_here(device: str) -> None:
    """Pin this process to a device of kind ``device`` unless it is already."""
    if device_kind(pinned_device()) != device:
        pin_device("cuda:0" if device == "cuda" else "cpu")


def execute(plan: Plan, spec: RunSpec, executor: Executor,
            schedule_out: list | None = None) -> Iterator[tuple[int, int, dict]]:
    """Compute the plan's remaining runs; yield ``(seed, run, record)`` as each finishes.

    Parameters
    ----------
    plan : Plan
        The planned comparison.
    spec : RunSpec
        Its shared configuration.
    executor : Executor
        Where the runs after the pilot go when parallel.
    schedule_out : list, optional
        Receives the :class:`~topofl_lib.runner.schedule.Schedule` chosen.

    Yields
    ------
    tuple
        ``(seed, run index, record)``.
    """
    todo = plan.todo
    if not todo:
        return
    _pin_here(spec.device)
    try:
        start = time.perf_counter()
        (record,) = run_batch(spec, todo[:1])
        yield todo[0][0], todo[0][1], record
        schedule = choose_schedule(len(todo) - 1, time.perf_counter() - start, executor)
        if schedule_out is not None:
            schedule_out.append(schedule)
        rest = todo[1:]
        if schedule.mode == "serial":
            for item in rest:
                (record,) = run_batch(spec, [item])
                yield item[0], item[1], record
            return
        yield from _parallel(spec, rest, executor, schedule)
    finally:
        forget_scenarios()


def _parallel(spec: RunSpec, todo: list, executor: Executor,
              schedule: Schedule) -> Iterator[tuple[int, int, dict]]:
    """``todo`` in batches on ``executor``; ``(seed, run, record)`` as batches finish."""
    batches = _batches(todo, schedule.batch_size)
    for b, records in executor.map_unordered(run_batch, [(spec, batch) for batch in batches]):
        for (seed, i, _), record in zip(batches[b], records, strict=True):
            yield seed, i, record
