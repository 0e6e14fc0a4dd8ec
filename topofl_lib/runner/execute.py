"""Execute a plan: a pilot run here, then the rest serially or batched on an executor.

The first two runs to compute are *pilots*, run in this process and timed (the first
pays one-time costs: imports, compilation); from the second's time,
:func:`~topofl_lib.runner.schedule.choose_schedule` decides whether the remaining runs
stay serial (short runs do not pay for starting workers) or go to the executor in
batches (each batch long enough to pay for handing it over). A first pilot of at least
:data:`LONG_RUN_SECONDS` is work, not one-time cost, and is timing enough: the second
pilot is skipped, so that the workers do not wait for it (at FedTopo's paper protocol a
run takes minutes); a caller that knows a run's duration (``seconds_per_run``) skips both,
and every worker starts at once. Records are yielded as runs finish; the workers have
already written them to the run store.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import nullcontext

from ..core.device import pinned
from .executors import Executor
from .plan import Plan
from .schedule import Schedule, choose_schedule
from .tasks import RunSpec, forget_scenarios, run_batch

__all__ = ["LONG_RUN_SECONDS", "execute", "run_spec"]

#: A first pilot run at least this long (seconds) sets the schedule alone: one-time costs
#: (imports, compilation, a first scenario) take seconds, not this.
LONG_RUN_SECONDS = 30.0


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


def _pilot(spec: RunSpec, item: tuple, executor: Executor, shared) -> tuple[dict, float]:
    """Run ``item`` alone and time it: here, or on the cluster for a Dask executor (this
    process may have no GPU, and the cluster's workers are already running), with the
    spec sent there once (``shared``)."""
    start = time.perf_counter()
    if executor.name == "dask":  # noqa: SIM108 (one line each would hide the unpacking)
        ((_, (record,)),) = executor.map_unordered(run_batch, [(shared, [item])])
    else:
        (record,) = run_batch(spec, [item])
    return record, time.perf_counter() - start


def execute(plan: Plan, spec: RunSpec, executor: Executor,
            schedule_out: list | None = None, seconds_per_run: float | None = None
            ) -> Iterator[tuple[int, int, dict]]:
    """Compute the plan's remaining runs; yield ``(seed, run, record)`` as each finishes.

    The runs computed in this process run pinned to a device of the plan's kind
    (:func:`topofl_lib.core.device.pinned`), so that ``"auto"`` learners use it.

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
    seconds_per_run : float, optional
        One run's known duration: no pilot is timed, and the schedule of every run is
        chosen from it.

    Yields
    ------
    tuple
        ``(seed, run index, record)``.
    """
    todo = plan.todo
    if not todo:
        return
    here = executor.name != "dask"  # a Dask cluster computes every run, the pilot too
    shared = executor.share(spec)  # on a cluster its data travels once, not once per map
    try:  # this process runs pinned to the plan's device (it may compute in parallel too)
        with pinned(spec.device) if here else nullcontext():
            startup = executor.startup_seconds
            n_pilots, seconds = 0, seconds_per_run
            while seconds_per_run is None and n_pilots < (2 if len(todo) > 2 else 1):
                item = todo[n_pilots]  # the second pilot: a warm run
                record, seconds = _pilot(spec, item, executor, shared)
                yield item[0], item[1], record
                n_pilots += 1
                if seconds >= LONG_RUN_SECONDS:
                    break
            rest = todo[n_pilots:]
            schedule = choose_schedule(len(rest), seconds, executor, startup)
            if schedule_out is not None:
                schedule_out.append(schedule)
            if schedule.mode == "serial" and here:
                for item in rest:
                    (record,) = run_batch(spec, [item])
                    yield item[0], item[1], record
            else:
                yield from _parallel(shared, rest, executor, schedule)
    finally:
        forget_scenarios()


def _parallel(spec, todo: list, executor: Executor,
              schedule: Schedule) -> Iterator[tuple[int, int, dict]]:
    """``todo`` in batches on ``executor``; ``(seed, run, record)`` as batches finish.
    ``spec`` is the run spec or what :meth:`Executor.share` made of it."""
    batches = _batches(todo, schedule.batch_size)
    for b, records in executor.map_unordered(run_batch, [(spec, batch) for batch in batches]):
        for (seed, i, _), record in zip(batches[b], records, strict=True):
            yield seed, i, record
