"""Tests of the claims table, the experiment statistics and the reproduce command."""

import numpy as np
import pandas as pd
import pytest

from topofl_lib.claim_keys import METHOD_KEYS
from topofl_lib.claims_summary import (
    SUMMARY_COLUMNS,
    comparison_document,
    comparison_markdown,
    summary_table,
)
from topofl_lib.experiments import (
    ABLATIONS,
    TABLE1_VARIANTS,
    ablation_variants,
    paired_differences,
    summarise,
)
from topofl_lib.notebook_params import NOTEBOOKS, PROFILES
from topofl_lib.reproduce import reproduce, resolve_profile
from topofl_lib.results import (
    CLAIM_COLUMNS,
    ClaimFileError,
    claim_rows,
    collect_claims,
    load_paper_claims,
    read_claim_file,
    write_claims,
)
from topofl_lib.studies.ablation import ablation_claim_values
from topofl_lib.studies.deep_ptopofl import deep_claim_values
from topofl_lib.studies.fedtopo import fedtopo_claim_values
from topofl_lib.studies.label_aware import label_aware_claim_values
from topofl_lib.studies.paper_data import not_run_rows
from topofl_lib.studies.robustness import robustness_claim_values
from topofl_lib.studies.table1 import table1_claim_values

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


def test_claim_rows_leave_out_diverged_seeds_and_say_so():
    """A NaN (a diverged run) is left out of mean, std and n_seeds, and the note counts it."""
    rows = claim_rows({CID: [0.7, np.nan, 0.8]}, "quick", notes={CID: "stand-in"})
    row = rows.iloc[0]
    assert row["measured_mean"] == pytest.approx(0.75)
    assert row["measured_std"] == pytest.approx(np.sqrt(0.005))
    assert row["n_seeds"] == 2
    assert row["note"] == "stand-in; 1 of 3 seeds diverged (NaN), left out"
    every = claim_rows({CID: [np.nan, np.nan]}, "quick").iloc[0]
    assert np.isnan(every["measured_mean"]) and every["n_seeds"] == 0
    assert every["note"] == "2 of 2 seeds diverged (NaN), left out"
    with pytest.raises(ValueError, match=r"claim 'ptopofl.t1.hc.auc.fedavg' contain an infinite"):
        claim_rows({CID: [0.7, np.inf]}, "quick")


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
    measured = merged[merged["profile"] != "not run"]
    assert list(measured["id"]) == sorted([CID, later], key=order.index)
    got = merged.set_index("id")
    assert got.loc[CID, "measured_mean"] == pytest.approx(0.75)
    assert got.loc[CID, "measured_std"] == pytest.approx(np.sqrt(0.005), rel=1e-5)
    assert got.loc[later, "n_seeds"] == 3
    assert got.loc[later, "profile"] == "quick"


GOOD = ("id,measured_mean,measured_std,n_seeds,profile,note\n"
        f"{CID},0.75,0.0707107,2,cpu,\n"
        "ptopofl.t1.hc.auc.fedprox,,0,0,cpu,\"2 of 2 seeds diverged (NaN), left out\"\n"
        "gfc.t4.abalone.eps0.01.k1.ari,,,0,not run,not run: Abalone not found in ~/d\n")


