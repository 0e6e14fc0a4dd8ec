"""Where the runs of a comparison are executed: in this process, on spawned worker
processes, or on a Dask cluster.

Every executor has one method, :meth:`Executor.map_unordered`: call a module-level
function on each argument tuple and yield ``(index, result)`` as each call finishes. An
exception raised by a call reaches the caller with its own type, and the calls not yet
started are cancelled. The numbers never depend on the executor: a worker computes a run
exactly as this process would, with one torch thread.

* :class:`SerialExecutor`: in this process, one call after the other;
* :class:`ProcessExecutor`: ``n_workers`` processes started with ``spawn`` on first use,
  each with one torch thread and pinned to one device (``devices``, e.g.
  ``["cuda:0", "cuda:1"]``, or ``["cuda:0", "cuda:0"]`` for two small runs sharing a
  GPU; default the CPU);
* :class:`DaskExecutor`: the workers of a Dask cluster (``distributed``), reached by
  the scheduler's address, a ``distributed.Client`` or a cluster object (a
  ``LocalCluster``, a ``dask_jobqueue`` cluster). Each worker is pinned to one device
  by a worker plugin (:mod:`topofl_lib.runner.dask_plugin`): its ``TOPOFL_DEVICE``
  environment variable when set (``CUDA_VISIBLE_DEVICES=1 TOPOFL_DEVICE=cuda:0 dask
  worker ...``), else ``devices`` by the worker's position among the cluster's workers
  (sorted addresses), else the CPU.

:func:`make_executor` turns what a user passes as ``executor=`` (a worker count, a Dask
address, a client, an executor) into an executor. The runner batches the runs itself
(:func:`topofl_lib.runner.tasks.run_batch`; :func:`topofl_lib.runner.schedule.choose_schedule`
picks the size).

Nothing heavy is imported here: ``torch`` and ``distributed`` load when an executor
first runs something.
"""

from __future__ import annotations

import abc
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from numbers import Integral
from typing import Any, ClassVar

from .._validation import check_int
from ..core.device import check_device, pin_device, pinned_device
from ..core.optional import require
from .threads import one_thread_each

__all__ = ["DASK_SCHEMES", "DaskExecutor", "Executor", "ProcessExecutor", "SerialExecutor",
           "make_executor"]

#: The address schemes of a Dask scheduler that :func:`make_executor` accepts.
DASK_SCHEMES = ("tcp://", "tls://", "ucx://", "inproc://")


class Executor(abc.ABC):
    """Runs calls of a module-level function, possibly elsewhere, and yields each result.

    Subclasses set :attr:`name`, :attr:`n_workers` and the start-up estimate that
    :func:`~topofl_lib.runner.schedule.choose_schedule` weighs against the runs' time.
    An executor is a context manager: leaving the ``with`` block calls :meth:`close`.

    Attributes
    ----------
    name : str
        ``"serial"``, ``"processes"`` or ``"dask"``.
    n_workers : int
        Calls that may run at once.
    startup_seconds_per_worker : float
        Estimated seconds the executor needs per worker before its first result.
    """

    name: ClassVar[str] = ""
    startup_seconds_per_worker: ClassVar[float] = 0.0
    #: How the start-up reads in a sentence: ``{n}`` the number of workers started, ``{es}``
    #: "es" unless it is 1 (for "process{es}").
    startup_phrase: ClassVar[str] = "starting {n} workers"
    n_workers: int = 1

    @property
    def startup_seconds(self) -> float:
        """Estimated seconds before the first parallel result: per worker times workers."""
        return self.startup_seconds_per_worker * self.n_workers

    @abc.abstractmethod
    def map_unordered(self, fn: Callable, args_list: Iterable[Sequence]
                      ) -> Iterator[tuple[int, Any]]:
        """Call ``fn(*args_list[i])`` for every ``i``; yield ``(i, result)`` as each ends.

        Parameters
        ----------
        fn : callable
            A module-level function (workers import it by name).
        args_list : iterable of sequence
            One argument tuple per call.

        Yields
        ------
        tuple of (int, object)
            The index of the call in ``args_list`` and what it returned, in the order the
            calls finish. An exception of a call is raised here, with its type, and the
            calls not yet started are cancelled.
        """

    def close(self) -> None:
        """Release the workers (nothing to release by default)."""
        return None

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class SerialExecutor(Executor):
    """Every call in this process, one after the other.

    Parameters
    ----------
    device : str, optional
        Pin this process to this device (:func:`topofl_lib.core.device.pin_device`) when
        the first call runs; ``None`` leaves the process as it is.
    """

    name = "serial"

    def __init__(self, device: str | None = None):
        self.device = None if device is None else check_device(device)
        self.n_workers = 1

    def map_unordered(self, fn: Callable, args_list: Iterable[Sequence]
                      ) -> Iterator[tuple[int, Any]]:
        """Call ``fn(*args)`` for each argument tuple in turn; see :meth:`Executor.map_unordered`.

        Parameters
        ----------
        fn : callable
            The function.
        args_list : iterable of sequence
            One argument tuple per call.

        Yields
        ------
        tuple of (int, object)
            ``(index, result)`` in the order of ``args_list``.
        """
        if self.device is not None and pinned_device(None) != self.device:
            pin_device(self.device)
        for i, args in enumerate(args_list):
            yield i, fn(*args)

    def __repr__(self) -> str:
        return f"SerialExecutor(device={self.device!r})"


