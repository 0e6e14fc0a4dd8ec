"""Opt-in adapter: shorter waits inside Flower's own modules, for one verified flwr version.

topofl's ServerApp, ClientApp and local federation run on an unpatched Flower. Flower
hard-codes a few waits that no setting of it changes (no ``flower-superlink`` or
``flower-supernode`` flag, no ``FLWR_*`` variable); this module shortens them inside the
running process, by replacing attributes of Flower's modules. That is a patch of another
package's internals, so it is

* **off by default**: :class:`~topofl_lib.flower.LocalFederation` applies it only with
  ``fast_waits=True`` (``python -m topofl_lib flower --fast-waits``; the nodes get
  ``--fast-waits`` and the ServerApp the run config ``fast-waits = true``);
* **version-gated**: it is written for, and checked against, the internals of
  ``flwr ==`` :data:`VERIFIED_FLWR` (their code is the same as in 1.41.0, for which it
  was first written). With any other installed version every entry point
  (:func:`adjust_supernode`, :func:`adjust_serverapp`, :func:`start_executor`) changes
  nothing, logs one line (:data:`NOTICE`) and leaves Flower's own waits and executor;
  :func:`check_version` is the gate.

What it changes (Flower's value, and here):

===========================================  =========  ===========================
wait                                         Flower     here
===========================================  =========  ===========================
SuperNode: between two empty pulls           3 s        :class:`Pacer`: a few pulls
(``start_client_internal``)                             per round, timed by the gap
                                                        between the last two messages
                                                        (``idle_min`` to ``idle_max``)
SuperNode: checks for the ClientApp's reply  0.5 s      :data:`BUSY` (an in-memory
and its objects                                         check)
first retry of an object not yet uploaded    1 s,       ServerApp: 0.02 s, SuperNode:
(``pull_objects``; a message is visible      doubling   0.1 s, doubling up to 0.5 s
before its arrays arrive)                    to 10 s    and 1 s
SuperNode heartbeat (a crashed node is       30 s       :data:`HEARTBEAT` (Flower's
offline after two)                                      minimum)
===========================================  =========  ===========================

Flower's own ClientApp executor under ``--isolation process``, the ``flower-superexec``
that :mod:`~topofl_lib.flower.node` runs by default, asks its SuperNode for tasks every
second and starts each task in a new ``flwr-clientapp`` interpreter (about 2 s of
imports). In its place the adapter runs its own long-lived executor
(:func:`start_executor`), built on Flower's internal Runtime API client and
``run_clientapp``: the SuperNode wakes it the moment a message is stored (the hook in
:func:`adjust_supernode`), and it runs each task with ``run_clientapp`` in a process
forked from it, Flower and the ClientApp already imported, which starts in milliseconds.

The ServerApp's 3 s between two asks for replies needs no patch:
:class:`~topofl_lib.flower.polling.PollingGrid` (Flower's public Grid API) replaces it
in both modes.
"""

from __future__ import annotations

import functools
import gc
import importlib.metadata
import logging
import os
import select
import signal
import struct
import time
from collections.abc import Callable

from .forking import finish_child
from .polling import RECEIVED_AT

__all__ = ["BUSY", "HEARTBEAT", "NODE_PULL_BACKOFF", "NODE_PULL_BACKOFF_CAP", "NOTICE", "POLL",
           "PULL_BACKOFF", "PULL_BACKOFF_CAP", "STEP", "VERIFIED_FLWR", "Pacer",
           "adjust_serverapp", "adjust_supernode", "check_version", "installed_flwr", "preload",
           "start_executor"]

#: The flwr release whose internals this adapter was checked against (and patches).
VERIFIED_FLWR = "1.42.0"
#: The one line logged when the installed flwr is another version (nothing is patched).
NOTICE = ("topofl fast waits not applied: written for flwr {verified}, found flwr {found}; "
          "using Flower's own waits")
#: Seconds between the SuperNode's checks for the ClientApp's reply (Flower: 0.5).
BUSY = 0.02
#: The SuperNode's heartbeat interval in seconds (Flower's minimum; its default is 30).
HEARTBEAT = 10.0
#: First retry (s) of an object pull that found the object not yet uploaded (Flower: 1).
PULL_BACKOFF = 0.02
#: Longest wait (s) between two retries of an object pull (Flower: 10).
PULL_BACKOFF_CAP = 0.5
#: The same two for a SuperNode, which pulls while the ServerApp may still be uploading
#: the arrays of a whole round (all nodes retrying quickly would slow that upload).
NODE_PULL_BACKOFF, NODE_PULL_BACKOFF_CAP = 0.1, 1.0
#: A SuperNode pulls every this fraction of the gap between two messages when it expects
#: the next one (see :class:`Pacer`).
STEP = 0.05
#: Seconds between the ServerApp's asks for replies in a federation with the adapter (the
#: run config's ``poll-interval``, set by :class:`~topofl_lib.flower.LocalFederation`;
#: without the adapter 0.1, Flower's own ``send_and_receive`` 3). Not a patch: the
#: interval of :class:`~topofl_lib.flower.polling.PollingGrid`. Measured with 8
#: SuperNodes (``benchmarks/flower_rounds.py``, 10 rounds, five pairs of runs side by
#: side): median rounds 0.80-1.18 s against 0.94-1.29 s at 0.1, each pair lower by
#: 0.02-0.23 s; each ask costs the SuperLink a request, so the unpatched mode, which
#: waits on Flower's seconds-long intervals anyway, keeps 0.1.
POLL = 0.02