@pytest.mark.parametrize(("text", "message"), [
    ("", "is empty"),
    ('id,measured_mean\n"a,1\n', "cannot be read as CSV"),
    (f"id,measured_std,n_seeds,profile,note\n{CID},0.07,2,cpu,\n",
     r"\['measured_mean'\] missing"),
    # the column's name removed from the header alone: before, pandas took the surplus
    # first field of each row for an index and read every column shifted by one
    (GOOD.replace("measured_mean,", ""), r"line 2 has 6 fields, its header 5"),
    (GOOD.replace(",note", ",notes"), r"\['notes'\] unknown"),
    (GOOD + f"{CID},0.8,0.1,2,cpu,\n", r"id repeats an earlier row's at line 5 \(id 'ptopofl"),
    (GOOD + ",0.8,0.1,2,cpu,\n", "id is empty at line 5"),
    (GOOD + "ptopofl.t1.hc.auc.pfedme,0.8,0.1,1,,", r"profile is empty at line 5"),
    # a row cut short: before, pandas filled the missing fields with NaN silently
    (GOOD + "ptopofl.t1.hc.auc.pfedme,0.8,0.1,1",
     r"cannot be read as CSV: line 5 has 4 fields, its header 6"),
    (GOOD + "ptopofl.t1.hc.auc.pfedme,0.8,0.1,1,cpu,,extra\n",
     r"cannot be read as CSV: line 5 has 7 fields, its header 6"),
    (GOOD + "ptopofl.t1.hc.auc.pfedme,0.8,0.1,2.5,cpu,\n", r"n_seeds is not a whole number"),
    (GOOD + "ptopofl.t1.hc.auc.pfedme,high,0.1,2,cpu,\n", "measured_mean is not a number"),
    (GOOD + "ptopofl.t1.hc.auc.pfedme,0.8,-1,2,cpu,\n", r"measured_std is not a finite number"),
    (GOOD + "ptopofl.t1.hc.auc.pfedme,,0.1,2,cpu,\n",
     "measured_mean is empty or infinite while n_seeds > 0 at line 5"),
    (GOOD + "ptopofl.t1.hc.auc.pfedme,0.8,,2,cpu,\n",
     r"measured_std is not a finite number >= 0 at line 5"),
])
def test_read_claim_file_names_the_file_and_the_fault(tmp_path, text, message):
    """A claim file cut short, emptied, or with a wrong column or value is refused, naming
    the file and the fault; collect_claims (the summary's source) refuses it too."""
    path = tmp_path / "claims" / "x.csv"
    path.parent.mkdir()
    path.write_text(GOOD)
    rows = read_claim_file(path)
    assert list(rows.columns) == CLAIM_COLUMNS and len(rows) == 3  # NaN mean with 0 seeds
    assert rows["measured_std"].isna().tolist() == [False, False, True]  # a row not run
    path.write_text(text)
    with pytest.raises(ClaimFileError, match=message) as err:
        read_claim_file(path)
    assert str(path) in str(err.value)
    with pytest.raises(ClaimFileError, match=message):
        collect_claims(tmp_path)


def test_collect_claims_empty(tmp_path):
    """An empty results folder gives an empty table with the claim columns."""
    assert list(collect_claims(tmp_path).columns) == CLAIM_COLUMNS
    assert len(collect_claims(tmp_path)) == 0


def test_a_not_run_row_in_a_claim_file_is_read_and_shown_without_value(tmp_path):
    """A notebook's not-run row (n_seeds 0, no value, its reason; paper_data.not_run_rows)
    passes read_claim_file, keeps its reason and prints a dash for the value."""
    note = "not run: CIFAR-10 not found in ~/topofl_data/cifar-10-batches-bin"
    path = write_claims(not_run_rows(["fedtopo.t3.a.without", "fedtopo.t3.a.with"], note),
                        tmp_path, "fedtopo")
    assert len(read_claim_file(path)) == 2
    merged = collect_claims(tmp_path, source=True).set_index("id")
    for cid in ("fedtopo.t3.a.without", "fedtopo.t3.a.with"):
        row = merged.loc[cid]
        assert (row["n_seeds"], row["profile"], row["note"], row["source"]) == (
            0, "not run", note, "fedtopo")
    _, md = comparison_document(tmp_path)
    line = next(ln for ln in md.splitlines() if "fedtopo.t3.a.with`" in ln)
    assert "| 67.05 | — | 0 |" in line and note in line


def test_comparison_markdown_contains_paper_value():
    """The Markdown table shows the paper's value as printed (0.790) for the FedAvg AUC
    claim, ours, the verdict and the protocol."""
    md = comparison_markdown(summary_table(claim_rows({CID: [0.7, 0.8]}, "quick")))
    line = next(ln for ln in md.splitlines() if CID in ln)
    assert "| 0.790 |" in line
    assert "0.75" in line and "| agrees | quick | paper |" in line


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
    # one test in the family (C has none): Holm leaves B's p-value as it is
    assert p.loc["B", "p_holm"] == p.loc["B", "p_wilcoxon"] and np.isnan(p.loc["C", "p_holm"])
    with pytest.raises(ValueError, match="reference"):
        paired_differences(final, reference="pTopoFL")


def test_holm_known_values_and_definition():
    """Holm (1979) on a worked example, and against its definition on random families."""
    from topofl_lib.experiments import holm

    # m = 4: sorted 0.01, 0.02, 0.03, 0.04 -> 0.04, 0.06, 0.06 (running max), 0.06
    np.testing.assert_allclose(holm([0.03, 0.01, 0.04, 0.02]), [0.06, 0.04, 0.06, 0.06])
    np.testing.assert_array_equal(holm([0.5, 0.9]), [1.0, 1.0])  # capped at 1
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.uniform(0, 0.2, size=rng.integers(1, 9))
        order = np.argsort(p)
        m = p.size
        expected = np.empty(m)
        for rank, i in enumerate(order):
            expected[i] = min(1.0, max((m - j) * p[order[j]] for j in range(rank + 1)))
        np.testing.assert_allclose(holm(p), expected)
        assert np.all(holm(p) >= p)
    np.testing.assert_array_equal(holm([np.nan, 0.01, 0.02]), [np.nan, 0.02, 0.02])
    with pytest.raises(ValueError, match=r"pvalues must lie in \[0, 1\]"):
        holm([0.5, 1.5])


