"""Federated scenario generators and client containers."""

from .partitions import kmeans_noniid_partition
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
    "kmeans_noniid_partition",
    "make_benchmark",
    "make_continual",
    "make_healthcare",
    "make_scenario",
]
