"""Bad inputs are refused with a message naming the parameter, never turned into a silent
wrong result or a hang (issue #23, "Nothing lost, nothing executed").

Each test would fail on the code before the fix: complex values lost their imaginary
part with only a NumPy warning; point clouds scaled by 1e300 or 1e-46 gave empty
persistence diagrams; ``clip_norm`` returned zeros for a vector whose norm overflows;
mechanisms with an infinite noise scale released infinities; ``sample_pairs`` looped
forever on NaN labels; three-class clients trained a round of a binary model before
failing on ``y_true``; range parameters failed with unpacking errors; ``predict`` with
the wrong number of features failed inside scipy; GFC returned identical centres.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager

import numpy as np
import pytest

import topofl_lib as tf
from topofl_lib.clustering import (
    MUFC,
    NNFC,
    GravitationalFederatedClustering,
    KFed,
    gravitational_potential,
)
from topofl_lib.clustering.evaluation import scale_to_l1_ball
from topofl_lib.clustering.gfc import local_centroids, paper_delta
from topofl_lib.core import Client, FederatedScenario
from topofl_lib.data.paper_protocol import paper_benchmark, paper_healthcare
from topofl_lib.federated import FedAvg, aggregate_round
from topofl_lib.federated.metrics import accuracy, roc_auc
from topofl_lib.privacy import GaussianMechanism, LaplaceMechanism, SampleLevelDP, clip_norm
from topofl_lib.topology import (
    knn_edges,
    model_anchored_descriptor,
    normalise_descriptors,
    persistence_diagrams,
    topological_descriptor,
)
from topofl_lib.topology.class_conditional import class_conditional_names
from topofl_lib.topology.descriptor import betti_curve, descriptor_names, persistence_entropy
from topofl_lib.topology.model_anchored import model_anchored_names

RNG = np.random.default_rng(0)
POINTS = RNG.normal(size=(40, 2))
X = RNG.normal(size=(30, 3))
Y2 = np.arange(30) % 2


@contextmanager
def finishes_within(seconds: int):
    """Fail (instead of hanging the suite) if the block runs longer than ``seconds``."""
    def stop(*_):
        raise TimeoutError(f"did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------- complex values are refused

COMPLEX_CASES = {
    "Client X_train": (lambda: Client(X + 1j, Y2, X, Y2), "X_train"),
    "Client X_test": (lambda: Client(X, Y2, X + 1j, Y2), "X_test"),
    "Client y_train": (lambda: Client(X, Y2 + 0j, X, Y2), "y_train"),
    "persistence_diagrams": (lambda: persistence_diagrams(POINTS + 1j), "X"),
    "clip_norm": (lambda: clip_norm(X + 1j, 1.0), "x"),
    "LaplaceMechanism.release": (lambda: LaplaceMechanism(1.0).release(X + 1j, 0), "x"),
    "model_anchored margins": (lambda: model_anchored_descriptor(X, Y2 + 1j), "margins"),
    "roc_auc scores": (lambda: tf.federated.roc_auc(Y2, X[:, 0] + 1j), "scores"),
    "gravitational_potential w": (
        lambda: gravitational_potential(X, X[:4], np.ones(4) + 1j), "w"),
    "scale_to_l1_ball": (lambda: scale_to_l1_ball(X + 1j), "X"),
}


@pytest.mark.parametrize("case", COMPLEX_CASES, ids=list(COMPLEX_CASES))
def test_complex_input_is_refused_naming_the_parameter(case):
    call, name = COMPLEX_CASES[case]
    with pytest.raises(TypeError, match=rf"^{name}\b.*(real numbers|class labels)"):
        call()


def test_object_labels_name_the_parameter():
    """An object array holding None used to fail in np.unique's comparison, naming
    nothing; an object array of numbers is still read as labels."""
    labels = Y2.astype(object)
    labels[3] = None
    with pytest.raises(TypeError, match=r"^y_train must hold class labels \(numbers\), got an "
                                        r"object array holding None \(NoneType\)"):
        Client(X, labels, X, Y2)
    with pytest.raises(TypeError, match=r"^y_test must hold class labels .* holding 'a' \(str"):
        Client(X, Y2, X, np.array(["a"] * len(Y2), dtype=object))
    np.testing.assert_array_equal(Client(X, Y2.astype(object), X, Y2).y_train, Y2)


def test_non_numeric_input_names_the_parameter():
    """Strings used to fail with NumPy's "could not convert string to float"."""
    with pytest.raises(TypeError, match=r"^margins must be an array of numbers"):
        model_anchored_descriptor(X, np.full(30, "a"))
    with pytest.raises(TypeError, match=r"^values must be an array of numbers"):
        tf.clustering.superlevel_persistence(np.full(30, "a"), knn_edges(X, 3))


