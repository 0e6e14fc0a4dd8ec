"""Label-aware descriptors: exact lower-star persistence, the class-conditional and the
model-anchored descriptors, their transformers, and PTopoFL's ``descriptor`` option."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import special_ortho_group

from topofl_lib.data import make_healthcare
from topofl_lib.federated import PTopoFL
from topofl_lib.federated.aggregation import cluster_clients, trust_weights
from topofl_lib.federated.client_descriptors import LabelAwareClient, check_descriptor
from topofl_lib.federated.local import LogisticLearner
from topofl_lib.topology import (
    ClassConditionalDescriptor,
    ModelAnchoredDescriptor,
    anchor_margins,
    class_conditional_descriptor,
    class_conditional_names,
    descriptor_distances,
    descriptor_from_diagrams,
    knn_edges,
    lower_star_diagrams,
    model_anchored_descriptor,
    model_anchored_names,
    per_point_summary,
    persistence_diagrams,
)
from topofl_lib.topology.class_conditional import rips_per_point
from topofl_lib.topology.summaries import paper_grids

BLOCK = 48


# -- brute-force reference for lower-star persistence ----------------------------------
def _reference_diagrams(values, edges):
    """Standard Z/2 boundary-matrix reduction of the lower-star filtered flag complex."""
    f = np.asarray(values, dtype=np.float64)
    n = f.size
    E = [tuple(sorted(map(int, e))) for e in edges]
    adj = {v: set() for v in range(n)}
    for a, b in E:
        adj[a].add(b)
        adj[b].add(a)
    tri = [t for t in itertools.combinations(range(n), 3)
           if t[1] in adj[t[0]] and t[2] in adj[t[0]] and t[2] in adj[t[1]]]
    simplices = [(v,) for v in range(n)] + E + tri
    # filtration order: value, then dimension (faces first), then a fixed tie-break
    simplices.sort(key=lambda s: (max(f[list(s)]), len(s), s))
    index = {s: i for i, s in enumerate(simplices)}
    columns = []
    for s in simplices:
        faces = [] if len(s) == 1 else [index[c] for c in itertools.combinations(s, len(s) - 1)]
        columns.append(set(faces))
    low_of = {}
    pairs, paired = [], set()
    for j, col in enumerate(columns):
        while col and max(col) in low_of:
            col ^= columns[low_of[max(col)]]
        if col:
            i = max(col)
            low_of[i] = j
            paired.update((i, j))
            pairs.append((i, j))
    out = {0: [], 1: []}
    for i, j in pairs:
        d = len(simplices[i]) - 1
        b, e = max(f[list(simplices[i])]), max(f[list(simplices[j])])
        if d in out and e > b:
            out[d].append((b, e))
    for i, s in enumerate(simplices):
        if i not in paired and len(s) - 1 in out:
            out[len(s) - 1].append((max(f[list(s)]), np.inf))
    return [np.array(sorted(out[q])).reshape(-1, 2) for q in (0, 1)]


@pytest.mark.parametrize("seed", range(12))
def test_lower_star_matches_brute_force(seed):
    """The diagrams equal a hand-written boundary-matrix reduction, ties included."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 10))
    X = rng.normal(size=(n, 2))
    values = rng.integers(0, 4, n).astype(float) if seed % 2 else rng.random(n) - 0.5
    edges = knn_edges(X, int(rng.integers(1, 4)))
    got = lower_star_diagrams(values, edges)
    ref = _reference_diagrams(values, edges)
    for q in (0, 1):
        np.testing.assert_array_equal(np.array(sorted(map(tuple, got[q]))).reshape(-1, 2),
                                      ref[q])


def test_lower_star_known_values():
    """A path and a square: hand-computed pairs (elder rule, essential cycle)."""
    path = np.array([[0, 1], [1, 2], [2, 3], [3, 4]])
    h0, h1 = lower_star_diagrams([0.0, 3.0, 1.0, 4.0, 2.0], path)
    np.testing.assert_array_equal(h0, [[0.0, np.inf], [1.0, 3.0], [2.0, 4.0]])
    assert h1.shape == (0, 2)
    square = np.array([[0, 1], [1, 2], [2, 3], [0, 3]])
    h0, h1 = lower_star_diagrams([0.0, 1.0, 2.0, 3.0], square)
    np.testing.assert_array_equal(h0, [[0.0, np.inf]])
    np.testing.assert_array_equal(h1, [[3.0, np.inf]])  # no triangle fills the square
    h0, h1 = lower_star_diagrams([0.0, 1.0, 2.0, 3.0], np.vstack([square, [[0, 2]]]))
    assert h1.shape == (0, 2)  # the diagonal makes two triangles: the loop is filled


