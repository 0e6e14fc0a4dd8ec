"""Differential privacy of the model channel: client-level DP-FedAvg and DP-SGD.

Properties checked: every clipped update and every clipped per-example gradient is
within the bound; the server's and DP-SGD's noise have the calibrated scale; a seed
fixes every number; without noise and with a bound no update reaches, DP-FedAvg is
FedAvg (and pTopoFL is pTopoFL) on clients of equal size, and DP-SGD is SGD on the same
batches; bad parameters are refused before anything runs; runs of the runner carry their
epsilon per round, and the run store keeps them.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from topofl_lib import FedAvg, FedProx, PTopoFL, make_healthcare
from topofl_lib.data import FederatedScenario
from topofl_lib.experiments import run_comparison
from topofl_lib.federated.local import (
    LogisticLearner,
    epoch_batches,
    local_sgd,
    logistic_gradient,
    private_gradient,
)
from topofl_lib.privacy import ClientLevelDP, GaussianMechanism, SampleLevelDP, clip_norm
from topofl_lib.privacy.model_channel import NOISE_PLACEMENTS
from topofl_lib.topology import ModelAnchoredDescriptor

pytest.importorskip("opacus")

HUGE = 1e300  # a clipping bound no update reaches


@pytest.fixture(scope="module")
def healthcare():
    return make_healthcare(n_clients=6, n_adversarial=1, random_state=0)


@pytest.fixture(scope="module")
def equal_sizes(healthcare):
    """Scenario A's clients cut to the same training size (FedAvg's weights are then
    uniform, as DP-FedAvg's are)."""
    m = min(c.n_train for c in healthcare.clients)
    clients = [dataclasses.replace(c, X_train=c.X_train[:m], y_train=c.y_train[:m])
               for c in healthcare.clients]
    return FederatedScenario("equal", clients, dict(healthcare.meta))


# -- clipping ------------------------------------------------------------------------


def test_every_clipped_update_is_within_the_bound():
    """Property over random updates of every scale: alone in a noiseless sum, each
    update comes back with norm <= C, unchanged when already within it."""
    rng = np.random.default_rng(0)
    for clip in (1e-3, 0.5, 7.0):
        dp = ClientLevelDP(noise_multiplier=0.0, clip=clip)
        for _ in range(200):
            u = rng.normal(size=(1, 30)) * 10.0 ** rng.uniform(-8, 8)
            out = dp.noisy_sum(u, np.ones(1), rng)
            norm = np.linalg.norm(u)
            assert np.linalg.norm(out) <= clip * (1 + 1e-12)
            if norm <= clip:
                np.testing.assert_array_equal(out, u[0])
            else:
                np.testing.assert_allclose(out, u[0] * clip / norm, rtol=1e-12)


def test_every_per_example_gradient_is_clipped(healthcare):
    """The logistic learner's clipped sum over one example: norm <= C, and for a batch
    it equals the sum of the examples' gradients clipped one by one."""
    learner = LogisticLearner(1.0)
    c = healthcare.clients[0]
    data = learner.client_data(c.X_train, c.y_train)
    rng = np.random.default_rng(1)
    for _ in range(50):
        w = rng.normal(size=data[0].shape[1]) * rng.uniform(0.1, 10)
        clip = rng.uniform(0.01, 2.0)
        for i in rng.choice(c.n_train, 5, replace=False):
            g = learner.clipped_gradient_sum(w, data, np.array([i]), clip)
            assert np.linalg.norm(g) <= clip * (1 + 1e-12)
        idx = rng.choice(c.n_train, 8, replace=False)
        raw = [logistic_gradient(w, data[0][[i]], data[1][[i]], 0.0) for i in idx]
        by_one = sum(g * (clip / max(np.linalg.norm(g), clip)) for g in raw)
        np.testing.assert_allclose(learner.clipped_gradient_sum(w, data, idx, clip), by_one,
                                   rtol=1e-10, atol=1e-14)


def test_a_noiseless_round_moves_the_model_by_at_most_the_bound(healthcare):
    """One DP-FedAvg round from 0 with z = 0: the mean of K clipped updates."""
    for clip in (0.01, 0.3):
        est = FedAvg(n_rounds=1, lr=5.0, random_state=0,
                     model_dp=ClientLevelDP(noise_multiplier=0.0, clip=clip)).fit(healthcare)
        assert np.linalg.norm(est.coef_) <= clip * (1 + 1e-12)
        assert np.all(np.linalg.norm(est.local_models_, axis=1) > clip)  # all clipped


