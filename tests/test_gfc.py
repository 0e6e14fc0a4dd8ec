"""GFC building blocks: merge-tree persistence, the LDP mechanism, the estimator."""

import numpy as np
import pytest
from scipy import sparse
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from topofl_lib.clustering import (
    MUFC,
    NNFC,
    GravitationalFederatedClustering,
    KFed,
    gravitational_potential,
    laplace_ldp,
    superlevel_persistence,
)
from topofl_lib.clustering.evaluation import load_clustering_dataset
from topofl_lib.clustering.gfc import paper_delta
from topofl_lib.data import kmeans_noniid_partition


def _path_graph(m):
    return sparse.diags([np.ones(m - 1)], [1], shape=(m, m))


def test_merge_tree_of_a_1d_energy_has_the_known_persistences():
    """Peaks of height 5, 3, 4 at vertices 1, 3, 5 of a path, valleys 1 and 2 between.

    Sweeping down: the peak 3 meets the peak 4 at value 2 and dies (persistence 1); the
    peak 4 meets the peak 5 at value 1 and dies (persistence 3); the global peak lives
    down to the minimum 0 (persistence 5).
    """
    values = np.array([0.0, 5.0, 1.0, 3.0, 2.0, 4.0, 0.5])
    tree = superlevel_persistence(values, _path_graph(values.size))
    assert tree.peaks.tolist() == [1, 5, 3]
    assert np.allclose(tree.birth, [5.0, 4.0, 3.0])
    assert np.allclose(tree.death, [0.0, 1.0, 2.0])
    assert np.allclose(tree.persistence, [5.0, 3.0, 1.0])
    assert dict(zip(tree.peaks.tolist(), tree.merged_into.tolist(), strict=True)) == {
        1: -1, 5: 1, 3: 5}
    # vertex 6 (value 0.5) joins after all merges, hence the global basin
    assert tree.assign([1, 5]).tolist() == [1, 1, 1, 5, 5, 5, 1]


def test_merge_tree_leaves_are_the_hilltops_above_the_first_saddle():
    """Two hills on a path, 5 at vertex 2 and 3.5 at vertex 6, meeting at vertex 4 (value 1).

    Sweeping down, each hill gathers its own shoulders (vertices 1, 3 and 5, 7) before the
    two components first meet at vertex 4: those are the leaves. The basin of the higher
    peak also holds everything swept after the merge (4, 8, 0).
    """
    values = np.array([0.0, 4.0, 5.0, 4.5, 1.0, 3.0, 3.5, 2.5, 0.2])
    tree = superlevel_persistence(values, _path_graph(values.size))
    assert tree.peaks.tolist() == [2, 6]
    assert tree.first_merge.tolist() == [tree.rank[4]] * 2
    assert tree.leaves([2, 6]).tolist() == [-1, 2, 2, 2, -1, 6, 6, 6, -1]
    assert tree.leaves([6]).tolist() == [-1, -1, -1, -1, -1, 6, 6, 6, -1]
    assert tree.assign([2, 6]).tolist() == [2, 2, 2, 2, 2, 6, 6, 6, 2]
    # a single hill never meets another component: its leaf is its whole basin
    single = superlevel_persistence([1.0, 2.0, 3.0, 2.0], _path_graph(4))
    assert single.first_merge.tolist() == [4]
    assert single.leaves([2]).tolist() == [2, 2, 2, 2]
    # a younger bump next to the higher peak cuts that peak's leaf at the bump's saddle
    bump = superlevel_persistence([5.0, 4.0, 4.2, 1.0], _path_graph(4))
    assert bump.leaves(bump.peaks).tolist() == [0, -1, 2, -1]
    with pytest.raises(ValueError, match="not a peak"):
        tree.leaves([3])


def test_merge_tree_validates():
    """Bad values or a mismatched graph raise."""
    with pytest.raises(ValueError, match="NaN"):
        superlevel_persistence([0.0, np.nan], _path_graph(2))
    with pytest.raises(ValueError, match="graph"):
        superlevel_persistence([0.0, 1.0, 2.0], _path_graph(2))


