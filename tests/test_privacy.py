"""Tests of topofl_lib.privacy: proxies, attacks, DP mechanisms and the experiment runners."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from topofl_lib import PTopoFL, make_healthcare
from topofl_lib.privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    analytic_gaussian_sigma,
    clip_norm,
    descriptor_inversion_experiment,
    dp_utility_experiment,
    gradient_inversion_experiment,
    invert_batch_gradient,
    invert_descriptor,
    invert_single_gradient,
    logistic_data_gradient,
    membership_experiment,
    membership_inference,
    mi_proxy_bits,
    proxy_table,
    reconstruction_metrics,
    reconstruction_risk_gradient,
    reconstruction_risk_topology,
)
from topofl_lib.results import claim_rows
from topofl_lib.studies.privacy import privacy_claim_values
from topofl_lib.topology import topological_descriptor

D = 20  # features of the synthetic logistic model (plus a bias)


def _logistic_problem(seed, label=None):
    """A random logistic model w (d = 20 plus bias), one record x and its label."""
    rng = np.random.default_rng(seed)
    w, x = rng.normal(size=D + 1), rng.normal(size=D)
    y = int(rng.integers(2)) if label is None else label
    return w, x, y


# ---------------------------------------------------------------------------- proxies


def test_reconstruction_risk_gradient():
    """Eq. 10: p / (n d), capped at 1 when the model has more parameters than data."""
    assert reconstruction_risk_gradient(21, 100, 20) == pytest.approx(21 / 2000)
    assert reconstruction_risk_gradient(21, 1, 1) == 1.0
    assert reconstruction_risk_gradient(21, 1, 20) == 1.0
    assert np.allclose(reconstruction_risk_gradient(21, np.array([1, 100]), 20), [1.0, 21 / 2000])


def test_reconstruction_risk_topology():
    """Eq. 11: alpha_c m / (n d)."""
    assert reconstruction_risk_topology(48, 100, 20, 0.1) == pytest.approx(0.1 * 48 / 2000)
    assert reconstruction_risk_topology(48, 100, 20) == pytest.approx(0.1 * 48 / 2000)


@pytest.mark.parametrize("n", [2, 50, 100, 250, 10_000])
def test_proxy_ratio_does_not_depend_on_the_client(n):
    """rho_grad / rho_topo = p / (alpha_c m) = 21 / 4.8 = 4.375 whenever p < n d."""
    assert 21 < n * 20
    ratio = reconstruction_risk_gradient(21, n, 20) / reconstruction_risk_topology(48, n, 20, 0.1)
    assert ratio == pytest.approx(21 / (0.1 * 48))
    assert ratio == pytest.approx(4.375)


def test_mi_proxy_bits():
    """log2(1 + dim alpha): log2(22) for gradients, log2(5.8) for descriptors."""
    assert mi_proxy_bits(21, 1.0) == pytest.approx(np.log2(22))
    assert mi_proxy_bits(21) == pytest.approx(np.log2(22))
    assert mi_proxy_bits(48, 0.1) == pytest.approx(np.log2(5.8))


@pytest.mark.parametrize("call, match", [
    (lambda: reconstruction_risk_gradient(21, 0, 20), r"\bn\b"),
    (lambda: reconstruction_risk_topology(48, 0, 20), r"\bn\b"),
    (lambda: reconstruction_risk_gradient(21, 100, 0), r"\bd\b"),
    (lambda: reconstruction_risk_topology(48, 100, 0), r"\bd\b"),
    (lambda: reconstruction_risk_topology(48, 100, 20, 0.0), "alpha_c"),
    (lambda: reconstruction_risk_topology(48, 100, 20, 2.0), "alpha_c"),
    (lambda: reconstruction_risk_gradient(0, 100, 20), r"\bp\b"),
    (lambda: mi_proxy_bits(0), "dim"),
    (lambda: mi_proxy_bits(21, 0.0), "alpha"),
])
def test_proxy_bad_inputs(call, match):
    """Bad proxy inputs raise ValueError naming the parameter."""
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------ gradient inversion


@pytest.mark.parametrize("label", [0, 1])
def test_single_record_gradient_is_inverted_exactly(label):
    """x = g_w / g_b recovers the record exactly, and y = [g_b < 0] its label."""
    w, x, _ = _logistic_problem(label)
    x_hat, y_hat = invert_single_gradient(logistic_data_gradient(w, x[None], [label]))
    cos = x_hat @ x / (np.linalg.norm(x_hat) * np.linalg.norm(x))
    assert cos > 0.999
    assert np.allclose(x_hat, x)
    assert y_hat == label


def test_single_gradient_bad_inputs():
    """A zero bias gradient (exact fit) and non-1-D gradients raise ValueError."""
    with pytest.raises(ValueError, match="bias gradient"):
        invert_single_gradient(np.r_[np.ones(3), 0.0])
    with pytest.raises(ValueError, match="1-D"):
        invert_single_gradient(np.ones((2, 3)))
    with pytest.raises(ValueError, match="1-D"):
        invert_single_gradient(np.ones(1))


@pytest.mark.parametrize("batch_size", [1, 3])
def test_batch_inversion_shape(batch_size):
    """The optimisation attack returns finite records of shape (B, d)."""
    rng = np.random.default_rng(batch_size)
    w, X = rng.normal(size=D + 1), rng.normal(size=(batch_size, D))
    g = logistic_data_gradient(w, X, rng.integers(0, 2, batch_size))
    X_hat = invert_batch_gradient(g, w, batch_size, n_iter=20, restarts=1, random_state=0)
    assert isinstance(X_hat, np.ndarray)
    assert X_hat.shape == (batch_size, D)
    assert np.all(np.isfinite(X_hat))


def test_batch_inversion_recovers_a_single_record():
    """For B = 1 and 1500 Adam steps the reconstruction has cosine > 0.9 (seed 0)."""
    w, x, y = _logistic_problem(0)
    g = logistic_data_gradient(w, x[None], [y])
    X_hat = invert_batch_gradient(g, w, 1, n_iter=1500, random_state=0)
    assert X_hat.shape == (1, D)
    assert reconstruction_metrics(X_hat, x[None])["cosine"] > 0.9


def test_batch_inversion_is_deterministic():
    """The same integer seed gives the same reconstruction."""
    w, x, y = _logistic_problem(1)
    g = logistic_data_gradient(w, x[None], [y])
    a = invert_batch_gradient(g, w, 1, n_iter=10, restarts=1, random_state=5)
    b = invert_batch_gradient(g, w, 1, n_iter=10, restarts=1, random_state=5)
    assert np.array_equal(a, b)


def test_batch_inversion_bad_inputs():
    """Mismatched gradient/model shapes, non-finite gradients and bad settings raise."""
    w = np.zeros(D + 1)
    with pytest.raises(ValueError, match="shape"):
        invert_batch_gradient(np.zeros(D), w, 1, n_iter=1)
    with pytest.raises(ValueError, match="finite"):
        invert_batch_gradient(np.full(D + 1, np.nan), w, 1, n_iter=1)
    with pytest.raises(ValueError, match="batch_size"):
        invert_batch_gradient(np.ones(D + 1), w, 0, n_iter=1)
    with pytest.raises(ValueError, match="lr"):
        invert_batch_gradient(np.ones(D + 1), w, 1, n_iter=1, lr=0.0)


# -------------------------------------------------------------- reconstruction metrics


def test_reconstruction_metrics_identical_and_far():
    """Identical arrays: recovered 1, error 0, cosine 1; far-away ones: recovered 0."""
    X = np.random.default_rng(0).normal(size=(5, 3))
    m = reconstruction_metrics(X, X)
    assert m["recovered"] == 1.0
    assert m["relative_error"] == 0.0
    assert m["cosine"] == pytest.approx(1.0)
    far = reconstruction_metrics(X + 100.0, X)
    assert far["recovered"] == 0.0
    assert far["relative_error"] > 1.0


def test_reconstruction_metrics_uses_the_nearest_reconstruction():
    """Each true record is scored against its nearest reconstruction (order-free)."""
    X = np.random.default_rng(1).normal(size=(4, 3))
    m = reconstruction_metrics(X[::-1], X)
    assert m["recovered"] == 1.0 and m["relative_error"] == 0.0
    half = reconstruction_metrics(np.vstack([X[:2], X[:2] + 100.0]), X)
    assert half["recovered"] == pytest.approx(0.5)


def test_reconstruction_metrics_bad_inputs():
    """Mismatched feature dimensions and tol <= 0 raise ValueError."""
    X = np.random.default_rng(0).normal(size=(5, 3))
    with pytest.raises(ValueError, match="features"):
        reconstruction_metrics(X[:, :2], X)
    for tol in (0.0, -0.1):
        with pytest.raises(ValueError, match="tol"):
            reconstruction_metrics(X, X, tol=tol)


# ------------------------------------------------------------------- DP mechanisms


def _balle_wang_excess(eps, delta, sens, sigma):
    a, b = sens / (2 * sigma), eps * sigma / sens
    return norm.cdf(a - b) - np.exp(eps + norm.logcdf(-a - b)) - delta


@pytest.mark.parametrize("eps, delta", [(0.5, 1e-5), (1.0, 1e-5), (0.1, 1e-6), (5.0, 1e-3)])
def test_classic_sigma_formula(eps, delta):
    """Classic calibration: sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon."""
    mech = GaussianMechanism(eps, delta, calibration="classic")
    assert mech.sigma == pytest.approx(2 * np.sqrt(2 * np.log(1.25 / delta)) / eps)
    assert GaussianMechanism(eps, delta, 1.0, "classic").sigma == pytest.approx(mech.sigma / 2)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 3.0, 30.0])
def test_analytic_sigma_solves_balle_wang(eps):
    """Phi(D/2s - e s/D) - e^eps Phi(-D/2s - e s/D) = delta at the analytic sigma."""
    delta, sens = 1e-5, 2.0
    s = analytic_gaussian_sigma(eps, delta, sens)
    assert _balle_wang_excess(eps, delta, sens, s) == pytest.approx(0.0, abs=1e-9)
    # it is the smallest such sigma: a slightly smaller one violates the condition
    assert _balle_wang_excess(eps, delta, sens, s * 0.99) > 0
    assert GaussianMechanism(eps, delta, sens).sigma == s


def test_analytic_sigma_is_decreasing_and_beats_classic():
    """Analytic sigma decreases with epsilon and is below the classic one at eps = 0.5."""
    eps_grid = (0.05, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0, 1e4)
    sigmas = np.array([analytic_gaussian_sigma(e, 1e-5, 2.0) for e in eps_grid])
    assert np.all(np.isfinite(sigmas)) and np.all(sigmas > 0)
    assert np.all(np.diff(sigmas) < 0)
    classic = GaussianMechanism(0.5, 1e-5, calibration="classic").sigma
    assert GaussianMechanism(0.5, 1e-5).sigma < classic


def test_gaussian_noise_scale_is_empirically_right():
    """20000 releases of a unit vector: per-coordinate std = sigma (2%), mean = vector."""
    n = 20000
    v = np.zeros(48)
    v[3] = 1.0
    mech = GaussianMechanism(1.0, 1e-5)
    draws = mech.release(np.tile(v, (n, 1)), random_state=0)
    assert draws.shape == (n, 48)
    assert np.allclose(draws.std(axis=0), mech.sigma, rtol=0.02)
    assert np.all(np.abs(draws.mean(axis=0) - v) < 5 * mech.sigma / np.sqrt(n))


def test_laplace_noise_scale_is_empirically_right():
    """Laplace(b): E|X - v| = b and std sqrt(2) b within 2%; mean = vector."""
    n = 20000
    v = np.zeros(48)
    v[0] = 1.0
    mech = LaplaceMechanism(2.0)
    assert mech.scale == pytest.approx(2 * np.sqrt(48) / 2.0)
    draws = mech.release(np.tile(v, (n, 1)), random_state=1)
    noise = draws - v
    assert np.abs(noise).mean() == pytest.approx(mech.scale, rel=0.02)
    assert noise.std() == pytest.approx(np.sqrt(2) * mech.scale, rel=0.02)
    se = np.sqrt(2) * mech.scale / np.sqrt(n)
    assert np.all(np.abs(draws.mean(axis=0) - v) < 5 * se)


def test_gaussian_release_clips_to_half_the_sensitivity():
    """A vector of L2 norm 5 is released around the same direction at norm 1 (= 2 / 2)."""
    n = 20000
    v = np.array([3.0, 0.0, -4.0, 0.0, 0.0, 0.0])
    mech = GaussianMechanism(1.0, 1e-5, sensitivity=2.0)
    draws = mech.release(np.tile(v, (n, 1)), random_state=2)
    se = mech.sigma / np.sqrt(n)
    assert np.all(np.abs(draws.mean(axis=0) - v / 5.0) < 5 * se)
    assert np.linalg.norm(draws.mean(axis=0) - v) > 3.0  # clearly not centred on v


def test_laplace_release_clips_to_l1_bound():
    """A vector of L1 norm 10 is released around its rescaling to L1 norm clip."""
    n = 20000
    v = np.array([6.0, -4.0, 0.0])
    mech = LaplaceMechanism(50.0, clip=1.0)
    draws = mech.release(np.tile(v, (n, 1)), random_state=3)
    se = np.sqrt(2) * mech.scale / np.sqrt(n)
    assert np.all(np.abs(draws.mean(axis=0) - v / 10.0) < 5 * se)


def test_clip_norm():
    """Rows above the bound are rescaled to it (ord 1 and 2); rows below are unchanged."""
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0], [3.0, -4.0]])
    c2 = clip_norm(X, 1.0)
    assert np.allclose(c2, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0], [0.6, -0.8]])
    assert np.allclose(np.linalg.norm(c2, axis=1), [1.0, 0.5, 0.0, 1.0])
    c1 = clip_norm(X, 1.0, ord=1)
    assert np.allclose(c1, [[3 / 7, 4 / 7], [0.3, 0.4], [0.0, 0.0], [3 / 7, -4 / 7]])
    assert np.allclose(np.abs(c1).sum(axis=1), [1.0, 0.7, 0.0, 1.0])
    assert clip_norm([3.0, 4.0], 2.0).shape == (1, 2)  # 1-D input becomes one row
    with pytest.raises(ValueError, match="bound"):
        clip_norm(X, 0.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 0}, "epsilon"),
    ({"epsilon": -1}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": float("inf")}, "epsilon"),
    ({"epsilon": 1, "delta": 0}, "delta"),
    ({"epsilon": 1, "delta": 1}, "delta"),
    ({"epsilon": 1, "delta": 1.5}, "delta"),
    ({"epsilon": 1, "delta": None}, "delta"),
    ({"epsilon": 1, "calibration": "foo"}, "calibration"),
    ({"epsilon": 1, "sensitivity": 0}, "sensitivity"),
])
def test_bad_gaussian_parameters(kwargs, match):
    """Bad epsilon, delta, calibration or sensitivity raise ValueError naming it."""
    with pytest.raises(ValueError, match=match):
        GaussianMechanism(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 0}, "epsilon"),
    ({"epsilon": -1}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": 1, "clip": 0}, "clip"),
    ({"epsilon": 1, "clip": -1.0}, "clip"),
])
def test_bad_laplace_parameters(kwargs, match):
    """Bad epsilon or clip raise ValueError naming it."""
    with pytest.raises(ValueError, match=match):
        LaplaceMechanism(**kwargs)


def test_non_numeric_dp_parameters_raise_type_error():
    """Strings and booleans are rejected with a TypeError naming the parameter."""
    with pytest.raises(TypeError, match="epsilon"):
        GaussianMechanism("1")
    with pytest.raises(TypeError, match="delta"):
        GaussianMechanism(1.0, "1e-5")
    with pytest.raises(TypeError, match="epsilon"):
        LaplaceMechanism(True)
    with pytest.raises(TypeError, match="clip"):
        LaplaceMechanism(1.0, clip="1")
    with pytest.raises(ValueError, match="epsilon"):
        analytic_gaussian_sigma(0.0, 1e-5, 2.0)
    with pytest.raises(ValueError, match="sensitivity"):
        analytic_gaussian_sigma(1.0, 1e-5, 0.0)


@pytest.mark.parametrize("mech", [GaussianMechanism(1.0), LaplaceMechanism(1.0)],
                         ids=["gaussian", "laplace"])
def test_release_is_deterministic(mech):
    """The same integer random_state gives identical releases; another one does not."""
    x = np.ones((2, 48)) / np.sqrt(48)
    a, b = mech.release(x, random_state=3), mech.release(x, random_state=3)
    assert a.shape == (2, 48)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, mech.release(x, random_state=4))


# --------------------------------------------------------------- PTopoFL with DP


@pytest.fixture(scope="module")
def healthcare():
    """Scenario A with seed 0 (8 clients)."""
    return make_healthcare(random_state=0)


@pytest.fixture(scope="module")
def plain_ptopofl(healthcare):
    """Non-private pTopoFL, 2 rounds."""
    return PTopoFL(n_rounds=2, random_state=0).fit(healthcare)


def _unit(phi):
    return phi / np.linalg.norm(phi, axis=1, keepdims=True)


def test_ptopofl_with_nearly_noiseless_dp_keeps_clusters(healthcare, plain_ptopofl):
    """GaussianMechanism(1e6): same clusters, descriptors = normalised ones plus N(0, s^2).

    The analytic sigma only shrinks like 1/sqrt(epsilon) for large epsilon
    (sigma ~ 1.4e-3 at 1e6), so the tolerance is stated in units of sigma.
    """
    mech = GaussianMechanism(1e6, 1e-5)
    private = PTopoFL(n_rounds=2, descriptor_mechanism=mech, random_state=0).fit(healthcare)
    assert np.array_equal(private.labels_, plain_ptopofl.labels_)
    assert private.descriptors_.shape == plain_ptopofl.descriptors_.shape
    assert np.allclose(private.descriptors_, _unit(plain_ptopofl.descriptors_),
                       atol=6 * mech.sigma, rtol=0)
    assert private.signatures_ is None
    assert plain_ptopofl.signatures_ is not None


def test_ptopofl_with_negligible_dp_noise_matches_unit_descriptors(healthcare, plain_ptopofl):
    """With sigma ~ 4.5e-5 (epsilon 1e9) the released descriptors agree to 1e-3."""
    mech = GaussianMechanism(1e9, 1e-5)
    assert mech.sigma < 1e-4
    private = PTopoFL(n_rounds=2, descriptor_mechanism=mech, random_state=0).fit(healthcare)
    assert np.allclose(private.descriptors_, _unit(plain_ptopofl.descriptors_), atol=1e-3, rtol=0)
    assert np.array_equal(private.labels_, plain_ptopofl.labels_)


def test_ptopofl_dp_bad_configurations(healthcare):
    """A mechanism with Wasserstein distances, or without release(), raises on fit."""
    with pytest.raises(ValueError, match="l2"):
        PTopoFL(descriptor_mechanism=GaussianMechanism(1.0),
                distance="wasserstein").fit(healthcare)
    with pytest.raises(TypeError, match="release"):
        PTopoFL(descriptor_mechanism=object()).fit(healthcare)


# ------------------------------------------------------------ membership inference


@pytest.fixture(scope="module")
def population():
    """A small random population with binary labels."""
    rng = np.random.default_rng(0)
    return rng.normal(size=(60, 3)), rng.integers(0, 2, 60)


@pytest.mark.parametrize("channel", ["gradient", "descriptor"])
def test_membership_inference_returns_an_auc(population, channel):
    """Both channels return an AUC in [0, 1] and the number of trials."""
    X, y = population
    res = membership_inference(X, y, 10, channel, w=np.zeros(4), n_targets=6, n_shadow=3,
                               n_sub=8, random_state=0)
    assert 0.0 <= res["auc"] <= 1.0
    assert res["n_trials"] == 6


def test_membership_inference_bad_inputs(population):
    """Unknown channels, a missing or mis-shaped model and bad labels raise ValueError."""
    X, y = population
    with pytest.raises(ValueError, match="channel"):
        membership_inference(X, y, 10, "model", n_targets=6)
    with pytest.raises(ValueError, match="w"):
        membership_inference(X, y, 10, "gradient", n_targets=6)
    with pytest.raises(ValueError, match="w"):
        membership_inference(X, y, 10, "gradient", w=np.zeros(3), n_targets=6)
    with pytest.raises(ValueError, match="labels"):
        membership_inference(X, y[:-1], 10, "gradient", w=np.zeros(4), n_targets=6)


# -------------------------------------------------------------- descriptor inversion


def test_descriptor_inversion_loss_never_increases():
    """The (1+1)-ES keeps only non-worsening moves: losses has n_iter + 1 entries."""
    rng = np.random.default_rng(0)
    pop = rng.normal(size=(200, 4))
    target = topological_descriptor(rng.normal(size=(30, 4)), None)
    X_hat, losses = invert_descriptor(target, pop, 30, n_iter=30, random_state=0)
    assert X_hat.shape == (30, 4)
    assert np.all(np.isfinite(X_hat))
    assert losses.shape == (31,)
    assert np.all(np.diff(losses) <= 0)


def test_descriptor_inversion_with_zero_steps_is_the_population_sample():
    """n_iter = 0 returns the starting sample, a subset of the population."""
    pop = np.random.default_rng(1).normal(size=(50, 3))
    target = topological_descriptor(pop[:20], None)
    X0, losses = invert_descriptor(target, pop, 10, n_iter=0, random_state=0)
    assert X0.shape == (10, 3) and losses.shape == (1,)
    assert all(np.any(np.all(pop == row, axis=1)) for row in X0)


# ------------------------------------------------------------------ evaluation runners


@pytest.fixture(scope="module")
def gradinv():
    """Gradient inversion on one healthcare client, B = 1, 50 Adam steps."""
    return gradient_inversion_experiment("healthcare", seeds=[0], batch_sizes=(1,), n_iter=50,
                                         max_clients=1, progress=False)


@pytest.fixture(scope="module")
def proxies():
    """Proxy table for seed 0 of both scenarios."""
    return proxy_table(seeds=[0])


def test_gradient_inversion_experiment(gradinv):
    """Rows for the three attacks; the closed form recovers the record."""
    assert set(gradinv["attack"]) == {"closed_form", "optimisation", "population_guess"}
    assert set(gradinv["batch_size"]) == {1}
    assert {"scenario", "seed", "client", "recovered", "relative_error",
            "cosine"} <= set(gradinv.columns)
    closed = gradinv[gradinv["attack"] == "closed_form"]
    assert len(closed) == 1
    assert (closed["recovered"] == 1.0).all()
    assert closed["cosine"].iloc[0] == pytest.approx(1.0)


def test_proxy_table_ratio(proxies):
    """rho_grad / rho_topo = 4.375 for every client of both scenarios."""
    assert set(proxies["scenario"]) == {"healthcare", "benchmark"}
    assert (proxies["rho_grad"] < 1).all()
    assert np.allclose(proxies["rho_grad"] / proxies["rho_topo"], 4.375)
    assert np.allclose(proxies["p"], proxies["d"] + 1)


def test_privacy_claim_values_are_known_claim_ids(proxies, gradinv):
    """Every id returned from tiny runs is accepted by claim_rows."""
    descinv = descriptor_inversion_experiment("healthcare", seeds=[0], n_iter=2,
                                              max_clients=1, progress=False)
    mia = membership_experiment("healthcare", seeds=[0], n=100, n_targets=2, n_shadow=2,
                                progress=False)
    dp = dp_utility_experiment("healthcare", seeds=[0], epsilons=(1.0, 100.0), n_rounds=1,
                               progress=False)
    values = privacy_claim_values(proxies, gradinv, descinv, mia, dp)
    assert "ptopofl.privacy.ratio" in values
    assert values["ptopofl.privacy.ratio"] == pytest.approx([4.375])
    assert "topofl.privacy.gradinv.closed_form.b1.recovered" in values
    assert "topofl.privacy.dp.eps100.auc" in values
    rows = claim_rows(values, "quick")
    assert isinstance(rows, pd.DataFrame)
    assert set(rows["id"]) == set(values)
    assert (rows["n_seeds"] == 1).all()


# ------------------------------------------- non-finite input, large epsilon (issue 12)


@pytest.mark.parametrize("mech", [GaussianMechanism(1.0), LaplaceMechanism(1.0)],
                         ids=["gaussian", "laplace"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_release_refuses_non_finite_descriptors(mech, bad):
    """A NaN or infinite descriptor is refused (it used to come back as NaN)."""
    x = np.ones((2, 48)) / np.sqrt(48)
    x[1, 7] = bad
    with pytest.raises(ValueError, match="contains 1 NaN or infinite"):
        mech.release(x, random_state=0)
    with pytest.raises(TypeError, match="must be an array of numbers"):
        mech.release("abc", random_state=0)


@pytest.mark.parametrize("eps", [1e4, 1e8, 1e12, 1e100])
def test_analytic_sigma_for_very_large_epsilon(eps):
    """Beyond the old bracket (sigma < 1e-6 Delta) the analytic sigma is still the
    smallest sigma meeting Balle & Wang's condition, and tends to Delta / sqrt(2 eps)."""
    delta, sens = 1e-5, 2.0
    s = GaussianMechanism(eps, delta, sens).sigma
    assert s > 0 and (s < 1e-6 * sens) == (eps >= 1e12)  # 1e12 on: below the old bracket
    assert _balle_wang_excess(eps, delta, sens, s) <= 1e-9  # (eps, delta)-DP holds
    assert _balle_wang_excess(eps, delta, sens, s * 0.99) > 0  # and a smaller one fails
    if eps >= 1e8:
        assert s == pytest.approx(sens / np.sqrt(2 * eps), rel=1e-3)