def test_lower_star_keeps_float64_values():
    """Values closer than float32 resolves (ripser's type) keep their own pair: ripser
    sees their ranks, and the diagram maps back to the exact values."""
    v = np.array([0.5, 0.5 + 1e-10, 0.5 + 3e-10, 1.0 - 1e-12, 1.0])
    h0, h1 = lower_star_diagrams(v, [[0, 2], [1, 2], [2, 4], [3, 4]])
    np.testing.assert_array_equal(h0, [[v[0], np.inf], [v[1], v[2]], [v[3], v[4]]])
    assert h1.shape == (0, 2)


def test_lower_star_matches_gudhi():
    """Where gudhi (the ``deep`` extra) is installed: its SimplexTree gives the same
    diagrams, bit for bit, on k-NN graphs with ties and saturated logistic values."""
    gudhi = pytest.importorskip("gudhi")
    from scipy.special import expit

    rng = np.random.default_rng(1)
    for i in range(60):
        n = int(rng.integers(2, 90))
        X = rng.normal(size=(n, 3))
        f = (expit(rng.normal(scale=30, size=n)) if i % 3 == 0 else
             np.round(rng.random(n), 1) if i % 3 == 1 else rng.random(n))
        E = knn_edges(X, int(rng.integers(1, 16)))
        st = gudhi.SimplexTree()
        st.insert_batch(np.arange(n)[None, :], f)
        st.insert_batch(E.T, np.maximum(f[E[:, 0]], f[E[:, 1]]))
        st.expansion(2)
        st.compute_persistence(homology_coeff_field=2, persistence_dim_max=True)
        for q, got in enumerate(lower_star_diagrams(f, E)):
            ref = np.asarray(st.persistence_intervals_in_dimension(q)).reshape(-1, 2)
            ref = ref[ref[:, 1] > ref[:, 0]]
            np.testing.assert_array_equal(got, ref[np.lexsort((ref[:, 1], ref[:, 0]))])


def test_knn_edges_properties():
    """Symmetrised k-NN graph: sorted pairs, no self-loops, complete when k >= n - 1."""
    X = np.array([[0.0], [1.0], [3.0], [7.0]])
    np.testing.assert_array_equal(knn_edges(X, 1), [[0, 1], [1, 2], [2, 3]])
    full = knn_edges(X, 10)
    np.testing.assert_array_equal(full, np.array(list(itertools.combinations(range(4), 2))))
    dup = knn_edges(np.zeros((3, 2)), 1)
    assert np.all(dup[:, 0] < dup[:, 1])
    assert knn_edges(np.zeros((1, 2)), 3).shape == (0, 2)
    with pytest.raises(ValueError, match="n_neighbors"):
        knn_edges(X, 0)


@pytest.mark.parametrize("values,edges,match", [
    ([0.0, np.nan], [[0, 1]], "NaN"),
    ([0.0, 1.0], [[0, 2]], "outside"),
    ([0.0, 1.0], [[1, 1]], "self-loop"),
    ([], [], "non-empty"),
])
def test_lower_star_bad_input(values, edges, match):
    with pytest.raises(ValueError, match=match):
        lower_star_diagrams(values, edges)


# -- per-point summary ---------------------------------------------------------------
def test_per_point_summary_is_the_paper_statistics_divided():
    """Each entry is the 48-dim entry divided by log m, sqrt m or m (identity)."""
    X = np.random.default_rng(0).normal(size=(70, 4))
    dgms = persistence_diagrams(X)
    raw = descriptor_from_diagrams(dgms)
    pp = per_point_summary(dgms, 70, paper_grids(dgms))
    div = np.r_[[np.log(70)] * 2, [np.sqrt(70)] * 2, [70.0] * 44]
    np.testing.assert_allclose(pp, raw / div, rtol=1e-12)
    with pytest.raises(ValueError, match="cap"):
        per_point_summary([np.array([[0.0, np.inf]]), np.empty((0, 2))], 2,
                          [np.zeros(3), np.zeros(3)])


