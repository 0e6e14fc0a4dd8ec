"""topofl's own waits, through Flower's public API only (nothing of Flower is patched).

* :class:`PollingGrid` wraps the ServerApp's Grid (``flwr.serverapp.Grid``: its public
  ``push_messages`` and ``pull_messages``) and asks for replies every ``poll-interval``
  s (run config, 0.1 s) where Flower's ``send_and_receive`` waits 3 s between two asks.
* :data:`RECEIVED_AT`: the environment variable with the time a ClientApp task's
  message reached its node (set by the opt-in adapter's executor,
  :func:`~topofl_lib.flower.fast_waits.start_executor`; read by the ClientApp's timing,
  which records NaN under Flower's own executor).

This is the leaf module of the app: the ClientApp, the ServerApp and the node import
from it, not from each other.
"""

from __future__ import annotations

import time

__all__ = ["RECEIVED_AT", "PollingGrid"]

#: Environment variable with the time the node had the message a task runs: when the
#: SuperNode stored it (set by the adapter's executor; unset under Flower's SuperExec).
RECEIVED_AT = "TOPOFL_FLOWER_RECEIVED_AT"


class PollingGrid:
    """A Flower Grid whose ``send_and_receive`` asks for replies every ``interval`` s.

    Everything else is the wrapped Grid's. Flower's ``send_and_receive`` sleeps 3 s
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