def test_invert_descriptor_checks_its_target():
    population = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match=r"target must be a descriptor of shape \(48,\)"):
        invert_descriptor(np.ones(5), population, 10, n_iter=1, random_state=0)
    with pytest.raises(ValueError, match="target contains 48 NaN"):
        invert_descriptor(np.full(48, np.nan), population, 10, n_iter=1, random_state=0)


@pytest.mark.parametrize("experiment", [gradient_inversion_experiment,
                                        descriptor_inversion_experiment])
@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"max_clients": 0}, ValueError, r"max_clients must be >= 1, got 0"),
    ({"max_clients": 1.5}, TypeError, r"max_clients must be an int, got 1.5"),
    ({"n_iter": 0}, ValueError, r"n_iter must be >= 1, got 0"),
])
def test_inversion_experiments_name_a_bad_argument_before_any_run(experiment, kwargs, error,
                                                                   match):
    """``max_clients=0`` used to return an empty table after building every scenario; it
    and a bad ``n_iter`` are refused by name before the scenario name is looked up."""
    with pytest.raises(error, match=match):
        experiment("no such scenario", seeds=[0], progress=False, **kwargs)


@pytest.mark.parametrize("experiment", [gradient_inversion_experiment,
                                        descriptor_inversion_experiment,
                                        membership_experiment, dp_utility_experiment])
def test_privacy_experiments_refuse_an_unknown_scenario_before_any_run(experiment):
    """An unknown scenario name stops the call before the first seed's runs, naming it and
    the registered scenarios."""
    with pytest.raises(ValueError, match=r"unknown scenario 'hospital'; expected one of .*"
                                         r"'healthcare'"):
        experiment("hospital", seeds=[0], progress=False)
    with pytest.raises(ValueError, match=r"unknown scenario 'hospital'"):
        proxy_table(scenarios=("healthcare", "hospital"), seeds=[0])
