"""Privacy accounting (topofl_lib.privacy.accounting) against independent references.

The references are computed here without the accountant under test: the exact epsilon
of a Gaussian mechanism of multiplier ``z`` (Balle & Wang 2018: the smallest epsilon
with ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) <= delta``, ``mu = 1/z``), solved
with scipy; the composition of ``k`` Gaussians of multiplier ``z``, which is exactly one
Gaussian of multiplier ``z / sqrt(k)``; basic composition of pure-DP Laplace releases;
and Opacus's accountants fed the same releases step by step, as its users do.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from topofl_lib import FedAvg, PTopoFL, make_healthcare
from topofl_lib.privacy import (
    ClientLevelDP,
    GaussianMechanism,
    LaplaceMechanism,
    PrivacyAccountant,
    analytic_gaussian_sigma,
    calibrate_noise_multiplier,
)
from topofl_lib.privacy.accounting import check_event, compose

opacus = pytest.importorskip("opacus.accountants")

DELTA = 1e-5


def exact_gaussian_epsilon(z: float, delta: float) -> float:
    """Epsilon of one Gaussian release of multiplier ``z`` at ``delta`` (Balle & Wang)."""
    mu = 1.0 / z

    def excess(eps):  # e^eps * Phi(.) in log space: e^eps overflows beyond 709
        return (norm.cdf(mu / 2 - eps / mu)
                - math.exp(eps + norm.logcdf(-mu / 2 - eps / mu)) - delta)

    return brentq(excess, 0.0, 1e7, xtol=1e-12)


def by_hand(kind: str, steps: list[tuple[float, float]], delta: float = DELTA) -> float:
    """Opacus's accountant fed one ``step`` per release, as in an Opacus training loop."""
    acc = opacus.PRVAccountant() if kind == "prv" else opacus.RDPAccountant()
    for z, q in steps:
        acc.step(noise_multiplier=z, sample_rate=q)
    with np.errstate(divide="ignore"):  # the library's log(0) at the domain's edge
        return (acc.get_epsilon(delta, eps_error=0.01) if kind == "prv"
                else acc.get_epsilon(delta))


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_our_calibration_agrees_with_the_library(epsilon):
    """One release with our analytic sigma: the library's epsilon is the target, to the
    accuracy asked of it (PRV's bound lies within eps_error above the exact value)."""
    z = analytic_gaussian_sigma(epsilon, DELTA, 1.0)
    got = PrivacyAccountant(eps_error=1e-3).gaussian(z).epsilon(DELTA)
    assert epsilon - 1e-3 <= got <= epsilon + 2e-3
    assert exact_gaussian_epsilon(z, DELTA) == pytest.approx(epsilon, abs=1e-6)
    mech = GaussianMechanism(epsilon, DELTA)  # sensitivity 2: the same multiplier
    assert mech.privacy_event()["noise_multiplier"] == pytest.approx(z, rel=1e-9)
    assert (PrivacyAccountant(eps_error=1e-3).record(
        {**mech.privacy_event(), "round": 0, "channel": "descriptor"}).epsilon(DELTA)
        == pytest.approx(got, abs=1e-9))


@pytest.mark.parametrize("k", [1, 4, 15])
def test_k_gaussians_compose_to_one_of_multiplier_z_over_sqrt_k(k):
    z = 3.0
    exact = exact_gaussian_epsilon(z / math.sqrt(k), DELTA)
    acc = PrivacyAccountant(eps_error=1e-3)
    for r in range(k):
        acc.gaussian(z, round=r + 1)
    prv = acc.epsilon(DELTA)
    assert exact - 1e-3 <= prv <= exact + 2e-3
    single = PrivacyAccountant(eps_error=1e-3).gaussian(z / math.sqrt(k)).epsilon(DELTA)
    assert prv == pytest.approx(single, abs=2e-3)
    rdp = PrivacyAccountant("rdp")
    for r in range(k):
        rdp.gaussian(z, round=r + 1)
    assert exact <= rdp.epsilon(DELTA) <= 1.3 * exact  # RDP: a valid, looser bound


