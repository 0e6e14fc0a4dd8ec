r"""FedPAC: feature alignment and classifier collaboration (Xu, Tong & Huang, ICLR 2023,
"Personalized Federated Learning with Feature Alignment and Classifier Collaboration",
Algorithm 1).

The network is split into a feature extractor :math:`\theta` (the
:class:`~topofl_lib.deep.models.BlockNet` blocks and neck, whose output is the
penultimate representation :math:`z`) and a classifier :math:`\phi` (its last linear
layer). Every round:

1. Client :math:`k` takes the global extractor and keeps its own classifier
   :math:`\phi_k`. Under that model it computes its feature statistics for the server
   (below) and its class means.
2. It trains the classifier alone for one epoch (cross-entropy, extractor frozen), then
   the extractor alone for ``local_epochs`` epochs (classifier frozen) on
   :math:`\mathrm{CE} + \lambda \cdot \mathrm{MSE}(z, c_y)`, the mean squared distance
   of each feature to the global centroid of its class (from round 2 on; round 1 has
   no centroids). FedPAC's Eq. 6 "feature alignment".
3. It sends its model, its class counts and the class means of its new features (its
   local centroids).
4. The server averages the models by data volume (the extractor everyone takes next),
   the centroids by class counts (:math:`c_c = \sum_k n_{k,c} \mu_{k,c} / \sum_k n_{k,c}`),
   and gives client :math:`i` the combination :math:`\sum_j \alpha_{ij} \phi_j` of the
   classifiers, with :math:`\alpha_i` the minimiser over the simplex of
   :math:`\alpha^\top (\mathrm{diag}(V) + D^{(i)}) \alpha` (FedPAC Eq. 9-10, the
   "classifier collaboration"), where :math:`D^{(i)}_{jj'} = \sum_c (h_{i,c} -
   h_{j,c})^\top (h_{i,c} - h_{j',c})` with :math:`h_{j,c} = p_{j,c}\,\mu_{j,c}` (class
   prior times class mean) and :math:`V_j = \frac1{n_j} \sum_c \big(p_{j,c}\,
   \mathbb{E}[\|z\|^2 \mid c] - p_{j,c}^2 \|\mu_{j,c}\|^2\big)`
   (:func:`collaboration_weights`).

Each client deploys the global extractor with its combined classifier.

Details the paper leaves to its released code, which we follow: the statistics are those
of the model the client starts the round with; a matrix that is not positive
semi-definite keeps only its eigenvalues of at least 0.01; weights below 1e-3 are set
to zero and the rest renormalised.

Hyperparameters: :math:`\lambda = 1` and one classifier epoch (FedPAC's defaults).
FedPAC's code trains the classifier epoch with lr 0.1 and both phases with momentum 0.5
and weight decay 5e-4; FedTopo runs every method with its SGD (lr 0.01, momentum 0.9,
no weight decay), so ``head_lr=None`` uses ``lr``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from .._validation import as_float_array, check_int, check_real
from ..core.registry import register_method
from .representation import DecoupledFedAvg, class_means

__all__ = ["FedPAC", "collaboration_weights", "feature_statistics"]

#: Eigenvalues kept when a collaboration matrix is not positive semi-definite, and the
#: weights zeroed afterwards (FedPAC's released code).
_MIN_EIGENVALUE, _MIN_WEIGHT = 0.01, 1e-3


def feature_statistics(Z: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[float, np.ndarray]:
    """A client's ``(V, h)`` for the classifier collaboration.

    Parameters
    ----------
    Z : ndarray of shape (n_samples, n_hidden)
        Its training features.
    y : ndarray of shape (n_samples,)
        Its labels.
    n_classes : int
        Number of classes.

    Returns
    -------
    V : float
        :math:`\\frac1n \\sum_c (p_c \\mathbb{E}[\\|z\\|^2 | c] - p_c^2 \\|\\mu_c\\|^2)`.
    h : ndarray of shape (n_classes, n_hidden)
        :math:`p_c \\mu_c` (zero for an absent class).
    """
    means, counts = class_means(Z, y, n_classes)  # checks Z, y and n_classes
    Z = np.asarray(Z, dtype=np.float64)
    p = counts / Z.shape[0]
    sq, _ = class_means((Z ** 2).sum(axis=1, keepdims=True), y, n_classes)
    V = float((p * sq[:, 0] - p ** 2 * (means ** 2).sum(axis=1)).sum() / Z.shape[0])
    return V, p[:, None] * means


def _psd(P: np.ndarray) -> np.ndarray:
    """``P``, or its part of eigenvalues >= 0.01 when it has a negative eigenvalue."""
    evals, evecs = np.linalg.eigh(P)
    if evals.min() >= 0:
        return P
    keep = evals >= _MIN_EIGENVALUE
    return (evecs[:, keep] * evals[keep]) @ evecs[:, keep].T


def _simplex_qp(P: np.ndarray) -> np.ndarray:
    """``argmin a^T P a`` over the probability simplex (SLSQP from the uniform point)."""
    K = P.shape[0]
    res = minimize(lambda a: a @ P @ a, np.full(K, 1.0 / K), jac=lambda a: 2.0 * P @ a,
                   method="SLSQP", bounds=[(0.0, 1.0)] * K,
                   constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1.0,
                                 "jac": lambda a: np.ones_like(a)}],
                   options={"ftol": 1e-12, "maxiter": 500})
    return np.clip(res.x, 0.0, None)


def collaboration_weights(V: np.ndarray, H: np.ndarray) -> np.ndarray:
    """FedPAC's classifier-combination weights, one row per client.

    Parameters
    ----------
    V : ndarray of shape (n_clients,)
        The clients' variance terms (:func:`feature_statistics`).
    H : ndarray of shape (n_clients, n_classes, n_hidden)
        The clients' :math:`h` (:func:`feature_statistics`).

    Returns
    -------
    ndarray of shape (n_clients, n_clients)
        Row ``i``: the weights of the classifiers client ``i`` combines (non-negative,
        summing to one; weights below 1e-3 zeroed and the rest renormalised).
    """
    V, H = as_float_array(V, "V"), as_float_array(H, "H")
    if V.ndim != 1 or V.size == 0 or H.ndim != 3 or H.shape[0] != V.size:
        raise ValueError(f"V must have shape (n_clients,) and H (n_clients, n_classes, "
                         f"n_hidden) with the same n_clients, got {V.shape} and {H.shape}")
    K = V.size
    out = np.empty((K, K))
    for i in range(K):
        diff = (H[i][None] - H).reshape(K, -1)
        alpha = _simplex_qp(_psd(np.diag(V) + diff @ diff.T))
        alpha[alpha <= _MIN_WEIGHT] = 0.0
        out[i] = alpha / alpha.sum()
    return out


@register_method
class FedPAC(DecoupledFedAvg):
    """FedPAC (see the module docstring).

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm` (``local_epochs``: the
        extractor's epochs).
    evaluate_on, standardise
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    model : TorchModel
        Required: the network (its last linear layer is the classifier).
    lam : float, default=1.0
        Weight of the feature-alignment loss (FedPAC: 1).
    head_epochs : int, default=1
        Epochs of the classifier phase (FedPAC: 1).
    head_lr : float or None, default=None
        Learning rate of the classifier phase; ``None``: ``lr``.
    deploy : {"personal", "global"}, default="personal"
        What the clients are scored with: their own models (``client_models_``, FedPAC's
        deployment) or ``global_model_`` (FedTopo's Table 1 scores "the global model").

    Attributes
    ----------
    coef_ : ndarray (dim,)
        The data-volume weighted mean of the clients' last models (its extractor is the
        global one).
    local_models_ : ndarray (K, dim)
        The models the clients returned in the last round.
    client_models_ : ndarray (K, dim)
        What each client deploys: the global extractor with its combined classifier.
    centroids_ : ndarray (n_classes, n_hidden)
        The global class centroids after the last round.
    collaboration_ : ndarray (K, K)
        The last round's classifier-combination weights (row ``i``: client ``i``'s).
    global_model_ : ndarray (dim,)
        The global extractor with the clients' combined classifiers averaged by data
        volume.
    """

    name = "FedPAC"

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 lam=1.0, head_epochs=1, head_lr=None, deploy="personal", model=None,
                 random_state=None, rng_streams="shared", evaluate_on=None, standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on=evaluate_on, standardise=standardise)
        self.lam = lam
        self.head_epochs = head_epochs
        self.head_lr = head_lr
        self.deploy = deploy

    def _check_params(self):
        super()._check_params()
        check_real(self.lam, "lam", low=0.0)
        check_int(self.head_epochs, "head_epochs", low=0)
        if self.head_lr is not None:
            check_real(self.head_lr, "head_lr", low=0.0, low_open=True)

    def _setup(self, K, w0):
        super()._setup(K, w0)
        self.centroids_ = None
        self._stats = [None] * K

    def _train(self, k, w0, extra=None):
        learner, y = self.learner_, self._clients[k].y_train
        Z = learner.representation(w0, self._train_features(k))
        self._stats[k] = feature_statistics(Z, y, learner.n_classes)
        to_work, from_work = self._workspace()
        w = to_work(w0)
        if self.head_epochs:
            lr = self.lr if self.head_lr is None else self.head_lr
            w = self._phase(k, w, self._head, self.head_epochs, lr)
        w = self._phase(k, w, ~self._head, self.local_epochs, self.lr, self._alignment(k))
        return self._reply(k, w0, from_work(w)), 0

    def _alignment(self, k: int):
        """Client ``k``'s feature-alignment term, or ``None`` before any centroid exists."""
        if self.centroids_ is None:
            return None
        import torch

        targets = torch.as_tensor(self.centroids_.astype(np.float32),
                                  device=self.learner_.device)[self._data[k][1]]
        lam = self.lam
        return lambda z, sel: lam * torch.nn.functional.mse_loss(z, targets[sel])

    def _round(self, r):
        K = self.n_clients_
        local = np.array([self._train(k, self._start_model(k))[0] for k in range(K)])
        self.local_models_ = local
        self.coef_ = self._aggregate(local)
        self.centroids_ = self._pooled_class_means(local)[0]
        V = np.array([s[0] for s in self._stats])
        H = np.stack([s[1] for s in self._stats])
        self.collaboration_ = collaboration_weights(V, H)
        heads = self.collaboration_ @ local[:, self._head].astype(np.float64)
        self.client_models_ = np.tile(self.coef_, (K, 1))
        self.client_models_[:, self._head] = heads
        self._set_global_model()