_log = logging.getLogger(__name__)


def installed_flwr() -> str:
    """The version of the installed ``flwr`` distribution (read from its metadata)."""
    return importlib.metadata.version("flwr")


def check_version(version: str | None = None) -> bool:
    """Whether the adapter may patch Flower ``version`` (default: the installed one).

    Only :data:`VERIFIED_FLWR` passes. Any other version is refused with one line
    (:data:`NOTICE`, logged as a warning to the ``topofl_lib.flower.fast_waits`` logger;
    with no logging configured it goes to stderr).

    Parameters
    ----------
    version : str, optional
        The flwr version to check; ``None`` reads the installed one.

    Returns
    -------
    bool
        True if ``version`` is :data:`VERIFIED_FLWR`.

    Examples
    --------
    >>> check_version(VERIFIED_FLWR)
    True
    """
    if version is None:
        version = installed_flwr()
    if not isinstance(version, str):
        raise TypeError(f"version must be a string, got {version!r}")
    if version == VERIFIED_FLWR:
        return True
    _log.warning(NOTICE.format(verified=VERIFIED_FLWR, found=version))
    return False


def _require(module, *names: str) -> None:
    missing = [n for n in names if not hasattr(module, n)]
    if missing:
        raise RuntimeError(f"{module.__name__} has no {missing}, yet flwr is "
                           f"{VERIFIED_FLWR}: topofl_lib.flower.fast_waits is out of date")


class Pacer:
    """Stands in for the ``time`` module inside ``flwr.supernode.start_client_internal``.

    Waits of 1 s or more are the idle wait between two empty pulls (3 s in Flower).
    A run sends a node each kind of message (train, evaluate) at a steady pace. The pacer
    learns it from the times the ServerApp created the messages (``created_at``: the gaps
    between two of a kind carry no polling noise, and the smallest delay seen from
    creation to arrival maps server time to local time) and expects the next message
    when the first kind is due again. The node sleeps until one step (:data:`STEP` of
    that kind's gap, at least ``idle_min``) before then, pulls every step, and once the
    message is overdue every quarter of the time it is overdue: a few pulls per round,
    and a message waits about one step. No wait is longer than ``idle_max``, which bounds
    the delay when the pace changes; with no pace known yet the waits double from
    ``idle_min`` to ``idle_max``. Shorter waits (the checks for the ClientApp's reply)
    last :data:`BUSY` s.

    Parameters
    ----------
    idle_min : float
        Shortest idle wait in seconds (``0 < idle_min <= idle_max``).
    idle_max : float
        Longest idle wait in seconds.
    clock : callable, default=time.time
        Returns the current wall-clock time.
    """

    def __init__(self, idle_min: float, idle_max: float, clock=time.time):
        if not 0 < idle_min <= idle_max:
            raise ValueError(f"need 0 < idle_min <= idle_max, got {idle_min}, {idle_max}")
        self.idle_min, self.idle_max, self.clock = idle_min, idle_max, clock
        self.idle = idle_min
        self.last: dict[str, float] = {}   # kind -> when the ServerApp created the last one
        self.gap: dict[str, float] = {}    # kind -> time between the last two of that kind
        self.offset: float | None = None   # smallest (arrival - creation) seen

    def __getattr__(self, name):
        return getattr(time, name)

    def message(self, created: float | None = None, kind: str = "") -> None:
        """A message of type ``kind`` came, created by the ServerApp at ``created``.

        Parameters
        ----------
        created : float, optional
            When the ServerApp created the message (``time.time()`` scale); default now.
        kind : str, default=""
            The message type.
        """
        now = self.clock()
        created = now if created is None else float(created)
        self.offset = now - created if self.offset is None else min(self.offset, now - created)
        if kind in self.last and created > self.last[kind]:
            self.gap[kind] = created - self.last[kind]
        self.last[kind], self.idle = created, self.idle_min

    def idle_wait(self) -> float:
        """How long to wait before the next pull."""
        if not self.gap:
            wait, self.idle = self.idle, min(2.0 * self.idle, self.idle_max)
            return wait
        due, kind = min((self.last[k] + g, k) for k, g in self.gap.items())
        step = max(self.idle_min, STEP * self.gap[kind])
        left = due + self.offset - self.clock()  # until the expected message
        wait = left - step if left > 2 * step else max(step, -0.25 * left)
        return min(self.idle_max, wait)

    def sleep(self, seconds: float) -> None:
        time.sleep(self.idle_wait() if seconds >= 1.0 else min(seconds, BUSY))


