"""FedTopo's representation-alignment baselines as deep methods: MOON, FedFM, FedPAC."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topofl_lib._validation import check_random_state
from topofl_lib.deep import TorchModel, make_image_scenario
from topofl_lib.deep.experiments import deep_variants
from topofl_lib.federated import make_method
from topofl_lib.federated.fedccfa import label_clusters, madd
from topofl_lib.federated.fedfm import anchor_matching_loss
from topofl_lib.federated.fedpac import collaboration_weights, feature_statistics
from topofl_lib.federated.moon import model_contrastive_loss
from topofl_lib.runner.tasks import slim
from topofl_lib.storage import dump, load


@pytest.fixture(scope="module")
def digits():
    return make_image_scenario("digits", "L", 3, param=0.5, random_state=0)


def _deep(name, **kw):
    params = {"n_rounds": 2, "lr": 0.05, "local_epochs": 1, "batch_size": 32,
              "model": TorchModel("digits_cnn", momentum=0.5), "random_state": 0}
    params.update(kw)
    return make_method(name, **params)


# -- MOON ---------------------------------------------------------------------------------
def test_moon_with_mu_zero_is_fedavg_bit_for_bit(digits):
    fedavg = _deep("FedAvg").fit(digits)
    moon = _deep("MOON", mu=0.0).fit(digits)
    np.testing.assert_array_equal(moon.coef_, fedavg.coef_)
    np.testing.assert_array_equal(moon.history_["accuracy"], fedavg.history_["accuracy"])


def test_moon_contrast_changes_training_from_round_two_only(digits):
    fedavg = _deep("FedAvg", n_rounds=1).fit(digits)
    moon1 = _deep("MOON", n_rounds=1).fit(digits)  # no previous local model: l_con = 0
    np.testing.assert_array_equal(moon1.coef_, fedavg.coef_)
    moon2 = _deep("MOON").fit(digits)
    assert not np.array_equal(moon2.coef_, _deep("FedAvg").fit(digits).coef_)


def test_model_contrastive_loss_matches_eq3():
    g = torch.Generator().manual_seed(0)
    z, zg, zp = (torch.randn(5, 4, generator=g) for _ in range(3))
    cos = torch.nn.functional.cosine_similarity
    pos, neg = torch.exp(cos(z, zg) / 0.5), torch.exp(cos(z, zp) / 0.5)
    expected = (-torch.log(pos / (pos + neg))).mean()
    torch.testing.assert_close(model_contrastive_loss(z, zg, zp, 0.5), expected)
    assert float(model_contrastive_loss(z, zg, None, 0.5)) == 0.0
    # representations equal to the global ones and orthogonal to the previous: small loss
    assert float(model_contrastive_loss(z, z, zp - 1e3 * z, 0.5)) < float(expected)


# -- FedFM --------------------------------------------------------------------------------
def test_fedfm_with_lam_zero_or_before_start_round_is_fedavg(digits):
    fedavg = _deep("FedAvg").fit(digits)
    for kw in ({"lam": 0.0}, {"start_round": 3}):
        np.testing.assert_array_equal(_deep("FedFM", **kw).fit(digits).coef_, fedavg.coef_)
    assert not np.array_equal(_deep("FedFM").fit(digits).coef_, fedavg.coef_)


def test_fedfm_anchors_are_the_pooled_class_means_under_the_global_model(digits):
    est = _deep("FedFM", n_rounds=1).fit(digits)
    X = np.vstack([c.X_train for c in digits.clients])
    y = np.concatenate([c.y_train for c in digits.clients])
    Z = est.learner_.representation(est.coef_, X)
    for c in range(10):
        expected = Z[y == c].mean(axis=0) if np.any(y == c) else np.zeros(Z.shape[1])
        np.testing.assert_allclose(est.anchors_[c], expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(est.anchor_counts_, np.bincount(y, minlength=10))


def test_anchor_matching_loss_is_cross_entropy_over_cosines():
    g = torch.Generator().manual_seed(1)
    z, anchors = torch.randn(6, 4, generator=g), torch.randn(3, 4, generator=g)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    cos = torch.nn.functional.cosine_similarity(z[:, None, :], anchors[None, :, :], dim=2)
    expected = -torch.log_softmax(cos / 0.1, dim=1)[torch.arange(6), y].mean()
    torch.testing.assert_close(anchor_matching_loss(z, y, anchors, 0.1), expected)
    # a feature on its own anchor, far from the others: a small loss
    assert float(anchor_matching_loss(anchors * 3, torch.arange(3), anchors, 0.1)) < float(expected)


# -- FedPAC -------------------------------------------------------------------------------
def test_collaboration_weights_closed_forms():
    rng = np.random.default_rng(0)
    H = rng.normal(size=(4, 3, 5))
    # no variance, distinct statistics: every client keeps its own classifier
    np.testing.assert_allclose(collaboration_weights(np.zeros(4), H), np.eye(4), atol=1e-6)
    # identical statistics: the weights are inverse-variance, min sum_j a_j^2 V_j
    V = np.array([1.0, 2.0, 4.0, 8.0])
    expected = (1 / V) / (1 / V).sum()
    A = collaboration_weights(V, np.repeat(H[:1], 4, axis=0))
    np.testing.assert_allclose(A, np.tile(expected, (4, 1)), atol=1e-5)
    A = collaboration_weights(rng.uniform(0.1, 1, 4), H)
    assert np.all(A >= 0) and np.allclose(A.sum(axis=1), 1)


def test_feature_statistics_formula():
    rng = np.random.default_rng(1)
    Z, y = rng.normal(size=(12, 3)), np.array([0] * 5 + [2] * 7)
    V, h = feature_statistics(Z, y, 3)
    p = np.array([5, 0, 7]) / 12
    mu = [Z[y == c].mean(axis=0) if p[c] else np.zeros(3) for c in range(3)]
    expected = sum(p[c] * (Z[y == c] ** 2).sum(axis=1).mean() - p[c] ** 2 * mu[c] @ mu[c]
                   for c in (0, 2)) / 12
    assert V == pytest.approx(expected)
    np.testing.assert_allclose(h, p[:, None] * np.array(mu))


@pytest.fixture(scope="module")
def fedpac(digits):
    return _deep("FedPAC").fit(digits)


def test_fedpac_shares_the_extractor_and_combines_classifiers(fedpac):
    head = np.zeros(fedpac.coef_.size, dtype=bool)
    n_head = sum(p.numel() for p in fedpac.learner_.net.classifier.parameters())
    head[-n_head:] = True
    for k in range(fedpac.n_clients_):
        np.testing.assert_array_equal(fedpac.client_models_[k][~head], fedpac.coef_[~head])
    np.testing.assert_allclose(fedpac.client_models_[:, head],
                               fedpac.collaboration_ @ fedpac.local_models_[:, head],
                               rtol=1e-6, atol=1e-8)
    assert not np.allclose(fedpac.client_models_[0, head], fedpac.client_models_[1, head])


def test_fedpac_centroids_pool_the_clients_class_means(digits, fedpac):
    sums, counts = 0.0, np.zeros(10)
    for k, c in enumerate(digits.clients):
        Z = fedpac.learner_.representation(fedpac.local_models_[k], c.X_train)
        n = np.bincount(c.y_train, minlength=10)
        sums = sums + np.array([Z[c.y_train == j].sum(axis=0) if n[j] else np.zeros(Z.shape[1])
                                for j in range(10)])
        counts += n
    np.testing.assert_allclose(fedpac.centroids_, sums / np.maximum(counts, 1)[:, None],
                               rtol=1e-6, atol=1e-9)


def test_fedpac_extractor_phase_leaves_the_classifier_alone(digits):
    est = _deep("FedPAC", n_rounds=1, head_epochs=0).fit(digits)
    n_head = sum(p.numel() for p in est.learner_.net.classifier.parameters())
    # the network fit built: its weights come from the first draw of random_state's generator
    init = TorchModel("digits_cnn").make_learner(64, check_random_state(0)).init_params()
    for k in range(est.n_clients_):
        np.testing.assert_array_equal(est.local_models_[k][-n_head:], init[-n_head:])
        assert not np.array_equal(est.local_models_[k][:-n_head], init[:-n_head])


# -- FedCCFA ------------------------------------------------------------------------------
def test_madd_and_label_clusters():
    V = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    D = madd(V)
    c = 1 / np.sqrt(2)  # d_02 = |cos(v0, v1) - cos(v2, v1)| = |0 - c|; d_01 = |c - c|
    np.testing.assert_allclose(D, [[0, 0, c], [0, 0, c], [c, c, 0]], atol=1e-12)
    np.testing.assert_array_equal(madd(np.ones((4, 3))), np.zeros((4, 4)))
    rows = np.array([[1.0, 0, 0], [1.0, 0, 0], [0, 1.0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    ids = label_clusters(rows, eps=0.1)
    assert ids[0] == ids[1] and ids[2] == ids[3] and len(set(ids)) == 3


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: madd(np.ones((2, 3))), ValueError, r"V must be 2-D with at least 3 rows .*\(2, 3\)"),
    (lambda: madd(np.ones(4)), ValueError, r"V must be 2-D .*shape \(4,\)"),
    (lambda: madd("abc"), TypeError, r"V must be an array of numbers"),
    (lambda: label_clusters(np.eye(3), eps=0.0), ValueError, r"eps must be > 0.0, got 0.0"),
    (lambda: feature_statistics(np.ones((4, 2)), np.array([0, 1, 3, 1]), 3), ValueError,
     r"y must contain labels 0..2, got values \[0, 1, 3\]"),
    (lambda: feature_statistics(np.ones((4, 2)), np.zeros(3, int), 3), ValueError,
     r"y must be 1-D with 4 entries"),
    (lambda: feature_statistics(np.ones(4), np.zeros(4, int), 3), ValueError,
     r"Z must be a non-empty 2-D array"),
    (lambda: feature_statistics(np.ones((4, 2)), np.zeros(4, int), 0), ValueError,
     r"n_classes must be >= 1, got 0"),
    (lambda: collaboration_weights(np.ones(3), np.ones((4, 2, 2))), ValueError,
     r"V must have shape \(n_clients,\) and H .* got \(3,\) and \(4, 2, 2\)"),
    (lambda: collaboration_weights(np.ones(3), np.ones((3, 2))), ValueError, r"\(3, 2\)"),
])
def test_fedpac_and_fedccfa_helpers_name_bad_input(call, error, match):
    """The public helpers refuse wrong shapes, labels out of range and a non-positive
    DBSCAN radius by name (they used to fail inside numpy or DBSCAN, or, for MADD with two
    clients, return NaN distances from the mean of nothing). NaN features still pass: a
    diverged run's are recorded, not refused."""
    with pytest.raises(error, match=match):
        call()
    V, h = feature_statistics(np.full((2, 2), np.nan), np.array([0, 1]), 2)
    assert np.isnan(V) and np.isnan(h).all()


