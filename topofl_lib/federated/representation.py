"""What the representation-alignment baselines share: a loss on the penultimate features.

MOON, FedFM and FedPAC add to each client's cross-entropy a term on the penultimate
representation :math:`z = h(x; w)` of the mini-batch (the output of the
:class:`~topofl_lib.deep.models.BlockNet` neck, the same points pTopoFL's
model-anchored descriptor reads through the learner's ``representation``):

* :class:`FeatureLossFedAvg` is FedAvg whose clients' gradient is that of
  ``cross-entropy + feature_term(z, batch)``: subclasses give the term per client and
  round (:meth:`FeatureLossFedAvg._feature_term`), or ``None`` for plain FedAvg.
* :func:`frozen_features` gives the representation of a client's training data under a
  fixed model (the global or a previous local model) as a tensor on the learner's device,
  through the learner's ``representation`` (the reading pTopoFL uses), without gradient.
* :class:`DecoupledFedAvg` adds what FedPAC and FedCCFA share: the network split into
  the feature extractor and the classifier (the last layer), personalised classifiers
  (``client_models_``) and training phases that update one part only.
* :func:`class_means` gives per-class means and counts of such features (the anchors,
  centroids and prototypes the servers aggregate).

These need a torch network (:class:`topofl_lib.deep.TorchModel`); torch is imported
when a fit runs, so importing this module needs no torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import as_float_array, check_choice, check_int, check_labels
from .fedavg import FedAvg
from .local import local_sgd

__all__ = ["DEPLOYS", "DecoupledFedAvg", "FeatureLossFedAvg", "class_means", "frozen_features"]


def frozen_features(learner: Any, w: np.ndarray, X: np.ndarray) -> Any:
    """Penultimate features of ``X`` under the fixed model ``w``, as a float32 tensor.

    Parameters
    ----------
    learner : TorchLearner
        The fit's learner (its ``representation`` reads the network's neck).
    w : ndarray of shape (n_params,)
        The model.
    X : ndarray of shape (n_samples, n_features)
        Flattened images.

    Returns
    -------
    torch.Tensor of shape (n_samples, n_hidden)
        On the learner's device, without gradient.
    """
    import torch

    Z = learner.representation(w, X)
    return torch.as_tensor(np.asarray(Z, dtype=np.float32), device=learner.device)


def class_means(Z: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-class means of the rows of ``Z`` and the class counts.

    Parameters
    ----------
    Z : ndarray of shape (n_samples, n_hidden)
        Features.
    y : ndarray of shape (n_samples,)
        Labels in ``0..n_classes - 1``.
    n_classes : int
        Number of classes.

    Returns
    -------
    means : ndarray of shape (n_classes, n_hidden)
        Zero for a class without samples.
    counts : ndarray of shape (n_classes,)
    """
    Z = as_float_array(Z, "Z")  # NaN allowed: a diverged run's features are recorded
    if Z.ndim != 2 or Z.shape[0] == 0:
        raise ValueError(f"Z must be a non-empty 2-D array (n_samples, n_hidden), got shape "
                         f"{Z.shape}")
    check_int(n_classes, "n_classes", low=1)
    y = check_labels(y, Z.shape[0], require_both=False, n_classes=n_classes)
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    sums = np.zeros((n_classes, Z.shape[1]))
    np.add.at(sums, y, Z)
    return sums / np.maximum(counts, 1.0)[:, None], counts


class FeatureLossFedAvg(FedAvg):
    """FedAvg whose clients add a loss on the penultimate features of each mini-batch.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm` (``model`` is required).
    solver, evaluate_on, standardise, model_dp
        As in :class:`~topofl_lib.federated.FedAvg` (``solver`` must be
        ``"sgd"``: the feature term is part of the SGD gradient; a ``model_dp`` this
        class's server rule or gradient would bypass is refused when the fit starts).

    Attributes
    ----------
    coef_ : ndarray (dim,)
        The global model after the last round.
    local_models_ : ndarray (K, dim)
        The models the clients returned in the last round.
    """

    def _check_params(self) -> None:
        super()._check_params()
        if self.model is None:
            raise ValueError(f"{self.name} aligns a network's penultimate features: pass "
                             "model=TorchModel(...), got model=None")

    def _train_features(self, k: int) -> np.ndarray:
        """Client ``k``'s training inputs as the learner reads them."""
        return self._features(k, self._clients[k].X_train)

    def _pooled_class_means(self, models) -> tuple[np.ndarray, np.ndarray]:
        """The clients' class means of their training features, client ``k``'s under
        ``models[k]``, averaged with the class counts as weights; and the counts."""
        n_classes = self.learner_.n_classes
        sums, counts = 0.0, np.zeros(n_classes)
        for k, w in enumerate(models):
            Z = self.learner_.representation(w, self._train_features(k))
            means, n = class_means(Z, self._clients[k].y_train, n_classes)
            sums = sums + n[:, None] * means
            counts += n
        return sums / np.maximum(counts, 1.0)[:, None], counts

    def _feature_term(self, k: int) -> Callable[[Any, Any], Any] | None:
        """Client ``k``'s term ``term(z, sel)`` for this round (``z``: the batch's features
        with gradient, ``sel``: its indices as a tensor), or ``None`` (plain FedAvg)."""
        return None

    def _gradient(self, k: int):
        import torch

        learner, data = self.learner_, self._data[k]
        term = self._feature_term(k)
        if term is None:
            return super()._gradient(k)
        X = data[0]

        def gradient(w, idx):
            sel = torch.as_tensor(np.asarray(idx), device=X.device)
            return learner.gradient(w, data, idx,
                                    extra_loss=lambda net: term(net.penultimate(X[sel]), sel))

        return gradient