def test_laplace_ldp_scale_and_clipping():
    """Noise has Laplace scale sensitivity/epsilon; records are clipped to L1 radius sens/2."""
    X = np.zeros((40000, 3))
    noisy = laplace_ldp(X, epsilon=2.0, sensitivity=1.0, random_state=0)
    assert np.abs(noisy).mean() == pytest.approx(0.5, rel=0.02)
    far = np.array([[10.0, 0.0, 0.0]])
    clipped = laplace_ldp(np.repeat(far, 20000, 0), epsilon=1e6, sensitivity=1.0,
                          random_state=0)
    assert np.allclose(clipped.mean(axis=0), [0.5, 0, 0], atol=1e-3)
    with pytest.raises(ValueError, match="epsilon"):
        laplace_ldp(X, epsilon=0.0, sensitivity=1.0)


def _blobs():
    X, y = make_blobs(1500, centers=3, n_features=2, cluster_std=0.5, random_state=0)
    X = X / np.abs(X).sum(axis=1).max() * 0.5
    parts = np.array_split(np.random.default_rng(0).permutation(len(X)), 10)
    return X, y, [X[p] for p in parts]


def test_three_blobs_are_recovered_with_a_large_budget():
    """epsilon = 1000: ARI > 0.95, found by persistence (no fallback)."""
    X, y, clients = _blobs()
    est = GravitationalFederatedClustering(3, epsilon=1000, random_state=0).fit(clients)
    assert adjusted_rand_score(y, est.predict(X)) > 0.95
    assert est.fallback_ is None and est.n_peaks_ >= 3


def test_gfc_is_deterministic_given_a_seed():
    """The same seed gives the same centres."""
    _, _, clients = _blobs()
    a = GravitationalFederatedClustering(3, epsilon=5, random_state=3).fit(clients)
    b = GravitationalFederatedClustering(3, epsilon=5, random_state=3).fit(clients)
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)


def test_potential_formula():
    """E(g) = sum w / (||g - c||^p + delta) on a hand example."""
    E = gravitational_potential([[0.0, 0.0]], np.array([[1.0, 0.0], [0.0, 2.0]]),
                                np.array([1.0, 2.0]), p=2, delta=1.0)
    assert E[0] == pytest.approx(1 / 2 + 2 / 5)


def _gfc_centre_rules(est):
    """The centres each rule gives for a fitted model's chosen peaks (no fallback)."""
    G, E, tree, peaks = est.synthetic_, est.energy_, est.merge_tree_, est.peaks_

    def means(labels):
        return np.array([E[labels == p] @ G[labels == p] / E[labels == p].sum() for p in peaks])

    return {"leaf": means(tree.leaves(peaks)), "peak": G[peaks],
            "basin": means(tree.assign(peaks))}


def test_gfc_centre_of_a_peak_follows_center_from():
    """Default: the energy-weighted mean of each chosen peak's leaf (Algorithm 4, line 9);
    "peak" and "basin" give the peak point and the basin mean. The three differ, and each
    rule recovers three well separated blobs."""
    X, y, clients = _blobs()
    fits = {rule: GravitationalFederatedClustering(3, epsilon=1000, center_from=rule,
                                                   random_state=0).fit(clients)
            for rule in ("leaf", "peak", "basin")}
    assert GravitationalFederatedClustering().center_from == "leaf"
    expected = _gfc_centre_rules(fits["leaf"])
    for rule, est in fits.items():
        assert est.fallback_ is None
        assert np.allclose(est.cluster_centers_, expected[rule])
        assert adjusted_rand_score(y, est.predict(X)) > 0.95
    assert not np.allclose(expected["leaf"], expected["basin"])
    assert not np.allclose(expected["leaf"], expected["peak"])
    with pytest.raises(ValueError, match="center_from"):
        GravitationalFederatedClustering(3, center_from="mean").fit(clients)


def _paper_clients(name, seed=0):
    """Clients and class count as clustering_experiment builds them (Algorithm 5)."""
    X, y = load_clustering_dataset(name)
    clients = [X[p] for p in kmeans_noniid_partition(X, y, 10, random_state=seed)]
    smallest = min(len(c) for c in clients)
    return clients, int(np.unique(y).size), min(int(15 + smallest / 500), smallest)


