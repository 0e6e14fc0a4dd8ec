"""Privacy: proxies, attacks and the DP mechanisms of topofl_lib.privacy."""

import numpy as np
import pytest
from scipy.stats import norm

from topofl_lib import PTopoFL, make_healthcare
from topofl_lib.privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    analytic_gaussian_sigma,
    invert_descriptor,
    invert_single_gradient,
    logistic_data_gradient,
    membership_inference,
    mi_proxy_bits,
    reconstruction_metrics,
    reconstruction_risk_gradient,
    reconstruction_risk_topology,
)


def test_proxies_match_the_paper_formulas():
    """Eq. 10-11 and the MI proxy: log2(22) and log2(5.8) bits, ratio 21/4.8."""
    assert reconstruction_risk_gradient(21, 100, 20) == pytest.approx(21 / 2000)
    assert reconstruction_risk_gradient(21, 1, 1) == 1.0
    assert reconstruction_risk_topology(48, 100, 20, 0.1) == pytest.approx(0.24 / 100)
    for n in (50, 100, 250):
        ratio = reconstruction_risk_gradient(21, n, 20) / reconstruction_risk_topology(48, n, 20)
        assert ratio == pytest.approx(4.375)
    assert mi_proxy_bits(21) == pytest.approx(np.log2(22))
    assert mi_proxy_bits(48, 0.1) == pytest.approx(np.log2(5.8))
    with pytest.raises(ValueError, match="alpha_c"):
        reconstruction_risk_topology(48, 100, 20, 0.0)
    with pytest.raises(ValueError, match="n must be"):
        reconstruction_risk_gradient(21, 0, 20)


@pytest.mark.parametrize("label", [0, 1])
def test_single_record_gradient_is_inverted_exactly(label):
    """The closed form recovers the record (cosine > 0.999) and its label."""
    rng = np.random.default_rng(label)
    w, x = rng.normal(size=21), rng.normal(size=20)
    x_hat, y_hat = invert_single_gradient(logistic_data_gradient(w, x[None], [label]))
    cos = x_hat @ x / np.linalg.norm(x_hat) / np.linalg.norm(x)
    assert cos > 0.999 and np.allclose(x_hat, x) and y_hat == label
    with pytest.raises(ValueError, match="bias gradient"):
        invert_single_gradient(np.r_[np.ones(3), 0.0])


def test_reconstruction_metrics():
    """Identical reconstructions are fully recovered; far ones are not."""
    X = np.random.default_rng(0).normal(size=(5, 3))
    m = reconstruction_metrics(X, X)
    assert m["recovered"] == 1.0 and m["relative_error"] == 0.0
    assert m["cosine"] == pytest.approx(1.0)
    assert reconstruction_metrics(X + 100, X)["recovered"] == 0.0
    with pytest.raises(ValueError, match="features"):
        reconstruction_metrics(X[:, :2], X)


def test_gaussian_sigma_formulas():
    """Classic sigma matches its formula; analytic sigma solves Balle-Wang's equation,
    decreases with epsilon and is below the classic one for epsilon < 1."""
    eps, delta, sens = 0.5, 1e-5, 2.0
    classic = GaussianMechanism(eps, delta, sens, calibration="classic").sigma
    assert classic == pytest.approx(sens * np.sqrt(2 * np.log(1.25 / delta)) / eps)
    s = analytic_gaussian_sigma(eps, delta, sens)
    a, b = sens / (2 * s), eps * s / sens
    assert norm.cdf(a - b) - np.exp(eps) * norm.cdf(-a - b) == pytest.approx(delta, abs=1e-9)
    assert s < classic
    sigmas = [analytic_gaussian_sigma(e, delta, sens) for e in (0.1, 1.0, 10.0, 1000.0)]
    assert np.all(np.diff(sigmas) < 0) and np.all(np.isfinite(sigmas))


def test_gaussian_noise_scale_is_empirically_right():
    """20000 releases of a unit vector: per-coordinate std equals sigma within 2%."""
    v = np.zeros(48)
    v[0] = 1.0
    mech = GaussianMechanism(1.0, 1e-5)
    draws = mech.release(np.tile(v, (20000, 1)), random_state=0)
    assert np.allclose(draws.std(axis=0), mech.sigma, rtol=0.02)
    assert np.all(np.abs(draws.mean(axis=0) - v) < 5 * mech.sigma / np.sqrt(20000))


