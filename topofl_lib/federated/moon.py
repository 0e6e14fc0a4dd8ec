r"""MOON: model-contrastive federated learning (Li, He & Song, CVPR 2021, Algorithm 1).

Client :math:`k` starts from the global model :math:`w^t` and minimises, over its
mini-batches,

.. math:: \ell = \mathrm{CE}(f(x; w), y) + \mu\,\ell_{con}, \qquad
          \ell_{con} = -\log \frac{e^{\cos(z, z_{glob})/\tau}}
          {e^{\cos(z, z_{glob})/\tau} + e^{\cos(z, z_{prev})/\tau}}

(MOON Eq. 3 and 4), where :math:`z`, :math:`z_{glob}` and :math:`z_{prev}` are the
representations of the sample under the model being trained, the global model
:math:`w^t` and the client's own model of the previous round (its local model
:math:`w_k^{t-1}`; a buffer of one model, MOON's default). The server is FedAvg's
(weighted by data volume), so ``mu=0`` is FedAvg exactly.

Choices where this package's setting differs from the paper's:

* Representation: MOON adds a projection head (a two-layer MLP) to the base encoder and
  contrasts its output. The networks here are FedTopo's (Table C.2) without such a head,
  so :math:`z` is the penultimate representation (the
  :class:`~topofl_lib.deep.models.BlockNet` neck's output).
* First round: no previous local model exists, so only the positive pair enters the
  softmax and :math:`\ell_{con} = 0` (as in the authors' released code, whose model pool
  is empty in round 1): the first round is a FedAvg round.
* :math:`z_{glob}` and :math:`z_{prev}` are fixed during the round: they are computed once
  per round for every training sample (without gradient), which gives the same numbers
  as recomputing them per mini-batch.

Hyperparameters: FedTopo does not list MOON's; MOON's defaults are :math:`\tau = 0.5`
and :math:`\mu = 5` (its best for CIFAR-10; :math:`\mu = 1` for CIFAR-100 and
Tiny-ImageNet, which :func:`topofl_lib.deep.experiments.deep_variants` uses for 100
classes).
"""

from __future__ import annotations

from .._validation import check_real
from ..core.registry import register_method
from .representation import FeatureLossFedAvg, frozen_features

__all__ = ["Moon", "model_contrastive_loss"]


def model_contrastive_loss(z, z_glob, z_prev, tau: float):
    """MOON's :math:`\\ell_{con}` (Eq. 3), averaged over the batch.

    Parameters
    ----------
    z : torch.Tensor of shape (n, d)
        Representations under the model being trained.
    z_glob : torch.Tensor of shape (n, d)
        Representations under the global model (the positive pair).
    z_prev : torch.Tensor of shape (n, d) or None
        Representations under the previous local model (the negative pair); ``None``:
        no negative, the loss is 0.
    tau : float
        Temperature.

    Returns
    -------
    torch.Tensor
        A scalar.
    """
    import torch
    from torch.nn.functional import cosine_similarity, cross_entropy

    logits = [cosine_similarity(z, z_glob, dim=1)]
    if z_prev is not None:
        logits.append(cosine_similarity(z, z_prev, dim=1))
    logits = torch.stack(logits, dim=1) / tau
    target = torch.zeros(z.shape[0], dtype=torch.long, device=z.device)
    return cross_entropy(logits, target)


@register_method
class Moon(FeatureLossFedAvg):
    """MOON (see the module docstring).

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    evaluate_on, standardise
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    model : TorchModel
        Required: the network whose penultimate representation is contrasted.
    mu : float, default=5.0
        Weight of the model-contrastive loss (MOON: 5 for CIFAR-10); 0 is FedAvg.
    tau : float, default=0.5
        Temperature (MOON: 0.5).

    Attributes
    ----------
    coef_ : ndarray (dim,)
        The global model after the last round.
    local_models_ : ndarray (K, dim)
        The models the clients returned in the last round (the next round's
        previous local models).
    """

    name = "MOON"

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 mu=5.0, tau=0.5, model=None, random_state=None, rng_streams="shared",
                 evaluate_on=None, standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on=evaluate_on, standardise=standardise)
        self.mu = mu
        self.tau = tau

    def _check_params(self):
        super()._check_params()
        check_real(self.mu, "mu", low=0.0)
        check_real(self.tau, "tau", low=0.0, low_open=True)

    def _setup(self, K, w0):
        super()._setup(K, w0)
        self.local_models_ = None

    def _feature_term(self, k):
        X = self._train_features(k)
        z_glob = frozen_features(self.learner_, self.coef_, X)
        z_prev = (None if self.local_models_ is None
                  else frozen_features(self.learner_, self.local_models_[k], X))
        mu, tau = self.mu, self.tau

        def term(z, sel):
            prev = None if z_prev is None else z_prev[sel]
            return mu * model_contrastive_loss(z, z_glob[sel], prev, tau)

        return term
