"""Persistent homology of client data: diagrams, the 48-dim descriptor, distances.

Names are imported on first use (:mod:`topofl_lib._lazy`): ``descriptor`` needs only
numpy, scipy and ripser; ``distances`` needs persim and ``estimator`` scikit-learn.
"""

from .._lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(["DESCRIPTOR_NAMES", "betti_curve", "client_topology",
                     "descriptor_from_diagrams", "persistence_entropy",
                     "topological_descriptor"], ".descriptor"),
    **dict.fromkeys(["DISTANCES", "descriptor_distances", "diagram_distances",
                     "normalise_descriptors"], ".distances"),
    "TopologicalDescriptor": ".estimator",
    **dict.fromkeys(["PERSISTENCE_METHODS", "persistence_diagrams"], ".persistence"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

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
