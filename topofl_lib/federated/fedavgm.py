r"""FedAvgM (Hsu, Qi & Brown, 2019): FedAvg with server momentum.

T.-M. H. Hsu, H. Qi and M. Brown, "Measuring the effects of non-identical data
distribution for federated visual classification", arXiv:1909.06335 (2019), Sec. 3
("FedAvg with server momentum"). Every round the clients train from the global model
:math:`w` exactly as in FedAvg; the server forms the pseudo-gradient
:math:`\Delta w = w - \sum_k \frac{n_k}{n} w_k` (the data-volume weighted mean update)
and applies heavy-ball momentum to it:

.. math:: v \leftarrow \beta v + \Delta w, \qquad w \leftarrow w - \eta_s v,

with :math:`v = 0` before round 1. The paper's rule is :math:`\eta_s = 1`; ``server_lr``
generalises it. We compute :math:`w - \eta_s v` as
:math:`(1 - \eta_s) w + \eta_s \bar w - \eta_s \beta v_{\text{old}}` (the same number in
exact arithmetic), so that :math:`\beta = 0, \eta_s = 1` gives FedAvg's aggregate
:math:`\bar w` bit for bit.

Citation: FedTopo (its Sec. 5 baselines) cites FedAvgM as "(2020b)", which in its
reference list is Li et al.'s FedProx paper; there is no Hsu et al. entry. We take the
name at its word: FedAvgM is Hsu et al.'s server-momentum method.

Hyperparameters: the clients use FedTopo's protocol (Appendix C, Table C.3: SGD lr
0.01, momentum 0.9, batch 32, 5 local epochs); FedTopo gives no server momentum, so
``server_momentum`` is 0.9, the value Hsu et al. report among their best and the
common default.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_real
from ..core.registry import register_method
from .fedavg import FedAvg

__all__ = ["FedAvgM"]


@register_method
class FedAvgM(FedAvg):
    r"""FedAvg with server momentum on the mean update (module docstring).

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    evaluate_on, standardise
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    server_momentum : float, default=0.9
        :math:`\beta` in ``[0, 1)``; 0 is FedAvg (with ``server_lr=1``).
    server_lr : float, default=1.0
        :math:`\eta_s` (> 0); Hsu et al.'s rule is 1.

    Attributes
    ----------
    coef_ : ndarray (dim,)
        The global model after the last round.
    local_models_ : ndarray (n_clients, dim)
        The models the clients returned in the last round.
    velocity_ : ndarray (dim,)
        The server momentum buffer :math:`v` after the last round.
    """

    name = "FedAvgM"
    load_noise = True  # trains on the learner's mini-batches only

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 server_momentum=0.9, server_lr=1.0, model=None, random_state=None,
                 rng_streams="shared", evaluate_on=None, standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on=evaluate_on, standardise=standardise)
        self.server_momentum = server_momentum
        self.server_lr = server_lr

    def _check_params(self) -> None:
        super()._check_params()
        if check_real(self.server_momentum, "server_momentum", low=0.0) >= 1.0:
            raise ValueError(f"server_momentum must be < 1, got {self.server_momentum}")
        check_real(self.server_lr, "server_lr", low=0.0, low_open=True)

    def _setup(self, K: int, w0: np.ndarray) -> None:
        super()._setup(K, w0)
        self.velocity_ = np.zeros(w0.size)

    def _aggregate(self, local: np.ndarray) -> np.ndarray:
        """The momentum step on the data-volume weighted mean of ``local``."""
        w, eta, beta = self.coef_, self.server_lr, self.server_momentum
        mean = super()._aggregate(local)
        new = (1.0 - eta) * w + eta * mean - eta * beta * self.velocity_
        self.velocity_ = beta * self.velocity_ + (w - mean)
        return new
