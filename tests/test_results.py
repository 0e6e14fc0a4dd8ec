"""Tests of the claims table, the experiment statistics and the reproduce command."""

import numpy as np
import pandas as pd
import pytest

from topofl_lib.experiments import paired_differences, summarise
from topofl_lib.notebook_params import NOTEBOOKS, PROFILES
from topofl_lib.reproduce import reproduce, resolve_profile
from topofl_lib.results import (
    CLAIM_COLUMNS,
    claim_rows,
    collect_claims,
    comparison_document,
    comparison_markdown,
    deep_claim_values,
    fedtopo_claim_values,
    load_paper_claims,
    write_claims,
)

CID = "ptopofl.t1.hc.auc.fedavg"


def test_claim_rows_statistics():
    """claim_rows reports the mean, sample std (ddof=1) and seed count."""
    rows = claim_rows({CID: [0.7, 0.8]}, "quick")
    assert list(rows.columns) == CLAIM_COLUMNS
    row = rows.iloc[0]
    assert row["id"] == CID
    assert row["measured_mean"] == pytest.approx(0.75)
    assert row["measured_std"] == pytest.approx(np.sqrt(0.005))
    assert row["measured_std"] == pytest.approx(0.0707, abs=1e-4)
    assert row["n_seeds"] == 2
    assert row["profile"] == "quick"


def test_claim_rows_single_seed_std_zero():
    """With one seed the std is reported as 0."""
    assert claim_rows({CID: [0.8]}, "quick").iloc[0]["measured_std"] == 0.0


def test_claim_rows_unknown_id():
    """An id that is not in the claims table raises ValueError."""
    with pytest.raises(ValueError, match="unknown claim id"):
        claim_rows({"ptopofl.t1.hc.auc.fedfoo": [0.7]}, "quick")


def test_write_and_collect_round_trip(tmp_path):
    """Rows written per notebook are merged back, in claims-table order."""
    later = "ptopofl.t1.bm.auc.ptopofl"
    write_claims(claim_rows({later: [0.9, 0.91, 0.92]}, "quick"), tmp_path, "b")
    path = write_claims(claim_rows({CID: [0.7, 0.8]}, "quick"), tmp_path, "a")
    assert path == tmp_path / "claims" / "a.csv"
    merged = collect_claims(tmp_path)
    order = list(load_paper_claims().index)
    assert list(merged["id"]) == sorted([CID, later], key=order.index)
    got = merged.set_index("id")
    assert got.loc[CID, "measured_mean"] == pytest.approx(0.75)
    assert got.loc[CID, "measured_std"] == pytest.approx(np.sqrt(0.005), rel=1e-5)
    assert got.loc[later, "n_seeds"] == 3
    assert got.loc[later, "profile"] == "quick"


def test_collect_claims_empty(tmp_path):
    """An empty results folder gives an empty table with the claim columns."""
    assert list(collect_claims(tmp_path).columns) == CLAIM_COLUMNS
    assert len(collect_claims(tmp_path)) == 0


def test_comparison_markdown_contains_paper_value():
    """The Markdown table shows the paper's value (0.79) for the FedAvg AUC claim."""
    md = comparison_markdown(claim_rows({CID: [0.7, 0.8]}, "quick"))
    line = next(ln for ln in md.splitlines() if CID in ln)
    assert "| 0.79 |" in line
    assert "0.75" in line


def test_reproduce_rejects_unknown_notebook(tmp_path):
    """reproduce fails before executing anything when a notebook name is unknown."""
    with pytest.raises(ValueError, match="nope"):
        reproduce("quick", only=["nope"], output_dir=tmp_path)
    with pytest.raises(ValueError, match="profile"):
        reproduce("fast", output_dir=tmp_path)
    assert not (tmp_path / "build").exists()


@pytest.fixture
def final():
    """A hand-made final table: A beats B on two of three seeds, C ties A everywhere."""
    a = [0.80, 0.90, 0.70]
    b = [0.70, 0.85, 0.75]
    rows = [{"scenario": "benchmark", "method": m, "seed": s, "auc": v,
             "accuracy": 0.5, "convergence_round": 3}
            for m, vals in (("A", a), ("B", b), ("C", a)) for s, v in enumerate(vals)]
    return pd.DataFrame(rows)


def test_summarise_known_values(final):
    """summarise gives per-method means, sample std, t intervals and seed counts."""
    s = summarise(final, "auc")
    assert list(s.index) == ["A", "B", "C"]
    assert s.loc["A", "mean"] == pytest.approx(0.8)
    assert s.loc["A", "std"] == pytest.approx(0.1)
    assert s.loc["B", "mean"] == pytest.approx(0.7666666667)
    assert s.loc["A", "n_seeds"] == 3
    half = 4.302652729911275 * 0.1 / np.sqrt(3)  # t_{0.975, 2}
    assert s.loc["A", "ci_low"] == pytest.approx(0.8 - half)
    assert s.loc["A", "ci_high"] == pytest.approx(0.8 + half)
    with pytest.raises(ValueError, match="metric"):
        summarise(final, "f1")


