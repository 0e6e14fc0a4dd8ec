"""Differential privacy of a fit's model channel, as round hooks around any method.

:class:`PrivateTraining` is a :class:`~topofl_lib.federated.hooks.RoundHooks` (as
Flower's DP strategies wrap a strategy): the option checked against the method, one
accountant per client for the released models and one for what the server itself
sees, the client-level round (clip, noise where the option draws it, the
fixed-denominator mean) in place of a mean server rule, sample-level DP-SGD's gradient
and batches in local training, the per-round log line and the epsilons of
``history_``. :class:`PrivateMethod` fits any registered method under it; FedAvg's,
FedProx's and pTopoFL's ``model_dp`` is the same wrapper, built by the method.

The options are seen through :class:`topofl_lib.core.privacy.ModelPrivacy` only, so the
federated layer does not depend on the privacy layer above it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
from sklearn.base import BaseEstimator, clone

from .._validation import check_choice
from ..core.learner import PrivateGradients
from ..core.privacy import LEVELS, ModelPrivacy
from .hooks import RoundHooks
from .local import private_gradient

__all__ = ["PrivateMethod", "PrivateTraining", "hooks_for"]

#: The per-round privacy lines (INFO) of runs with ``model_dp``.
logger = logging.getLogger("topofl_lib.federated")

#: Why sample-level DP refuses features that couple records (per-client standardisation,
#: pTopoFL's augmentation): removing one record moves every example's gradient.
_COUPLED_SAMPLE_DP = (
    "model_dp={dp!r} bounds what removing one record changes in a clipped batch sum (by the "
    "clip), but {why}, so removing one record changes every example's gradient and the "
    "accountant's bound does not hold; {remedy}, or use ClientLevelDP (it protects a "
    "client's whole data)")


def hooks_for(model_dp) -> RoundHooks:
    """The round hooks of a method's own ``model_dp``: none for None.

    Parameters
    ----------
    model_dp : None, ClientLevelDP or SampleLevelDP

    Returns
    -------
    RoundHooks
    """
    return RoundHooks() if model_dp is None else PrivateTraining(model_dp)


class PrivateTraining(RoundHooks):
    """The model-channel DP of one fit, as its round hooks.

    Parameters
    ----------
    dp : ClientLevelDP or SampleLevelDP
        The method's ``model_dp``.
    """

    def __init__(self, dp):
        self.dp = dp
        self.accountants_ = self.server_accountants_ = None

    @property
    def level(self) -> str:
        """``"client"`` or ``"sample"``."""
        return self.dp.level

    @property
    def aggregates(self) -> bool:
        """Client-level DP replaces the mean server rule by DP-FedAvg's noisy mean."""
        return self.level == "client"

    def check(self, method) -> None:
        """Refuse an option the method cannot honour (a ValueError or TypeError naming it).

        Parameters
        ----------
        method : FederatedAlgorithm
            The method (its :meth:`~topofl_lib.federated.FederatedAlgorithm.traits`).
        """
        dp, name, traits = self.dp, type(method).__name__, method.traits()
        if not isinstance(dp, ModelPrivacy):
            raise TypeError("model_dp must be None, a ClientLevelDP or a SampleLevelDP "
                            f"(topofl_lib.privacy), got {type(dp).__name__}")
        dp.check()
        check_choice(dp.level, "model_dp.level", LEVELS)
        if dp.level == "client":
            if not traits["mean_rule"]:
                raise ValueError(f"model_dp={dp!r} replaces the server's rule by DP-FedAvg's "
                                 f"noisy sum, which {name} does not run (its server rule is "
                                 "its own); use SampleLevelDP")
            return
        if traits["solver"] == "lbfgs":
            raise ValueError(f"model_dp={dp!r} runs DP-SGD in local training; it needs "
                             "solver='sgd', got solver='lbfgs'")
        if traits["own_gradient"]:
            raise ValueError(f"model_dp={dp!r} clips per-example gradients of the "
                             f"learner's loss, but {name} adds its own data-dependent "
                             "term to the gradient")
        if traits["record_coupling"] is not None:
            why, remedy = traits["record_coupling"]
            raise ValueError(_COUPLED_SAMPLE_DP.format(dp=dp, why=why, remedy=remedy))
        if not traits["local_sgd"]:
            raise ValueError(f"model_dp={dp!r} runs DP-SGD in local training, but {name} "
                             "trains its clients by a local solver of its own; use "
                             "ClientLevelDP where its server rule is a mean")

    def start(self, method, rng: np.random.Generator) -> None:
        """Refuse sample-level DP on per-client standardised features; one accountant
        per client and the noise stream.

        Parameters
        ----------
        method : FederatedAlgorithm
            The method being fitted (``n_clients_``, ``learner_``, ``evaluation_``,
            ``standardise``, ``n_rounds``).
        rng : numpy.random.Generator
            The fit's generator; the noise stream is spawned from it, leaving its own
            draws unchanged.
        """
        dp, learner, n_clients = self.dp, method.learner_, method.n_clients_
        if dp.level == "sample" and method.evaluation_["standardise"]:
            hint = ("" if method.standardise else " (the scenario asks for "
                    "standardise=True; pass standardise=False)")
            raise ValueError(_COUPLED_SAMPLE_DP.format(
                dp=dp, why="standardise=True scales every record by its client's mean and "
                "standard deviation", remedy="standardise with public statistics "
                "beforehand") + hint)
        if dp.level == "sample" and not isinstance(learner, PrivateGradients):
            raise TypeError(f"model_dp={dp!r} needs clipped per-example gradients, which "
                            f"the learner {type(learner).__name__} does not compute")
        self._method, self._n_rounds = type(method).__name__, method.n_rounds
        self.accountants_ = [dp.accountant() for _ in range(n_clients)]
        # what the server itself sees: the same descriptor releases and DP-SGD steps (noised
        # at the client); for client-level DP each update with its own share of the noise
        self.server_accountants_ = [dp.accountant() for _ in range(n_clients)]
        self._rng = rng.spawn(1)[0]
        self._steps = np.zeros(n_clients, dtype=np.int64)
        self._group_sizes = np.ones(n_clients, dtype=np.int64)
        self._spent = []

    def record(self, event: dict, round_number: int, clients=None) -> None:
        """Account a release of some clients.

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
        for k in range(len(self.accountants_)) if clients is None else clients:
            self.accountants_[k].record({**event, "round": round_number})
            self.server_accountants_[k].record({**event, "round": round_number})

    def local_sgd(self, learner, data, n: int, batch: int, epochs: int, rng, to_work,
                  gradient: Callable) -> tuple[Callable, object]:
        # the docstring is RoundHooks.local_sgd's (inherited): here, sample-level DP's
        # clipped, noised gradient and Poisson batches (the client's generator draws both)
        if self.level != "sample":
            return gradient, None
        return (private_gradient(learner, data, self.dp, n=n, batch_size=batch, rng=rng,
                                 to_work=to_work),
                self.dp.batches(n, epochs, batch, rng))

    def trained(self, k: int, steps: int) -> None:
        """Count DP-SGD steps of this round (accounted at its end).

        Parameters
        ----------
        k : int
            The client.
        steps : int
            The steps it took.
        """
        if self.level == "sample":
            self._steps[k] += steps

    def mean_round(self, starts: np.ndarray, groups: np.ndarray, weights: np.ndarray,
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
                  batch_of: Callable[[int], int]) -> None:
        """Account the round's model releases; keep every client's epsilon so far
        (total, descriptor channel, model channel, and the total against the server)
        and log the largest (INFO).

        Parameters
        ----------
        round_number : int
            The round (1-based).
        sizes : ndarray of shape (K,)
            The clients' training sizes (DP-SGD's sampling rate).
        batch_of : callable
            ``batch_of(k)``: client ``k``'s batch size.
        """
        dp = self.dp
        if dp.level == "client":
            for k in range(len(self.accountants_)):
                self.accountants_[k].record({**dp.round_event(), "round": round_number})
                self.server_accountants_[k].record(
                    {**dp.server_event(int(self._group_sizes[k])), "round": round_number})
        else:
            for k in np.flatnonzero(self._steps):
                self.record(dp.round_event(int(sizes[k]), batch_of(k), int(self._steps[k])),
                            round_number, [k])
            self._steps[:] = 0
        spent = np.array([[acc.epsilon(dp.delta, channel=c) for acc in self.accountants_]
                          for c in (None, "descriptor", "model")]
                         + [[acc.epsilon(dp.delta) for acc in self.server_accountants_]])
        self._spent.append(spent)
        self._log(round_number, spent)

    def _log(self, round_number: int, spent: np.ndarray) -> None:
        """Log a round's epsilon (INFO): the largest client total, each channel's, the
        total against the server, and the neighbouring relation they are stated for."""
        if logger.isEnabledFor(logging.INFO):
            total, descriptor, model, server = spent.max(axis=1)
            logger.info("%s round %d/%d: epsilon %.4g (descriptor %.4g, model %.4g; against "
                        "the server %.4g) at delta %.3g, %s neighbours, the largest over %d "
                        "clients", self._method, round_number, self._n_rounds, total,
                        descriptor, model, server, self.dp.delta, self.dp.relation,
                        spent.shape[1])

    def finish(self) -> tuple[dict, dict]:
        """``history_``'s epsilons and the accountants, for the fitted method.

        Returns
        -------
        history : dict of ndarray
            ``"epsilon"``, ``"epsilon_descriptor"``, ``"epsilon_model"`` and
            ``"epsilon_server"`` of shape (n_rounds,): the largest over the clients of
            the epsilon at ``model_dp.delta`` of everything a client released up to the
            end of the round (both channels composed; each channel alone; the total
            against the server), and ``"client_epsilon"`` (n_rounds, n_clients), every
            client's total.
        attributes : dict
            ``accountants_`` and ``server_accountants_``: one
            :class:`~topofl_lib.privacy.PrivacyAccountant` per client, of the released
            models and of what the server itself sees.
        """
        spent = np.stack(self._spent)
        worst = spent.max(axis=2)
        return ({"epsilon": worst[:, 0], "epsilon_descriptor": worst[:, 1],
                 "epsilon_model": worst[:, 2], "epsilon_server": worst[:, 3],
                 "client_epsilon": spent[:, 0]},
                {"accountants_": self.accountants_,
                 "server_accountants_": self.server_accountants_})


class PrivateMethod(BaseEstimator):
    """Any federated method, fitted under differential privacy of its model channel.

    The wrapper installs :class:`PrivateTraining` as the fit's round hooks, as Flower's
    ``DifferentialPrivacyClientSideFixedClipping`` wraps a strategy, so a method needs no
    privacy code of its own: with ``SampleLevelDP`` its clients train by DP-SGD (any
    method whose local training is the base's SGD on the learner's loss, its extra terms
    data-independent, whatever its server rule: what the server does with DP-SGD's
    output is post-processing); with ``ClientLevelDP`` the wrapper replaces a
    (cluster-wise) weighted-mean server rule by DP-FedAvg's clipped, noisy mean (FedAvg,
    FedProx, pTopoFL; any local objective). A method the accountant cannot cover is
    refused, naming why, before anything is computed. FedAvg's, FedProx's and pTopoFL's
    own ``model_dp`` build the same hooks.

    Parameters
    ----------
    method : FederatedAlgorithm
        The method to fit privately (not itself given a ``model_dp``); cloned by ``fit``.
    model_dp : ClientLevelDP or SampleLevelDP
        The guarantee (:mod:`topofl_lib.privacy.model_channel`; its ``relation`` names
        the neighbouring datasets, its ``noise`` who draws the noise).

    Attributes
    ----------
    method_ : FederatedAlgorithm
        The fitted clone of ``method``.
    history_ : dict of ndarray
        ``method_.history_``: its metrics and the epsilons of :meth:`PrivateTraining.finish`.
    accountants_, server_accountants_ : list of PrivacyAccountant
        One per client: of the released models, and of what the server itself sees.
    n_clients_, n_features_in_ : int

    Examples
    --------
    >>> from topofl_lib import make_healthcare, make_method
    >>> from topofl_lib.privacy import PrivateMethod, SampleLevelDP
    >>> scenario = make_healthcare(n_clients=4, n_adversarial=0, random_state=0)
    >>> private = PrivateMethod(make_method("SCAFFOLD", n_rounds=2, random_state=0),
    ...                         SampleLevelDP(1.0, clip=1.0)).fit(scenario)
    >>> bool(private.history_["epsilon"][-1] > 0)
    True
    """

    def __init__(self, method=None, model_dp=None):
        self.method = method
        self.model_dp = model_dp

    @property
    def name(self) -> str:
        """``"DP-"`` and the wrapped method's name."""
        return f"DP-{getattr(self.method, 'name', type(self.method).__name__)}"

    def check_params(self) -> PrivateMethod:
        """Check the method, the option and that they fit together, without fitting.

        Returns
        -------
        PrivateMethod
            ``self``, unchanged.
        """
        from .base import FederatedAlgorithm

        if not isinstance(self.method, FederatedAlgorithm):
            raise TypeError("method must be a FederatedAlgorithm (make_method(name, ...)), "
                            f"got {type(self.method).__name__}")
        if self.model_dp is None:
            raise ValueError("model_dp must be a ClientLevelDP or a SampleLevelDP, got None")
        if getattr(self.method, "model_dp", None) is not None:
            raise ValueError(f"the wrapped {type(self.method).__name__} has its own model_dp="
                             f"{self.method.model_dp!r}; give the option once, to the "
                             "method or to the wrapper")
        self.method.check_params()
        PrivateTraining(self.model_dp).check(self.method)
        return self

    def fit(self, scenario) -> PrivateMethod:
        """Fit a clone of ``method`` on ``scenario`` under ``model_dp``.

        Parameters
        ----------
        scenario : FederatedScenario

        Returns
        -------
        PrivateMethod
            ``self``, fitted.
        """
        self.check_params()
        self.method_ = clone(self.method).fit(scenario, hooks=PrivateTraining(self.model_dp))
        self.history_ = self.method_.history_
        self.accountants_ = self.method_.accountants_
        self.server_accountants_ = self.method_.server_accountants_
        self.n_clients_, self.n_features_in_ = self.method_.n_clients_, self.method_.n_features_in_
        return self

    def predict_proba(self, X, client: int = 0) -> np.ndarray:
        """The fitted method's :meth:`~topofl_lib.federated.FederatedAlgorithm.predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n, ``n_features_in_``)
        client : int, default=0

        Returns
        -------
        ndarray
        """
        if not hasattr(self, "method_"):
            raise ValueError("this PrivateMethod is not fitted yet; call fit first")
        return self.method_.predict_proba(X, client)
