"""The values the FedTopo notebook's prose states (topofl_lib.studies.fedtopo_summary):
known tables in, known numbers and method lists out."""

import numpy as np
import pandas as pd
import pytest

from topofl_lib.prose import render
from topofl_lib.studies import fedtopo_summary as fs


def _paired(rows):
    """A holm_family-like table: (partition, method) -> difference, adjusted interval."""
    index = pd.MultiIndex.from_tuples([r[:2] for r in rows], names=["table", "method"])
    return pd.DataFrame([r[2:] for r in rows], index=index,
                        columns=["mean_diff", "ci_low_adj", "ci_high_adj", "wins", "n_seeds"])


def _family():
    """A family of four comparisons: one ahead (MOON, N), one behind (FedAvg, L), one whose
    interval contains 0 (FedAvg, N) and one with a single seed (FedDC, L)."""
    return _paired([("N", "FedAvg", 0.01, -0.02, 0.04, 2, 3),
                    ("N", "MOON", 0.05, 0.01, 0.09, 3, 3),
                    ("L", "FedAvg", -0.03, -0.05, -0.01, 0, 5),
                    ("L", "FedDC", 0.0, np.nan, np.nan, 0, 1)])


def _final(rows):
    return pd.DataFrame(rows, columns=["method", "partition", "seed", "accuracy"])


def test_table1_values_sorts_comparisons_by_their_adjusted_interval():
    paired = _family()
    v = fs.table1_values(paired)
    assert (v["n_comparisons"], v["n_ahead"], v["n_behind"]) == (3, 1, 1)
    assert v["ahead"] == "MOON (N)" and v["behind"] == "FedAvg (L)"
    assert v["vs_reference"] == "N-skew +1.00 (-2.00 to +4.00); L-skew -3.00 (-5.00 to -1.00)"
    assert v["seeds"] == "1 to 5"
    empty = fs.table1_values(paired.iloc[3:])
    assert empty["ahead"] == empty["behind"] == empty["vs_reference"] == "none"


def test_paired_grid_has_a_cell_per_method_and_partition_and_marks_the_excluding_intervals():
    paired = _family()
    grid = fs.paired_grid(paired)
    assert grid.index.tolist() == ["FedAvg", "MOON", "FedDC"]
    assert grid.columns.tolist() == ["N", "L"]
    assert grid.loc["FedAvg"].tolist() == ["+1.00 (-2.00 to +4.00)", "-3.00 (-5.00 to -1.00) *"]
    assert grid.loc["MOON"].tolist() == ["+5.00 (+1.00 to +9.00) *", ""]
    assert grid.loc["FedDC"].tolist() == ["", "+0.00"]
    # every comparison appears once, and the marks count table1_values' verdicts
    v = fs.table1_values(paired)
    assert grid.map(lambda c: c.endswith("*")).sum().sum() == v["n_ahead"] + v["n_behind"]


def test_paired_grid_rows_follow_the_given_order_then_the_rest():
    paired = _family()
    grid = fs.paired_grid(paired, order=["FedDC", "FedProx", "FedAvg"])
    assert grid.index.tolist() == ["FedDC", "FedAvg", "MOON"]  # FedProx is not in the family
    assert grid.loc["FedDC"].tolist() == fs.paired_grid(paired).loc["FedDC"].tolist()
    # any sequence: a NumPy array (truth value ambiguous) too; a str is refused
    assert fs.paired_grid(paired, order=np.array(["MOON"])).index.tolist()[0] == "MOON"
    assert fs.paired_grid(paired, order=np.array(["MOON", "FedDC"])).index.tolist() == [
        "MOON", "FedDC", "FedAvg"]
    with pytest.raises(TypeError, match="order must be a sequence of method names"):
        fs.paired_grid(paired, order="FedAvg")


def test_diverged_runs_names_method_partition_and_seeds():
    final = _final([("SCAFFOLD", "Q", 1, np.nan), ("SCAFFOLD", "Q", 0, np.nan),
                    ("SCAFFOLD", "Q", 2, 0.9), ("FedFM", "L", 0, np.nan),
                    ("FedAvg", "L", 0, 0.8)])
    assert fs.diverged_runs(final) == "FedFM on L-skew (seed 0); SCAFFOLD on Q-skew (seeds 0, 1)"
    assert fs.diverged_runs(final.dropna()) == "none"


def test_mean_sd_ignores_nan_and_says_na_when_nothing_is_left():
    assert fs.mean_sd([np.nan, 70.0, 72.0]) == "71.00 ± 1.41"
    assert fs.mean_sd([np.nan]) == "n/a"


