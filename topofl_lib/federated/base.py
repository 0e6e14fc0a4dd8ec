"""The federated round loop shared by every algorithm.

An algorithm is a scikit-learn style estimator whose ``fit`` takes a
:class:`~topofl_lib.data.FederatedScenario`. Subclasses implement three hooks:

* ``_setup(K, w0)``: create the server state before round 1 (``w0``: initial model);
* ``_round(r)``: one communication round (client updates, then aggregation);
* ``_client_model(k)``: the model client ``k`` deploys (global or personalised).

The base class owns validation, seeding, the per-client data, per-round evaluation
and the recorded history, so the algorithms contain only what differs between them.

Non-finite values are caught here, once for every algorithm, as soon as they appear:
a client's arrays are validated again when ``fit`` starts and whenever a continual
scenario hands new data (a NaN written into an array after the :class:`Client` was
built), every model a client returns is checked after its local training (a diverging
local model), and every model a client deploys is checked after each round's
aggregation. Each raises with the client and the round named. The checks only read
the vectors, so they change no number and no random draw.

Per-load noise (:attr:`~topofl_lib.core.Client.load_noise_sd`) is the client's own
(:meth:`~topofl_lib.core.Client.learner_data`); which methods accept it, and its seed:
:mod:`topofl_lib.federated.load_noise`.

Models are flat parameter vectors; what a vector means (logistic regression by
default, a torch network when ``model`` is a :class:`topofl_lib.deep.TorchModel`) is
the *learner*'s business (:mod:`topofl_lib.federated.local`), so each algorithm has
one implementation for every model class.

What a wrapper does around the loop goes through the fit's round hooks
(:class:`~topofl_lib.federated.hooks.RoundHooks`; no-ops unless given): differential
privacy of the model channel is such a wrapper
(:class:`~topofl_lib.federated.PrivateMethod`), not code of this class.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from .._validation import (
    check_finite,
    check_int,
    check_n_features,
    check_points,
    check_random_state,
)
from ..core.containers import FederatedScenario
from ..data.preprocessing import client_scaler, standardise_clients
from .hooks import RoundHooks
from .load_noise import noise_entropy
from .local import (
    LogisticLearner,
    client_streams,
    load_noise_seed,
    local_sgd,
    workspace,
)
from .metrics import evaluate_clients, evaluation_choices, round_history
from .settings import EVALUATE_ON, RNG_STREAMS, check_common_params, check_label_range
from .solvers import LocalOptima

__all__ = ["EVALUATE_ON", "RNG_STREAMS", "FederatedAlgorithm", "client_streams"]


class FederatedAlgorithm(BaseEstimator):
    """Base class; see the module docstring.

    FedAvg, pTopoFL and Local-only add ``solver`` (documented here, under Parameters,
    with the parameters every algorithm shares).

    Parameters
    ----------
    n_rounds : int
        Communication rounds (paper: 15 for Scenarios A/B).
    lr : float
        Client SGD learning rate.
    local_epochs : int
        Local passes over the client's training data per round.
    batch_size : int or None
        Mini-batch size of the local SGD; ``None``: full batch (each step uses all of
        the client's training data, so an "epoch" is one gradient step).
    C : float
        Inverse L2 regularisation strength of the logistic model (paper Table 3: 1.0).
    model : None or TorchModel
        The clients' model class: ``None`` is L2-regularised logistic regression;
        :class:`topofl_lib.deep.TorchModel` is a torch network (multi-class, ``C`` unused).
    random_state : None or int
        Seeds every random choice of the run (mini-batch orders, subsamples).
    rng_streams : {"shared", "per_client"}
        ``"shared"``: one generator consumed in client order;
        ``"per_client"``: client ``k`` draws from :func:`client_streams` (needs an int
        ``random_state``), as clients of a real federation do.
    solver : {"sgd", "lbfgs"}
        (FedAvg, pTopoFL, Local-only) the local solver: ``"sgd"`` runs
        ``local_epochs`` of mini-batch SGD from the received model; ``"lbfgs"`` fits the
        client's logistic regression to convergence, ignoring the received model
        (:mod:`topofl_lib.federated.solvers`; logistic model only).
    evaluate_on : {"honest", "all"} or None
        Which clients' test metrics the reported means average. ``None``: the
        scenario's choice (``scenario.meta["evaluation"]``; ``"honest"`` if it has none).
    standardise : bool or None
        Standardise each client's features with its own training statistics before
        anything else (:func:`topofl_lib.data.standardise_clients`). ``None``: the
        scenario's choice (``False`` if it has none).

    Attributes
    ----------
    learner_ : Learner
        The model class's learner (:class:`topofl_lib.core.Learner`) the fit trained
        with; it reads the flat parameter vectors (``predict_proba``, representations).
    scenario_ : FederatedScenario
        The scenario passed to ``fit`` (before any standardisation).
    honest_ : ndarray of bool (n_clients,)
        Which clients are honest (``scenario_.honest``).
    history_ : dict of ndarray
        ``"auc"`` and ``"accuracy"`` of shape (n_rounds,): mean over the evaluated
        clients (``evaluation_["evaluate_on"]``: the honest ones, or all) after each round;
        ``"client_auc"`` and ``"client_accuracy"`` of shape (n_rounds, n_clients), every
        client. AUC is NaN for multi-class models (accuracy is their metric). Binary
        clients always have an AUC: :class:`Client` refuses a binary test split with a
        single class, so every mean is over the same clients in every round (a NaN would
        propagate into the mean, never be skipped). Round hooks add their own entries
        (the epsilons of :meth:`PrivateTraining.finish
        <topofl_lib.federated.private_training.PrivateTraining.finish>`) and attributes
        (its ``accountants_``).
    evaluation_ : dict
        The evaluation choices this fit used: ``evaluate_on`` and ``standardise``.
    n_clients_ : int
    n_features_in_ : int
        Number of raw features (what :meth:`predict_proba` expects).
    """

    name = "base"
    #: Whether the class trains on the learner's mini-batches only, so that a client's
    #: per-load noise reaches everything it learns from (see the module docstring).
    #: Read from the class's own body, never inherited
    #: (:func:`~topofl_lib.federated.load_noise.applies_load_noise`).
    load_noise = False
    #: Whether every local step of the class is :meth:`_train`'s SGD (round hooks choose
    #: its gradient and batches); False for a local solver of its own.
    local_sgd = True

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 model=None, random_state=None, rng_streams="shared", evaluate_on=None,
                 standardise=None):
        self.n_rounds = n_rounds
        self.lr = lr
        self.local_epochs = local_epochs
        self.batch_size = batch_size
        self.C = C
        self.model = model
        self.random_state = random_state
        self.rng_streams = rng_streams
        self.evaluate_on = evaluate_on
        self.standardise = standardise

    def _validate_common(self) -> None:
        check_common_params(self, self._solver)
        self._default_hooks().check(self)

    def _default_hooks(self) -> RoundHooks:
        """The round hooks of a fit given none (FedAvg's and pTopoFL's ``model_dp``)."""
        return RoundHooks()

    @property
    def _solver(self) -> str:
        return getattr(self, "solver", "sgd")

    @property
    def _mean_rule(self) -> bool:
        """Whether this class's round hands its (cluster-wise) weighted-mean server rule
        to hooks that aggregate (:meth:`_hooked_mean_round`)."""
        return False

    def traits(self) -> dict:
        """What round hooks may rely on in this method.

        Returns
        -------
        dict
            ``solver``; ``own_gradient``: whether the class adds a term of its own to
            the learner's gradient; ``local_sgd``: whether its local training is
            :meth:`_train`'s SGD; ``mean_rule``: whether its server rule is a
            (cluster-wise) weighted mean the hooks may take over; ``record_coupling``:
            None, or why a record's features depend on the client's other records and
            what to do instead.
        """
        return {"solver": self._solver,
                "own_gradient": type(self)._gradient is not FederatedAlgorithm._gradient,
                "local_sgd": type(self).local_sgd, "mean_rule": self._mean_rule,
                "record_coupling": None}

    def _batch(self, k: int) -> int:
        """Client ``k``'s mini-batch size (``batch_size=None``: all its training data)."""
        return int(self._n[k]) if self.batch_size is None else self.batch_size

    def _client_rng(self, k: int) -> np.random.Generator:
        """The generator client ``k`` draws its mini-batch orders from."""
        return self._client_rngs[k] if self.rng_streams == "per_client" else self._rng

    def _check_params(self) -> None:  # extended by subclasses
        """Validate the parameters (called by ``fit``). Not scikit-learn's
        ``_validate_params``, which this class leaves alone."""
        self._validate_common()

    def check_params(self) -> FederatedAlgorithm:
        """Check every parameter as :meth:`fit` does first, without fitting.

        A comparison checks each of its configurations so before computing any run
        (:func:`topofl_lib.runner.run_comparison`).

        Returns
        -------
        FederatedAlgorithm
            ``self``, unchanged.

        Raises
        ------
        ValueError, TypeError
            A parameter is out of range or of the wrong type (the message names it).

        Examples
        --------
        >>> from topofl_lib import make_method
        >>> make_method("FedProx", mu=-1.0).check_params()
        Traceback (most recent call last):
        ...
        ValueError: mu must be >= 0.0, got -1.0
        """
        self._check_params()
        return self

    # -- data ------------------------------------------------------------------
    def _features(self, k: int, X: np.ndarray) -> np.ndarray:
        """Client ``k``'s model input for raw features ``X`` (identity by default)."""
        return X

    def _gradient(self, k: int):
        """Client ``k``'s stochastic gradient ``g(w, idx)`` (FedTopo adds its TAL term)."""
        learner, data = self.learner_, self._data[k]
        return lambda w, idx: learner.gradient(w, data, idx)

    def _workspace(self):
        """``(to_work, from_work)`` of this fit's learner (:func:`~.local.workspace`)."""
        return workspace(self.learner_)

    def _to_work(self, v: np.ndarray):
        """A copy of the NumPy vector ``v`` in the learner's work space: what an extra
        gradient term of :meth:`_train` must hold its constants as."""
        return self._workspace()[0](v)

    def _train(self, k: int, w0: np.ndarray, extra=None) -> tuple[np.ndarray, int]:
        if self._solver == "lbfgs":
            if extra is not None:
                raise ValueError(f"solver='lbfgs' cannot add {type(self).__name__}'s extra "
                                 "gradient term; use solver='sgd'")
            return self._reply(k, w0, self._optima.get(k, self._data[k])), 0
        to_work, from_work = self._workspace()
        n, batch, rng = int(self._n[k]), self._batch(k), self._client_rng(k)
        gradient, batches = self._hooks.local_sgd(self.learner_, self._data[k], n, batch,
                                                  self.local_epochs, rng, to_work,
                                                  self._gradient(k))
        w, steps = local_sgd(
            to_work(w0), gradient, n, lr=self.lr, epochs=self.local_epochs,
            batch_size=batch, rng=rng, extra=extra, momentum=self.learner_.momentum,
            batches=batches,
        )
        self._hooks.trained(k, steps)
        return self._reply(k, w0, from_work(w)), steps

    def _reply(self, k: int, w0: np.ndarray, w: np.ndarray) -> np.ndarray:
        """What client ``k`` returns after local training from ``w0`` to ``w``: its model,
        or a sign-flipped update if it attacks so; checked finite."""
        c = self._clients[k]
        hint = " after local training: it diverged (lower lr)"
        if c.adversarial and c.attack == "sign_flip":
            w = w0 - c.attack_scale * (w - w0)
            hint += f" or its sign-flipped update overflowed (attack_scale={c.attack_scale})"
        return check_finite(w, f"the model client {k} returned in round {self._round_number}",
                            hint=hint, error=FloatingPointError)

    def _check_client(self, k: int, client) -> None:
        """Validate client ``k``'s arrays (again: they may have changed since built)."""
        when = "" if self._round_number is None else f" (data of round {self._round_number})"
        client.validate(f"client {k}{when}")

    def _load_client(self, k: int, client) -> None:
        """(Re)build client ``k``'s training and test arrays (round 0 and schedule changes)."""
        self._clients[k] = client
        seed = (None if self._noise_entropy is None else
                load_noise_seed(self._noise_entropy, k, self._round_number or 0))
        self._data[k] = client.learner_data(self.learner_, self._features(k, client.X_train),
                                            seed)
        self._n[k] = client.n_train
        self._tests[k] = (self._features(k, client.X_test), client.y_test)

    # -- loop --------------------------------------------------------------------
    def fit(self, scenario: FederatedScenario, hooks: RoundHooks | None = None):
        """Run ``n_rounds`` rounds on ``scenario`` and record per-round metrics.

        Parameters
        ----------
        scenario : FederatedScenario
        hooks : RoundHooks, optional
            A wrapper's round hooks (:class:`~topofl_lib.federated.PrivateMethod`
            passes its own); default: the method's own (its ``model_dp``, or none).

        Returns
        -------
        FederatedAlgorithm
            ``self``, fitted.
        """
        if not isinstance(scenario, FederatedScenario):
            raise TypeError(
                f"scenario must be a FederatedScenario, got {type(scenario).__name__}"
            )
        self._check_params()
        if hooks is None:  # the method's own, checked with its parameters
            self._hooks = self._default_hooks()
        else:
            if not isinstance(hooks, RoundHooks):
                raise TypeError(f"hooks must be a RoundHooks, got {type(hooks).__name__}")
            if type(self._default_hooks()) is not RoundHooks:  # they would be dropped
                raise ValueError(f"this {type(self).__name__} builds round hooks of its own "
                                 f"({type(self._default_hooks()).__name__}, from its "
                                 "parameters); pass hooks only to a method without them")
            hooks.check(self)
            self._hooks = hooks
        self.evaluation_ = evaluation_choices(self, scenario)
        self.scenario_ = scenario
        if self.evaluation_["standardise"]:
            scenario = standardise_clients(scenario)
        self._rng = check_random_state(self.random_state)
        self._noise_entropy = noise_entropy(self, scenario, self.evaluation_["standardise"],
                                            self._rng)
        self._optima = LocalOptima(self.C)
        clients = list(scenario.clients)
        self._round_number = None
        for k, c in enumerate(clients):
            self._check_client(k, c)
        honest = np.flatnonzero(scenario.honest)
        if honest.size == 0:
            raise ValueError("every client of the scenario is adversarial; the metrics are "
                             "means over honest clients, so at least one is needed")
        K = len(clients)
        if self.rng_streams == "per_client":
            self._client_rngs = [client_streams(self.random_state, k)[0] for k in range(K)]
        self.n_clients_ = K
        self.n_features_in_ = scenario.n_features
        self.honest_ = scenario.honest
        self._clients = clients
        if self.model is None:
            self.learner_ = LogisticLearner(self.C)
        else:
            self.learner_ = self.model.make_learner(clients[0].X_train.shape[1], self._rng)
        check_label_range(scenario, self.learner_, self.model)
        self._hooks.start(self, self._rng)
        self._w_init = self.learner_.init_params(None)
        self._prepare(scenario)
        self._data, self._tests = [None] * K, [None] * K
        self._n = np.zeros(K)
        for k, c in enumerate(clients):
            self._load_client(k, c)
        if self._w_init is None:  # logistic regression: size known once features are
            self._w_init = self.learner_.init_params(self._data[0])
        self._setup(K, self._w_init)
        scored = honest if self.evaluation_["evaluate_on"] == "honest" else np.arange(K)
        client_auc = np.full((self.n_rounds, K), np.nan)
        client_acc = np.full((self.n_rounds, K), np.nan)
        for r in range(self.n_rounds):
            self._round_number = r + 1
            for k, c in enumerate(scenario.clients_at(r)):
                if c is not self._clients[k]:
                    self._check_client(k, c)
                    self._client_changed(k, c)
                    self._load_client(k, c)
            self._round(r)
            self._hooks.end_round(r + 1, self._n, self._batch)
            client_auc[r], client_acc[r] = evaluate_clients(
                self.learner_, self._client_model, self._tests, r + 1).T
        self.history_ = round_history(client_auc, client_acc, scored)
        history, attributes = self._hooks.finish()
        self.history_.update(history)
        for name, value in attributes.items():
            setattr(self, name, value)
        return self

    def _record_release(self, event: dict, clients=None) -> None:
        """Tell the hooks of a release ``event`` of this round by ``clients`` (default: all)."""
        self._hooks.record(event, self._round_number or 0, clients)

    def _hooked_mean_round(self, starts: np.ndarray, groups: np.ndarray,
                           weights: np.ndarray, extra=None) -> tuple[np.ndarray, np.ndarray]:
        """The hooks' round in place of the mean rule (:meth:`RoundHooks.mean_round
        <topofl_lib.federated.hooks.RoundHooks.mean_round>`), training each client with
        its ``extra(k)`` term."""
        return self._hooks.mean_round(starts, groups, weights, lambda k, w: self._train(
            k, w, None if extra is None else extra(k))[0])

    def _prepare(self, scenario: FederatedScenario) -> None:
        """Hook run before the features are built (pTopoFL computes descriptors here)."""

    def _client_changed(self, k: int, client) -> None:
        """Hook run when client ``k``'s data change in a continual scenario."""

    def predict_proba(self, X, client: int = 0) -> np.ndarray:
        """Class probabilities for raw features ``X`` under the model ``client`` deploys.

        For logistic regression, P(y = 1) of shape (n,); for a network, (n, n_classes).
        If the fit standardised the clients, ``X`` is standardised with the client's
        training statistics (of its last round's data) first.

        Parameters
        ----------
        X : array-like of shape (n, ``n_features_in_``)
            Raw features.
        client : int, default=0
            The client whose deployed model (the global, its cluster's or its own) is used.

        Returns
        -------
        ndarray
            Shape (n,) or (n, n_classes), as above.
        """
        if not hasattr(self, "history_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet; call fit first")
        check_int(client, "client", low=0, high=self.n_clients_ - 1)
        X = check_points(X, "X")
        check_n_features(X, self.n_features_in_, f"this {type(self).__name__} was fitted on")
        if self.evaluation_["standardise"]:
            raw = self.scenario_.clients_at(self.n_rounds - 1)[client]
            X = client_scaler(raw).transform(X)
        return self.learner_.predict_proba(self._client_model(client),
                                           self._features(client, X))

    def _setup(self, K: int, w0: np.ndarray) -> None:
        raise NotImplementedError

    def _round(self, r: int) -> None:
        raise NotImplementedError

    def _client_model(self, k: int) -> np.ndarray:
        raise NotImplementedError
