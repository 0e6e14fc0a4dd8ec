"""Robust aggregators, attacks, drift-triggered re-clustering and the theorem checks."""

import numpy as np
import pytest

from topofl_lib import FedAvg, PTopoFL
from topofl_lib.data import Client, FederatedScenario, make_continual, make_healthcare
from topofl_lib.experiments import run_comparison
from topofl_lib.federated import CoordinateMedian, Krum, TrimmedMean
from topofl_lib.theory import (
    adversarial_separation,
    clustering_stability,
    theorem5_bound,
    weighted_variance_identity,
)


def _stream_scenario(shift: bool, n_rounds: int = 12, seed: int = 0) -> FederatedScenario:
    """Four clients that draw fresh Gaussian records every round; with ``shift`` client 0
    switches to a noisy circle (a loop: a large H1 change) from round 6 on."""
    rng = np.random.default_rng(seed)

    def client(k, r):
        if shift and k == 0 and r >= 6:
            t = rng.uniform(0, 2 * np.pi, 100)
            X = np.c_[3 * np.cos(t), 3 * np.sin(t), rng.normal(scale=0.1, size=(100, 3))]
        else:
            X = rng.normal(size=(100, 5))
        y = (X[:, 0] + rng.normal(size=100) > 0).astype(int)
        return Client(X[:70], y[:70], X[70:], y[70:])

    rounds = [[client(k, r) for k in range(4)] for r in range(n_rounds)]
    return FederatedScenario("stream", rounds[0], {}, {r: rounds[r] for r in range(1, n_rounds)})


@pytest.mark.parametrize("shift", [True, False])
def test_drift_trigger_fires_only_on_a_real_change(shift):
    """The drift statistic crosses the threshold after a distribution change and never
    with sampling noise alone; re-clustering happens exactly when it crosses."""
    scen = _stream_scenario(shift)
    est = PTopoFL(n_rounds=12, n_clusters=2, drift_threshold=0.2, random_state=0).fit(scen)
    stat = np.nan_to_num(est.drift_statistic_, nan=0.0)
    if shift:
        assert stat[:, 0].max() > 0.2
        assert stat[:6].max() <= 0.2  # quiet before the change
        assert est.recluster_rounds_ and min(est.recluster_rounds_) > 6
    else:
        assert stat.max() < 0.2
        assert est.recluster_rounds_ == []


def test_static_data_gives_zero_drift():
    """With unchanged data the cached descriptors make Eq. 9 drift exactly 0."""
    est = PTopoFL(n_rounds=4, random_state=0).fit(make_healthcare(random_state=0))
    assert np.all(est.drift_ == 0.0)


def test_continual_scenario_schedule():
    """make_continual switches exactly the shifted clients' test data at the shift round."""
    scen = make_continual(n_rounds=6, shift_round=3, random_state=0)
    before, after = scen.clients_at(2), scen.clients_at(3)
    for k in range(len(scen.clients)):
        same_test = np.array_equal(before[k].X_test, after[k].X_test)
        assert same_test == (k not in scen.meta["shifted"])
        assert not np.array_equal(scen.clients_at(1)[k].X_train, before[k].X_train)


def test_theorem6_identity_on_real_client_updates():
    """Theorem 6 holds to machine precision on models returned by real clients."""
    est = PTopoFL(n_rounds=3, random_state=1).fit(make_healthcare(random_state=1))
    res = weighted_variance_identity(est.local_models_, est.consensus_weights_)
    assert abs(res["residual"]) < 1e-10 * max(1.0, res["weighted_variance"])
    assert np.isclose(est.consensus_weights_.sum(), 1.0)


def test_weighted_variance_identity_validates():
    """Weights must be a probability vector of matching length."""
    with pytest.raises(ValueError, match="alpha"):
        weighted_variance_identity(np.ones((3, 2)), [0.5, 0.6, -0.1])
    with pytest.raises(ValueError, match="alpha"):
        weighted_variance_identity(np.ones((3, 2)), [0.5, 0.5])