def _head(est):
    n_head = sum(p.numel() for p in est.learner_.net.classifier.parameters())
    mask = np.zeros(est.coef_.size, dtype=bool)
    mask[-n_head:] = True
    return mask


@pytest.fixture(scope="module")
def fedccfa(digits):
    return _deep("FedCCFA").fit(digits)


def test_fedccfa_merges_label_classifiers_within_clusters(fedccfa):
    head = _head(fedccfa)
    C, K = fedccfa.clusters_.shape
    d = fedccfa.prototypes_.shape[2]
    W = fedccfa.client_models_[:, head][:, :C * d].reshape(K, C, d)
    b = fedccfa.client_models_[:, head][:, C * d:]
    W_local = fedccfa.local_models_[:, head][:, :C * d].reshape(K, C, d)
    for c in range(C):
        for cluster in np.unique(fedccfa.clusters_[c]):
            members = np.flatnonzero(fedccfa.clusters_[c] == cluster)
            expected = W_local[members, c].astype(np.float64).mean(axis=0)
            for k in members:
                np.testing.assert_allclose(W[k, c], expected if members.size > 1
                                           else W_local[k, c], rtol=1e-6, atol=1e-8)
            assert np.all(b[members, c] == b[members[0], c])
    for k in range(K):  # the extractor is the global one
        np.testing.assert_array_equal(fedccfa.client_models_[k][~head], fedccfa.coef_[~head])


