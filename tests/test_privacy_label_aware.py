"""The privacy attacks against the label-aware descriptors (``descriptor=`` of the attacks)."""

import numpy as np
import pytest

from topofl_lib import PTopoFL
from topofl_lib.data import make_scenario
from topofl_lib.federated.local import LogisticLearner
from topofl_lib.privacy import (
    ATTACK_DESCRIPTORS,
    descriptor_inversion_experiment,
    descriptor_map,
    dp_utility_experiment,
    invert_descriptor,
    membership_experiment,
    membership_inference,
)
from topofl_lib.topology import (
    anchor_margins,
    class_conditional_descriptor,
    model_anchored_descriptor,
    topological_descriptor,
)


@pytest.fixture(scope="module")
def labelled():
    """A labelled cloud of 40 records in 3-D and a logistic model (weights, bias)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int)
    return X, y, np.array([1.0, -0.5, 0.2, 0.1])


def test_descriptor_map_is_each_named_descriptor(labelled):
    """Each name maps to its descriptor, with the client's subsample seed."""
    X, y, w = labelled
    np.testing.assert_array_equal(
        descriptor_map("paper")(X, y, 30, 7),
        topological_descriptor(X, 30, strict=False, random_state=7))
    np.testing.assert_array_equal(
        descriptor_map("class_conditional")(X, y, 30, 7),
        class_conditional_descriptor(X, y, n_sub=30, random_state=7))
    np.testing.assert_array_equal(
        descriptor_map("model_anchored", w=w)(X, y, 30, 7),
        model_anchored_descriptor(X, anchor_margins(LogisticLearner(), w, X, y), n_sub=30,
                                  random_state=7))
    fn = lambda X, y, n_sub, random_state: X.mean(axis=0)  # noqa: E731
    assert descriptor_map(fn) is fn
    assert ATTACK_DESCRIPTORS == ("paper", "class_conditional", "model_anchored")


def test_only_the_model_anchored_descriptor_sees_a_full_flip(labelled):
    """A full label flip leaves the features (paper's descriptor) unchanged; the
    broadcast model's margins change sign, so the model-anchored descriptor moves."""
    X, y, w = labelled
    paper, anchored = descriptor_map("paper"), descriptor_map("model_anchored", w=w)
    np.testing.assert_array_equal(paper(X, y, None, 0), paper(X, 1 - y, None, 0))
    assert not np.allclose(anchored(X, y, None, 0), anchored(X, 1 - y, None, 0))


def test_descriptor_map_bad_inputs():
    with pytest.raises(ValueError, match="descriptor must be one of"):
        descriptor_map("persistence")
    with pytest.raises(ValueError, match="needs the broadcast model w"):
        descriptor_map("model_anchored")
    with pytest.raises(ValueError, match="needs the broadcast model w"):
        descriptor_map("model_anchored", w=np.array([1.0, np.nan]))


@pytest.mark.parametrize("descriptor", ["class_conditional", "model_anchored"])
def test_label_aware_inversion_never_worsens_and_starts_from_the_population(labelled,
                                                                            descriptor):
    """The search keeps its start records' labels; losses never increase; n_iter = 0 is
    the labelled population sample."""
    X, y, w = labelled
    rng = np.random.default_rng(1)
    pop, pop_y = rng.normal(size=(120, 3)), rng.integers(0, 2, 120)
    target = descriptor_map(descriptor, w=w)(X[:25], y[:25], None, None)
    X_hat, losses = invert_descriptor(target, pop, 25, n_iter=25, descriptor=descriptor,
                                      labels=pop_y, w=w, random_state=0)
    assert X_hat.shape == (25, 3) and losses.shape == (26,)
    assert np.all(np.diff(losses) <= 0)
    X0, l0 = invert_descriptor(target, pop, 25, n_iter=0, descriptor=descriptor,
                               labels=pop_y, w=w, random_state=0)
    assert l0[0] == losses[0]
    assert all(np.any(np.all(pop == row, axis=1)) for row in X0)


def test_label_aware_inversion_bad_inputs(labelled):
    X, y, w = labelled
    pop = np.random.default_rng(2).normal(size=(60, 3))
    target = descriptor_map("class_conditional")(X, y, None, None)
    with pytest.raises(ValueError, match="pass labels"):
        invert_descriptor(target, pop, 20, n_iter=1, descriptor="class_conditional")
    with pytest.raises(ValueError, match=r"labels must have shape \(60,\)"):
        invert_descriptor(target, pop, 20, n_iter=1, descriptor="class_conditional",
                          labels=np.zeros(59, dtype=int))
    with pytest.raises(ValueError, match="target has shape"):
        invert_descriptor(target[:48], pop, 20, n_iter=1, descriptor="class_conditional",
                          labels=np.zeros(60, dtype=int))


@pytest.mark.parametrize("descriptor", ["class_conditional", "model_anchored"])
def test_membership_inference_on_label_aware_descriptors(labelled, descriptor):
    """An AUC in [0, 1], the same for the same seed."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 2, 60)
    w = labelled[2]
    runs = [membership_inference(X, y, 20, "descriptor", w=w, n_targets=4, n_shadow=3,
                                 n_sub=15, descriptor=descriptor, random_state=0)
            for _ in range(2)]
    assert 0.0 <= runs[0]["auc"] <= 1.0 and runs[0]["auc"] == runs[1]["auc"]
    for key in ("scores", "members"):  # every trial the same, not only the AUC
        np.testing.assert_array_equal(runs[0][key], runs[1][key])
    if descriptor == "model_anchored":
        with pytest.raises(ValueError, match="needs the broadcast model w"):
            membership_inference(X, y, 20, "descriptor", n_targets=4, n_shadow=3,
                                 descriptor=descriptor)


def test_runners_label_the_descriptor_and_use_it():
    """The runners carry a descriptor column; the DP runner's non-private row is pTopoFL
    with that descriptor option; unknown names and channels raise before any run."""
    inv = descriptor_inversion_experiment(seeds=[0], n_iter=3, max_clients=1, progress=False,
                                          descriptor="model_anchored")
    assert set(inv["descriptor"]) == {"model_anchored"} and len(inv) == 2
    mia = membership_experiment(seeds=[0], n=20, n_targets=4, n_shadow=3, progress=False,
                                descriptor="class_conditional", channels=("descriptor",))
    assert mia[["channel", "descriptor"]].values.tolist() == [["descriptor",
                                                                "class_conditional"]]
    dp = dp_utility_experiment(seeds=[0], epsilons=(1.0,), n_rounds=2, progress=False,
                               descriptor="class_conditional")
    plain = PTopoFL(n_rounds=2, descriptor="class_conditional", random_state=0).fit(
        make_scenario("healthcare", random_state=0))
    row = dp[(dp["method"] == "pTopoFL") & np.isinf(dp["epsilon"])]
    assert row["auc"].item() == pytest.approx(plain.history_["auc"][-1])
    assert set(dp["descriptor"]) == {"", "class_conditional"}
    with pytest.raises(ValueError, match="descriptor must be one of"):
        descriptor_inversion_experiment(seeds=[0], descriptor="betti", progress=False)
    with pytest.raises(ValueError, match="unknown channel"):
        membership_experiment(seeds=[0], channels=("model",), progress=False)