def test_theorem5_bound_values():
    """The bound equals eps with no separation and decreases with separation. At
    lam*Delta = log((1-eps)/eps) it equals eps^2 / ((1-eps)^2 + eps^2), which is *larger*
    than eps^2 for every eps in (0, 1): the theorem's "moreover ... <= eps^2" is false."""
    assert theorem5_bound(0.25, 0.0) == pytest.approx(0.25)
    assert theorem5_bound(0.25, 2.0) < theorem5_bound(0.25, 1.0)
    for eps in (0.05, 0.2, 0.4):
        value = theorem5_bound(eps, np.log((1 - eps) / eps))
        assert value == pytest.approx(eps**2 / ((1 - eps) ** 2 + eps**2))
        assert value > eps**2
        corrected = np.log((1 - eps**2) / (eps * (1 - eps)))
        assert theorem5_bound(eps, corrected) == pytest.approx(eps**2)


def test_adversarial_separation_sign():
    """An adversary far from a tight honest group has positive separation."""
    pts = np.r_[np.zeros((5, 2)) + np.random.default_rng(0).normal(scale=0.01, size=(5, 2)),
                [[5.0, 5.0]]]
    D = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    sep = adversarial_separation(D, [0, 0, 0, 0, 0, 1])
    assert sep["delta_sep"] > 0 and sep["lam_delta"] > 0


def test_clustering_stability_small_and_large_perturbations():
    """Two tight, far-apart groups never change under small perturbations."""
    rng = np.random.default_rng(0)
    Phi = np.r_[np.tile([1.0, 0, 0], (4, 1)), np.tile([0, 1.0, 0], (4, 1))]
    Phi = Phi + rng.normal(scale=0.01, size=Phi.shape)
    df = clustering_stability(Phi, 2, [0.05, 2.0], n_trials=20, random_state=0)
    assert df.loc[0, "changed"] == 0.0
    assert df.loc[0, "eta_over_margin"] < 0.5
    assert df.loc[1, "changed"] > 0.0


def test_sign_flip_attack_is_applied_by_the_engine():
    """A sign-flipping adversary ruins FedAvg but not the coordinate median."""
    scen = make_healthcare(n_clients=10, n_adversarial=3, attack="sign_flip", random_state=0)
    fedavg = FedAvg(n_rounds=5, random_state=0).fit(scen).history_["auc"][-1]
    median = CoordinateMedian(n_rounds=5, random_state=0).fit(scen).history_["auc"][-1]
    clean = FedAvg(n_rounds=5, random_state=0).fit(
        make_healthcare(n_clients=10, n_adversarial=0, random_state=0)).history_["auc"][-1]
    assert fedavg < clean - 0.05
    assert median > fedavg


def test_robust_aggregators_on_identical_models():
    """Median, trimmed mean and Krum of identical models return that model."""
    local = np.tile(np.arange(5.0), (6, 1))
    for cls in (CoordinateMedian, TrimmedMean, Krum):
        est = cls()
        assert np.allclose(est._aggregate(local), np.arange(5.0))


def test_krum_rejects_an_outlier():
    """Krum never selects a model far from all the others."""
    rng = np.random.default_rng(0)
    local = np.r_[rng.normal(size=(6, 4)), [[100.0, 100, 100, 100]]]
    est = Krum(n_byzantine=1)
    est._aggregate(local)
    assert est.selected_ != 6


def test_unknown_attack_and_variants_errors():
    """Bad attack names and malformed variants raise clear errors."""
    with pytest.raises(ValueError, match="attack"):
        make_healthcare(attack="teleport", random_state=0)
    with pytest.raises(ValueError, match="variants"):
        run_comparison("healthcare", [0], variants={"x": "pTopoFL"}, progress=False)
    with pytest.raises(ValueError, match="unknown method"):
        run_comparison("healthcare", [0], variants={"x": ("Nope", {})}, progress=False)
    with pytest.raises(ValueError, match="drift_threshold"):
        PTopoFL(drift_threshold=-1.0).fit(make_healthcare(random_state=0))


def test_adversarial_separation_checks_the_mask():
    """A mask of the wrong length is refused (it used to give NaN silently)."""
    with pytest.raises(ValueError, match=r"adversarial \(K,\)"):
        adversarial_separation(np.zeros((3, 3)), [True])
