"""The federated round loop shared by every algorithm.

An algorithm is a scikit-learn style estimator whose ``fit`` takes a
:class:`~topofl_lib.data.FederatedScenario`. Subclasses implement three hooks:

* ``_setup(K, w0)``: create the server state before round 1 (``w0``: initial model);
* ``_round(r)``: one communication round (client updates, then aggregation);
* ``_client_model(k)``: the model client ``k`` deploys (global or personalised).

The base class owns validation, seeding, the per-client data, per-round evaluation
and the recorded history, so the algorithms contain only what differs between them.
Models are flat parameter vectors; what a vector means (logistic regression by
default, a torch network when ``model`` is a :class:`topofl_lib.deep.TorchModel`) is
the *learner*'s business (:mod:`topofl_lib.federated.local`), so each algorithm has
one implementation for every model class.
"""

from __future__ import annotations

import hashlib

import numpy as np
from sklearn.base import BaseEstimator

from .._validation import check_choice, check_int, check_random_state, check_real
from ..data.scenarios import FederatedScenario
from .local import LogisticLearner, client_streams, local_sgd

__all__ = ["RNG_STREAMS", "FederatedAlgorithm", "client_streams"]

#: How clients draw random numbers: one generator shared in client order (the
#: in-process default, the committed results), or one stream per client seeded from
#: ``(random_state, client)``, which a real federation can reproduce (Flower parity).
RNG_STREAMS = ("shared", "per_client")


