"""Persistent homology of client data: diagrams, the 48-dim descriptor and its label-aware
siblings (class-conditional, model-anchored), distances."""

from .class_conditional import (
    ClassConditionalDescriptor,
    class_conditional_descriptor,
    class_conditional_names,
)
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
from .lower_star import knn_edges, lower_star_diagrams
from .model_anchored import (
    ModelAnchoredDescriptor,
    anchor_margins,
    anchor_points,
    model_anchored_descriptor,
    model_anchored_names,
)
from .persistence import PERSISTENCE_METHODS, persistence_diagrams
from .summaries import per_point_summary

__all__ = [
    "ClassConditionalDescriptor",
    "DESCRIPTOR_NAMES",
    "DISTANCES",
    "PERSISTENCE_METHODS",
    "ModelAnchoredDescriptor",
    "TopologicalDescriptor",
    "anchor_margins",
    "anchor_points",
    "betti_curve",
    "class_conditional_descriptor",
    "class_conditional_names",
    "client_topology",
    "descriptor_distances",
    "descriptor_from_diagrams",
    "diagram_distances",
    "knn_edges",
    "lower_star_diagrams",
    "model_anchored_descriptor",
    "model_anchored_names",
    "normalise_descriptors",
    "per_point_summary",
    "persistence_diagrams",
    "persistence_entropy",
    "topological_descriptor",
]
