"""Federated algorithms over logistic-regression clients, and the pTopoFL server rules."""

from .aggregation import (
    blend_clusters,
    cluster_clients,
    cluster_models,
    intra_cluster_weights,
    trust_weights,
)
from .base import FederatedAlgorithm
from .fedavg import FedAvg, FedProx
from .local_only import LocalOnly
from .metrics import accuracy, convergence_round, roc_auc
from .pfedme import PFedMe
from .ptopofl import PTopoFL
from .robust import CoordinateMedian, Krum, TrimmedMean
from .scaffold import Scaffold

#: The paper's five methods (name as printed in the paper -> class).
METHODS: dict[str, type[FederatedAlgorithm]] = {
    cls.name: cls for cls in (PTopoFL, FedAvg, FedProx, Scaffold, PFedMe)
}
#: Byzantine-robust aggregation baselines from the literature.
ROBUST_METHODS: dict[str, type[FederatedAlgorithm]] = {
    cls.name: cls for cls in (CoordinateMedian, TrimmedMean, Krum)
}
#: Reference baselines outside the paper's comparison (Local-only: no federation).
REFERENCE_METHODS: dict[str, type[FederatedAlgorithm]] = {LocalOnly.name: LocalOnly}
ALL_METHODS = {**METHODS, **ROBUST_METHODS, **REFERENCE_METHODS}
#: Methods defined outside this package (imported on first use, since they need torch).
EXTRA_METHODS = {"FedTopo": ("topofl_lib.fedtopo", "FedTopo")}
#: Every name :func:`make_method` accepts.
METHOD_NAMES = (*ALL_METHODS, *EXTRA_METHODS)


def make_method(name: str, **params) -> FederatedAlgorithm:
    """Instantiate an algorithm by its name (``"pTopoFL"``, ``"FedAvg"``, ``"FedTopo"``...)."""
    if name in ALL_METHODS:
        return ALL_METHODS[name](**params)
    if name in EXTRA_METHODS:
        import importlib

        module, attr = EXTRA_METHODS[name]
        return getattr(importlib.import_module(module), attr)(**params)
    raise ValueError(f"unknown method {name!r}; expected one of {list(METHOD_NAMES)}")


__all__ = [
    "ALL_METHODS",
    "EXTRA_METHODS",
    "METHODS",
    "METHOD_NAMES",
    "REFERENCE_METHODS",
    "ROBUST_METHODS",
    "CoordinateMedian",
    "Krum",
    "TrimmedMean",
    "FedAvg",
    "FedProx",
    "FederatedAlgorithm",
    "LocalOnly",
    "PFedMe",
    "PTopoFL",
    "Scaffold",
    "accuracy",
    "blend_clusters",
    "cluster_clients",
    "cluster_models",
    "convergence_round",
    "intra_cluster_weights",
    "make_method",
    "roc_auc",
    "trust_weights",
]
