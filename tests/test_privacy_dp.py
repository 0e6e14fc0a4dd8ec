"""Privacy against utility, adversaries under noise and the audit, on tiny runs.

Properties checked: every private run spends its target total epsilon (models and
descriptors, from the runner's accountant), its label and columns say which target it
is; the cost table is the paired private minus non-private difference; the deep runs go
through the run store and are read back unchanged; the detection rows report the
weights the aggregation used; the audit's bounds never exceed the accounted epsilon of
the release attacked; every claim id written is declared and has a protocol; bad
parameters are named.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from topofl_lib.claims_summary import assign_protocols
from topofl_lib.results import claim_rows, load_paper_claims
from topofl_lib.studies.dp_audit import AUDIT_COLUMNS, dp_audit
from topofl_lib.studies.dp_tradeoff import (
    dp_cost,
    dp_deep_comparison,
    dp_detection,
    dp_table1_comparison,
    private_label,
)
from topofl_lib.studies.privacy import dp_claim_values, epsilon_key

pytest.importorskip("opacus")


@pytest.fixture(scope="module")
def table1():
    return dp_table1_comparison("healthcare", [0, 1], (3.0,), n_rounds=2, progress=False)


def test_every_private_run_spends_its_target(table1):
    final = table1.final.set_index(["method", "seed"])
    assert set(final.index.get_level_values(0)) == {"pTopoFL", "FedAvg", "pTopoFL, ε = 3",
                                                    "FedAvg, ε = 3"}
    for base in ("pTopoFL", "FedAvg"):
        private = final.loc[private_label(base, 3.0)]
        assert ((private["epsilon"] > 2.99) & (private["epsilon"] <= 3.0)).all()
        assert (private["target_epsilon"] == 3.0).all() and (private["base"] == base).all()
        clear = final.loc[base]
        assert clear["epsilon"].isna().all() and np.isinf(clear["target_epsilon"]).all()
    # pTopoFL spends part of it on its descriptors; FedAvg sends none
    curves = table1.curves
    last = curves[curves["round"] == 2].set_index(["method", "seed"])
    assert (last.loc["pTopoFL, ε = 3", "epsilon_descriptor"] > 0).all()
    assert (last.loc["FedAvg, ε = 3", "epsilon_descriptor"] == 0).all()


def test_the_cost_is_the_paired_difference(table1):
    cost = dp_cost(table1.final)
    final = table1.final.set_index(["method", "seed"])["auc"]
    for base in ("pTopoFL", "FedAvg"):
        d = (final.loc[private_label(base, 3.0)] - final.loc[base]).to_numpy()
        row = cost.loc[("healthcare", base, 3.0)]
        assert row["cost"] == pytest.approx(d.mean())
        assert row["ci_low"] <= row["cost"] <= row["ci_high"]
        assert row["n_seeds"] == 2 and 2.99 < row["epsilon"] <= 3.0


def test_claims_are_declared_and_have_protocols(table1):
    values, notes = dp_claim_values(table1=table1.final)
    assert {"topofl.dp.t1.hc.eps3.auc.ptopofl", "topofl.dp.t1.hc.eps3.cost.fedavg",
            "topofl.dp.t1.hc.eps3.epsilon.ptopofl", "topofl.dp.t1.hc.nodp.auc.fedavg"} <= set(
        values)
    rows = claim_rows(values, "quick", notes)
    assert (rows["n_seeds"] == 2).all() and not notes
    declared = [c for c in load_paper_claims().index if c.startswith("topofl.dp.")]
    for profile in ("quick", "cpu", "paper"):
        protocols = assign_protocols(pd.DataFrame({"id": declared, "profile": profile}))
        assert protocols["protocol"].isin(["paper", "stand-in"]).all()
    unclaimed, _ = dp_claim_values(table1=table1.final.replace(
        {"target_epsilon": {3.0: 4.0}}))
    assert not any(".eps4." in k for k in unclaimed)  # a target without ids: no row
    assert epsilon_key(math.inf) == "nodp" and epsilon_key(0.5) == "eps0.5"


def test_deep_runs_go_through_the_run_store(tmp_path):
    from topofl_lib.deep import load_image_dataset

    data = load_image_dataset("digits", n_train=300, n_test=100, random_state=0)
    kw = {"dataset": data, "seeds": [0], "epsilons": (5.0,), "n_clients": 3,
          "n_rounds": 1, "architecture": "digits_cnn", "cache_dir": tmp_path,
          "progress": False}
    first = dp_deep_comparison(**kw)
    assert len(list(tmp_path.glob("*.npz"))) == 4
    again = dp_deep_comparison(**kw)
    pd.testing.assert_frame_equal(first.final, again.final)
    private = first.final[np.isfinite(first.final["target_epsilon"])]
    assert ((private["epsilon"] > 4.98) & (private["epsilon"] <= 5.0)).all()
    model = first.final.set_index("method")
    assert set(model.index) == {"pTopoFL", "FedAvg", "pTopoFL, ε = 5", "FedAvg, ε = 5"}
    client = dp_deep_comparison(**{**kw, "level": "client"})
    assert len(list(tmp_path.glob("*.npz"))) == 6  # the clear runs are shared
    assert (client.final["accuracy"].between(0, 1)).all()


def test_detection_reports_the_weights_the_aggregation_used():
    det = dp_detection([0], (10.0,), n_clients=6, n_adversarial=2, n_rounds=1,
                       progress=False)
    assert list(det["target_epsilon"]) == [10.0, math.inf]
    for column in ("flagged", "false_alarms", "isolated", "adversarial_weight"):
        assert det[column].between(0, 1).all()
    assert (det["adversarial_share"] == 2 / 6).all()
    assert 9.98 < det["epsilon"].iloc[0] <= 10.0 and np.isnan(det["epsilon"].iloc[1])
    assert det["descriptor_epsilon"].iloc[0] == pytest.approx(1.0)
    values, _ = dp_claim_values(detection=det)
    assert "topofl.dp.robust.eps10.advweight" in values
    assert "topofl.dp.robust.nodp.flagged" in values


def test_the_audit_never_certifies_more_than_is_accounted():
    audit, inversion = dp_audit(seeds=[0], epsilons=(3.0, 30.0), n_targets=8, n_shadow=3,
                                canary_trials=4000, gradient_iters=5, attack_clients=1,
                                progress=False)
    assert list(audit.columns) == list(AUDIT_COLUMNS)
    assert set(audit["attack"]) == {"membership", "canary", "defect noise/10",
                                    "defect no clipping"}
    assert (audit["epsilon_lb"] >= 0).all()
    planted = audit["attack"].str.startswith("defect")
    correct = audit[~planted]
    assert (correct["epsilon_lb"] <= correct["epsilon_release"]).all()
    # the positive controls fire: every planted defect certifies more than it accounts
    # (4,000 trials can certify 5.6, above the accounted 0.67 and 5.36 of one round)
    assert set(audit.loc[planted, "target_epsilon"]) == {3.0, 30.0}
    assert (audit.loc[planted, "epsilon_release"] < audit.loc[planted, "design_epsilon"]).all()
    assert (audit.loc[planted, "epsilon_lb"] > audit.loc[planted, "epsilon_release"]).all()
    clear = audit[np.isinf(audit["target_epsilon"])].set_index(["attack", "channel"])
    assert set(clear.index) == {("membership", "gradient"), ("membership", "descriptor"),
                                ("canary", "gradient")}
    # without noise the canary certifies the most its trials can, far above 4
    assert clear.loc[("canary", "gradient"), "epsilon_lb"] == pytest.approx(
        clear.loc[("canary", "gradient"), "design_epsilon"])
    assert clear.loc[("canary", "gradient"), "epsilon_lb"] >= 4
    canary = correct[np.isfinite(correct["target_epsilon"])
                     & correct["attack"].eq("canary")].set_index(["channel", "target_epsilon"])
    assert canary.loc[("gradient", 30.0), "epsilon_lb"] > 0  # the canary certifies
    assert (canary["epsilon_release"] < canary.index.get_level_values(1)).all()
    closed = inversion[inversion["attack"] == "closed_form"].set_index("target_epsilon")
    assert closed.loc[math.inf, "recovered"] == 1.0
    assert closed.loc[3.0, "recovered"] == 0.0
    values, notes = dp_claim_values(audit=audit, pooled_seeds=1)
    note = notes["topofl.dp.audit.mia.gradient.eps3.lb"]
    assert note.endswith("of 1 scenario realisation, pooled")
    assert {"topofl.dp.audit.canary.gradient.eps3.lb", "topofl.dp.audit.mia.descriptor.nodp.lb",
            "topofl.dp.audit.mia.gradient.eps30.accounted",
            "topofl.dp.audit.canary.gradient.nodp.lb",
            "topofl.dp.audit.canary.gradient.nodp.design",
            "topofl.dp.audit.defect_noise10.gradient.eps3.lb",
            "topofl.dp.audit.defect_noclip.gradient.eps30.accounted"} <= set(values)


@pytest.mark.parametrize("call, match", [
    (lambda: dp_table1_comparison("continual", [0], (3.0,)), "Table 1 has the scenarios"),
    (lambda: dp_table1_comparison("healthcare", [0], ()), "epsilons must be distinct"),
    (lambda: dp_table1_comparison("healthcare", [0], (3.0, 3.0)), "epsilons must be distinct"),
    (lambda: dp_table1_comparison("healthcare", [0], (0.0,)), "epsilon must be > 0.0"),
    (lambda: dp_table1_comparison("healthcare", [0], (3.0,), clip=0.0), "clip must be > 0"),
    (lambda: dp_table1_comparison("healthcare", [0], (3.0,), methods=["FedProx"]),
     "methods must be some of"),
    (lambda: dp_table1_comparison("healthcare", [0], (3.0,), descriptor_share=1.0),
     "descriptor_share must be < 1.0"),
    (lambda: dp_deep_comparison("digits", [0], (3.0,), level="record"), "unknown level"),
    (lambda: dp_detection([0], (3.0,), n_adversarial=10), "n_adversarial must be <= 9"),
    (lambda: dp_audit(seeds=[0], epsilons=(3.0,), n=1), "n must be >= 2"),
])
def test_bad_parameters_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()
