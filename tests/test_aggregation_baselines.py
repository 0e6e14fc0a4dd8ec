"""FedTopo Table 1's aggregation baselines: FedAvgM, FedNova, FedDyn, FedDC.

Each test checks a property that defines its method, on tiny 8x8 synthetic images
(``digits_cnn``) and one or two rounds.
"""

from __future__ import annotations

import numpy as np
import pytest

from topofl_lib import storage
from topofl_lib.claim_keys import METHOD_KEYS
from topofl_lib.deep import (
    ImageDataset,
    TorchModel,
    deep_variants,
    make_image_scenario,
    sweep_variants,
)
from topofl_lib.federated import make_method
from topofl_lib.federated.fednova import momentum_normaliser
from topofl_lib.runner.tasks import slim

BASELINES = (
    "FedAvgM",
    "FedNova",
    "FedDyn",
    "FedDC",
)


def _images(partition="Q", param=0.5, n_train=120):
    rng = np.random.default_rng(0)
    data = ImageDataset("tiny", rng.normal(size=(n_train, 64)).astype(np.float32),
                        rng.integers(0, 10, n_train), rng.normal(size=(40, 64)).astype(
                            np.float32), rng.integers(0, 10, 40), (1, 8, 8), 10)
    return make_image_scenario(data, partition, n_clients=3, param=param, min_size=10,
                               random_state=0)


@pytest.fixture(scope="module")
def skewed():
    """Three clients of unequal sizes (quantity skew): unequal local step counts."""
    return _images()


@pytest.fixture(scope="module")
def equal():
    """Three clients of 40 images each: equal local step counts."""
    return _images("iid", None)


def _start(est):
    """The initial model the fit ``est`` started from."""
    return est._w_init.astype(np.float64)


def _first_round_is_fedprox(name, scenario):
    """Both correction terms are zero at initialisation: round 1 is FedProx(mu=alpha)."""
    est = _fit(name, scenario, n_rounds=1, alpha=0.3)
    prox = _fit("FedProx", scenario, n_rounds=1, mu=0.3)
    np.testing.assert_allclose(est.local_models_, prox.local_models_, rtol=1e-5, atol=1e-6)


def _fit(name, scenario, n_rounds=2, momentum=0.5, **kw):
    params = {"n_rounds": n_rounds, "lr": 0.05, "local_epochs": 1, "batch_size": 16,
              "model": TorchModel("digits_cnn", momentum=momentum), "random_state": 0}
    return make_method(name, **{**params, **kw}).fit(scenario)


# -- FedAvgM ----------------------------------------------------------------------
def test_fedavgm_without_momentum_is_fedavg_bit_for_bit(skewed):
    avg = _fit("FedAvg", skewed)
    m0 = _fit("FedAvgM", skewed, server_momentum=0.0)
    np.testing.assert_array_equal(m0.coef_, avg.coef_)
    np.testing.assert_array_equal(m0.history_["accuracy"], avg.history_["accuracy"])


