r"""pFedMe (T. Dinh et al., 2020): personalised FL with Moreau envelopes.

Client ``k`` keeps a local copy :math:`w_k` of the global model. For every mini-batch
it approximately solves the personalisation problem
:math:`\theta_k = \arg\min_\theta f_k(\theta; \text{batch}) + \frac{\lambda}{2}\|\theta - w_k\|^2`
with ``inner_steps`` gradient steps of size ``personal_lr`` (warm-started at the
previous :math:`\theta_k`), then moves :math:`w_k \leftarrow w_k - \eta\lambda(w_k - \theta_k)`.
The server sets :math:`w \leftarrow (1-\beta) w + \beta \frac{1}{K}\sum_k w_k`.
Each client is evaluated with its personalised model :math:`\theta_k`.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_real
from ..core.registry import register_method
from .base import FederatedAlgorithm

__all__ = ["PFedMe"]


@register_method
class PFedMe(FederatedAlgorithm):
    """pFedMe; ``lam`` = 15 as in the paper, ``lr`` is the outer step :math:`\\eta`.

    The default ``lr=0.05`` keeps :math:`\\eta\\lambda < 1`, so the local update
    is a contraction towards :math:`\\theta_k` (with the common ``lr=0.1`` it would
    overshoot).

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    evaluate_on, standardise
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    lam : float, default=15.0
        Moreau-envelope strength :math:`\\lambda` (> 0).
    personal_lr : float, default=0.05
        Step size of the inner steps that solve for :math:`\\theta_k` (> 0).
    inner_steps : int, default=5
        Inner gradient steps per mini-batch (>= 1).
    beta : float, default=1.0
        Server mixing weight :math:`\\beta` in ``(0, 1]``; 1 is plain averaging.
    """

    name = "pFedMe"
    local_sgd = False  # the Moreau-envelope steps of _local, several per batch

    def __init__(self, n_rounds=15, lr=0.05, local_epochs=2, batch_size=32, C=1.0,
                 lam=15.0, personal_lr=0.05, inner_steps=5, beta=1.0, model=None,
                 random_state=None, rng_streams="shared", evaluate_on=None, standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on, standardise)
        self.lam = lam
        self.personal_lr = personal_lr
        self.inner_steps = inner_steps
        self.beta = beta

    def _check_params(self):
        super()._check_params()
        check_real(self.lam, "lam", low=0.0, low_open=True)
        check_real(self.personal_lr, "personal_lr", low=0.0, low_open=True)
        check_int(self.inner_steps, "inner_steps", low=1)
        check_real(self.beta, "beta", low=0.0, low_open=True, high=1.0)

    def _setup(self, K, w0):
        self.coef_ = w0.copy()
        self.personal_ = np.tile(w0, (K, 1))

    def _local(self, k):
        gradient = self._gradient(k)
        to_work, from_work = self._workspace()
        w = to_work(self.coef_)
        theta = to_work(self.personal_[k])
        n, batch = int(self._n[k]), self._batch(k)
        for _ in range(self.local_epochs):
            order = self._client_rng(k).permutation(n)
            for start in range(0, n, batch):
                idx = order[start:start + batch]
                for _ in range(self.inner_steps):
                    g = gradient(theta, idx) + self.lam * (theta - w)
                    theta -= self.personal_lr * g
                w -= self.lr * self.lam * (w - theta)
        self.personal_[k] = from_work(theta)
        return self._reply(k, self.coef_, from_work(w))

    @property
    def _mean_rule(self) -> bool:
        return True

    def _round(self, r):
        K = self.n_clients_
        if self._hooks.aggregates:  # the hooks' mean of the clients' models
            mean = self._hooks.mean_round(self.coef_[None, :], np.zeros(K, dtype=np.int64),
                                          np.ones(K), lambda k, w: self._local(k))[1][0]
        else:
            mean = np.array([self._local(k) for k in range(K)]).mean(axis=0)
        self.coef_ = (1 - self.beta) * self.coef_ + self.beta * mean

    def _client_model(self, k):
        return self.personal_[k]