# -- class-conditional descriptor ------------------------------------------------------
@pytest.fixture(scope="module")
def labelled():
    """Two classes in R^4 with different shapes (one elongated)."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(60, 4)), rng.normal(size=(50, 4)) * [3, 1, 1, 0.5] + 2])
    y = np.r_[np.zeros(60, int), np.ones(50, int)]
    return X, y


def _cc(X, y, **kw):
    return class_conditional_descriptor(X, y, random_state=0, **kw)


def test_class_conditional_layout_and_names(labelled):
    X, y = labelled
    phi = _cc(X, y, proportions=True)
    assert phi.shape == (3 * BLOCK + 2,)
    names = class_conditional_names(2, proportions=True)
    assert len(names) == phi.size and len(set(names)) == phi.size
    np.testing.assert_allclose(phi[-2:], [60 / 110, 50 / 110])
    assert _cc(X, y, class_blocks=False).shape == (BLOCK,)


def test_class_conditional_invariances(labelled):
    """Invariant to permuting records (with their labels), rotations and translations."""
    X, y = labelled
    phi = _cc(X, y)
    perm = np.random.default_rng(3).permutation(y.size)
    R = special_ortho_group.rvs(4, random_state=2)
    for Xm, ym in ((X[perm], y[perm]), (X @ R.T, y), (X + [5.0, -1.0, 0.0, 9.0], y)):
        np.testing.assert_allclose(_cc(Xm, ym), phi, rtol=0, atol=1e-8)


def test_class_conditional_relabelling_is_equivariant():
    """Permuting classes permutes the class blocks and proportions and keeps the joint
    block; distances between consistently relabelled clients are unchanged."""
    rng = np.random.default_rng(4)
    clients = [(rng.normal(size=(90, 3)) * s, rng.integers(0, 3, 90)) for s in (1.0, 2.0)]
    pi = np.array([2, 0, 1])
    kw = {"n_classes": 3, "proportions": True, "class_weight": 1.0}
    for X, y in clients:
        a = _cc(X, y, **kw)
        b = _cc(X, pi[y], **kw)
        np.testing.assert_allclose(b[:BLOCK], a[:BLOCK], atol=1e-8)
        for c in range(3):
            np.testing.assert_allclose(b[BLOCK * (1 + pi[c]):BLOCK * (2 + pi[c])],
                                       a[BLOCK * (1 + c):BLOCK * (2 + c)], atol=1e-8)
        np.testing.assert_allclose(b[-3:][pi], a[-3:], atol=1e-12)
    tr = ClassConditionalDescriptor(random_state=0, **kw)
    before = descriptor_distances(tr.fit_transform(clients))
    after = descriptor_distances(tr.fit_transform([(X, pi[y]) for X, y in clients]))
    np.testing.assert_allclose(after, before, atol=1e-8)


def test_full_flip_swaps_class_blocks_and_leaves_joint_block(labelled):
    """A full binary flip is a reflection of the joint cloud: the joint block cannot see
    it, the class blocks swap (and differ here, since the classes have other shapes)."""
    X, y = labelled
    a, b = _cc(X, y), _cc(X, 1 - y)
    np.testing.assert_allclose(b[:BLOCK], a[:BLOCK], atol=1e-8)
    np.testing.assert_allclose(b[BLOCK:2 * BLOCK], a[2 * BLOCK:], atol=1e-8)
    assert not np.allclose(a, b)


def test_partial_flip_changes_the_joint_block():
    """Two separated blobs labelled by blob: flipping 30% of the labels moves points
    across the label axis, so the joint cloud (and its block) changes."""
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(size=(40, 2)), rng.normal(size=(40, 2)) + 8])
    y = np.r_[np.zeros(40, int), np.ones(40, int)]
    y2 = y.copy()
    y2[rng.choice(80, 24, replace=False)] ^= 1
    a, b = _cc(X, y, label_scale=1.0), _cc(X, y2, label_scale=1.0)
    assert np.linalg.norm(a[:BLOCK] - b[:BLOCK]) > 0.05


def test_features_only_block_is_the_per_point_rips_summary(labelled):
    """label_scale=0 and no class blocks: the per-point 48-dim summary of the features."""
    X, y = labelled
    np.testing.assert_allclose(_cc(X, y, label_scale=0.0, class_blocks=False),
                               rips_per_point(X, 80, 20, 0), atol=1e-12)


def test_small_and_absent_classes_get_the_zero_block():
    """Documented fallback: fewer than min_class_size records (or none) -> zeros."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(40, 3))
    y = np.r_[np.zeros(37, int), np.ones(3, int)]
    phi = class_conditional_descriptor(X, y, n_classes=3, random_state=0)
    assert phi.shape == (4 * BLOCK,)
    assert np.all(phi[2 * BLOCK:] == 0)  # class 1 has 3 < 5 records, class 2 none
    assert np.any(phi[BLOCK:2 * BLOCK] != 0)
    one = class_conditional_descriptor(X, np.zeros(40, int), n_classes=10, random_state=0)
    assert one.shape == (11 * BLOCK,) and np.all(np.isfinite(one))