def test_fedccfa_without_clusters_keeps_own_classifiers(digits):
    est = _deep("FedCCFA", eps=1e-12).fit(digits)
    assert all(len(set(row)) == est.n_clients_ for row in est.clusters_)
    head = _head(est)
    np.testing.assert_array_equal(est.client_models_[:, head], est.local_models_[:, head])


def test_fedccfa_alignment_weight_is_label_entropy_over_gamma(digits, fedccfa):
    for k, c in enumerate(digits.clients):
        p = np.bincount(c.y_train) / c.n_train
        p = p[p > 0]
        assert fedccfa.align_weights_[k] == pytest.approx(-(p * np.log(p)).sum() / 20.0)


def test_fedccfa_server_classifier_is_never_aggregated(fedccfa):
    head = _head(fedccfa)
    init = TorchModel("digits_cnn").make_learner(64, check_random_state(0)).init_params()
    np.testing.assert_array_equal(fedccfa.coef_[head], init[head])


def test_fedccfa_needs_three_clients():
    two = make_image_scenario("digits", "iid", 2, random_state=0)
    with pytest.raises(ValueError, match="n_clients=2"):
        _deep("FedCCFA").fit(two)


# -- shared -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["MOON", "FedFM", "FedPAC", "FedCCFA"])
def test_deterministic_and_storable(digits, name, tmp_path):
    a = _deep(name).fit(digits)
    b = _deep(name).fit(digits)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.history_["accuracy"], b.history_["accuracy"])
    assert np.all(np.isfinite(a.history_["accuracy"]))
    back = load(dump(tmp_path / "est.npz", slim(a)))  # as the run store keeps it
    np.testing.assert_array_equal(back.coef_, a.coef_)
    X = digits.clients[0].X_test[:4]
    np.testing.assert_allclose(back.predict_proba(X, client=0), a.predict_proba(X, client=0))


