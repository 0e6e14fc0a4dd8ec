"""Serial, parallel or batched: whether workers pay for the runs that are left.

Workers are not free: a spawned process imports torch and scikit-learn before its
first run (~1-2 s on two cores), so 100 runs of ~26 ms take 2.6 s in one process and
longer on a two-process pool. The runner times a pilot run in its own process and
asks :func:`choose_schedule` what to do with the rest:

* serial, when the executor has one worker, or when the remaining runs take less time
  in this process than the executor's estimated start-up
  (:attr:`~topofl_lib.runner.executors.Executor.startup_seconds`);
* parallel otherwise, in batches of runs that take at least :data:`MIN_BATCH_SECONDS`
  each (so that sending a task costs little beside its work), but never so large that
  a worker is left without one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._validation import check_choice, check_int, check_real
from ..prose import counted

__all__ = ["MIN_BATCH_SECONDS", "SCHEDULE_MODES", "Schedule", "choose_schedule"]

#: The shortest work a parallel task should carry, in seconds.
MIN_BATCH_SECONDS = 0.5
#: Parallel only for work of at least this many times the workers' start-up: below it, the
#: start-up, the hand-overs and the last batch waited for eat the gain (measured by
#: ``benchmarks/bench_executors.py``).
PAYOFF = 10
SCHEDULE_MODES = ("serial", "parallel")


@dataclass(frozen=True)
class Schedule:
    """How the runs left are executed.

    Attributes
    ----------
    mode : {"serial", "parallel"}
        In the calling process, or on the executor's workers.
    batch_size : int
        Runs per task (1 when serial).
    reason : str
        Why, in a sentence with the numbers it was decided on.
    """

    mode: str
    batch_size: int
    reason: str

    def __post_init__(self):
        check_choice(self.mode, "mode", SCHEDULE_MODES)
        check_int(self.batch_size, "batch_size", low=1)


def _seconds(x: float) -> str:
    """``2.6 s``, ``0.026 s``, ``140 s``: two significant digits."""
    return f"{x:.2g} s" if x < 100 else f"{x:.0f} s"


def choose_schedule(n_runs: int, seconds_per_run: float, executor,
                    startup: float | None = None, spawned: int | None = None) -> Schedule:
    """Serial or parallel, and how many runs per task, for the runs left.

    Parameters
    ----------
    n_runs : int
        Runs still to execute (the pilot runs excluded).
    seconds_per_run : float
        Seconds one run took in the calling process (a pilot).
    executor : Executor
        Where parallel runs would go; its ``name``, ``n_workers``, ``startup_seconds``
        and ``startup_phrase`` are read.
    startup : float, optional
        The start-up estimate to use instead of ``executor.startup_seconds`` (the
        runner reads it before it starts the workers in the background; 0 once they
        run).
    spawned : int, optional
        The processes the workers' start-up starts, where it is not ``n_workers`` (a
        local pool's calling process is one of its workers: ``n_workers - 1``).

    Returns
    -------
    Schedule
        ``"serial"`` (batch size 1) when one run or none is left, when the executor has
        one worker or when the runs' serial time is below :data:`PAYOFF` times its
        start-up estimate; else ``"parallel"`` with batches of
        ``ceil(MIN_BATCH_SECONDS / seconds_per_run)`` runs, at least 1 and at most
        ``ceil(n_runs / n_workers)``.

    Examples
    --------
    >>> from topofl_lib.runner.executors import ProcessExecutor
    >>> choose_schedule(99, 0.026, ProcessExecutor(2)).reason
    'serial: 99 runs of ~0.026 s (2.6 s) do not pay for starting 2 worker processes (~3 s)'
    >>> s = choose_schedule(4000, 0.026, ProcessExecutor(2))
    >>> s.mode, s.batch_size
    ('parallel', 20)
    """
    check_int(n_runs, "n_runs", low=0)
    seconds_per_run = check_real(seconds_per_run, "seconds_per_run", low=0.0)
    n_workers = int(executor.n_workers)
    runs = f"{counted(n_runs, 'run')} of ~{_seconds(seconds_per_run)}"
    serial_time = n_runs * seconds_per_run
    if n_runs == 0:
        return Schedule("serial", 1, "serial: no runs left")
    if n_runs == 1:  # no second run to compute beside it
        return Schedule("serial", 1, f"serial: 1 run of ~{_seconds(seconds_per_run)} left")
    if n_workers == 1:
        return Schedule("serial", 1, f"serial: {runs}, and the {executor.name} executor "
                                     "has 1 worker")
    startup = float(executor.startup_seconds if startup is None else startup)
    # only the processes to be started: a local executor's own process is one of its workers
    n_started = n_workers if spawned is None else check_int(spawned, "spawned", low=0)
    what = executor.startup_phrase.format(n=n_started, es="es" if n_started != 1 else "")
    if serial_time < PAYOFF * startup:
        return Schedule("serial", 1, f"serial: {runs} ({_seconds(serial_time)}) do not pay "
                                     f"for {what} (~{_seconds(startup)})")
    per_worker = math.ceil(n_runs / n_workers)
    wanted = (per_worker if seconds_per_run == 0
              else math.ceil(round(MIN_BATCH_SECONDS / seconds_per_run, 9)))
    batch = max(1, min(wanted, per_worker))
    return Schedule("parallel", batch,
                    f"parallel: {runs} ({_seconds(serial_time)}) on {n_workers} workers "
                    f"({executor.name}, start-up ~{_seconds(startup)}), "
                    f"{counted(batch, 'run')} per task")
