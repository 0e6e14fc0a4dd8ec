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

``control_update="add_full"`` (not the default) is the server rule of the pTopoFL
paper's released code (v1.0.0), behind its Table 1 SCAFFOLD row: the server adds every
client's *full* new control variate to its own,
:math:`c \leftarrow c + \sum_k c_k^+`, instead of the mean of the *changes*. Everything
else (client steps, client variates, model update) is unchanged. The server variate then
no longer estimates the mean gradient: it accumulates K client variates per round, and
the correction :math:`c - c_k` every client applies grows with the rounds. We read "adds
each client's full control variate" literally as the sum over clients.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._validation import check_choice, check_real
from ..core.registry import register_method
from .base import FederatedAlgorithm

__all__ = ["CONTROL_UPDATES", "Scaffold", "scaffold_drift"]

#: SCAFFOLD server rules for the control variate: Karimireddy et al.'s (the mean of the
#: clients' changes), or the pTopoFL v1.0.0 code's (the sum of the clients' full variates).
CONTROL_UPDATES = ("mean_change", "add_full")


@register_method
class Scaffold(FederatedAlgorithm):
    r"""SCAFFOLD with server learning rate ``server_lr`` (default 1).

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams, evaluate_on,
    standardise
        As in :class:`FederatedAlgorithm`.
    server_lr : float, default=1.0
        Server step on the mean model change.
    control_update : {"mean_change", "add_full"}, default="mean_change"
        Server rule for the control variate: ``"mean_change"`` is SCAFFOLD's (option
        II); ``"add_full"`` is the pTopoFL v1.0.0 code's (module docstring), kept to show
        what produces the paper's SCAFFOLD row, not for use.

    Attributes
    ----------
    coef_ : ndarray
        The global model.
    control_ : ndarray
        The server control variate :math:`c`.
    client_controls_ : ndarray (n_clients, n_params)
        The client control variates :math:`c_k`.
    correction_norms_ : list of ndarray (n_clients,)
        One entry per round started: :math:`\|c - c_k\|`, the correction client ``k``
        adds to every local gradient in that round (0 in the first). Appended as the
        rounds start, so a fit that diverged keeps the rounds it reached.
    local_steps_ : list of ndarray (n_clients,)
        Likewise, the local SGD steps each client takes in the round (``local_epochs``
        times its number of mini-batches). Over ``s_k`` steps the correction alone moves
        client ``k``'s model by up to ``s_k * lr / (1 - momentum) * ||c - c_k||``
        (:func:`scaffold_drift`).
    coef_norms_ : list of float
        Likewise, :math:`\|w\|` of the global model at the start of the round.
    """

    name = "SCAFFOLD"
    load_noise = True  # trains on the learner's mini-batches only

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 server_lr=1.0, model=None, random_state=None, control_update="mean_change",
                 rng_streams="shared", evaluate_on=None, standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on, standardise)
        self.server_lr = server_lr
        self.control_update = control_update

    def _check_params(self):
        super()._check_params()
        check_real(self.server_lr, "server_lr", low=0.0, low_open=True)
        check_choice(self.control_update, "control_update", CONTROL_UPDATES)

    def _setup(self, K, w0):
        self.coef_ = w0.copy()
        self.control_ = np.zeros(w0.size)
        self.client_controls_ = np.zeros((K, w0.size))
        self.correction_norms_, self.local_steps_, self.coef_norms_ = [], [], []

    def _round(self, r):
        w, c = self.coef_, self.control_
        K = self.n_clients_
        self.correction_norms_.append(np.linalg.norm(c - self.client_controls_, axis=1))
        self.local_steps_.append(np.array([self.local_epochs * -(-int(self._n[k]) // self._batch(k))
                                           for k in range(K)]))
        self.coef_norms_.append(float(np.linalg.norm(w)))
        step = self.lr / (1.0 - self.learner_.momentum)
        local = np.empty((K, w.size))
        new_controls = np.empty_like(self.client_controls_)
        for k in range(K):
            correction = self._to_work(c - self.client_controls_[k])
            local[k], steps = self._train(k, w, lambda _w, cc=correction: cc)
            new_controls[k] = self.client_controls_[k] - c + (w - local[k]) / (steps * step)
        self.coef_ = w + self.server_lr * (local - w).mean(axis=0)
        if self.control_update == "add_full":
            self.control_ = c + new_controls.sum(axis=0)
        else:
            self.control_ = c + (new_controls - self.client_controls_).mean(axis=0)
        self.client_controls_ = new_controls

    def _client_model(self, k):
        return self.coef_


def scaffold_drift(scenario, **params) -> pd.DataFrame:
    r"""Fit :class:`Scaffold` and tabulate how far its correction pushes each client.

    Client ``k`` adds the same vector :math:`c - c_k` to each of its :math:`s_k` local
    gradients, so with SGD step ``lr`` and momentum ``m`` the correction alone moves its
    model by up to :math:`s_k \cdot lr / (1 - m) \cdot \|c - c_k\|` in a round
    (``correction_shift``; reached when the term dominates the gradient). Compared with
    ``model_norm``, :math:`\|w\|` at the round's start, it shows whether a client with
    many more local steps than the others is pushed off by the others' gradients. A fit
    that diverges is caught: the table ends with the round it diverged in
    (``diverged`` True there).

    Parameters
    ----------
    scenario : FederatedScenario
        The clients.
    **params
        :class:`Scaffold` parameters (``model``, ``lr``, ``n_rounds``, ...).

    Returns
    -------
    pandas.DataFrame
        One row per round reached and client: ``round`` (1-based), ``client``,
        ``n_train``, ``local_steps``, ``correction_norm``, ``correction_shift``,
        ``model_norm``, ``diverged``.
    """
    est = Scaffold(**params)
    diverged = False
    try:
        est.fit(scenario)
    except FloatingPointError:
        diverged = True
    if not hasattr(est, "correction_norms_"):
        raise ValueError("the fit stopped before its first round; see Scaffold.fit")
    step = est.lr / (1.0 - est.learner_.momentum)
    reached = len(est.coef_norms_)
    rows = []
    for r in range(reached):
        for k, client in enumerate(scenario.clients_at(r)):
            norm = est.correction_norms_[r][k]
            rows.append({"round": r + 1, "client": k, "n_train": client.n_train,
                         "local_steps": int(est.local_steps_[r][k]), "correction_norm": norm,
                         "correction_shift": est.local_steps_[r][k] * step * norm,
                         "model_norm": est.coef_norms_[r],
                         "diverged": diverged and r == reached - 1})
    return pd.DataFrame(rows)
