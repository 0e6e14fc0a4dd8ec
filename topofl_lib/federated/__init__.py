"""Federated algorithms over logistic-regression clients (or any learner), and the
pTopoFL server rules.

The algorithms are registered by name (:mod:`topofl_lib.federated.methods`), so
:func:`make_method` also builds methods that plug in from above (``"FedTopo"``).
Attributes load on first use.
"""

from .._lazy import attach

__all__ = [
    "ALL_METHODS",
    "FEDTOPO_BASELINES",
    "METHODS",
    "REFERENCE_METHODS",
    "REPRESENTATION_METHODS",
    "ROBUST_METHODS",
    "CoordinateMedian",
    "Krum",
    "TrimmedMean",
    "FedAvg",
    "FedAvgM",
    "FedCCFA",
    "FedDC",
    "FedDyn",
    "FedFM",
    "FedNova",
    "FedPAC",
    "FedProx",
    "FederatedAlgorithm",
    "LocalOnly",
    "Moon",
    "PFedMe",
    "PTopoFL",
    "Scaffold",
    "accuracy",
    "aggregate_round",
    "anchor_matching_loss",
    "blend_clusters",
    "client_streams",
    "cluster_clients",
    "cluster_models",
    "collaboration_weights",
    "convergence_round",
    "feature_statistics",
    "intra_cluster_weights",
    "label_clusters",
    "madd",
    "make_method",
    "model_contrastive_loss",
    "roc_auc",
    "scaffold_drift",
    "server_state",
    "trust_weights",
]

__getattr__, __dir__ = attach(__name__, {
    ".aggregation": ["aggregate_round", "blend_clusters", "cluster_clients", "cluster_models",
                     "intra_cluster_weights", "server_state", "trust_weights"],
    ".base": ["FederatedAlgorithm", "client_streams"],
    ".fedavg": ["FedAvg", "FedProx"],
    ".fedavgm": ["FedAvgM"],
    ".fedccfa": ["FedCCFA", "label_clusters", "madd"],
    ".feddc": ["FedDC"],
    ".feddyn": ["FedDyn"],
    ".fedfm": ["FedFM", "anchor_matching_loss"],
    ".fednova": ["FedNova"],
    ".fedpac": ["FedPAC", "collaboration_weights", "feature_statistics"],
    ".local_only": ["LocalOnly"],
    ".methods": ["ALL_METHODS", "FEDTOPO_BASELINES", "METHODS", "REFERENCE_METHODS",
                 "REPRESENTATION_METHODS", "ROBUST_METHODS", "make_method"],
    ".moon": ["Moon", "model_contrastive_loss"],
    ".metrics": ["accuracy", "convergence_round", "evaluate_clients", "roc_auc"],
    ".pfedme": ["PFedMe"],
    ".ptopofl": ["PTopoFL"],
    ".robust": ["CoordinateMedian", "Krum", "TrimmedMean"],
    ".scaffold": ["Scaffold", "scaffold_drift"],
})
