"""Tests of the federated algorithms, metrics, scenarios and comparison runner."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from topofl_lib.data import Client, FederatedScenario, make_benchmark, make_healthcare
from topofl_lib.experiments import run_comparison
from topofl_lib.federated import (
    METHODS,
    FedAvg,
    FedProx,
    PTopoFL,
    Scaffold,
    convergence_round,
    make_method,
    roc_auc,
)


@pytest.fixture(scope="module")
def benchmark():
    """Scenario B with seed 0 (10 clients)."""
    return make_benchmark(random_state=0)


@pytest.fixture(scope="module")
def healthcare():
    """Scenario A with seed 0 (8 clients, 2 adversarial)."""
    return make_healthcare(random_state=0)


def _client(rng, n=40, d=3):
    """A valid random client with both classes."""
    y = np.r_[np.zeros(n // 2, int), np.ones(n - n // 2, int)]
    return Client(rng.normal(size=(n, d)), y, rng.normal(size=(10, d)), y[:10])


# -- algorithms ----------------------------------------------------------------------


def test_scaffold_server_control_is_mean_of_client_controls(benchmark):
    """SCAFFOLD's server control variate equals the mean of the client variates."""
    est = Scaffold(n_rounds=3, random_state=0).fit(benchmark)
    assert est.client_controls_.shape == (10, benchmark.n_features + 1)
    assert np.any(est.control_ != 0)
    np.testing.assert_allclose(est.control_, est.client_controls_.mean(axis=0),
                               rtol=1e-10, atol=1e-12)


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