# ------------------------------------------------ persistence at any float64 scale


@pytest.mark.parametrize("persistence", ["ripser", "triangle"])
@pytest.mark.parametrize("scale", [1e300, 1e200, 1e-46, 1e-200])
def test_persistence_is_scale_equivariant_at_extreme_scales(scale, persistence):
    """40 distinct points have 39 finite H0 bars at every scale, and the diagrams scale
    with the points (they used to be empty: distances overflowed or underflowed)."""
    ref = persistence_diagrams(POINTS, persistence)
    got = persistence_diagrams(POINTS * scale, persistence)
    assert len(got[0]) == len(ref[0]) == 39
    for g, r in zip(got, ref, strict=True):
        assert g.shape == r.shape
        np.testing.assert_allclose(g / scale, r, rtol=1e-6)


def test_everyday_scale_persistence_is_unchanged():
    """Rescaling by a power of two is exact: the published diagrams keep their bits."""
    from topofl_lib.topology.persistence import _ripser_diagrams, _triangle_diagrams

    P = RNG.normal(size=(30, 4)) * 3.7
    for ours, direct in zip(persistence_diagrams(P), _ripser_diagrams(P), strict=True):
        np.testing.assert_array_equal(ours, direct)
    for ours, direct in zip(persistence_diagrams(P, "triangle"), _triangle_diagrams(P),
                            strict=True):
        np.testing.assert_array_equal(ours, direct)


def test_distances_beyond_float64_are_refused():
    with pytest.raises(ValueError, match=r"^X: .*exceed float64"):
        persistence_diagrams(np.array([[1.7e308, 0.0], [-1.7e308, 0.0]]))


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_descriptor_and_its_normalisation_at_extreme_scales(scale):
    """The amplitudes scale with the data (they overflowed to inf, or underflowed to 0),
    the scale-free entries do not change, and the l2 direction is the same."""
    ref = topological_descriptor(POINTS, None)
    got = topological_descriptor(POINTS * scale, None)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got[2:4] / scale, ref[2:4], rtol=1e-6)  # amplitudes
    np.testing.assert_allclose(np.r_[got[:2], got[4:]], np.r_[ref[:2], ref[4:]], rtol=1e-6)
    np.testing.assert_allclose(normalise_descriptors([ref * scale]),
                               normalise_descriptors([ref]), rtol=1e-12)


