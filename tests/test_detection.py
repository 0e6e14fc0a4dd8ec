"""The detection report: z > tau rates, ROC over tau, cluster recovery, partial flips."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from topofl_lib.data import make_healthcare
from topofl_lib.detection import (
    cluster_recovery,
    detection_rates,
    detection_runs,
    detection_scenarios,
    drift_runs,
    partial_flip,
    per_seed_detection,
    roc_table,
    separated_group_z,
)
from topofl_lib.experiments import label_aware_comparison
from topofl_lib.federated import PTopoFL, make_method
from topofl_lib.federated.aggregation import trust_weights
from topofl_lib.topology import descriptor_distances
from topofl_lib.viz import method_style, roc_figure


@pytest.mark.parametrize("K,a", [(10, 2), (10, 3), (8, 2), (7, 1), (10, 7)])
def test_separated_group_z_is_eq8_of_a_two_level_configuration(K, a):
    """A group of a clients at one point, the rest at another: Eq. 8 gives the group
    z = sqrt((1 - eps) / eps) exactly, whatever the separation."""
    for gap in (0.1, 10.0):
        phi = np.ones((K, 3))
        phi[:a] += [gap, 0.0, 0.0]
        _, z = trust_weights(descriptor_distances(phi), tau=2.0)
        np.testing.assert_allclose(z[:a], separated_group_z(K, a), rtol=1e-10)
    assert separated_group_z(10, 2) == pytest.approx(2.0)  # so z > 2 never fires at 20%
    assert separated_group_z(10, 5) == 0.0
    phi = np.ones((10, 3))
    phi[:5] += 1.0  # five against five: every client has the same mean distance
    D = descriptor_distances(phi)
    np.testing.assert_allclose(D.sum(axis=1), D.sum(axis=1)[0])
    with pytest.raises(ValueError, match="n_group"):
        separated_group_z(5, 5)


def _runs(z_adv, z_hon, scenario="s", descriptor="d", seed=0):
    z = list(z_adv) + list(z_hon)
    n = len(z)
    return pd.DataFrame({
        "scenario": scenario, "descriptor": descriptor, "seed": seed, "client": range(n),
        "adversarial": [True] * len(z_adv) + [False] * len(z_hon),
        "group": [0, 1] * (n // 2) + [0] * (n % 2), "cluster": 0, "z": z, "trust": 1.0,
        "final_auc": 0.8})


def test_rates_and_roc_known_values():
    runs = pd.concat([_runs([3.0, 2.0], [1.0, 0.0, 2.0], seed=0),
                      _runs([0.5], [0.0, -1.0], seed=1)], ignore_index=True)
    rates = detection_rates(runs, tau=1.5).iloc[0]
    assert rates["tpr"] == pytest.approx(2 / 3) and rates["fpr"] == pytest.approx(1 / 5)
    assert rates["seeds_all_flagged"] == 1 and rates["seeds_any_false"] == 1
    curves, aucs = roc_table(runs)
    # pairs (adv, honest): 15; adv beats honest in 3+4+... counted, ties 1/2
    za, zh = np.array([3.0, 2.0, 0.5]), np.array([1.0, 0.0, 2.0, 0.0, -1.0])
    expected = ((za[:, None] > zh).sum() + 0.5 * (za[:, None] == zh).sum()) / 15
    assert aucs["auc"].iloc[0] == pytest.approx(expected)
    assert curves[["fpr", "tpr"]].iloc[0].tolist() == [0.0, 0.0]
    assert curves[["fpr", "tpr"]].iloc[-1].tolist() == [1.0, 1.0]
    assert np.all(np.diff(curves["tpr"]) >= 0) and np.all(np.diff(curves["fpr"]) >= 0)
    # best TPR with FPR <= 0.05 (no honest client flagged): tau in [2, 3) flags one of 3
    assert aucs["tpr_at_fpr05"].iloc[0] == pytest.approx(1 / 3)


def test_roc_of_perfect_separation_and_no_adversaries():
    _, aucs = roc_table(_runs([5.0, 4.0], [0.0, 1.0, -1.0]))
    assert aucs["auc"].iloc[0] == 1.0 and aucs["tpr_at_fpr05"].iloc[0] == 1.0
    with pytest.raises(ValueError, match="adversarial and honest"):
        roc_table(_runs([], [0.0, 1.0]))
    rates = detection_rates(_runs([], [0.0, 3.0]), tau=2.0)
    assert np.isnan(rates["tpr"].iloc[0]) and rates["fpr"].iloc[0] == 0.5


def test_cluster_recovery_known_values():
    runs = _runs([0.0], [0.0, 0.0, 0.0])  # groups 0,1,0,1
    runs["cluster"] = [1, 0, 1, 0]
    out = cluster_recovery(runs).iloc[0]
    assert out["ari"] == 1.0
    assert np.isnan(cluster_recovery(runs.assign(group=0))["ari"].iloc[0])


def test_roc_figure_colours_and_errors():
    """One style per descriptor (its pTopoFL variant's), shared by panels, one legend entry."""
    curves = pd.DataFrame({"scenario": ["a"] * 2 + ["b"] * 2, "descriptor": ["paper", "new"] * 2,
                           "fpr": [0.0, 1.0, 0.0, 1.0], "tpr": [0.0, 1.0, 0.5, 1.0]})
    fig = roc_figure(curves, pd.DataFrame({"scenario": ["a"], "descriptor": ["paper"],
                                           "auc": [0.75]}))
    lines = [t for t in fig.data if t.name]
    assert [t.name for t in lines] == ["paper (pTopoFL)", "new"] * 2
    assert [t.showlegend for t in lines] == [True, True, False, False]
    assert lines[0].line.color == lines[2].line.color != lines[1].line.color
    assert lines[0].line.color == method_style("pTopoFL").colour
    assert [a.text for a in fig.layout.annotations if "AUC" in a.text] == [
        f"<span style='color:{method_style('pTopoFL').colour}'>pTopoFL: AUC 0.75</span>"]
    with pytest.raises(ValueError, match="roc_table"):
        roc_figure(curves.drop(columns="tpr"))


def test_report_input_errors():
    with pytest.raises(ValueError, match="lacks columns"):
        detection_rates(pd.DataFrame({"scenario": ["a"]}))
    with pytest.raises(TypeError, match="DataFrame"):
        roc_table([1, 2])
    with pytest.raises(ValueError, match="non-empty dict"):
        detection_runs({}, range(2))
    with pytest.raises(ValueError, match="seeds is empty"):
        detection_runs({"a": make_healthcare}, [])


def test_partial_flip_flips_the_requested_fraction():
    full = make_healthcare(random_state=3)
    half = partial_flip(full, 0.5, random_state=0)
    for a, b in zip(full.clients, half.clients, strict=True):
        if not a.adversarial:
            assert b is a
            continue
        clean = 1 - a.y_train
        assert (b.y_train != clean).sum() == round(0.5 * clean.size)
    back = partial_flip(full, 1.0, random_state=0)
    for a, b in zip(full.clients, back.clients, strict=True):
        np.testing.assert_array_equal(a.y_train, b.y_train)
    with pytest.raises(ValueError, match="fraction"):
        partial_flip(full, 1.5)
    with pytest.raises(ValueError, match="label_flip"):
        partial_flip(make_healthcare(attack="sign_flip", random_state=0), 0.3)


def test_detection_runs_table_and_determinism():
    scen = detection_scenarios(rates=(0.2,), attacks=("label_flip",), partial_fractions=(0.3,))
    assert set(scen) == {"label_flip 0.2", "partial0.3 0.2"}
    one = {"label_flip 0.2": scen["label_flip 0.2"]}
    runs = detection_runs(one, [0, 1], n_rounds=2, progress=False)
    assert len(runs) == 2 * 3 * 10
    assert runs.groupby(["seed", "descriptor"])["adversarial"].sum().eq(2).all()
    again = detection_runs(one, [0, 1], n_rounds=2, progress=False)
    pd.testing.assert_frame_equal(runs, again)
    fig = roc_figure(*roc_table(runs))
    assert len(fig.data) == 3 + 1  # three descriptors and the chance line


def test_drift_runs_table():
    runs = drift_runs([0], {"paper": "paper"}, n_rounds=8,
                      scenario_params={"shift_round": 4}, progress=False)
    assert len(runs) == 6 and runs["shifted"].sum() == 2
    assert runs["drift"].notna().all()
    curves, aucs = roc_table(runs, "drift", "shifted")
    assert 0.0 <= aucs["auc"].iloc[0] <= 1.0


def test_per_seed_detection_known_values():
    """Rates and ROC AUC within each seed; NaN where a seed has no adversary."""
    runs = pd.concat([_runs([3.0, 2.0], [1.0, 0.0, 2.0], seed=0),
                      _runs([], [0.0, -1.0], seed=1)], ignore_index=True)
    out = per_seed_detection(runs, taus=(1.5, 2.5)).set_index("seed")
    assert out.loc[0, "tpr@1.5"] == 1.0 and out.loc[0, "fpr@1.5"] == pytest.approx(1 / 3)
    assert out.loc[0, "tpr@2.5"] == 0.5 and out.loc[0, "fpr@2.5"] == 0.0
    # pairs (adv, honest): 3 > 1, 0, 2; 2 > 1, 0 and ties 2: (5 + 0.5) / 6
    assert out.loc[0, "auc"] == pytest.approx(5.5 / 6)
    assert np.isnan(out.loc[1, "tpr@1.5"]) and np.isnan(out.loc[1, "auc"])
    assert out.loc[1, "fpr@1.5"] == 0.0
    with pytest.raises(ValueError, match="tau"):
        per_seed_detection(runs, taus=(float("nan"),))


def test_label_aware_comparison_runs_each_variant_on_each_protocol():
    """Every (protocol, rate, method, seed) once; each row is the method run directly."""
    final = label_aware_comparison(rates=(0.2,), seeds=[0], protocols=("ours", "paper"),
                                   baselines=("FedAvg",), n_rounds=2, progress=False)
    assert sorted(final["method"].unique()) == ["FedAvg", "pTopoFL", "pTopoFL-CC",
                                                "pTopoFL-MA"]
    assert len(final) == 2 * 4 and set(final["protocol"]) == {"ours", "paper"}
    assert set(final["rate"]) == {0.2}
    scen = make_healthcare(n_clients=10, n_adversarial=2, protocol="paper", random_state=0)
    ma = PTopoFL(n_rounds=2, tau=1.8, descriptor="model_anchored", random_state=0).fit(scen)
    fedavg = make_method("FedAvg", n_rounds=2, random_state=0).fit(scen)
    got = final[final["protocol"] == "paper"].set_index("method")["auc"]
    assert got["pTopoFL-MA"] == pytest.approx(ma.history_["auc"][-1])
    assert got["FedAvg"] == pytest.approx(fedavg.history_["auc"][-1])
    with pytest.raises(ValueError, match="protocol"):
        label_aware_comparison(rates=(0.2,), seeds=[0], protocols=("theirs",), progress=False)
    with pytest.raises(ValueError, match="descriptors"):
        label_aware_comparison(seeds=[0], descriptors=("betti",), progress=False)


def test_label_aware_comparison_runs_each_attack():
    """An ``attack`` column; the label-flip rows are those of the default call and the
    noisy-label-flip rows are the method run on make_healthcare(attack=...)."""
    kw = dict(rates=(0.0, 0.3), seeds=[1], protocols=("ours",), descriptors=("paper",),
              baselines=("FedAvg",), n_rounds=2, progress=False)
    final = label_aware_comparison(attacks=("label_flip", "noisy_label_flip"), **kw)
    assert len(final) == 2 * 2 * 2
    assert set(final["attack"]) == {"label_flip", "noisy_label_flip"}
    default = label_aware_comparison(**kw)
    assert set(default["attack"]) == {"label_flip"}
    flip = final[final["attack"] == "label_flip"].reset_index(drop=True)
    pd.testing.assert_frame_equal(flip, default)
    for rate, n_adversarial in ((0.0, 0), (0.3, 3)):
        scen = make_healthcare(n_clients=10, n_adversarial=n_adversarial,
                               attack="noisy_label_flip", random_state=1)
        fedavg = make_method("FedAvg", n_rounds=2, random_state=1).fit(scen)
        noisy = final[(final["attack"] == "noisy_label_flip") & (final["rate"] == rate)]
        got = noisy.set_index("method")["auc"]
        assert got["FedAvg"] == pytest.approx(fedavg.history_["auc"][-1])
    with_flip = final[final["rate"] == 0.0].pivot(index="method", columns="attack",
                                                   values="auc")
    assert (with_flip["label_flip"] == with_flip["noisy_label_flip"]).all()  # no adversary
    with pytest.raises(ValueError, match="attacks"):
        label_aware_comparison(attacks=("poison",), **kw)