@pytest.mark.parametrize("name, epsilon, seed", [("blobs2d", 1.0, 0), ("iris", 1000.0, 2)])
def test_gfc_fallback_fills_every_missing_centre(name, epsilon, seed):
    """Regression: with fewer peaks than clusters the fallback used to add nothing (1 of 4
    centres on 2-D blobs at epsilon = 1, 2 of 3 on iris at epsilon = 1000). Now the
    missing centres are the highest-energy synthetic points that are not a peak."""
    clients, k, n_local = _paper_clients(name, seed)
    est = GravitationalFederatedClustering(k, epsilon=epsilon, n_local=n_local,
                                           random_state=seed).fit(clients)
    assert est.n_peaks_ < k and est.fallback_ == "top_energy_points"
    assert est.cluster_centers_.shape == (k, clients[0].shape[1])
    for rule in ("leaf", "peak", "basin"):
        est = GravitationalFederatedClustering(k, epsilon=epsilon, n_local=n_local,
                                               center_from=rule, random_state=seed).fit(clients)
        assert est.n_peaks_ < k and est.fallback_ == "top_energy_points"
        C = est.cluster_centers_
        assert C.shape == (k, clients[0].shape[1]) and len(np.unique(C, axis=0)) == k
        assert np.allclose(C[:est.n_peaks_], _gfc_centre_rules(est)[rule])
        ranked = [j for j in np.argsort(-est.energy_) if j not in est.peaks_]
        assert np.array_equal(C[est.n_peaks_:], est.synthetic_[ranked[:k - est.n_peaks_]])


def test_gfc_asked_for_more_clusters_than_peaks():
    """Regression: n_clusters=3 on two tight blobs returned 2 centres."""
    X, _ = make_blobs(400, centers=[[-0.2, 0.0], [0.2, 0.0]], cluster_std=0.01, random_state=0)
    est = GravitationalFederatedClustering(3, epsilon=1000, random_state=0).fit(
        [X[:200], X[200:]])
    assert est.n_peaks_ == 2 and est.fallback_ == "top_energy_points"
    assert est.cluster_centers_.shape == (3, 2)
    assert len(np.unique(est.cluster_centers_, axis=0)) == 3


@pytest.mark.parametrize("cls", [GravitationalFederatedClustering, KFed, MUFC, NNFC])
@pytest.mark.parametrize("n_clusters", [1, 2, 5, 8])
def test_every_estimator_returns_exactly_n_clusters_distinct_centres(cls, n_clusters):
    """On three blobs, any n_clusters (fewer or more than the blobs) gives that many
    distinct centres, at a weak and a strong budget."""
    _, _, clients = _blobs()
    for epsilon in (1000.0, 1.0):
        C = cls(n_clusters, epsilon=epsilon, random_state=0).fit(clients).cluster_centers_
        assert C.shape == (n_clusters, 2) and len(np.unique(C, axis=0)) == n_clusters


@pytest.mark.parametrize("cls", [KFed, MUFC, NNFC])
def test_baselines_raise_instead_of_returning_fewer_centres(cls):
    """Too few uploads in all, or uploads with fewer distinct points than n_clusters,
    raise with the reason (they used to return fewer centres silently)."""
    _, _, clients = _blobs()
    with pytest.raises(ValueError, match=r"upload 10 local points in all.*n_clusters=12"):
        cls(12, n_local=1, random_state=0).fit(clients)
    twins = [np.repeat([[0.1, 0.1], [-0.1, -0.1]], 20, axis=0)] * 3
    with pytest.raises(ValueError, match="n_clusters=3"):
        cls(3, epsilon=1e300, n_local=2, random_state=0).fit(twins)


def test_nnfc_one_record_client_is_a_clear_error():
    """Regression: NN-FC with a one-record client failed inside scikit-learn
    ("Expected n_neighbors <= n_samples_fit")."""
    _, _, clients = _blobs()
    with pytest.raises(ValueError, match=r"client_datasets\[3\] has 1 record.*at least 2"):
        NNFC(3, random_state=0).fit(clients[:3] + [clients[3][:1]])
    assert KFed(3, random_state=0).fit(clients[:3] + [clients[3][:1]]).cluster_centers_.shape \
        == (3, 2)