def test_fedavgm_momentum_accumulates_the_mean_update(skewed):
    """Two rounds: v1 = w0 - mean1, w1 = mean1; v2 = beta v1 + (w1 - mean2),
    w2 = w1 - v2, with mean_r the data-volume weighted mean of round r's models."""
    beta = 0.9
    one = _fit("FedAvgM", skewed, n_rounds=1, server_momentum=beta)
    two = _fit("FedAvgM", skewed, n_rounds=2, server_momentum=beta)
    n = np.array([c.n_train for c in skewed.clients], dtype=float)
    w1 = one.coef_
    np.testing.assert_allclose(w1, n @ one.local_models_ / n.sum())
    mean2 = n @ two.local_models_ / n.sum()
    v2 = beta * one.velocity_ + (w1 - mean2)
    np.testing.assert_allclose(two.velocity_, v2, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(two.coef_, w1 - v2, rtol=1e-6, atol=1e-7)
    assert not np.allclose(two.coef_, mean2)  # momentum moved it beyond the mean


# -- FedNova ----------------------------------------------------------------------
def test_fednova_with_equal_local_steps_is_fedavg(equal):
    assert len({c.n_train for c in equal.clients}) == 1
    avg = _fit("FedAvg", equal)
    nova = _fit("FedNova", equal)
    assert len(set(nova.local_steps_)) == 1
    np.testing.assert_allclose(nova.coef_, avg.coef_, rtol=1e-5, atol=1e-6)


def test_fednova_normalises_unequal_local_steps(skewed):
    nova = _fit("FedNova", skewed, n_rounds=1)
    tau = nova.local_steps_
    assert len(set(tau)) > 1
    p = np.array([c.n_train for c in skewed.clients], dtype=float)
    p /= p.sum()
    a = momentum_normaliser(tau, 0.5)
    np.testing.assert_array_equal(nova.normalisers_, a)
    w0 = _start(nova)
    d = (p / a) @ (nova.local_models_ - w0)
    np.testing.assert_allclose(nova.coef_, w0 + (p @ a) * d, rtol=1e-9, atol=1e-12)
    avg = _fit("FedAvg", skewed, n_rounds=1)
    assert not np.allclose(nova.coef_, avg.coef_, rtol=1e-5, atol=1e-6)


def test_momentum_normaliser():
    """||a||_1 of momentum SGD: the sum over steps of (1 - rho^j) / (1 - rho)."""
    rho, tau = 0.9, np.array([1, 4, 17])
    direct = [sum((1 - rho ** j) / (1 - rho) for j in range(1, t + 1)) for t in tau]
    np.testing.assert_allclose(momentum_normaliser(tau, rho), direct)
    np.testing.assert_array_equal(momentum_normaliser(tau, 0.0), tau)


# -- FedDyn -----------------------------------------------------------------------
def test_feddyn_first_round_is_fedprox_with_mu_alpha(skewed):
    _first_round_is_fedprox("FedDyn", skewed)


def test_feddyn_correction_terms_after_the_first_round(skewed):
    alpha = 0.3
    est = _fit("FedDyn", skewed, n_rounds=1, alpha=alpha)
    w0 = _start(est)
    g = -alpha * (est.local_models_ - w0)
    np.testing.assert_allclose(est.client_gradients_, g, rtol=1e-12)
    np.testing.assert_allclose(est.server_state_, g.mean(axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.coef_, est.local_models_.mean(axis=0)
                               - est.server_state_ / alpha, rtol=1e-12, atol=1e-12)
    two = _fit("FedDyn", skewed, n_rounds=2, alpha=alpha)
    np.testing.assert_allclose(two.server_state_, two.client_gradients_.mean(axis=0),
                               rtol=1e-9, atol=1e-12)  # h stays the mean of the g_k


# -- FedDC ------------------------------------------------------------------------
def test_feddc_first_round_is_fedprox_with_mu_alpha(skewed):
    _first_round_is_fedprox("FedDC", skewed)


def test_feddc_drift_variable(skewed):
    """h_i accumulates theta_i - w over the rounds; the server averages theta_i + h_i."""
    one = _fit("FedDC", skewed, n_rounds=1)
    two = _fit("FedDC", skewed, n_rounds=2)
    w0 = _start(one)
    np.testing.assert_allclose(one.drifts_, one.local_models_ - w0, rtol=1e-12)
    np.testing.assert_allclose(one.coef_, (one.local_models_ + one.drifts_).mean(axis=0))
    np.testing.assert_allclose(two.drifts_, one.drifts_ + two.local_models_ - one.coef_,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(two.local_updates_, two.local_models_ - one.coef_)
    np.testing.assert_allclose(two.coef_, (two.local_models_ + two.drifts_).mean(axis=0))


# -- every method -----------------------------------------------------------------
@pytest.mark.parametrize("name", BASELINES)
def test_deterministic_and_storable(skewed, name, tmp_path):
    a = _fit(name, skewed)
    b = _fit(name, skewed)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.history_["accuracy"], b.history_["accuracy"])
    back = storage.load(storage.dump(tmp_path / "m.npz", slim(a)))
    np.testing.assert_array_equal(back.coef_, a.coef_)
    assert type(back) is type(a)


@pytest.mark.parametrize("name,param,bad", [
    ("FedAvgM", "server_momentum", 1.0),
    ("FedAvgM", "server_momentum", -0.1),
    ("FedAvgM", "server_lr", 0.0),
    ("FedDyn", "alpha", 0.0),
    ("FedDC", "alpha", -1.0),
])
def test_bad_parameters_are_named(skewed, name, param, bad):
    with pytest.raises(ValueError, match=param):
        make_method(name, **{param: bad}).fit(skewed)


@pytest.mark.parametrize("name", BASELINES)
def test_deep_variants_and_claim_keys(name):
    method, params = deep_variants([name])[name]
    assert method == name
    assert params["lr"] == 0.01 and params["batch_size"] == 32
    assert params["local_epochs"] == 5 and params["model"].momentum == 0.9
    assert METHOD_KEYS[name] == name.lower()


def test_sweep_variants_change_one_parameter_of_the_label():
    base_method, base = deep_variants(["FedAvgM"], local_epochs=2)["FedAvgM"]
    sweep = sweep_variants("FedAvgM", "server_momentum", [0.0, 0.5], local_epochs=2)
    assert list(sweep) == ["FedAvgM[server_momentum=0.0]", "FedAvgM[server_momentum=0.5]"]
    for value, (method, params) in zip([0.0, 0.5], sweep.values(), strict=True):
        assert method == base_method
        assert params["server_momentum"] == value
        assert {k: v for k, v in params.items() if k not in ("server_momentum", "model")} == {
            k: v for k, v in base.items() if k not in ("server_momentum", "model")}
        assert repr(params["model"]) == repr(base["model"])


@pytest.mark.parametrize(("param", "values", "message"), [
    ("momentum", [0.5], "param='momentum' is not a parameter of FedAvgM"),
    ("server_momentum", [], "values must be non-empty and distinct, got \\[\\]"),
    ("server_momentum", [0.5, 0.5], "values must be non-empty and distinct"),
])
def test_sweep_variants_refuse_unknown_parameters_and_repeated_values(param, values, message):
    with pytest.raises(ValueError, match=message):
        sweep_variants("FedAvgM", param, values)


def test_sweep_variants_refuse_a_string_of_values():
    # a string is a sequence too: "ab" would have swept 'a' and 'b'
    with pytest.raises(TypeError, match="values must be a sequence of server_momentum"):
        sweep_variants("FedAvgM", "server_momentum", "ab")


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"lr": float("nan")}, ValueError, "lr must be finite, got nan"),
    ({"lr": "0.01"}, TypeError, "lr must be a real number"),
    ({"local_epochs": 0}, ValueError, "local_epochs must be >= 1, got 0"),
    ({"batch_size": 2.5}, TypeError, "batch_size must be an int"),
    ({"momentum": 2.0}, ValueError, "momentum must be <= 0.999"),
    ({"n_classes": 1}, ValueError, "n_classes must be >= 2, got 1"),
    ({"architecture": "vgg"}, ValueError, "unknown architecture 'vgg'"),
    ({"fedtopo": [("tal_every", 1)]}, TypeError, "fedtopo must be None or a dict"),
    ({"schedule": "smooth"}, TypeError, "schedule must be None or a dict"),
])
def test_deep_variants_refuse_a_bad_protocol_by_name(kwargs, error, message):
    with pytest.raises(error, match=message):
        deep_variants(["FedAvgM"], **kwargs)


def test_deep_variants_refuse_repeated_labels_and_take_one_label_as_a_string():
    with pytest.raises(ValueError, match="labels must be non-empty and distinct"):
        deep_variants(["FedAvgM", "FedNova", "FedAvgM"])
    assert list(deep_variants("FedAvgM")) == ["FedAvgM"]