def test_class_conditional_transformer(labelled):
    X, y = labelled
    other = (np.random.default_rng(7).normal(size=(30, 4)), np.arange(30) % 2)
    tr = ClassConditionalDescriptor(random_state=3)
    out = tr.fit_transform([other, (X, y)])
    np.testing.assert_array_equal(out[1], class_conditional_descriptor(X, y, random_state=3))
    assert list(tr.get_feature_names_out()) == class_conditional_names(2)
    assert tr.n_features_in_ == 4
    a = ClassConditionalDescriptor(random_state=5).fit_transform([(X, y)])
    np.testing.assert_array_equal(a, ClassConditionalDescriptor(random_state=5)
                                  .fit_transform([(X, y)]))


@pytest.mark.parametrize("call,exc,match", [
    (lambda X, y: class_conditional_descriptor(X, y + 1), ValueError, "labels"),
    (lambda X, y: class_conditional_descriptor(X, y[:-1]), ValueError, "entries"),
    (lambda X, y: class_conditional_descriptor(X, y, label_scale=-1.0), ValueError,
     "label_scale"),
    (lambda X, y: class_conditional_descriptor(X, y, min_class_size=1), ValueError,
     "min_class_size"),
    (lambda X, y: ClassConditionalDescriptor().fit(X), TypeError, "sequence"),
    (lambda X, y: ClassConditionalDescriptor().fit([X]), TypeError, "pair"),
    (lambda X, y: ClassConditionalDescriptor().transform([(X, y)]), ValueError, "fitted"),
    (lambda X, y: ClassConditionalDescriptor().fit([(X, y)]).transform([(X[:, :2], y)]),
     ValueError, "features"),
    (lambda X, y: ClassConditionalDescriptor(n_classes=1).fit([(X, y)]), ValueError,
     "n_classes"),
])
def test_class_conditional_bad_input(labelled, call, exc, match):
    X, y = labelled
    with pytest.raises(exc, match=match):
        call(X, y)


# -- model-anchored descriptor ----------------------------------------------------------
def test_anchor_margins_logistic_known_values():
    """Geometric margin s (w.x + b)/||w||: known values, scale-free in w, 0 for w = 0."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    y = np.array([1, 0, 1])
    w = np.array([3.0, 4.0, 1.0])
    np.testing.assert_allclose(anchor_margins(LogisticLearner(), w, X, y),
                               [4 / 5, -5 / 5, -6 / 5])
    np.testing.assert_allclose(anchor_margins(LogisticLearner(), 7 * w, X, y),
                               anchor_margins(LogisticLearner(), w, X, y))
    np.testing.assert_array_equal(anchor_margins(LogisticLearner(), np.zeros(3), X, y),
                                  np.zeros(3))
    np.testing.assert_allclose(anchor_margins(LogisticLearner(), w, X, 1 - y),
                               -anchor_margins(LogisticLearner(), w, X, y))
    with pytest.raises(ValueError, match="entries"):
        anchor_margins(LogisticLearner(), np.zeros(5), X, y)


class _Logits:
    """A stand-in network learner: fixed logits."""

    n_classes = 3

    def __init__(self, z):
        self.z = np.asarray(z, dtype=np.float64)

    def logits(self, w, X):
        return self.z

    def representation(self, w, X):
        return np.asarray(X, dtype=np.float64)


def test_anchor_margins_network_and_consistent_relabelling():
    """Logit margin z_y - max_{c != y} z_c; unchanged when classes are permuted in the
    labels and in the model's outputs together."""
    z = np.array([[2.0, 0.5, -1.0], [0.0, 3.0, 1.0]])
    y = np.array([0, 2])
    np.testing.assert_allclose(anchor_margins(_Logits(z), None, np.zeros((2, 1)), y),
                               [1.5, -2.0])
    pi = np.array([1, 2, 0])  # class c becomes pi[c]
    zp = np.empty_like(z)
    zp[:, pi] = z
    np.testing.assert_allclose(anchor_margins(_Logits(zp), None, np.zeros((2, 1)), pi[y]),
                               [1.5, -2.0])