def test_a_descriptor_that_overflows_is_refused_not_nan():
    """Persistence of this cloud is finite (deaths of 1e308), but the descriptor's sums of
    them overflow: it used to come back with NaN entries."""
    X = np.array([[1e308, 1.0], [-1e308, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert all(np.all(np.isfinite(d)) for d in persistence_diagrams(X))
    with pytest.raises(ValueError, match=r"^client 2: its descriptor overflows float64 "
                                         r"\(largest persistence value 1e\+308\)"):
        topological_descriptor(X, None, name="client 2")


def test_descriptor_strict_is_a_flag():
    with pytest.raises(TypeError, match="strict must be True or False, got 'no'"):
        topological_descriptor(POINTS, 10, strict="no")


def test_knn_graph_does_not_depend_on_scale():
    np.testing.assert_array_equal(knn_edges(POINTS * 1e300, 4), knn_edges(POINTS, 4))


def test_triangle_method_handles_duplicate_and_near_duplicate_points():
    """scipy read distances below 1e-8 as missing edges, and a zero-length edge between
    duplicates made a spurious H1 pair born at 0."""
    P = POINTS[:12].copy()
    P[1] = P[0]
    P[3] = P[2] + [1e-10, 0.0]
    h0, h1 = persistence_diagrams(P, "triangle")
    deaths = np.sort(h0[:, 1])
    assert deaths[0] == 0.0 and deaths[1] == pytest.approx(1e-10, rel=1e-6)
    exact = np.sort(persistence_diagrams(P)[0][:, 1])
    np.testing.assert_allclose(deaths[2:], exact[-9:], rtol=1e-6)
    assert not np.any(h1[:, 0] == 0.0)


# -------------------------------------------------------------- privacy mechanisms


def test_clip_norm_of_vectors_whose_norm_overflows_or_underflows():
    np.testing.assert_allclose(clip_norm([1e300, 1e300], 1.0), [[2**-0.5, 2**-0.5]])
    np.testing.assert_allclose(clip_norm([1e308, 1e308], 1.0, ord=1), [[0.5, 0.5]])
    tiny = np.array([[1e-200, -3e-200]])
    np.testing.assert_array_equal(clip_norm(tiny, 1.0), tiny)  # within the bound
    clipped = clip_norm(tiny, 1e-201)  # the squares underflow: the norm used to be 0
    np.testing.assert_allclose(clipped, tiny / np.sqrt(10) / 10, rtol=1e-12)


def test_clip_norm_keeps_its_bits_at_everyday_scales():
    x = RNG.normal(size=(50, 48)) * RNG.uniform(0.01, 100, size=(50, 1))
    for ord in (1, 2):
        norms = np.linalg.norm(x, ord=ord, axis=1, keepdims=True)
        np.testing.assert_array_equal(clip_norm(x, 2.0, ord=ord),
                                      x * np.minimum(1.0, 2.0 / np.maximum(norms, 1e-300)))


def test_clip_norm_refuses_an_order_that_is_not_a_norm():
    with pytest.raises(ValueError, match=r"^ord must be 1, 2 or inf \(a norm\), got 0"):
        clip_norm(X, 1.0, ord=0)


@pytest.mark.parametrize("make", [
    lambda: LaplaceMechanism(1e-320),
    lambda: LaplaceMechanism(1e-10, clip=1e308),
    lambda: GaussianMechanism(1e-320, calibration="classic"),
], ids=["laplace", "laplace-huge-clip", "gaussian-classic"])
def test_mechanism_with_infinite_noise_scale_is_refused(make):
    with pytest.raises(ValueError, match=r"^epsilon=.*too small.*beyond float64"):
        make()


def test_analytic_gaussian_at_tiny_epsilon_is_finite():
    """The analytic sigma stays finite as epsilon -> 0 (about Delta / (delta sqrt(2 pi)))."""
    out = GaussianMechanism(1e-320).release(np.ones(3), random_state=0)
    assert np.all(np.isfinite(out))


# ------------------------------------------------------------------- no hang


def test_sample_pairs_refuses_nan_labels_instead_of_looping():
    from topofl_lib.fedtopo import sample_pairs  # needs torch

    with finishes_within(10), pytest.raises(ValueError, match=r"^y contains 2 NaN"):
        sample_pairs(np.array([np.nan, np.nan, 1.0]), 1)
    with pytest.raises(TypeError, match="^y must hold class labels"):
        sample_pairs(np.array([1j, 2j, 1j]), 1)


def test_sample_pairs_ends_when_one_kind_of_pair_is_rare():
    """One same-class pair among 200,000 samples: rejection would need ~10^10 draws."""
    from topofl_lib.fedtopo import sample_pairs

    y = np.r_[0, 0, np.arange(1, 200_000)]
    with finishes_within(20):
        pairs, same = sample_pairs(y, 50, random_state=0)
    assert (y[pairs[same, 0]] == y[pairs[same, 1]]).all()
    assert (y[pairs[~same, 0]] != y[pairs[~same, 1]]).all()
    assert (pairs[:, 0] != pairs[:, 1]).all() and same.sum() == 50


def test_sample_pairs_stream_is_unchanged_for_ordinary_labels():
    """The rejection draw of ordinary labels is the one the published TGBS runs used."""
    from topofl_lib.fedtopo import sample_pairs

    y = np.arange(100) % 10
    pairs, _ = sample_pairs(y, 20, random_state=3)
    rng = np.random.default_rng(3)
    same, diff = [], []
    while len(same) < 20 or len(diff) < 20:
        i, j = rng.integers(y.size, size=2)
        if i != j and y[i] == y[j] and len(same) < 20:
            same.append((i, j))
        elif i != j and y[i] != y[j] and len(diff) < 20:
            diff.append((i, j))
    np.testing.assert_array_equal(pairs, np.array(same + diff))


# ------------------------------------------------------------------------- labels


def _three_class(labels=np.arange(30) % 3) -> Client:
    return Client(X, labels, X, labels, n_classes=3)


def test_binary_model_refuses_three_class_clients_before_training():
    sc = FederatedScenario("s", [_three_class(), _three_class()])
    model = FedAvg(n_rounds=1)
    with pytest.raises(ValueError, match=r"n_classes=3 \(training labels \[0, 1, 2\]\).*"
                                         r"binary labels 0/1 only"):
        model.fit(sc)
    assert not hasattr(model, "history_")


def test_scenario_refuses_clients_with_different_label_sets():
    with pytest.raises(ValueError, match=r"^client 1 has n_classes=2 but client 0 has "
                                         r"n_classes=3"):
        FederatedScenario("s", [_three_class(), Client(X, Y2, X, Y2)])


def test_label_skew_within_one_label_set_is_accepted():
    """A client of a three-class problem may hold only some classes."""
    sc = FederatedScenario("s", [_three_class(), _three_class(Y2)])
    assert {c.n_classes for c in sc.clients} == {3}


def test_scenario_clients_must_be_a_list():
    with pytest.raises(TypeError, match="^clients must be a list of Client, got Client"):
        FederatedScenario("s", Client(X, Y2, X, Y2))


# -------------------------------------------------------------- range parameters


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.make_healthcare(protocol="paper", size_range=100), TypeError,
     r"^size_range must be a pair \(low, high\), got 100"),
    (lambda: tf.make_benchmark(protocol="paper", imbalance_range=(0.1, 0.2, 0.3)), TypeError,
     r"^imbalance_range must be a pair"),
    (lambda: paper_healthcare(mortality_range=(np.nan, 0.3)), ValueError,
     r"^mortality_range\[0\] must be finite"),
    (lambda: paper_healthcare(scale_range=(1.4, 0.7)), ValueError,
     r"^scale_range must be \(low, high\) with low <= high"),
    (lambda: paper_healthcare(size_range=(60, 60)), ValueError,
     r"^size_range must be \(low, high\) with low < high"),
    (lambda: paper_benchmark(size_range=("a", 10)), TypeError, r"^size_range\[0\] must be an int"),
    (lambda: paper_benchmark(positive_classes=3), TypeError, r"^positive_classes must be a "),
    (lambda: paper_benchmark(positive_classes=[2.5]), TypeError,
     r"^positive_classes\[0\] must be an int"),
], ids=["hc-size-int", "bm-imbalance-3", "hc-mortality-nan", "hc-scale-reversed",
        "hc-size-empty", "bm-size-str", "bm-positive-int", "bm-positive-float"])
