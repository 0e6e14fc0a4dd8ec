"""Persistent homology of client data: diagrams, the 48-dim descriptor, distances."""

from .descriptor import (
    DESCRIPTOR_NAMES,
    betti_curve,
    client_topology,
    descriptor_from_diagrams,
    persistence_entropy,
    topological_descriptor,
)
from .distances import (
    DISTANCES,
    descriptor_distances,
    diagram_distances,
    normalise_descriptors,
)
from .estimator import TopologicalDescriptor
from .persistence import PERSISTENCE_METHODS, persistence_diagrams

__all__ = [
    "DESCRIPTOR_NAMES",
    "DISTANCES",
    "PERSISTENCE_METHODS",
    "TopologicalDescriptor",
    "betti_curve",
    "client_topology",
    "descriptor_distances",
    "descriptor_from_diagrams",
    "diagram_distances",
    "normalise_descriptors",
    "persistence_diagrams",
    "persistence_entropy",
    "topological_descriptor",
]
