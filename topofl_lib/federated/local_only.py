"""Local-only training: every client trains alone and never aggregates.

The standard lower reference of federated learning: what each client reaches with its
own data only. Each round, client ``k`` continues training its own model (from zeros
in round 1) with the configured local solver; nothing is sent, so the server does
nothing, and each client is evaluated with its own model. With ``solver="lbfgs"`` every
client's model is its local optimum from round 1 on.

Model-poisoning attacks (``attack="sign_flip"``) have no channel here: an adversarial
client's data attacks (flipped labels) still shape its own model, which is what it is
evaluated with.

The pTopoFL paper's Table 1 "FedAvg" row comes from an older version of its code whose
"FedAvg" was this baseline (with the lbfgs solver); see
:mod:`topofl_lib.data.paper_protocol`.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_finite
from ..core.registry import register_method
from .base import FederatedAlgorithm

__all__ = ["LocalOnly"]


@register_method
class LocalOnly(FederatedAlgorithm):
    """Each client trains its own model on its own data; no aggregation.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams, solver,
    evaluate_on, standardise
        As in :class:`FederatedAlgorithm`.

    Attributes
    ----------
    client_models_ : ndarray (K, dim)
        Every client's model after the last round (what it deploys).
    """

    name = "Local-only"
    load_noise = True  # trains on the learner's mini-batches only

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 model=None, random_state=None, rng_streams="shared", solver="sgd",
                 evaluate_on=None, standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on, standardise)
        self.solver = solver

    def _setup(self, K, w0):
        self.client_models_ = np.tile(w0, (K, 1))

    def _round(self, r):
        for k in range(self.n_clients_):
            self.client_models_[k] = self._train(k, self.client_models_[k])[0]

    def _reply(self, k, w0, w):
        # nothing is sent, so there is no update to poison; the model is still checked
        return check_finite(w, f"the model client {k} returned in round {self._round_number}",
                            hint=" after local training: it diverged (lower lr)",
                            error=FloatingPointError)

    def _client_model(self, k):
        return self.client_models_[k]
