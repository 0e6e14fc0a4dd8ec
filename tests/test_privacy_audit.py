"""The audit of a DP guarantee: the epsilon lower bound that an attack's error rates imply.

Properties checked: the one-sided Clopper-Pearson bounds equal their closed forms and
SciPy's exact binomial intervals; the implied epsilon of known rates; monotonicity (a
stronger attack, more trials, a lower confidence, a smaller delta never lower the bound);
on a Gaussian mechanism of known epsilon the bound never exceeds it over many trials
and is clearly positive at large epsilon; bad input is named. The attacks' DP hook:
objects are privatised exactly as the DP options do, a strong attack in the clear is
certified and the same attack against heavy noise is not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from topofl_lib.federated.metrics import roc_auc
from topofl_lib.privacy import (
    ClientLevelDP,
    GaussianMechanism,
    LaplaceMechanism,
    analytic_gaussian_sigma,
    clip_norm,
    clopper_pearson,
    empirical_epsilon,
    epsilon_from_rates,
    gaussian_mechanism_audit,
    gradient_inversion_experiment,
    held_out_epsilon,
    membership_experiment,
    membership_inference,
)
from topofl_lib.privacy.attacks import release_map
from topofl_lib.privacy.audit import client_dp_audit, descriptor_audit, design_epsilon
from topofl_lib.privacy.defects import DEFECTS, planted_defect
from topofl_lib.topology.distances import normalise_descriptors

# -- Clopper-Pearson ------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 7, 50, 400])
def test_clopper_pearson_closed_forms_at_the_extremes(n):
    """k = 0: the upper bound solves (1 - p)^n = alpha; k = n: the lower bound p^n = alpha."""
    for alpha in (0.05, 0.01):
        assert clopper_pearson(0, n, alpha, "upper") == pytest.approx(1 - alpha ** (1 / n))
        assert clopper_pearson(n, n, alpha, "lower") == pytest.approx(alpha ** (1 / n))
        assert clopper_pearson(0, n, alpha, "lower") == 0.0
        assert clopper_pearson(n, n, alpha, "upper") == 1.0


@pytest.mark.parametrize("k, n", [(3, 10), (17, 50), (250, 400), (1, 2)])
def test_clopper_pearson_equals_the_exact_one_sided_binomial_interval(k, n):
    lower = binomtest(k, n, alternative="greater").proportion_ci(0.95, "exact").low
    upper = binomtest(k, n, alternative="less").proportion_ci(0.95, "exact").high
    assert clopper_pearson(k, n, 0.05, "lower") == pytest.approx(lower, rel=1e-10)
    assert clopper_pearson(k, n, 0.05, "upper") == pytest.approx(upper, rel=1e-10)
    both = clopper_pearson(np.array([k, k]), n, 0.05, "lower")
    np.testing.assert_allclose(both, lower, rtol=1e-10)


# -- the implied epsilon --------------------------------------------------------------


def test_epsilon_from_known_rates():
    assert epsilon_from_rates(0.5, 0.05, 1e-12) == pytest.approx(math.log(10), rel=1e-9)
    # the second expression, (1 - fpr - delta) / (1 - tpr) = 0.5 / 0.05, beats the first
    assert epsilon_from_rates(0.95, 0.5, 1e-12) == pytest.approx(math.log(10), rel=1e-9)
    assert epsilon_from_rates(0.3, 0.3, 1e-5) == 0.0  # a coin flip certifies nothing
    assert epsilon_from_rates(0.2, 0.6, 1e-5) == 0.0  # worse than a coin: no bound either
    assert epsilon_from_rates(0.5, 0.0, 1e-5) == math.inf  # no finite epsilon allows it
    delta = 0.1
    assert epsilon_from_rates(0.5, 0.05, delta) == pytest.approx(math.log(0.4 / 0.05))


def _scores(shift, n, seed):
    rng = np.random.default_rng(seed)
    members = np.arange(n) % 2 == 0
    return members * shift + rng.standard_normal(n), members


def test_the_bound_grows_with_the_attack_and_the_trials_and_falls_with_confidence():
    grid = np.linspace(-2, 6, 17)
    base = empirical_epsilon(*_scores(2.0, 2000, 0), 1e-5, thresholds=grid)["epsilon_lb"]
    stronger = empirical_epsilon(*_scores(4.0, 2000, 0), 1e-5, thresholds=grid)["epsilon_lb"]
    more = empirical_epsilon(*_scores(2.0, 20000, 0), 1e-5, thresholds=grid)["epsilon_lb"]
    assert 0 < base < stronger and base < more
    scores, members = _scores(2.0, 2000, 0)
    by_alpha = [empirical_epsilon(scores, members, 1e-5, thresholds=grid,
                                  alpha=a)["epsilon_lb"] for a in (0.001, 0.01, 0.05, 0.2)]
    assert np.all(np.diff(by_alpha) > 0)
    by_delta = [empirical_epsilon(scores, members, d, thresholds=grid)["epsilon_lb"]
                for d in (1e-8, 1e-4, 1e-2, 0.2)]
    assert np.all(np.diff(by_delta) <= 0) and by_delta[-1] < by_delta[0]


def test_one_threshold_reports_its_own_rates():
    scores = np.array([0.1, 0.9, 0.8, 0.2, 0.7, 0.3])
    members = np.array([False, True, True, False, True, False])
    out = empirical_epsilon(scores, members, 1e-5, thresholds=[0.5])
    assert (out["tpr"], out["fpr"], out["n_members"], out["n_nonmembers"]) == (1.0, 0.0, 3, 3)
    assert out["tpr_low"] == pytest.approx(0.025 ** (1 / 3))  # alpha / 2 per side
    assert out["fpr_high"] == pytest.approx(1 - 0.025 ** (1 / 3))
    assert out["epsilon_lb"] == pytest.approx(epsilon_from_rates(out["tpr_low"],
                                                                 out["fpr_high"], 1e-5))


# -- a mechanism of known epsilon ----------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0, 8.0])
def test_the_bound_never_exceeds_the_epsilon_of_a_gaussian_mechanism(epsilon):
    """The analytic Gaussian mechanism's sigma makes it exactly (epsilon, delta)-DP; its
    strongest attack, audited over 20,000 releases and five seeds, stays below."""
    sigma = analytic_gaussian_sigma(epsilon, 1e-5, 1.0)
    for seed in range(5):
        out = gaussian_mechanism_audit(sigma, 1e-5, n_trials=20_000, random_state=seed)
        assert 0 <= out["epsilon_lb"] <= epsilon <= out["epsilon"]
        fixed = empirical_epsilon(*_scores(1.0 / sigma, 20_000, seed), 1e-5,
                                  thresholds=np.linspace(-1, 6, 29))
        assert fixed["epsilon_lb"] <= epsilon
    if epsilon >= 4:  # and it is clearly positive: the accounting is nearly tight here
        assert out["epsilon_lb"] > epsilon / 3


def test_the_audit_is_fixed_by_its_seed():
    a = gaussian_mechanism_audit(1.0, 1e-5, n_trials=500, random_state=3)
    b = gaussian_mechanism_audit(1.0, 1e-5, n_trials=500, random_state=3)
    assert a == b
    scores, members = _scores(1.0, 200, 1)
    assert held_out_epsilon(scores, members, 1e-5, random_state=4) == held_out_epsilon(
        scores, members, 1e-5, random_state=4)


def test_the_held_out_bound_uses_half_of_each_kind():
    scores, members = _scores(1.0, 101, 2)
    out = held_out_epsilon(scores, members, 1e-5, random_state=0)
    assert out["n_thresholds"] == 1
    assert (out["n_members"], out["n_nonmembers"]) == (51 - 25, 50 - 25)


# -- the attacks' DP hook -----------------------------------------------------------


def test_a_gradient_is_privatised_as_dp_fedavg_releases_one_update():
    T = np.array([3.0, -4.0, 0.0, 12.0])  # norm 13
    dp = ClientLevelDP(noise_multiplier=2.0, clip=1.3)
    out = release_map("gradient", dp)(T, np.random.default_rng(7))
    same = dp.noisy_sum(T[None, :], np.ones(1), np.random.default_rng(7))
    np.testing.assert_array_equal(out, same)
    exact = release_map("gradient", ClientLevelDP(0.0, clip=1.3))(T, np.random.default_rng(0))
    np.testing.assert_allclose(exact, clip_norm(T, 1.3)[0], rtol=1e-15)
    assert np.linalg.norm(exact) == pytest.approx(1.3)
    assert release_map("gradient")(T, None) is T  # in the clear: nothing drawn


@pytest.mark.parametrize("mechanism", [GaussianMechanism(2.0), LaplaceMechanism(2.0)])
def test_a_descriptor_is_privatised_as_ptopofl_releases_it(mechanism):
    phi = np.random.default_rng(1).random(48) * 5
    out = release_map("descriptor", mechanism)(phi, np.random.default_rng(3))
    same = mechanism.release(normalise_descriptors(phi[None, :]), np.random.default_rng(3))
    np.testing.assert_array_equal(out, same[0])


@pytest.fixture(scope="module")
def strong_signal():
    """Two-record clients of a 3-feature population: one record moves the gradient a lot."""
    rng = np.random.default_rng(0)
    return rng.normal(size=(300, 3)), rng.integers(0, 2, 300), np.array([0.5, -0.3, 0.2, 0.1])


@pytest.mark.parametrize("seed", [0, 1])
def test_noise_removes_what_the_attack_certifies_in_the_clear(strong_signal, seed):
    X, y, w = strong_signal
    kw = {"w": w, "n_targets": 200, "n_shadow": 8, "random_state": seed}
    clear = membership_inference(X, y, 2, "gradient", **kw)
    noisy = membership_inference(X, y, 2, "gradient",
                                 mechanism=ClientLevelDP(1e4, clip=1.0), **kw)
    for res in (clear, noisy):
        assert res["scores"].shape == res["members"].shape == (200,)
        assert res["auc"] == roc_auc(res["members"], res["scores"])
    assert clear["auc"] > 0.7 and abs(noisy["auc"] - 0.5) < 0.1
    bound = {k: held_out_epsilon(r["scores"], r["members"], 1e-5, random_state=0)
             for k, r in (("clear", clear), ("noisy", noisy))}
    assert bound["clear"]["epsilon_lb"] > 0 and bound["noisy"]["epsilon_lb"] == 0


def test_noise_stops_the_closed_form_inversion_clipping_alone_does_not():
    """x = g_w / g_b is scale-free, so a clipped gradient is still inverted exactly; the
    noise of a private release is what stops it."""
    kw = {"seeds": [0], "batch_sizes": (1,), "n_iter": 5, "max_clients": 2,
          "progress": False}
    rows = {name: gradient_inversion_experiment("healthcare", model_dp=dp, **kw).query(
        "attack == 'closed_form'")["recovered"]
        for name, dp in (("clipped", ClientLevelDP(0.0, clip=1e-3)),
                         ("noisy", ClientLevelDP(3.0, clip=1e-3)))}
    assert (rows["clipped"] == 1.0).all() and (rows["noisy"] == 0.0).all()


def test_membership_experiment_passes_the_options_and_returns_trials():
    dp, mech = ClientLevelDP(5.0, clip=0.3), GaussianMechanism(1.0)
    trials = membership_experiment("healthcare", seeds=[0], n=5, n_targets=4, n_shadow=2,
                                   progress=False, model_dp=dp, descriptor_mechanism=mech,
                                   per_trial=True)
    assert len(trials) == 8 and set(trials["channel"]) == {"gradient", "descriptor"}
    assert list(trials["trial"][:4]) == [0, 1, 2, 3]
    assert list(trials["member"][:4]) == [True, False, True, False]
    assert "auc" not in trials and np.isfinite(trials["score"]).all()
    with pytest.raises(TypeError, match="gradient channel is privatised by a ClientLevelDP"):
        membership_experiment("healthcare", seeds=[0], model_dp=mech, progress=False)
    with pytest.raises(TypeError, match="release"):
        membership_experiment("healthcare", seeds=[0], descriptor_mechanism=dp,
                              progress=False)


# -- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize("call, error, match", [
    (lambda: clopper_pearson(3, 2, 0.05, "lower"), ValueError, "0 <= k <= n"),
    (lambda: clopper_pearson(0, 0, 0.05, "lower"), ValueError, "1 <= n"),
    (lambda: clopper_pearson(1.5, 4, 0.05, "lower"), TypeError, "k must be an int"),
    (lambda: clopper_pearson(1, 4, 0.05, "left"), ValueError, "side must be 'lower'"),
    (lambda: clopper_pearson(1, 4, 1.0, "lower"), ValueError, "alpha must be < 1.0"),
    (lambda: epsilon_from_rates(1.2, 0.1, 1e-5), ValueError, "tpr must lie in"),
    (lambda: epsilon_from_rates(0.5, 0.1, 0.0), ValueError, "delta must be > 0.0"),
    (lambda: empirical_epsilon([0.1, np.nan], [True, False], 1e-5, thresholds=[0.0]),
     ValueError, "scores must be a 1-D array"),
    (lambda: empirical_epsilon([0.1, 0.2], [True, True], 1e-5, thresholds=[0.0]),
     ValueError, "members and non-members"),
    (lambda: empirical_epsilon([0.1, 0.2], [True], 1e-5, thresholds=[0.0]),
     ValueError, "members must be booleans"),
    (lambda: empirical_epsilon([0.1, 0.2], ["yes", "no"], 1e-5, thresholds=[0.0]),
     ValueError, "members must be booleans"),
    (lambda: empirical_epsilon([0.1, 0.2], [True, False], 1e-5, thresholds=[]),
     ValueError, "thresholds must be at least one"),
    (lambda: empirical_epsilon([0.1, 0.2], [True, False], 1e-5, thresholds=[0.0],
                               alpha=0.0), ValueError, "alpha must be > 0.0"),
    (lambda: held_out_epsilon([0.1, 0.2, 0.3], [True, False, True], 1e-5),
     ValueError, "at least 2 members and 2 non-members"),
    (lambda: gaussian_mechanism_audit(0.0, 1e-5), ValueError, "noise_multiplier must be > 0"),
    (lambda: gaussian_mechanism_audit(1.0, 1e-5, n_trials=4), ValueError,
     "n_trials must be >= 8"),
])
def test_bad_input_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- the audit of the package's own mechanism (issue 45) ------------------------------

def test_the_audit_certifies_a_non_private_round_and_says_what_it_could_certify():
    """(a) Without noise the canary is always seen: the audit certifies the most its design
    can (20,000 trials: 7.2), far above 4; the design's ceiling is printed beside it."""
    out = client_dp_audit(ClientLevelDP(noise_multiplier=0.0), random_state=0)
    assert out["epsilon"] == math.inf
    assert out["epsilon_lb"] == pytest.approx(out["design_epsilon"]) and out["epsilon_lb"] >= 4
    assert out["design_epsilon"] == pytest.approx(
        design_epsilon(out["n_members"], out["n_nonmembers"], 1e-5))