@pytest.fixture(scope="module")
def anchored():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(120, 5))
    w = np.r_[rng.normal(size=5), 0.2]
    y = (X @ w[:-1] + w[-1] + rng.normal(scale=0.8, size=120) > 0).astype(int)
    return X, y, w


def test_model_anchored_layout_and_invariances(anchored):
    """Invariant to permuting records and to isometries of the points."""
    X, y, w = anchored
    m = anchor_margins(LogisticLearner(), w, X, y)
    phi = model_anchored_descriptor(X, m, random_state=0)
    assert phi.shape == (20 + BLOCK,) and len(model_anchored_names()) == phi.size
    perm = np.random.default_rng(9).permutation(120)
    R = special_ortho_group.rvs(5, random_state=3)
    for P, mm in ((X[perm], m[perm]), (X @ R.T + 3.0, m)):
        np.testing.assert_allclose(model_anchored_descriptor(P, mm, random_state=0), phi,
                                   atol=1e-10)


def test_model_anchored_sees_a_full_label_flip(anchored):
    """Against a fixed model, flipping every label negates the margins: the records the
    model agreed with now enter the filtration last, and the descriptor changes."""
    X, y, w = anchored
    lr = LogisticLearner()
    a = model_anchored_descriptor(X, anchor_margins(lr, w, X, y), random_state=0)
    b = model_anchored_descriptor(X, anchor_margins(lr, w, X, 1 - y), random_state=0)
    frac_a, frac_b = a[:20], b[:20]
    assert frac_a[10] < 0.5 < frac_b[10]  # most records agree with w, then most disagree
    assert np.linalg.norm(a - b) > 0.5


def test_model_anchored_constant_margin_known_values():
    """All margins equal to 0: every vertex enters at 1/2, the sublevel fraction is a
    step at 1/2, and only the graph's components (essential H0) remain."""
    X = np.vstack([np.zeros((5, 2)) + np.arange(5)[:, None] * 0.01,
                   np.zeros((5, 2)) + 50 + np.arange(5)[:, None] * 0.01])
    phi = model_anchored_descriptor(X, np.zeros(10), n_neighbors=2, n_thresholds=5)
    grid = np.linspace(0, 1, 5)
    np.testing.assert_array_equal(phi[:5], (grid >= 0.5).astype(float))
    summary = phi[5:]
    assert summary[6] == pytest.approx(2 / 10)  # two essential H0 classes (capped at 1)
    np.testing.assert_allclose(summary[8:13], (grid >= 0.5) * 2 / 10)  # Betti-0 curve
    assert summary[2] == pytest.approx(np.sqrt(2 * 0.5**2 / 10))  # amplitude per point


def test_model_anchored_transformer_and_errors(anchored):
    X, y, w = anchored
    m = anchor_margins(LogisticLearner(), w, X, y)
    tr = ModelAnchoredDescriptor(n_neighbors=5, random_state=1)
    out = tr.fit_transform([(X, m), (X[:40], m[:40])])
    np.testing.assert_array_equal(out[0], model_anchored_descriptor(X, m, n_neighbors=5,
                                                                    random_state=1))
    assert list(tr.get_feature_names_out()) == model_anchored_names()
    assert ModelAnchoredDescriptor(sublevel_fraction=False).fit_transform(
        [(X, m)]).shape == (1, BLOCK)
    with pytest.raises(ValueError, match="shape"):
        model_anchored_descriptor(X, m[:-1])
    with pytest.raises(ValueError, match="NaN"):
        model_anchored_descriptor(X, np.r_[m[:-1], np.nan])
    with pytest.raises(ValueError, match="n_neighbors"):
        ModelAnchoredDescriptor(n_neighbors=0).fit([(X, m)])
    with pytest.raises(ValueError, match="X\\[0\\]\\[1\\]"):
        ModelAnchoredDescriptor().fit([(X, m[:3])])


