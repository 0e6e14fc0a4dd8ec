r"""Label-aware descriptors as pTopoFL options (``PTopoFL(descriptor=...)``): what a
client computes.

``descriptor="paper"`` (default) is the 48-dim features-only descriptor and leaves
:class:`~topofl_lib.federated.PTopoFL` exactly as before. The two label-aware options
change only *what the clients send* as :math:`\phi_k`; the server's use of it is
unchanged: the same l2 distance of normalised descriptors, average-linkage clustering,
Eq. 8 trust and Eq. 6 weights (:func:`~topofl_lib.federated.aggregation.server_state`).

``"class_conditional"`` (:class:`~topofl_lib.topology.ClassConditionalDescriptor`)
    Computed by each client from its labelled training data in round 0 (and again
    whenever its data change, for signature tracking), like the paper's descriptor.
``"model_anchored"`` (:class:`~topofl_lib.topology.ModelAnchoredDescriptor`)
    Depends on the model the server broadcasts, so it is recomputed every round:

    * Round 1 is a warm-up: no model has seen data yet (logistic regression starts at
      zero, whose margins are all 0), so the server aggregates all clients as one
      cluster with trust 1 and weights :math:`\propto n_k` (a FedAvg round).
    * After every round, each client computes its descriptor against the models the
      server is about to broadcast (the *anchors*, below) and sends only the
      descriptor; ``signatures_[r]`` records them. The server uses them for the next
      round: it re-clusters the clients (a new cluster starts from the mean of the
      models its members were using) and recomputes Eq. 8 trust and Eq. 6 weights.
    * Anchors: every client evaluates every cluster model, and its descriptor is the
      concatenation of the ``M`` blocks (in cluster order, the same for all clients of a
      round), so a client's descriptor says which cluster's model it agrees with.

    Re-clustering against the cluster models every round lets two groups that disagree
    about the labels (honest and label-flipping hospitals) pull apart: each cluster's
    model moves toward its members' labels, which makes the next descriptors more
    separated (the dynamic of IFCA, Ghosh et al. 2020, with agglomerative clustering of
    topological descriptors in place of "pick the model with the lowest loss"). Nothing
    here decides which group is right: that needs an anchor the attackers cannot
    move (a trusted client, clean server-side data, or a prior on the labels).

    The alternatives measured on the development seeds stay selectable through the
    module constants :data:`DEFAULT_ANCHORS` and :data:`DEFAULT_RECLUSTER`, which
    :class:`PTopoFL` reads when ``fit`` starts: ``"consensus"`` anchors (one block,
    against the Eq. 7 consensus :math:`\bar\theta = \sum_j |C_j|/K\, \theta_{C_j}`, which
    equals the size-weighted mean of the blended cluster models) and ``"once"``
    (cluster after the warm-up round only, as Algorithm 1 clusters once). Both did
    worse, above all with half the hospitals flipping labels (see the constants).

    With a torch network the points are the penultimate activations of the anchor
    model (of the client's fixed ``n_sub`` records), so the class-conditional
    descriptor of a network is also model-dependent and follows the same schedule.

A DP ``descriptor_mechanism`` is applied to every release; a descriptor recomputed each
round is released each round, so its privacy cost composes over the rounds.

Who does what: this module holds what a *client* computes (:class:`LabelAwareClient`:
its descriptor from its records, its seed and the models it was broadcast, and nothing
else); the server's side (warm-up, clustering, trust and weights, anchors) is
:class:`~topofl_lib.federated.PTopoFL`'s, with the rules of
:mod:`~topofl_lib.federated.aggregation`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
from sklearn.base import clone

from .._validation import check_choice
from ..topology.class_conditional import (
    ClassConditionalDescriptor,
    check_class_conditional_params,
)
from ..topology.model_anchored import (
    ModelAnchoredDescriptor,
    anchor_margins,
    anchor_points,
    check_model_anchored_params,
)

__all__ = [
    "PTOPOFL_LABELS",
    "ANCHORS",
    "DEFAULT_ANCHORS",
    "DEFAULT_RECLUSTER",
    "DESCRIPTORS",
    "RECLUSTER",
    "LabelAwareClient",
    "check_descriptor",
    "client_records",
    "is_paper",
]

#: Names ``PTopoFL(descriptor=...)`` accepts (besides a transformer instance).
DESCRIPTORS = ("paper", "class_conditional", "model_anchored")
#: The method label of pTopoFL with each descriptor option (tables, claim rows, deep runs).
PTOPOFL_LABELS = {"paper": "pTopoFL", "class_conditional": "pTopoFL-CC",
                  "model_anchored": "pTopoFL-MA"}
#: Which broadcast models a model-anchored descriptor is computed against.
ANCHORS = ("clusters", "consensus")
#: When a model-dependent descriptor re-clusters: once after the warm-up, or every round.
RECLUSTER = ("once", "every_round")
#: The configuration :class:`PTopoFL` uses, fixed on the development seeds 0-19 of the
#: robustness sweep (10 hospitals, 10 rounds): with 5 label-flipping hospitals the final
#: honest AUC was 0.76 with these, 0.60 re-clustering once with cluster anchors, 0.61 once
#: with consensus anchors (FedAvg: 0.49).
DEFAULT_ANCHORS = "clusters"
DEFAULT_RECLUSTER = "every_round"

#: The parameter check of each label-aware transformer.
_PARAM_CHECKS = {ClassConditionalDescriptor: check_class_conditional_params,
                 ModelAnchoredDescriptor: check_model_anchored_params}


def is_paper(descriptor) -> bool:
    """Whether ``descriptor`` selects the paper's 48-dim descriptor."""
    return isinstance(descriptor, str) and descriptor == "paper"


