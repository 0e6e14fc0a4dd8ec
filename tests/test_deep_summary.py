"""The values the ptopofl_deep notebook's prose states (topofl_lib.studies.deep_ptopofl):
known tables in, known numbers and words out; the paper's values come from its claims."""

import numpy as np
import pandas as pd
import pytest

from topofl_lib.prose import render
from topofl_lib.results import load_paper_claims
from topofl_lib.statistics import holm_family, paired_differences
from topofl_lib.studies import deep_ptopofl as dp

METHODS = ["pTopoFL", "FedAvg", "pFedMe"]


def _final(acc):
    """A final table: {(dataset, alpha): {method: per-seed accuracies}}."""
    rows = [(d, a, m, s, v) for (d, a), by in acc.items() for m, vals in by.items()
            for s, v in enumerate(vals)]
    return pd.DataFrame(rows, columns=["dataset", "param", "method", "seed", "accuracy"])


def _family(final):
    return holm_family({dp.setting_name(d, a): paired_differences(g, "pTopoFL", "accuracy")
                        for (d, a), g in final.groupby(["dataset", "param"])})


@pytest.fixture
def final():
    return _final({("fashion_mnist", 0.1): {"pTopoFL": [0.80, 0.70, 0.75],
                                            "FedAvg": [0.60, 0.65, 0.70],
                                            "pFedMe": [0.90, 0.85, 0.80]},
                   ("fashion_mnist", 0.5): {"pTopoFL": [0.70, 0.72, 0.74],
                                            "FedAvg": [0.71, 0.73, 0.75],
                                            "pFedMe": [0.70, 0.70, 0.70]}})


def test_levels_list_the_methods_in_order_with_the_paper_beside(final):
    v = dp.levels_values(final, METHODS)
    assert v["f01"] == "FedAvg 65.0 ± 5.0, pFedMe 85.0 ± 5.0, pTopoFL 75.0 ± 5.0"
    assert v["f05"] == "FedAvg 73.0 ± 2.0, pFedMe 70.0 ± 0.0, pTopoFL 72.0 ± 2.0"
    assert v["m01"] == v["m05"] == "n/a"                  # not run
    claims = load_paper_claims()
    assert v["paper_fedavg_cifar01"] == pytest.approx(
        100 * claims.loc["ptopofl.t2.cifar01.fedavg", "value"])
    assert v["paper_ptopofl_femnist"] == pytest.approx(
        100 * claims.loc["ptopofl.t2.femnist.ptopofl", "value"])


def test_paired_values_read_the_family_in_points(final):
    family = _family(final)
    v = dp.paired_values(final, family, n_seeds=3)
    row = family.loc[("fashion_mnist Dir(0.1)", "FedAvg")]
    assert v["g01"] == pytest.approx(100 * row["mean_diff"]) == pytest.approx(10.0)
    assert (v["lo01"], v["hi01"]) == pytest.approx((100 * row["ci_low"], 100 * row["ci_high"]))
    assert (v["w01"], v["w05"]) == (3, 0)
    assert v["g05"] == pytest.approx(-1.0)
    assert v["direction"] == "the paper's direction in one of the two"
    assert v["pmin"] == 0.25 and v["m"] == 4
    assert (v["best"], v["pf"], v["pt"], v["wp"]) == ("pFedMe", pytest.approx(85.0),
                                                      pytest.approx(75.0), 0)
    assert np.isnan(v["gm01"]) and np.isnan(v["gm05"])   # MNIST-5k not run
    # the paper's pFedMe (0.72, 0.83, 0.68) is below its pTopoFL (0.74, 0.86, 0.84)
    assert v["pfedme_paper"] == "0.72, 0.83, 0.68"
    assert v["pfedme_verdict"] == "below pTopoFL everywhere"


def test_paired_values_count_the_intervals_that_exclude_zero():
    final = _final({("fashion_mnist", a): {"pTopoFL": [0.80, 0.81, 0.82, 0.83],
                                           "FedAvg": [0.70, 0.70, 0.71, 0.71],
                                           "pFedMe": [0.5, 0.5, 0.5, 0.5]} for a in (0.1, 0.5)})
    v = dp.paired_values(final, _family(final), n_seeds=4)
    assert v["intervals"] == "both 95% intervals exclude 0"
    assert v["direction"] == "the direction the paper reports"
    assert v["pmin"] == 0.125


def test_the_notebook_templates_take_every_value(final):
    v = {**dp.levels_values(final, METHODS), **dp.paired_values(final, _family(final), 3)}
    text = render(" ".join(f"{{{k}}}" for k in v), **v)
    assert "n/a" in text and "nan" not in text.lower().replace("n/a", "")


def test_server_view_counts_split_classes_and_trust():
    v = dp.server_view_values(clusters=[0, 0, 0, 1, 1, 2], trust=[1, 1, 1, 1, 0.4, 1],
                              dominant=[5, 9, 3, 9, 2, 0])
    assert (v["n_clusters"], v["classes_per_cluster"], v["n_singletons"]) == (3, "3, 2, 1", 1)
    assert (v["shared"], v["split"], v["n_split"]) == ("9", "9", 1)
    assert v["n_downweighted"] == 1 and v["tracks"] == "do not line up with"
    same = dp.server_view_values([0, 0, 1], [1.0, 1.0, 1.0], [4, 4, 7])
    assert same["tracks"] == "line up with" and same["split"] == "none"


def test_server_view_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="shapes"):
        dp.server_view_values([0, 1], [1.0], [3, 3])


def test_deep_ma_values_levels_and_paired_gains():
    from topofl_lib.studies.label_aware import deep_ma_values

    acc = {"pTopoFL-MA": [0.80, 0.82, 0.84], "pTopoFL": [0.70, 0.71, 0.75],
           "FedAvg": [0.72, 0.74, 0.73], "TrimmedMean": [0.6] * 3, "Median": [0.5] * 3,
           "Krum": [0.3, 0.35, 0.4]}
    final = pd.DataFrame([(m, s, v) for m, vals in acc.items() for s, v in enumerate(vals)],
                         columns=["method", "seed", "accuracy"])
    v = deep_ma_values(final)
    assert (v["ma"], v["pt"], v["fa"], v["kr"]) == pytest.approx((0.82, 0.72, 0.73, 0.35))
    assert v["ma_lo"] < v["ma"] < v["ma_hi"]
    assert (v["d1"], v["d2"]) == pytest.approx((0.10, 0.09))
    assert (v["w1"], v["w2"]) == (3, 3) and v["p1"] == pytest.approx(0.25)
    assert np.isnan(deep_ma_values(final[final["method"] != "Median"])["md"])