#: What a decoupled method's clients are scored with: their own model (the method's
#: deployment) or one global model (FedTopo's Table 1 scores "the global model").
DEPLOYS = ("personal", "global")


class DecoupledFedAvg(FeatureLossFedAvg):
    """FedAvg with the network split into extractor and classifier, and a classifier per
    client: the base of the decoupled methods (FedPAC, FedCCFA).

    A client starts a round from the global extractor and its own classifier
    (:meth:`_start_model`) and trains in phases that update one part only
    (:meth:`_phase`: the other part's gradient is zeroed, so its momentum stays zero too);
    it deploys ``client_models_[k]``. These methods have no global classifier; a
    subclass's ``deploy="global"`` scores every client with ``global_model_`` instead: the
    global extractor with the clients' deployed classifiers averaged by data volume.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm` (``model`` is required).
    solver, evaluate_on, standardise, model_dp
        As in :class:`~topofl_lib.federated.FedAvg` (``solver="sgd"``; a
        ``model_dp`` this class's server rule or gradient would bypass is refused when
        the fit starts).

    Attributes
    ----------
    coef_ : ndarray (dim,)
        The global model: its extractor is the one every client takes.
    local_models_ : ndarray (K, dim)
        The models the clients returned in the last round.
    client_models_ : ndarray (K, dim)
        What each client deploys: the global extractor with its own classifier.
    global_model_ : ndarray (dim,)
        The global extractor with the clients' classifiers (``client_models_``) averaged
        by data volume.
    """

    deploy = "personal"  # a subclass's parameter

    def _check_params(self) -> None:
        super()._check_params()
        check_choice(self.deploy, "deploy", DEPLOYS)

    def _set_global_model(self) -> None:
        """``global_model_`` from this round's ``coef_`` and ``client_models_`` (the
        subclasses call it at the end of every round)."""
        heads = self._n @ self.client_models_ / self._n.sum()
        self.global_model_ = np.where(self._head, heads, self.coef_).astype(self.coef_.dtype)

    def _setup(self, K: int, w0: np.ndarray) -> None:
        super()._setup(K, w0)
        net = self.learner_.net
        head = list(net.classifier.parameters())
        if any(a is not b for a, b in zip(list(net.parameters())[-len(head):], head,
                                          strict=True)):
            raise ValueError(f"{self.name} needs the classifier's parameters last in the "
                             "network")
        self._head = np.zeros(w0.size, dtype=bool)
        self._head[w0.size - sum(p.numel() for p in head):] = True
        self.client_models_ = np.tile(w0, (K, 1))
        self.global_model_ = np.array(w0, copy=True)

    def _start_model(self, k: int) -> np.ndarray:
        """Client ``k``'s model at the start of a round: global extractor, own classifier."""
        return np.where(self._head, self.client_models_[k], self.coef_).astype(self.coef_.dtype)

    def _phase(self, k: int, w: Any, mask: np.ndarray, epochs: int, lr: float,
               term: Callable[[Any, Any], Any] | None = None,
               subset: np.ndarray | None = None) -> Any:
        """``epochs`` of SGD on client ``k`` (on ``subset`` of its samples if given) from
        the work vector ``w``, updating only the ``mask`` coordinates, with the optional
        feature term ``term(z, sel)``."""
        import torch

        learner, data = self.learner_, self._data[k]
        X, mask = data[0], self._to_work(mask.astype(np.float32))
        rows = np.arange(int(self._n[k])) if subset is None else np.asarray(subset)

        def gradient(v, idx):
            idx = rows[idx]
            if term is None:
                return learner.gradient(v, data, idx) * mask
            sel = torch.as_tensor(idx, device=X.device)
            return learner.gradient(v, data, idx, extra_loss=lambda net: term(
                net.penultimate(X[sel]), sel)) * mask

        return local_sgd(w, gradient, rows.size, lr=lr, epochs=epochs,
                         batch_size=self._batch(k), rng=self._client_rng(k),
                         momentum=learner.momentum)[0]

    def _client_model(self, k: int) -> np.ndarray:
        return self.global_model_ if self.deploy == "global" else self.client_models_[k]
