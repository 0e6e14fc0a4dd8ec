r"""The data protocol of the pTopoFL paper's released code (v1.0.0), rewritten.

Table 1 of the paper was computed with generators that the paper's text does not
describe. The facts below about them (marked **[code]**) were given to us as a
description of the released code (pTopoFL v1.0.0, default scenario seed 42); this module
is our own implementation of that description, drawing from the same distribution. It
does not reproduce the authors' random streams, so a given seed gives a different
realisation than theirs; only the pooled population of a scenario seeded with an int is
the same draw as theirs (same :func:`sklearn.datasets.make_classification` call and seed).
Everything marked **[ours]** is a choice we made where the description is silent.

Healthcare, :func:`paper_healthcare` (Scenario A)
    * **[code]** A population of 10,000 records from ``make_classification`` with 20
      features, 10 informative, 4 redundant, 2 classes, ``flip_y=0.02``,
      ``class_sep=1.0``, seeded by the scenario seed.
    * **[code]** 8 hospitals; sizes uniform integers in ``[60, 250)``; positive
      (mortality) rates the 8 values of ``linspace(0.10, 0.45, 8)`` in a random order.
    * **[code]** Per hospital: shift ``N(0, 0.5^2)`` and scale ``U(0.7, 1.4)`` per
      feature; positives drawn with replacement from the population's positives and
      mapped ``x * scale + shift``; negatives from its negatives, mapped
      ``x * scale + 0.3 * shift`` (so the shift itself carries label information);
      records shuffled.
    * **[code]** Hospitals 1 and 5 (0-based) are adversarial: 30% of *all* their labels
      are flipped before the split, so their test labels are flipped too.
    * **[code]** The test set is a random 20% of a hospital's records, at least 30; the
      rest is its training set.
    * **[code]** The code also draws a 500-record global test set; it enters no reported
      metric. **[ours]** We do not draw it.
    * **[ours]** A hospital has ``round(rate * n)`` positives (a fixed count, not a
      binomial draw); the adversaries flip ``round(0.3 * n)`` labels chosen without
      replacement; the test set has ``max(30, round(0.2 * n))`` records.
    * **[ours]** With a number of adversaries other than 2, they are the hospitals
      ``1, 5, 0, 2, 3, 4, 6, ...`` in that order (hospitals are exchangeable here, so
      which indices carry the attack does not change the distribution).
    * **[ours]** ``attack="noisy_label_flip"`` adds ``N(0, 2^2)`` noise to the
      adversaries' training features after the flip; ``attack="sign_flip"`` keeps their
      data honest and lets the engine poison their updates (see
      :data:`topofl_lib.data.ATTACKS`).

Benchmark, :func:`paper_benchmark` (Scenario B)
    * **[code]** A population of 5,000 records from ``make_classification`` with 20
      features, 12 informative, 4 redundant, 5 classes, one cluster per class; the
      binary label is ``class >= 2``.
    * **[code]** 10 clients of 500 records; each client's positive fraction is
      ``U(0.1, 0.9)``; its positives and negatives are drawn with replacement from the
      population, every record gets ``N(0, 0.3^2)`` noise per feature; after shuffling
      the first 80% is training data, the last 20% test data. No adversaries.
    * **[ours]** ``make_classification``'s other arguments are scikit-learn's defaults
      (``class_sep=1.0``, ``flip_y=0.01``): the description names none. A client has
      ``round(fraction * n)`` positives and ``round(0.2 * n)`` test records.

Both generators
    * **[ours]** The order of the random draws: the population (seeded by the int
      seed itself, or by an int drawn from a Generator passed as ``random_state``);
      then, from ``numpy.random.default_rng(seed)``: every client's size (healthcare:
      then the order of the rates); then one child generator per client
      (``Generator.spawn``) draws, in this order: shift and scale (healthcare) or the
      positive fraction (benchmark), the positive and then the negative record indices,
      the feature noise (benchmark), the shuffle, the set of labels to flip (healthcare:
      drawn for *every* hospital and applied to the adversaries only), and the test
      records (healthcare; the benchmark's are the last 20% of the shuffle). So a
      client's data depend neither on the other clients nor on which clients attack:
      two scenarios with the same seed and different ``n_adversarial`` differ only in
      the attackers' labels (paired comparisons across attack rates).
    * **[ours]** If a client's training part or its test set would hold a single class,
      the split is drawn again, at most 100 times: the engine needs both classes to
      train a logistic regression, and a binary client is scored by its test AUC,
      which one class leaves undefined (:class:`~topofl_lib.data.Client` refuses such a
      client rather than let a mean skip it). With the default parameters a training
      part never needed a redraw in seeds 0-999 of either scenario; a test set did for
      11 of the 8,000 healthcare hospitals of seeds 0-999.
    * **[code]** The evaluation protocol: the reported number is the mean over *all*
      clients (adversarial included) of each client's test AUC and accuracy, and each
      client standardises its features with its own training statistics.
      The scenario carries these as ``meta["evaluation"] = {"evaluate_on": "all",
      "standardise": True}``, the defaults of every method fitted on it (overridable
      with the methods' ``evaluate_on`` and ``standardise`` parameters, see
      :class:`topofl_lib.federated.FederatedAlgorithm`).

Every client's ``group`` is 0 (these generators have no latent client types).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from sklearn.datasets import make_classification

from .._validation import check_int, check_random_state, check_range, check_real
from ..core.containers import ATTACKS, Client, FederatedScenario
from ..core.seeds import draw_seed

__all__ = ["PAPER_EVALUATION", "paper_benchmark", "paper_healthcare"]

#: The paper's code's evaluation choices, stored in ``meta["evaluation"]`` of its scenarios.
PAPER_EVALUATION = {"evaluate_on": "all", "standardise": True}

_MAX_SPLITS = 100


def _check_feature_split(n_features: int, n_informative: int, n_redundant: int) -> None:
    """``n_informative + n_redundant <= n_features``, said of the three together: the
    caller may not have passed ``n_redundant`` (its default is 4)."""
    check_int(n_informative, "n_informative", low=1, high=n_features)
    check_int(n_redundant, "n_redundant", low=0)
    if n_informative + n_redundant > n_features:
        raise ValueError(
            f"n_informative + n_redundant must be <= n_features, got {n_informative} + "
            f"{n_redundant} > {n_features} (the paper's protocol adds n_redundant = 4 "
            "redundant features unless told otherwise: ask for more features, fewer "
            "informative ones, or a smaller n_redundant)")

def _seeds(random_state) -> tuple[int, np.random.Generator]:
    """The population's seed and the generator of every later draw (module docstring)."""
    if isinstance(random_state, np.random.Generator):
        return draw_seed(random_state), random_state
    rng = check_random_state(random_state)
    if random_state is None:
        return draw_seed(rng), rng
    return int(random_state), rng


