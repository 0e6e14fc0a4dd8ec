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

__all__ = ["Learner", "ModelClass", "PrivateGradients", "Workspace"]


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
        """The client's training data in the learner's own form.

        A learner that can add per-load noise to the mini-batches
        (:attr:`~topofl_lib.core.Client.load_noise_sd`) also takes the keywords
        ``noise_sd`` and ``noise_seed`` (the engine passes them only for a client with
        noise); one that cannot refuses ``noise_sd > 0`` with a ``ValueError``.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Training features.
        y : ndarray of shape (n,)
            Training labels.

        Returns
        -------
        object
            What :meth:`gradient` and :meth:`init_params` receive as ``data``.
        """

    def init_params(self, data: Any) -> np.ndarray | None:
        """The initial parameter vector (``data``: one client's :meth:`client_data`, or
        ``None`` before any exists; logistic regression then returns ``None``, since its
        size depends on the features)."""

    def gradient(self, w: np.ndarray, data: Any, idx: np.ndarray) -> np.ndarray:
        """The stochastic gradient on samples ``idx``.

        Parameters
        ----------
        w : ndarray
            Flat parameter vector.
        data : object
            The client's :meth:`client_data`.
        idx : ndarray of int
            Indices of the mini-batch.

        Returns
        -------
        ndarray
            Gradient of the client's mini-batch loss, shaped like ``w``.
        """

    def evaluate(self, w: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """``(auc, accuracy)`` on a test set (AUC is NaN for multi-class).

        Parameters
        ----------
        w : ndarray
            Flat parameter vector.
        X : ndarray of shape (n, d)
            Test features.
        y : ndarray of shape (n,)
            Test labels.

        Returns
        -------
        tuple of float
            ``(auc, accuracy)``.
        """

    def predict_proba(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Class probabilities of ``X`` under ``w``.

        Parameters
        ----------
        w : ndarray
            Flat parameter vector.
        X : ndarray of shape (n, d)
            Features.

        Returns
        -------
        ndarray
            P(y = 1) of shape (n,) for a binary model, (n, n_classes) otherwise.
        """

    def representation(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The points pTopoFL's descriptor summarises (raw features for logistic
        regression, penultimate activations for a network).

        Parameters
        ----------
        w : ndarray
            Flat parameter vector.
        X : ndarray of shape (n, d)
            Features.

        Returns
        -------
        ndarray of shape (n, m)
            One point per row of ``X``.
        """


@runtime_checkable
class Workspace(Protocol):
    """Optional part of a learner: a *work space* for the vectors of local training.

    A learner whose vectors are best kept elsewhere during local training (a torch
    network on a GPU) converts the model to its work type once when a client starts
    training and back once when it ends; :func:`~topofl_lib.federated.local.local_sgd`
    and the algorithms' extra terms then use only operations valid on both NumPy arrays
    and the work type (copies, in-place ``*=``, ``+=``, ``-=``, ``+``, ``-``, products
    with Python floats), and ``gradient`` given a work vector returns one. The results
    are those of the NumPy arithmetic when the work type follows NumPy's type promotion
    (float32 and float64 vectors keep their dtypes, as a torch tensor does).
    """

    def to_work(self, w: np.ndarray) -> Any:
        """A copy of ``w`` in the work space, of the same dtype.

        Parameters
        ----------
        w : ndarray
            Flat parameter vector (or any constant vector of its size).

        Returns
        -------
        object
            The work vector (e.g. a torch tensor on the learner's device).
        """

    def from_work(self, w: Any) -> np.ndarray:
        """A NumPy copy of the work vector ``w``, of the same dtype.

        Parameters
        ----------
        w : object
            A work vector (what :meth:`to_work` returned, or computed from it).

        Returns
        -------
        ndarray
        """


@runtime_checkable
class ModelClass(Protocol):
    """What ``model=`` of an algorithm is: a factory of learners."""

    def make_learner(self, n_features: int, rng: np.random.Generator) -> Learner:
        """The learner of a fit on ``n_features`` raw features.

        Parameters
        ----------
        n_features : int
            Number of raw features of the scenario.
        rng : numpy.random.Generator
            Seeds the learner's initial parameters.

        Returns
        -------
        Learner
        """


@runtime_checkable
class PrivateGradients(Protocol):
    """Optional part of a learner: what sample-level DP-SGD needs (Abadi et al. 2016).

    The client loss is the mean of per-example losses plus a data-independent penalty
    (logistic regression's L2 term; none for a network). DP-SGD clips each example's
    gradient of its loss, sums, adds noise, divides by the expected batch size and then
    adds the penalty's gradient, which reveals nothing about the data.
    """

    def clipped_gradient_sum(self, w: Any, data: Any, idx: np.ndarray, clip: float) -> Any:
        r""":math:`\sum_{i \in idx} g_i \min(1, C / \|g_i\|_2)`, :math:`g_i` the gradient of
        example ``i``'s loss at ``w`` (the penalty excluded).

        Parameters
        ----------
        w : ndarray or work vector
            Flat parameter vector (a work vector gives a work vector back).
        data : object
            The client's :meth:`Learner.client_data`.
        idx : ndarray of int
            Indices of the examples (may be empty: zeros).
        clip : float
            The L2 bound ``C`` of each example's gradient.

        Returns
        -------
        ndarray or work vector
            Shaped like ``w``.
        """

    def penalty_gradient(self, w: Any, data: Any) -> Any:
        """Gradient of the data-independent part of the client loss at ``w``.

        Parameters
        ----------
        w : ndarray or work vector
            Flat parameter vector.
        data : object
            The client's :meth:`Learner.client_data`.

        Returns
        -------
        ndarray, work vector or None
            Shaped like ``w``; ``None`` when the loss has no such part.
        """
