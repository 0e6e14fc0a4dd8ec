"""GFC building blocks: merge-tree persistence, the LDP mechanism, the estimator."""

import numpy as np
import pytest
from scipy import sparse
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from topofl_lib.clustering import (
    GravitationalFederatedClustering,
    gravitational_potential,
    laplace_ldp,
    superlevel_persistence,
)


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