def test_paper_gaps_in_partition_order():
    compared = pd.DataFrame({"difference": [2.25, -5.25, 1.0]},
                            index=["fedtopo.t1.fmnist.Q.fedavg", "fedtopo.t1.fmnist.N.fedavg",
                                   "fedtopo.t1.fmnist.N.fedtopo"])
    assert fs.paper_gaps(compared, "FedAvg") == "N -5.2, Q +2.2"
    assert fs.paper_gaps(compared, "SCAFFOLD") == "none"


def test_nskew_values_compares_like_methods_and_finds_the_lowest_reading():
    final = _final([("FedAvg", "N", 0, 0.88), ("FedAvg", "N", 1, 0.90),
                    ("FedProx", "N", 0, 0.86), ("FedTopo", "N", 0, 0.50),
                    ("FedAvg", "L", 0, 0.10)])
    compared = pd.DataFrame({"paper_value": [60.0, 66.0, 75.0]},
                            index=["fedtopo.t1.fmnist.N.fedavg", "fedtopo.t1.fmnist.N.fedprox",
                                   "fedtopo.t1.fmnist.N.fedtopo"])
    readings = pd.DataFrame({"reading": ["table1", "table1", "perload", "perload"],
                             "method": ["FedAvg", "FedTopo", "FedAvg", "FedTopo"],
                             "accuracy": [0.89, 0.5, 0.80, 0.4]})
    pixel = pd.DataFrame({"accuracy": [0.85, 0.87]})
    v = fs.nskew_values(final, compared, readings, pixel)
    assert (v["ours_low"], v["ours_high"]) == pytest.approx((86.0, 89.0))
    assert (v["paper_low"], v["paper_high"]) == (60.0, 66.0)  # FedTopo's 75 left out
    assert v["per_reading"] == "table1 89.00; perload 80.00" and v["pixel"] == "86.00 ± 1.41"
    assert v["lowest"] == pytest.approx(80.0) and v["lowest_reading"] == "perload"


def test_seed_range_and_table3_values():
    final = _final([("FedAvg", "L", s, a) for s, a in enumerate([0.74, 0.85, np.nan])]
                   + [("FedTopo w/o TAL", "L", 0, 0.74), ("FedTopo", "L", 0, 0.76),
                      ("FedTopo (alpha_max=100)", "L", 0, 0.70)])
    assert fs.seed_range(final, "FedAvg", "L") == {"low": pytest.approx(74.0),
                                                   "high": pytest.approx(85.0), "n_seeds": 2}
    assert np.isnan(fs.seed_range(final, "FedAvg", "N")["low"])
    paired = _paired([("L", "FedTopo w/o TAL", 0.02, np.nan, np.nan, 1, 1),
                      ("L", "FedTopo (alpha_max=100)", 0.06, 0.01, 0.11, 3, 3)])
    v = fs.table3_values(final, paired)
    assert (v["without"], v["with_tal"], v["strong"]) == ("74.00", "76.00", "70.00")
    assert v["gain"] == "+2.00" and v["cost"] == "+6.00 (+1.00 to +11.00)"
    assert (v["cost_wins"], v["n_seeds"]) == (3, 3)
    assert fs.table3_values(final, paired.iloc[:0])["cost"] == "none"


def test_table2_values_count_seeds_where_conv1_leads():
    table2 = pd.DataFrame({"block": ["conv1", "conv2"] * 2, "seed": [0, 0, 1, 1],
                           "auc": [60.0, 58.0, 62.0, 56.0], "accuracy": [80.0, 79.0, 70.0, 71.0]})
    tgbs = pd.DataFrame({"seed": [0, 0, 1, 1], "selected": ["conv1"] * 2 + ["conv2"] * 2})
    v = fs.table2_values(table2, tgbs)
    assert v["auc_conv1"] == "61.00 ± 1.41" and v["acc_conv2"] == "75.00 ± 5.66"
    assert (v["selected_conv1"], v["conv1_ahead"], v["n_seeds"]) == (1, 1, 2)
    assert v["margins"] == "+1.0, -1.0"


def test_table4_values_orders_schedules_and_states_the_default_against_each():
    curves = pd.DataFrame([("b", m, s, r, a) for m, acc in
                           (("FedTopo[smooth]", (0.5, 0.8)), ("FedTopo[warmup]", (0.4, 0.7)))
                           for s in (0, 1) for r, a in zip((1, 5), acc, strict=True)]
                          + [("a", "FedTopo[smooth]", 0, 5, 0.6)],
                          columns=["setting", "method", "seed", "round", "accuracy"])
    paired = _paired([("b", "FedTopo[warmup]", 0.1, 0.05, 0.15, 2, 2)])
    v = fs.table4_values(curves, paired)
    assert v["finals"] == "FedTopo[smooth] 80.00 ± 0.00; FedTopo[warmup] 70.00 ± 0.00"
    assert (v["round1_low"], v["round1_high"]) == pytest.approx((40.0, 50.0))
    assert v["versus"] == "FedTopo[warmup]: +10.00 (+5.00 to +15.00), ahead in 2 of 2 seeds"
    assert fs.table4_values(curves, paired, setting="a")["versus"] == "none"


