"""topofl_lib: topological federated learning, reproducible.

Layers (each imports only those before it): ``topology`` -> ``data`` ->
``federated`` -> ``experiments`` -> ``viz`` -> ``reproduce``.
"""

from .data import Client, FederatedScenario, make_benchmark, make_healthcare, make_scenario
from .federated import (
    METHODS,
    FedAvg,
    FedProx,
    PFedMe,
    PTopoFL,
    Scaffold,
    make_method,
)
from .topology import (
    TopologicalDescriptor,
    persistence_diagrams,
    topological_descriptor,
)

__version__ = "0.1.0"

__all__ = [
    "METHODS",
    "Client",
    "FedAvg",
    "FedProx",
    "FederatedScenario",
    "PFedMe",
    "PTopoFL",
    "Scaffold",
    "TopologicalDescriptor",
    "make_benchmark",
    "make_healthcare",
    "make_method",
    "make_scenario",
    "persistence_diagrams",
    "topological_descriptor",
]
