"""N-skew's readings: noise drawn once (the default), at every load, and on the test images.

The default must stay bit-identical (the stored runs keep their keys); the two other
readings must put the noise where they say, with the sd they say, reproducibly.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from topofl_lib import make_healthcare
from topofl_lib.core import Client, FederatedScenario
from topofl_lib.deep import TorchModel, deep_variants, make_image_scenario, noise_levels
from topofl_lib.deep.learner import TorchLearner
from topofl_lib.federated import FedAvg, make_method
from topofl_lib.federated.load_noise import applies_load_noise
from topofl_lib.run_cache import fingerprint
from topofl_lib.runner import run_comparison

SIGMA = 1.0  # digits' N-skew sd ramp: 0, 0.25, 0.5, 0.75, 1.0


def _digits(**kw):
    return make_image_scenario("digits", "N", 5, param=SIGMA, n_train=300, n_test=100,
                               random_state=0, **kw)


@pytest.fixture(scope="module")
def fixed():
    return _digits()


@pytest.fixture(scope="module")
def per_load():
    return _digits(noise="per_load")


@pytest.fixture(scope="module")
def noisy_test():
    return _digits(test_noise=True)


def _fit(name, scenario, random_state=0, **kw):
    label = "FedTopo" if name == "FedTopo" else name
    method, params = deep_variants([label], architecture="digits_cnn", lr=0.05,
                                   local_epochs=1,
                                   fedtopo={"tal_samples": 16, "tal_batch": 8,
                                            "tal_every": 2})[label]
    return make_method(method, **{**params, "n_rounds": 1, "random_state": random_state,
                                  **kw}).fit(scenario)


# -- the default is what it was --------------------------------------------------------------
#: Fingerprints (the run store's scenario key) computed with the code before the noise
#: options existed: the default scenarios, and a tabular one (Client grew a field).
PINNED = {
    "digits-N1.0": ("6389cc3c433846ef3fd82f9e24ef4f10378d3ead846a30e7d81b8d25dc7d7352",
                    {"dataset": "digits", "partition": "N", "n_clients": 5, "param": 1.0}),
    "digits-L0.5+N1.0": ("c3a017a07302a7ffc38499e59e6771e2a846bcae8f273e72ff5fd054c9d2fc4c",
                         {"dataset": "digits", "partition": "L+N", "n_clients": 5,
                          "param": (0.5, 1.0)}),
    "digits-L0.5": ("09eaf93fecfa6778e22ce09b21b3a78e822de01c916307401fa324ff367b5b98",
                    {"dataset": "digits", "partition": "L", "n_clients": 3, "param": 0.5,
                     "test": "local", "random_state": 1}),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_default_scenarios_keep_their_keys(name):
    key, kw = PINNED[name]
    sc = make_image_scenario(**{"random_state": 0, **kw})
    assert sc.name == name
    assert "noise" not in sc.meta and "test_noise" not in sc.meta
    assert fingerprint(sc.name, sc) == key


def test_tabular_clients_keep_their_keys():
    sc = make_healthcare(n_clients=4, n_adversarial=1, random_state=0)
    assert fingerprint(sc.name, sc) == (
        "76d6943c4313b1c6b24d7d5fecda3fd0566179067d3af7806a098d3de1809aa5")


def test_load_noise_sd_is_keyed_only_when_set(fixed):
    c = fixed.clients[1]
    same = dataclasses.replace(c, load_noise_sd=0.0)
    noisy = dataclasses.replace(c, load_noise_sd=0.25)
    assert fingerprint(same) == fingerprint(c)
    assert fingerprint(noisy) != fingerprint(c)
    assert fingerprint(noisy) != fingerprint(dataclasses.replace(c, load_noise_sd=0.5))


@pytest.mark.parametrize("bad, error", [(-0.1, ValueError), (float("nan"), ValueError),
                                        (float("inf"), ValueError), ("0.1", TypeError)])
def test_client_refuses_bad_load_noise_sd(fixed, bad, error):
    c = fixed.clients[0]
    with pytest.raises(error, match="load_noise_sd"):
        Client(c.X_train, c.y_train, c.X_test, c.y_test, n_classes=10, load_noise_sd=bad)


# -- scenario options -------------------------------------------------------------------------
def test_names_and_meta(fixed, per_load, noisy_test):
    both = _digits(noise="per_load", test_noise=True)
    assert [s.name for s in (fixed, per_load, noisy_test, both)] == [
        "digits-N1.0", "digits-N1.0-perload", "digits-N1.0-noisytest",
        "digits-N1.0-perload-noisytest"]
    assert per_load.meta["noise"] == "per_load" and "test_noise" not in per_load.meta
    assert noisy_test.meta["test_noise"] is True and "noise" not in noisy_test.meta
    assert both.meta["noise"] == "per_load" and both.meta["test_noise"] is True
    combined = make_image_scenario("digits", "L+N", 5, (0.5, 1.0), random_state=0,
                                   noise="per_load")
    assert combined.name == "digits-L0.5+N1.0-perload"
    np.testing.assert_array_equal([c.load_noise_sd for c in combined.clients],
                                  noise_levels(5, 1.0))


@pytest.mark.parametrize("kw", [{"noise": "per_load"}, {"test_noise": True}])
@pytest.mark.parametrize("partition", ["L", "iid", "Q+K"])
def test_options_need_n_skew(partition, kw):
    with pytest.raises(ValueError, match="need N-skew"):
        make_image_scenario("digits", partition, 3, random_state=0, **kw)


def test_option_values_are_checked():
    with pytest.raises(ValueError, match="noise"):
        make_image_scenario("digits", "N", 5, noise="per_epoch")
    with pytest.raises(TypeError, match="test_noise"):
        make_image_scenario("digits", "N", 5, test_noise="yes")


def test_per_load_keeps_train_images_clean(fixed, per_load):
    clean = _digits_with_sigma(0.0)
    for c, f, z, s in zip(per_load.clients, fixed.clients, clean.clients,
                          noise_levels(5, SIGMA), strict=True):
        assert c.load_noise_sd == s
        np.testing.assert_array_equal(c.X_train, z.X_train)  # clean images
        np.testing.assert_array_equal(c.y_train, f.y_train)  # the default's partition
        np.testing.assert_array_equal(c.X_test, f.X_test)
    assert per_load.clients[0].load_noise_sd == 0.0


def _digits_with_sigma(sigma):
    return make_image_scenario("digits", "N", 5, param=sigma, n_train=300, n_test=100,
                               random_state=0)


def test_noisy_test_images(fixed, noisy_test):
    for j, (c, f, s) in enumerate(zip(noisy_test.clients, fixed.clients,
                                      noise_levels(5, SIGMA), strict=True)):
        np.testing.assert_array_equal(c.X_train, f.X_train)  # training data untouched
        np.testing.assert_array_equal(c.y_train, f.y_train)
        np.testing.assert_array_equal(c.y_test, f.y_test)
        resid = (c.X_test - f.X_test).astype(np.float64)
        if j == 0:
            assert c.X_test is f.X_test or np.array_equal(c.X_test, f.X_test)
        else:  # 100 x 64 draws: the sd within 5%
            assert resid.std() == pytest.approx(s, rel=0.05)
            assert abs(resid.mean()) < 0.05
    # the clients' noise draws are independent of each other
    r1 = noisy_test.clients[1].X_test - fixed.clients[1].X_test
    r2 = noisy_test.clients[2].X_test - fixed.clients[2].X_test
    assert abs(np.corrcoef(r1.ravel(), r2.ravel())[0, 1]) < 0.05


# -- the learner --------------------------------------------------------------------------------
def _learner():
    return TorchModel("digits_cnn").make_learner(64, np.random.default_rng(0))


def _zeros(n=4000):
    return np.zeros((n, 64), np.float32), np.zeros(n, np.int64)


def test_per_load_noise_is_fresh_at_every_load():
    learner = _learner()
    data = learner.client_data(*_zeros(), noise_sd=0.7, noise_seed=3)
    idx = np.arange(4000)
    a, _ = learner.batch(data, idx)
    b, _ = learner.batch(data, idx)
    assert not torch.equal(a, b)
    for x in (a, b):  # 256,000 draws: the sd within 1%
        assert float(x.std()) == pytest.approx(0.7, rel=0.01)
        assert abs(float(x.mean())) < 0.01
    assert float(data[0].abs().max()) == 0.0  # the stored images stay clean


def test_per_load_noise_is_seeded():
    idx = np.arange(50)

    def draws(seed):
        learner = _learner()
        data = learner.client_data(*_zeros(50), noise_sd=0.5, noise_seed=seed)
        return [learner.batch(data, idx)[0] for _ in range(2)]

    first, again, other = draws(1), draws(1), draws(2)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[0], other[0])


def test_no_noise_gives_the_clean_batch():
    learner = _learner()
    X = np.random.default_rng(0).normal(size=(40, 64)).astype(np.float32)
    data = learner.client_data(X, np.zeros(40, np.int64))
    assert data.noise is None
    x, _ = learner.batch(data, np.arange(10, 20))
    np.testing.assert_array_equal(x.reshape(10, 64).numpy(), X[10:20])
    with pytest.raises(ValueError, match="noise_seed"):
        learner.client_data(X, np.zeros(40, np.int64), noise_sd=0.5)


def test_gradient_sees_the_noise():
    learner = _learner()
    X, y = np.random.default_rng(0).normal(size=(64, 64)).astype(np.float32), np.zeros(64, int)
    w = learner.init_params()
    idx = np.arange(32)
    clean = learner.client_data(X, y)
    np.testing.assert_array_equal(learner.gradient(w, clean, idx), learner.gradient(w, clean, idx))
    noisy = learner.client_data(X, y, noise_sd=0.5, noise_seed=0)
    assert not np.array_equal(learner.gradient(w, noisy, idx), learner.gradient(w, noisy, idx))


# -- the engine ---------------------------------------------------------------------------------
def test_engine_hands_each_client_its_sd(per_load, monkeypatch):
    seen, built = [], []
    original = TorchLearner.client_data

    def spy(self, X, y, noise_sd=0.0, noise_seed=None):
        seen.append((noise_sd, noise_seed))
        data = original(self, X, y, noise_sd, noise_seed)
        built.append((self, data))
        return data

    monkeypatch.setattr(TorchLearner, "client_data", spy)
    _fit("FedAvg", per_load)
    assert [s for s, _ in seen] == list(noise_levels(5, SIGMA))
    seeds = [s for _, s in seen[1:]]
    assert seen[0][1] is None and len(set(seeds)) == 4  # one stream per noisy client
    for (learner, data), s in zip(built, noise_levels(5, SIGMA), strict=True):
        idx = np.arange(data[0].shape[0])  # ~60 images x 64 pixels: the sd within 5%
        resid = learner.batch(data, idx)[0] - data[0]
        assert float(resid.std()) == pytest.approx(s, rel=0.05, abs=0.0)


def test_per_load_runs_are_reproducible_and_noisy(per_load):
    a, b = _fit("FedAvg", per_load), _fit("FedAvg", per_load)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.history_["client_accuracy"],
                                  b.history_["client_accuracy"])
    assert not np.array_equal(a.coef_, _fit("FedAvg", per_load, random_state=1).coef_)
    clean = _fit("FedAvg", _digits_with_sigma(0.0))  # the same images without the noise
    assert not np.array_equal(a.coef_, clean.coef_)


@pytest.mark.parametrize("option", ["per_load", "noisy_test"])
@pytest.mark.parametrize("name", ["FedAvg", "FedTopo"])
def test_fedavg_and_fedtopo_report_the_mean_of_their_clients(name, option, per_load,
                                                             noisy_test):
    scenario = per_load if option == "per_load" else noisy_test
    est = _fit(name, scenario)
    per_client = est.history_["client_accuracy"][-1]
    assert est.history_["accuracy"][-1] == pytest.approx(per_client.mean())
    for k, c in enumerate(scenario.clients):  # each client scored on its own test set
        acc = est.learner_.evaluate(est.coef_, c.X_test, c.y_test)[1]
        assert per_client[k] == acc
    if option == "noisy_test":  # the noise reaches the scores: the copies differ
        assert np.unique(per_client).size > 1


@pytest.mark.parametrize("name", ["MOON", "FedFM", "FedPAC", "FedCCFA", "pFedMe", "pTopoFL",
                                  "FedDF", "FedSA", "FedGen", "FedFTG"])
def test_methods_that_would_not_apply_it_refuse(per_load, name):
    method, params = deep_variants([name], architecture="digits_cnn")[name]
    est = make_method(method, **{**params, "n_rounds": 1, "random_state": 0})
    with pytest.raises(ValueError, match="cannot apply per-load noise"):
        est.fit(per_load)


def test_the_flag_is_not_inherited(per_load):
    class Unchecked(FedAvg):
        name = "Unchecked"

    assert applies_load_noise(FedAvg) and not applies_load_noise(Unchecked)
    with pytest.raises(ValueError, match="Unchecked.*cannot apply per-load noise"):
        Unchecked(n_rounds=1, model=TorchModel("digits_cnn"), random_state=0).fit(per_load)


def test_tabular_learner_refuses_per_load_noise():
    sc = make_healthcare(n_clients=3, random_state=0)
    noisy = [dataclasses.replace(c, load_noise_sd=0.3 * (k > 0))
             for k, c in enumerate(sc.clients)]
    with pytest.raises(ValueError, match="logistic learner.*load_noise_sd=0.3"):
        FedAvg(n_rounds=1, random_state=0).fit(FederatedScenario(sc.name, noisy, sc.meta))


def test_standardising_is_refused_with_per_load_noise(per_load):
    with pytest.raises(ValueError, match="standardise"):
        FedAvg(n_rounds=1, model=TorchModel("digits_cnn"), standardise=True,
               random_state=0).fit(per_load)


# -- the runner and its store ---------------------------------------------------------------------
def test_run_comparison_stores_and_reuses_per_load_runs(tmp_path):
    kw = {"seeds": [0], "n_rounds": 1, "progress": False, "cache_dir": tmp_path,
          "variants": deep_variants(["FedAvg"], architecture="digits_cnn", local_epochs=1),
          "scenario_params": {"dataset": "digits", "partition": "N", "n_clients": 5,
                              "param": SIGMA, "n_train": 300, "n_test": 100}}
    noisy = {**kw, "scenario_params": {**kw["scenario_params"], "noise": "per_load"}}
    first = run_comparison("image", **noisy)
    assert first.final["scenario"].tolist() == ["digits-N1.0-perload"]
    stored = sorted(tmp_path.glob("*.npz"))
    assert len(stored) == 1
    again = run_comparison("image", **noisy)
    assert again.schedule is None  # every run read back from the store
    assert again.final["accuracy"].tolist() == first.final["accuracy"].tolist()
    run_comparison("image", **kw)  # the default reading: a run of its own
    assert len(sorted(tmp_path.glob("*.npz"))) == 2