def test_alpha_floor_values_summarise_the_rounds_after_the_second():
    idx = pd.MultiIndex.from_product([["FedTopo[smooth]", "FedTopo[warmup]"], [1, 2, 3, 4]],
                                     names=["schedule", "round"])
    medians = pd.DataFrame({"alpha": [0.5, 0.4, 0.1, 0.1, 0.6, 0.6, 0.6, 0.5],
                            "TAL": [0.01, 0.005, 0.001, 0.003, 0.01, 0.01, 0.01, 0.01]},
                           index=idx)
    v = fs.alpha_floor_values(medians, loss_low=0.002)
    assert v["tal"] == pytest.approx(0.002) and v["share_below"] == 0.5
    assert (v["alpha_adaptive"], v["alpha_fixed"]) == pytest.approx((0.1, 0.55))


def test_figure_values_and_every_dict_renders():
    spread = pd.DataFrame({"client 0": [2.0, 1.0], "client 1": [0.5, 2.5]},
                          index=pd.Index([1, 5], name="round"))
    v = fs.figure_values(spread)
    assert v == {"first": 1, "last": 5, "mean_first": 1.25, "mean_last": 1.75, "closer": 1,
                 "n_clients": 2}
    text = render("{mean_first:.2f} after round {first}, {closer} of {n_clients}; "
                  "{mean_last:.2f} after {last}", **v)
    assert text == "1.25 after round 1, 1 of 2; 1.75 after 5"


def test_personal_values_set_each_decoupled_method_beside_its_personal_models():
    """Both decoupled methods, each partition that ran the personal models, NaN seeds
    (diverged) left out; none without personal runs."""
    final = _final([("FedPAC", "L", 0, 0.70), ("FedPAC", "L", 1, 0.72),
                    ("FedPAC (personal models)", "L", 0, 0.45),
                    ("FedPAC (personal models)", "L", 1, 0.47),
                    ("FedCCFA", "K", 0, 0.80), ("FedCCFA (personal models)", "K", 0, np.nan),
                    ("FedCCFA (personal models)", "K", 1, 0.76), ("FedPAC", "N", 0, 0.88)])
    assert fs.personal_values(final) == (
        "FedPAC L-skew 71.00 ± 1.41 (personal models 46.00 ± 1.41), "
        "FedCCFA K-skew 80.00 (personal models 76.00)")
    assert fs.personal_values(final[~final["method"].str.endswith(")")]) == "none"


def test_the_text_numbers_are_derived_from_their_rows():
    from topofl_lib.results import load_paper_claims
    from topofl_lib.studies.fedtopo import fedtopo_text_claims

    values = {f"fedtopo.t1.fmnist.{p}.{m}": np.array(v) for p, m, v in (
        ("N", "fedtopo", [90.0, 92.0]), ("N", "fedavg", [85.0, 87.0]), ("N", "moon", [88.0, 88.0]),
        ("L", "fedtopo", [80.0, 80.0]), ("L", "fedavg", [70.0, 70.0]))}
    values.update({"fedtopo.t3.b.with": np.array([78.0, 80.0]),
                   "fedtopo.t3.b.without": np.array([77.0, 80.5]),
                   "fedtopo.t4.a.lineartopo.r1": np.array([20.0, 21.0]),
                   "fedtopo.t4.a.warmup.r1": np.array([19.0, 22.0]),
                   "fedtopo.t4.a.smoothtopo.r10": np.array([29.0, 30.0])})
    got, missing = fedtopo_text_claims(values)
    assert got["fedtopo.text.gain_second_best_fmnist"].tolist() == [10.0]  # L: 80 - 70
    assert got["fedtopo.text.tal_gain_b"].tolist() == [1.0, -0.5]          # seed by seed
    assert got["fedtopo.text.linear_vs_warm_gain_a_r1"].tolist() == [1.0, -1.0]
    assert got["fedtopo.text.smooth_final_a"].tolist() == [29.0, 30.0]
    assert "fedtopo.text.smooth_final_b" in missing  # its Table 4 row is not in values
    ids = {c for c in load_paper_claims().index if c.startswith("fedtopo.text.")}
    assert set(got) | set(missing) == ids and not set(got) & set(missing)
    assert all(n.startswith("not run: ") for n in missing.values())