def _adversarial_order(n_clients: int) -> list[int]:
    """Hospitals 1 and 5 (the paper's code), then the others in index order."""
    first = [k for k in (1, 5) if k < n_clients]
    return first + [k for k in range(n_clients) if k not in first]


def _draw_client(pos: np.ndarray, neg: np.ndarray, n: int, n_pos: int,
                 rng: np.random.Generator, transform=None) -> tuple[np.ndarray, np.ndarray]:
    """``n_pos`` positives and ``n - n_pos`` negatives drawn with replacement, shuffled."""
    Xp = pos[rng.choice(pos.shape[0], n_pos, replace=True)]
    Xn = neg[rng.choice(neg.shape[0], n - n_pos, replace=True)]
    if transform is not None:
        Xp, Xn = transform(Xp, Xn)
    X = np.vstack([Xp, Xn])
    y = np.r_[np.ones(n_pos, dtype=np.int64), np.zeros(n - n_pos, dtype=np.int64)]
    order = rng.permutation(n)
    return X[order], y[order]


def _split(X: np.ndarray, y: np.ndarray, n_test: int, orders) -> tuple[np.ndarray, ...]:
    """Test set = the last ``n_test`` records of the next order from ``orders``; the next
    order is tried while the training part or the test set holds a single class (module
    docstring)."""
    for _, order in zip(range(_MAX_SPLITS), orders, strict=False):
        train, test = order[:-n_test], order[-n_test:]
        if np.unique(y[train]).size == 2 and np.unique(y[test]).size == 2:
            return X[train], y[train], X[test], y[test]
    raise ValueError(f"could not split a client of {y.size} records ({n_test} for testing) "
                     "so that its training part and its test set both hold both classes; "
                     "use larger clients")