# -- noise ---------------------------------------------------------------------------


def test_server_noise_has_the_calibrated_scale():
    """Zero updates: the noisy sum is the noise alone, N(0, (zC)^2) per coordinate; the
    round's mean update divides it by the expected number of clients q K."""
    dp = ClientLevelDP(noise_multiplier=1.7, clip=0.3, sample_rate=0.5, noise="central")
    rng = np.random.default_rng(2)
    draws = np.concatenate([dp.noisy_sum(np.zeros((4, 1000)), np.ones(4), rng)
                            for _ in range(40)])
    assert draws.std() == pytest.approx(1.7 * 0.3, rel=0.02)
    assert abs(draws.mean()) < 4 * 0.51 / math.sqrt(draws.size)


def test_dp_sgd_noise_has_the_calibrated_scale(healthcare):
    """An empty batch at w = 0: the gradient is the noise over the expected batch size."""
    learner = LogisticLearner(1.0)
    c = healthcare.clients[0]
    data = learner.client_data(c.X_train, c.y_train)
    dp = SampleLevelDP(noise_multiplier=2.0, clip=0.5)
    g = private_gradient(learner, data, dp, n=c.n_train, batch_size=16,
                         rng=np.random.default_rng(3), to_work=np.array)
    w = np.zeros(data[0].shape[1])
    draws = np.concatenate([g(w, np.array([], dtype=int)) for _ in range(3000)])
    assert draws.std() == pytest.approx(2.0 * 0.5 / 16, rel=0.02)


def test_poisson_batches_have_the_sampling_rate():
    dp = SampleLevelDP()
    batches = list(dp.batches(200, 3, 20, np.random.default_rng(4)))
    assert len(batches) == 3 * 10
    sizes = np.array([b.size for b in batches])
    assert sizes.mean() == pytest.approx(20, rel=0.15)
    assert np.ptp(sizes) > 0  # Poisson: sizes vary
    assert [b.size for b in dp.batches(10, 2, 32, np.random.default_rng(0))] == [10, 10]


# -- seeds ---------------------------------------------------------------------------

RUNS = {
    "client": lambda seed: FedAvg(n_rounds=3, random_state=seed, model_dp=ClientLevelDP(
        noise_multiplier=0.8, clip=0.5, sample_rate=0.6, noise="central")),
    "sample": lambda seed: FedProx(n_rounds=2, random_state=seed, model_dp=SampleLevelDP(
        noise_multiplier=0.8, clip=0.5)),
    "ptopofl": lambda seed: PTopoFL(
        n_rounds=2, random_state=seed, descriptor_mechanism=GaussianMechanism(2.0),
        model_dp=ClientLevelDP(noise_multiplier=0.8, clip=0.5, sample_rate=0.7,
                               noise="local")),
}


@pytest.mark.parametrize("kind", list(RUNS))
def test_a_seed_fixes_every_number(healthcare, kind):
    a, b, c = (RUNS[kind](s).fit(healthcare) for s in (0, 0, 1))
    for key in ("auc", "client_auc", "epsilon", "client_epsilon"):
        np.testing.assert_array_equal(a.history_[key], b.history_[key])
    np.testing.assert_array_equal(a.local_models_, b.local_models_)
    assert not np.array_equal(a.local_models_, c.local_models_)
    assert not np.array_equal(a.history_["client_auc"], c.history_["client_auc"])


def test_client_sampling_trains_only_the_sampled_clients(healthcare):
    """One round from the zero model: a client not sampled returns it unchanged."""
    dp = ClientLevelDP(sample_rate=0.5, noise="central")  # sampled: m unknown beforehand
    trained = []
    for seed in range(6):
        est = FedAvg(n_rounds=1, random_state=seed, model_dp=dp).fit(healthcare)
        moved = np.any(est.local_models_ != 0, axis=1)
        assert np.all(est.local_models_[~moved] == 0)
        trained.append(moved)
    share = np.mean(trained)
    assert 0 < share < 1
    rng = np.random.default_rng(0)
    taken = np.mean([dp.participants(6, rng) for _ in range(2000)])
    assert taken == pytest.approx(0.5, abs=0.02)