@pytest.mark.parametrize("cls", [GravitationalFederatedClustering, KFed, MUFC, NNFC])
def test_epsilon_whose_laplace_scale_overflows_is_refused(cls):
    """Regression: epsilon = 1e-200 failed with "axis 1 index 3300 exceeds matrix dimension"
    (GFC) or returned inf/NaN-driven centres. The Laplace scale sensitivity/epsilon must be
    at most 1e50; at the bound every method runs without a floating-point warning."""
    _, _, clients = _blobs()
    with pytest.raises(ValueError, match=r"epsilon=1e-200 .* use epsilon >= 1e-50"):
        cls(3, epsilon=1e-200).fit(clients)
    with pytest.raises(ValueError, match="sensitivity/epsilon = 1e\\+52"):
        cls(3, epsilon=0.01, sensitivity=1e50).fit(clients)
    with np.errstate(all="raise"):
        C = cls(3, epsilon=1e-50, random_state=0).fit(clients).cluster_centers_
    assert np.all(np.isfinite(C))


def test_gfc_sse_mass_at_the_largest_laplace_scale():
    """mass="sse" takes fourth powers of the noisy coordinates: still finite at 1e50."""
    _, _, clients = _blobs()
    with np.errstate(all="raise"):
        est = GravitationalFederatedClustering(3, epsilon=1e-50, mass="sse",
                                               random_state=0).fit(clients)
    assert np.all(np.isfinite(est.masses_)) and np.all(est.masses_ > 0)


def test_gfc_delta_is_a_fitted_attribute():
    """delta_ is the softening used: the paper's 500 exp(-5 epsilon) (floored at 1e-12)
    unless delta is given; the energy of the synthetic points is computed with it."""
    _, _, clients = _blobs()
    for epsilon in (0.5, 1000.0):
        est = GravitationalFederatedClustering(3, epsilon=epsilon, random_state=0).fit(clients)
        assert est.delta_ == paper_delta(epsilon) == max(500 * np.exp(-5 * epsilon), 1e-12)
        assert np.allclose(est.energy_, gravitational_potential(
            est.synthetic_, est.centroids_, est.masses_, est.p, est.delta_))
    assert GravitationalFederatedClustering(3, delta=0.25, random_state=0).fit(
        clients).delta_ == 0.25


@pytest.mark.parametrize("kwargs, data, error, match", [
    ({"epsilon": 0}, None, ValueError, "epsilon"),
    ({"epsilon": -1}, None, ValueError, "epsilon"),
    ({"mass": "heavy"}, None, ValueError, "mass"),
    ({}, [], ValueError, "empty"),
    ({}, [np.zeros((0, 2))], ValueError, "0 points"),
    ({}, [np.ones((50, 2)), np.ones((50, 3))], ValueError, "dimensions"),
    ({}, [np.full((50, 2), np.nan)], ValueError, "NaN"),
    ({"n_local": 20}, [np.random.default_rng(0).normal(size=(10, 2))], ValueError, "fewer"),
])
def test_gfc_bad_input(kwargs, data, error, match):
    """Bad parameters and client data raise clear errors."""
    _, _, clients = _blobs()
    with pytest.raises(error, match=match):
        GravitationalFederatedClustering(3, **kwargs).fit(clients if data is None else data)


@pytest.mark.parametrize("name", ["KFed", "MUFC", "NNFC"])
def test_baselines_recover_blobs_and_share_the_ldp_step(name):
    """With a large budget every baseline recovers three blobs; a seed fixes the result;
    bad epsilon and mismatched dimensions raise like GFC's."""
    import topofl_lib.clustering as cl

    cls = getattr(cl, name)
    X, y, clients = _blobs()
    est = cls(3, epsilon=1000, random_state=0).fit(clients)
    assert adjusted_rand_score(y, est.predict(X)) > 0.95
    again = cls(3, epsilon=5, random_state=1).fit(clients).cluster_centers_
    assert np.array_equal(again, cls(3, epsilon=5, random_state=1).fit(clients).cluster_centers_)
    with pytest.raises(ValueError, match="epsilon"):
        cls(3, epsilon=0).fit(clients)
    with pytest.raises(ValueError, match="dimensions"):
        cls(3).fit([np.ones((20, 2)), np.ones((20, 3))])


