"""Tests of the 48-dimensional topological descriptor, its transformer and distances."""

import os
import re
import tracemalloc

import numpy as np
import pytest
from scipy.stats import special_ortho_group

from topofl_lib.data import make_healthcare
from topofl_lib.topology import (
    DESCRIPTOR_NAMES,
    TopologicalDescriptor,
    betti_curve,
    descriptor_distances,
    descriptor_from_diagrams,
    diagram_distances,
    persistence_diagrams,
    persistence_entropy,
    topological_descriptor,
)
from topofl_lib.topology import persistence as persistence_module
from topofl_lib.topology.distances import WASSERSTEIN


@pytest.fixture(scope="module")
def cloud():
    """150 Gaussian points in R^5."""
    return np.random.default_rng(0).normal(size=(150, 5))


@pytest.fixture(scope="module")
def rotation():
    """A random rotation of R^5."""
    return special_ortho_group.rvs(5, random_state=1)


def test_length_and_names(cloud):
    """The descriptor has 48 entries and 48 names."""
    phi = topological_descriptor(cloud, 80, random_state=0)
    assert phi.shape == (48,)
    assert len(DESCRIPTOR_NAMES) == 48
    assert len(set(DESCRIPTOR_NAMES)) == 48
    assert np.all(np.isfinite(phi))


def test_descriptor_invariances(cloud, rotation):
    """The descriptor is invariant to point order, rotation and translation."""
    phi = topological_descriptor(cloud, 80, random_state=0)
    perm = np.random.default_rng(5).permutation(cloud.shape[0])
    shift = np.array([3.0, -7.0, 0.5, 100.0, -2.0])
    for moved in (cloud[perm], cloud @ rotation.T, cloud + shift):
        other = topological_descriptor(moved, 80, random_state=0)
        np.testing.assert_allclose(other, phi, rtol=0, atol=1e-8)


def test_transformer_invariances(cloud, rotation):
    """TopologicalDescriptor.transform is invariant to order, rotation and translation."""
    perm = np.random.default_rng(6).permutation(cloud.shape[0])
    moved = [cloud, cloud[perm], cloud @ rotation.T, cloud - 4.0]
    out = TopologicalDescriptor(n_sub=80, random_state=0).fit_transform(moved)
    assert out.shape == (4, 48)
    for row in out[1:]:
        np.testing.assert_allclose(row, out[0], rtol=0, atol=1e-8)


def test_transformer_matches_function(cloud):
    """The transformer with an int seed gives the function's descriptor for each cloud."""
    other = np.random.default_rng(2).normal(size=(120, 5))
    out = TopologicalDescriptor(n_sub=80, random_state=3).fit_transform([other, cloud])
    np.testing.assert_array_equal(out[1], topological_descriptor(cloud, 80, random_state=3))
    np.testing.assert_array_equal(out[0], topological_descriptor(other, 80, random_state=3))
    names = TopologicalDescriptor().get_feature_names_out()
    assert list(names) == DESCRIPTOR_NAMES


def test_determinism(cloud):
    """Same random_state gives an identical descriptor; a different one changes it."""
    a = topological_descriptor(cloud, 80, random_state=0)
    b = topological_descriptor(cloud, 80, random_state=0)
    c = topological_descriptor(cloud, 80, random_state=1)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_two_blobs_h0_betti_curve_reaches_two():
    """The H0 Betti curve of two far-apart blobs takes the value 2 (n_sub=None).

    The H0 grid stops at the 95th percentile of the finite H0 deaths (Appendix B), so
    it reaches the inter-blob gap only when fewer than ~5% of the deaths exceed it:
    with 20 points the single inter-blob death is above the percentile. (With e.g. 50
    points per blob the grid ends inside the blobs' own scale and the curve never
    drops to 2, by construction.)
    """
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(scale=0.5, size=(10, 2)),
                   rng.normal(scale=0.5, size=(10, 2)) + [20.0, 0.0]])
    h0, _ = persistence_diagrams(X)
    assert betti_curve(h0, [5.0], n_essential=1)[0] == 2
    phi = topological_descriptor(X, n_sub=None)
    curve0 = phi[[i for i, n in enumerate(DESCRIPTOR_NAMES) if n.startswith("betti0_")]]
    assert curve0.size == 20
    assert 2.0 in curve0
    assert curve0[0] == X.shape[0]


def test_persistence_entropy_values():
    """Entropy of n equal bars is log(n); of a single bar 0; of an empty diagram 0."""
    assert persistence_entropy(np.full(7, 0.3)) == pytest.approx(np.log(7))
    assert persistence_entropy(np.array([2.5])) == 0.0
    assert persistence_entropy(np.array([])) == 0.0