@pytest.mark.parametrize(("pvalues", "dtype"), [(["0.01"], "<U4"), ([True, False], "bool"),
                                              ([0.01 + 0j], "complex128")])
def test_holm_refuses_what_is_not_a_real_p_value(pvalues, dtype):
    from topofl_lib.experiments import holm

    with pytest.raises(TypeError, match=f"pvalues must hold real numbers, got dtype {dtype}"):
        holm(pvalues)


@pytest.mark.parametrize(("final", "error", "message"), [
    ([1.0], TypeError, "final must be a DataFrame of runs, got list"),
    (pd.DataFrame({"method": ["A"], "seed": [0]}), ValueError,
     r"final lacks the column\(s\) \['auc'\]"),
    (pd.DataFrame({"method": ["A"], "seed": [0], "auc": [np.inf]}), ValueError,
     r"final\['auc'\] holds infinite values"),
    (pd.DataFrame({"method": ["A"], "seed": [0], "auc": [0.5 + 0.1j]}), TypeError,
     r"final\['auc'\] must hold real numbers, got dtype complex128"),
    (pd.DataFrame({"method": ["A", "A", "B", "B"], "seed": [0, 0, 0, 1],
                   "auc": [0.5, 0.6, 0.5, 0.6]}), ValueError,
     r"more than one row of \(method, seed\) \('A', 0\)"),
])
def test_summaries_refuse_a_bad_table_of_runs_by_name(final, error, message):
    from topofl_lib.experiments import paired_differences

    with pytest.raises(error, match=message):
        paired_differences(final, reference="A")


def test_a_diverged_run_stays_nan_in_the_summary():
    from topofl_lib.experiments import summarise

    out = summarise(pd.DataFrame({"method": ["A", "A"], "auc": [0.5, np.nan]}))
    assert np.isnan(out.loc["A", "mean"]) and out.loc["A", "n_seeds"] == 2


def test_holm_family_adjusts_over_every_table(final):
    from topofl_lib.experiments import holm, holm_family

    a = paired_differences(final, reference="A", metric="auc")
    b = paired_differences(final, reference="B", metric="auc")
    family = holm_family({"A": a, "B": b})
    raw = family["p_wilcoxon"].to_numpy()
    np.testing.assert_array_equal(family["p_holm"].to_numpy(), holm(raw))
    assert family["family_size"].iloc[0] == np.isfinite(raw).sum()
    assert list(family.index.get_level_values("table")) == ["A", "A", "B", "B"]
    with pytest.raises(ValueError, match="non-empty dict"):
        holm_family({})


def test_simultaneous_intervals_bonferroni_widening():
    """The adjusted interval is the t-interval at level 1 - 0.05/m, computed directly."""
    from scipy import stats

    from topofl_lib.statistics import simultaneous_intervals

    d = np.array([0.3, -0.1, 0.5, 0.2, 0.4])
    final = pd.concat([pd.DataFrame({"method": "R", "seed": range(5), "auc": d}),
                       pd.DataFrame({"method": "B", "seed": range(5), "auc": 0.0})])
    table = paired_differences(final, reference="R", metric="auc")
    for m in (1, 4, 60):
        out = simultaneous_intervals(table, m)
        half = stats.t.ppf(1 - 0.025 / m, 4) * d.std(ddof=1) / np.sqrt(5)
        np.testing.assert_allclose(out[["ci_low_adj", "ci_high_adj"]].to_numpy()[0],
                                   [d.mean() - half, d.mean() + half])
    np.testing.assert_allclose(simultaneous_intervals(table, 1)["ci_low_adj"], table["ci_low"])
    one = simultaneous_intervals(table.assign(n_seeds=1), 3)
    assert one["ci_low_adj"].isna().all()
    with pytest.raises(ValueError, match="family_size must be an int >= 1, got 0"):
        simultaneous_intervals(table, 0)
    with pytest.raises(ValueError, match=r"missing \['ci_high'\]"):
        simultaneous_intervals(table.drop(columns="ci_high"), 2)


