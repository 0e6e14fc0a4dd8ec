"""Tests of the pTopoFL server rules (Eqs. 6-8) in topofl_lib.federated.aggregation."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from topofl_lib.federated.aggregation import (
    blend_clusters,
    cluster_clients,
    cluster_models,
    intra_cluster_weights,
    trust_weights,
)


def test_blend_beta_one_gives_size_weighted_average():
    """Eq. 7 with beta=1 replaces every cluster model by the size-weighted average."""
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(3, 5))
    sizes = np.array([2, 5, 1])
    expected = (sizes[:, None] * theta).sum(axis=0) / sizes.sum()
    out = blend_clusters(theta, sizes, beta=1.0)
    assert out.shape == theta.shape
    for row in out:
        np.testing.assert_allclose(row, expected)


def test_blend_beta_zero_is_identity():
    """Eq. 7 with beta=0 leaves the cluster models unchanged."""
    theta = np.random.default_rng(1).normal(size=(4, 3))
    np.testing.assert_allclose(blend_clusters(theta, [1, 2, 3, 4], beta=0.0), theta)


def test_blend_rejects_beta_outside_unit_interval():
    """beta must lie in [0, 1]."""
    with pytest.raises(ValueError, match="beta"):
        blend_clusters(np.zeros((2, 2)), [1, 1], beta=1.5)


def test_single_cluster_is_eq6_weighted_average():
    """With one cluster and trust 1 the aggregate is sum_k w_k theta_k (Eq. 6)."""
    rng = np.random.default_rng(2)
    K, dim = 7, 6
    Phi = np.abs(rng.normal(size=(K, 48)))
    Phi_hat = Phi / np.linalg.norm(Phi, axis=1, keepdims=True)
    sizes = rng.integers(20, 200, size=K).astype(float)
    models = rng.normal(size=(K, dim))
    labels = np.zeros(K, dtype=int)

    w = intra_cluster_weights(Phi_hat, labels, sizes, np.ones(K))
    theta = cluster_models(models, labels, w)

    raw = sizes * np.exp(-np.linalg.norm(Phi_hat - Phi_hat.mean(axis=0), axis=1))
    w_ref = raw / raw.sum()
    np.testing.assert_allclose(w, w_ref)
    assert theta.shape == (1, dim)
    np.testing.assert_allclose(theta[0], w_ref @ models)
    for beta in (0.0, 0.3, 1.0):
        np.testing.assert_allclose(blend_clusters(theta, [K], beta), theta)


def test_intra_cluster_weights_sum_to_one_per_cluster():
    """Eq. 6 weights are positive and sum to 1 within every cluster."""
    rng = np.random.default_rng(3)
    K = 9
    Phi_hat = rng.normal(size=(K, 10))
    labels = np.array([0, 1, 2, 0, 1, 2, 0, 0, 1])
    w = intra_cluster_weights(Phi_hat, labels, rng.uniform(10, 100, K), rng.uniform(0.2, 1, K))
    assert np.all(w > 0)
    for c in range(3):
        assert w[labels == c].sum() == pytest.approx(1.0)


def test_intra_cluster_weights_permutation_equivariant():
    """Permuting the clients permutes their weights."""
    rng = np.random.default_rng(4)
    K = 8
    Phi_hat = rng.normal(size=(K, 10))
    labels = np.array([0, 0, 1, 1, 0, 1, 1, 0])
    sizes = rng.uniform(10, 100, K)
    trust = rng.uniform(0.2, 1, K)
    w = intra_cluster_weights(Phi_hat, labels, sizes, trust)
    perm = rng.permutation(K)
    w_perm = intra_cluster_weights(Phi_hat[perm], labels[perm], sizes[perm], trust[perm])
    np.testing.assert_allclose(w_perm, w[perm])


def test_intra_cluster_weights_shape_check():
    """Mismatched sizes are rejected."""
    with pytest.raises(ValueError, match="sizes"):
        intra_cluster_weights(np.ones((3, 2)), np.zeros(3), np.ones(2), np.ones(3))


def test_trust_flags_obvious_outlier():
    """An outlier among 8 clients has z > tau and trust exp(-(z-1)) < 1; others trust 1."""
    rng = np.random.default_rng(5)
    points = rng.normal(scale=0.1, size=(8, 3))
    points[5] += 50.0
    trust, z = trust_weights(cdist(points, points), tau=2.0)
    assert z[5] > 2.0
    assert trust[5] == pytest.approx(np.exp(-(z[5] - 1.0)))
    assert trust[5] < 1.0
    others = np.arange(8) != 5
    np.testing.assert_array_equal(trust[others], 1.0)
    assert np.all(z[others] <= 2.0)


def test_trust_identical_points():
    """Identical clients all get z = 0 and trust 1."""
    trust, z = trust_weights(np.zeros((6, 6)), tau=2.0)
    np.testing.assert_array_equal(trust, np.ones(6))
    np.testing.assert_array_equal(z, np.zeros(6))


def _same_partition(a, b):
    """True if label vectors a and b define the same partition."""
    a, b = np.asarray(a), np.asarray(b)
    return np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


def test_cluster_clients_recovers_separated_groups():
    """Two well-separated groups are recovered, and client 0 is in cluster 0."""
    rng = np.random.default_rng(6)
    truth = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 0])
    points = rng.normal(scale=0.2, size=(10, 4)) + 10.0 * truth[:, None]
    labels = cluster_clients(cdist(points, points), n_clusters=2)
    assert _same_partition(labels, truth)
    assert labels[0] == 0
    assert set(labels.tolist()) == {0, 1}


def test_cluster_clients_numbered_by_first_appearance():
    """Cluster ids appear in increasing order of their first client."""
    rng = np.random.default_rng(7)
    truth = np.array([2, 2, 0, 1, 0, 1, 2, 0, 1])
    points = rng.normal(scale=0.1, size=(9, 2)) + 20.0 * truth[:, None]
    labels = cluster_clients(cdist(points, points), n_clusters=3)
    assert _same_partition(labels, truth)
    _, first = np.unique(labels, return_index=True)
    assert np.all(np.diff(first) > 0)
    assert labels.tolist() == [0, 0, 1, 2, 1, 2, 0, 1, 2]


def test_cluster_clients_bad_input():
    """Too many clusters or a non-square matrix raise ValueError."""
    D = cdist(np.arange(4.0)[:, None], np.arange(4.0)[:, None])
    with pytest.raises(ValueError, match="n_clusters"):
        cluster_clients(D, n_clusters=5)
    with pytest.raises(ValueError, match="square"):
        cluster_clients(np.zeros((3, 4)), n_clusters=2)
    np.testing.assert_array_equal(cluster_clients(D, 1), np.zeros(4))


# -- bad input (issue 12) -------------------------------------------------------------


def test_negative_tau_is_refused_and_small_tau_acts_as_one():
    """tau < 0 is refused; since t_k = exp(-max(z_k - 1, 0)) is 1 for z_k <= 1 (Eq. 8),
    every tau in [0, 1] gives the trust weights of tau = 1."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(9, 4)), rng.normal(size=(1, 4)) + 5.0])
    D = cdist(X, X)
    with pytest.raises(ValueError, match="tau must be >= 0"):
        trust_weights(D, -0.5)
    reference, z = trust_weights(D, 1.0)
    assert np.any(z < 1.0) and np.any(reference < 1.0)
    for tau in (0.0, 0.3, 0.99):
        np.testing.assert_array_equal(trust_weights(D, tau)[0], reference)
    # a population z-score never exceeds sqrt(K - 1): such a tau flags nobody
    np.testing.assert_array_equal(trust_weights(D, np.sqrt(len(X) - 1))[0], np.ones(len(X)))