def _orders(rng: np.random.Generator, n: int, first: np.ndarray | None = None):
    """Record orders for :func:`_split`: ``first`` (if given), then random permutations."""
    if first is not None:
        yield first
    while True:
        yield rng.permutation(n)


def _n_test(test_size: float, n: int, min_test: int = 1) -> int:
    n_test = max(min_test, int(round(test_size * n)))
    if n_test > n - 2:
        raise ValueError(f"test_size={test_size} leaves fewer than 2 training records for a "
                         f"client of {n} records")
    return n_test


def _n_positive(rate: float, n: int) -> int:
    return int(np.clip(round(rate * n), 1, n - 1))


def paper_healthcare(
    n_clients: int = 8,
    n_adversarial: int = 2,
    n_features: int = 20,
    n_informative: int = 10,
    n_redundant: int = 4,
    size_range: tuple[int, int] = (60, 250),
    mortality_range: tuple[float, float] = (0.10, 0.45),
    pool_size: int = 10_000,
    shift_sd: float = 0.5,
    scale_range: tuple[float, float] = (0.7, 1.4),
    negative_shift: float = 0.3,
    flip_fraction: float = 0.3,
    test_size: float = 0.2,
    min_test: int = 30,
    attack: str = "label_flip",
    attack_scale: float = 3.0,
    random_state=None,
) -> FederatedScenario:
    """Scenario A as the paper's released code draws it (see the module docstring).

    Parameters
    ----------
    n_clients, n_adversarial : int
        Hospitals, and how many of them attack (**[code]**: 8 and 2, hospitals 1 and 5).
    n_features, n_informative, n_redundant : int
        ``make_classification`` arguments of the population (**[code]**: 20, 10, 4).
    size_range : (int, int)
        Hospital sizes are uniform integers in ``[size_range[0], size_range[1])``.
    mortality_range : (float, float)
        The positive rates are ``linspace(*mortality_range, n_clients)``, permuted.
    pool_size : int
        Records of the population (**[code]**: 10,000).
    shift_sd, scale_range, negative_shift : float, (float, float), float
        Per-hospital shift ``N(0, shift_sd^2)``, scale ``U(*scale_range)``, and the
        fraction of the shift applied to negatives (**[code]**: 0.5, (0.7, 1.4), 0.3).
    flip_fraction : float
        Fraction of an adversarial hospital's labels flipped before the split.
    test_size, min_test : float, int
        The test set is ``max(min_test, round(test_size * n))`` random records.
    attack, attack_scale : str, float
        What the adversaries do (:data:`~topofl_lib.data.ATTACKS`); see the module
        docstring for how each attack is applied here.
    random_state : None, int or numpy Generator

    Returns
    -------
    FederatedScenario
        Named ``"healthcare"``; ``meta`` holds ``protocol="paper"``, the
        ``evaluation`` defaults, the hospitals' ``sizes`` and ``rates`` and the indices
        of the ``adversarial`` hospitals.
    """
    check_int(n_clients, "n_clients", low=2)
    check_int(n_adversarial, "n_adversarial", low=0, high=n_clients - 1)
    check_int(n_features, "n_features", low=2)
    _check_feature_split(n_features, n_informative, n_redundant)
    check_int(min_test, "min_test", low=1)
    lo, hi = check_range(size_range, "size_range", check_int, low=min_test + 2)
    if hi == lo:
        raise ValueError(f"size_range must be (low, high) with low < high (sizes are drawn "
                         f"from [low, high)), got {size_range!r}")
    r_lo, r_hi = check_range(mortality_range, "mortality_range", check_real, low=0.0,
                             low_open=True, high=1.0)
    if r_hi >= 1.0:
        raise ValueError(f"mortality_range[1] must be < 1, got {r_hi}")
    check_int(pool_size, "pool_size", low=100)
    check_real(shift_sd, "shift_sd", low=0.0)
    s_lo, s_hi = check_range(scale_range, "scale_range", check_real, low=0.0, low_open=True)
    check_real(negative_shift, "negative_shift")
    check_real(flip_fraction, "flip_fraction", low=0.0, high=1.0)
    check_real(test_size, "test_size", low=0.0, low_open=True, high=0.9)
    if attack not in ATTACKS:
        raise ValueError(f"unknown attack {attack!r}; expected one of {list(ATTACKS)}")
    check_real(attack_scale, "attack_scale", low=0.0, low_open=True)
    pool_seed, rng = _seeds(random_state)

    X_pool, y_pool = make_classification(
        n_samples=pool_size, n_features=n_features, n_informative=n_informative,
        n_redundant=n_redundant, n_classes=2, flip_y=0.02, class_sep=1.0,
        random_state=pool_seed)
    pos, neg = X_pool[y_pool == 1], X_pool[y_pool == 0]
    sizes = rng.integers(lo, hi, size=n_clients)
    rates = rng.permutation(np.linspace(r_lo, r_hi, n_clients))
    adversarial = np.zeros(n_clients, dtype=bool)
    adversarial[_adversarial_order(n_clients)[:n_adversarial]] = True
    clients = []
    for k, crng in enumerate(rng.spawn(n_clients)):
        n = int(sizes[k])
        shift = crng.normal(0.0, shift_sd, size=n_features)
        scale = crng.uniform(s_lo, s_hi, size=n_features)

        def transform(Xp, Xn, shift=shift, scale=scale):
            return Xp * scale + shift, Xn * scale + negative_shift * shift

        X, y = _draw_client(pos, neg, n, _n_positive(rates[k], n), crng, transform)
        # drawn for every hospital, so that its data do not depend on who attacks
        flipped = crng.choice(n, int(round(flip_fraction * n)), replace=False)
        if adversarial[k] and attack in ("label_flip", "noisy_label_flip"):
            y[flipped] = 1 - y[flipped]
        X_train, y_train, X_test, y_test = _split(
            X, y, _n_test(test_size, n, min_test), _orders(crng, n))
        if adversarial[k] and attack == "noisy_label_flip":
            X_train = X_train + crng.normal(scale=2.0, size=X_train.shape)
        clients.append(Client(X_train, y_train, X_test, y_test, bool(adversarial[k]), 0,
                              attack, attack_scale))
    meta = {"protocol": "paper", "evaluation": dict(PAPER_EVALUATION),
            "sizes": sizes.tolist(), "rates": rates.tolist(),
            "adversarial": np.flatnonzero(adversarial).tolist()}
    return FederatedScenario("healthcare", clients, meta)