# -- PTopoFL(descriptor=...) -----------------------------------------------------------
@pytest.fixture(scope="module")
def healthcare():
    return make_healthcare(random_state=0)


def test_paper_descriptor_is_the_default(healthcare):
    a = PTopoFL(n_rounds=3, random_state=0).fit(healthcare)
    b = PTopoFL(n_rounds=3, random_state=0, descriptor="paper").fit(healthcare)
    np.testing.assert_array_equal(a.history_["client_auc"], b.history_["client_auc"])
    np.testing.assert_array_equal(a.descriptors_, b.descriptors_)


def _server_is_unchanged(est):
    """Eq. 8 trust and Eq. 6 weights of the current descriptors, within the clusters."""
    D = descriptor_distances(est.descriptors_)
    np.testing.assert_allclose(est.distances_, D)
    trust, z = trust_weights(D, est.tau)
    np.testing.assert_allclose(est.z_scores_, z)
    np.testing.assert_allclose(est.trust_, trust)
    for j in np.unique(est.labels_):
        assert est.weights_[est.labels_ == j].sum() == pytest.approx(1.0)
    assert est.consensus_weights_.sum() == pytest.approx(1.0)


def test_class_conditional_option(healthcare):
    est = PTopoFL(n_rounds=3, random_state=0, descriptor="class_conditional").fit(healthcare)
    assert est.descriptors_.shape == (8, 3 * BLOCK)
    _server_is_unchanged(est)
    # static data: the descriptor is computed once and tracked unchanged
    np.testing.assert_array_equal(est.signatures_[0], est.signatures_[-1])
    assert np.all(est.drift_ == 0)