def check_descriptor(descriptor, n_sub: int, n_thresholds: int, n_classes: int | None = None):
    """The transformer a ``descriptor`` option stands for (``None`` for ``"paper"``).

    Parameters
    ----------
    descriptor : {"paper", "class_conditional", "model_anchored"} or transformer
        The option. A :class:`~topofl_lib.topology.ClassConditionalDescriptor` or
        :class:`~topofl_lib.topology.ModelAnchoredDescriptor` instance is cloned with its
        own parameters (checked here); a class-conditional one must have the model's
        number of classes.
    n_sub, n_thresholds : int
        The estimator's, given to a transformer named by a string.
    n_classes : int, optional
        The model's number of classes (``None``: not checked; 2 for a name).

    Returns
    -------
    ClassConditionalDescriptor, ModelAnchoredDescriptor or None
    """
    if isinstance(descriptor, (ClassConditionalDescriptor, ModelAnchoredDescriptor)):
        est = clone(descriptor)
        _PARAM_CHECKS[type(est)](**est.get_params())
        if (n_classes is not None and isinstance(est, ClassConditionalDescriptor)
                and est.n_classes != n_classes):
            raise ValueError(f"the ClassConditionalDescriptor has n_classes={est.n_classes} "
                             f"but the model has {n_classes} classes")
        return est
    if not isinstance(descriptor, str):
        raise TypeError("descriptor must be one of "
                        f"{list(DESCRIPTORS)} or a ClassConditionalDescriptor / "
                        f"ModelAnchoredDescriptor, got {type(descriptor).__name__}")
    check_choice(descriptor, "descriptor", DESCRIPTORS)
    if descriptor == "paper":
        return None
    if descriptor == "class_conditional":
        return ClassConditionalDescriptor(n_classes=n_classes or 2, n_sub=n_sub,
                                          n_thresholds=n_thresholds)
    return ModelAnchoredDescriptor(n_sub=n_sub, n_thresholds=n_thresholds)


def client_records(n_records: int, n_sub: int, seed: int) -> np.ndarray:
    """The fixed records a network client summarises: ``min(n_sub, n_records)`` indices,
    sorted, drawn without replacement by a generator seeded with the client's ``seed``
    (the same records in every round, as the paper's deep descriptor).

    Parameters
    ----------
    n_records : int
        The client's number of training records.
    n_sub : int
        Records to keep.
    seed : int
        The client's persistence-subsample seed.

    Returns
    -------
    numpy.ndarray of int
    """
    return np.sort(np.random.default_rng(int(seed)).choice(
        n_records, size=min(n_sub, n_records), replace=False))


class LabelAwareClient:
    """What one client computes for a label-aware descriptor option.

    Parameters
    ----------
    transformer : ClassConditionalDescriptor or ModelAnchoredDescriptor
        From :func:`check_descriptor`.
    learner : Learner
        The model class's learner (``PTopoFL.learner_``): it reads the broadcast models.
    seed : int
        The client's persistence-subsample seed (its descriptors' ``random_state``).
    n_sub : int or None
        For a network, the client's fixed records (:func:`client_records`) are the
        points; ``None`` (logistic regression): every record, as features.
    features : callable, optional
        Maps raw records to the model's input (pTopoFL's feature augmentation); the
        identity by default.

    Notes
    -----
    A class-conditional descriptor of a logistic-regression client depends on its data
    only; it is recomputed only when the client's records or labels change (a cache
    keyed by a hash of the points and labels).
    """

    def __init__(self, transformer, learner, seed: int, n_sub: int | None = None,
                 features: Callable[[np.ndarray], np.ndarray] | None = None):
        self.transformer = transformer
        self.learner = learner
        self.seed = int(seed)
        self.n_sub = n_sub
        self.features = features
        self._cache = None

    def _points(self, w, X) -> np.ndarray:
        """The points of the descriptor: features, or a network's activations under ``w``."""
        return X if self.n_sub is None else anchor_points(self.learner, w, X)

    def descriptor(self, X, y, anchors=None) -> np.ndarray:
        """The client's descriptor of its training records ``(X, y)``.

        Parameters
        ----------
        X : ndarray of shape (n_records, n_features)
            Raw training features.
        y : ndarray of shape (n_records,)
            Training labels.
        anchors : ndarray of shape (n_anchors, dim), optional
            The models it was broadcast (needed by a model-anchored descriptor, and by
            a class-conditional one of a network, which uses the first).

        Returns
        -------
        numpy.ndarray
            One block per anchor (model-anchored), or one block (class-conditional).
        """
        if self.n_sub is not None:
            idx = client_records(X.shape[0], self.n_sub, self.seed)
            X, y = X[idx], y[idx]
        tr = clone(self.transformer).set_params(random_state=self.seed)
        if isinstance(tr, ClassConditionalDescriptor):
            pts = self._points(None if anchors is None else anchors[0], X)
            key = hashlib.blake2b(np.ascontiguousarray(pts).tobytes()
                                  + np.ascontiguousarray(y).tobytes(), digest_size=16).digest()
            if self._cache is None or self._cache[0] != key:
                self._cache = (key, tr.fit_transform([(pts, y)])[0])
            return self._cache[1]
        model_input = X if self.features is None else self.features(X)
        return np.concatenate([
            tr.fit_transform([(self._points(w, X),
                               anchor_margins(self.learner, w, model_input, y))])[0]
            for w in anchors])