def test_holm_family_widens_intervals_over_the_family(final):
    from topofl_lib.experiments import holm_family
    from topofl_lib.statistics import simultaneous_intervals

    a = paired_differences(final, reference="A", metric="auc")
    family = holm_family({"A": a, "B": paired_differences(final, reference="B")})
    m = int(family["family_size"].iloc[0])
    expected = simultaneous_intervals(pd.concat({"A": a}, names=["table"]), m)
    np.testing.assert_allclose(family.loc["A", "ci_low_adj"], expected.loc["A", "ci_low_adj"])
    assert (family["ci_low_adj"] <= family["ci_low"]).all()


def test_claim_notes_and_deep_claim_values():
    """Stand-in measurements carry a note that reaches the Markdown table."""
    rows = [{"scenario": f"{d}-L{a}", "dataset": d, "partition": "L", "param": a,
             "method": m, "seed": k, "accuracy": acc, "auc": np.nan}
            for d, a in (("fashion_mnist", 0.1), ("mnist5k", 0.5), ("mnist5k", 0.1))
            for m, acc in (("pTopoFL", 0.6), ("FedAvg", 0.5)) for k in range(2)]
    values, notes = deep_claim_values(pd.DataFrame(rows))
    assert set(values) == {"ptopofl.t2.cifar01.ptopofl", "ptopofl.t2.cifar01.fedavg",
                           "ptopofl.t2.femnist.ptopofl", "ptopofl.t2.femnist.fedavg"}
    assert "Fashion-MNIST" in notes["ptopofl.t2.cifar01.fedavg"]
    claims = claim_rows(values, "cpu", notes)
    md = comparison_markdown(summary_table(claims))
    line = next(ln for ln in md.splitlines() if "femnist.fedavg" in ln)
    assert "stand-in: MNIST-5k" in line and "| 0.79 |" in line
    assert "| cpu | stand-in | Fashion-MNIST (12,000 training images) for CIFAR-10" in line


def test_fedtopo_claim_values_in_percent():
    """FedTopo ids are percent; Table 3 Setting B comes from the L partition only."""
    rows = [{"scenario": f"fashion_mnist-{p}{a}", "dataset": "fashion_mnist", "partition": p,
             "param": a, "method": m, "seed": 0, "accuracy": 0.8}
            for p, a in (("L", 0.1), ("K", 5)) for m in ("FedTopo", "FedAvg", "FedTopo w/o TAL",
                                              "FedTopo@conv2")]
    tgbs = pd.DataFrame({"block": ["conv1", "conv2"], "seed": [0, 0], "auc": [0.6, 0.55]})
    v = fedtopo_claim_values(pd.DataFrame(rows), tgbs)
    assert v["fedtopo.t1.fmnist.K.fedtopo"] == pytest.approx([80.0])
    assert v["fedtopo.t3.b.without"] == pytest.approx([80.0])
    assert "fedtopo.t2.cnn.conv2.acc" in v and v["fedtopo.t2.cnn.conv1.auc"] == [60.0]
    assert not any(".K." in k and "t3" in k for k in v)


def test_fedtopo_table1_every_method_gets_its_id():
    """All sixteen Table 1 methods map to their paper's ids."""
    from topofl_lib.studies.fedtopo import TABLE1_METHODS

    ids = [c for c in load_paper_claims().index if c.startswith("fedtopo.t1.fmnist.N.")]
    assert sorted(f"fedtopo.t1.fmnist.N.{METHOD_KEYS[m]}" for m in TABLE1_METHODS) == sorted(ids)
    rows = [{"dataset": "fashion_mnist", "partition": "N", "method": m, "seed": k,
             "accuracy": 0.5 + 0.01 * k} for m in TABLE1_METHODS for k in range(2)]
    v = fedtopo_claim_values(pd.DataFrame(rows))
    assert sorted(v) == sorted(ids) and v[ids[0]] == pytest.approx([50.0, 51.0])


def test_table1_variants_add_the_l_skew_runs():
    """L-skew adds FedTopo w/o TAL and alpha_max=100; other partitions run the methods only;
    the strong FedTopo differs from FedTopo in alpha_max alone."""
    from topofl_lib.studies.fedtopo import table1_variants

    opts = {"tal_every": 4}
    v = table1_variants("L", ["FedAvg", "FedTopo"], 2, opts, {"loss_range": (0.1, 0.2)})
    assert list(v) == ["FedAvg", "FedTopo", "FedTopo w/o TAL", "FedTopo (alpha_max=100)"]
    assert v["FedTopo w/o TAL"][1]["tal"] is False
    strong, plain = v["FedTopo (alpha_max=100)"][1]["schedule"], v["FedTopo"][1]["schedule"]
    assert strong.alpha_max == 100.0 and strong.loss_range == plain.loss_range
    assert list(table1_variants("K", ["FedAvg", "FedTopo"], 2, opts, {})) == ["FedAvg", "FedTopo"]
    assert list(table1_variants("L", ["FedAvg"], 2, opts, {})) == ["FedAvg", "FedTopo w/o TAL"]