# -- no noise, no clipping: the plain algorithms ------------------------------------


@pytest.mark.parametrize("method", [FedAvg, FedProx])
def test_noiseless_unclipped_dp_fedavg_is_fedavg(equal_sizes, method):
    plain = method(n_rounds=4, random_state=0).fit(equal_sizes)
    dp = method(n_rounds=4, random_state=0, model_dp=ClientLevelDP(
        noise_multiplier=0.0, clip=HUGE)).fit(equal_sizes)
    np.testing.assert_allclose(dp.coef_, plain.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dp.history_["client_auc"], plain.history_["client_auc"],
                               rtol=1e-12)
    assert np.all(dp.history_["epsilon"] == math.inf)


def test_noiseless_unclipped_private_ptopofl_is_ptopofl(equal_sizes):
    plain = PTopoFL(n_rounds=3, random_state=0).fit(equal_sizes)
    dp = PTopoFL(n_rounds=3, random_state=0, model_dp=ClientLevelDP(
        noise_multiplier=0.0, clip=HUGE)).fit(equal_sizes)
    np.testing.assert_array_equal(dp.labels_, plain.labels_)
    np.testing.assert_allclose(dp.cluster_models_, plain.cluster_models_, rtol=1e-12,
                               atol=1e-14)


def test_noiseless_unclipped_dp_sgd_is_sgd_on_the_same_batches(healthcare):
    """Bit for bit: the clipped sum is the plain gradient's product when nothing is
    clipped, and zero noise adds nothing."""
    learner = LogisticLearner(1.0)
    c = healthcare.clients[1]
    data = learner.client_data(c.X_train, c.y_train)
    n = c.n_train - c.n_train % 8  # full batches only: the same denominator
    batches = list(epoch_batches(n, 3, 8, np.random.default_rng(5)))
    w0 = np.random.default_rng(6).normal(size=data[0].shape[1])
    dp = SampleLevelDP(noise_multiplier=0.0, clip=HUGE)
    plain, _ = local_sgd(w0, lambda w, idx: learner.gradient(w, data, idx), n, lr=0.3,
                         epochs=3, batch_size=8, rng=None, batches=batches)
    private, steps = local_sgd(
        w0, private_gradient(learner, data, dp, n=n, batch_size=8,
                             rng=np.random.default_rng(7), to_work=np.array),
        n, lr=0.3, epochs=3, batch_size=8, rng=None, batches=batches)
    assert steps == len(batches)
    np.testing.assert_array_equal(private, plain)


def test_noiseless_unclipped_full_batch_dp_sgd_run_is_fedavg(healthcare):
    """Whole runs: full batches, so Poisson sampling at rate 1 takes every example."""
    plain = FedAvg(n_rounds=3, batch_size=None, random_state=0).fit(healthcare)
    dp = FedAvg(n_rounds=3, batch_size=None, random_state=0, model_dp=SampleLevelDP(
        noise_multiplier=0.0, clip=HUGE)).fit(healthcare)
    np.testing.assert_allclose(dp.coef_, plain.coef_, rtol=1e-12, atol=1e-14)


# -- descriptor releases -------------------------------------------------------------


def test_every_descriptor_release_is_accounted(healthcare):
    """The paper's descriptor: one release (round 0); a model-anchored one: a release
    after every round; in the clear with tracking: every round, infinite epsilon."""
    dp = ClientLevelDP(noise_multiplier=3.0, clip=0.5)
    once = PTopoFL(n_rounds=3, random_state=0, descriptor_mechanism=GaussianMechanism(3.0),
                   model_dp=dp).fit(healthcare).accountants_[0].events()
    assert list(once.loc[once["channel"] == "descriptor", "round"]) == [0]
    anchored = PTopoFL(n_rounds=3, random_state=0, augment=False,
                       descriptor=ModelAnchoredDescriptor(n_sub=30),
                       descriptor_mechanism=GaussianMechanism(3.0), model_dp=dp)
    ev = anchored.fit(healthcare).accountants_[2].events()
    assert list(ev.loc[ev["channel"] == "descriptor", "round"]) == [1, 2, 3]
    assert list(ev.loc[ev["channel"] == "model", "round"]) == [1, 2, 3]
    tracked = PTopoFL(n_rounds=2, random_state=0, model_dp=dp).fit(healthcare)
    ev = tracked.accountants_[0].events()
    assert list(ev.loc[ev["channel"] == "descriptor", "mechanism"]) == ["none"] * 3
    assert np.all(tracked.history_["epsilon"] == math.inf)


