"""Differential privacy of a fit's model channel, around the method's round.

:class:`PrivateTraining` is what a :class:`~topofl_lib.federated.FederatedAlgorithm`
holds for its ``model_dp`` (as Flower wraps a strategy in its DP strategies): the option
checked against the method, one accountant per client for the released models and one
for what the server itself sees, the client-level round (clip, noise where the option
draws it, the fixed-denominator mean) and sample-level DP-SGD's gradient and batches,
the per-round log line and the epsilons of ``history_``. Built with ``dp=None`` it does
nothing: no accountant, no extra random draw.

The options are seen through :class:`topofl_lib.core.privacy.ModelPrivacy` only, so the
federated layer does not depend on the privacy layer above it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from .._validation import check_choice
from ..core.learner import PrivateGradients
from ..core.privacy import LEVELS, ModelPrivacy
from .local import private_gradient

__all__ = ["PrivateTraining"]

#: The per-round privacy lines (INFO) of runs with ``model_dp``.
logger = logging.getLogger("topofl_lib.federated")

#: Why sample-level DP refuses per-client standardisation: the mean and scale couple records.
_STANDARDISED_SAMPLE_DP = (
    "model_dp={dp!r} bounds what removing one record changes in a clipped batch sum (by the "
    "clip), but standardise=True scales every record by its client's mean and standard "
    "deviation, so removing one record changes every example's gradient and the "
    "accountant's bound does not hold; standardise with public statistics beforehand, or "
    "use ClientLevelDP (it protects a client's whole data)")


class PrivateTraining:
    """The model-channel DP of one fit (``dp=None``: none, and nothing is drawn).

    Parameters
    ----------
    dp : None, ClientLevelDP or SampleLevelDP
        The method's ``model_dp``.
    """

    def __init__(self, dp=None):
        self.dp = dp
        self.accountants_ = self.server_accountants_ = None

    @property
    def level(self) -> str | None:
        """``"client"``, ``"sample"`` or None (no DP)."""
        return None if self.dp is None else self.dp.level

    @staticmethod
    def check(dp, method: str, *, solver: str, client_dp: bool, own_gradient: bool) -> None:
        """Refuse an option the method cannot honour (a ValueError or TypeError naming it).

        Parameters
        ----------
        dp : object
            The ``model_dp`` given (None passes).
        method : str
            The method's class name, for the messages.
        solver : str
            Its solver (DP-SGD needs ``"sgd"``).
        client_dp : bool
            Whether its rounds run client-level DP (their server rule is DP-FedAvg's).
        own_gradient : bool
            Whether it adds a data-dependent term of its own to the learner's gradient.
        """
        if dp is None:
            return
        if not isinstance(dp, ModelPrivacy):
            raise TypeError("model_dp must be None, a ClientLevelDP or a SampleLevelDP "
                            f"(topofl_lib.privacy), got {type(dp).__name__}")
        dp.check()
        check_choice(dp.level, "model_dp.level", LEVELS)
        if dp.level == "sample" and solver == "lbfgs":
            raise ValueError(f"model_dp={dp!r} runs DP-SGD in local training; it needs "
                             "solver='sgd', got solver='lbfgs'")
        if dp.level == "sample" and own_gradient:
            raise ValueError(f"model_dp={dp!r} clips per-example gradients of the "
                             f"learner's loss, but {method} adds its own data-dependent "
                             "term to the gradient")
        if dp.level == "client" and not client_dp:
            raise ValueError(f"model_dp={dp!r} replaces the server's rule by DP-FedAvg's "
                             f"noisy sum, which {method} does not run (its server rule is "
                             "its own); use SampleLevelDP")

    def check_fit(self, standardise: bool, asked: bool) -> None:
        """Refuse sample-level DP on per-client standardised features.

        Parameters
        ----------
        standardise : bool
            Whether the fit standardises each client.
        asked : bool
            Whether the method asked for it (else the scenario did).
        """
        if self.level == "sample" and standardise:
            hint = ("" if asked else " (the scenario asks for standardise=True; pass "
                    "standardise=False)")
            raise ValueError(_STANDARDISED_SAMPLE_DP.format(dp=self.dp) + hint)

    def start(self, n_clients: int, learner, rng: np.random.Generator) -> None:
        """One accountant per client and the noise stream; nothing without DP.

        Parameters
        ----------
        n_clients : int
            The clients of the fit.
        learner : object
            The fit's learner (DP-SGD needs its clipped per-example gradients).
        rng : numpy.random.Generator
            The fit's generator; the noise stream is spawned from it, leaving its own
            draws unchanged.
        """
        dp = self.dp
        if dp is None:
            return
        if dp.level == "sample" and not isinstance(learner, PrivateGradients):
            raise TypeError(f"model_dp={dp!r} needs clipped per-example gradients, which "
                            f"the learner {type(learner).__name__} does not compute")
        self.accountants_ = [dp.accountant() for _ in range(n_clients)]
        # what the server itself sees: the same descriptor releases and DP-SGD steps (noised
        # at the client); for client-level DP each update with its own share of the noise
        self.server_accountants_ = [dp.accountant() for _ in range(n_clients)]
        self._rng = rng.spawn(1)[0]
        self._steps = np.zeros(n_clients, dtype=np.int64)
        self._group_sizes = np.ones(n_clients, dtype=np.int64)

    def account(self, event: dict, round_number: int, clients=None) -> None:
        """Record a release for some clients; nothing without DP.

        Parameters
        ----------
        event : dict
            The release (:meth:`topofl_lib.privacy.PrivacyAccountant.record`'s event,
            without its round).
        round_number : int
            Its round (0 before round 1).
        clients : iterable of int, optional
            Whose release it is (default: every client).
        """
        if self.accountants_ is None:
            return
        for k in range(len(self.accountants_)) if clients is None else clients:
            self.accountants_[k].record({**event, "round": round_number})
            self.server_accountants_[k].record({**event, "round": round_number})

    def sgd(self, learner, data, n: int, batch: int, epochs: int, rng, to_work, gradient):
        """Client-side DP-SGD: the clipped, noised gradient and Poisson batches (sample
        level), or ``(gradient, None)`` as given.

        Parameters
        ----------
        learner : object
            The fit's learner.
        data : tuple
            The client's data in the learner's form.
        n : int
            Its training size.
        batch : int
            Its batch size (the expected size of a Poisson batch).
        epochs : int
            Local epochs.
        rng : numpy.random.Generator
            The client's generator (batches and noise).
        to_work : callable
            Into the learner's work space.
        gradient : callable
            The plain gradient ``g(w, idx)``, returned without sample-level DP.

        Returns
        -------
        gradient : callable
        batches : iterable of index arrays, or None
        """
        if self.level != "sample":
            return gradient, None
        return (private_gradient(learner, data, self.dp, n=n, batch_size=batch, rng=rng,
                                 to_work=to_work),
                self.dp.batches(n, epochs, batch, rng))

    def count_steps(self, k: int, steps: int) -> None:
        """Count DP-SGD steps of this round (accounted at its end).

        Parameters
        ----------
        k : int
            The client.
        steps : int
            The steps it took.
        """
        self._steps[k] += steps

    def noisy_round(self, starts: np.ndarray, groups: np.ndarray, weights: np.ndarray,
                    train: Callable[[int, np.ndarray], np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray]:
        """One round of client-level DP (:class:`topofl_lib.privacy.ClientLevelDP`).

        Each sampled client trains from its group's model; each group's model moves by
        the noisy weighted sum of its clipped updates over the group's expected weight.

        Parameters
        ----------
        starts : ndarray of shape (M, dim)
            Each group's model (FedAvg: the global one; pTopoFL: the clusters').
        groups : ndarray of int, shape (K,)
            Each client's group.
        weights : ndarray of shape (K,)
            Each client's weight in its group's sum, in [0, 1].
        train : callable
            ``train(k, start)``: the model client ``k`` returns after training from
            ``start``.

        Returns
        -------
        local : ndarray of shape (K, dim)
            The models the clients returned (a client not sampled returns its start).
        models : ndarray of shape (M, dim)
            The groups' new models.
        """
        dp = self.dp
        taking_part = dp.participants(len(groups), self._rng)
        local = starts[groups].copy()
        for k in np.flatnonzero(taking_part):
            local[k] = train(k, starts[groups[k]])
        updates = local - starts[groups]
        models = np.empty(starts.shape)
        for j in range(starts.shape[0]):
            members = groups == j
            self._group_sizes[members] = max(int((members & taking_part).sum()), 1)
            total = dp.noisy_sum(updates[members & taking_part],
                                 weights[members & taking_part], self._rng)
            models[j] = starts[j] + total / (dp.sample_rate * weights[members].sum())
        return local, models

    def end_round(self, round_number: int, sizes: np.ndarray,
                  batch_of: Callable[[int], int]) -> np.ndarray:
        """Record the round's model releases; every client's epsilon so far, (4, K):
        total, descriptor channel, model channel, and the total against the server.

        Parameters
        ----------
        round_number : int
            The round (1-based).
        sizes : ndarray of shape (K,)
            The clients' training sizes (DP-SGD's sampling rate).
        batch_of : callable
            ``batch_of(k)``: client ``k``'s batch size.

        Returns
        -------
        ndarray of shape (4, K)
        """
        dp = self.dp
        if dp.level == "client":
            for k in range(len(self.accountants_)):
                self.accountants_[k].record({**dp.round_event(), "round": round_number})
                self.server_accountants_[k].record(
                    {**dp.server_event(int(self._group_sizes[k])), "round": round_number})
        else:
            for k in np.flatnonzero(self._steps):
                self.account(dp.round_event(int(sizes[k]), batch_of(k), int(self._steps[k])),
                             round_number, [k])
            self._steps[:] = 0
        return np.array([[acc.epsilon(dp.delta, channel=c) for acc in self.accountants_]
                         for c in (None, "descriptor", "model")]
                        + [[acc.epsilon(dp.delta) for acc in self.server_accountants_]])

    def log(self, method: str, r: int, n_rounds: int, spent: np.ndarray) -> None:
        """Log a round's epsilon (INFO): the largest client total, each channel's, the
        total against the server, and the neighbouring relation they are stated for.

        Parameters
        ----------
        method : str
            The method's name.
        r : int
            The round (0-based).
        n_rounds : int
            The fit's rounds.
        spent : ndarray of shape (4, K)
            :meth:`end_round`'s result.
        """
        if logger.isEnabledFor(logging.INFO):
            total, descriptor, model, server = spent.max(axis=1)
            logger.info("%s round %d/%d: epsilon %.4g (descriptor %.4g, model %.4g; against "
                        "the server %.4g) at delta %.3g, %s neighbours, the largest over %d "
                        "clients", method, r + 1, n_rounds, total, descriptor, model, server,
                        self.dp.delta, self.dp.relation, spent.shape[1])

    @staticmethod
    def history(spent: np.ndarray) -> dict:
        """``history_``'s epsilons from every round's ``spent`` (n_rounds, 4, K): the
        largest over the clients per round, and each client's total."""
        worst = spent.max(axis=2)
        return {"epsilon": worst[:, 0], "epsilon_descriptor": worst[:, 1],
                "epsilon_model": worst[:, 2], "epsilon_server": worst[:, 3],
                "client_epsilon": spent[:, 0]}