def test_table4_claim_values_round_one_and_last():
    """Table 4: round 1 and the last round per schedule, in percent, per setting."""
    from topofl_lib.studies.fedtopo import table4_claim_values

    curves = pd.DataFrame([{"method": f"FedTopo[{s}]", "seed": k, "round": r,
                            "accuracy": 0.1 * r + 0.01 * k}
                           for s in ("warmup", "linear") for k in (1, 0) for r in (1, 2, 3)])
    v = table4_claim_values({"b": curves})
    assert v["fedtopo.t4.b.lineartopo.r1"] == pytest.approx([10.0, 11.0])
    assert v["fedtopo.t4.b.warmup.r10"] == pytest.approx([30.0, 31.0])
    assert set(v) <= set(load_paper_claims().index) and len(v) == 4
    with pytest.raises(ValueError, match=r"settings \['c'\]"):
        table4_claim_values({"c": curves})
    with pytest.raises(ValueError, match="holds 'FedAvg'"):
        table4_claim_values({"a": curves.assign(method="FedAvg")})


def test_nskew_claim_values_per_reading():
    """Each N-skew reading gives FedAvg's and FedTopo's ids; other methods are left out."""
    from topofl_lib.studies.fedtopo import NSKEW_READINGS, nskew_claim_values

    final = pd.DataFrame([{"method": m, "seed": k, "accuracy": 0.6 + 0.1 * k}
                          for m in ("FedTopo", "FedAvg", "FedProx") for k in (1, 0)])
    v = nskew_claim_values(dict.fromkeys(NSKEW_READINGS, final))
    assert len(v) == 6 and set(v) <= set(load_paper_claims().index)
    assert v["topofl.fedtopo.nskew.perload.fedavg"] == pytest.approx([60.0, 70.0])
    with pytest.raises(ValueError, match=r"readings \['pixel'\]"):
        nskew_claim_values({"pixel": final})


def test_fedtopo_claim_notes_state_each_rows_rounds():
    """The 10-round N-skew reading says 10 rounds; every other row the notebook's."""
    from types import SimpleNamespace

    from topofl_lib.studies.fedtopo import claim_notes

    data = SimpleNamespace(y_train=np.zeros(60000), y_test=np.zeros(10000))
    notes = claim_notes(["fedtopo.t1.fmnist.N.fedavg", "topofl.fedtopo.nskew.rounds10.fedavg",
                         "topofl.fedtopo.nskew.perload.fedtopo"], data, 5, 5, 1)
    assert notes["fedtopo.t1.fmnist.N.fedavg"] == (
        "Fashion-MNIST 60000 train / 10000 test, 5 rounds x 5 epochs, TAL on every step")
    assert "10 rounds x 5 epochs" in notes["topofl.fedtopo.nskew.rounds10.fedavg"]
    assert "5 rounds" in notes["topofl.fedtopo.nskew.perload.fedtopo"]
    assert "every 4-th step" in claim_notes(["fedtopo.t3.b.with"], data, 2, 1, 4)[
        "fedtopo.t3.b.with"]


def test_profiles_cpu_and_auto():
    """Every notebook has every profile; cpu is paper's protocol but for the deep notebooks
    and the privacy notebook's deep runs (the deep pTopoFL notebook's protocol)."""
    for name, notebook in NOTEBOOKS.items():
        values = {p: notebook.values(p) for p in PROFILES}
        assert values["quick"] != values["paper"], name
        deep = name in ("fedtopo", "ptopofl_deep")
        if name == "privacy_analysis":
            values = {p: {k: v for k, v in vs.items() if k != "deep"}
                      for p, vs in values.items()}
            cpu, paper = (notebook.values(p)["deep"] for p in ("cpu", "paper"))
            assert cpu["n_rounds"] < paper["n_rounds"]
            assert cpu["epsilons"] == paper["epsilons"]
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
    write_claims(not_run_rows(["gfc.t4.abalone.eps0.01.k1.ari"], "not run: Abalone not found"),
                 tmp_path, "gfc")
    claims, md = comparison_document(tmp_path)
    assert len(claims) == 5 and list(claims.columns) == SUMMARY_COLUMNS
    assert ("- `cpu`: 1 rows (table1_hc)\n- `paper`: 3 rows (ablation, table1_bm)\n"
            "- `not run`: 1 rows of settings that cannot run here") in md
    line = next(ln for ln in md.splitlines() if CID in ln)
    assert [c.strip() for c in line.split("|")[-6:-3]] == ["agrees", "cpu", "paper"]
    assert "Generated by" not in md
    assert sorted(p.name for p in (tmp_path / "claims").iterdir()) == [
        "ablation.csv", "gfc.csv", "table1_bm.csv", "table1_hc.csv"]  # no temporary files left