def test_betti_curve_known_values():
    """Betti curve of a hand-made diagram, counting birth <= t < death."""
    dgm = np.array([[0.0, 1.0], [0.0, 2.0], [0.5, 1.5]])
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
    np.testing.assert_array_equal(betti_curve(dgm, t), [2, 3, 2, 1, 0, 0])
    np.testing.assert_array_equal(betti_curve(dgm, t, n_essential=1), [3, 4, 3, 2, 1, 1])
    np.testing.assert_array_equal(betti_curve(np.empty((0, 2)), t), np.zeros(6))


def test_bad_input_nan():
    """NaN in X raises ValueError mentioning NaN."""
    X = np.random.default_rng(0).normal(size=(100, 3))
    X[4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        topological_descriptor(X, 80, random_state=0)


@pytest.mark.parametrize("X", [np.empty((0, 3)), np.arange(10.0)])
def test_bad_input_empty_or_1d(X):
    """An empty cloud and a 1-D array are rejected."""
    with pytest.raises(ValueError):
        topological_descriptor(X)


def test_too_few_points_strict_and_lenient():
    """Fewer points than n_sub raise with strict=True and use all points with strict=False."""
    X = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match="n_sub"):
        topological_descriptor(X, 80, strict=True, random_state=0)
    phi = topological_descriptor(X, 80, strict=False, random_state=0)
    np.testing.assert_array_equal(phi, topological_descriptor(X, None))
    assert phi.shape == (48,)


def test_unknown_persistence():
    """An unknown persistence algorithm raises ValueError naming 'persistence'."""
    X = np.random.default_rng(0).normal(size=(100, 3))
    with pytest.raises(ValueError, match="unknown persistence 'cech'"):
        topological_descriptor(X, 80, persistence="cech", random_state=0)


def test_transformer_bad_input():
    """Dimension mismatch, unfitted transform and a bare 2-D array are rejected."""
    rng = np.random.default_rng(0)
    clouds3 = [rng.normal(size=(90, 3)), rng.normal(size=(100, 3))]
    clouds4 = [rng.normal(size=(90, 4))]
    with pytest.raises(ValueError, match="features"):
        TopologicalDescriptor(random_state=0).fit(clouds3).transform(clouds4)
    with pytest.raises(ValueError, match="fit"):
        TopologicalDescriptor(random_state=0).transform(clouds3)
    with pytest.raises(TypeError):
        TopologicalDescriptor(random_state=0).fit(clouds3[0])


def test_descriptor_distances_properties():
    """Descriptor distances are symmetric, zero on the diagonal and scale invariant."""
    Phi = np.abs(np.random.default_rng(0).normal(size=(6, 48)))
    D = descriptor_distances(Phi)
    assert D.shape == (6, 6)
    np.testing.assert_allclose(D, D.T)
    np.testing.assert_allclose(np.diag(D), 0.0, atol=1e-12)
    assert np.all(D[~np.eye(6, dtype=bool)] > 0)
    scaled = Phi.copy()
    scaled[2] *= 17.5
    np.testing.assert_allclose(descriptor_distances(scaled), D, atol=1e-12)


def test_diagram_distances_properties():
    """Wasserstein distances: identical diagrams at 0, symmetric, positive otherwise."""
    rng = np.random.default_rng(0)
    dgms = [persistence_diagrams(rng.normal(size=(25, 2))) for _ in range(3)]
    D = diagram_distances([dgms[0], dgms[1], dgms[0], dgms[2]])
    np.testing.assert_allclose(D, D.T)
    np.testing.assert_allclose(np.diag(D), 0.0)
    assert D[0, 2] == pytest.approx(0.0, abs=1e-12)
    assert D[0, 1] > 0 and D[1, 3] > 0


def test_diagram_distance_is_1_wasserstein_with_euclidean_ground_metric():
    """persim's distance, worked out by hand: W_1 (costs summed, not squared) with the
    Euclidean ground metric (not L-infinity), a point to the diagonal at (d - b)/sqrt(2).

    a = {(0, 4), (10, 14)}, b = {(1, 5), (10, 17)}. The optimal matching pairs (0, 4) with
    (1, 5) at sqrt(1 + 1) and (10, 14) with (10, 17) at 3: W_1 = 3 + sqrt(2) = 4.414.
    Any other matching costs more (sending (0, 4) and (1, 5) to the diagonal alone costs
    (4 + 4)/sqrt(2) = 5.66). The L-infinity ground metric would give 1 + 3 = 4, the
    2-Wasserstein distance sqrt(2 + 9) = 3.317.
    """
    import persim

    a = np.array([[0.0, 4.0], [10.0, 14.0]])
    b = np.array([[1.0, 5.0], [10.0, 17.0]])
    assert persim.wasserstein(a, b) == pytest.approx(3 + np.sqrt(2), abs=1e-12)
    # one point against an empty diagram: its Euclidean distance to the diagonal
    assert persim.wasserstein(np.array([[1.0, 3.0]]), np.empty((0, 2))) == pytest.approx(
        np.sqrt(2), abs=1e-12)
    # diagram_distances sums H0 and H1: here H0 differs by the point (0, 2) only
    h0_a, h0_b = np.array([[0.0, 2.0], [0.0, 1.0]]), np.array([[0.0, 1.0]])
    D = diagram_distances([[h0_a, a], [h0_b, b]])
    assert D[0, 1] == pytest.approx(np.sqrt(2) + 3 + np.sqrt(2), abs=1e-12)
    assert WASSERSTEIN == "1-Wasserstein distance (Euclidean ground metric)"