def test_each_round_logs_the_epsilon_of_the_history(healthcare, caplog):
    """One INFO line per round, with the round's epsilon as ``history_`` records it
    (the largest total over the clients, and each channel's)."""
    model = PTopoFL(n_rounds=3, random_state=0, descriptor_mechanism=GaussianMechanism(3.0),
                    model_dp=ClientLevelDP(noise_multiplier=3.0, clip=0.5))
    with caplog.at_level("INFO", logger="topofl_lib.federated"):
        model.fit(healthcare)
    lines = [r.getMessage() for r in caplog.records if r.name == "topofl_lib.federated"]
    assert len(lines) == 3
    h = model.history_
    for r, line in enumerate(lines):
        assert line.startswith(f"PTopoFL round {r + 1}/3: epsilon {h['epsilon'][r]:.4g} ")
        assert f"(descriptor {h['epsilon_descriptor'][r]:.4g}, " in line
        # distributed noise (the default): each update reaches the server with its share
        assert f"model {h['epsilon_model'][r]:.4g}; against the server " \
               f"{h['epsilon_server'][r]:.4g})" in line
        assert h["epsilon"][r] < h["epsilon_server"][r] < math.inf
        assert "add_remove neighbours" in line
        assert line.endswith(f"the largest over {len(healthcare.clients)} clients")
    caplog.clear()
    FedAvg(n_rounds=2, random_state=0).fit(healthcare)  # no model_dp: no accountant, no line
    assert not [r for r in caplog.records if r.name == "topofl_lib.federated"]


def test_private_ptopofl_keeps_down_weighting_the_flagged_client(healthcare):
    est = PTopoFL(n_rounds=1, random_state=0, descriptor_mechanism=GaussianMechanism(50.0),
                  model_dp=ClientLevelDP(noise_multiplier=0.5, clip=0.5))
    est.fit(healthcare)
    weights = est.weights_  # the size-free Eq. 6 weights the noisy sums used
    assert np.all(weights > 0)
    for j in np.unique(est.labels_):
        members = est.labels_ == j
        assert weights[members].sum() == pytest.approx(1.0)
        flagged = members & (est.trust_ < 1)
        if flagged.any():  # below every unflagged member's bound share
            assert weights[flagged].max() < weights[members & ~flagged].max()


@pytest.mark.parametrize("model_dp", [None, ClientLevelDP(noise_multiplier=0.0, clip=HUGE)])
def test_reported_weights_are_the_weights_the_aggregation_used(healthcare, model_dp):
    """Without noise, clipping or blending, each cluster's model is the ``weights_``-
    weighted mean of its members' returned models, with and without client-level DP;
    under DP those weights ignore the (unequal) client sizes, and ``consensus_weights_``
    and ``weight_history_`` report the same weights."""
    est = PTopoFL(n_rounds=2, beta=0.0, random_state=0, model_dp=model_dp).fit(healthcare)
    for j in np.unique(est.labels_):
        members = est.labels_ == j
        np.testing.assert_allclose(est.cluster_models_[j],
                                   est.weights_[members] @ est.local_models_[members],
                                   rtol=1e-10, atol=1e-12)
    shares = np.bincount(est.labels_)[est.labels_] / est.n_clients_
    np.testing.assert_allclose(est.consensus_weights_, shares * est.weights_)
    np.testing.assert_array_equal(est.weight_history_[-1], est.consensus_weights_)
    plain = PTopoFL(n_rounds=1, random_state=0).fit(healthcare)
    sizes = np.array([c.n_train for c in healthcare.clients], dtype=float)
    size_free = est.weights_ if model_dp else None
    if size_free is not None:  # the same clusters and trust; only the size factor differs
        np.testing.assert_array_equal(est.labels_, plain.labels_)
        ratio = plain.weights_ / size_free / sizes
        for j in np.unique(est.labels_):
            np.testing.assert_allclose(ratio[est.labels_ == j], ratio[est.labels_ == j][0])
        assert not np.allclose(plain.weights_, size_free)


# -- the runner ----------------------------------------------------------------------


