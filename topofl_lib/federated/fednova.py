r"""FedNova (Wang, Liu, Liang, Joshi & Poor, 2020): normalized averaging.

J. Wang, Q. Liu, H. Liang, G. Joshi and H. V. Poor, "Tackling the objective
inconsistency problem in heterogeneous federated optimization", NeurIPS 33 (2020),
Sec. 4 (Eq. 6-7) and Appendix (momentum SGD). Client :math:`k` runs its
:math:`\tau_k` local steps from the global model :math:`w` exactly as in FedAvg; its
cumulative update :math:`w - w_k = \eta\, G_k a_k` is a weighted sum of its
stochastic gradients with weights :math:`a_k`. The server normalises each update by
:math:`\|a_k\|_1` and rescales by an effective step count:

.. math:: w \leftarrow w - \tau_{\text{eff}} \sum_k p_k \frac{w - w_k}{\|a_k\|_1},
          \qquad \tau_{\text{eff}} = \sum_k p_k \|a_k\|_1, \quad p_k = n_k / n.

Plain SGD has :math:`a_k = (1, \dots, 1)`, so :math:`\|a_k\|_1 = \tau_k`. With
heavy-ball momentum :math:`\rho` (FedTopo's clients: 0.9) the :math:`j`-th gradient's
weight in the final model is :math:`(1 - \rho^{\tau_k - j + 1}) / (1 - \rho)`, so

.. math:: \|a_k\|_1 = \frac{1}{1 - \rho}\Big(\tau_k - \frac{\rho (1 - \rho^{\tau_k})}
          {1 - \rho}\Big),

the paper's normaliser of momentum SGD (the momentum buffer restarts at zero each
round, as in :func:`~topofl_lib.federated.local.local_sgd`). When every client takes the
same number of steps the normalisers are equal and cancel: FedNova is FedAvg (up to
rounding). :math:`\tau_{\text{eff}}` is the paper's default choice, which keeps
FedAvg's step size on average.

Hyperparameters: FedTopo's protocol (Appendix C, Table C.3: SGD lr 0.01, momentum
0.9, batch 32, 5 local epochs); FedNova has no parameter of its own. Full
participation, as in FedTopo.
"""

from __future__ import annotations

import numpy as np

from ..core.registry import register_method
from .fedavg import FedAvg

__all__ = ["FedNova", "momentum_normaliser"]


def momentum_normaliser(steps: np.ndarray, momentum: float) -> np.ndarray:
    r""":math:`\|a\|_1` of ``steps`` heavy-ball SGD steps with momentum ``momentum``.

    Parameters
    ----------
    steps : ndarray of int
        Local steps :math:`\tau` of each client.
    momentum : float
        :math:`\rho` in ``[0, 1)``; 0 gives ``steps`` itself.

    Returns
    -------
    ndarray of float
        The normaliser of each client (module docstring).
    """
    tau = np.asarray(steps, dtype=np.float64)
    if momentum == 0.0:
        return tau
    rho = float(momentum)
    return (tau - rho * (1.0 - rho ** tau) / (1.0 - rho)) / (1.0 - rho)


@register_method
class FedNova(FedAvg):
    r"""FedNova: normalized averaging of the clients' cumulative updates.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    evaluate_on, standardise
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.

    Attributes
    ----------
    coef_ : ndarray (dim,)
        The global model after the last round.
    local_models_ : ndarray (n_clients, dim)
        The models the clients returned in the last round.
    local_steps_ : ndarray of int (n_clients,)
        :math:`\tau_k`, the local SGD steps of each client in the last round.
    normalisers_ : ndarray (n_clients,)
        :math:`\|a_k\|_1` of the last round.
    tau_eff_ : float
        :math:`\tau_{\text{eff}}` of the last round.
    """

    name = "FedNova"
    load_noise = True  # trains on the learner's mini-batches only

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 model=None, random_state=None, rng_streams="shared", evaluate_on=None,
                 standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on=evaluate_on, standardise=standardise)

    def _round(self, r: int) -> None:
        w = self.coef_
        trained = [self._train(k, w) for k in range(self.n_clients_)]
        local = np.array([model for model, _ in trained])
        self.local_models_ = local
        self.local_steps_ = np.array([steps for _, steps in trained], dtype=np.int64)
        self.normalisers_ = momentum_normaliser(self.local_steps_, self.learner_.momentum)
        p = self._n / self._n.sum()
        self.tau_eff_ = float(p @ self.normalisers_)
        direction = (p / self.normalisers_) @ (w - local.astype(np.float64))
        self.coef_ = w - self.tau_eff_ * direction
