"""FedAvg (McMahan et al., 2017) and FedProx (Li et al., 2020)."""

from __future__ import annotations

import numpy as np

from .._validation import check_real
from ..core.registry import register_method
from .base import FederatedAlgorithm
from .private_training import hooks_for

__all__ = ["FedAvg", "FedProx"]


@register_method
class FedAvg(FederatedAlgorithm):
    """Data-volume weighted average of locally trained models.

    Each round every client runs local SGD from the global model ``w``; the server sets
    ``w = sum_k n_k w_k / sum_k n_k``. See :class:`FederatedAlgorithm` for parameters
    (``solver="lbfgs"``: every client fits its local optimum, so FedAvg becomes one-shot
    averaging of the local optima).

    With ``model_dp=ClientLevelDP(...)`` this is DP-FedAvg (McMahan et al. 2018): each
    client takes part with probability ``sample_rate``, and the server moves ``w`` by
    the sum of the clipped updates plus Gaussian noise over the expected number of
    participants, every client weighing 1 (data-volume weights would break the bound
    on one client's influence; :mod:`topofl_lib.privacy.model_channel`). With
    ``model_dp=SampleLevelDP(...)`` the clients train by DP-SGD and the server averages
    as usual.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`FederatedAlgorithm`.
    solver, evaluate_on, standardise
        As in :class:`FederatedAlgorithm`.
    model_dp : None, ClientLevelDP or SampleLevelDP
        Differential privacy of the model channel (:mod:`topofl_lib.privacy.model_channel`):
        the round hooks :class:`~topofl_lib.federated.PrivateMethod` installs around any
        method (``FedAvg(model_dp=dp)`` fits as ``PrivateMethod(FedAvg(), dp)``).
        Client-level DP-FedAvg (clipped updates, Gaussian noise drawn by the clients or
        the server, client sampling) or sample-level DP-SGD in local training
        (``solver="sgd"``). ``None``: models are sent in the clear.

    Attributes
    ----------
    coef_ : ndarray (dim,)
        The global model after the last round.
    local_models_ : ndarray (K, dim)
        The models the clients returned in the last round.

    Examples
    --------
    >>> from topofl_lib import FedAvg, make_healthcare
    >>> scenario = make_healthcare(n_clients=4, n_adversarial=1, random_state=0)
    >>> est = FedAvg(n_rounds=3, random_state=0).fit(scenario)
    >>> est.coef_.shape, est.predict_proba(scenario.clients[0].X_test).shape
    ((21,), (42,))
    """

    name = "FedAvg"
    load_noise = True  # trains on the learner's mini-batches only

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 model=None, random_state=None, rng_streams="shared", solver="sgd",
                 evaluate_on=None, standardise=None, model_dp=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on, standardise)
        self.solver = solver
        self.model_dp = model_dp

    def _default_hooks(self):
        return hooks_for(self.model_dp)

    @property
    def _mean_rule(self) -> bool:
        """Hooks may replace this round's averaging; a subclass with its own server rule
        (``_round`` or ``_aggregate``) does not hand it over."""
        cls = type(self)
        return cls._round is FedAvg._round and cls._aggregate is FedAvg._aggregate

    def _setup(self, K, w0):
        self.coef_ = w0.copy()

    def _extra(self, k):
        return None

    def _round(self, r):
        w = self.coef_
        if self._hooks.aggregates:
            K = self.n_clients_
            self.local_models_, models = self._hooked_mean_round(
                w[None, :], np.zeros(K, dtype=np.int64), np.ones(K), self._extra)
            self.coef_ = models[0]
            return
        local = np.array([self._train(k, w, self._extra(k))[0] for k in range(self.n_clients_)])
        self.local_models_ = local
        self.coef_ = self._aggregate(local)

    def _aggregate(self, local: np.ndarray) -> np.ndarray:
        """Server rule: the data-volume weighted mean (robust variants override it)."""
        return self._n @ local / self._n.sum()

    def _client_model(self, k):
        return self.coef_


@register_method
class FedProx(FedAvg):
    r"""FedAvg with the proximal local objective :math:`F_k(w) + \frac{\mu}{2}\|w - w_g\|^2`.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    evaluate_on, standardise, model_dp
        As in :class:`~topofl_lib.federated.FederatedAlgorithm` (``model_dp``: as in
        :class:`FedAvg`; the proximal term is data-independent, so DP-SGD adds it after
        the noise).
    mu : float, default=0.1
        Proximal strength (paper Sec. 4.1: 0.1).
    """

    name = "FedProx"
    load_noise = True  # trains on the learner's mini-batches only

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 mu=0.1, model=None, random_state=None, rng_streams="shared",
                 evaluate_on=None, standardise=None, model_dp=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on=evaluate_on, standardise=standardise,
                         model_dp=model_dp)
        self.mu = mu

    def _check_params(self):
        super()._check_params()
        check_real(self.mu, "mu", low=0.0)

    def _extra(self, k):
        anchor = self._to_work(self.coef_)
        return lambda w: self.mu * (w - anchor)
