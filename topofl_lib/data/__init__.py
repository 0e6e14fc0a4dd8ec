"""Federated scenario generators and client containers."""

from .scenarios import (
    ATTACKS,
    Client,
    FederatedScenario,
    make_benchmark,
    make_continual,
    make_healthcare,
    make_scenario,
)

__all__ = [
    "ATTACKS",
    "Client",
    "FederatedScenario",
    "make_benchmark",
    "make_continual",
    "make_healthcare",
    "make_scenario",
]
