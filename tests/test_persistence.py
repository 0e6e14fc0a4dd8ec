"""Tests of the persistence diagrams (exact ripser and the triangle approximation)."""

import numpy as np
import pytest

from topofl_lib.topology import persistence_diagrams
from topofl_lib.topology.descriptor import betti_curve


def noisy_circle(n=60, radius=1.0, noise=0.05, seed=0):
    """Points drawn uniformly on a circle of ``radius``, plus Gaussian noise."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.0, 2.0 * np.pi, n)
    return radius * np.c_[np.cos(t), np.sin(t)] + rng.normal(scale=noise, size=(n, 2))


def two_blobs(n_per_blob, seed=0):
    """Two isotropic Gaussian blobs (std 0.5) in the plane whose centres are 20 apart."""
    rng = np.random.default_rng(seed)
    return np.vstack([
        rng.normal(scale=0.5, size=(n_per_blob, 2)),
        rng.normal(scale=0.5, size=(n_per_blob, 2)) + [20.0, 0.0],
    ])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noisy_circle_has_one_long_h1_bar(seed):
    """Exact persistence of a noisy circle has one H1 bar > 0.5 and only short others."""
    _, h1 = persistence_diagrams(noisy_circle(seed=seed), persistence="ripser")
    pers = np.sort(h1[:, 1] - h1[:, 0])[::-1]
    assert (pers > 0.5).sum() == 1
    assert np.all(pers[1:] < 0.2)


def test_ripser_omits_infinite_bar():
    """Only finite pairs are returned: n - 1 finite H0 deaths for n distinct points."""
    X = np.random.default_rng(0).normal(size=(30, 3))
    h0, h1 = persistence_diagrams(X)
    assert h0.shape == (29, 2)
    assert np.all(np.isfinite(h0)) and np.all(np.isfinite(h1))


def test_two_blobs_betti0_is_two_at_mid_scale():
    """Two blobs 20 apart are two connected components at scale 5."""
    h0, _ = persistence_diagrams(two_blobs(50))
    assert betti_curve(h0, [5.0], n_essential=1).tolist() == [2.0]


def test_triangle_h0_matches_ripser():
    """The triangle method's H0 (Kruskal) equals ripser's exact H0."""
    X = np.random.default_rng(3).normal(size=(70, 4))
    r0, _ = persistence_diagrams(X, persistence="ripser")
    t0, _ = persistence_diagrams(X, persistence="triangle")
    assert r0.shape == t0.shape
    np.testing.assert_allclose(np.sort(t0[:, 1]), np.sort(r0[:, 1]), rtol=1e-5, atol=1e-6)
    assert np.all(t0[:, 0] == 0.0)


@pytest.mark.parametrize("dim", [2, 3, 5])
def test_triangle_h1_has_at_least_as_many_pairs(dim):
    """The triangle approximation reports at least as many H1 pairs as ripser."""
    X = np.random.default_rng(dim).normal(size=(60, dim))
    _, r1 = persistence_diagrams(X, persistence="ripser")
    _, t1 = persistence_diagrams(X, persistence="triangle")
    assert len(r1) > 0
    assert len(t1) >= len(r1)
    assert np.all(t1[:, 1] > t1[:, 0])


def test_triangle_circle_loop_is_shorter_than_ripser():
    """The triangle method under-estimates the big loop of a circle.

    In the triangle approximation each non-tree edge's cycle dies with the *first*
    triangle containing that edge; on a circle every edge closing the loop has a
    nearby third point, so the loop is filled almost at once, while in exact Rips
    persistence it survives until the circle's triangles span its diameter.
    """
    X = noisy_circle(seed=0)
    _, r1 = persistence_diagrams(X, persistence="ripser")
    _, t1 = persistence_diagrams(X, persistence="triangle")
    ripser_loop = (r1[:, 1] - r1[:, 0]).max()
    triangle_loop = (t1[:, 1] - t1[:, 0]).max() if len(t1) else 0.0
    assert triangle_loop < ripser_loop


def test_unknown_persistence_raises():
    """An unknown persistence back-end is rejected, naming the parameter."""
    with pytest.raises(ValueError, match="unknown persistence 'alpha'"):
        persistence_diagrams(np.zeros((5, 2)) + np.arange(5)[:, None], persistence="alpha")
