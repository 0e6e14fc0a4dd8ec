"""Federated clustering under local differential privacy: GFC and its building blocks.

Attributes load on first use.
"""

from .._lazy import attach

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

__getattr__, __dir__ = attach(__name__, {
    ".baselines": ["MUFC", "NNFC", "KFed", "privatised_clients"],
    ".gfc": ["GravitationalFederatedClustering", "gravitational_potential", "local_centroids",
             "paper_delta"],
    ".ldp": ["laplace_ldp"],
    ".merge_tree": ["MergeTree", "superlevel_persistence"],
})