# -- claim ids of the two protocols (issue 14) ------------------------------------------


def _table1_final(protocol: str, seeds=(2, 0, 1)) -> pd.DataFrame:
    """A final table of every Table 1 label of ``protocol`` on both scenarios; a label's
    AUC encodes (label index, seed) so that the mapping and the seed order can be read."""
    rows = [{"protocol": protocol, "scenario": scen, "method": label, "seed": s,
             "auc": i + s / 10, "accuracy": 0.5 + s / 10, "convergence_round": 1 + s}
            for scen in ("healthcare", "benchmark")
            for i, label in enumerate(TABLE1_VARIANTS[protocol]) for s in seeds]
    return pd.DataFrame(rows)


def test_table1_claim_values_paper_protocol_gives_the_paper_rows():
    """Paper protocol: the five methods -> ptopofl.t1.*, Local-only and the v1.0.0 rule ->
    topofl.t1.<scen>.<metric>.localonly / .scaffold_v1; values in seed order."""
    v = table1_claim_values(_table1_final("paper"))
    labels = list(TABLE1_VARIANTS["paper"])
    assert v["ptopofl.t1.hc.auc.fedavg"] == pytest.approx(
        labels.index("FedAvg") + np.array([0.0, 0.1, 0.2]))
    assert v["topofl.t1.hc.auc.localonly"] == pytest.approx(
        labels.index("Local-only") + np.array([0.0, 0.1, 0.2]))
    assert v["topofl.t1.bm.acc.scaffold_v1"] == pytest.approx([0.5, 0.6, 0.7])
    assert v["ptopofl.t1.bm.conv.pfedme"] == pytest.approx([1, 2, 3])
    assert not any(".own." in cid for cid in v)
    paper_ids = {cid for cid in load_paper_claims().index if cid.startswith("ptopofl.t1.")}
    assert paper_ids <= set(v)  # every paper row of Table 1 is measured
    assert set(v) - paper_ids == {f"topofl.t1.{s}.{m}.{k}" for s in ("hc", "bm")
                                  for m in ("auc", "acc") for k in ("localonly", "scaffold_v1")}


def test_table1_claim_values_our_protocol_gets_own_ids():
    """Our protocol: every label -> topofl.t1.own.*, never a ptopofl.t1.* row."""
    v = table1_claim_values(_table1_final("ours"))
    assert all(cid.startswith("topofl.t1.own.") for cid in v)
    assert len(v) == 2 * 2 * 7 + 3  # auc and acc of 7 labels per scenario, 3 conv rows
    assert "topofl.t1.own.hc.auc.scaffold_v1" in v and "topofl.t1.own.bm.conv.pfedme" in v
    both = table1_claim_values(pd.concat([_table1_final("paper"), _table1_final("ours")]))
    assert len(both) == len(v) + len(table1_claim_values(_table1_final("paper")))
    claim_rows(both, "quick")  # every id is in the claims table


def test_table1_claim_values_protocol_argument_and_errors():
    """A table without a protocol column needs protocol=...; unknown labels are left out."""
    final = _table1_final("ours").drop(columns="protocol")
    given, own = table1_claim_values(final, protocol="ours"), table1_claim_values(
        _table1_final("ours"))
    assert given.keys() == own.keys()
    for cid in own:
        np.testing.assert_array_equal(given[cid], own[cid])
    extra = pd.concat([final, final.head(1).assign(method="Median")])
    assert set(table1_claim_values(extra, protocol="paper")) <= set(load_paper_claims().index)
    with pytest.raises(ValueError, match="no 'protocol' column"):
        table1_claim_values(final)
    with pytest.raises(ValueError, match="only for a table without"):
        table1_claim_values(_table1_final("ours"), protocol="ours")
    with pytest.raises(ValueError, match=r"unknown protocol\(s\) \['theirs'\]"):
        table1_claim_values(final, protocol="theirs")