class FederatedAlgorithm(BaseEstimator):
    """Base class; see the module docstring.

    Common parameters
    -----------------
    n_rounds : int
        Communication rounds (paper: 15 for Scenarios A/B).
    lr : float
        Client SGD learning rate.
    local_epochs : int
        Local passes over the client's training data per round.
    batch_size : int
        Mini-batch size of the local SGD.
    C : float
        Inverse L2 regularisation strength of the logistic model (paper Table 3: 1.0).
    model : None or TorchModel
        The clients' model class: ``None`` is L2-regularised logistic regression;
        :class:`topofl_lib.deep.TorchModel` is a torch network (multi-class, ``C`` unused).
    random_state : None or int
        Seeds every random choice of the run (mini-batch orders, subsamples).
    rng_streams : {"shared", "per_client"}
        (FedAvg, FedProx, pTopoFL) ``"shared"``: one generator consumed in client order;
        ``"per_client"``: client ``k`` draws from :func:`client_streams` (needs an int
        ``random_state``), as clients of a real federation do.

    Attributes
    ----------
    history_ : dict of ndarray
        ``"auc"`` and ``"accuracy"`` of shape (n_rounds,): mean over honest clients
        after each round; ``"client_auc"`` and ``"client_accuracy"`` of shape
        (n_rounds, n_clients). AUC is NaN for multi-class models.
    n_clients_ : int
    """

    name = "base"

    def _validate_common(self) -> None:
        check_int(self.n_rounds, "n_rounds", low=1)
        check_real(self.lr, "lr", low=0.0, low_open=True)
        check_int(self.local_epochs, "local_epochs", low=1)
        check_int(self.batch_size, "batch_size", low=1)
        check_real(self.C, "C", low=0.0, low_open=True)
        check_random_state(self.random_state)
        check_choice(self._streams, "rng_streams", RNG_STREAMS)
        if self._streams == "per_client" and not isinstance(self.random_state, int):
            raise ValueError("rng_streams='per_client' needs an int random_state, got "
                             f"{self.random_state!r}")
        if self.model is not None and not callable(getattr(self.model, "make_learner", None)):
            raise TypeError(f"model must be None or a TorchModel, got {type(self.model).__name__}")

    @property
    def _streams(self) -> str:
        return getattr(self, "rng_streams", "shared")

    def _client_rng(self, k: int) -> np.random.Generator:
        """The generator client ``k`` draws its mini-batch orders from."""
        return self._client_rngs[k] if self._streams == "per_client" else self._rng

    def _validate_params(self) -> None:  # extended by subclasses
        self._validate_common()

    # -- data ------------------------------------------------------------------
    def _features(self, k: int, X: np.ndarray) -> np.ndarray:
        """Client ``k``'s model input for raw features ``X`` (identity by default)."""
        return X

    def _gradient(self, k: int):
        """Client ``k``'s stochastic gradient ``g(w, idx)`` (FedTopo adds its TAL term)."""
        learner, data = self._learner, self._data[k]
        return lambda w, idx: learner.gradient(w, data, idx)

    def _train(self, k: int, w0: np.ndarray, extra=None) -> tuple[np.ndarray, int]:
        w, steps = local_sgd(
            w0, self._gradient(k), int(self._n[k]), lr=self.lr, epochs=self.local_epochs,
            batch_size=self.batch_size, rng=self._client_rng(k), extra=extra,
            momentum=self._learner.momentum,
        )
        return self._poison(k, w0, w), steps

    def _poison(self, k: int, w0: np.ndarray, w: np.ndarray) -> np.ndarray:
        """What client ``k`` returns: its model, or a sign-flipped update if it attacks so."""
        c = self._clients[k]
        if c.adversarial and c.attack == "sign_flip":
            return w0 - c.attack_scale * (w - w0)
        return w

    def _load_client(self, k: int, client) -> None:
        """(Re)build client ``k``'s training and test arrays (round 0 and schedule changes)."""
        self._clients[k] = client
        self._data[k] = self._learner.client_data(self._features(k, client.X_train),
                                                  client.y_train)
        self._n[k] = client.n_train
        self._tests[k] = (self._features(k, client.X_test), client.y_test)

    # -- loop --------------------------------------------------------------------
    def fit(self, scenario: FederatedScenario):
        """Run ``n_rounds`` rounds on ``scenario`` and record per-round metrics."""
        if not isinstance(scenario, FederatedScenario):
            raise TypeError(
                f"scenario must be a FederatedScenario, got {type(scenario).__name__}"
            )
        self._validate_params()
        self._rng = check_random_state(self.random_state)
        clients = list(scenario.clients)
        K = len(clients)
        if self._streams == "per_client":
            self._client_rngs = [client_streams(self.random_state, k)[0] for k in range(K)]
        self.n_clients_ = K
        self._scenario = scenario
        self._clients = clients
        if self.model is None:
            self._learner = LogisticLearner(self.C)
        else:
            self._learner = self.model.make_learner(clients[0].X_train.shape[1], self._rng)
        self._w_init = self._learner.init_params(None)
        self._prepare(scenario)
        self._data, self._tests = [None] * K, [None] * K
        self._n = np.zeros(K)
        for k, c in enumerate(clients):
            self._load_client(k, c)
        if self._w_init is None:  # logistic regression: size known once features are
            self._w_init = self._learner.init_params(self._data[0])
        self._setup(K, self._w_init)
        honest = np.flatnonzero(scenario.honest)
        client_auc = np.full((self.n_rounds, K), np.nan)
        client_acc = np.full((self.n_rounds, K), np.nan)
        for r in range(self.n_rounds):
            for k, c in enumerate(scenario.clients_at(r)):
                if c is not self._clients[k]:
                    self._client_changed(k, c)
                    self._load_client(k, c)
            self._round(r)
            cache = {}
            for k in range(K):
                X_test, y_test = self._tests[k]
                w = np.ascontiguousarray(self._client_model(k))
                key = (id(X_test), hashlib.blake2b(w.tobytes(), digest_size=16).digest())
                if key not in cache:  # clients sharing a model and a test set
                    cache[key] = self._learner.evaluate(w, X_test, y_test)
                client_auc[r, k], client_acc[r, k] = cache[key]
        with np.errstate(all="ignore"):
            mean_auc = (np.full(self.n_rounds, np.nan) if np.all(np.isnan(client_auc))
                        else np.nanmean(client_auc[:, honest], axis=1))
        self.history_ = {
            "auc": mean_auc,
            "accuracy": np.nanmean(client_acc[:, honest], axis=1),
            "client_auc": client_auc,
            "client_accuracy": client_acc,
        }
        return self

    def _prepare(self, scenario: FederatedScenario) -> None:
        """Hook run before the features are built (pTopoFL computes descriptors here)."""

    def _client_changed(self, k: int, client) -> None:
        """Hook run when client ``k``'s data change in a continual scenario."""

    def predict_proba(self, X, client: int = 0) -> np.ndarray:
        """Class probabilities for raw features ``X`` under the model ``client`` deploys.

        For logistic regression, P(y = 1) of shape (n,); for a network, (n, n_classes).
        """
        if not hasattr(self, "history_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet; call fit first")
        check_int(client, "client", low=0, high=self.n_clients_ - 1)
        X = np.asarray(X, dtype=np.float64)
        return self._learner.predict_proba(self._client_model(client),
                                           self._features(client, X))

    def _setup(self, K: int, w0: np.ndarray) -> None:
        raise NotImplementedError

    def _round(self, r: int) -> None:
        raise NotImplementedError

    def _client_model(self, k: int) -> np.ndarray:
        raise NotImplementedError