def _shorten_object_pulls(module, backoff: float, cap: float) -> None:
    """Make ``module``'s ``pull_objects`` retry a missing object after ``backoff`` s
    (doubling up to ``cap``) instead of Flower's 1 s (up to 10 s)."""
    _require(module, "pull_objects")
    pull = module.pull_objects
    if isinstance(pull, functools.partial):
        pull = pull.func
    module.pull_objects = functools.partial(pull, initial_backoff=backoff, backoff_cap=cap)


def adjust_serverapp(version: str | None = None) -> bool:
    """Shorten the ServerApp's retries of reply objects not yet uploaded, in this process.

    Flower's Grid retries after 1 s, doubling to 10 s; here after :data:`PULL_BACKOFF`
    s, doubling to :data:`PULL_BACKOFF_CAP`.

    Parameters
    ----------
    version : str, optional
        The flwr version to check (:func:`check_version`); ``None``: the installed one.

    Returns
    -------
    bool
        Whether Flower was adjusted (False, with the notice, on another version).
    """
    if not check_version(version):
        return False
    from flwr.superlink.grid import http_grid

    _shorten_object_pulls(http_grid, PULL_BACKOFF, PULL_BACKOFF_CAP)
    return True


def adjust_supernode(idle_min: float, idle_max: float,
                     on_message: Callable[[], None] | None = None,
                     version: str | None = None) -> Pacer | None:
    """Shorten the waits of Flower's SuperNode in this process (see the module docstring).

    ``on_message`` is called each time the SuperNode has stored a message from the
    SuperLink and created its ClientApp task.

    Parameters
    ----------
    idle_min, idle_max : float
        The :class:`Pacer`'s shortest and longest idle waits in seconds.
    on_message : callable, optional
        Called with no arguments after each stored message.
    version : str, optional
        The flwr version to check (:func:`check_version`); ``None``: the installed one.

    Returns
    -------
    Pacer or None
        The pacer now standing in for the SuperNode's ``time``; None (nothing changed,
        the notice logged) on another flwr version.
    """
    pacer = Pacer(idle_min, idle_max)  # checks the waits before anything else
    if not check_version(version):
        return None
    from flwr.supercore import heartbeat
    from flwr.supernode import fleet_http_connection, start_client_internal

    _require(start_client_internal, "time", "_pull_and_store_message", "pull_objects")
    _require(fleet_http_connection, "HEARTBEAT_DEFAULT_INTERVAL")
    _require(heartbeat, "HEARTBEAT_DEFAULT_INTERVAL")
    if start_client_internal.time is not time:
        raise RuntimeError("flwr.supernode.start_client_internal is already adjusted")
    pull = start_client_internal._pull_and_store_message

    def pull_and_store(*args, **kwargs):
        receive, seen = kwargs.get("receive"), []
        if receive is not None:  # note the message's type and when the ServerApp made it

            def receive_and_note():
                got = receive()
                if got is not None:
                    seen.append((got[0].metadata.created_at, got[0].metadata.message_type))
                return got

            kwargs["receive"] = receive_and_note
        run_id = pull(*args, **kwargs)
        if run_id is not None:  # a message is stored and its task created
            pacer.message(*(seen[0] if seen else (None, "")))
            if on_message is not None:
                on_message()
        return run_id

    start_client_internal.time = pacer
    start_client_internal._pull_and_store_message = pull_and_store
    _shorten_object_pulls(start_client_internal, NODE_PULL_BACKOFF, NODE_PULL_BACKOFF_CAP)
    fleet_http_connection.HEARTBEAT_DEFAULT_INTERVAL = HEARTBEAT
    heartbeat.HEARTBEAT_DEFAULT_INTERVAL = HEARTBEAT
    return pacer


