"""Execute a plan: pilot runs timed first, then the rest serially or batched.

The first two runs to compute are *pilots*, timed (the first pays one-time costs:
imports, compilation); from the second's time,
:func:`~topofl_lib.runner.schedule.choose_schedule` decides whether the remaining runs
stay serial (short runs do not pay for starting workers) or go to the workers in
batches (each batch long enough to pay for handing it over). A first pilot of at least
:data:`LONG_RUN_SECONDS` is work, not one-time cost, and is timing enough: the second
pilot is skipped (at FedTopo's paper protocol a run takes minutes); a caller that knows a
run's duration (``seconds_per_run``) skips both, and every worker starts at once. Where
the workers can, they compute beside the pilots:

* a local pool on the CPU (``n_workers`` processes): this process is one of the workers
  (:mod:`.helpers`). It computes the pilots and then runs from the front of the list,
  while ``n_workers - 1`` helper processes take runs from the back; for a list of over
  :data:`~topofl_lib.runner.schedule.PAYOFF` runs, a first pilot that outlasts the
  helpers' start-up has them started while it runs;
* a Dask cluster computes every run, the pilots too (this process may have no GPU):
  while a pilot runs, the other workers compute runs from the end of the list, one
  after the other, and the next pilot, then the schedule's batches, are sent as soon as
  a pilot ends, so no worker waits for the pilots;
* a local pool of GPU workers (one device each) computes the rest after the pilots.

Records are yielded as runs finish; the workers have already written them to the run
store.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

from ..core.device import pinned
from .executors import Executor, ProcessExecutor
from .helpers import Helpers
from .plan import Plan
from .schedule import PAYOFF, Schedule, choose_schedule
from .tasks import RunSpec, forget_scenarios, run_batch
from .threads import one_thread_each_meanwhile

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
    try:
        if executor.name == "dask":  # a Dask cluster computes every run, the pilots too
            yield from _on_cluster(spec, todo, executor, schedule_out, seconds_per_run)
            return
        # this process runs pinned to the plan's device (it may compute in parallel too)
        with pinned(spec.device):
            if _shares_the_work(executor, spec):
                yield from _with_helpers(spec, todo, executor, schedule_out, seconds_per_run)
                return
            n_pilots, seconds, rest = 0, seconds_per_run, list(todo)
            while seconds_per_run is None and n_pilots < _n_pilots(len(todo)):
                item, seconds = _timed_here(spec, rest.pop(0))  # the second: a warm run
                yield item
                n_pilots += 1
                if seconds >= LONG_RUN_SECONDS:
                    break
            schedule = choose_schedule(len(rest), seconds, executor, executor.startup_seconds)
            if schedule_out is not None:
                schedule_out.append(schedule)
            if schedule.mode == "serial":
                for item in rest:
                    yield _timed_here(spec, item)[0]
            else:
                yield from _parallel(executor.share(spec), rest, executor, schedule)
    finally:
        forget_scenarios()


def _n_pilots(n_runs: int) -> int:
    """Pilots timed before the schedule of ``n_runs`` runs is chosen: two (the first
    pays one-time costs), or one for a list of two runs or fewer."""
    return 2 if n_runs > 2 else 1


def _on_cluster(spec: RunSpec, todo: list, executor: Executor, schedule_out: list | None,
                seconds_per_run: float | None) -> Iterator[tuple[int, int, dict]]:
    """Every run on a Dask cluster, the spec sent there once. The pilots are timed there
    (this process may have no GPU), and no worker waits for them: while a pilot runs,
    each other worker computes a run from the end of the list, and takes another as soon
    as it is done; the next pilot starts as soon as the last one ends, and once the
    schedule is chosen the remaining runs go in its batches."""
    shared = executor.share(spec)
    rest, seconds = list(todo), seconds_per_run
    wanted = 0 if seconds_per_run is not None else _n_pilots(len(todo))
    with executor.stream(run_batch) as stream:

        def send(batch: list, pilot: bool = False) -> None:
            stream.submit((batch, time.perf_counter() if pilot else None), (shared, batch))

        def schedule_rest() -> None:
            schedule = choose_schedule(len(rest), seconds, executor, executor.startup_seconds)
            if schedule_out is not None:
                schedule_out.append(schedule)
            for batch in _batches(rest, schedule.batch_size):
                send(batch)
            rest.clear()

        started = 0
        if wanted:
            send([rest.pop(0)], pilot=True)
            started = 1
            for _ in range(min(executor.n_workers - 1, len(rest) - int(wanted > 1))):
                send([rest.pop()])  # company, from the end (the front: the next pilot)
        else:
            schedule_rest()
        decided, n_pilots = not wanted, 0
        for (batch, t0), records in stream:
            # what comes next is sent before the records are handed on: the caller's
            # time with them is neither a pilot's nor a worker's idle time
            if not decided and t0 is not None:  # a pilot ended: the next one, or the rest
                n_pilots, seconds = n_pilots + 1, time.perf_counter() - t0
                if n_pilots < wanted and seconds < LONG_RUN_SECONDS and rest:
                    send([rest.pop(0)], pilot=True)
                    started += 1
                else:
                    schedule_rest()
                    decided = True
            elif not decided and len(rest) > int(started < wanted):  # keep this worker busy
                send([rest.pop()])
            for (seed, i, _), record in zip(batch, records, strict=True):
                yield seed, i, record


def _shares_the_work(executor: Executor, spec: RunSpec) -> bool:
    """Whether this process computes runs beside ``n_workers - 1`` helper processes: a
    local pool of several workers on the CPU (a GPU pool pins each worker to a device of
    its own, and keeps :meth:`ProcessExecutor.map_unordered <topofl_lib.runner.executors.\
ProcessExecutor.map_unordered>`)."""
    return (isinstance(executor, ProcessExecutor) and executor.n_workers > 1
            and spec.device == "cpu" and set(executor.devices) == {"cpu"})


def _with_helpers(spec: RunSpec, todo: list, executor: ProcessExecutor,
                  schedule_out: list | None, seconds_per_run: float | None
                  ) -> Iterator[tuple[int, int, dict]]:
    """The runs on this process and ``n_workers - 1`` helpers (:mod:`.helpers`): the pilots
    here first (for a list of over :data:`~.schedule.PAYOFF` runs, helpers started while a
    first pilot outlasts their start-up), then, when the schedule is parallel, this
    process from the front and the helpers from the back, in batches sized from this
    process's last run."""
    helpers = Helpers(spec, todo, executor.n_workers - 1, executor.devices[0])
    startup = executor.startup_seconds_per_worker * helpers.n_helpers
    timer = threading.Timer(startup, helpers.start)
    timer.daemon = True
    try:
        with one_thread_each_meanwhile():  # the pilots included
            n_pilots, seconds = 0, seconds_per_run
            if seconds_per_run is None and len(todo) > PAYOFF:
                timer.start()
            while seconds_per_run is None and n_pilots < _n_pilots(len(todo)):
                item, seconds = _timed_here(spec, helpers.take_front())
                timer.cancel()
                if timer.is_alive():
                    timer.join()  # the helpers have started, or will not by the timer
                yield item
                n_pilots += 1
                if seconds >= LONG_RUN_SECONDS or helpers.started:
                    break
            schedule = choose_schedule(helpers.left(), seconds, executor,
                                       0.0 if helpers.started else startup,
                                       spawned=helpers.n_helpers)
            if schedule_out is not None:
                schedule_out.append(schedule)
            if schedule.mode == "parallel":
                helpers.batch_size = schedule.batch_size
                helpers.start()
            while (run := helpers.take_front()) is not None:
                item, seconds = _timed_here(spec, run)
                yield item
                helpers.batch_size = choose_schedule(helpers.left(), seconds, executor,
                                                     0.0).batch_size
                yield from helpers.done(block=False)
            yield from helpers.done(block=True)
    finally:
        timer.cancel()
        helpers.close()


def _timed_here(spec: RunSpec, run: tuple) -> tuple[tuple[int, int, dict], float]:
    """``run`` computed in this process: ``(seed, run index, record)`` and its seconds."""
    start = time.perf_counter()
    (record,) = run_batch(spec, [run])
    return (run[0], run[1], record), time.perf_counter() - start


def _parallel(spec, todo: list, executor: Executor,
              schedule: Schedule) -> Iterator[tuple[int, int, dict]]:
    """``todo`` in batches on ``executor``; ``(seed, run, record)`` as batches finish.
    ``spec`` is the run spec or what :meth:`Executor.share` made of it."""
    batches = _batches(todo, schedule.batch_size)
    for b, records in executor.map_unordered(run_batch, [(spec, batch) for batch in batches]):
        for (seed, i, _), record in zip(batches[b], records, strict=True):
            yield seed, i, record
