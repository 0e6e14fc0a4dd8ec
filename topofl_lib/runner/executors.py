"""Where the runs of a comparison are executed: in this process, on spawned worker
processes, or on a Dask cluster.

Every executor has one method, :meth:`Executor.map_unordered`: call a module-level
function on each argument tuple and yield ``(index, result)`` as each call finishes. An
exception raised by a call reaches the caller with its own type, and the calls not yet
started are cancelled. The numbers never depend on the executor: a worker computes a run
exactly as this process would, with one torch thread.

* :class:`SerialExecutor`: in this process, one call after the other;
* :class:`ProcessExecutor`: ``n_workers`` processes of joblib's loky pool, started on
  first use, each with one torch thread and pinned to one device (``devices``, e.g.
  ``["cuda:0", "cuda:1"]``, or ``["cuda:0", "cuda:0"]`` for two small runs sharing a
  GPU; default the CPU). On the CPU the runner computes a comparison in the calling
  process and ``n_workers - 1`` helper processes instead (:mod:`topofl_lib.runner.helpers`);
* :class:`DaskExecutor`: the workers of a Dask cluster (``distributed``), reached by
  the scheduler's address, a ``distributed.Client`` or a cluster object (a
  ``LocalCluster``, a ``dask_jobqueue`` cluster). Each worker is pinned to one device
  by a worker plugin (:mod:`topofl_lib.runner.dask_plugin`): its ``TOPOFL_DEVICE``
  environment variable when set (``CUDA_VISIBLE_DEVICES=1 TOPOFL_DEVICE=cuda:0 dask
  worker ...``), else ``devices`` by the worker's position among the cluster's workers
  (sorted addresses), else the CPU. Its :meth:`DaskExecutor.stream` also takes calls
  one at a time while earlier ones run (the runner's pilots: :mod:`.execute`).

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from numbers import Integral
from typing import Any, ClassVar

from .._validation import check_int
from ..core.device import check_device, pin_device, pinned_device
from ..core.optional import require
from .worker import set_up_worker

__all__ = ["DASK_SCHEMES", "DaskExecutor", "DaskStream", "Executor", "ProcessExecutor",
           "SerialExecutor", "make_executor"]

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

    def share(self, value):
        """``value`` as an argument for the calls of several maps, sent once.

        Parameters
        ----------
        value : object
            An argument every call of several :meth:`map_unordered` calls takes (the
            runner's spec, with the comparison's data).

        Returns
        -------
        object
            What to pass in its place: ``value`` itself by default (the local pool
            already maps large arrays once); a Dask cluster's future of it.
        """
        return value

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


_READY: list = []  # in a worker process: the token of the book it was set up by


def _in_worker(i: int, fn: Callable, args: Sequence, book) -> tuple[int, Any]:
    """Call ``i`` in a worker process of :class:`ProcessExecutor`, ``(i, fn(*args))`` (joblib
    yields results only), the process set up on its first call for this executor (loky
    reuses a worker across executors) by :func:`~topofl_lib.runner.worker.set_up_worker`
    with the device ``book`` hands it."""
    if _READY != [book.token]:
        set_up_worker(book.take())
        _READY[:] = [book.token]
    return i, fn(*args)


class _DeviceBook:
    """Which device each worker process holds: a new one takes the device the fewest live
    workers hold (ties: the order given), so a worker that replaces a dead one takes its
    device. One device: no bookkeeping."""

    def __init__(self, devices: tuple[str, ...], manager=None):
        import uuid

        self.token = uuid.uuid4().hex
        self.devices = devices
        self.held = None if manager is None else manager.dict()
        self.lock = None if manager is None else manager.Lock()

    def take(self) -> str:
        if self.held is None:
            return self.devices[0]
        import os

        with self.lock:
            me = os.getpid()
            live = {pid: d for pid, d in self.held.items() if pid != me and _alive(pid)}
            counts = [sum(d == device for d in live.values()) for device in self.devices]
            device = self.devices[counts.index(min(counts))]
            live[me] = device
            self.held.clear()
            self.held.update(live)
        return device


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


class ProcessExecutor(Executor):
    """``n_workers`` local worker processes: joblib's loky pool, each worker with one
    torch thread (and joblib's limit of one BLAS thread) and one device.

    The workers start when the first calls are sent (constructing the executor costs
    nothing) and are reused by later calls (loky's reusable pool) until :meth:`close`.
    Arrays of over 1 MB in the calls' arguments reach the workers as read-only memory
    maps (joblib's), sent once per map instead of once per call. (A comparison on the CPU
    runs in the calling process and ``n_workers - 1`` helpers of
    :mod:`topofl_lib.runner.helpers` instead, each helper with a copy of its data.)

    Parameters
    ----------
    n_workers : int
        Calls computed at once.
    devices : sequence of str, optional
        The workers' devices: each worker process takes, on its first call, the device
        the fewest live workers hold (``["cuda:0", "cuda:1"]``; ``["cuda:0", "cuda:0"]``
        for two small runs sharing a GPU); default: every worker on the CPU.
    """

    name = "processes"
    #: Spawning a process and importing torch and scikit-learn in it: ~1-2 s per worker
    #: on two cores.
    startup_seconds_per_worker = 1.5
    startup_phrase = "starting {n} worker process{es}"

    def __init__(self, n_workers: int, devices: Sequence[str] | None = None):
        self.n_workers = check_int(n_workers, "n_workers", low=1)
        devices = ["cpu"] if devices is None else list(devices)
        if not devices:
            raise ValueError("devices must name at least one device, got an empty sequence")
        self.devices = tuple(check_device(d) for d in devices)
        self._manager = self._book = None

    @property
    def startup_seconds(self) -> float:
        """Estimated start-up seconds; 0 once the processes are running."""
        return 0.0 if self._book is not None else self.startup_seconds_per_worker * self.n_workers

    def _device_book(self) -> _DeviceBook:
        if self._book is None:
            if len(set(self.devices)) > 1:
                import multiprocessing

                self._manager = multiprocessing.get_context("spawn").Manager()
            self._book = _DeviceBook(self.devices, self._manager)
        return self._book

    def map_unordered(self, fn: Callable, args_list: Iterable[Sequence]
                      ) -> Iterator[tuple[int, Any]]:
        """Run the calls on the workers, each free worker taking the next; see
        :meth:`Executor.map_unordered`.

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
        from joblib import Parallel, delayed

        book = self._device_book()
        parallel = Parallel(n_jobs=self.n_workers, backend="loky", batch_size=1,
                            return_as="generator_unordered")
        yield from parallel(delayed(_in_worker)(i, fn, args, book)
                            for i, args in enumerate(args_list))

    def close(self) -> None:
        """Stop the worker processes (a later call starts new ones)."""
        if self._book is not None:
            from joblib.externals.loky import get_reusable_executor

            get_reusable_executor().shutdown(wait=True)
            if self._manager is not None:
                self._manager.shutdown()
            self._manager = self._book = None

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

    def stream(self, fn: Callable) -> DaskStream:
        """Calls of ``fn`` submitted one at a time, also while earlier ones run (the
        runner's pilots and the runs beside them): see :class:`DaskStream`.

        Parameters
        ----------
        fn : callable
            A module-level function (the workers must be able to import its module).

        Returns
        -------
        DaskStream
        """
        self._register_plugin()
        return DaskStream(self.client, fn)

    def share(self, value):
        """A future of ``value`` on the cluster (scattered now, once): pass it to every
        call of later maps in place of ``value``; see :meth:`Executor.share`."""
        (future,) = self.client.scatter([value], hash=False)
        return future

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
        from distributed import Future

        args_list = [tuple(args) for args in args_list]
        # an argument shared by several calls (a comparison's spec, with its data) is sent
        # to the cluster once, not once per call (one already shared is a future)
        counts: dict = {}
        for args in args_list:
            for a in args:
                counts[id(a)] = (a, counts.get(id(a), (a, 0))[1] + 1)
        sent = {k: self.share(a) for k, (a, n) in counts.items() if n > 1
                and not isinstance(a, (int, float, str, bool, type(None), Future))}
        with self.stream(fn) as stream:
            for i, args in enumerate(args_list):
                stream.submit(i, tuple(sent.get(id(a), a) for a in args))
            yield from stream

    def close(self) -> None:
        """Close the client if this executor made it."""
        if self._own_client and self._client is not None:
            self._client.close()
            self._client = None
            self._plugin_registered = False

    def __repr__(self) -> str:
        return f"DaskExecutor(address={self.address!r}, devices={self.devices!r})"


class DaskStream:
    """Calls of one function on a Dask cluster, each submitted when the caller decides,
    their results taken as they finish.

    :meth:`submit` sends a call with a tag; iterating yields ``(tag, result)`` in the
    order the calls finish, until every call submitted has finished, those submitted
    while iterating included. An exception of a call is raised with its type; leaving
    the ``with`` block (or :meth:`close`) cancels the calls not finished.

    Parameters
    ----------
    client : distributed.Client
    fn : callable
        A module-level function.
    """

    def __init__(self, client, fn: Callable):
        from distributed import as_completed

        self._client, self._fn = client, fn
        self._pending: dict = {}
        self._finished = as_completed(loop=client.loop)  # this client's, not the default

    def submit(self, tag, args: Sequence) -> None:
        """Send the call ``fn(*args)``; its result comes back with ``tag``.

        Parameters
        ----------
        tag : object
            Returned with the result.
        args : sequence
            The call's arguments (futures of shared values included).
        """
        from .dask_plugin import run_pinned

        future = self._client.submit(run_pinned, self._fn, tuple(args), pure=False)
        self._pending[future.key] = (tag, future)
        self._finished.add(future)

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        for future in self._finished:
            if future.key in self._pending:  # not cancelled by close()
                tag, _ = self._pending.pop(future.key)
                yield tag, future.result()

    def close(self) -> None:
        """Cancel the calls not finished."""
        if self._pending:
            self._client.cancel([f for _, f in self._pending.values()])
            self._pending.clear()

    def __enter__(self) -> DaskStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _dask_object(value) -> str | None:
    """``"client"``, ``"cluster"`` or ``None`` (without importing distributed)."""
    if "distributed" not in sys.modules:
        return None
    import distributed
    from distributed.deploy.cluster import Cluster

    if isinstance(value, distributed.Client):
        return "client"
    return "cluster" if isinstance(value, Cluster) else None


def make_executor(executor, devices: Sequence[str] | None = None) -> Executor:
    """The executor that ``executor=`` asks for.

    Parameters
    ----------
    executor : int, str, distributed.Client, Dask cluster or Executor
        ``1``: :class:`SerialExecutor`; ``n > 1``: :class:`ProcessExecutor` with ``n``
        worker processes; a Dask scheduler address
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
        return ProcessExecutor(int(executor), devices)
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
