"""Federated clustering under local differential privacy: GFC and its building blocks."""

from .baselines import MUFC, NNFC, KFed, privatised_clients
from .gfc import (
    GravitationalFederatedClustering,
    gravitational_potential,
    local_centroids,
    paper_delta,
)
from .ldp import laplace_ldp
from .merge_tree import MergeTree, superlevel_persistence

__all__ = [
    "MUFC",
    "NNFC",
    "GravitationalFederatedClustering",
    "KFed",
    "privatised_clients",
    "MergeTree",
    "gravitational_potential",
    "laplace_ldp",
    "local_centroids",
    "paper_delta",
    "superlevel_persistence",
]
