"""Client-side preprocessing that an evaluation protocol may ask for."""

from __future__ import annotations

from dataclasses import replace

from sklearn.preprocessing import StandardScaler

from ..core.containers import Client, FederatedScenario

__all__ = ["client_scaler", "standardise_clients"]


def client_scaler(client: Client) -> StandardScaler:
    """The standardisation of ``client``: a scaler fitted on its training features."""
    return StandardScaler().fit(client.X_train)


def _standardise(client: Client) -> Client:
    scaler = client_scaler(client)
    return replace(client, X_train=scaler.transform(client.X_train),
                   X_test=scaler.transform(client.X_test))


def standardise_clients(scenario: FederatedScenario) -> FederatedScenario:
    """Standardise every client's features with the statistics of its own training data.

    Client ``k``'s training and test features are mapped ``(x - m_k) / s_k`` with the
    mean ``m_k`` and standard deviation ``s_k`` of its training features
    (:class:`sklearn.preprocessing.StandardScaler`; a constant feature keeps scale 1).
    Nothing is shared between clients, so this is what each client of a real federation
    can do on its own (the pTopoFL paper's released code does it, see
    :mod:`topofl_lib.data.paper_protocol`). Continual schedules are standardised round by
    round with the data of that round. Labels, roles and ``meta`` are kept.

    Parameters
    ----------
    scenario : FederatedScenario

    Returns
    -------
    FederatedScenario
        A new scenario; ``scenario`` is not modified.
    """
    if not isinstance(scenario, FederatedScenario):
        raise TypeError(f"scenario must be a FederatedScenario, got {type(scenario).__name__}")
    return FederatedScenario(
        scenario.name, [_standardise(c) for c in scenario.clients], dict(scenario.meta),
        {r: [_standardise(c) for c in cl] for r, cl in scenario.schedule.items()})
