"""Deep engine: datasets, FedTopo's partitions, models, and the algorithms over torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topofl_lib.data import Client, FederatedScenario
from topofl_lib.deep import (
    FASHION_MNIST_DIR,
    TorchModel,
    label_distribution,
    load_image_dataset,
    make_image_scenario,
    make_model,
    noise_levels,
    partition_indices,
)
from topofl_lib.deep.partitions import MAX_CONCENTRATION, MAX_NOISE_SD
from topofl_lib.federated import make_method

Y = np.repeat(np.arange(10), 60)  # 600 labels, 10 balanced classes


# -- partitions -------------------------------------------------------------------------
@pytest.mark.parametrize("kind,param", [("iid", None), ("N", 0.5), ("L", 0.1), ("L", 1.0),
                                        ("K", 2), ("K", 5), ("Q", 0.5)])
def test_partition_assigns_every_sample_exactly_once(kind, param):
    parts = partition_indices(Y, kind, n_clients=5, param=param, random_state=3)
    assert len(parts) == 5
    allidx = np.concatenate(parts)
    np.testing.assert_array_equal(np.sort(allidx), np.arange(Y.size))
    assert all(p.size >= 10 for p in parts)


def test_partition_is_deterministic_given_seed():
    a = partition_indices(Y, "L", 5, 0.3, random_state=7)
    b = partition_indices(Y, "L", 5, 0.3, random_state=7)
    c = partition_indices(Y, "L", 5, 0.3, random_state=8)
    assert all(np.array_equal(x, z) for x, z in zip(a, b, strict=True))
    assert not all(np.array_equal(x, z) for x, z in zip(a, c, strict=True))


def _label_skew(parts):
    dist = label_distribution(Y, parts, 10)
    return np.abs(dist - 0.1).sum(axis=1).mean() / 2  # mean total variation to global


def test_label_skew_falls_as_alpha_grows():
    skew = {a: np.mean([_label_skew(partition_indices(Y, "L", 5, a, random_state=s))
                        for s in range(10)]) for a in (0.05, 0.5, 50.0)}
    assert skew[0.05] > skew[0.5] > skew[50.0]
    assert skew[50.0] < 0.15


def test_quantity_skew_falls_as_alpha_grows():
    def cv(a):
        return np.mean([np.std(s := [p.size for p in partition_indices(
            Y, "Q", 5, a, min_size=1, random_state=r)]) / np.mean(s) for r in range(10)])
    assert cv(0.3) > cv(3.0) > cv(100.0)


@pytest.mark.parametrize("k", [2, 5, 10])
def test_fixed_k_gives_exactly_k_labels_and_covers_all(k):
    parts = partition_indices(Y, "K", 5, k, random_state=0)
    held = [set(np.unique(Y[p])) for p in parts]
    assert all(len(h) == k for h in held)
    assert set().union(*held) == set(range(10))


def test_fixed_k_that_cannot_cover_raises():
    with pytest.raises(ValueError, match="cannot cover"):
        partition_indices(Y, "K", 3, 2)


def test_noise_levels_ramp():
    np.testing.assert_allclose(noise_levels(5, 0.5), [0, 0.125, 0.25, 0.375, 0.5])
    sc = make_image_scenario("digits", "N", 5, param=1.0, random_state=0)
    resid = [c.X_train.std() for c in sc.clients]
    assert resid[-1] > resid[0] + 0.3


def test_partition_errors():
    with pytest.raises(ValueError, match="unknown kind"):
        partition_indices(Y, "Z")
    with pytest.raises(ValueError, match="min_size"):
        partition_indices(Y, "L", 5, 0.1, min_size=200)
    with pytest.raises(ValueError, match="param must be > 0"):
        partition_indices(Y, "Q", 5, 0.0)


@pytest.mark.parametrize(("kind", "param", "match"), [
    ("L", 1e308, r"param must be <= 1e\+100, got 1e\+308"),
    ("Q", 1e101, r"param must be <= 1e\+100, got 1e\+101"),
    ("Q+K", (1e200, 2), r"param \(the Q-skew's alpha\) must be <= 1e\+100"),
    ("N", 1e308, r"param must be <= 1e\+30, got 1e\+308"),
])
def test_partition_parameters_too_large_to_compute_are_refused(kind, param, match):
    """Regression: a Dirichlet concentration near 1e308 made numpy's draw all zeros, which
    surfaced as "could not give each client min_size samples ... raise alpha", and an
    N-skew sd of 1e308 as NaN in an internal array (X_train). Both are refused by name;
    at the bounds the partitions are IID (equal proportions) and the noise finite."""
    with pytest.raises(ValueError, match=match):
        partition_indices(Y, kind, 5, param, random_state=0)
    with pytest.raises(ValueError, match=r"sigma_max must be <= 1e\+30"):
        noise_levels(5, 1e31)
    sizes = [p.size for p in partition_indices(Y, "Q", 5, MAX_CONCENTRATION, random_state=0)]
    assert sizes == [120] * 5
    sc = make_image_scenario("digits", "N", 5, param=MAX_NOISE_SD, random_state=0)
    assert all(np.isfinite(c.X_train).all() for c in sc.clients)


# -- datasets ---------------------------------------------------------------------------
def test_digits_dataset_is_standardised_and_split():
    d = load_image_dataset("digits")
    assert d.X_train.shape == (1437, 64) and d.X_test.shape == (360, 64)
    assert d.image_shape == (1, 8, 8)
    assert abs(d.X_train.mean()) < 1e-4 and abs(d.X_train.std() - 1) < 1e-3
    sub = load_image_dataset("digits", n_train=200, n_test=50, random_state=1)
    assert sub.X_train.shape[0] == 200 and np.unique(sub.y_train).size == 10


def test_pixel_std_converts_pixel_units_to_standardised_units():
    """pixel_std is the [0, 1]-scale spread standardisation divided by: black to white
    (a pixel difference of 1, both present in digits) spans 1 / pixel_std units."""
    d = load_image_dataset("digits")
    flat = np.concatenate([d.X_train.ravel(), d.X_test.ravel()])
    assert 0 < d.pixel_std < 1
    assert np.isclose(flat.max() - flat.min(), 1.0 / d.pixel_std, rtol=1e-5)


def test_missing_fashion_mnist_names_the_debian_package(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOFL_FASHION_MNIST_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        load_image_dataset("fashion_mnist")


@pytest.mark.skipif(not (FASHION_MNIST_DIR / "t10k-images-idx3-ubyte.gz").exists(),
                    reason="Debian package dataset-fashion-mnist is not installed")
def test_fashion_mnist_loads():
    d = load_image_dataset("fashion_mnist", n_train=1000, n_test=500, random_state=0)
    assert d.X_train.shape == (1000, 784) and d.image_shape == (1, 28, 28)
    assert np.bincount(d.y_train).min() == 100


def test_mnist5k_loads():
    d = load_image_dataset("mnist5k")
    assert d.X_train.shape == (4000, 784) and d.X_test.shape == (1000, 784)


def test_unknown_dataset():
    with pytest.raises(ValueError, match="unknown name 'cifar11'"):
        load_image_dataset("cifar11")


# -- models -----------------------------------------------------------------------------
def test_model_shapes():
    net = make_model("fmnist_cnn")
    x = torch.zeros(2, 1, 28, 28)
    assert net(x).shape == (2, 10)
    assert net.block_output(x, "conv1").shape == (2, 6, 24, 24)
    assert net.block_output(x, "conv2").shape == (2, 16, 8, 8)
    assert net.penultimate(x).shape == (2, 84)
    assert sum(p.numel() for p in net.parameters()) == 44426
    small = make_model("digits_cnn")
    assert small(torch.zeros(3, 1, 8, 8)).shape == (3, 10)


def test_resnet18_cifar_shapes():
    net = make_model("resnet18_cifar", in_channels=3, n_classes=100).eval()
    x = torch.zeros(2, 3, 32, 32)
    with torch.no_grad():
        assert net(x).shape == (2, 100)
        sizes = {b: tuple(net.block_output(x, b).shape[1:]) for b in net.block_names}
    assert sizes == {"conv1": (64, 32, 32), "layer1": (64, 32, 32), "layer2": (128, 16, 16),
                     "layer3": (256, 8, 8), "layer4": (512, 4, 4)}
    n = sum(p.numel() for p in net.parameters())
    assert 11.1e6 < n < 11.3e6


def test_unknown_model_and_block():
    with pytest.raises(ValueError, match="unknown architecture"):
        make_model("vgg")
    with pytest.raises(ValueError, match="unknown block"):
        make_model("digits_cnn").block_output(torch.zeros(1, 1, 8, 8), "layer9")


# -- algorithms over torch --------------------------------------------------------------
@pytest.fixture(scope="module")
def digits_iid():
    return make_image_scenario("digits", "iid", 3, random_state=0)


def _deep(name, **kw):
    params = {"n_rounds": 4, "lr": 0.05, "local_epochs": 1, "batch_size": 32,
              "model": TorchModel("digits_cnn", momentum=0.5), "random_state": 0}
    params.update(kw)
    return make_method(name, **params)


@pytest.mark.parametrize("name", ["FedAvg", "FedProx", "SCAFFOLD", "pFedMe", "pTopoFL"])
def test_every_algorithm_trains_a_network(digits_iid, name):
    kw = {"augment": False, "n_sub": 60} if name == "pTopoFL" else {}
    if name == "pFedMe":
        kw = {"lr": 0.05, "personal_lr": 0.05, "local_epochs": 3,
              "model": TorchModel("digits_cnn")}
    est = _deep(name, **kw).fit(digits_iid)
    assert np.all(np.isnan(est.history_["auc"]))
    assert est.history_["accuracy"][-1] > 0.5  # chance is 0.1
    proba = est.predict_proba(load_image_dataset("digits").X_test[:5], client=0)
    assert proba.shape == (5, 10)
    np.testing.assert_allclose(proba.sum(axis=1), 1, rtol=1e-5)


def test_torch_runs_are_deterministic(digits_iid):
    a = _deep("FedAvg").fit(digits_iid)
    b = _deep("FedAvg").fit(digits_iid)
    c = _deep("FedAvg", random_state=1).fit(digits_iid)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_learner_gradient_matches_autograd(digits_iid):
    est = _deep("FedAvg", n_rounds=1).fit(digits_iid)
    learner, data = est.learner_, est._data[0]
    w = est.coef_
    idx = np.arange(7)
    g = learner.gradient(w, data, idx)
    net = learner.load(w)
    net.zero_grad()
    torch.nn.functional.cross_entropy(net(data[0][:7]), data[1][:7]).backward()
    ref = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).numpy()
    np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-7)


def test_ptopofl_deep_clusters_on_penultimate_descriptors():
    sc = make_image_scenario("digits", "L", 6, param=0.3, random_state=1)
    est = _deep("pTopoFL", augment=False, n_clusters=3, n_sub=60).fit(sc)
    assert est.descriptors_.shape == (6, 48)
    assert set(est.labels_) == {0, 1, 2}
    assert est.signatures_.shape == (4, 6, 48)
    assert est.drift_.max() > 0  # the representation moves with the model


def test_ptopofl_augment_needs_logistic_model(digits_iid):
    with pytest.raises(ValueError, match="augment=True"):
        _deep("pTopoFL").fit(digits_iid)


def test_bad_model_argument(digits_iid):
    with pytest.raises(TypeError, match="model must be None or a TorchModel"):
        make_method("FedAvg", model="cnn").fit(digits_iid)
    with pytest.raises(ValueError, match="unknown architecture"):
        _deep("FedAvg", model=TorchModel("vgg")).fit(digits_iid)


def test_multiclass_client_labels_are_checked():
    X = np.zeros((20, 64))
    with pytest.raises(ValueError, match="labels 0..9"):
        Client(X, np.full(20, 12), X, np.zeros(20, int), n_classes=10)
    one_class = Client(X, np.full(20, 3), X, np.zeros(20, int), n_classes=10)
    assert one_class.n_train == 20  # a multi-class client may hold one class
    with pytest.raises(ValueError, match="single class"):
        Client(X, np.zeros(20, int), X, np.zeros(20, int))  # binary: both needed


def test_labels_beyond_model_classes():
    X = np.random.default_rng(0).normal(size=(40, 64))
    sc = FederatedScenario("x", [Client(X, np.arange(40) % 12, X, np.arange(40) % 12,
                                        n_classes=12)] * 2)
    with pytest.raises(ValueError, match="labels must lie in 0..9"):
        _deep("FedAvg").fit(sc)


def test_local_test_sets_follow_client_labels():
    sc = make_image_scenario("digits", "K", 5, param=2, test="local", random_state=0)
    for c in sc.clients:
        assert set(np.unique(c.y_test)) <= set(np.unique(c.y_train))


def test_label_distribution_checks_the_indices():
    with pytest.raises(ValueError, match=r"parts\[0\] must hold indices into y"):
        label_distribution(np.arange(10) % 2, [np.array([20])])
