"""Tests of the federated algorithms, metrics, scenarios and comparison runner."""

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from topofl_lib.data import (
    Client,
    FederatedScenario,
    make_benchmark,
    make_continual,
    make_healthcare,
)
from topofl_lib.experiments import run_comparison
from topofl_lib.federated import (
    ALL_METHODS,
    METHODS,
    FedAvg,
    FedProx,
    PTopoFL,
    Scaffold,
    accuracy,
    client_streams,
    convergence_round,
    make_method,
    roc_auc,
    scaffold_drift,
)
from topofl_lib.federated.local import load_noise_seed


@pytest.fixture(scope="module")
def benchmark():
    """Scenario B with seed 0 (10 clients)."""
    return make_benchmark(random_state=0)


@pytest.fixture(scope="module")
def healthcare():
    """Scenario A with seed 0 (8 clients, 2 adversarial)."""
    return make_healthcare(random_state=0)


def _client(rng, n=40, d=3):
    """A valid random client with both classes (in its training and its test split)."""
    y = np.r_[np.zeros(n // 2, int), np.ones(n - n // 2, int)]
    return Client(rng.normal(size=(n, d)), y, rng.normal(size=(10, d)), np.tile([0, 1], 5))


# -- algorithms ----------------------------------------------------------------------


def test_scaffold_server_control_is_mean_of_client_controls(benchmark):
    """SCAFFOLD's server control variate equals the mean of the client variates."""
    est = Scaffold(n_rounds=3, random_state=0).fit(benchmark)
    assert est.client_controls_.shape == (10, benchmark.n_features + 1)
    assert np.any(est.control_ != 0)
    np.testing.assert_allclose(est.control_, est.client_controls_.mean(axis=0),
                               rtol=1e-10, atol=1e-12)


def test_scaffold_drift_tables_the_correction_each_client_adds(benchmark):
    """The correction is 0 in round 1 and ||c - c_k|| later; the shift is steps * lr * it."""
    est = Scaffold(n_rounds=3, random_state=0).fit(benchmark)
    norms = np.array(est.correction_norms_)
    assert np.all(norms[0] == 0) and np.all(norms[1:] > 0)
    assert len(est.coef_norms_) == 3 and np.all(np.isfinite(est.coef_norms_))
    est._round(3)  # stepping a fitted model on past n_rounds extends the records
    shape = (4, len(benchmark.clients))
    assert np.shape(est.correction_norms_) == np.shape(est.local_steps_) == shape
    assert np.isfinite(est.coef_norms_).all() and len(est.coef_norms_) == 4
    drift = scaffold_drift(benchmark, n_rounds=3, random_state=0)
    assert len(drift) == 3 * len(benchmark.clients) and not drift["diverged"].any()
    np.testing.assert_array_equal(drift.pivot(index="round", columns="client",
                                              values="correction_norm"),
                                  norms)
    n = np.array([c.n_train for c in benchmark.clients])
    assert (drift.loc[drift["round"] == 1, "local_steps"].to_numpy()
            == est.local_epochs * np.ceil(n / est.batch_size)).all()
    np.testing.assert_allclose(drift["correction_shift"],
                               drift["local_steps"] * est.lr * drift["correction_norm"])


def test_scaffold_drift_stops_at_the_round_that_diverged(benchmark):
    """A fit that diverges is caught: the table ends at the diverging round, marked."""
    with pytest.raises(FloatingPointError, match=r"round (\d+)") as info:
        Scaffold(n_rounds=20, lr=1e6, random_state=0).fit(benchmark)
    stopped = int(re.search(r"round (\d+)", str(info.value)).group(1))
    drift = scaffold_drift(benchmark, n_rounds=20, lr=1e6, random_state=0)
    last = drift["round"].max()
    assert last == stopped < 20
    assert drift.loc[drift["round"] == last, "diverged"].all()
    assert not drift.loc[drift["round"] < last, "diverged"].any()


@pytest.mark.parametrize("name", list(METHODS))
def test_methods_are_deterministic(name, healthcare):
    """Every method fitted twice with the same seed gives the same AUC history."""
    a = make_method(name, n_rounds=2, random_state=0).fit(healthcare)
    b = make_method(name, n_rounds=2, random_state=0).fit(healthcare)
    assert a.history_["auc"].shape == (2,)
    np.testing.assert_array_equal(a.history_["auc"], b.history_["auc"])
    np.testing.assert_array_equal(a.history_["client_auc"], b.history_["client_auc"])


def test_run_comparison_is_deterministic():
    """run_comparison twice with the same seeds gives identical final tables."""
    kw = dict(seeds=[0, 1], methods=["FedAvg", "pTopoFL"], n_rounds=2, progress=False)
    a = run_comparison("benchmark", **kw)
    b = run_comparison("benchmark", **kw)
    assert len(a.final) == 4
    assert set(a.final["method"]) == {"FedAvg", "pTopoFL"}
    pd.testing.assert_frame_equal(a.final, b.final)
    pd.testing.assert_frame_equal(a.curves, b.curves)


def test_fedprox_with_zero_mu_equals_fedavg(benchmark):
    """FedProx with mu=0 is exactly FedAvg for the same seed."""
    avg = FedAvg(n_rounds=3, random_state=4).fit(benchmark)
    prox = FedProx(n_rounds=3, mu=0.0, random_state=4).fit(benchmark)
    np.testing.assert_array_equal(prox.coef_, avg.coef_)
    np.testing.assert_array_equal(prox.history_["auc"], avg.history_["auc"])


def test_fedprox_with_positive_mu_differs(benchmark):
    """A positive proximal term changes the result (the term is actually applied)."""
    avg = FedAvg(n_rounds=2, random_state=4).fit(benchmark)
    prox = FedProx(n_rounds=2, mu=1.0, random_state=4).fit(benchmark)
    assert not np.allclose(prox.coef_, avg.coef_)


@pytest.mark.parametrize("beta", [0.0, 0.7])
def test_ptopofl_single_cluster_deploys_one_model(beta, benchmark):
    """With one cluster, no trust and no augmentation every client deploys one model."""
    est = PTopoFL(n_rounds=2, n_clusters=1, use_trust=False, beta=beta, augment=False,
                  random_state=0).fit(benchmark)
    np.testing.assert_array_equal(est.labels_, np.zeros(10))
    assert est.cluster_models_.shape[0] == 1
    X = benchmark.clients[0].X_test
    p0 = est.predict_proba(X, client=0)
    for k in range(1, 10):
        np.testing.assert_array_equal(est.predict_proba(X, client=k), p0)


def test_ptopofl_attributes(healthcare):
    """pTopoFL exposes descriptors, clusters, per-cluster weights and drift."""
    K = len(healthcare.clients)
    est = PTopoFL(n_rounds=2, n_clusters=2, random_state=0).fit(healthcare)
    assert est.descriptors_.shape == (K, 48)
    assert est.distances_.shape == (K, K)
    assert len(np.unique(est.labels_)) == 2
    for c in np.unique(est.labels_):
        assert est.weights_[est.labels_ == c].sum() == pytest.approx(1.0)
    assert est.trust_.shape == (K,) and np.all((est.trust_ > 0) & (est.trust_ <= 1))
    assert est.drift_.shape == (K,)
    assert np.all(est.drift_ >= 0)
    assert est.signatures_.shape == (2, K, 48)


# -- metrics -------------------------------------------------------------------------


def test_roc_auc_matches_sklearn_with_ties():
    """The rank-based AUC equals sklearn's, including tied scores."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        y = rng.integers(0, 2, size=60)
        scores = rng.integers(0, 6, size=60) / 5.0
        assert roc_auc(y, scores) == pytest.approx(roc_auc_score(y, scores), abs=1e-12)
    assert np.isnan(roc_auc(np.ones(5), np.arange(5.0)))


def test_convergence_round_definition():
    """First (1-based) round whose value is >= 95% of the final value."""
    assert convergence_round([0.5, 0.9, 1.0]) == 3  # 0.9 < 0.95
    assert convergence_round([0.5, 0.95, 1.0]) == 2
    assert convergence_round([0.96, 0.5, 1.0]) == 1
    assert convergence_round([0.7]) == 1
    with pytest.raises(ValueError):
        convergence_round([])


# -- bad input -----------------------------------------------------------------------


def test_client_rejects_nan():
    """A client with NaN training features is rejected."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    X[3, 0] = np.nan
    y = np.tile([0, 1], 10)
    with pytest.raises(ValueError, match="NaN"):
        Client(X, y, rng.normal(size=(5, 3)), y[:5])


def test_client_rejects_single_class():
    """A client whose training labels have one class is rejected."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="single class"):
        Client(rng.normal(size=(20, 3)), np.zeros(20, int), rng.normal(size=(5, 3)),
               np.zeros(5, int))


def test_client_rejects_test_dimension_mismatch():
    """X_test must have the same number of features as X_train."""
    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 10)
    with pytest.raises(ValueError, match="features"):
        Client(rng.normal(size=(20, 3)), y, rng.normal(size=(5, 4)), y[:5])


def test_scenario_rejects_mixed_dimensions_and_empty():
    """Clients of different dimensions, or no clients at all, are rejected."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="dimension"):
        FederatedScenario("mixed", [_client(rng, d=3), _client(rng, d=4)])
    with pytest.raises(ValueError):
        FederatedScenario("empty", [])


def test_unknown_method_names():
    """make_method and run_comparison reject unknown method names."""
    with pytest.raises(ValueError, match="FedFoo"):
        make_method("FedFoo")
    with pytest.raises(ValueError, match="nope"):
        run_comparison("benchmark", seeds=[0], methods=["nope"], progress=False)


def test_bad_parameters_raise_on_fit(benchmark):
    """Invalid hyper-parameters or inputs raise on fit with a clear error."""
    with pytest.raises(ValueError, match="n_rounds"):
        FedAvg(n_rounds=0).fit(benchmark)
    with pytest.raises(ValueError, match="distance"):
        PTopoFL(n_rounds=1, distance="cosine").fit(benchmark)
    with pytest.raises(TypeError, match="FederatedScenario"):
        FedAvg(n_rounds=1).fit(benchmark.clients)
    with pytest.raises(ValueError, match="n_clusters"):
        PTopoFL(n_rounds=1, n_clusters=20).fit(benchmark)


def test_predict_proba_before_fit():
    """Predicting with an unfitted estimator raises."""
    with pytest.raises(ValueError, match="fit"):
        FedAvg().predict_proba(np.zeros((2, 3)))


# -- scenario generators -------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_make_healthcare_shape(seed):
    """Scenario A: 8 clients, 2 adversarial, sizes in [60, 250], 20 features."""
    scen = make_healthcare(random_state=seed)
    assert len(scen.clients) == 8
    assert scen.n_features == 20
    adversarial = np.array([c.adversarial for c in scen.clients])
    assert adversarial.sum() == 2
    np.testing.assert_array_equal(scen.honest, ~adversarial)
    for c in scen.clients:
        assert 60 <= c.X_train.shape[0] + c.X_test.shape[0] <= 250
        assert c.X_train.shape[1] == c.X_test.shape[1] == 20
        assert set(np.unique(c.y_train)) == {0, 1}


def test_make_benchmark_shape():
    """Scenario B: 10 honest clients with 20 features."""
    scen = make_benchmark(random_state=3)
    assert len(scen.clients) == 10
    assert scen.n_features == 20
    assert scen.honest.all()
    for c in scen.clients:
        assert 100 <= c.X_train.shape[0] + c.X_test.shape[0] <= 300


@pytest.mark.parametrize("maker", [make_healthcare, make_benchmark])
def test_generators_are_deterministic(maker):
    """Same seed gives identical arrays; a different seed gives different data."""
    a, b, c = maker(random_state=7), maker(random_state=7), maker(random_state=8)
    for ca, cb in zip(a.clients, b.clients, strict=True):
        for field in ("X_train", "y_train", "X_test", "y_test"):
            np.testing.assert_array_equal(getattr(ca, field), getattr(cb, field))
        assert ca.adversarial == cb.adversarial and ca.group == cb.group
    assert not np.array_equal(a.clients[0].X_train[:5], c.clients[0].X_train[:5])


@pytest.mark.parametrize("n_adversarial", [0, 1, 3])
def test_make_healthcare_adversarial_count(n_adversarial):
    """The number of adversarial flags equals n_adversarial and honest is its complement."""
    scen = make_healthcare(n_adversarial=n_adversarial, random_state=1)
    flags = np.array([c.adversarial for c in scen.clients])
    assert flags.sum() == n_adversarial
    np.testing.assert_array_equal(scen.honest, ~flags)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adversarial_train_labels_flipped_test_labels_clean(seed):
    """A model fitted on honest clients ranks adversarial test labels right, train wrong.

    Flipping y -> 1 - y turns an AUC a into 1 - a, so poisoned training labels score
    below 0.5 and clean test labels above it.
    """
    from sklearn.linear_model import LogisticRegression

    scen = make_healthcare(random_state=seed)
    honest = [c for c in scen.clients if not c.adversarial]
    model = LogisticRegression().fit(np.vstack([c.X_train for c in honest]),
                                     np.concatenate([c.y_train for c in honest]))
    for c in scen.clients:
        if c.adversarial:
            assert roc_auc_score(c.y_train, model.decision_function(c.X_train)) < 0.4
            assert roc_auc_score(c.y_test, model.decision_function(c.X_test)) > 0.6


# -- non-finite values and dropped clients (issue 12) -------------------------------


def _copy(scenario: FederatedScenario) -> FederatedScenario:
    """A deep copy of a scenario's arrays (the fixtures are shared between tests)."""
    return FederatedScenario(scenario.name, [
        Client(c.X_train.copy(), c.y_train.copy(), c.X_test.copy(), c.y_test.copy(),
               c.adversarial, c.group, c.attack, c.attack_scale) for c in scenario.clients])


@pytest.mark.parametrize("name", list(ALL_METHODS))
@pytest.mark.parametrize("array", ["X_train", "X_test"])
def test_nan_written_after_construction_raises_naming_the_client(name, array, healthcare):
    """A NaN written into a client's array after the Client was built stops every method
    at the start of fit, naming the client (it used to give history_['auc'] = NaN)."""
    scen = _copy(healthcare)
    getattr(scen.clients[3], array)[0, 0] = np.nan
    with pytest.raises(ValueError, match=f"client 3: {array} contains 1 NaN"):
        ALL_METHODS[name](n_rounds=2, random_state=0).fit(scen)


def test_labels_changed_after_construction_are_caught(healthcare):
    """A test split made single-class after construction is refused at fit, not dropped."""
    scen = _copy(healthcare)
    scen.clients[5].y_test[:] = 0
    with pytest.raises(ValueError, match="client 5: y_test has a single class"):
        FedAvg(n_rounds=1, random_state=0).fit(scen)


def test_nan_in_a_continual_round_names_client_and_round():
    """New data handed over by a continual scenario are checked when they arrive."""
    scen = make_continual(n_clients=3, n_rounds=4, n_shifted=1, shift_round=2,
                          random_state=0)
    scen.schedule[2][1].X_train[4, 2] = np.inf
    with pytest.raises(ValueError, match=r"client 1 \(data of round 3\): X_train contains"):
        PTopoFL(n_rounds=4, random_state=0).fit(scen)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning",
                            "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("name", list(ALL_METHODS))
def test_diverging_local_model_raises_naming_client_and_round(name, healthcare):
    """A local SGD that blows up is stopped as soon as the client returns its model."""
    with pytest.raises(FloatingPointError,
                       match="the model client 0 returned in round 1 contains .* diverged"):
        ALL_METHODS[name](n_rounds=3, lr=1e300, random_state=0).fit(healthcare)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_diverging_aggregate_raises_after_the_round(healthcare):
    """A finite set of local models whose aggregate overflows is caught after the round."""
    with pytest.raises(FloatingPointError,
                       match="client 0 deploys after round 2 .*aggregate diverged"):
        Scaffold(n_rounds=3, server_lr=1e200, random_state=0).fit(healthcare)


@pytest.mark.parametrize("name", list(ALL_METHODS))
def test_mean_auc_is_over_every_honest_client(name, healthcare):
    """history_['auc'] is the plain mean over the same honest clients in every round."""
    est = ALL_METHODS[name](n_rounds=2, random_state=0).fit(healthcare)
    honest = healthcare.honest
    assert np.all(np.isfinite(est.history_["client_auc"][:, honest]))
    np.testing.assert_array_equal(est.history_["auc"],
                                  est.history_["client_auc"][:, honest].mean(axis=1))


@pytest.mark.parametrize("y_test", [np.zeros(6, int), np.ones(1, int)])
def test_binary_client_refuses_a_test_split_without_an_auc(y_test):
    """One class (or one record) in a binary client's test split is refused at
    construction: its AUC would be NaN and silently drop out of the mean."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="y_test has a single class .* needs both classes"):
        Client(rng.normal(size=(20, 3)), np.tile([0, 1], 10),
               rng.normal(size=(y_test.size, 3)), y_test)


def test_generator_names_the_client_whose_test_split_has_one_class():
    """A test_size too small for a hospital's rare class is refused, naming the client."""
    with pytest.raises(ValueError, match="client 5: y_test has a single class"):
        make_healthcare(test_size=0.05, random_state=1)


def test_every_client_is_adversarial_is_refused():
    """Metrics average over honest clients; a scenario without one is refused."""
    scen = make_healthcare(n_clients=3, n_adversarial=2, random_state=0)
    scen = FederatedScenario("all bad", [
        Client(c.X_train, c.y_train, c.X_test, c.y_test, True) for c in scen.clients])
    with pytest.raises(ValueError, match="every client of the scenario is adversarial"):
        FedAvg(n_rounds=1).fit(scen)


def test_client_stores_its_validated_arrays(healthcare):
    """Lists (and strings of numbers) are stored as validated arrays, so a fit works;
    arrays that already are float features / int labels are kept as the same object."""
    c = healthcare.clients[0]
    listed = Client(c.X_train.astype(str).tolist(), c.y_train.tolist(),
                    c.X_test.tolist(), c.y_test.astype(float).tolist())
    assert listed.X_train.dtype == np.float64 and listed.y_test.dtype == np.int64
    np.testing.assert_array_equal(listed.X_train, c.X_train)
    scen = FederatedScenario("lists", [listed, healthcare.clients[1]])
    assert np.all(np.isfinite(FedAvg(n_rounds=1, random_state=0).fit(scen).history_["auc"]))
    X32 = c.X_train.astype(np.float32)
    kept = Client(X32, c.y_train, c.X_test, c.y_test)
    assert kept.X_train is X32 and kept.y_train is c.y_train


@pytest.mark.parametrize("name", ["FedAvg", "pTopoFL"])
def test_predict_proba_checks_features(name, healthcare):
    """predict_proba names the feature count it expects, and refuses NaN."""
    est = make_method(name, n_rounds=1, random_state=0).fit(healthcare)
    assert est.n_features_in_ == healthcare.n_features
    with pytest.raises(ValueError, match=f"X has 5 features, but this {type(est).__name__} "
                                         "was fitted on 20"):
        est.predict_proba(np.zeros((3, 5)))
    X = np.zeros((1, 20))
    X[0, :2] = np.nan
    with pytest.raises(ValueError, match="X contains 2 NaN"):
        est.predict_proba(X)


def test_ptopofl_refuses_negative_tau_and_bad_flags(benchmark):
    """tau < 0 is refused (trust_weights explains why); flags must be booleans; a drift
    threshold without signature tracking would never fire and is refused."""
    with pytest.raises(ValueError, match="tau must be >= 0"):
        PTopoFL(n_rounds=1, tau=-0.5).fit(benchmark)
    for flag in ("use_trust", "augment", "track_signatures"):
        with pytest.raises(TypeError, match=f"{flag} must be True or False"):
            PTopoFL(n_rounds=1, **{flag: "no"}).fit(benchmark)
    with pytest.raises(ValueError, match="needs track_signatures=True"):
        PTopoFL(n_rounds=1, drift_threshold=0.1, track_signatures=False).fit(benchmark)


def test_metrics_refuse_bad_input():
    """AUC, accuracy and the convergence round name what is wrong."""
    with pytest.raises(ValueError, match="same length"):
        roc_auc([0, 1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="scores contains 1 NaN"):
        roc_auc([0, 1], [np.nan, 0.2])
    with pytest.raises(ValueError, match="binary labels 0/1"):
        roc_auc([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="same length"):
        accuracy([0, 1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="curve contains 1 NaN"):
        convergence_round([0.5, np.nan])
    with pytest.raises(ValueError, match="1-D"):
        convergence_round(np.ones((2, 2)))
    with pytest.raises(ValueError, match="fraction must be <= 1"):
        convergence_round([0.5, 0.6], fraction=2)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"mortality_range": (0.9, 0.1)}, ValueError, r"mortality_range must be \(low, high\)"),
    ({"mortality_range": (0.1, 1.0)}, ValueError, r"mortality_range\[1\] must be <= 0.99"),
    ({"mortality_range": (0.1, 0.2, 0.3)}, TypeError, "mortality_range must be a pair"),
    ({"size_range": (300, 100)}, ValueError, r"size_range must be \(low, high\)"),
    ({"test_size": 0}, ValueError, "test_size must be > 0"),
    ({"test_size": 1.5}, ValueError, "test_size must be < 1"),
    ({"attack_scale": 0}, ValueError, "attack_scale must be > 0"),
])
def test_make_healthcare_names_the_bad_parameter(kwargs, error, match):
    """Range parameters are validated up front (was: numpy's "high - low < 0")."""
    with pytest.raises(error, match=match):
        make_healthcare(**kwargs)


def test_make_benchmark_and_continual_name_the_bad_parameter():
    with pytest.raises(ValueError, match=r"imbalance_range must be \(low, high\)"):
        make_benchmark(imbalance_range=(0.9, 0.1))
    with pytest.raises(ValueError, match=r"imbalance_range\[1\] must be <= 1"):
        make_benchmark(imbalance_range=(0.1, 2.0))
    with pytest.raises(ValueError, match=r"size_range must be \(low, high\)"):
        make_continual(size_range=(300, 100))


def test_make_healthcare_keeps_two_records_of_each_class():
    """A hospital with a single record of a class is topped up to two, as one with none
    always was (this draw used to fail inside scikit-learn's stratified split)."""
    scen = make_healthcare(n_adversarial=7, attack="noisy_label_flip", random_state=156)
    for c in scen.clients:
        assert np.bincount(np.r_[c.y_train, c.y_test]).min() >= 2


def test_scenario_and_client_reject_wrong_types(healthcare):
    with pytest.raises(TypeError, match="client 1 must be a Client, got int"):
        FederatedScenario("x", [healthcare.clients[0], 3])
    c = healthcare.clients[0]
    with pytest.raises(TypeError, match="adversarial must be True or False"):
        Client(c.X_train, c.y_train, c.X_test, c.y_test, adversarial="no")


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: client_streams(-1, 0), ValueError, r"random_state must be >= 0, got -1"),
    (lambda: client_streams(0, -2), ValueError, r"k must be >= 0, got -2"),
    (lambda: client_streams(0.5, 0), TypeError, r"random_state must be an int, got 0.5"),
    (lambda: load_noise_seed(0, 1, round_number=-1), ValueError,
     r"round_number must be >= 0, got -1"),
    (lambda: load_noise_seed(0, "1"), TypeError, r"k must be an int, got '1'"),
])
def test_client_seed_streams_name_a_bad_argument(call, error, match):
    """The per-client streams refuse a negative or non-int seed, index or round by name
    (numpy's SeedSequence would say "expected non-negative integer")."""
    with pytest.raises(error, match=match):
        call()


def test_client_seed_streams_are_reproducible_and_distinct():
    """Known properties: one (seed, client) gives the same streams every time; another
    client, or another round of load noise, gives other numbers; a seed of None is
    fresh entropy."""
    assert load_noise_seed(3, 1) == load_noise_seed(3, 1) != load_noise_seed(3, 2)
    assert load_noise_seed(3, 1, 1) != load_noise_seed(3, 1, 0)
    assert client_streams(3, 1)[1] == client_streams(3, 1)[1] != client_streams(4, 1)[1]
    assert isinstance(client_streams(None, 0)[0], np.random.Generator)