def test_paired_differences_known_values(final):
    """paired_differences gives mean differences, wins and NaN p for all-zero diffs."""
    p = paired_differences(final, reference="A", metric="auc")
    assert list(p.index) == ["B", "C"]
    assert p.loc["B", "mean_diff"] == pytest.approx((0.10 + 0.05 - 0.05) / 3)
    assert p.loc["B", "wins"] == 2
    assert p.loc["B", "n_seeds"] == 3
    assert 0 < p.loc["B", "p_wilcoxon"] <= 1
    assert p.loc["C", "mean_diff"] == 0.0
    assert p.loc["C", "wins"] == 0
    assert np.isnan(p.loc["C", "p_wilcoxon"])
    with pytest.raises(ValueError, match="reference"):
        paired_differences(final, reference="pTopoFL")


def test_claim_notes_and_deep_claim_values():
    """Stand-in measurements carry a note that reaches the Markdown table."""
    rows = [{"scenario": s, "method": m, "seed": k, "accuracy": acc, "auc": np.nan}
            for s in ("fashion_mnist-L0.1", "mnist5k-L0.5", "mnist5k-L0.1")
            for m, acc in (("pTopoFL", 0.6), ("FedAvg", 0.5)) for k in range(2)]
    values, notes = deep_claim_values(pd.DataFrame(rows))
    assert set(values) == {"ptopofl.t2.cifar01.ptopofl", "ptopofl.t2.cifar01.fedavg",
                           "ptopofl.t2.femnist.ptopofl", "ptopofl.t2.femnist.fedavg"}
    assert "Fashion-MNIST" in notes["ptopofl.t2.cifar01.fedavg"]
    claims = claim_rows(values, "cpu", notes)
    md = comparison_markdown(claims)
    line = next(ln for ln in md.splitlines() if "femnist.fedavg" in ln)
    assert "stand-in: MNIST-5k" in line and "| 0.79 |" in line


def test_fedtopo_claim_values_in_percent():
    """FedTopo ids are percent; Table 3 Setting B comes from the L partition only."""
    rows = [{"scenario": f"fashion_mnist-{p}", "method": m, "seed": 0, "accuracy": 0.8}
            for p in ("L0.1", "K5") for m in ("FedTopo", "FedAvg", "FedTopo w/o TAL",
                                              "FedTopo@conv2")]
    tgbs = pd.DataFrame({"block": ["conv1", "conv2"], "seed": [0, 0], "auc": [0.6, 0.55]})
    v = fedtopo_claim_values(pd.DataFrame(rows), tgbs)
    assert v["fedtopo.t1.fmnist.K.fedtopo"] == pytest.approx([80.0])
    assert v["fedtopo.t3.b.without"] == pytest.approx([80.0])
    assert "fedtopo.t2.cnn.conv2.acc" in v and v["fedtopo.t2.cnn.conv1.auc"] == [60.0]
    assert not any(".K." in k and "t3" in k for k in v)


def test_profiles_cpu_and_auto():
    """Every notebook has every profile; cpu is paper's protocol but for the deep notebooks."""
    for name, notebook in NOTEBOOKS.items():
        values = {p: notebook.values(p) for p in PROFILES}
        assert values["quick"] != values["paper"], name
        deep = name in ("fedtopo", "ptopofl_deep")
        assert (values["cpu"] == values["paper"]) != deep, name
    assert NOTEBOOKS["scenario_a_healthcare"].values("paper")["n_seeds"] == 20
    assert NOTEBOOKS["fedtopo"].values("cpu")["n_train"] == 12000
    assert resolve_profile("auto") in ("cpu", "paper")
    assert resolve_profile("quick") == "quick"
    with pytest.raises(ValueError, match="unknown profile 'gpu'"):
        resolve_profile("gpu")


def test_comparison_header_lists_every_profile(tmp_path):
    """comparison.md names each profile present with its rows and claim files."""
    write_claims(claim_rows({CID: [0.7, 0.8]}, "cpu"), tmp_path, "table1_hc")
    write_claims(claim_rows({"ptopofl.t1.bm.auc.fedavg": [0.9], "ptopofl.t1.bm.auc.ptopofl":
                             [0.9]}, "paper"), tmp_path, "table1_bm")
    write_claims(claim_rows({"ptopofl.ablation.full": [0.7]}, "paper"), tmp_path, "ablation")
    claims, md = comparison_document(tmp_path)
    assert len(claims) == 4 and list(claims.columns) == CLAIM_COLUMNS
    assert "- `cpu`: 1 rows (table1_hc)\n- `paper`: 3 rows (ablation, table1_bm)\n" in md
    line = next(ln for ln in md.splitlines() if CID in ln)
    assert line.split("|")[-3].strip() == "cpu"
    assert "Generated by" not in md
    assert sorted(p.name for p in (tmp_path / "claims").iterdir()) == [
        "ablation.csv", "table1_bm.csv", "table1_hc.csv"]  # no temporary files left