def test_laplace_noise_scale_is_empirically_right():
    """Laplace(b): mean absolute deviation b and std sqrt(2) b, within 2%."""
    mech = LaplaceMechanism(2.0)
    draws = mech.release(np.zeros((20000, 48)), random_state=1)
    assert np.abs(draws).mean() == pytest.approx(mech.scale, rel=0.02)
    assert draws.std() == pytest.approx(np.sqrt(2) * mech.scale, rel=0.02)
    assert mech.scale == pytest.approx(2 * np.sqrt(48) / 2.0)


def test_release_clips_before_adding_noise():
    """A vector of norm 5 is released around its projection on the unit ball."""
    v = np.zeros(4)
    v[1] = 5.0
    draws = GaussianMechanism(50.0, 1e-5).release(np.tile(v, (4000, 1)), random_state=2)
    assert np.allclose(draws.mean(axis=0), [0, 1, 0, 0], atol=0.02)


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 0}, "epsilon"), ({"epsilon": -1}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"), ({"epsilon": 1, "delta": 0}, "delta"),
    ({"epsilon": 1, "delta": 1}, "delta"), ({"epsilon": 1, "delta": 1.5}, "delta"),
    ({"epsilon": 1, "calibration": "foo"}, "calibration"),
])
def test_bad_dp_parameters(kwargs, match):
    """Bad epsilon, delta or calibration raise errors naming the parameter."""
    with pytest.raises(ValueError, match=match):
        GaussianMechanism(**kwargs)
    with pytest.raises(ValueError, match="clip"):
        LaplaceMechanism(1.0, clip=0)


def test_release_is_deterministic():
    """The same seed gives the same release."""
    mech = GaussianMechanism(1.0)
    x = np.ones((2, 48)) / np.sqrt(48)
    assert np.array_equal(mech.release(x, 3), mech.release(x, 3))


def test_ptopofl_with_dp_descriptors():
    """Almost noiseless DP keeps the clusters; the server sees only released vectors;
    tracking is off; unsupported combinations raise."""
    scen = make_healthcare(random_state=0)
    plain = PTopoFL(n_rounds=2, random_state=0).fit(scen)
    mech = GaussianMechanism(1e7)  # analytic sigma ~4.5e-4: it shrinks like 1/sqrt(eps)
    private = PTopoFL(n_rounds=2, descriptor_mechanism=mech, random_state=0).fit(scen)
    unit = plain.descriptors_ / np.linalg.norm(plain.descriptors_, axis=1, keepdims=True)
    assert np.allclose(private.descriptors_, unit, atol=10 * mech.sigma)
    assert np.array_equal(private.labels_, plain.labels_)
    assert private.signatures_ is None
    with pytest.raises(ValueError, match="l2"):
        PTopoFL(descriptor_mechanism=GaussianMechanism(1.0), distance="wasserstein").fit(scen)
    with pytest.raises(TypeError, match="release"):
        PTopoFL(descriptor_mechanism=object()).fit(scen)


def test_membership_inference_interface():
    """Returns an AUC in [0, 1]; bad channels and a missing model raise."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 2, 60)
    res = membership_inference(X, y, 10, "gradient", w=np.zeros(4), n_targets=6,
                               n_shadow=3, random_state=0)
    assert 0.0 <= res["auc"] <= 1.0
    with pytest.raises(ValueError, match="channel"):
        membership_inference(X, y, 10, "model", n_targets=6)
    with pytest.raises(ValueError, match="needs w"):
        membership_inference(X, y, 10, "gradient", n_targets=6)


def test_descriptor_inversion_never_increases_its_loss():
    """The evolution strategy only accepts moves that do not increase the mismatch."""
    rng = np.random.default_rng(0)
    pop = rng.normal(size=(200, 4))
    from topofl_lib.topology import topological_descriptor

    target = topological_descriptor(rng.normal(size=(30, 4)), None)
    X_hat, losses = invert_descriptor(target, pop, 30, n_iter=30, random_state=0)
    assert X_hat.shape == (30, 4) and losses.shape == (31,)
    assert np.all(np.diff(losses) <= 0)
