"""Flower 1.41's hard-coded waits, and the shorter ones topofl's local federation uses.

Where a Flower round's time goes when nothing is computed (Flower 1.41.0, none of these
is a setting of Flower's):

===========================================  =========  ===========================
wait                                         Flower     here
===========================================  =========  ===========================
SuperNode: between two empty pulls           3 s        :class:`Pacer`: a few pulls
(``start_client_internal``)                             per round, timed by the gap
                                                        between the last two messages
                                                        (``idle_min`` to ``idle_max``)
SuperNode: checks for the ClientApp's reply  0.5 s      :data:`BUSY` (an in-memory
and its objects                                         check)
ServerApp: between two asks for replies      3 s        :class:`PollingGrid`, 0.1 s
(``Grid.send_and_receive``)
first retry of an object not yet uploaded    1 s,       ServerApp: 0.02 s, SuperNode:
(``pull_objects``; a message is visible      doubling   0.1 s, doubling up to 0.5 s
before its arrays arrive)                    to 10 s    and 1 s
SuperNode heartbeat (a crashed node is       30 s       :data:`HEARTBEAT` (Flower's
offline after two)                                      minimum)
===========================================  =========  ===========================

(The ClientApp's own start, a new interpreter per message, is removed by the executor
of :mod:`~topofl_lib.flower.node`, not here.) :func:`adjust_supernode` and
:func:`shorten_object_pulls` change these values inside Flower's modules of the running
process only (module attributes, looked up by Flower at call time); they check that
the names they change exist and raise ``RuntimeError`` otherwise, since they are written
for the pinned ``flwr==1.41.0``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

#: Environment variable with the time the SuperNode stored the message a task runs (set
#: by :mod:`~topofl_lib.flower.node`, read by the ClientApp's per-phase timing; here, in
#: the leaf module, so that neither imports the other).
RECEIVED_AT = "TOPOFL_FLOWER_RECEIVED_AT"

__all__ = ["BUSY", "RECEIVED_AT", "STEP", "HEARTBEAT", "NODE_PULL_BACKOFF", "NODE_PULL_BACKOFF_CAP",
           "PULL_BACKOFF", "PULL_BACKOFF_CAP", "Pacer",
           "PollingGrid", "adjust_supernode", "shorten_object_pulls"]

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


def _require(module, *names: str) -> None:
    missing = [n for n in names if not hasattr(module, n)]
    if missing:
        raise RuntimeError(f"{module.__name__} has no {missing}: topofl_lib.flower.waits is "
                           "written for flwr 1.41")


class Pacer:
    """Stands in for the ``time`` module inside ``flwr.supernode.start_client_internal``.

    Waits of 1 s or more are the idle wait between two empty pulls (3 s in Flower 1.41).
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


def shorten_object_pulls(module, backoff: float = PULL_BACKOFF,
                         cap: float = PULL_BACKOFF_CAP) -> None:
    """Make ``module``'s ``pull_objects`` retry a missing object after ``backoff`` s
    (doubling up to ``cap``) instead of Flower's 1 s (up to 10 s).

    Parameters
    ----------
    module : module
        A Flower module with a ``pull_objects`` function.
    backoff : float, default=PULL_BACKOFF
        First retry delay in seconds.
    cap : float, default=PULL_BACKOFF_CAP
        Largest retry delay in seconds.
    """
    _require(module, "pull_objects")
    pull = module.pull_objects
    if isinstance(pull, functools.partial):
        pull = pull.func
    module.pull_objects = functools.partial(pull, initial_backoff=backoff, backoff_cap=cap)


def adjust_supernode(idle_min: float, idle_max: float,
                     on_message: Callable[[], None] | None = None) -> Pacer:
    """Shorten the waits of Flower's SuperNode in this process (see the module docstring).

    ``on_message`` is called each time the SuperNode has stored a message from the
    SuperLink and created its ClientApp task. Returns the :class:`Pacer` in use.

    Parameters
    ----------
    idle_min, idle_max : float
        The :class:`Pacer`'s shortest and longest idle waits in seconds.
    on_message : callable, optional
        Called with no arguments after each stored message.

    Returns
    -------
    Pacer
        The pacer now standing in for the SuperNode's ``time``.
    """
    from flwr.supercore import heartbeat
    from flwr.supernode import fleet_http_connection, start_client_internal

    _require(start_client_internal, "time", "_pull_and_store_message", "pull_objects")
    _require(fleet_http_connection, "HEARTBEAT_DEFAULT_INTERVAL")
    _require(heartbeat, "HEARTBEAT_DEFAULT_INTERVAL")
    if start_client_internal.time is not time:
        raise RuntimeError("flwr.supernode.start_client_internal is already adjusted")
    pacer = Pacer(idle_min, idle_max)
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
    shorten_object_pulls(start_client_internal, NODE_PULL_BACKOFF, NODE_PULL_BACKOFF_CAP)
    fleet_http_connection.HEARTBEAT_DEFAULT_INTERVAL = HEARTBEAT
    heartbeat.HEARTBEAT_DEFAULT_INTERVAL = HEARTBEAT
    return pacer


class PollingGrid:
    """A Flower Grid whose ``send_and_receive`` asks for replies every ``interval`` s.

    Everything else is the wrapped Grid's. Flower 1.41's ``send_and_receive`` sleeps 3 s
    between two asks for replies, which would add up to 3 s to every round.
    ``arrived`` maps the id of each message sent to the time (``time.time()``) its
    reply came in (the end of the ask that returned it); ``pushed`` is when the last
    call had pushed all its messages.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
        The wrapped Grid.
    interval : float, default=0.1
        Seconds between two asks for replies (> 0).
    """

    def __init__(self, grid, interval: float = 0.1):
        if not interval > 0:
            raise ValueError(f"interval must be > 0, got {interval}")
        self.grid, self.interval = grid, float(interval)
        self.arrived: dict[str, float] = {}
        self.pushed: float | None = None

    def __getattr__(self, name):
        return getattr(self.grid, name)

    def send_and_receive(self, messages, *, timeout: float | None = None) -> list:
        """Push ``messages``; return the replies that arrive within ``timeout`` s.

        Parameters
        ----------
        messages : iterable of flwr.app.Message
            The messages to push.
        timeout : float, optional
            Seconds to wait for replies; ``None`` waits for all of them.

        Returns
        -------
        list of flwr.app.Message
            The replies received.
        """
        pending = set(self.grid.push_messages(messages))
        self.pushed = time.time()
        deadline = None if timeout is None else time.monotonic() + timeout
        replies = []
        while pending:
            got = list(self.grid.pull_messages(pending))
            now = time.time()
            self.arrived.update((m.metadata.reply_to_message_id, now) for m in got)
            replies += got
            pending -= {m.metadata.reply_to_message_id for m in got}
            if not pending or (deadline is not None and time.monotonic() >= deadline):
                break
            time.sleep(self.interval)
        return replies