def test_model_anchored_option_recomputes_against_the_broadcast_models(healthcare):
    est = PTopoFL(n_rounds=4, random_state=0, descriptor="model_anchored").fit(healthcare)
    dim = 2 * (20 + BLOCK)  # one block per cluster model (n_clusters=2)
    assert est.signatures_.shape == (4, 8, dim)
    np.testing.assert_array_equal(est.descriptors_, est.signatures_[-1])
    assert not np.allclose(est.signatures_[1], est.signatures_[-1])  # models moved
    # after the warm-up round both anchors were the same model: identical blocks
    np.testing.assert_array_equal(est.signatures_[0][:, :dim // 2],
                                  est.signatures_[0][:, dim // 2:])
    _server_is_unchanged(est)
    again = PTopoFL(n_rounds=4, random_state=0, descriptor="model_anchored").fit(healthcare)
    np.testing.assert_array_equal(est.history_["client_auc"], again.history_["client_auc"])


def test_model_anchored_separates_full_flips(healthcare):
    """The two label-flipping hospitals of seed 0 end in their own cluster with the two
    largest z-scores; the paper's descriptor cannot see them."""
    adv = ~healthcare.honest
    est = PTopoFL(n_rounds=6, random_state=0, descriptor="model_anchored").fit(healthcare)
    assert set(np.argsort(est.z_scores_)[-2:]) == set(np.flatnonzero(adv))
    assert len(set(est.labels_[adv])) == 1 and est.labels_[adv][0] not in est.labels_[~adv]


def test_label_aware_server_policies(healthcare, monkeypatch):
    """Clusters come from the last descriptors (every_round, the default) or from the
    first informative ones (once); consensus anchors give one block per client."""
    from topofl_lib.federated import client_descriptors as cd

    est = PTopoFL(n_rounds=4, random_state=0, descriptor="model_anchored").fit(healthcare)
    D_last = descriptor_distances(est.signatures_[-2])  # the step the last round used
    np.testing.assert_array_equal(est.labels_, cluster_clients(
        descriptor_distances(est.signatures_[-1]), 2))
    assert D_last.shape == (8, 8)
    monkeypatch.setattr(cd, "DEFAULT_ANCHORS", "consensus")
    monkeypatch.setattr(cd, "DEFAULT_RECLUSTER", "once")
    est = PTopoFL(n_rounds=4, random_state=0, descriptor="model_anchored").fit(healthcare)
    assert est.signatures_.shape == (4, 8, 20 + BLOCK)
    np.testing.assert_array_equal(est.labels_, cluster_clients(
        descriptor_distances(est.signatures_[0]), 2))
    # clusters kept after the first informative step: the weights still follow Eq. 8
    # and Eq. 6 on the latest descriptors
    _server_is_unchanged(est)
    monkeypatch.setattr(cd, "DEFAULT_ANCHORS", "median")
    with pytest.raises(ValueError, match="anchors"):
        PTopoFL(descriptor="model_anchored").fit(healthcare)
    monkeypatch.setattr(cd, "DEFAULT_ANCHORS", "clusters")
    monkeypatch.setattr(cd, "DEFAULT_RECLUSTER", "sometimes")
    with pytest.raises(ValueError, match="recluster"):
        PTopoFL(descriptor="model_anchored").fit(healthcare)


def test_label_aware_client_computes_the_transformers_output(healthcare):
    """A client's descriptor is the transformer's on its records, one block per anchor
    (margins of its model input), seeded by its own seed; a static class-conditional
    descriptor is reused until the client's labels change."""
    c = healthcare.clients[3]
    learner = LogisticLearner()
    anchors = np.random.default_rng(0).normal(size=(2, c.X_train.shape[1] + 1))
    tr = check_descriptor("model_anchored", 80, 20)
    got = LabelAwareClient(tr, learner, seed=11).descriptor(c.X_train, c.y_train, anchors)
    want = [model_anchored_descriptor(c.X_train, anchor_margins(learner, w, c.X_train,
                                                                c.y_train), random_state=11)
            for w in anchors]
    np.testing.assert_array_equal(got, np.concatenate(want))
    client = LabelAwareClient(check_descriptor("class_conditional", 80, 20), learner, seed=4)
    first = client.descriptor(c.X_train, c.y_train)
    np.testing.assert_array_equal(first, class_conditional_descriptor(
        c.X_train, c.y_train, random_state=4))
    assert client.descriptor(c.X_train.copy(), c.y_train.copy()) is first  # cached
    assert not np.array_equal(client.descriptor(c.X_train, 1 - c.y_train), first)


def test_descriptor_option_accepts_a_transformer(healthcare):
    est = PTopoFL(n_rounds=2, random_state=0, augment=False,
                  descriptor=ModelAnchoredDescriptor(n_neighbors=5, sublevel_fraction=False)
                  ).fit(healthcare)
    assert est.descriptors_.shape == (8, 2 * BLOCK)
    est = PTopoFL(n_rounds=2, random_state=0,
                  descriptor=ClassConditionalDescriptor(class_blocks=False)).fit(healthcare)
    assert est.descriptors_.shape == (8, BLOCK)


def test_descriptor_option_errors(healthcare):
    with pytest.raises(ValueError, match="descriptor"):
        PTopoFL(descriptor="betti").fit(healthcare)
    with pytest.raises(TypeError, match="descriptor"):
        PTopoFL(descriptor=object()).fit(healthcare)
    with pytest.raises(ValueError, match="distance='l2'"):
        PTopoFL(descriptor="class_conditional", distance="wasserstein").fit(healthcare)
    with pytest.raises(ValueError, match="n_neighbors"):
        PTopoFL(descriptor=ModelAnchoredDescriptor(n_neighbors=0)).fit(healthcare)


def test_label_aware_descriptors_with_a_dp_mechanism(healthcare):
    from topofl_lib.privacy import GaussianMechanism

    est = PTopoFL(n_rounds=2, random_state=0, descriptor="class_conditional",
                  descriptor_mechanism=GaussianMechanism(5.0)).fit(healthcare)
    assert est.signatures_ is None and est.descriptors_.shape == (8, 3 * BLOCK)
    assert not np.allclose(np.linalg.norm(est.descriptors_, axis=1), 1.0)  # noise added


def test_label_aware_descriptors_of_a_network():
    """With a torch network both descriptors summarise penultimate activations of the
    current model, recomputed each round after the warm-up."""
    from topofl_lib.deep import TorchModel, make_image_scenario

    sc = make_image_scenario("digits", "L", 4, param=0.3, random_state=1)
    for option, dim in (("class_conditional", 11 * BLOCK), ("model_anchored", 2 * 68)):
        est = PTopoFL(n_rounds=3, lr=0.05, local_epochs=1, augment=False, n_sub=60,
                      model=TorchModel("digits_cnn", momentum=0.5), random_state=0,
                      descriptor=option).fit(sc)
        assert est.signatures_.shape == (3, 4, dim)
        assert not np.allclose(est.signatures_[0], est.signatures_[-1])
        _server_is_unchanged(est)
