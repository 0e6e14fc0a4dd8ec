"""Byzantine-robust aggregation baselines: coordinate-wise median, trimmed mean, Krum.

Each is FedAvg with another server rule (the clients are unchanged):

* :class:`CoordinateMedian` (Yin et al., 2018): the median of the client models in every
  coordinate.
* :class:`TrimmedMean` (Yin et al., 2018): per coordinate, drop the ``trim`` fraction of
  largest and of smallest values, average the rest.
* :class:`Krum` (Blanchard et al., 2017): the client model whose summed squared distance
  to its ``K - f - 2`` nearest other models is smallest, ``f`` the assumed number of
  Byzantine clients (``n_byzantine``; default the largest ``f`` with ``K > 2 f + 2``).

None uses the data-volume weights: that is what makes them robust, and also what costs
them accuracy when honest clients differ in size.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist
from scipy.stats import trim_mean

from .._validation import check_int, check_real
from ..core.registry import register_method
from .fedavg import FedAvg

__all__ = ["CoordinateMedian", "Krum", "TrimmedMean"]


@register_method
class CoordinateMedian(FedAvg):
    """FedAvg clients, coordinate-wise median server.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    solver, evaluate_on, standardise, model_dp
        As in :class:`~topofl_lib.federated.FedAvg` (``model_dp``: DP-SGD
        only; client-level DP would replace the median by DP-FedAvg's noisy mean).
    """

    name = "Median"
    load_noise = True  # trains on the learner's mini-batches only

    def _aggregate(self, local):
        return np.median(local, axis=0)


@register_method
class TrimmedMean(FedAvg):
    """FedAvg clients, coordinate-wise trimmed-mean server.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    evaluate_on, standardise
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    trim : float, default=0.2
        Fraction cut from each end in every coordinate (``0 <= trim < 0.5``).
    """

    name = "TrimmedMean"
    load_noise = True  # trains on the learner's mini-batches only

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 trim=0.2, model=None, random_state=None, rng_streams="shared",
                 evaluate_on=None, standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on=evaluate_on, standardise=standardise)
        self.trim = trim

    def _check_params(self):
        super()._check_params()
        check_real(self.trim, "trim", low=0.0, high=0.49)

    def _aggregate(self, local):
        return trim_mean(local, self.trim, axis=0)


@register_method
class Krum(FedAvg):
    """FedAvg clients, Krum server.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    evaluate_on, standardise
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`.
    n_byzantine : int or None
        Assumed number of Byzantine clients ``f``; needs ``K > 2 f + 2``.
    """

    name = "Krum"
    load_noise = True  # trains on the learner's mini-batches only

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 n_byzantine=None, model=None, random_state=None, rng_streams="shared",
                 evaluate_on=None, standardise=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on=evaluate_on, standardise=standardise)
        self.n_byzantine = n_byzantine

    def _aggregate(self, local):
        K = local.shape[0]
        f = (K - 3) // 2 if self.n_byzantine is None else self.n_byzantine
        check_int(f, "n_byzantine", low=0, high=max((K - 3) // 2, 0))
        d2 = cdist(local, local, "sqeuclidean")
        np.fill_diagonal(d2, np.inf)
        m = max(K - f - 2, 1)
        scores = np.sort(d2, axis=1)[:, :m].sum(axis=1)
        self.selected_ = int(np.argmin(scores))
        return local[self.selected_].copy()
