"""Local runs on every worker, this process included: helper processes share the list.

With ``n_workers=n`` on one machine (a :class:`~topofl_lib.runner.executors.ProcessExecutor`
on the CPU), the calling process is one of the ``n`` workers. It computes runs from the
front of the list, the pilots first, while ``n - 1`` *helper* processes take runs from the
back, each its next batch only when it has finished one (and its first only once its
process is up), until the two ends meet: the last runs go to whoever is free, and the
workers finish together. For a list long enough to pay for helpers, a first pilot that
outlasts their start-up has them started while it runs, so that no core waits for it.
Each helper receives the comparison's spec once, when it starts (a copy of its data in
each helper's memory).

The numbers are those of one process: a run is computed by the same function
(:func:`~topofl_lib.runner.tasks.run_batch`) with one torch, persistence, BLAS and OpenMP
thread wherever it runs, this process included (the runner's tests and
``benchmarks/bench_executors.py`` compare the results with a serial run's bit for bit).
"""
from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Iterator

from .tasks import RunSpec, run_batch
from .worker import set_up_worker

__all__ = ["Helpers"]

_SPEC: list = []  # in a helper process: the spec it was started with


def _start_helper(spec: RunSpec, device: str) -> None:
    """A helper process's set-up: a worker's on ``device``
    (:func:`~topofl_lib.runner.worker.set_up_worker`), and the comparison's spec."""
    set_up_worker(device)
    _SPEC[:] = [spec]


def _helper_batch(items: list) -> list[dict]:
    """Compute ``items`` in a helper process with the spec it was started with."""
    return run_batch(_SPEC[0], items)


def _ready() -> bool:
    """Nothing: returns once a helper process has started (and run its set-up)."""
    return True


#: A helper's environment: one thread in every BLAS and OpenMP library it loads (numpy,
#: scipy and scikit-learn each ship their own), as joblib gives its workers.
HELPER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class Helpers:
    """The runs left, shared between this process and ``n_helpers`` helper processes.

    Parameters
    ----------
    spec : RunSpec
        The comparison.
    todo : list of tuple
        The runs to compute, ``(seed, run index, key)``, in order.
    n_helpers : int
        Helper processes to start (at least 1).
    device : str
        The helpers' device.

    Attributes
    ----------
    batch_size : int
        Runs a helper takes at a time (set by the caller from its runs' time).
    """

    def __init__(self, spec: RunSpec, todo: list, n_helpers: int, device: str = "cpu"):
        self.spec, self.n_helpers, self.device = spec, n_helpers, device
        self._todo = deque(todo)
        self._lock = threading.Lock()
        self._out: queue.Queue = queue.Queue()
        self._pool = None
        self._taken = 0  # batches the helpers took whose records the caller has not had
        self.batch_size = 1

    # -- the list ----------------------------------------------------------------------
    def take_front(self) -> tuple | None:
        """The next run for this process, or ``None`` when none is left."""
        with self._lock:
            return self._todo.popleft() if self._todo else None

    def _take_back(self) -> list:
        with self._lock:
            items = [self._todo.pop() for _ in range(min(self.batch_size, len(self._todo)))]
            self._taken += bool(items)
        return items[::-1]

    def left(self) -> int:
        """Runs not yet taken by anyone."""
        with self._lock:
            return len(self._todo)

    # -- the helpers -------------------------------------------------------------------
    @property
    def started(self) -> bool:
        """Whether the helper processes were started."""
        return self._pool is not None

    def start(self) -> None:
        """Start the helper processes (once; from any thread), each fed by a thread here
        that hands it its next batch when it returns one; a helper takes its first batch
        once its process is up, so this process never waits for a helper's start-up."""
        from joblib.externals.loky import ProcessPoolExecutor

        with self._lock:
            if self._pool is not None or not self._todo:
                return
            self._pool = ProcessPoolExecutor(  # loky's: no re-import of the __main__ script
                self.n_helpers, initializer=_start_helper, initargs=(self.spec, self.device),
                env=HELPER_ENV)
        for _ in range(self.n_helpers):
            threading.Thread(target=self._feed, daemon=True,
                             name="topofl-helper-feed").start()

    def _feed(self) -> None:
        try:
            self._pool.submit(_ready).result()
            while items := self._take_back():
                self._out.put(("records", items, self._pool.submit(
                    _helper_batch, items).result()))
        except BaseException as exc:  # noqa: BLE001 (raised again in the caller's thread)
            self.stop()
            self._out.put(("error", None, exc))

    def done(self, block: bool) -> Iterator[tuple[int, int, dict]]:
        """``(seed, run, record)`` of the helpers' finished batches: those waiting now, or
        (``block``) every batch a helper took, waiting for them. A helper's error is
        raised here, with its type."""
        while True:
            try:
                kind, items, value = self._out.get(block=False)
            except queue.Empty:
                with self._lock:
                    if not (block and self._taken):
                        return
                kind, items, value = self._out.get()  # a taken batch always reports
            if kind == "error":
                raise value
            with self._lock:
                self._taken -= 1
            for (seed, i, _), record in zip(items, value, strict=True):
                yield seed, i, record

    def stop(self) -> None:
        """Hand out nothing more."""
        with self._lock:
            self._todo.clear()

    def close(self) -> None:
        """Stop, and end the helper processes (a batch still computing is dropped: the
        runs a helper finished are in the run store already)."""
        self.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=False, kill_workers=True)
