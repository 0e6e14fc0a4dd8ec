"""Local runs on every worker, this process included: helper processes share the list.

With ``n_workers=n`` on one machine (a :class:`~topofl_lib.runner.executors.ProcessExecutor`
on the CPU), the calling process is one of the ``n`` workers. It computes runs from the
front of the list, the pilots first, while ``n - 1`` *helper* processes take runs from the
back, each its next batch only when it has finished one, until the two ends meet. So no
core waits while the pilots are timed (a first pilot that outlasts the helpers' start-up
has them started while it runs), and the last runs go to whoever is free: the workers
finish together. Each helper receives the comparison's spec once, when it starts.

The numbers are those of one process: a run is computed by the same function
(:func:`~topofl_lib.runner.tasks.run_batch`) with one torch thread and one persistence
thread wherever it runs (this process, too, while helpers may run), and one BLAS thread.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Iterator

from ..core.device import pin_device
from .tasks import RunSpec, run_batch
from .threads import one_thread_each, one_thread_each_meanwhile

__all__ = ["Helpers"]

_SPEC: list = []  # in a helper process: the spec it was started with


def _start_helper(spec: RunSpec, device: str) -> None:
    """A helper process's set-up: one torch and one persistence thread, its device, the
    comparison's spec."""
    one_thread_each()
    pin_device(device)
    _SPEC[:] = [spec]


def _helper_batch(items: list) -> list[dict]:
    """Compute ``items`` in a helper process with the spec it was started with."""
    return run_batch(_SPEC[0], items)


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
    """

    def __init__(self, spec: RunSpec, todo: list, n_helpers: int, device: str = "cpu"):
        self.spec, self.n_helpers, self.device = spec, n_helpers, device
        self._todo = deque(todo)
        self._lock = threading.Lock()
        self._out: queue.Queue = queue.Queue()
        self._pool = None
        self._running = 0
        self.batch_size = 1

    # -- the list ----------------------------------------------------------------------
    def take_front(self) -> tuple | None:
        """The next run for this process, or ``None`` when none is left."""
        with self._lock:
            return self._todo.popleft() if self._todo else None

    def _take_back(self) -> list:
        with self._lock:
            return [self._todo.pop() for _ in range(min(self.batch_size, len(self._todo)))
                    ][::-1]

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
        that hands it its next batch when it returns one."""
        from joblib.externals.loky import ProcessPoolExecutor

        with self._lock:
            if self._pool is not None or not self._todo:
                return
            self._pool = ProcessPoolExecutor(  # loky's: no re-import of the __main__ script
                self.n_helpers, initializer=_start_helper, initargs=(self.spec, self.device))
            self._running = self.n_helpers
        for _ in range(self.n_helpers):
            threading.Thread(target=self._feed, daemon=True,
                             name="topofl-helper-feed").start()

    def _feed(self) -> None:
        try:
            while items := self._take_back():
                self._out.put(("records", items, self._pool.submit(
                    _helper_batch, items).result()))
        except BaseException as exc:  # noqa: BLE001 (raised again in the caller's thread)
            self.stop()
            self._out.put(("error", None, exc))
        finally:
            self._out.put(("exit", None, None))

    def done(self, block: bool) -> Iterator[tuple[int, int, dict]]:
        """``(seed, run, record)`` of the helpers' finished batches: those waiting now, or
        (``block``) all of them, waiting for every helper to finish."""
        while self._running:
            try:
                kind, items, value = self._out.get(block=block)
            except queue.Empty:
                return
            if kind == "error":
                raise value
            if kind == "exit":
                self._running -= 1
                continue
            for (seed, i, _), record in zip(items, value, strict=True):
                yield seed, i, record

    def stop(self) -> None:
        """Hand out nothing more (a helper finishes the batch it has)."""
        with self._lock:
            self._todo.clear()

    def close(self) -> None:
        """Stop, and let the helper processes exit once their batch is done."""
        self.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def computing(self):
        """A context in which this process computes with one thread of each kind (the
        helpers have the other cores): :func:`~.threads.one_thread_each_meanwhile`."""
        return one_thread_each_meanwhile()
