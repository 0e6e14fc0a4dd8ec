"""The values the privacy notebook's prose states (topofl_lib.studies.privacy_summary):
known tables in, known numbers out; what a run lacks is NaN."""

import math

import numpy as np
import pandas as pd
import pytest

from topofl_lib.privacy import GaussianMechanism
from topofl_lib.prose import render
from topofl_lib.statistics import holm_family, paired_differences
from topofl_lib.studies import privacy_summary as ps

INF = math.inf


@pytest.fixture
def dp():
    rows = []
    for s in (0, 1, 2):
        for eps, sigma in ((1.0, 5.0), (1000.0, 0.25), (INF, 0.0)):
            rows.append(("healthcare", "pTopoFL", eps, sigma, 0.80 + 0.01 * s, s))
            rows.append(("benchmark", "pTopoFL", eps, sigma, 0.70 - 0.01 * s, s))
        rows.append(("healthcare", "FedAvg", INF, 0.0, 0.78 + 0.01 * s, s))
        rows.append(("benchmark", "FedAvg", INF, 0.0, 0.69, s))
    return pd.DataFrame(rows, columns=["scenario", "method", "epsilon", "sigma", "auc", "seed"])


def _family(dp):
    runs = dp.assign(method=dp["method"].where(dp["method"].eq("FedAvg") | dp["epsilon"].eq(INF),
                                               "pTopoFL eps " + dp["epsilon"].map(str)))
    return holm_family({s: paired_differences(runs[runs["scenario"] == s], "pTopoFL")
                        for s in ("healthcare", "benchmark")})


def test_descriptor_dp_values(dp):
    v = ps.descriptor_dp_values(dp, _family(dp), [1.0, 1000.0])
    assert (v["s1"], v["s1000"]) == (5.0, 0.25)
    assert v["coord"] == pytest.approx(1 / math.sqrt(48))
    assert (v["h_lo"], v["h_hi"]) == pytest.approx((0.81, 0.81))
    assert (v["h_nodp"], v["h_fedavg"]) == pytest.approx((0.81, 0.79))
    assert (v["b_lo"], v["b_hi"]) == pytest.approx((0.69, 0.69))
    assert v["d"] == pytest.approx(0.02) and v["w"] == 3
    assert v["m"] == 2   # the private variants tie pTopoFL on every seed: no Wilcoxon test
    assert v["verdict"] == ("significant" if v["h"] < 0.05 else "not significant")
    ratio = GaussianMechanism(100.0).sigma / GaussianMechanism(100.0, calibration="classic").sigma
    assert v["r100"] == pytest.approx(ratio) and v["r100"] > 1   # classic under-noises


def test_descriptor_dp_values_without_epsilon_one_is_nan(dp):
    v = ps.descriptor_dp_values(dp[dp["epsilon"] != 1.0], _family(dp), [1000.0])
    assert np.isnan(v["s1"]) and v["e_lo"] == v["e_hi"] == 1000.0


def _cost(rows):
    return (pd.DataFrame(rows, columns=["scenario", "base", "target_epsilon", "cost", "ci_low",
                                        "ci_high"])
            .set_index(["scenario", "base", "target_epsilon"]))


def test_end_to_end_values():
    final = pd.DataFrame({"target_epsilon": [1.0, 10.0, 10.0, INF],
                          "epsilon": [0.99, 9.97, 10.0, 0.0],
                          "epsilon_descriptor": [0.1, 0.5, 0.6, 0.0]})
    t1 = _cost([("healthcare", "pTopoFL", 1.0, -0.05, -0.1, 0.0),
                ("healthcare", "pTopoFL", 10.0, -0.01, -0.02, 0.0),
                ("benchmark", "pTopoFL", 10.0, 0.002, -0.01, 0.01),
                ("healthcare", "FedAvg", 10.0, -0.03, -0.05, -0.01)])
    deep = _cost([("fmnist", "pTopoFL", 10.0, -0.123, -0.2, -0.05)])
    v = ps.end_to_end_values(final, t1, deep, [1.0, 10.0])
    assert v["tol"] == pytest.approx(0.03) and v["d_eps"] == 0.6
    assert (v["top"], v["low"]) == (10.0, 1.0)
    assert v["per_target"] == "ε = 1: -0.050, n/a; ε = 10: -0.010, +0.002"
    assert v["f_hc"] == -0.03 and np.isnan(v["f_bm"]) and np.isnan(v["f_hc_low"])
    assert v["deep_text"] == "pTopoFL at ε = 10: -12.3 points (-20.0 to -5.0)"


def test_adversary_values_per_budget():
    det = pd.DataFrame({"target_epsilon": [INF, INF, 1.0, 10.0], "seed": [0, 1, 0, 0],
                        "isolated": [1.0, 0.5, 0.0, 0.25], "flagged": [1.0, 1.0, 0.0, 0.5],
                        "adversarial_weight": [0.0, 0.1, 0.3, 0.2],
                        "adversarial_share": [0.3] * 4})
    v = ps.adversary_values(det, [1.0, 10.0])
    assert (v["iso_clear"], v["flag_clear"], v["w_clear"]) == pytest.approx((0.75, 1.0, 0.05))
    assert (v["iso_top"], v["iso_low"], v["w_low"]) == (0.25, 0.0, 0.3)
    assert v["share"] == pytest.approx(0.3) and (v["top"], v["low"]) == (10.0, 1.0)


def test_audit_values():
    aud = pd.DataFrame([("membership", "gradient", INF, 2.0, INF, 5.0),
                        ("membership", "descriptor", INF, 0.5, INF, 5.0),
                        ("membership", "gradient", 1.0, 0.1, 0.3, 5.0),
                        ("membership", "descriptor", 10.0, 0.4, 2.5, 5.0),
                        ("canary", "gradient", INF, 7.2, INF, 7.2),
                        ("canary", "gradient", 1.0, 0.2, 0.9, 7.2),
                        ("canary", "gradient", 10.0, 3.0, 9.0, 7.2),
                        ("defect noise/10", "gradient", 1.0, 4.5, 0.9, 7.2),
                        ("defect no clipping", "gradient", 1.0, 6.0, 0.9, 7.2),
                        ("defect no clipping", "gradient", 10.0, 7.2, 9.0, 7.2)],
                       columns=["attack", "channel", "target_epsilon", "epsilon_lb",
                                "epsilon_release", "design_epsilon"])
    inv = pd.DataFrame({"attack": ["closed_form"] * 3 + ["optimisation"],
                        "target_epsilon": [INF, INF, 10.0, INF],
                        "recovered": [1.0, 1.0, 0.0, 0.5]})
    v = ps.audit_values(aud, inv, [1.0, 10.0])
    assert (v["mia_max"], v["rel_lo"], v["rel_hi"]) == (0.4, 0.3, 2.5)
    assert (v["clear_grad"], v["clear_desc"]) == (2.0, 0.5)
    assert (v["can_low"], v["acc_low"], v["can_top"], v["acc_top"]) == (0.2, 0.9, 3.0, 9.0)
    assert (v["inv_clear"], v["inv_top"]) == (1.0, 0.0)
    assert (v["can_clear"], v["design"]) == (7.2, 7.2)
    # the defect at target 10 accounts 9.0, above what 7.2 trials can certify: not counted
    assert (v["defect_lb"], v["defect_acc"], v["defect_n"], v["defect_catchable"]) == (
        4.5, 0.9, 3, 2)
    assert "n/a" not in render("{mia_max:.2f} {inv_top:.2f}", mia_max=v["mia_max"],
                               inv_top=v["inv_top"])