_QUEUES: list = []  # in a spawned worker: the shared (calls, results) queues


def _start_worker(devices, calls=None, results=None) -> None:
    """A worker process's initializer: one torch and one persistence thread, the next
    device of the queue, and the shared queues it takes calls from (see :func:`_serve`)."""
    one_thread_each()
    pin_device(devices.get(timeout=60))
    _QUEUES[:] = [calls, results]


def _serve() -> None:
    """A spawned worker's loop: take calls from the shared queue until a ``None``; put
    ``(token, index, ok, result or exception)`` on the results queue."""
    calls, results = _QUEUES
    while (item := calls.get()) is not None:
        token, i, fn, args = item
        try:
            results.put((token, i, True, fn(*args)))
        except Exception as exc:  # noqa: BLE001 (handed to the caller, who raises it)
            results.put((token, i, False, exc))


class ProcessExecutor(Executor):
    """``n_workers`` local workers: spawned processes, each with one torch thread and one
    device, and optionally this process.

    The processes start when the first call is submitted (constructing the executor
    costs nothing) and stay until :meth:`close`.

    Parameters
    ----------
    n_workers : int
        Calls computed at once.
    devices : sequence of str, optional
        Spawned worker ``k`` is pinned to ``devices[k % len(devices)]``; default: every
        worker on the CPU.
    this_process : bool, default=False
        This process is one of the ``n_workers``: ``n_workers - 1`` processes are
        spawned, and this process computes calls while they run (it is otherwise idle,
        waiting for them: on a machine with as many cores as workers, one core would
        sit unused while the pool starts and at the end). The caller pins this process
        to its device.
    """

    name = "processes"
    #: Spawning a process and importing torch and scikit-learn in it: ~1-2 s per worker
    #: on two cores.
    startup_seconds_per_worker = 1.5
    startup_phrase = "starting {n} worker process{es}"

    def __init__(self, n_workers: int, devices: Sequence[str] | None = None,
                 this_process: bool = False):
        self.n_workers = check_int(n_workers, "n_workers", low=1)
        devices = ["cpu"] if devices is None else list(devices)
        if not devices:
            raise ValueError("devices must name at least one device, got an empty sequence")
        self.devices = tuple(check_device(d) for d in devices)
        self.this_process = bool(this_process)
        self._pool = None

    @property
    def spawned(self) -> int:
        """The number of processes spawned (``n_workers``, less this process)."""
        return self.n_workers - self.this_process

    @property
    def startup_seconds(self) -> float:
        """Estimated start-up seconds; 0 once the processes are running."""
        return (0.0 if self._pool is not None or not self.spawned
                else self.startup_seconds_per_worker * self.spawned)

    def _start(self):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        for k in range(self.spawned):
            queue.put(self.devices[(k + self.this_process) % len(self.devices)])
        self._queues = (ctx.Queue(), ctx.Queue())
        self._pool = ProcessPoolExecutor(self.spawned, mp_context=ctx,
                                         initializer=_start_worker,
                                         initargs=(queue, *self._queues))
        return self._pool

    def map_unordered(self, fn: Callable, args_list: Iterable[Sequence]
                      ) -> Iterator[tuple[int, Any]]:
        """Run the calls on the workers; see :meth:`Executor.map_unordered`.

        The calls go to one shared queue that every worker (with ``this_process``, this
        process too) takes the next call from when it is free, so no worker idles while
        another has calls waiting.

        Parameters
        ----------
        fn : callable
            A module-level function.
        args_list : iterable of sequence
            One argument tuple per call.

        Yields
        ------
        tuple of (int, object)
            ``(index, result)`` as each call finishes.
        """
        if not self.spawned:
            yield from SerialExecutor().map_unordered(fn, args_list)
        else:
            yield from self._shared(fn, list(args_list))

    def _shared(self, fn: Callable, args_list: list):
        import uuid

        pool = self._pool or self._start()
        calls, results = self._queues
        token, left = uuid.uuid4().hex, len(args_list)
        mine = deque(enumerate(args_list))  # the calls not yet handed to the workers
        serving = [pool.submit(_serve) for _ in range(self.spawned)]
        handed = 0  # calls on the shared queue or running in a worker
        try:
            while left:
                # each worker: one call running and one waiting on the shared queue
                while mine and handed < 2 * self.spawned:
                    i, args = mine.popleft()
                    calls.put((token, i, fn, args))
                    handed += 1
                    if not mine:  # every call handed: the workers stop when done
                        for _ in serving:
                            calls.put(None)
                item = None  # this process's next call, if it computes too
                if self.this_process:
                    item = mine.pop() if mine else _take(calls)
                if item is not None:
                    i, args = item if len(item) == 2 else (item[1], item[3])
                    handed -= len(item) != 2
                    yield i, fn(*args)
                    left -= 1
                for i, result in _results(results, token, serving, block=item is None):
                    handed -= 1
                    yield i, result
                    left -= 1
        finally:  # done, failed or stopped early: no call or stop signal is left behind
            _drain(calls)
            for _ in serving:
                calls.put(None)
            for fut in serving:
                fut.result()
            _drain(calls)

    def close(self) -> None:
        """Stop the worker processes (a later call starts new ones)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __repr__(self) -> str:
        return f"ProcessExecutor(n_workers={self.n_workers}, devices={list(self.devices)})"


class DaskExecutor(Executor):
    """The workers of a Dask cluster (``distributed``).

    Parameters
    ----------
    address : str, optional
        The scheduler's address (``"tcp://10.0.0.1:8786"``); the executor connects on
        first use and closes its client in :meth:`close`.
    client : distributed.Client, optional
        A client already connected (e.g. ``Client(SLURMCluster(...))``); left open by
        :meth:`close`. Give ``address`` or ``client``, not both.
    devices : sequence of str, optional
        Devices handed to the workers by their position among the cluster's workers
        (sorted addresses) when the first calls are sent; a worker whose environment
        sets ``TOPOFL_DEVICE`` takes that device instead; other workers use the CPU.
    """

    name = "dask"
    #: Sending the first calls to workers that are already running.
    startup_seconds_per_worker = 0.025
    startup_phrase = "reaching {n} Dask workers"

    def __init__(self, address: str | None = None, client=None,
                 devices: Sequence[str] | None = None):
        if (address is None) == (client is None):
            raise ValueError("DaskExecutor needs the scheduler's address or a client (one of "
                             f"them), got address={address!r}, client={client!r}")
        require("distributed", "DaskExecutor")
        if address is not None and not (isinstance(address, str)
                                        and address.startswith(DASK_SCHEMES)):
            raise ValueError(f"address must start with one of {list(DASK_SCHEMES)}, got "
                             f"{address!r}")
        self.address = address if client is None else client.scheduler.address
        self.devices = None if devices is None else tuple(check_device(d) for d in devices)
        self._client = client
        self._own_client = client is None
        self._plugin_registered = False

    @property
    def client(self):
        """The ``distributed.Client`` (connected on first use when made from an address)."""
        if self._client is None:
            from distributed import Client

            self._client = Client(self.address)
        return self._client

    def _workers(self) -> dict:
        return self.client.scheduler_info(n_workers=-1)["workers"]

    @property
    def n_workers(self) -> int:
        """Calls that may run at once: the threads of all workers (at least 1)."""
        return max(1, sum(int(w.get("nthreads", 1)) for w in self._workers().values()))

    def device_assignment(self) -> dict[str, str]:
        """``{worker address: device}`` from ``devices`` for the workers there now.

        Returns
        -------
        dict
            Empty without ``devices`` (the workers use ``TOPOFL_DEVICE``, else the CPU).
        """
        if not self.devices:
            return {}
        return {addr: self.devices[k % len(self.devices)]
                for k, addr in enumerate(sorted(self._workers()))}

    def _register_plugin(self) -> None:
        if self._plugin_registered:
            return
        from .dask_plugin import DevicePinning

        self.client.register_plugin(DevicePinning(self.device_assignment()))
        self._plugin_registered = True

    def map_unordered(self, fn: Callable, args_list: Iterable[Sequence]
                      ) -> Iterator[tuple[int, Any]]:
        """Submit the calls to the cluster; see :meth:`Executor.map_unordered`.

        Parameters
        ----------
        fn : callable
            A module-level function (the workers must be able to import its module).
        args_list : iterable of sequence
            One argument tuple per call.

        Yields
        ------
        tuple of (int, object)
            ``(index, result)`` as each call finishes.
        """
        from distributed import as_completed

        from .dask_plugin import run_pinned

        self._register_plugin()
        client = self.client
        args_list = [tuple(args) for args in args_list]
        # an argument shared by several calls (a comparison's spec, with its data) is sent
        # to the cluster once, not once per call
        counts: dict = {}
        for args in args_list:
            for a in args:
                counts[id(a)] = (a, counts.get(id(a), (a, 0))[1] + 1)
        sent = {k: client.scatter(a, hash=False) for k, (a, n) in counts.items() if n > 1
                and not isinstance(a, (int, float, str, bool, type(None)))}
        futures = {}
        for i, args in enumerate(args_list):
            args = tuple(sent.get(id(a), a) for a in args)
            fut = client.submit(run_pinned, fn, args, pure=False)
            futures[fut.key] = (i, fut)
        try:
            for fut in as_completed([f for _, f in futures.values()]):
                i, _ = futures.pop(fut.key)
                yield i, fut.result()
        finally:  # an error, or the caller stopped early: drop what has not finished
            if futures:
                client.cancel([f for _, f in futures.values()])

    def close(self) -> None:
        """Close the client if this executor made it."""
        if self._own_client and self._client is not None:
            self._client.close()
            self._client = None
            self._plugin_registered = False

    def __repr__(self) -> str:
        return f"DaskExecutor(address={self.address!r}, devices={self.devices!r})"


def _dask_object(value) -> str | None:
    """``"client"``, ``"cluster"`` or ``None`` (without importing distributed)."""
    if "distributed" not in sys.modules:
        return None
    import distributed
    from distributed.deploy.cluster import Cluster

    if isinstance(value, distributed.Client):
        return "client"
    return "cluster" if isinstance(value, Cluster) else None


def _take(calls):
    """The next ``(token, index, fn, args)`` of the shared queue; ``None`` when every call
    is taken (the stop signal found is put back for a worker)."""
    import queue

    try:
        item = calls.get_nowait()
    except queue.Empty:
        return None
    if item is None:
        calls.put(None)
    return item


def _drain(calls) -> None:
    """Empty the shared queue of calls and stop signals (those this process put flushed
    first)."""
    import queue

    while True:
        try:
            calls.get(timeout=0.01)
        except queue.Empty:
            return


def _results(results, token: str, serving: list, block: bool) -> Iterator[tuple[int, Any]]:
    """``(index, result)`` of this map's calls the workers finished (a call's exception is
    raised; with ``block``, wait up to 0.1 s for the first, since a call may still reach the
    shared queue for this process to take; a worker process that died ends the map)."""
    import queue

    while True:
        try:
            tok, i, ok, value = results.get(timeout=0.1) if block else results.get_nowait()
        except queue.Empty:
            for fut in serving:
                if fut.done():
                    fut.result()  # raises when the worker process died
            return
        if tok != token:  # a result of an earlier map that stopped early
            continue
        if not ok:
            raise value
        yield i, value
        block = False


def make_executor(executor, devices: Sequence[str] | None = None) -> Executor:
    """The executor that ``executor=`` asks for.

    Parameters
    ----------
    executor : int, str, distributed.Client, Dask cluster or Executor
        ``1``: :class:`SerialExecutor`; ``n > 1``: :class:`ProcessExecutor` with ``n``
        workers, this process and ``n - 1`` spawned ones; a Dask scheduler address
        (``"tcp://..."``, ``"tls://..."``, ``"ucx://..."``, ``"inproc://..."``), a
        ``distributed.Client`` or a cluster object
        (``LocalCluster``, a ``dask_jobqueue`` cluster): :class:`DaskExecutor`; an
        :class:`Executor` is returned as it is.
    devices : sequence of str, optional
        The workers' devices (see each executor); with ``1``, the device this process
        is pinned to.

    Returns
    -------
    Executor
        Not yet started: processes and connections are made on first use.

    Raises
    ------
    TypeError, ValueError
        ``executor`` is none of these; the message names the parameter and the value.

    Examples
    --------
    >>> make_executor(1).name, make_executor(2).n_workers
    ('serial', 2)
    """
    if isinstance(executor, Executor):
        return executor
    if isinstance(executor, Integral) and not isinstance(executor, bool):
        if executor < 1:
            raise ValueError(f"executor must be a number of workers >= 1, got {executor!r}")
        if executor == 1:
            return SerialExecutor(None if not devices else devices[0])
        return ProcessExecutor(int(executor), devices, this_process=True)
    if isinstance(executor, str):
        if executor.startswith(DASK_SCHEMES):
            return DaskExecutor(address=executor, devices=devices)
        raise ValueError(f"executor must be a number of workers or a Dask scheduler address "
                         f"starting with one of {list(DASK_SCHEMES)}, got {executor!r}")
    kind = _dask_object(executor)
    if kind == "client":
        return DaskExecutor(client=executor, devices=devices)
    if kind == "cluster":
        return DaskExecutor(address=executor.scheduler_address, devices=devices)
    raise TypeError(f"executor must be a number of workers, a Dask scheduler address, a "
                    f"distributed.Client, a Dask cluster or an Executor, got {executor!r} "
                    f"({type(executor).__name__})")
