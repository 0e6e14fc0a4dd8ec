"""Persistent homology of client data: diagrams, the 48-dim descriptor and its label-aware
siblings (class-conditional, model-anchored), distances.

Two persistence choices live here and are named differently on purpose:

* ``persistence=`` (``"ripser"`` or ``"triangle"``) picks the *algorithm* for the
  Vietoris–Rips diagrams of point clouds; the two give different diagrams (the
  triangle approximation shortens loops), so the choice changes results. Every
  function and estimator that computes Rips persistence (:func:`persistence_diagrams`,
  :func:`topological_descriptor`, :class:`TopologicalDescriptor`,
  :class:`~topofl_lib.federated.PTopoFL`) calls it ``persistence``.
* ``backend=`` (``"auto"``, ``"cripser"`` or ``"gudhi"``) picks the *library* that
  computes cubical persistence of 2-D maps (:mod:`topofl_lib.topology.cubical`); every
  backend gives the same diagrams, so the choice changes speed only. FedTopo's
  estimators call it ``backend``.

Attributes load on first use.
"""

from .._lazy import attach

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
    "betti_grid",
    "check_class_conditional_params",
    "check_model_anchored_params",
    "class_conditional_descriptor",
    "class_conditional_names",
    "client_topology",
    "descriptor_distances",
    "descriptor_from_diagrams",
    "descriptor_names",
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

__getattr__, __dir__ = attach(__name__, {
    ".descriptor": ["DESCRIPTOR_NAMES", "betti_curve", "betti_grid", "client_topology",
                    "descriptor_from_diagrams", "descriptor_names", "persistence_entropy",
                    "topological_descriptor"],
    ".distances": ["DISTANCES", "descriptor_distances", "diagram_distances",
                   "normalise_descriptors"],
    ".estimator": ["TopologicalDescriptor"],
    ".persistence": ["PERSISTENCE_METHODS", "persistence_diagrams"],
    ".class_conditional": ["ClassConditionalDescriptor", "check_class_conditional_params",
                           "class_conditional_descriptor", "class_conditional_names"],
    ".lower_star": ["knn_edges", "lower_star_diagrams"],
    ".model_anchored": ["ModelAnchoredDescriptor", "anchor_margins", "anchor_points",
                        "check_model_anchored_params", "model_anchored_descriptor",
                        "model_anchored_names"],
    ".summaries": ["per_point_summary"],
})