def test_label_aware_claim_values_map_every_table():
    """topofl.cc.* ids from the label-aware notebook's tables: per-seed values in seed
    order, clients averaged within a seed, NaN seeds left out, unknown settings dropped."""
    from topofl_lib.results import label_aware_claim_values

    detection = pd.DataFrame({
        "scenario": ["label_flip 0.2"] * 2 + ["label_flip 0.3", "noisy_label_flip 0.2"],
        "descriptor": ["model_anchored"] * 3 + ["paper"], "seed": [101, 100, 100, 100],
        "tpr@1.8": [0.5, 1.0, 0.0, 1.0], "fpr@1.8": [0.0, 0.125, 0.0, 0.0],
        "tpr@1": [1.0, 1.0, 1.0, 1.0], "fpr@1": [0.25, 0.0, 0.0, 0.0],
        "auc": [0.9, 1.0, 0.8, 1.0]})
    recovery = pd.DataFrame({"scenario": "label_flip 0.2", "descriptor": "class_conditional",
                             "seed": [100, 101, 102], "ari": [1.0, 0.5, np.nan],
                             "ari_honest": 1.0})
    final = pd.DataFrame({"protocol": "paper", "rate": 0.5, "method": ["pTopoFL-MA"] * 2
                          + ["Krum", "Other"], "seed": [101, 100, 100, 100],
                          "auc": [0.7, 0.8, 0.6, 0.5]})
    drift = pd.DataFrame({"scenario": "continual", "descriptor": "paper", "seed": [100, 101],
                          "auc": [0.75, 1.0]})
    descinv = pd.DataFrame({"scenario": "healthcare", "descriptor": "class_conditional",
                            "seed": [100, 100, 101], "client": [0, 1, 0],
                            "attack": "descriptor_inversion", "recovered": [0.0, 0.5, 0.25],
                            "relative_error": [1.0, 0.8, 0.9]})
    mia = pd.DataFrame({"scenario": "healthcare", "descriptor": ["model_anchored", "paper"],
                        "seed": 100, "n": 100, "channel": "descriptor", "auc": [0.6, 0.5]})
    dp = pd.DataFrame({"scenario": "healthcare", "descriptor": "paper", "seed": 100,
                       "method": "pTopoFL", "epsilon": [1.0, np.inf], "auc": [0.7, 0.8]})
    v = label_aware_claim_values(detection, recovery, final, drift, descinv, mia, dp)
    np.testing.assert_array_equal(v["topofl.cc.detect.20.ma.tpr"], [1.0, 0.5])
    np.testing.assert_array_equal(v["topofl.cc.detect.20.ma.fpr.tau1"], [0.0, 0.25])
    np.testing.assert_array_equal(v["topofl.cc.detect.30.ma.rocauc"], [0.8])
    assert not any(k.startswith("topofl.cc.detect.20.paper") for k in v)  # noisy flip: no id
    np.testing.assert_array_equal(v["topofl.cc.ari.20.cc"], [1.0, 0.5])
    np.testing.assert_array_equal(v["topofl.cc.ari.20.cc.ari90"], [1.0, 0.0])
    np.testing.assert_array_equal(v["topofl.cc.auc.paper.50.ptopofl_ma"], [0.8, 0.7])
    np.testing.assert_array_equal(v["topofl.cc.auc.paper.50.krum"], [0.6])
    np.testing.assert_array_equal(v["topofl.cc.drift.paper.rocauc"], [0.75, 1.0])
    np.testing.assert_allclose(v["topofl.cc.privacy.cc.descinv.recovered"], [0.25, 0.25])
    np.testing.assert_allclose(v["topofl.cc.privacy.cc.descinv.relerr"], [0.9, 0.9])
    assert v["topofl.cc.privacy.ma.mia.auc"] == [0.6]
    assert v["topofl.cc.privacy.paper.dp.eps1.auc"] == [0.7]
    assert v["topofl.cc.privacy.paper.dp.nodp.auc"] == [0.8]
    assert len(v) == 5 + 5 + 2 + 2 + 1 + 2 + 2 + 2  # detect 20, 30; ari; auc; drift; privacy
    rows = claim_rows(v, "cpu")
    assert rows.set_index("id").loc["topofl.cc.auc.paper.50.ptopofl_ma", "n_seeds"] == 2


def test_label_aware_claim_rows_are_beyond_the_paper():
    """Every topofl.cc.* row: paper 'topofl', no paper value, source 'beyond the paper';
    the detection, AUC and privacy families are all present."""
    claims = load_paper_claims()
    cc = claims[claims.index.str.startswith("topofl.cc.")]
    assert (cc["paper"] == "topofl").all() and cc["value"].isna().all()
    assert (cc["source"] == "beyond the paper").all()
    for protocol in ("ours", "paper"):
        for rate in ("0", "30", "50"):
            for m in ("ptopofl", "ptopofl_cc", "ptopofl_ma", "fedavg", "median",
                      "trimmedmean", "krum"):
                assert f"topofl.cc.auc.{protocol}.{rate}.{m}" in cc.index
    for d in ("paper", "cc", "ma"):
        for rate in ("20", "30"):
            assert f"topofl.cc.detect.{rate}.{d}.tpr" in cc.index
        assert f"topofl.cc.privacy.{d}.mia.auc" in cc.index