def test_robustness_and_ablation_claim_values_by_protocol():
    """Paper protocol -> ptopofl.* (and topofl.* beyond the paper); ours -> *.own.*."""
    rows = [{"protocol": p, "method": m, "seed": s, "rate": r, "auc": 0.5 + r + s / 100}
            for p in ("paper", "ours") for m in ("pTopoFL", "FedAvg", "Local-only", "Krum")
            for s in (1, 0) for r in (0.0, 0.5)]
    v = robustness_claim_values(pd.DataFrame(rows))
    assert set(v) == {"ptopofl.robust.50.ptopofl", "ptopofl.robust.50.fedavg",
                      "topofl.robust.50.localonly", "topofl.robust.own.50.ptopofl",
                      "topofl.robust.own.50.fedavg", "topofl.robust.own.50.localonly",
                      "topofl.robust.own.50.krum"}
    assert v["ptopofl.robust.50.ptopofl"] == pytest.approx([1.0, 1.01])
    ablation = pd.DataFrame([{"protocol": p, "method": m, "seed": s, "auc": 0.7 + s / 100}
                             for p in ("paper", "ours") for m in (*ABLATIONS, "FedAvg")
                             for s in (0, 1)])
    a = ablation_claim_values(ablation)
    assert len(a) == 2 * len(ABLATIONS)
    assert {"ptopofl.ablation.m1", "topofl.ablation.no_trust", "topofl.ablation.own.m1",
            "topofl.ablation.own.full"} <= set(a)
    assert not any(cid.startswith("ptopofl.") and ".own." in cid for cid in a)
    claim_rows({**v, **a}, "quick")  # every id is in the claims table
    with pytest.raises(ValueError, match="no 'protocol' column"):
        ablation_claim_values(ablation.drop(columns="protocol"))


def test_ablation_variants_apply_changes_to_the_protocols_configuration():
    """Each variant is pTopoFL's Table 1 configuration of the protocol plus its change."""
    paper = ablation_variants("paper")
    assert paper["M=1"] == ("pTopoFL", {"solver": "lbfgs", "n_clusters": 1})
    assert paper["Local-only"] == TABLE1_VARIANTS["paper"]["Local-only"]
    assert ablation_variants("ours")["full"] == ("pTopoFL", {})
    sweep = ablation_variants("paper", {0.5: {"beta": 0.5}}, references=())
    assert sweep == {0.5: ("pTopoFL", {"solver": "lbfgs", "beta": 0.5})}
    with pytest.raises(ValueError, match="unknown references"):
        ablation_variants("paper", references=("Krum",))
    with pytest.raises(ValueError, match="protocol"):
        ablation_variants("theirs")


