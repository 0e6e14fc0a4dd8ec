"""The containers every layer shares: one client's data, and a federated scenario.

They sit at the bottom of the package (:mod:`topofl_lib.core`), below the scenario
generators of :mod:`topofl_lib.data` and :mod:`topofl_lib.deep` that fill them and the
algorithms of :mod:`topofl_lib.federated` that read them. ``topofl_lib.data.Client`` and
``topofl_lib.data.FederatedScenario`` are the same classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import check_bool, check_int, check_labels, check_points, check_real

__all__ = ["ATTACKS", "UNKEYED_AT_DEFAULT", "Client", "FederatedScenario"]

#: Attacks an adversarial client can run: flip its training labels; flip them and
#: add heavy feature noise (visible to the descriptor); or send scaled sign-flipped
#: model updates with honest data (model poisoning).
ATTACKS = ("label_flip", "noisy_label_flip", "sign_flip")
#: Metadata flag of a dataclass field that the run store's key
#: (:func:`topofl_lib.run_cache.fingerprint`) leaves out while the field holds its
#: default: a field added later, whose default is the old behaviour, so the runs stored
#: before it existed keep their keys.
UNKEYED_AT_DEFAULT = "unkeyed_at_default"


@dataclass(frozen=True)
class Client:
    """One federated client's data.

    Attributes
    ----------
    X_train, y_train : ndarray
        Training data (what the client trains on and summarises topologically).
    X_test, y_test : ndarray
        Held-out test data with clean labels.
    adversarial : bool
        Whether the client attacks the federation.
    group : int
        Latent type used by the generator (unknown to every algorithm).
    attack : str
        What an adversarial client does (see :data:`ATTACKS`). Data attacks
        (``"label_flip"``, ``"noisy_label_flip"``) are already applied to
        ``X_train``/``y_train`` by the generator; the model attack ``"sign_flip"`` is
        applied by the federated engine to every update the client returns:
        ``w0 - attack_scale * (w - w0)``.
    attack_scale : float
        Scale of the sign-flipped update.
    n_classes : int
        Number of classes. 2: binary labels 0/1, scored by AUC, so the training split
        *and the test split* must hold both classes (a test split with one class, or a
        single record, has no AUC and would silently drop out of a mean AUC; it is
        refused). More: labels ``0..n_classes-1``, scored by accuracy only, and a client
        may hold a single class (what pathological label skew produces).
    load_noise_sd : float, default=0.0
        Standard deviation of Gaussian noise added to ``X_train`` *every time* a sample is
        put in a mini-batch (a fresh draw per load, as a data-loading transform would),
        in the units of ``X_train``; ``X_train`` itself stays clean. The federated
        engine passes it to the learner (:meth:`topofl_lib.deep.TorchLearner.client_data`
        applies it; the logistic learner refuses it), and only algorithms that train on
        the learner's mini-batches alone accept it (``load_noise`` of
        :class:`topofl_lib.federated.FederatedAlgorithm`). Finite, >= 0. At its default
        it is not part of the run store's key (:data:`UNKEYED_AT_DEFAULT`), so clients
        without it keep the keys they had before it existed.

    The arrays are validated when the client is built, and stored as validated: lists
    (or arrays of strings or ints) become float64 features and int64 labels, while an
    array that already is a float (features) or integer (labels) array is kept as the
    caller's own object, so clients can share a test set without copies. NumPy arrays
    stay writable; the federated engine calls :meth:`validate` again when it starts, so
    a value written into them afterwards is still caught.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    adversarial: bool = False
    group: int = 0
    attack: str = "label_flip"
    attack_scale: float = 1.0
    n_classes: int = 2
    load_noise_sd: float = field(default=0.0, metadata={UNKEYED_AT_DEFAULT: True})

    def __post_init__(self) -> None:
        object.__setattr__(self, "load_noise_sd",
                           check_real(self.load_noise_sd, "load_noise_sd", low=0.0))
        if self.attack not in ATTACKS:
            raise ValueError(f"unknown attack {self.attack!r}; expected one of {list(ATTACKS)}")
        check_real(self.attack_scale, "attack_scale", low=0.0, low_open=True)
        check_bool(self.adversarial, "adversarial")
        check_int(self.group, "group")
        check_int(self.n_classes, "n_classes", low=2)
        for name, checked in zip(("X_train", "y_train", "X_test", "y_test"),
                                 self._checked(), strict=True):
            original = getattr(self, name)
            keep = (isinstance(original, np.ndarray)
                    and original.dtype.kind in ("f" if name[0] == "X" else "iu"))
            if not keep:  # a frozen dataclass: store the validated array
                object.__setattr__(self, name, checked)

    def _checked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        X = check_points(self.X_train, "X_train", min_points=2)
        y = check_labels(self.y_train, X.shape[0], "y_train", n_classes=self.n_classes)
        Xt = check_points(self.X_test, "X_test")
        if Xt.shape[1] != X.shape[1]:
            raise ValueError(
                f"X_test has {Xt.shape[1]} features but X_train has {X.shape[1]}"
            )
        binary = self.n_classes == 2
        yt = check_labels(self.y_test, Xt.shape[0], "y_test", require_both=binary,
                          n_classes=self.n_classes,
                          why="a binary client is scored by AUC on its test split, which "
                              "needs both classes")
        return X, y, Xt, yt

    def validate(self, owner: str | None = None) -> None:
        """Check the arrays again (finite features, valid labels, matching shapes).

        NumPy arrays are mutable, so a NaN written into one after the client was built
        is found here. ``owner`` (e.g. ``"client 3"``) starts every error message.
        """
        try:
            self._checked()
        except (TypeError, ValueError) as exc:
            if owner is None:
                raise
            raise type(exc)(f"{owner}: {exc}") from None

    @property
    def n_train(self) -> int:
        """Number of training samples."""
        return int(self.X_train.shape[0])

    def learner_data(self, learner, X: np.ndarray, noise_seed: int | None = None):
        """The client's training data in ``learner``'s form, with its per-load noise.

        Parameters
        ----------
        learner : Learner
            The fit's learner (:class:`topofl_lib.core.Learner`).
        X : ndarray of shape (n_train, n_inputs)
            What the method trains on for ``X_train`` (its features, or ``X_train``).
        noise_seed : int, optional
            The seed of the noise a client with ``load_noise_sd > 0`` adds to every
            mini-batch the learner loads (needed then; unused without noise).

        Returns
        -------
        object
            ``learner.client_data``'s result.
        """
        if self.load_noise_sd == 0:
            return learner.client_data(X, self.y_train)
        if noise_seed is None:
            raise ValueError(f"a client with load_noise_sd={self.load_noise_sd} needs a "
                             "noise_seed for its per-load noise")
        return learner.client_data(X, self.y_train, noise_sd=self.load_noise_sd,
                                   noise_seed=noise_seed)