@pytest.mark.parametrize("name", ["MOON", "FedFM", "FedPAC", "FedCCFA"])
def test_needs_a_network_and_validates(digits, name):
    with pytest.raises(ValueError, match="model=TorchModel"):
        make_method(name, n_rounds=1).fit(digits)


def test_moon_parameters_are_validated(digits):
    with pytest.raises(ValueError, match="mu"):
        _deep("MOON", mu=-1.0).fit(digits)
    with pytest.raises(ValueError, match="tau"):
        _deep("MOON", tau=0.0).fit(digits)


def test_fedfm_parameters_are_validated(digits):
    for kw, word in (({"lam": -1.0}, "lam"), ({"tau": 0.0}, "tau"), ({"start_round": 0},
                                                                       "start_round")):
        with pytest.raises(ValueError, match=word):
            _deep("FedFM", **kw).fit(digits)


def test_fedpac_parameters_are_validated(digits):
    for kw, word in (({"lam": -1.0}, "lam"), ({"head_epochs": -1}, "head_epochs"),
                     ({"head_lr": 0.0}, "head_lr")):
        with pytest.raises(ValueError, match=word):
            _deep("FedPAC", **kw).fit(digits)


def test_fedccfa_parameters_are_validated(digits):
    for kw, word in (({"gamma": 0.0}, "gamma"), ({"eps": -1.0}, "eps"),
                     ({"balanced_size": 0}, "balanced_size"), ({"clf_lr": 0.0}, "clf_lr")):
        with pytest.raises(ValueError, match=word):
            _deep("FedCCFA", **kw).fit(digits)


@pytest.mark.parametrize("name", ["FedPAC", "FedCCFA"])
def test_global_deploy_scores_the_global_extractor_with_the_averaged_classifiers(digits,
                                                                                name):
    """deploy="global" trains exactly as "personal" does and scores every client with one
    model: the global extractor with the clients' classifiers averaged by data volume."""
    own, glob = _deep(name).fit(digits), _deep(name, deploy="global").fit(digits)
    np.testing.assert_array_equal(glob.coef_, own.coef_)
    np.testing.assert_array_equal(glob.client_models_, own.client_models_)
    np.testing.assert_array_equal(glob.global_model_, own.global_model_)
    n = np.array([c.n_train for c in digits.clients], dtype=np.float64)
    head = np.zeros(own.coef_.size, dtype=bool)
    head[-sum(p.numel() for p in own.learner_.net.classifier.parameters()):] = True
    np.testing.assert_allclose(glob.global_model_[head], n @ own.client_models_[:, head]
                               / n.sum(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(glob.global_model_[~head], own.coef_[~head])
    X, y = digits.clients[0].X_test, digits.clients[0].y_test
    expected = own.learner_.evaluate(glob.global_model_, X, y)[1]
    assert glob.history_["client_accuracy"][-1] == pytest.approx([expected] * 3)
    assert own.history_["client_accuracy"][-1] == pytest.approx(  # each its own model
        [own.learner_.evaluate(w, X, y)[1] for w in own.client_models_])


@pytest.mark.parametrize("name", ["FedPAC", "FedCCFA"])
def test_deploy_is_validated(digits, name):
    with pytest.raises(ValueError, match="unknown deploy 'both'; expected one of"):
        _deep(name, deploy="both").fit(digits)


def test_deep_variants_labels():
    v = deep_variants(["MOON", "FedFM", "FedPAC", "FedCCFA"])
    assert v["FedCCFA"][0] == "FedCCFA" and v["FedCCFA"][1]["gamma"] == 20.0
    assert v["FedPAC"][0] == "FedPAC" and v["FedPAC"][1]["lam"] == 1.0
    assert v["MOON"][0] == "MOON" and v["MOON"][1]["mu"] == 5.0
    assert v["FedFM"][0] == "FedFM" and (v["FedFM"][1]["lam"], v["FedFM"][1]["tau"]) == (50.0, 0.1)
    assert deep_variants(["MOON"], n_classes=100)["MOON"][1]["mu"] == 1.0
