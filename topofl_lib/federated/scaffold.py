r"""SCAFFOLD (Karimireddy et al., 2020), full participation, option II control variates.

Client ``k`` corrects every stochastic gradient by :math:`c - c_k`; after its
:math:`s_k` local steps it sets
:math:`c_k^+ = c_k - c + (w - w_k)/(s_k \eta)`. The server moves
:math:`w \leftarrow w + \eta_g \frac1K\sum_k (w_k - w)` and
:math:`c \leftarrow c + \frac1K\sum_k (c_k^+ - c_k)`. Starting from zeros, the server
variate therefore always equals the mean of the client variates.

With heavy-ball momentum ``m`` in the client SGD (deep models), a constant gradient
moves the model by ``lr / (1 - m)`` per step in the long run, so the control-variate
update divides by :math:`s_k \eta / (1 - m)` instead; with ``m = 0`` this is the rule
above. (Dividing by :math:`s_k \eta` overestimates the mean gradient about ten-fold at
``m = 0.9`` and makes training diverge.)
"""

from __future__ import annotations

import numpy as np

from .._validation import check_real
from .base import FederatedAlgorithm

__all__ = ["Scaffold"]


class Scaffold(FederatedAlgorithm):
    """SCAFFOLD with server learning rate ``server_lr`` (default 1)."""

    name = "SCAFFOLD"

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 server_lr=1.0, model=None, random_state=None):
        self.n_rounds = n_rounds
        self.lr = lr
        self.local_epochs = local_epochs
        self.batch_size = batch_size
        self.C = C
        self.server_lr = server_lr
        self.model = model
        self.random_state = random_state

    def _validate_params(self):
        super()._validate_params()
        check_real(self.server_lr, "server_lr", low=0.0, low_open=True)

    def _setup(self, K, w0):
        self.coef_ = w0.copy()
        self.control_ = np.zeros(w0.size)
        self.client_controls_ = np.zeros((K, w0.size))

    def _round(self, r):
        w, c = self.coef_, self.control_
        K = self.n_clients_
        step = self.lr / (1.0 - self._learner.momentum)
        local = np.empty((K, w.size))
        new_controls = np.empty_like(self.client_controls_)
        for k in range(K):
            correction = c - self.client_controls_[k]
            local[k], steps = self._train(k, w, lambda _w, cc=correction: cc)
            new_controls[k] = self.client_controls_[k] - c + (w - local[k]) / (steps * step)
        self.coef_ = w + self.server_lr * (local - w).mean(axis=0)
        self.control_ = c + (new_controls - self.client_controls_).mean(axis=0)
        self.client_controls_ = new_controls

    def _client_model(self, k):
        return self.coef_
