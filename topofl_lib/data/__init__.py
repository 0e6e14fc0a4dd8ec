"""Federated scenario generators and client containers."""

from .paper_protocol import PAPER_EVALUATION, paper_benchmark, paper_healthcare
from .partitions import kmeans_noniid_partition
from .preprocessing import client_scaler, standardise_clients
from .scenarios import (
    ATTACKS,
    PROTOCOLS,
    Client,
    FederatedScenario,
    make_benchmark,
    make_continual,
    make_healthcare,
    make_scenario,
)

__all__ = [
    "ATTACKS",
    "PAPER_EVALUATION",
    "PROTOCOLS",
    "Client",
    "FederatedScenario",
    "kmeans_noniid_partition",
    "make_benchmark",
    "make_continual",
    "make_healthcare",
    "make_scenario",
    "client_scaler",
    "paper_benchmark",
    "paper_healthcare",
    "standardise_clients",
]