def test_server_rules_name_bad_inputs():
    Phi = np.ones((3, 4))
    ones = np.ones(3)
    with pytest.raises(ValueError, match="Phi_hat must be 2-D"):
        intra_cluster_weights(np.ones(3), [0, 0, 0], ones, ones)
    with pytest.raises(ValueError, match="sizes must be positive"):
        intra_cluster_weights(Phi, [0, 0, 0], np.zeros(3), ones)
    with pytest.raises(ValueError, match="trust contains 1 NaN"):
        intra_cluster_weights(Phi, [0, 0, 0], ones, [1, np.nan, 1])
    with pytest.raises(ValueError, match="labels must be 3 non-negative integer"):
        cluster_models(Phi, [0, -1, 0], ones)
    with pytest.raises(ValueError, match="labels must be 3 non-negative integer"):
        cluster_models(Phi, [0, 1], ones)
    with pytest.raises(ValueError, match="models must be 2-D"):
        cluster_models(np.ones(3), [0, 0, 0], ones)
    with pytest.raises(ValueError, match=r"cluster_sizes must have shape \(2,\)"):
        blend_clusters(np.ones((2, 4)), [1, 1, 1], 0.3)
    with pytest.raises(ValueError, match="cluster_sizes must be positive"):
        blend_clusters(np.ones((2, 4)), [0, 0], 0.3)