def test_laplace_releases_compose_by_basic_composition():
    acc = PrivacyAccountant()
    for r in range(5):
        acc.laplace(0.7, round=r, channel="descriptor")
    assert acc.epsilon(DELTA) == pytest.approx(5 * 0.7, rel=1e-12)
    assert acc.epsilon(DELTA) <= 5 * 0.7  # the pure-DP bound is never exceeded
    acc.gaussian(4.0, round=5, channel="model")
    gauss = PrivacyAccountant().gaussian(4.0).epsilon(DELTA)
    assert acc.epsilon(DELTA) == pytest.approx(3.5 + gauss, rel=1e-12)
    assert acc.epsilon(DELTA, channel="model") == pytest.approx(gauss, rel=1e-12)
    assert LaplaceMechanism(0.7).privacy_event() == {"mechanism": "laplace", "epsilon": 0.7}


@pytest.mark.parametrize("kind", ["prv", "rdp"])
def test_subsampled_releases_equal_the_library_fed_by_hand(kind):
    """A descriptor release, then DP-SGD-like rounds of subsampled steps."""
    acc = PrivacyAccountant(kind).gaussian(2.5, round=0, channel="descriptor")
    steps = [(2.5, 1.0)]
    for r in range(1, 4):
        acc.gaussian(1.1, sample_rate=0.2, count=6, round=r)
        steps += [(1.1, 0.2)] * 6
    assert acc.epsilon(DELTA) == pytest.approx(by_hand(kind, steps), rel=1e-6)


def test_unprotected_and_noiseless_releases_have_infinite_epsilon():
    assert PrivacyAccountant().epsilon(DELTA) == 0.0
    assert PrivacyAccountant().unprotected().epsilon(DELTA) == math.inf
    assert PrivacyAccountant().gaussian(0.0).epsilon(DELTA) == math.inf
    acc = PrivacyAccountant().unprotected(channel="descriptor").gaussian(5.0, round=1)
    assert acc.epsilon(DELTA, channel="descriptor") == math.inf
    assert math.isfinite(acc.epsilon(DELTA, channel="model"))


def test_history_is_cumulative_per_round_and_channel():
    acc = PrivacyAccountant().gaussian(2.0, round=0, channel="descriptor")
    for r in range(1, 4):
        acc.gaussian(3.0, round=r, channel="model")
    h = acc.history(DELTA)
    assert list(h["round"]) == [1, 2, 3] and set(h["delta"]) == {DELTA}
    assert np.all(np.diff(h["epsilon"]) > 0) and np.all(np.diff(h["epsilon_model"]) > 0)
    assert np.ptp(h["epsilon_descriptor"]) == 0
    assert np.all(h["epsilon"] >= h[["epsilon_descriptor", "epsilon_model"]].max(axis=1))
    assert np.all(h["epsilon"] <= h["epsilon_descriptor"] + h["epsilon_model"] + 1e-9)
    assert h["epsilon"].iloc[1] == acc.epsilon(DELTA, through_round=2)
    events = acc.events()
    assert list(events["channel"]) == ["descriptor"] + ["model"] * 3
    assert list(events["round"]) == [0, 1, 2, 3]


@pytest.mark.parametrize("kind, q", [("prv", 1.0), ("rdp", 0.5)])
def test_calibrated_noise_spends_the_target(kind, q):
    z = calibrate_noise_multiplier(3.0, DELTA, steps=15, sample_rate=q, accounting=kind)
    acc = PrivacyAccountant(kind)
    acc.gaussian(z, sample_rate=q, count=15)
    assert 3.0 - 0.02 <= acc.epsilon(DELTA) <= 3.0


def test_a_dp_fedavg_run_is_accounted_as_the_library_composes_its_rounds():
    scenario = make_healthcare(n_clients=4, n_adversarial=0, random_state=0)
    dp = ClientLevelDP(noise_multiplier=1.3, clip=0.5, sample_rate=0.5, noise="central")
    est = FedAvg(n_rounds=3, model_dp=dp, random_state=0).fit(scenario)
    for r in range(1, 4):
        expected = by_hand("prv", [(1.3, 0.5)] * r)
        assert est.history_["epsilon"][r - 1] == pytest.approx(expected, rel=1e-6)
        assert np.all(est.history_["client_epsilon"][r - 1] == est.history_["epsilon"][r - 1])
    assert np.all(est.history_["epsilon_descriptor"] == 0)  # FedAvg sends no descriptor