@pytest.mark.parametrize("noise", ["central", "distributed"])
@pytest.mark.parametrize("defect", DEFECTS)
def test_a_planted_defect_certifies_more_than_it_accounts(defect, noise):
    """(b) The noise at a tenth, or the clipping off: the audit, run through the
    mechanism's own code, certifies an epsilon above the accounted one, so the check
    "no audit bound above the accounted epsilon" can fail. The defect accounts as the
    correct option does."""
    correct = ClientLevelDP(noise_multiplier=2.0, noise=noise)
    broken = planted_defect(correct, defect)
    assert broken.get_params() == correct.get_params()
    out = client_dp_audit(broken, random_state=0)
    assert out["epsilon"] == client_dp_audit(correct, random_state=0)["epsilon"]
    assert out["epsilon_lb"] > 2 * out["epsilon"]  # 6.75 against 2.00, measured


def test_planted_defect_refuses_what_it_cannot_break():
    with pytest.raises(ValueError, match="unknown defect 'noise/2'"):
        planted_defect(ClientLevelDP(), "noise/2")
    with pytest.raises(TypeError, match="dp must be a ClientLevelDP"):
        planted_defect(GaussianMechanism(1.0), "noise/10")


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 10.0])
def test_a_descriptor_release_audited_through_its_own_code_stays_below(epsilon):
    """The descriptor mechanism's own release (its clipping to the unit sphere, its
    noise) on two antipodal canaries: below the accounted epsilon, and not vacuous at
    the larger targets; a mechanism with a tenth of the noise certifies more."""
    mechanism = GaussianMechanism(epsilon)
    out = descriptor_audit(mechanism, random_state=0)
    # the PRV accountant's epsilon of the release: the calibrated one, up to its
    # discretisation (0.31 at 0.3, 10.01 at 10)
    assert out["epsilon_lb"] < out["epsilon"] == pytest.approx(epsilon, rel=0.05)
    assert out["design_epsilon"] == pytest.approx(
        design_epsilon(out["n_members"], out["n_nonmembers"], mechanism.delta))
    if epsilon >= 1:
        assert out["epsilon_lb"] > 0


def test_descriptor_audit_refuses_other_mechanisms():
    with pytest.raises(TypeError, match="mechanism must be a GaussianMechanism"):
        descriptor_audit(ClientLevelDP())


@pytest.mark.parametrize("dp", [ClientLevelDP(0.5), ClientLevelDP(1.0), ClientLevelDP(2.0),
                                ClientLevelDP(1.0, noise="central"),
                                ClientLevelDP(1.0, noise="local"),
                                ClientLevelDP(1.0, relation="replace"),
                                ClientLevelDP(1.0, sample_rate=0.5, noise="central")],
                         ids=["z0.5", "z1", "z2", "central", "local", "replace", "q0.5"])
def test_the_correct_mechanism_stays_below_its_accounted_epsilon(dp):
    """(c) At every target, with each noise placement and relation, the bound the audit
    certifies lies below the accountant's epsilon of the round, and it is not vacuous:
    the attack sees the canary (a positive bound at every one of these settings)."""
    out = client_dp_audit(dp, random_state=1)
    assert 0 < out["epsilon_lb"] < out["epsilon"] <= math.inf
