"""topofl_lib: topological federated learning, reproducible.

Layers (each imports only those before it): ``topology`` -> ``data`` ->
``federated`` -> ``experiments`` -> ``viz`` -> ``reproduce``.

The names below are imported on first use (:mod:`topofl_lib._lazy`), so that a process
that needs one submodule (a Flower ClientApp) does not import the whole library.
"""

from ._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    **dict.fromkeys(["Client", "FederatedScenario", "make_benchmark", "make_healthcare",
                     "make_scenario"], ".data"),
    **dict.fromkeys(["METHODS", "FedAvg", "FedProx", "PFedMe", "PTopoFL", "Scaffold",
                     "make_method"], ".federated"),
    **dict.fromkeys(["TopologicalDescriptor", "persistence_diagrams",
                     "topological_descriptor"], ".topology"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

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
