"""Federated algorithms over logistic-regression clients, and the pTopoFL server rules.

Names are imported on first use (:mod:`topofl_lib._lazy`), so that a client process
importing :mod:`~topofl_lib.federated.local` does not import every estimator (and
scikit-learn).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .base import FederatedAlgorithm

#: Methods defined outside this package (imported on first use, since they need torch).
EXTRA_METHODS = {"FedTopo": ("topofl_lib.fedtopo", "FedTopo")}

_EXPORTS = {
    **dict.fromkeys(["blend_clusters", "cluster_clients", "cluster_models",
                     "intra_cluster_weights", "trust_weights"], ".aggregation"),
    "FederatedAlgorithm": ".base",
    **dict.fromkeys(["FedAvg", "FedProx"], ".fedavg"),
    **dict.fromkeys(["accuracy", "convergence_round", "roc_auc"], ".metrics"),
    "PFedMe": ".pfedme",
    "PTopoFL": ".ptopofl",
    **dict.fromkeys(["CoordinateMedian", "Krum", "TrimmedMean"], ".robust"),
    "Scaffold": ".scaffold",
}
_REGISTRIES = ("METHODS", "ROBUST_METHODS", "ALL_METHODS", "METHOD_NAMES")
_lazy_getattr, _lazy_dir = lazy_exports(__name__, _EXPORTS)


def _registries() -> dict:
    """The method registries, importing every estimator.

    ``METHODS``: the paper's five methods (name as printed in the paper -> class);
    ``ROBUST_METHODS``: Byzantine-robust aggregation baselines from the literature;
    ``ALL_METHODS``: both; ``METHOD_NAMES``: every name :func:`make_method` accepts.
    """
    from .fedavg import FedAvg, FedProx
    from .pfedme import PFedMe
    from .ptopofl import PTopoFL
    from .robust import CoordinateMedian, Krum, TrimmedMean
    from .scaffold import Scaffold

    methods = {cls.name: cls for cls in (PTopoFL, FedAvg, FedProx, Scaffold, PFedMe)}
    robust = {cls.name: cls for cls in (CoordinateMedian, Krum, TrimmedMean)}
    all_methods = {**methods, **robust}
    return {"METHODS": methods, "ROBUST_METHODS": robust, "ALL_METHODS": all_methods,
            "METHOD_NAMES": (*all_methods, *EXTRA_METHODS)}


def __getattr__(name: str):
    if name in _REGISTRIES:
        registries = _registries()
        globals().update(registries)  # later look-ups skip this hook
        return registries[name]
    return _lazy_getattr(name)


def __dir__() -> list[str]:
    return sorted({*_lazy_dir(), *_REGISTRIES})


def make_method(name: str, **params) -> FederatedAlgorithm:
    """Instantiate an algorithm by its name (``"pTopoFL"``, ``"FedAvg"``, ``"FedTopo"``...)."""
    registries = _registries()
    if name in registries["ALL_METHODS"]:
        return registries["ALL_METHODS"][name](**params)
    if name in EXTRA_METHODS:
        module, attr = EXTRA_METHODS[name]
        return getattr(importlib.import_module(module), attr)(**params)
    raise ValueError(f"unknown method {name!r}; expected one of "
                     f"{list(registries['METHOD_NAMES'])}")


__all__ = [
    "ALL_METHODS",
    "EXTRA_METHODS",
    "METHODS",
    "METHOD_NAMES",
    "ROBUST_METHODS",
    "CoordinateMedian",
    "Krum",
    "TrimmedMean",
    "FedAvg",
    "FedProx",
    "FederatedAlgorithm",
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