def test_comparison_results_carry_epsilon_and_the_store_keeps_it(tmp_path):
    variants = {
        "FedAvg": ("FedAvg", {}),
        "DP-FedAvg": ("FedAvg", {"model_dp": ClientLevelDP(noise_multiplier=1.0,
                                                           clip=0.5)}),
        "private pTopoFL": ("pTopoFL", {
            "descriptor_mechanism": GaussianMechanism(2.0),
            "model_dp": ClientLevelDP(noise_multiplier=1.0, clip=0.5)}),
    }
    kw = {"seeds": [0], "n_rounds": 2, "progress": False, "variants": variants,
          "scenario_params": {"n_clients": 4, "n_adversarial": 1}, "cache_dir": tmp_path,
          "keep_models": True}
    first = run_comparison("healthcare", **kw)
    final = first.final.set_index("method")
    assert np.isnan(final.loc["FedAvg", "epsilon"])
    assert final.loc["private pTopoFL", "epsilon"] > final.loc["DP-FedAvg", "epsilon"] > 0
    dp_curve = first.curves[first.curves["method"] == "DP-FedAvg"]
    assert np.all(np.diff(dp_curve["epsilon"]) > 0)
    again = run_comparison("healthcare", **kw)  # from the store
    assert len(list(tmp_path.glob("*.npz"))) == 3
    np.testing.assert_array_equal(again.curves["epsilon"], first.curves["epsilon"])
    model = again.models[("private pTopoFL", 0)]
    assert model.model_dp.get_params() == ClientLevelDP(noise_multiplier=1.0,
                                                        clip=0.5).get_params()
    assert list(model.accountants_[0].events()["channel"]) == ["descriptor", "model",
                                                               "model"]


# -- bad parameters ------------------------------------------------------------------

NAN = float("nan")