def test_paper_protocol_range_parameters_name_themselves(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_alpha_schedule_loss_range_is_a_pair():
    from topofl_lib.fedtopo import AlphaSchedule

    with pytest.raises(TypeError, match=r"^loss_range must be a pair"):
        AlphaSchedule(loss_range=(0.1, 0.2, 0.3)).validate()


# ------------------------------------------------------------------- clustering

CLUSTERERS = [KFed, MUFC, NNFC, GravitationalFederatedClustering]


@pytest.mark.parametrize("cls", CLUSTERERS, ids=lambda c: c.__name__)
def test_predict_checks_the_number_of_features(cls):
    clients = [RNG.normal(size=(40, 2)) for _ in range(3)]
    est = cls(2, random_state=0, n_local=5).fit(clients)
    with pytest.raises(ValueError, match=rf"^X has 5 features, but this {cls.__name__} was "
                                         r"fitted on 2"):
        est.predict(np.zeros((3, 5)))


@pytest.mark.filterwarnings("ignore:Number of distinct clusters")  # k-means says so too
@pytest.mark.parametrize("cls", CLUSTERERS, ids=lambda c: c.__name__)
def test_identical_records_cannot_give_distinct_centres(cls):
    """GFC returned two identical centres where the baselines raise."""
    clients = [np.full((30, 2), 0.1) for _ in range(3)]
    with pytest.raises(ValueError, match=rf"^{cls.__name__} has 1 distinct .*n_clusters=2"):
        cls(2, epsilon=1e20, random_state=0, n_local=5).fit(clients)


@pytest.mark.parametrize("which, name", [(0, "G"), (1, "C"), (2, "w")])
def test_gravitational_potential_refuses_nan(which, name):
    args = [X.copy(), X[:4].copy(), np.ones(4)]
    args[which].flat[0] = np.nan
    with pytest.raises(ValueError, match=rf"^{name} contains 1 NaN"):
        gravitational_potential(*args)


def test_scale_to_l1_ball_of_identical_records_is_finite():
    np.testing.assert_array_equal(scale_to_l1_ball(np.ones((5, 2))), np.zeros((5, 2)))


# -------------------------------------------------------------- federated server


def test_aggregate_round_refuses_a_non_finite_reply():
    models = np.array([[np.nan, 1.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match=r"^local_models \(rows of the responding"):
        aggregate_round(models, [0, 0], [0.5, 0.5], [2], 0.0,
                        responded=np.array([True, True]))
    # a non-responder's row is ignored, as documented
    out = aggregate_round(models, [0, 0], [0.5, 0.5], [2], 0.0,
                          responded=np.array([False, True]))
    np.testing.assert_array_equal(out, [[1.0, 2.0]])


# --------------------------------------------------------------------- torch models


def test_torch_model_refuses_images_of_another_size():
    pytest.importorskip("torch")
    from topofl_lib.deep import TorchModel

    Xd = RNG.normal(size=(40, 64))
    yd = np.arange(40) % 10
    sc = FederatedScenario("d", [Client(Xd, yd, Xd, yd, n_classes=10)] * 2)
    with pytest.raises(ValueError, match=r"^architecture='fmnist_cnn' takes 28x28 images, "
                                         r"but .* shape \(1, 8, 8\)"):
        FedAvg(n_rounds=1, model=TorchModel("fmnist_cnn"), random_state=0).fit(sc)
    learner = TorchModel("digits_cnn").make_learner(64, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^X must be flattened images of shape \(n, 64\)"):
        learner.logits(learner.init_params(), RNG.normal(size=(3, 128)))  # used to be 6


# ------------------------------------------------ small helpers found by the API audit
@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: accuracy([0, 1], [0.2, 0.8], threshold=float("nan")),
     ValueError, "threshold must be finite, got nan"),
    (lambda: accuracy([], []), ValueError,
     "y_true and proba are empty"),  # it returned NaN
    (lambda: roc_auc([], []), ValueError, "y_true and scores are empty"),
    (lambda: SampleLevelDP.sample_rate(0, 32), ValueError,
     "n must be >= 1, got 0"),  # ZeroDivisionError
    (lambda: SampleLevelDP.sample_rate(10, 0), ValueError,
     "batch_size must be >= 1, got 0"),  # a rate of 0.0
])
def test_small_helpers_name_the_bad_parameter(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: descriptor_names(-1), ValueError, "n_thresholds must be >= 2, got -1"),
    (lambda: descriptor_names(2.0), TypeError, "n_thresholds must be an int"),
    (lambda: class_conditional_names(0), ValueError,
     "n_classes must be >= 2, got 0"),
    (lambda: model_anchored_names(0), ValueError,
     "n_thresholds must be >= 2, got 0"),
    (lambda: persistence_entropy([-1.0, 1.0]), ValueError,
     "pers holds negative persistence -1"),  # the -1 was left out silently
    (lambda: persistence_entropy([[1.0, 2.0]]), ValueError,
     r"pers must be 1-D .* got shape \(1, 2\)"),
    (lambda: betti_curve(np.array([[0.0, 1.0]]), np.array([0.5]), n_essential=-1),
     ValueError, "n_essential must be >= 0, got -1"),  # negative Betti numbers
])
def test_topology_helpers_name_the_bad_parameter(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: paper_delta(float("nan")), ValueError,
     "epsilon must be finite, got nan"),  # it returned nan
    (lambda: paper_delta(-1.0), ValueError, "epsilon must be > 0.0"),
    (lambda: local_centroids(POINTS, 3, mass="inverse", delta=-1.0),
     ValueError, "delta must be > 0.0, got -1.0"),  # negative masses
    (lambda: local_centroids(POINTS, 3, sigma=0.0), ValueError,
     "sigma must be > 0.0, got 0.0"),  # every mass 0
    (lambda: local_centroids(POINTS, 0), ValueError,
     "n_local must be >= 1, got 0"),  # KMeans's n_clusters error
    (lambda: gravitational_potential(POINTS[:2], POINTS[:3], [1.0, -1.0, 1.0]), ValueError,
     "w must hold masses >= 0, got -1"),
])
def test_gfc_helpers_name_the_bad_parameter(call, error, message):
    with pytest.raises(error, match=message):
        call()