def test_label_aware_claim_values_map_every_table():
    """topofl.cc.* ids from the label-aware notebook's tables: per-seed values in seed
    order, clients averaged within a seed, NaN seeds left out, unknown settings dropped."""
    detection = pd.DataFrame({
        "scenario": ["label_flip 0.2"] * 2 + ["label_flip 0.3", "noisy_label_flip 0.2"],
        "attack": ["label_flip"] * 3 + ["noisy_label_flip"], "protocol": "ours",
        "rate": [0.2, 0.2, 0.3, 0.2], "flip_fraction": np.nan,
        "descriptor": ["model_anchored"] * 3 + ["paper"], "seed": [101, 100, 100, 100],
        "tpr@1.8": [0.5, 1.0, 0.0, 1.0], "fpr@1.8": [0.0, 0.125, 0.0, 0.0],
        "tpr@1": [1.0, 1.0, 1.0, 1.0], "fpr@1": [0.25, 0.0, 0.0, 0.0],
        "auc": [0.9, 1.0, 0.8, 1.0]})
    recovery = pd.DataFrame({"scenario": "label_flip 0.2", "attack": "label_flip",
                             "protocol": "ours", "rate": 0.2, "flip_fraction": np.nan,
                             "descriptor": "class_conditional",
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
    assert not any(k.startswith("topofl.cc.detect.20.paper") for k in v)  # noisy: own ids
    np.testing.assert_array_equal(v["topofl.cc.detect.noisy.20.paper.tpr"], [1.0])
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
    # detect 20, 30, noisy 20; ari; auc; drift; privacy
    assert len(v) == 5 + 5 + 5 + 2 + 2 + 1 + 2 + 2 + 2
    rows = claim_rows(v, "cpu")
    assert rows.set_index("id").loc["topofl.cc.auc.paper.50.ptopofl_ma", "n_seeds"] == 2


def test_label_aware_claim_values_keep_the_attacks_apart():
    """Label-flip rows map to topofl.cc.auc.<protocol>..., noisy-label-flip rows to
    topofl.cc.auc.noisy.<protocol>...; a table without an ``attack`` column is all label
    flip; other attacks (and other scenarios) have no id."""
    final = pd.DataFrame({
        "attack": ["label_flip", "label_flip", "noisy_label_flip", "noisy_label_flip",
                   "sign_flip"],
        "protocol": "ours", "rate": [0.3, 0.3, 0.3, 0.0, 0.3], "method": "FedAvg",
        "seed": [100, 101, 100, 100, 100], "auc": [0.7, 0.8, 0.6, 0.9, 0.1]})
    v = label_aware_claim_values(final=final)
    assert set(v) == {"topofl.cc.auc.ours.30.fedavg", "topofl.cc.auc.noisy.ours.30.fedavg",
                      "topofl.cc.auc.noisy.ours.0.fedavg"}
    np.testing.assert_array_equal(v["topofl.cc.auc.ours.30.fedavg"], [0.7, 0.8])
    np.testing.assert_array_equal(v["topofl.cc.auc.noisy.ours.30.fedavg"], [0.6])
    np.testing.assert_array_equal(v["topofl.cc.auc.noisy.ours.0.fedavg"], [0.9])
    legacy = label_aware_claim_values(final=final.drop(columns="attack"))
    np.testing.assert_array_equal(legacy["topofl.cc.auc.ours.30.fedavg"],
                                  [np.mean([0.7, 0.6, 0.1]), 0.8])
    detection = pd.DataFrame({
        "scenario": ["label_flip 0.3", "noisy_label_flip 0.3", "sign_flip 0.3"],
        "attack": ["label_flip", "noisy_label_flip", "sign_flip"], "protocol": "ours",
        "rate": 0.3, "flip_fraction": np.nan,
        "descriptor": "model_anchored", "seed": 100, "auc": [0.9, 0.6, 0.1]})
    v = label_aware_claim_values(detection=detection)
    assert v == {"topofl.cc.detect.30.ma.rocauc": [0.9],
                 "topofl.cc.detect.noisy.30.ma.rocauc": [0.6]}


def test_label_aware_claim_rows_are_beyond_the_paper():
    """Every topofl.cc.* row: paper 'topofl', no paper value, source 'beyond the paper'
    (the noisy-flip rows add when they were added); the detection, AUC, privacy and deep
    families are all present."""
    claims = load_paper_claims()
    cc = claims[claims.index.str.startswith("topofl.cc.")]
    assert (cc["paper"] == "topofl").all() and cc["value"].isna().all()
    noisy = cc.index.str.contains(".noisy.", regex=False)
    assert (cc.loc[~noisy, "source"] == "beyond the paper").all()
    assert cc.loc[noisy, "source"].str.fullmatch(
        "beyond the paper; the noisy label flip was added after the first report-seed run").all()
    for family in ("detect.paper.", "detect.partial30.", "deep.fmnist01."):
        assert cc.index.str.startswith("topofl.cc." + family).sum() >= 6, family
    for protocol in ("ours", "paper"):
        for rate in ("0", "30", "50"):
            for m in ("ptopofl", "ptopofl_cc", "ptopofl_ma", "fedavg", "median",
                      "trimmedmean", "krum"):
                assert f"topofl.cc.auc.{protocol}.{rate}.{m}" in cc.index
                assert f"topofl.cc.auc.noisy.{protocol}.{rate}.{m}" in cc.index
    for d in ("paper", "cc", "ma"):
        for rate in ("20", "30"):
            for suffix in ("tpr", "fpr", "tpr.tau1", "fpr.tau1", "rocauc"):
                assert f"topofl.cc.detect.{rate}.{d}.{suffix}" in cc.index
                assert f"topofl.cc.detect.noisy.{rate}.{d}.{suffix}" in cc.index
        assert f"topofl.cc.privacy.{d}.mia.auc" in cc.index


def test_table1_variants_score_the_decoupled_methods_both_ways_on_the_label_skews():
    """Table 1's FedPAC and FedCCFA score the global model; on L- and K-skew they run
    scored with personal models too: the same parameters but deploy, so the personal
    runs keep the keys they were stored under before deploy existed."""
    from topofl_lib.deep.experiments import PERSONAL
    from topofl_lib.studies.fedtopo import table1_variants

    methods = ["FedAvg", "FedPAC", "FedCCFA"]
    for part in "LK":
        v = table1_variants(part, methods, 2, {}, {})
        assert list(v)[-2:] == [f"FedPAC{PERSONAL}", f"FedCCFA{PERSONAL}"]
        for m in ("FedPAC", "FedCCFA"):
            table1, own = v[m], v[f"{m}{PERSONAL}"]
            assert table1[0] == own[0] == m and table1[1]["deploy"] == "global"
            assert "deploy" not in own[1]
            assert {k: p for k, p in table1[1].items() if k != "deploy"} == own[1]
    for part in "NQ":
        assert list(table1_variants(part, methods, 2, {}, {})) == methods
    assert list(table1_variants("K", ["FedAvg", "FedPAC"], 2, {}, {})) == [
        "FedAvg", "FedPAC", f"FedPAC{PERSONAL}"]