def test_kmeans_noniid_partition_never_fails():
    """Algorithm 5 (made total): every record assigned once, no empty client, for many
    seeds, client counts and a small dataset; deterministic given a seed."""
    from sklearn.datasets import load_iris

    from topofl_lib.data import kmeans_noniid_partition

    X, y = load_iris(return_X_y=True)
    for seed in range(60):
        for n_clients in (2, 10, 30):
            parts = kmeans_noniid_partition(X, y, n_clients, random_state=seed)
            assert len(parts) == n_clients
            assert all(p.size > 0 for p in parts)
            allidx = np.concatenate(parts)
            assert np.array_equal(np.sort(allidx), np.arange(len(X)))
    a = kmeans_noniid_partition(X, y, 10, random_state=5)
    b = kmeans_noniid_partition(X, y, 10, random_state=5)
    assert all(np.array_equal(p, q) for p, q in zip(a, b, strict=True))
    with pytest.raises(ValueError, match="n_clients"):
        kmeans_noniid_partition(X[:5], y[:5], 10)


def test_kmeans_noniid_partition_is_skewed():
    """Clients other than the last draw from at most two k-means groups, so most hold at
    most two of the three iris classes' worth of groups (label skew)."""
    from sklearn.cluster import KMeans
    from sklearn.datasets import load_iris

    from topofl_lib.data import kmeans_noniid_partition

    X, y = load_iris(return_X_y=True)
    parts = kmeans_noniid_partition(X, y, 10, random_state=0)
    assert max(len(p) for p in parts[:-1]) <= len(X) // 10
    groups = KMeans(3, n_init=3, random_state=0).fit_predict(X)
    assert np.mean([np.unique(groups[p]).size <= 2 for p in parts[:-1]]) >= 0.5


def test_clustering_experiment_counts_every_run():
    """Every (method, seed, epsilon) appears; ARI/NMI in [0, 1]; datasets are scaled into
    the L1 ball of radius 1/2 so that the LDP sensitivity is real."""
    from topofl_lib.clustering.evaluation import clustering_experiment, load_clustering_dataset

    X, _ = load_clustering_dataset("iris")
    assert np.abs(X).sum(axis=1).max() == pytest.approx(0.5)
    df = clustering_experiment(["iris"], [1000.0, 0.1], [0, 1], progress=False)
    assert len(df) == 2 * 2 * 4
    assert df[["ari", "nmi"]].apply(lambda c: c.between(-0.5, 1.0)).all().all()
    assert df.query("epsilon == 1000 and method == 'GFC'")["ari"].min() > 0.3
    with pytest.raises(ValueError, match="dataset"):
        load_clustering_dataset("cifar")


def test_gfc_refuses_an_alpha_that_asks_for_too_many_synthetic_points():
    """Regression: alpha = 1e9 raised MemoryError while drawing the synthetic points. The
    count is alpha times the uploaded centroids (4 clients of n_local 5: 20), refused above
    MAX_SYNTHETIC_POINTS by name, before any client step; at the bound's edge it runs."""
    from topofl_lib.clustering.gfc import MAX_SYNTHETIC_POINTS

    _, _, clients = _blobs()
    clients = clients[:4]
    with pytest.raises(ValueError, match=r"alpha=1000000000.0 asks for 20000000000 synthetic "
                                         r"points \(20 uploaded centroids\); at most "
                                         f"{MAX_SYNTHETIC_POINTS}"):
        GravitationalFederatedClustering(3, alpha=1e9, n_local=5).fit(clients)
    est = GravitationalFederatedClustering(3, alpha=3.0, n_local=5, random_state=0).fit(clients)
    assert est.synthetic_.shape == (60, 2)
