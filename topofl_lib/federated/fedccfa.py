r"""FedCCFA: classifier clustering and adaptive feature alignment (Chen et al., NeurIPS
2024, "Classifier Clustering and Feature Alignment for Federated Learning under
Distributed Concept Drift", Algorithm 1).

The network is split into a feature extractor (the :class:`BlockNet` blocks and neck,
output :math:`z`) and a linear classifier whose row :math:`c` (weights and bias) is the
*label classifier* of class :math:`c`. Every round:

1. Client :math:`k` takes the global extractor. From the global model (global extractor,
   the server's classifier) it trains the classifier alone for ``balanced_epochs`` on a
   class-balanced sample of its data (per class it holds, ``min(smallest class,
   balanced_size)`` samples drawn without replacement) and sends the result: trained
   from the same start on balanced data, these classifiers differ between clients only
   where their conditional distributions :math:`P(y \mid x)` (their concepts) differ.
2. It restores its own classifier, trains it alone for ``clf_epochs``, then the
   extractor alone for ``local_epochs`` on
   :math:`\mathrm{CE} + \lambda_k\,\ell_{align}` with the contrastive alignment
   :math:`\ell_{align} = -\log \frac{e^{\cos(z, p_y)/\tau}}{\sum_c e^{\cos(z, p_c)/\tau}}`
   to its prototypes :math:`p_c` (below) and the *adaptive* weight
   :math:`\lambda_k = H(\hat P_k(y)) / \gamma`, the entropy of its label distribution
   over :math:`\gamma` (a client with more balanced labels aligns more). Round 1 has no
   prototypes, so no alignment.
3. It sends its model, its class counts and its local prototypes (class means of its
   new features).
4. The server averages the extractors by data volume. For every class :math:`c` it
   clusters the clients' balanced label classifiers with DBSCAN (``eps``, one sample
   per core point) on the MADD distance
   :math:`d_{ij} = \frac{1}{K-2}\sum_{l \ne i,j} |\cos(v_i, v_l) - \cos(v_j, v_l)|`
   (:func:`madd`); within each cluster of two or more clients it averages (uniformly)
   their trained label classifiers and their prototypes of class :math:`c`, and sends
   them back: these become the members' row :math:`c` and prototype :math:`p_c`. A
   client outside any such cluster keeps its own row and prototype.

Each client deploys the global extractor with its classifier.

Choices the paper leaves to its released code, which we follow: the server's classifier
(the start of the balanced training) is the initial one, never aggregated; the label
classifier is the weight row and the bias; cluster averages are uniform. Our choices: a
client lacking class :math:`c` has no prototype of it (zero, a constant logit) and is
left out of the prototype averages of class :math:`c`; the entropy uses
:math:`0 \log 0 = 0`; MADD needs at least three clients.

Hyperparameters (the released code's FedCCFA configuration): :math:`\gamma = 20`,
:math:`\tau = 0.1`, ``eps`` 0.1, one classifier epoch, five balanced epochs of at most
five samples per class. That code also uses lr 0.1 for both classifier phases and starts
the alignment in round 20 of 200; FedTopo runs every method with lr 0.01 and 5 to 10
rounds, so ``clf_lr=None`` and ``balanced_lr=None`` use ``lr``, and ``start_round=2``
aligns from the first round that has prototypes.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import DBSCAN

from .._validation import as_float_array, check_int, check_real
from ..core.registry import register_method
from .fedfm import anchor_matching_loss
from .representation import DecoupledFedAvg, class_means

__all__ = ["FedCCFA", "label_clusters", "madd"]


def madd(V: np.ndarray) -> np.ndarray:
    """MADD distances of the rows of ``V`` (mean absolute difference of their cosine
    similarities to the other rows).

    Parameters
    ----------
    V : ndarray of shape (K, d), K >= 3
        One vector per client.

    Returns
    -------
    ndarray of shape (K, K)
        Symmetric, zero diagonal.
    """
    V = as_float_array(V, "V")
    if V.ndim != 2 or V.shape[0] < 3:
        raise ValueError(f"V must be 2-D with at least 3 rows (clients), got shape {V.shape}")
    K = V.shape[0]
    U = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)
    S = U @ U.T
    D = np.zeros((K, K))
    for i in range(K):
        for j in range(i + 1, K):
            others = np.ones(K, dtype=bool)
            others[[i, j]] = False
            D[i, j] = D[j, i] = np.abs(S[i, others] - S[j, others]).mean()
    return D


def label_clusters(rows: np.ndarray, eps: float) -> np.ndarray:
    """DBSCAN clusters (one sample per core point) of the clients' label classifiers.

    Parameters
    ----------
    rows : ndarray of shape (K, d)
        Client ``k``'s label classifier of one class.
    eps : float
        DBSCAN's neighbourhood radius on the MADD distance.

    Returns
    -------
    ndarray of int (K,)
        Cluster ids.
    """
    check_real(eps, "eps", low=0.0, low_open=True)
    return DBSCAN(eps=eps, min_samples=1, metric="precomputed").fit(madd(rows)).labels_


@register_method
class FedCCFA(DecoupledFedAvg):
    """FedCCFA (see the module docstring).

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm` (``local_epochs``: the
        extractor's epochs).
    evaluate_on, standardise
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    model : TorchModel
        Required: the network (its last linear layer is the classifier).
    gamma : float, default=20.0
        The alignment weight is the label entropy over ``gamma``.
    tau : float, default=0.1
        Temperature of the contrastive alignment.
    eps : float, default=0.1
        DBSCAN radius of the classifier clustering.
    clf_epochs : int, default=1
    balanced_epochs : int, default=5
    balanced_size : int, default=5
        At most this many samples per class in the balanced set.
    clf_lr, balanced_lr : float or None, default=None
        Learning rates of the two classifier phases; ``None``: ``lr``.
    start_round : int, default=2
        First round (1-based) with the feature alignment.
    deploy : {"personal", "global"}, default="personal"
        What the clients are scored with: their own models (``client_models_``,
        FedCCFA's deployment) or ``global_model_`` (FedTopo's Table 1 scores "the global
        model"; the server's own classifier is never trained).

    Attributes
    ----------
    coef_ : ndarray (dim,)
        The global extractor with the server's (initial) classifier.
    local_models_ : ndarray (K, dim)
        The models the clients returned in the last round.
    client_models_ : ndarray (K, dim)
        What each client deploys: the global extractor with its (merged) classifier.
    prototypes_ : ndarray (K, n_classes, n_hidden)
        Each client's prototypes for the next round.
    clusters_ : ndarray of int (n_classes, K)
        The last round's cluster of every client for every class.
    align_weights_ : ndarray (K,)
        The adaptive alignment weights (entropy over ``gamma``) of the last round.
    global_model_ : ndarray (dim,)
        The global extractor with the clients' classifiers averaged by data volume.
    """

    name = "FedCCFA"

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 gamma=20.0, tau=0.1, eps=0.1, clf_epochs=1, balanced_epochs=5,
                 balanced_size=5, clf_lr=None, balanced_lr=None, start_round=2,
                 deploy="personal", model=None, random_state=None, rng_streams="shared",
                 evaluate_on=None, standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on=evaluate_on, standardise=standardise)
        self.gamma = gamma
        self.tau = tau
        self.eps = eps
        self.clf_epochs = clf_epochs
        self.balanced_epochs = balanced_epochs
        self.balanced_size = balanced_size
        self.clf_lr = clf_lr
        self.balanced_lr = balanced_lr
        self.start_round = start_round
        self.deploy = deploy

    def _check_params(self):
        super()._check_params()
        for name in ("gamma", "tau", "eps"):
            check_real(getattr(self, name), name, low=0.0, low_open=True)
        for name in ("clf_epochs", "balanced_epochs"):
            check_int(getattr(self, name), name, low=0)
        check_int(self.balanced_size, "balanced_size", low=1)
        check_int(self.start_round, "start_round", low=1)
        for name in ("clf_lr", "balanced_lr"):
            if getattr(self, name) is not None:
                check_real(getattr(self, name), name, low=0.0, low_open=True)

    def _setup(self, K, w0):
        if K < 3:
            raise ValueError(f"FedCCFA's MADD distance needs at least 3 clients, got "
                             f"n_clients={K}")
        super()._setup(K, w0)
        shapes = [tuple(p.shape) for p in self.learner_.net.classifier.parameters()]
        if len(shapes) != 2 or len(shapes[0]) != 2 or shapes[1] != shapes[0][:1]:
            raise ValueError(f"FedCCFA needs a linear classifier with a bias, got parameter "
                             f"shapes {shapes}")
        self.prototypes_ = None
        self._r = 0

    def _lr(self, value) -> float:
        return self.lr if value is None else value

    def _balanced_subset(self, k: int) -> np.ndarray:
        """Client ``k``'s class-balanced sample (drawn with its generator)."""
        y = self._clients[k].y_train
        classes, counts = np.unique(y, return_counts=True)
        m = min(int(counts.min()), self.balanced_size)
        rng = self._client_rng(k)
        picked = np.concatenate([rng.choice(np.flatnonzero(y == c), m, replace=False)
                                 for c in classes])
        return rng.permutation(picked)

    def _align_weight(self, k: int) -> float:
        """Entropy of client ``k``'s label distribution over ``gamma``."""
        p = np.bincount(self._clients[k].y_train) / self._n[k]
        p = p[p > 0]
        return float(-(p * np.log(p)).sum() / self.gamma)

    def _alignment(self, k: int, weight: float):
        if self.prototypes_ is None or self._r + 1 < self.start_round:
            return None
        import torch

        protos = torch.as_tensor(self.prototypes_[k].astype(np.float32),
                                 device=self.learner_.device)
        labels, tau = self._data[k][1], self.tau
        return lambda z, sel: weight * anchor_matching_loss(z, labels[sel], protos, tau)

    def _train(self, k, w0, extra=None):
        to_work, from_work = self._workspace()
        w = to_work(self.coef_.astype(w0.dtype))  # global extractor, server classifier
        if self.balanced_epochs:
            w = self._phase(k, w, self._head, self.balanced_epochs,
                            self._lr(self.balanced_lr), subset=self._balanced_subset(k))
        self._balanced[k] = from_work(w)[self._head]
        w = to_work(w0)
        if self.clf_epochs:
            w = self._phase(k, w, self._head, self.clf_epochs, self._lr(self.clf_lr))
        weight = self._align_weight(k)
        self.align_weights_[k] = weight
        w = self._phase(k, w, ~self._head, self.local_epochs, self.lr,
                        self._alignment(k, weight))
        return self._reply(k, w0, from_work(w)), 0

    def _round(self, r):
        K, n_classes = self.n_clients_, self.learner_.n_classes
        self._r = r
        self._balanced = [None] * K
        self.align_weights_ = np.zeros(K)
        local = np.array([self._train(k, self._start_model(k))[0] for k in range(K)])
        self.local_models_ = local
        self.coef_ = np.where(self._head, self.coef_, self._aggregate(local))
        protos, counts = self._local_prototypes(local)
        heads = local[:, self._head].astype(np.float64)
        rows = self._label_rows(heads, n_classes)
        balanced = self._label_rows(np.array(self._balanced, dtype=np.float64), n_classes)
        self.clusters_ = np.array([label_clusters(balanced[c], self.eps)
                                   for c in range(n_classes)])
        for c in range(n_classes):
            self._merge(c, rows, protos, counts)
        self.prototypes_ = protos
        self.client_models_ = np.tile(self.coef_, (K, 1)).astype(np.float64)
        self.client_models_[:, self._head] = self._from_label_rows(rows)
        self._set_global_model()

    def _merge(self, c: int, rows: np.ndarray, protos: np.ndarray, counts: np.ndarray):
        """Average label classifier ``c`` and prototype ``c`` in each cluster of 2 or more."""
        for cluster in np.unique(self.clusters_[c]):
            members = np.flatnonzero(self.clusters_[c] == cluster)
            if members.size < 2:
                continue
            rows[c, members] = rows[c, members].mean(axis=0)
            holders = members[counts[members, c] > 0]
            if holders.size:
                protos[members, c] = protos[holders, c].mean(axis=0)

    def _local_prototypes(self, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every client's class means of its features under its new model, and counts."""
        n_classes = self.learner_.n_classes
        out = [class_means(self.learner_.representation(w, self._train_features(k)),
                           self._clients[k].y_train, n_classes) for k, w in enumerate(local)]
        return np.stack([m for m, _ in out]), np.stack([n for _, n in out])

    def _label_rows(self, heads: np.ndarray, n_classes: int) -> np.ndarray:
        """Classifier vectors (K, C*d + C) as label classifiers (C, K, d + 1)."""
        K = heads.shape[0]
        d = heads.shape[1] // n_classes - 1
        W = heads[:, :n_classes * d].reshape(K, n_classes, d)
        b = heads[:, n_classes * d:].reshape(K, n_classes, 1)
        return np.concatenate([W, b], axis=2).transpose(1, 0, 2).copy()

    def _from_label_rows(self, rows: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`_label_rows`."""
        n_classes, K = rows.shape[:2]
        per_client = rows.transpose(1, 0, 2)
        return np.concatenate([per_client[:, :, :-1].reshape(K, -1),
                               per_client[:, :, -1]], axis=1)
