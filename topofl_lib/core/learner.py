"""What an algorithm needs from a model class: the learner protocol.

Models are flat parameter vectors; what a vector means is the learner's business, so
each algorithm of :mod:`topofl_lib.federated` has one implementation for every model
class. :class:`~topofl_lib.federated.local.LogisticLearner` (logistic regression) and
:class:`~topofl_lib.deep.TorchLearner` (a torch network) implement :class:`Learner`; a
*model class* (``model=`` of every algorithm, e.g. :class:`~topofl_lib.deep.TorchModel`)
implements :class:`ModelClass` and builds the learner when a fit starts.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Learner", "ModelClass"]


@runtime_checkable
class Learner(Protocol):
    """A model class seen as flat parameter vectors.

    Attributes
    ----------
    momentum : float
        Heavy-ball momentum of the client SGD.
    """

    momentum: float

    def client_data(self, X: np.ndarray, y: np.ndarray) -> Any:
        """The client's training data in the learner's own form."""

    def init_params(self, data: Any) -> np.ndarray | None:
        """The initial parameter vector (``data``: one client's :meth:`client_data`, or
        ``None`` before any exists; logistic regression then returns ``None``, since its
        size depends on the features)."""

    def gradient(self, w: np.ndarray, data: Any, idx: np.ndarray) -> np.ndarray:
        """The stochastic gradient on samples ``idx``."""

    def evaluate(self, w: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """``(auc, accuracy)`` on a test set (AUC is NaN for multi-class)."""

    def predict_proba(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Class probabilities of ``X`` under ``w``."""

    def representation(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The points pTopoFL's descriptor summarises (raw features for logistic
        regression, penultimate activations for a network)."""


@runtime_checkable
class ModelClass(Protocol):
    """What ``model=`` of an algorithm is: a factory of learners."""

    def make_learner(self, n_features: int, rng: np.random.Generator) -> Learner:
        """The learner of a fit on ``n_features`` raw features (``rng`` seeds its
        initial parameters)."""