# -- errors that say which client and what to change (issue 12) ---------------------


def test_too_few_points_names_the_client():
    """The README's call on the healthcare clients says which client is too small."""
    clouds = [c.X_train for c in make_healthcare(random_state=0).clients]
    with pytest.raises(ValueError, match=r"X\[1\] \(client 1\) has 74 points, fewer than "
                                         "n_sub=80"):
        TopologicalDescriptor(n_sub=80, random_state=0).fit_transform(clouds)
    assert TopologicalDescriptor(n_sub=80, strict=False, random_state=0).fit_transform(
        clouds).shape == (8, 48)


@pytest.mark.parametrize("n", [60, 120, 180])
def test_triangle_memory_estimate_bounds_the_allocations(n):
    """The triangle estimate is derived from its three (E, n) arrays: it bounds the peak
    of what numpy allocates (traced), within 10%."""
    X = np.random.default_rng(0).normal(size=(n, 5))
    tracemalloc.start()
    try:
        persistence_diagrams(X, "triangle")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = persistence_module.persistence_memory(n, "triangle")
    assert peak <= estimate <= 1.1 * peak


@pytest.mark.parametrize("method", ["triangle", "ripser"])
def test_oversized_persistence_is_refused_before_computing(method, monkeypatch):
    """n_sub=None on a large cloud is refused with a safe n_sub that fits the budget,
    before anything is computed; that n_sub then runs."""
    budget = 64 * 2**20
    monkeypatch.setattr(persistence_module, "memory_budget", lambda: budget)
    computed = []
    for name in ("_ripser_diagrams", "_triangle_diagrams"):
        real = getattr(persistence_module, name)
        monkeypatch.setattr(persistence_module, name,
                            lambda X, real=real: computed.append(len(X)) or real(X))
    X = np.random.default_rng(0).normal(size=(2000, 5))
    with pytest.raises(MemoryError, match=r"X\[0\] \(client 0\): persistence of 2000 "
                                          "points .* pass n_sub=") as info:
        TopologicalDescriptor(n_sub=None, persistence=method).fit_transform([X])
    assert computed == []
    safe = int(re.search(r"n_sub=(\d+) or less", str(info.value)).group(1))
    estimate = persistence_module.persistence_memory
    assert estimate(safe, method) <= budget < estimate(safe + 1, method)
    phi = TopologicalDescriptor(n_sub=safe, persistence=method, random_state=0).fit_transform([X])
    assert phi.shape == (1, 48) and computed == [safe]
    with pytest.raises(MemoryError, match=f"subsample X to at most {safe} points"):
        persistence_diagrams(X, method)


def test_memory_budget_is_half_the_available_memory():
    budget = persistence_module.memory_budget()
    assert 0 < budget
    if not os.path.exists("/proc/meminfo"):
        pytest.skip("no /proc/meminfo: the budget falls back to the physical memory")
    with open("/proc/meminfo") as fh:
        total = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("MemTotal"))
    assert budget <= 0.5 * total


def test_diagram_inputs_are_checked():
    """Diagrams must be finite (birth, death) pairs, and a descriptor needs [H0, H1]."""
    with pytest.raises(ValueError, match=r"shape \(n_pairs, 2\)"):
        betti_curve(np.ones((3, 3)), [0.1])
    with pytest.raises(ValueError, match="NaN or infinite .* drop the infinite H0 bar"):
        betti_curve(np.array([[0.0, np.inf]]), [0.1])
    with pytest.raises(ValueError, match="dies before it is born"):
        betti_curve(np.array([[1.0, 0.5]]), [0.1])
    with pytest.raises(ValueError, match=r"\[H0, H1\]"):
        descriptor_from_diagrams([np.ones((2, 2))])
    with pytest.raises(ValueError, match="pers contains 1 NaN"):
        persistence_entropy([np.nan, 1.0])
    with pytest.raises(ValueError, match=r"diagrams\[1\]\[0\] contains 1 NaN"):
        diagram_distances([[np.array([[0, 1.0]]), np.empty((0, 2))],
                           [np.array([[0, np.nan]]), np.empty((0, 2))]])


def test_strict_must_be_a_flag():
    with pytest.raises(TypeError, match="strict must be True or False"):
        TopologicalDescriptor(n_sub=10, strict="no").fit([np.zeros((20, 2))])