@dataclass(frozen=True)
class FederatedScenario:
    """A named list of clients sharing one feature space.

    ``schedule`` makes the scenario *continual*: ``{r: clients}`` replaces the clients'
    data from round ``r`` (0-based) on; :meth:`clients_at` gives the data of a round.

    Attributes
    ----------
    name : str
        Labels the results (``"healthcare"``, ...).
    clients : list of Client
        At least one; all with the same number of features and the same ``n_classes``
        (a client may hold only some of the classes).
    meta : dict, optional
        Generator details (e.g. ``"groups"``); ``meta["evaluation"]``, a dict with
        ``"evaluate_on"`` and ``"standardise"``, sets the methods' defaults.
    schedule : dict, optional
        ``{round: clients}`` (rounds >= 1), each list as long as ``clients``.
    """

    name: str
    clients: list[Client]
    meta: dict = field(default_factory=dict)
    schedule: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.clients, (list, tuple)):
            raise TypeError(f"clients must be a list of Client, got "
                            f"{type(self.clients).__name__}")
        if not isinstance(self.schedule, dict):
            raise TypeError(f"schedule must be a dict {{round: clients}}, got "
                            f"{type(self.schedule).__name__}")
        if len(self.clients) == 0:
            raise ValueError("a scenario needs at least one client")
        lists = [self.clients, *self.schedule.values()]
        for cl in lists:
            for k, c in enumerate(cl):
                if not isinstance(c, Client):
                    raise TypeError(f"client {k} must be a Client, got {type(c).__name__}")
        dims = {c.X_train.shape[1] for cl in lists for c in cl}
        if len(dims) != 1:
            raise ValueError(f"clients have different feature dimensions {sorted(dims)}")
        first = self.clients[0].n_classes
        for where, cl in zip(("", *(f" of schedule[{r}]" for r in self.schedule)), lists,
                             strict=True):
            for k, c in enumerate(cl):
                if c.n_classes != first:
                    raise ValueError(
                        f"client {k}{where} has n_classes={c.n_classes} but client 0 has "
                        f"n_classes={first}; the clients of a scenario share one label set "
                        "(a client that misses some classes keeps the scenario's n_classes)")
        for r, cl in self.schedule.items():
            check_int(r, "schedule round", low=1)
            if len(cl) != len(self.clients):
                raise ValueError(
                    f"schedule[{r}] has {len(cl)} clients, the scenario {len(self.clients)}"
                )

    def clients_at(self, r: int) -> list[Client]:
        """The clients' data in round ``r`` (0-based)."""
        due = [k for k in self.schedule if k <= r]
        return self.schedule[max(due)] if due else self.clients

    @property
    def n_features(self) -> int:
        """Feature dimension."""
        return int(self.clients[0].X_train.shape[1])

    @property
    def honest(self) -> np.ndarray:
        """Boolean mask of honest clients."""
        return np.array([not c.adversarial for c in self.clients])

    @property
    def load_noise_levels(self) -> list[float]:
        """The distinct positive ``load_noise_sd`` of its clients, every round's, sorted."""
        return sorted({c.load_noise_sd for cl in (self.clients, *self.schedule.values())
                       for c in cl if c.load_noise_sd > 0})
