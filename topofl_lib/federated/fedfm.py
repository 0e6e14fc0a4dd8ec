r"""FedFM: anchor-based feature matching (Ye, Ni, Xu, Wang, Chen & Eldar, IEEE TSP 71,
2023, Algorithm 1 with the contrastive-guiding loss).

Each round, client :math:`k` trains from the global model :math:`w^t` on

.. math:: \ell = \mathrm{CE}(f(x; w), y) + \lambda\,\ell_{CG}, \qquad
          \ell_{CG} = -\log \frac{e^{\cos(z, a_y)/\tau}}{\sum_c e^{\cos(z, a_c)/\tau}},

where :math:`z` is the sample's penultimate representation and :math:`a_c` the global
anchor of class :math:`c`: the contrastive-guiding (CG) loss pulls a feature towards its
class's anchor and pushes it from the other classes' anchors (features and anchors are
L2-normalised, so the similarity is the cosine). The server averages the models by data
volume (FedAvg), then refreshes the anchors: every client sends the per-class means of
its training features under the new global model (its *local anchors*) and its class
counts; the global anchor of class :math:`c` is the count-weighted mean of the local
anchors, :math:`a_c = \sum_k n_{k,c} a_{k,c} / \sum_k n_{k,c}` (a class no client holds
keeps a zero anchor, which only adds a constant logit). The anchors are used from the
next round on, so the first round, which has none, is a FedAvg round; ``lam=0`` is
FedAvg exactly.

Hyperparameters: FedTopo gives none for FedFM; the authors' released code sets
:math:`\lambda = 50` and :math:`\tau = 0.1`. That code also starts the matching only in
round 20 of 100 (a FedAvg warm-up). FedTopo's protocol has 5 to 10 rounds, so the
default ``start_round=2`` matches from the first round that has anchors (our choice;
``start_round`` restores a warm-up). The paper's L2 variant and FedFM-Lite are not
implemented; anchors are not smoothed across rounds (the released code's momentum is 0).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_real
from ..core.registry import register_method
from .representation import FeatureLossFedAvg

__all__ = ["FedFM", "anchor_matching_loss"]


def anchor_matching_loss(z, y, anchors, tau: float):
    """FedFM's contrastive-guiding loss, averaged over the batch.

    Parameters
    ----------
    z : torch.Tensor of shape (n, d)
        Features.
    y : torch.Tensor of shape (n,), dtype long
        Their labels.
    anchors : torch.Tensor of shape (n_classes, d)
        The global anchors.
    tau : float
        Temperature.

    Returns
    -------
    torch.Tensor
        A scalar.
    """
    from torch.nn.functional import cross_entropy, normalize

    return cross_entropy(normalize(z, dim=1) @ normalize(anchors, dim=1).T / tau, y)


@register_method
class FedFM(FeatureLossFedAvg):
    """FedFM with the contrastive-guiding loss (see the module docstring).

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    evaluate_on, standardise
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    model : TorchModel
        Required: the network whose penultimate features are matched.
    lam : float, default=50.0
        Weight of the feature-matching loss (released code: 50); 0 is FedAvg.
    tau : float, default=0.1
        Temperature of the contrastive-guiding loss (released code: 0.1).
    start_round : int, default=2
        First round (1-based) whose clients add the matching loss; rounds before it are
        FedAvg rounds (anchors exist from round 2 on).

    Attributes
    ----------
    coef_ : ndarray (dim,)
        The global model after the last round.
    local_models_ : ndarray (K, dim)
        The models the clients returned in the last round.
    anchors_ : ndarray (n_classes, n_hidden)
        The global anchors computed after the last round (what a next round would match).
    anchor_counts_ : ndarray (n_classes,)
        The number of training samples of each class over all clients.
    """

    name = "FedFM"

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 lam=50.0, tau=0.1, start_round=2, model=None, random_state=None,
                 rng_streams="shared", evaluate_on=None, standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on=evaluate_on, standardise=standardise)
        self.lam = lam
        self.tau = tau
        self.start_round = start_round

    def _check_params(self):
        super()._check_params()
        check_real(self.lam, "lam", low=0.0)
        check_real(self.tau, "tau", low=0.0, low_open=True)
        check_int(self.start_round, "start_round", low=1)

    def _setup(self, K, w0):
        super()._setup(K, w0)
        self.anchors_ = None
        self._r = 0

    def _round(self, r):
        self._r = r
        super()._round(r)
        # the clients' local anchors under the new global model, count-weighted
        self.anchors_, self.anchor_counts_ = self._pooled_class_means(
            [self.coef_] * self.n_clients_)

    def _feature_term(self, k):
        if self.anchors_ is None or self._r + 1 < self.start_round:
            return None
        import torch

        anchors = torch.as_tensor(self.anchors_.astype(np.float32), device=self.learner_.device)
        labels, lam, tau = self._data[k][1], self.lam, self.tau
        return lambda z, sel: lam * anchor_matching_loss(z, labels[sel], anchors, tau)
