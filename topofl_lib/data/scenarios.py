r"""Synthetic federated scenarios of the pTopoFL paper (Sec. 4.1).

The paper gives only the headline numbers of its two tabular scenarios; the
generative processes below are ours, chosen so that the task is *realistically
hard* (a linear model reaches AUC around 0.8-0.9, never 1.0) and the clients are
heterogeneous in a way that a topology-aware method could in principle exploit.

Scenario A, ``make_healthcare`` (8 hospitals, 2 adversarial)
    Each hospital has ``n_k ~ U{60..250}`` patients and a target mortality rate
    ``pi_k ~ U(0.10, 0.45)``. Hospitals belong to one of two latent *case-mix types*
    (assigned at random, both types present). Type ``g`` has its own covariance of the
    20 features (type 0 isotropic, type 1 with a strong two-factor correlation
    structure, so its point cloud has a different shape) and its own risk coefficients
    ``beta_g = beta + 0.6 * delta_g`` on the 10 informative features (partly shared
    biology, partly site-specific practice). Every hospital also has a small mean shift.
    Mortality follows a logistic model whose intercept is solved per hospital so that
    the expected rate equals ``pi_k``. Two hospitals chosen at random are adversarial:
    their *training* labels are flipped (``y -> 1 - y``); their test labels are clean,
    and they are excluded from evaluation.
Scenario B, ``make_benchmark`` (10 clients, pathological label skew)
    Each client has ``n_k ~ U{100..300}`` samples whose positive fraction is
    ``p_k ~ U(0.1, 0.9)``. The classes are mixtures of two Gaussian blobs each in the 12
    informative dimensions (as in :func:`sklearn.datasets.make_classification`), the
    other 8 features are noise, and ``class_sep`` is set so a linear model is good but
    not perfect.

Evaluation protocol (shared by every method): each client's data is split 70/30,
stratified by label, into a training part (the only data the client trains on and
computes its descriptor from) and a held-out test part. A method is scored on each
honest client's test part with *the model that client would deploy*: the global model
for FedAvg, FedProx and SCAFFOLD, the client's personalised model for pFedMe, and the
client's blended cluster model for pTopoFL. AUC and accuracy (threshold 0.5) are
averaged over honest clients with equal weight.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit
from sklearn.model_selection import train_test_split

from .._validation import (
    check_bool,
    check_choice,
    check_int,
    check_labels,
    check_points,
    check_random_state,
    check_real,
)

__all__ = [
    "ATTACKS",
    "PROTOCOLS",
    "Client",
    "FederatedScenario",
    "make_benchmark",
    "make_continual",
    "make_healthcare",
    "make_scenario",
]

#: Attacks an adversarial client can run: flip its training labels; flip them and
#: add heavy feature noise (visible to the descriptor); or send scaled sign-flipped
#: model updates with honest data (model poisoning).
ATTACKS = ("label_flip", "noisy_label_flip", "sign_flip")
#: Data protocols of :func:`make_healthcare` and :func:`make_benchmark`: our generators,
#: or those of the paper's released code (:mod:`topofl_lib.data.paper_protocol`).
PROTOCOLS = ("ours", "paper")


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

    def __post_init__(self) -> None:
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


@dataclass(frozen=True)
class FederatedScenario:
    """A named list of clients sharing one feature space.

    ``schedule`` makes the scenario *continual*: ``{r: clients}`` replaces the clients'
    data from round ``r`` (0-based) on; :meth:`clients_at` gives the data of a round.
    """

    name: str
    clients: list[Client]
    meta: dict = field(default_factory=dict)
    schedule: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
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


def _check_protocol(protocol: str) -> str:
    return check_choice(protocol, "protocol", PROTOCOLS)


def _check_range(value, name: str, check, **bounds) -> tuple:
    """``(low, high)`` of a range parameter: two values passing ``check``, low <= high."""
    try:
        low, high = value
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair (low, high), got {value!r}") from None
    low, high = check(low, f"{name}[0]", **bounds), check(high, f"{name}[1]", **bounds)
    if low > high:
        raise ValueError(f"{name} must be (low, high) with low <= high, got {value!r}")
    return low, high


def _check_test_size(test_size) -> float:
    test_size = check_real(test_size, "test_size", low=0.0, low_open=True)
    if test_size >= 1:
        raise ValueError(f"test_size must be < 1 (a fraction of each client), got {test_size}")
    return test_size


def _client(k: int, *args, **kwargs) -> Client:
    """Client ``k`` of a generator; a refusal names the client."""
    try:
        return Client(*args, **kwargs)
    except ValueError as exc:
        raise ValueError(f"client {k}: {exc}") from None


def _split(X, y, rng, test_size):
    seed = int(rng.integers(2**31 - 1))
    return train_test_split(X, y, test_size=test_size, stratify=y, random_state=seed)


def _intercept_for_rate(score: np.ndarray, rate: float) -> float:
    return brentq(lambda b: expit(score + b).mean() - rate, -30.0, 30.0)


def make_healthcare(
    n_clients: int = 8,
    n_adversarial: int = 2,
    n_features: int = 20,
    n_informative: int = 10,
    size_range: tuple[int, int] = (60, 250),
    mortality_range: tuple[float, float] = (0.10, 0.45),
    signal: float | None = None,
    test_size: float | None = None,
    attack: str = "label_flip",
    attack_scale: float = 3.0,
    random_state=None,
    protocol: str = "ours",
) -> FederatedScenario:
    """Scenario A: heterogeneous hospitals, some of them adversarial.

    ``protocol="ours"`` (default) is the generator of the module docstring;
    ``protocol="paper"`` is the one of the paper's released code
    (:func:`topofl_lib.data.paper_protocol.paper_healthcare`, which documents which facts
    come from that code and which are ours). Under ``"paper"`` the shared parameters
    keep their meaning, except that sizes are drawn from the half-open
    ``[size_range[0], size_range[1])`` and the rates are ``linspace(*mortality_range)``
    permuted; ``test_size`` defaults to 0.2 (at least 30 records), the adversaries'
    labels are flipped *before* the split (test labels too), and the scenario makes
    every method evaluate all clients on per-client standardised features by default.
    ``signal`` belongs to ``"ours"`` only. ``test_size`` defaults to 0.3 under ``"ours"``.

    ``attack`` is what the ``n_adversarial`` hospitals do (:data:`ATTACKS`):
    ``"label_flip"`` flips their training labels (invisible to a features-only
    descriptor); ``"noisy_label_flip"`` also adds N(0, 2^2) noise to their training
    features (visible to it); ``"sign_flip"`` keeps their data honest and has the
    engine send ``w0 - attack_scale * (w - w0)`` instead of their update.

    See the module docstring for the generative process. ``mortality_range`` is a
    pair ``(low, high)`` within [0.01, 0.99]; every hospital keeps at least two patients
    of each class, and a ``test_size`` so small that a hospital's test split holds one
    class is refused, naming the hospital (its AUC would be undefined). ``signal``
    scales the norm of the risk coefficients. With the default 1.5 a logistic regression
    trained centrally on the pooled honest training data scores AUC about 0.82 on the
    honest test splits (0.74 when the poisoned hospitals are pooled in; 10 seeds), a
    realistic level for clinical risk models.
    """
    if _check_protocol(protocol) == "paper":
        from .paper_protocol import paper_healthcare

        if signal is not None:
            raise ValueError(f"signal={signal!r} is a parameter of protocol='ours'; the "
                             "paper's generator has no such parameter")
        return paper_healthcare(
            n_clients, n_adversarial, n_features, n_informative, size_range=size_range,
            mortality_range=mortality_range, test_size=0.2 if test_size is None else test_size,
            attack=attack, attack_scale=attack_scale, random_state=random_state)
    signal = 1.5 if signal is None else signal
    test_size = 0.3 if test_size is None else test_size
    check_int(n_clients, "n_clients", low=2)
    check_int(n_adversarial, "n_adversarial", low=0, high=n_clients - 1)
    check_int(n_features, "n_features", low=2)
    check_int(n_informative, "n_informative", low=1, high=n_features)
    check_real(signal, "signal", low=0.0, low_open=True)
    if attack not in ATTACKS:
        raise ValueError(f"unknown attack {attack!r}; expected one of {list(ATTACKS)}")
    lo, hi = _check_range(size_range, "size_range", check_int, low=10)
    mortality_range = _check_range(mortality_range, "mortality_range", check_real,
                                   low=0.01, high=0.99)
    _check_test_size(test_size)
    check_real(attack_scale, "attack_scale", low=0.0, low_open=True)
    rng = check_random_state(random_state)
    d, q = n_features, n_informative
    beta = rng.normal(size=q)
    beta *= 1.2 * signal / np.linalg.norm(beta)
    deltas = [rng.normal(size=q) for _ in range(2)]
    deltas = [0.6 * 1.2 * signal * v / np.linalg.norm(v) for v in deltas]
    loadings = rng.normal(size=(d, 2)) * 1.1
    groups = rng.permutation(np.arange(n_clients) % 2)
    adversarial = np.zeros(n_clients, dtype=bool)
    adversarial[rng.choice(n_clients, n_adversarial, replace=False)] = True
    clients = []
    for k in range(n_clients):
        n = int(rng.integers(lo, hi + 1))
        rate = float(rng.uniform(*mortality_range))
        g = int(groups[k])
        Z = rng.normal(size=(n, d))
        if g == 1:
            Z = (Z + rng.normal(size=(n, 2)) @ loadings.T) / np.sqrt(1 + (loadings**2).sum(1))
        X = Z + rng.normal(scale=0.3, size=d)
        score = X[:, :q] @ (beta + deltas[g])
        p = expit(score + _intercept_for_rate(score, rate))
        y = (rng.random(n) < p).astype(np.int64)
        for rare in (0, 1):  # at least two of each class (a stratified split needs them)
            missing = 2 - int(np.count_nonzero(y == rare))
            if missing > 0:  # relabel the most (or least) likely records of the other class
                other = np.flatnonzero(y != rare)
                ranked = other[np.argsort(p[other])]
                y[ranked[-missing:] if rare == 1 else ranked[:missing]] = rare
        Xtr, Xte, ytr, yte = _split(X, y, rng, test_size)
        if adversarial[k] and attack in ("label_flip", "noisy_label_flip"):
            ytr = 1 - ytr
        if adversarial[k] and attack == "noisy_label_flip":
            Xtr = Xtr + rng.normal(scale=2.0, size=Xtr.shape)
        clients.append(_client(k, Xtr, ytr, Xte, yte, bool(adversarial[k]), g, attack,
                               attack_scale))
    return FederatedScenario("healthcare", clients, {"groups": groups.tolist()})


def make_benchmark(
    n_clients: int = 10,
    n_features: int = 20,
    n_informative: int = 12,
    size_range: tuple[int, int] | None = None,
    imbalance_range: tuple[float, float] = (0.1, 0.9),
    class_sep: float | None = None,
    test_size: float | None = None,
    random_state=None,
    protocol: str = "ours",
) -> FederatedScenario:
    """Scenario B: pathological label skew, shared class-conditional distributions.

    See the module docstring. ``class_sep`` is the distance of the blob centres from
    the origin along each informative axis (hypercube vertices, as in
    :func:`sklearn.datasets.make_classification`).

    ``protocol="ours"`` (default): the generator of the module docstring, with
    ``size_range=(100, 300)``, ``class_sep=0.6``, ``test_size=0.3`` when not given.
    ``protocol="paper"``: the paper's released code's generator
    (:func:`topofl_lib.data.paper_protocol.paper_benchmark`, which documents which facts
    come from that code and which are ours), with 500 records per client,
    ``make_classification``'s ``class_sep=1.0`` and the last 20% of each client's
    shuffled records as its test set when not given; the scenario makes every method
    evaluate all clients on per-client standardised features by default.
    """
    if _check_protocol(protocol) == "paper":
        from .paper_protocol import paper_benchmark

        return paper_benchmark(
            n_clients, n_features, n_informative,
            size_range=(500, 500) if size_range is None else size_range,
            imbalance_range=imbalance_range, class_sep=1.0 if class_sep is None else class_sep,
            test_size=0.2 if test_size is None else test_size, random_state=random_state)
    size_range = (100, 300) if size_range is None else size_range
    class_sep = 0.6 if class_sep is None else class_sep
    test_size = 0.3 if test_size is None else test_size
    check_int(n_clients, "n_clients", low=2)
    check_int(n_features, "n_features", low=2)
    check_int(n_informative, "n_informative", low=1, high=n_features)
    check_real(class_sep, "class_sep", low=0.0, low_open=True)
    lo, hi = _check_range(size_range, "size_range", check_int, low=10)
    imbalance_range = _check_range(imbalance_range, "imbalance_range", check_real,
                                   low=0.0, high=1.0)
    _check_test_size(test_size)
    rng = check_random_state(random_state)
    q = n_informative
    # Two blobs per class at distinct random hypercube vertices, random linear mixing.
    vertices = rng.choice([-1.0, 1.0], size=(4, q)) * class_sep
    mixing = np.eye(q) + 0.3 * rng.normal(size=(q, q))
    clients = []
    for k in range(n_clients):
        n = int(rng.integers(lo, hi + 1))
        frac = float(rng.uniform(*imbalance_range))
        n_pos = int(np.clip(round(frac * n), 4, n - 4))
        y = np.r_[np.ones(n_pos, dtype=np.int64), np.zeros(n - n_pos, dtype=np.int64)]
        blob = 2 * y + rng.integers(0, 2, size=n)
        informative = (rng.normal(size=(n, q)) + vertices[blob]) @ mixing.T
        X = np.hstack([informative, rng.normal(size=(n, n_features - q))])
        perm = rng.permutation(n)
        Xtr, Xte, ytr, yte = _split(X[perm], y[perm], rng, test_size)
        clients.append(_client(k, Xtr, ytr, Xte, yte, False, 0))
    return FederatedScenario("benchmark", clients, {})


def make_continual(
    n_clients: int = 6,
    n_rounds: int = 20,
    n_shifted: int = 2,
    shift_round: int = 10,
    size_range: tuple[int, int] = (60, 250),
    pool_size: int = 600,
    shift_scale: float = 1.0,
    random_state=None,
) -> FederatedScenario:
    """A continual scenario (pTopoFL Sec. 4.5): fresh patients every round, and new tasks.

    Two independent realisations of :func:`make_healthcare` (no adversaries) define an
    *old* and a *new* task for every client (different risk coefficients, covariance
    structure and case mix). In the new task, half of the patients also come from a new
    subpopulation whose features are offset by ``shift_scale`` times the typical
    within-client distance along a random direction, so the point cloud splits into two
    groups (``shift_scale=0`` leaves only the label and case-mix change, which a
    features-only descriptor hardly sees). Each client draws ``pool_size`` records of each task. In
    every round it trains on a fresh sample of ``n_k ~ U{size_range}`` records from its
    current task, so its descriptor moves with sampling noise even when nothing
    changes. From round ``shift_round`` (0-based) on, ``n_shifted`` clients chosen at
    random switch to their new task (training and test data). ``meta`` records
    ``shifted`` and ``shift_round``.
    """
    check_int(n_clients, "n_clients", low=2)
    check_int(n_rounds, "n_rounds", low=2)
    check_int(n_shifted, "n_shifted", low=0, high=n_clients)
    check_int(shift_round, "shift_round", low=1, high=n_rounds - 1)
    size_range = _check_range(size_range, "size_range", check_int, low=10)
    check_int(pool_size, "pool_size", low=size_range[1])
    rng = check_random_state(random_state)
    seeds = rng.integers(2**31 - 1, size=2)
    size = int(np.ceil(pool_size / 0.7))
    check_real(shift_scale, "shift_scale", low=0.0)
    tasks = [make_healthcare(n_clients, n_adversarial=0, size_range=(size, size),
                             random_state=int(s)) for s in seeds]
    d = tasks[1].n_features
    direction = rng.normal(size=d)
    offset = shift_scale * np.sqrt(2 * d) * direction / np.linalg.norm(direction)

    def arrive(X):
        return X + (rng.random(X.shape[0]) < 0.5)[:, None] * offset

    tasks[1] = FederatedScenario("new task", [
        Client(arrive(c.X_train), c.y_train, arrive(c.X_test), c.y_test, False, c.group)
        for c in tasks[1].clients])
    sizes = rng.integers(size_range[0], size_range[1] + 1, size=n_clients)
    shifted = np.sort(rng.choice(n_clients, n_shifted, replace=False))

    def round_clients(r: int) -> list[Client]:
        out = []
        for k in range(n_clients):
            src = tasks[1 if (k in shifted and r >= shift_round) else 0].clients[k]
            idx = rng.choice(src.n_train, int(sizes[k]), replace=False)
            y = src.y_train[idx]
            if y.min() == y.max():  # keep both classes in a small draw
                other = np.flatnonzero(src.y_train != y[0])[:1]
                idx[0] = other[0]
            out.append(Client(src.X_train[idx], src.y_train[idx], src.X_test, src.y_test,
                              False, src.group))
        return out

    first = round_clients(0)
    schedule = {r: round_clients(r) for r in range(1, n_rounds)}
    return FederatedScenario("continual", first,
                             {"shifted": shifted.tolist(), "shift_round": shift_round},
                             schedule)


_SCENARIOS = {"healthcare": make_healthcare, "benchmark": make_benchmark,
              "continual": make_continual}


def make_scenario(name: str, random_state=None, protocol: str = "ours",
                  **kwargs) -> FederatedScenario:
    """Build a scenario by name (``"healthcare"``, ``"benchmark"``, ``"continual"``, or
    ``"image"``: :func:`topofl_lib.deep.make_image_scenario`).

    ``protocol`` (``"ours"`` or ``"paper"``, healthcare and benchmark only) picks the
    generator: see :func:`make_healthcare` and :func:`make_benchmark`.
    """
    if _check_protocol(protocol) != "ours":
        if name not in ("healthcare", "benchmark"):
            raise ValueError(f"protocol={protocol!r} exists for the healthcare and benchmark "
                             f"scenarios only, not {name!r}")
        kwargs["protocol"] = protocol
    if name == "image":
        from ..deep.scenarios import make_image_scenario

        return make_image_scenario(random_state=random_state, **kwargs)
    if name not in _SCENARIOS:
        raise ValueError(
            f"unknown scenario {name!r}; expected one of {sorted([*_SCENARIOS, 'image'])}")
    return _SCENARIOS[name](random_state=random_state, **kwargs)