def test_a_private_ptopofl_run_counts_both_channels():
    scenario = make_healthcare(n_clients=4, n_adversarial=1, random_state=0)
    mech = GaussianMechanism(2.0, DELTA)
    est = PTopoFL(n_rounds=2, descriptor_mechanism=mech, random_state=0,
                  model_dp=ClientLevelDP(noise_multiplier=2.0, clip=0.5)).fit(scenario)
    z_d = mech.sigma / mech.sensitivity
    for r in (1, 2):
        expected = by_hand("prv", [(z_d, 1.0)] + [(2.0, 1.0)] * r)
        assert est.history_["epsilon"][r - 1] == pytest.approx(expected, rel=1e-6)
    events = est.accountants_[0].events()
    assert list(events["channel"]) == ["descriptor", "model", "model"]  # one release
    clear = PTopoFL(n_rounds=2, random_state=0, track_signatures=False,
                    model_dp=ClientLevelDP(noise_multiplier=2.0, clip=0.5)).fit(scenario)
    assert np.all(clear.history_["epsilon"] == math.inf)  # descriptors in the clear
    assert np.all(np.isfinite(clear.history_["epsilon_model"]))


@pytest.mark.parametrize("call, match", [
    (lambda: PrivacyAccountant().gaussian(-1.0), "noise_multiplier must be >= 0.0, got -1.0"),
    (lambda: PrivacyAccountant().gaussian(math.nan), "noise_multiplier must be finite, got nan"),
    (lambda: PrivacyAccountant().gaussian(1.0, sample_rate=0.0), "sample_rate must be > 0.0"),
    (lambda: PrivacyAccountant().gaussian(1.0, sample_rate=1.5), "sample_rate must be <= 1.0"),
    (lambda: PrivacyAccountant().laplace(0.0), "epsilon must be > 0.0, got 0.0"),
    (lambda: PrivacyAccountant().gaussian(1.0, channel="labels"), "channel"),
    (lambda: PrivacyAccountant().epsilon(0.0), "delta must be > 0.0, got 0.0"),
    (lambda: PrivacyAccountant().epsilon(1.0), "delta must be < 1.0, got 1.0"),
    (lambda: PrivacyAccountant().epsilon(float("nan")), "delta must be finite, got nan"),
    (lambda: PrivacyAccountant("moments"), "accounting"),
    (lambda: PrivacyAccountant(eps_error=-0.1), "eps_error must be > 0.0, got -0.1"),
    (lambda: check_event({"mechanism": "gaussian", "noise_multiplier": 1.0, "round": 0,
                          "channel": "model", "sigma": 2.0}), "unknown fields"),
    (lambda: calibrate_noise_multiplier(1.0, 2.0, steps=3), "delta must be < 1.0, got 2.0"),
    # Opacus's search never ends at 1e20 (it cannot resolve the tolerance there)
    (lambda: calibrate_noise_multiplier(1e20, 1e-5, steps=10, accounting="rdp"),
     r"target_epsilon must be <= 10000.0, got 1e\+20"),
])
def test_bad_input_names_the_parameter_and_value(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_compose_is_order_free_and_cached():
    events = [check_event({"mechanism": "gaussian", "noise_multiplier": z, "sample_rate": q,
                           "round": 1, "channel": "model"})
              for z, q in [(1.0, 0.3), (2.0, 1.0), (1.0, 0.3)]]
    assert compose(events, DELTA) == compose(events[::-1], DELTA)


def test_prv_returns_the_rdp_bound_where_there_is_no_meaningful_privacy():
    """Noise multiplier 0.001: PRV's domain would take gigabytes; the RDP bound (above
    PRV_LIMIT) is returned, and it is a valid one (the exact epsilon is below it)."""
    from topofl_lib.privacy.accounting import PRV_LIMIT

    prv = PrivacyAccountant().gaussian(1e-3).epsilon(DELTA)
    assert prv == PrivacyAccountant("rdp").gaussian(1e-3).epsilon(DELTA) > PRV_LIMIT
    assert exact_gaussian_epsilon(1e-3, DELTA) <= prv