@pytest.mark.parametrize("make, match", [
    (lambda: ClientLevelDP(clip=0.0), "clip must be > 0.0, got 0.0"),
    (lambda: ClientLevelDP(clip=-1.0), "clip must be > 0.0, got -1.0"),
    (lambda: ClientLevelDP(clip=math.inf), "clip must be finite, got inf"),
    (lambda: ClientLevelDP(noise_multiplier=-0.5), "noise_multiplier must be >= 0.0, got -0.5"),
    (lambda: ClientLevelDP(noise_multiplier=NAN), "noise_multiplier must be finite, got nan"),
    (lambda: ClientLevelDP(sample_rate=0.0), "sample_rate must be > 0.0, got 0.0"),
    (lambda: ClientLevelDP(sample_rate=1.2), "sample_rate must be <= 1.0, got 1.2"),
    (lambda: ClientLevelDP(sample_rate=NAN), "sample_rate must be finite, got nan"),
    (lambda: ClientLevelDP(delta=0.0), "delta must be > 0.0, got 0.0"),
    (lambda: ClientLevelDP(delta=1.0), "delta must be < 1.0, got 1.0"),
    (lambda: SampleLevelDP(delta=NAN), "delta must be finite, got nan"),
    (lambda: SampleLevelDP(clip=NAN), "clip must be finite, got nan"),
    (lambda: SampleLevelDP(noise_multiplier=1e200, clip=1e200), "overflows float64"),
    (lambda: SampleLevelDP(accounting="moments"), "accounting"),
])
def test_bad_parameters_name_the_parameter_and_value(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_options_are_refused_before_anything_runs(healthcare):
    dp = ClientLevelDP()
    dp.clip = -2.0  # set after construction: caught when the fit starts
    with pytest.raises(ValueError, match="clip must be > 0.0, got -2.0"):
        FedAvg(model_dp=dp).fit(healthcare)
    with pytest.raises(TypeError, match="model_dp must be None, a ClientLevelDP or a "
                                        "SampleLevelDP"):
        FedAvg(model_dp=GaussianMechanism(1.0)).fit(healthcare)
    with pytest.raises(ValueError, match="needs solver='sgd', got solver='lbfgs'"):
        PTopoFL(solver="lbfgs", model_dp=SampleLevelDP()).fit(healthcare)

    class Releases:
        def release(self, x, random_state=None):
            return x

    with pytest.raises(TypeError, match="needs a privacy_event"):
        PTopoFL(descriptor_mechanism=Releases(), model_dp=dp.set_params(clip=1.0)).fit(
            healthcare)


def test_sample_level_dp_refuses_what_couples_records(healthcare):
    """Issue 45: pTopoFL's augmentation and per-client standardisation build every record's
    features from the client's whole data, so removing one record moves every example's
    gradient; the accountant's bound (the clip) does not hold, and the fit is refused."""
    with pytest.raises(ValueError, match=r"augment=True builds every record's four extra "
                                         r"features .* pass augment=False, or use "
                                         r"ClientLevelDP"):
        PTopoFL(model_dp=SampleLevelDP()).fit(healthcare)
    with pytest.raises(ValueError, match=r"standardise=True scales every record by its "
                                         r"client's mean"):
        FedAvg(standardise=True, model_dp=SampleLevelDP()).fit(healthcare)
    paper = make_healthcare(n_clients=4, protocol="paper", random_state=0)
    assert paper.meta["evaluation"]["standardise"]  # the paper protocol standardises
    with pytest.raises(ValueError, match=r"the scenario asks for standardise=True; pass "
                                         r"standardise=False"):
        FedAvg(n_rounds=1, model_dp=SampleLevelDP()).fit(paper)
    # what stays allowed: client-level DP covers the whole client, so both are fine there
    PTopoFL(n_rounds=1, model_dp=ClientLevelDP(), random_state=0).fit(healthcare)
    FedAvg(n_rounds=1, standardise=False, model_dp=SampleLevelDP(), random_state=0).fit(paper)


def test_without_coupling_one_record_moves_a_clipped_batch_sum_by_at_most_the_clip(healthcare):
    """What the accountant assumes, checked on the learner DP-SGD uses: with features that
    depend on each record alone, removing one record outside a batch leaves the clipped
    sum unchanged and removing one inside moves it by at most the clip."""
    est = FedAvg(n_rounds=1, model_dp=SampleLevelDP(clip=0.5), random_state=0).fit(healthcare)
    learner, client = est.learner_, healthcare.clients[0]
    X, y = client.X_train, client.y_train
    rng = np.random.default_rng(0)
    w = rng.normal(size=X.shape[1] + 1)
    batch = np.sort(rng.choice(len(y), size=32, replace=False))
    full = learner.clipped_gradient_sum(w, learner.client_data(X, y), batch, 0.5)
    for removed in range(len(y)):
        keep = np.delete(np.arange(len(y)), removed)
        data = learner.client_data(X[keep], y[keep])
        idx = np.searchsorted(keep, batch[batch != removed])
        moved = np.linalg.norm(learner.clipped_gradient_sum(w, data, idx, 0.5) - full)
        assert moved <= 0.5 + 1e-12 if removed in batch else moved == 0.0


# -- networks ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def digits():
    pytest.importorskip("torch")
    from topofl_lib.deep import make_image_scenario

    return make_image_scenario("digits", "iid", 3, random_state=0)


def _network(**kw):
    from topofl_lib.deep import TorchModel

    params = {"n_rounds": 2, "lr": 0.05, "local_epochs": 1, "batch_size": 32,
              "model": TorchModel("digits_cnn"), "random_state": 0}
    return FedAvg(**{**params, **kw})


def test_network_per_example_gradients_are_clipped_autograd_gradients(digits):
    """torch.func's per-example gradients against one autograd pass per example."""
    import torch

    est = _network(n_rounds=1).fit(digits)
    learner, data = est.learner_, est.learner_.client_data(digits.clients[0].X_train,
                                                            digits.clients[0].y_train)
    w, idx = est.coef_.astype(np.float32), np.array([3, 0, 11, 7, 5])
    raw = []
    for i in idx:
        net = learner.load(w)
        net.zero_grad()
        torch.nn.functional.cross_entropy(net(data[0][[i]]), data[1][[i]]).backward()
        raw.append(torch.cat([p.grad.reshape(-1) for p in net.parameters()]).numpy())
    norms = np.linalg.norm(raw, axis=1).astype(np.float64)
    for clip in (HUGE, float(np.median(norms))):
        expected = sum(g * (clip / max(n, clip)) for g, n in zip(raw, norms, strict=True))
        got = learner.clipped_gradient_sum(w, data, idx, clip)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
        one = learner.clipped_gradient_sum(w, data, idx[:1], clip)
        assert np.linalg.norm(one) <= min(clip, norms[0]) * (1 + 1e-5)
    np.testing.assert_allclose(  # no clipping, no noise: the plain mini-batch gradient
        private_gradient(learner, data, SampleLevelDP(noise_multiplier=0.0, clip=HUGE),
                         n=len(digits.clients[0].y_train), batch_size=idx.size,
                         rng=np.random.default_rng(0), to_work=np.array)(w, idx),
        learner.gradient(w, data, idx), rtol=1e-4, atol=1e-6)


def test_networks_train_under_both_options_and_a_seed_fixes_them(digits):
    for dp in (SampleLevelDP(noise_multiplier=0.5, clip=1.0),
               ClientLevelDP(noise_multiplier=0.5, clip=1.0, sample_rate=0.7, noise="central")):
        a, b = _network(model_dp=dp).fit(digits), _network(model_dp=dp).fit(digits)
        np.testing.assert_array_equal(a.coef_, b.coef_)
        np.testing.assert_array_equal(a.history_["client_epsilon"],
                                      b.history_["client_epsilon"])
        assert np.all(np.isfinite(a.history_["epsilon"])) and a.history_["epsilon"][0] > 0


def test_options_a_method_would_bypass_are_refused(healthcare):
    from topofl_lib.federated import CoordinateMedian

    with pytest.raises(ValueError, match="CoordinateMedian does not run"):
        CoordinateMedian(model_dp=ClientLevelDP()).fit(healthcare)
    est = CoordinateMedian(n_rounds=2, random_state=0, model_dp=SampleLevelDP()).fit(healthcare)
    assert np.all(np.isfinite(est.history_["epsilon"]))  # DP-SGD, then the median


def test_the_neighbouring_relation_is_stated_and_selectable(healthcare):
    """Issue 45: every accountant names its relation; replacing a client (sensitivity 2C)
    composes half the multiplier, so its epsilon is that of add/remove at z / 2, and the
    relations the accountant cannot cover are refused, naming the parameter."""
    add = ClientLevelDP(noise_multiplier=2.0)
    replace = ClientLevelDP(noise_multiplier=2.0, relation="replace")
    assert add.round_event()["noise_multiplier"] == 2.0
    assert replace.round_event()["noise_multiplier"] == 1.0
    acc = replace.accountant()
    assert acc.relation == "replace" and "relation='replace'" in repr(acc)
    assert "relation='add_remove'" in repr(add.accountant())
    eps_replace = acc.record({**replace.round_event(), "round": 1}).epsilon(1e-5)
    eps_half = ClientLevelDP(noise_multiplier=1.0).accountant().record(
        {**add.round_event(), "noise_multiplier": 1.0, "round": 1}).epsilon(1e-5)
    assert eps_replace == pytest.approx(eps_half, rel=1e-12)
    est = FedAvg(n_rounds=2, model_dp=replace, random_state=0).fit(healthcare)
    assert all(a.relation == "replace" for a in est.accountants_)
    with pytest.raises(ValueError, match=r"relation='replace' with sample_rate=0.5"):
        ClientLevelDP(sample_rate=0.5, relation="replace")
    with pytest.raises(ValueError, match=r"relation='replace' for SampleLevelDP"):
        SampleLevelDP(relation="replace")
    with pytest.raises(ValueError, match=r"unknown relation 'swap'; expected one of "
                                         r"\['add_remove', 'replace'\]"):
        ClientLevelDP(relation="swap")


@pytest.mark.parametrize("noise", ["distributed", "local"])
def test_no_un_noised_update_reaches_the_server(healthcare, monkeypatch, noise):
    """Issue 45: with the noise at the clients, every message the server receives is a
    weighted clipped update plus that client's own noise (share z C / sqrt(m) or the full
    z C), and the round's sum is the sum of those messages and nothing else."""
    dp = ClientLevelDP(noise_multiplier=2.0, clip=0.5, noise=noise)
    sent, sums = [], []
    messages, noisy_sum = ClientLevelDP.client_messages, ClientLevelDP.noisy_sum

    def spy_messages(self, updates, weights, rng):
        out = messages(self, updates, weights, rng)
        truth = np.asarray(weights)[:, None] * clip_norm(np.asarray(updates), self.clip)
        sent.append((out, truth))
        return out

    def spy_sum(self, updates, weights, rng):
        total = noisy_sum(self, updates, weights, rng)
        sums.append(total)
        return total

    monkeypatch.setattr(ClientLevelDP, "client_messages", spy_messages)
    monkeypatch.setattr(ClientLevelDP, "noisy_sum", spy_sum)
    FedAvg(n_rounds=3, model_dp=dp, random_state=0).fit(healthcare)
    K = len(healthcare.clients)
    share = 2.0 * 0.5 / (math.sqrt(K) if noise == "distributed" else 1.0)
    residuals = np.concatenate([(out - truth).ravel() for out, truth in sent])
    assert len(sent) == len(sums) == 3 and all(out.shape[0] == K for out, _ in sent)
    assert np.all(residuals != 0.0)  # no coordinate of any message is un-noised
    assert np.std(residuals) == pytest.approx(share, rel=0.2)
    for (out, _), total in zip(sent, sums, strict=True):
        np.testing.assert_allclose(total, out.sum(axis=0), rtol=0, atol=1e-12)


def test_the_accountant_reports_the_epsilon_against_the_server(healthcare):
    """Both epsilons: of the released sum (the same for every placement of the noise)
    and against the server (infinite with central noise: it sees each clipped update;
    each client's share with distributed noise; the release's with local noise)."""
    eps = {noise: FedAvg(n_rounds=2, random_state=0, model_dp=ClientLevelDP(
        noise_multiplier=2.0, clip=0.5, noise=noise)).fit(healthcare).history_
        for noise in NOISE_PLACEMENTS}
    for noise in NOISE_PLACEMENTS:
        np.testing.assert_allclose(eps[noise]["epsilon"], eps["central"]["epsilon"])
    assert np.all(np.isinf(eps["central"]["epsilon_server"]))
    np.testing.assert_allclose(eps["local"]["epsilon_server"], eps["local"]["epsilon"])
    K = len(healthcare.clients)
    share = ClientLevelDP(noise_multiplier=2.0 / math.sqrt(K)).accountant()
    for r in (1, 2):
        share.record({**ClientLevelDP(noise_multiplier=2.0 / math.sqrt(K)).round_event(),
                      "round": r})
    assert eps["distributed"]["epsilon_server"][-1] == pytest.approx(share.epsilon(1e-5))
    assert eps["distributed"]["epsilon_server"][-1] > eps["distributed"]["epsilon"][-1]
    with pytest.raises(ValueError, match=r"noise='distributed' with sample_rate=0.5"):
        ClientLevelDP(sample_rate=0.5, noise="distributed")
    with pytest.raises(ValueError, match=r"unknown noise 'server'"):
        ClientLevelDP(noise="server")


def test_one_clients_message_and_a_sum_with_dropouts():
    """A client's message is its weighted clipped update plus its own share (the same
    numbers ``client_messages`` draws for a group, client after client); a sum to which
    only some of the m messages arrived carries that fraction of the noise's variance,
    and is accounted so: the multiplier scales by sqrt(received / m) under distributed
    noise, not at all under local noise."""
    rng = np.random.default_rng(0)
    updates, weights = rng.normal(size=(4, 6)), np.array([1.0, 0.5, 0.25, 1.0])
    dp = ClientLevelDP(noise_multiplier=1.5, clip=0.4)
    group = dp.client_messages(updates, weights, np.random.default_rng(7))
    one_by_one = np.random.default_rng(7)
    for k in range(4):
        np.testing.assert_array_equal(
            dp.client_message(updates[k], weights[k], 4, one_by_one), group[k])
    silent = ClientLevelDP(noise_multiplier=0.0, clip=0.4)
    alone = silent.client_message(updates[0] * 100, 0.5, 4, rng)
    assert np.linalg.norm(alone) == pytest.approx(0.5 * 0.4)
    assert dp.release_event(4, 4) == dp.round_event()
    assert dp.release_event(3, 4)["noise_multiplier"] == pytest.approx(1.5 * math.sqrt(0.75))
    local = ClientLevelDP(noise_multiplier=1.5, clip=0.4, noise="local")
    assert local.release_event(1, 4) == local.round_event()
    with pytest.raises(ValueError, match="received must be"):
        dp.release_event(5, 4)
    with pytest.raises(ValueError, match="weight must be"):
        dp.client_message(updates[0], 1.5, 4, rng)
    with pytest.raises(ValueError, match="update must be one vector"):
        dp.client_message(updates, 1.0, 4, rng)
    with pytest.raises(ValueError, match="noise='central' sends the clipped updates"):
        ClientLevelDP(noise="central").client_message(updates[0], 1.0, 4, rng)
