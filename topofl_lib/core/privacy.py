"""What an algorithm needs from a differential-privacy option of the model channel.

``model_dp=`` of :class:`~topofl_lib.federated.FedAvg`, :class:`~topofl_lib.federated.FedProx`
and :class:`~topofl_lib.federated.PTopoFL` takes an object of this protocol; the package's
are :class:`topofl_lib.privacy.ClientLevelDP` (DP-FedAvg: clipped client updates,
Gaussian noise drawn by the clients or the server) and
:class:`topofl_lib.privacy.SampleLevelDP` (DP-SGD in local training). The engine
(:mod:`topofl_lib.federated.base`) sees them only through this protocol, as it sees a
model class through :class:`~topofl_lib.core.ModelClass`, so the federated layer does not
depend on the privacy layer above it.

Besides the members below, an object of ``level == "client"`` has ``participants``,
``noisy_sum`` and ``round_event``; one of ``level == "sample"`` has ``batches``,
``noise``, ``expected_batch`` and ``round_event`` (their docstrings in
:mod:`topofl_lib.privacy.model_channel`). The accountant it makes has ``record(event)``
and ``epsilon(delta, channel=None)`` (:class:`topofl_lib.privacy.PrivacyAccountant`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["LEVELS", "ModelPrivacy"]

#: The units a model-channel guarantee protects: one client's whole data, or one example.
LEVELS = ("client", "sample")


@runtime_checkable
class ModelPrivacy(Protocol):
    """A DP option of the model channel (see the module docstring).

    Attributes
    ----------
    level : {"client", "sample"}
        What one unit of privacy is: a client (DP-FedAvg) or one example (DP-SGD).
    delta : float
        The delta at which the run's epsilon is reported.
    """

    level: str
    delta: float

    def check(self) -> None:
        """Validate the parameters (a ValueError or TypeError naming the bad one)."""

    def accountant(self) -> Any:
        """A new, empty privacy accountant for one client.

        Returns
        -------
        object
            With ``record(event)`` and ``epsilon(delta, channel=None)``.
        """