def preload() -> None:
    """Import, ahead of forking, what the adapter's executor, its tasks and a SuperNode
    import only once they run (the zygote of :mod:`~topofl_lib.flower.node` calls it
    before it forks the nodes, :func:`start_executor` before it forks the executor): the
    ClientApp, Flower's SuperNode app and ``run_clientapp``, and ripser, which the
    ClientApp imports on its first descriptor, with scikit-learn and pandas behind it
    (0.7-1.5 s; a task forked without it imported it again for every message: 4.8 s of
    a client's 4.9 s of local work in an 8-node round on 2 cores). Only on
    :data:`VERIFIED_FLWR`; on another version it imports nothing and says nothing (the
    nodes then run Flower's executor).
    """
    if installed_flwr() != VERIFIED_FLWR:
        return
    import flwr.supernode.main  # noqa: F401  (the SuperNode's Runtime API app)
    import flwr.supernode.runtime.run_clientapp  # noqa: F401  (each task's entry)
    import ripser  # noqa: F401  (the descriptor's persistence)

    import topofl_lib.flower.client_app  # noqa: F401  (the ClientApp the tasks load)


def start_executor(address: str, secret_file: str,
                   version: str | None = None) -> Callable[[], None] | None:
    """Fork the adapter's ClientApp executor for the SuperNode of this process.

    The executor (a child of this process) acquires the node's ClientApp tasks from the
    SuperNode's Runtime API at ``address`` (without TLS; authenticated with the SuperExec
    secret in ``secret_file``) whenever it is woken, and runs each task with Flower's
    ``run_clientapp`` in a process forked from it. It ends when this process does. Call
    this before the SuperNode starts (no threads yet), and pass the returned function as
    ``on_message`` to :func:`adjust_supernode`.

    Parameters
    ----------
    address : str
        The SuperNode's Runtime API, ``host:port``.
    secret_file : str
        The SuperNode's ``--superexec-auth-secret-file``.
    version : str, optional
        The flwr version to check (:func:`check_version`); ``None``: the installed one.

    Returns
    -------
    callable or None
        Wakes the executor (no arguments); None (nothing forked, the notice logged) on
        another flwr version.
    """
    if not check_version(version):
        return None
    preload()  # before the fork: the executor and its tasks inherit the imports

    wake_r, wake_w = os.pipe()
    if os.fork() == 0:
        os.close(wake_w)
        finish_child(_executor, address, secret_file, wake_r)
    os.close(wake_r)
    os.set_blocking(wake_w, False)

    def wake() -> None:
        try:
            os.write(wake_w, struct.pack("d", time.time()))
        except OSError:  # the executor is gone, or already has a wake-up to read
            pass

    return wake


def _run_task(address: str, token: str) -> None:
    """Run one ClientApp task with Flower's ``run_clientapp`` (in a forked child, which
    :func:`~topofl_lib.flower.forking.finish_child` ends; Flower ends a task with
    ``sys.exit``)."""
    from flwr.supernode.runtime.run_clientapp import run_clientapp

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    gc.disable()  # a task lives for one message: no garbage worth collecting
    run_clientapp(runtime_api_address=address, token=token, insecure=True,
                  certificates=None, parent_pid=os.getppid())


def _executor(address: str, secret_file: str, wake_fd: int) -> None:
    """Acquire the node's ClientApp tasks and run each in a forked child.

    Asks for tasks whenever the SuperNode writes to ``wake_fd`` (the hook of
    :func:`adjust_supernode`: a message and its objects are stored). Ends when the
    SuperNode closes its end of the pipe.
    """
    import httpx
    from flwr.proto.runtime_pb2 import AcquireTaskRequest
    from flwr.supercore.auth import load_superexec_auth_secret
    from flwr.supercore.constant import TaskType
    from flwr.supercore.interceptors import (
        RuntimeVersionHttpInterceptor,
        SuperExecAuthHttpInterceptor,
    )
    from flwr.supercore.runtime import RuntimeHttpClient

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    client = RuntimeHttpClient.from_server_address(
        server_address=address, insecure=True, root_certificates=None,
        interceptors=[RuntimeVersionHttpInterceptor(component_name="SuperExec"),
                      SuperExecAuthHttpInterceptor(
                          master_secret=load_superexec_auth_secret(secret_file),
                          protected_methods={"/flwr.proto.Runtime/AcquireTask"})])
    request = AcquireTaskRequest(supported_task_types=[TaskType.CLIENT_APP.value])
    while True:
        select.select([wake_fd], [], [])
        data = os.read(wake_fd, 4096)
        if not data:
            return  # the SuperNode closed its end: it is gone
        # when the SuperNode stored the latest message (read by the ClientApp's timing)
        received = struct.unpack_from("d", data, len(data) - 8)[0]
        failures = 0
        while True:
            try:
                res = client.AcquireTask(request)
            except httpx.HTTPError:  # the Runtime API is busy or going down: retry a while
                failures += 1
                if failures > 50:
                    break
                time.sleep(0.1)
                continue
            if not (res.HasField("task") and res.token):
                break
            os.environ[RECEIVED_AT] = repr(received)
            if os.fork() == 0:
                os.close(wake_fd)
                finish_child(_run_task, address, res.token)