def paper_benchmark(
    n_clients: int = 10,
    n_features: int = 20,
    n_informative: int = 12,
    n_redundant: int = 4,
    n_classes: int = 5,
    positive_classes: Sequence[int] | None = None,
    size_range: tuple[int, int] = (500, 500),
    imbalance_range: tuple[float, float] = (0.1, 0.9),
    pool_size: int = 5_000,
    class_sep: float = 1.0,
    noise_sd: float = 0.3,
    test_size: float = 0.2,
    random_state=None,
) -> FederatedScenario:
    """Scenario B as the paper's released code draws it (see the module docstring).

    Parameters
    ----------
    n_clients : int
        Clients (**[code]**: 10).
    n_features, n_informative, n_redundant, n_classes : int
        ``make_classification`` arguments of the population (**[code]**: 20, 12, 4, 5,
        one cluster per class).
    positive_classes : sequence of int, optional
        Classes of the population labelled 1 (**[code]**: ``class >= 2``, the default).
    size_range : (int, int)
        Client sizes, uniform integers in ``[size_range[0], size_range[1]]``
        (**[code]**: 500 each).
    imbalance_range : (float, float)
        Each client's positive fraction is ``U(*imbalance_range)``.
    pool_size : int
        Records of the population (**[code]**: 5,000).
    class_sep : float
        ``make_classification``'s ``class_sep`` (**[ours]**: its default 1.0).
    noise_sd : float
        Standard deviation of the noise added to every feature (**[code]**: 0.3).
    test_size : float
        The last ``round(test_size * n)`` shuffled records are the test set.
    random_state : None, int or numpy Generator

    Returns
    -------
    FederatedScenario
        Named ``"benchmark"``; ``meta`` holds ``protocol="paper"``, the ``evaluation``
        defaults and the clients' ``sizes`` and positive ``fractions``.
    """
    check_int(n_clients, "n_clients", low=2)
    check_int(n_features, "n_features", low=2)
    _check_feature_split(n_features, n_informative, n_redundant)
    check_int(n_classes, "n_classes", low=2)
    if positive_classes is None:
        positive = np.arange(2, n_classes)
    elif isinstance(positive_classes, (str, bytes)) or not isinstance(positive_classes, Iterable):
        raise TypeError(f"positive_classes must be a sequence of class indices, got "
                        f"{positive_classes!r}")
    else:
        positive = np.asarray([check_int(c, f"positive_classes[{i}]", low=0, high=n_classes - 1)
                               for i, c in enumerate(positive_classes)], dtype=np.int64)
    if positive.size == 0 or np.unique(positive).size == n_classes:
        raise ValueError(f"positive_classes must be a non-empty proper subset of "
                         f"0..{n_classes - 1}, got {positive.tolist()}")
    lo, hi = check_range(size_range, "size_range", check_int, low=10)
    f_lo, f_hi = check_range(imbalance_range, "imbalance_range", check_real, low=0.0,
                             low_open=True)
    if f_hi >= 1.0:
        raise ValueError(f"imbalance_range[1] must be < 1, got {f_hi}")
    check_int(pool_size, "pool_size", low=100)
    check_real(class_sep, "class_sep", low=0.0, low_open=True)
    check_real(noise_sd, "noise_sd", low=0.0)
    check_real(test_size, "test_size", low=0.0, low_open=True, high=0.9)
    pool_seed, rng = _seeds(random_state)

    X_pool, cls = make_classification(
        n_samples=pool_size, n_features=n_features, n_informative=n_informative,
        n_redundant=n_redundant, n_classes=n_classes, n_clusters_per_class=1,
        class_sep=class_sep, random_state=pool_seed)
    y_pool = np.isin(cls, positive)
    pos, neg = X_pool[y_pool], X_pool[~y_pool]
    sizes = rng.integers(lo, hi + 1, size=n_clients)
    fractions = np.empty(n_clients)
    clients = []
    for k, crng in enumerate(rng.spawn(n_clients)):
        n = int(sizes[k])
        fractions[k] = crng.uniform(f_lo, f_hi)

        def transform(Xp, Xn, crng=crng):
            return (Xp + crng.normal(0.0, noise_sd, size=Xp.shape),
                    Xn + crng.normal(0.0, noise_sd, size=Xn.shape))

        n_test = _n_test(test_size, n)
        X, y = _draw_client(pos, neg, n, _n_positive(fractions[k], n), crng, transform)
        # the records are shuffled already: the first order keeps them (last 20% test)
        X_train, y_train, X_test, y_test = _split(X, y, n_test, _orders(crng, n, np.arange(n)))
        clients.append(Client(X_train, y_train, X_test, y_test, False, 0))
    meta = {"protocol": "paper", "evaluation": dict(PAPER_EVALUATION),
            "sizes": sizes.tolist(), "fractions": fractions.tolist()}
    return FederatedScenario("benchmark", clients, meta)
