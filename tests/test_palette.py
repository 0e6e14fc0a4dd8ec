"""One style per method in every figure, legends without repeats, panels that fit a page.

The palette (:mod:`topofl_lib.viz.palette`) is checked on its own (every method label of
the package has a style, the same each time; variants look related and differ; unknown
labels are hashed, not random, and never take a colour of the figure) and through the
figure functions, on small made-up data: a method keeps its colour from one figure to
the next, no two legend entries share colour and dash, no legend entry repeats, per-seed
marks are in their line's colour, and no figure is wider than the page.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("plotly")

from topofl_lib import viz  # noqa: E402
from topofl_lib.viz.layout import MAX_WIDTH, dodge, grid_shape, page_width  # noqa: E402
from topofl_lib.viz.palette import (  # noqa: E402
    DASHES,
    METHOD_COLOURS,
    METHOD_SYMBOLS,
    METHOD_VARIANTS,
    UNKNOWN_SERIES,
    base_method,
    colour_distance,
    method_style,
    method_styles,
    rgba,
)

ROBUSTNESS = ["pTopoFL", "FedAvg", "FedProx", "SCAFFOLD", "pFedMe", "Median", "TrimmedMean",
              "Krum", "Local-only", "FedAvgM", "FedNova", "FedDyn", "FedDC"]
FEDTOPO_TABLE1 = ["FedAvg", "FedProx", "SCAFFOLD", "FedAvgM", "FedNova", "FedDyn", "FedDC",
                  "MOON", "FedFM", "FedPAC", "FedCCFA", "FedDF", "FedSA", "FedGen", "FedFTG",
                  "FedTopo"]
FEDTOPO_L = ["FedAvg", "FedProx", "SCAFFOLD", "FedTopo", "FedTopo w/o TAL",
             "FedTopo (alpha_max=100)"]
LABEL_AWARE = ["pTopoFL", "pTopoFL-CC", "pTopoFL-MA", "FedAvg", "Median", "TrimmedMean", "Krum"]


# ---------------------------------------------------------------- made-up data


def _curves(methods, n_seeds=3, n_rounds=5, metric="accuracy", seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame([(m, s, r, 0.5 + 0.05 * r + 0.02 * rng.standard_normal())
                         for m in methods for s in range(n_seeds) for r in range(1, n_rounds + 1)],
                        columns=["method", "seed", "round", metric])


def _final(methods, n_seeds=4, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame([("healthcare", m, s, rate, 0.8 - rate * rng.random(), 2)
                         for m in methods for s in range(n_seeds) for rate in (0.0, 0.2, 0.4)],
                        columns=["scenario", "method", "seed", "rate", "auc",
                                 "convergence_round"])


def _roc(n_scenarios, descriptors=("paper", "class_conditional", "model_anchored")):
    from topofl_lib.detection import roc_table

    rng = np.random.default_rng(1)
    runs = pd.DataFrame([{"scenario": f"s{i}", "descriptor": d, "seed": seed, "client": k,
                          "adversarial": k < 2, "z": rng.normal(1.0 if k < 2 else 0.0)}
                         for i in range(n_scenarios) for d in descriptors
                         for seed in range(2) for k in range(6)])
    return roc_table(runs)


def _per_round():
    rng = np.random.default_rng(2)
    return pd.DataFrame([(0, k, r, k in (1, 2), rng.random(), rng.random(), rng.random())
                         for k in range(6) for r in range(1, 8)],
                        columns=["seed", "client", "round", "shifted", "entropy_h0",
                                 "entropy_h1", "drift_statistic"])


def _figures():
    """Every figure function of viz whose traces carry labels, on small made-up data."""
    rng = np.random.default_rng(3)
    final = _final(LABEL_AWARE)
    paired = pd.DataFrame({"mean_diff": [0.01, -0.02, 0.03], "ci_low": -0.05,
                           "ci_high": 0.05}, index=["FedAvg", "SCAFFOLD (v1.0.0 rule)", "mine"])
    logs = {f"FedTopo[{s}]": np.c_[np.zeros(9), np.zeros(9), np.arange(9), rng.random((9, 2))]
            for s in ("warmup", "linear", "piecewise", "smooth")}
    dp = pd.DataFrame([(sc, m, e, 0.8) for sc in ("healthcare", "benchmark")
                       for m, es in (("pTopoFL", (1.0, 10.0, np.inf)), ("FedAvg", (np.inf,)))
                       for e in es], columns=["scenario", "method", "epsilon", "auc"])
    gfc = pd.DataFrame([(d, m, e, rng.random()) for d in "abcde"
                        for m in ("GFC", "k-FED", "MUFC", "NN-FC") for e in (0.1, 1.0, 10.0)],
                       columns=["dataset", "method", "epsilon", "ari"])
    stability = pd.DataFrame([(s, e, e / 3) for s in range(12) for e in (0.1, 1.0, 3.0)],
                             columns=["seed", "eta_over_margin", "changed"])
    t5 = pd.DataFrame({"rate": [0.1, 0.2, 0.3, 0.4], "eps": [0.1, 0.2, 0.3, 0.4],
                       "assumption_holds": [True, False, True, False],
                       "adversarial_weight": [0.1, 0.2, 0.2, 0.5], "bound": [0.2] * 4})
    table2 = pd.DataFrame({"block": ["conv1", "conv2"] * 2, "auc": [60.0, 58, 61, 57],
                           "accuracy": [80.0, 78, 81, 79]})
    curves, aucs = _roc(8)
    dp_final = pd.DataFrame([(sc, m, s, t, t if np.isfinite(t) else np.nan, rng.random())
                             for sc in ("healthcare", "benchmark") for m in ("pTopoFL", "FedAvg")
                             for s in range(2) for t in (1.0, 10.0, np.inf)],
                            columns=["scenario", "base", "seed", "target_epsilon", "epsilon",
                                     "auc"])
    dp_deep = dp_final[dp_final["scenario"] == "healthcare"].rename(columns={"auc": "accuracy"})
    audit = pd.DataFrame([(a, c, e, e * rng.random()) for a in ("canary", "membership")
                          for c in ("gradient", "descriptor") for e in (0.1, 1.0, np.inf)],
                         columns=["attack", "channel", "epsilon_release", "epsilon_lb"])
    detection = pd.DataFrame([(t, s, rng.random(), rng.random(), rng.random(), rng.random(), 0.3)
                              for t in (1.0, 10.0, np.inf) for s in range(2)],
                             columns=["target_epsilon", "seed", "flagged", "isolated",
                                      "false_alarms", "adversarial_weight",
                                      "adversarial_share"])
    return {
        "dp_tradeoff_plot": viz.dp_tradeoff_plot(dp_final, dp_deep),
        "dp_audit_plot": viz.dp_audit_plot(audit),
        "dp_detection_plot": viz.dp_detection_plot(detection),
        "metric_curves": viz.metric_curves(_curves(FEDTOPO_L), "accuracy"),
        "metric_curves_table1": viz.metric_curves(_curves(FEDTOPO_TABLE1, n_seeds=8), "accuracy"),
        "metric_curves_against": viz.metric_curves_against(
            _curves(FEDTOPO_TABLE1 + FEDTOPO_L[4:], n_seeds=5), "accuracy"),
        "final_metric_panels": viz.final_metric_panels(
            pd.concat([final, final.assign(scenario="benchmark")]),
            paper_auc={"pTopoFL": 0.8, "FedAvg": 0.79}),
        "paired_difference_plot": viz.paired_difference_plot(paired),
        "metric_vs_parameter": viz.metric_vs_parameter(final, "rate"),
        "metric_vs_parameter_protocols": viz.metric_vs_parameter(
            final.assign(protocol=np.where(final["seed"] < 2, "paper", "ours")), "rate",
            group="protocol"),
        "variant_bars": viz.variant_bars(
            final.assign(method=final["method"].replace({"pTopoFL": "full"})),
            paper={"full": 0.84, "FedAvg": 0.8}, family="pTopoFL"),
        "roc_figure": viz.roc_figure(curves, aucs),
        "alpha_trajectory_plot": viz.alpha_trajectory_plot(logs),
        "dp_utility_plot": viz.dp_utility_plot(dp),
        "metric_vs_epsilon_facets": viz.metric_vs_epsilon_facets(gfc),
        "figure5": viz.figure5(_per_round(), 0),
        "drift_statistic_plot": viz.drift_statistic_plot(_per_round(), 0, 0.5, 3),
        "stability_plot": viz.stability_plot(stability),
        "adversarial_weight_plot": viz.adversarial_weight_plot(t5),
        "tgbs_table2_plot": viz.tgbs_table2_plot(table2, {"auc": {"conv1": 61.0}}),
    }


@pytest.fixture(scope="module")
def figures():
    return _figures()


def _legend_traces(fig):
    """The traces that make a legend entry (a name, and showlegend not False)."""
    return [t for t in fig.data if t.name and t.showlegend is not False]


def _style(trace):
    """(colour, dash) of a line trace, or (colour, symbol) of a markers-only trace."""
    mode = getattr(trace, "mode", None) or ""
    if trace.type == "scatter" and "lines" in mode:
        return trace.line.color, trace.line.dash or "solid"
    marker = trace.marker
    return marker.color, marker.symbol


def _line_of(fig, name):
    """The mean line of ``name`` (the legend trace)."""
    (t,) = [t for t in _legend_traces(fig) if t.name == name]
    return t


# ---------------------------------------------------------------- the palette


def test_every_method_label_of_the_package_has_a_style():
    """Methods of every catalogue, the deep labels and the claim-id labels are all known."""
    from topofl_lib.claim_keys import METHOD_KEYS
    from topofl_lib.clustering.evaluation import CLUSTERING_METHODS
    from topofl_lib.deep.experiments import DEEP_LABELS
    from topofl_lib.federated import ALL_METHODS, REPRESENTATION_METHODS
    from topofl_lib.fedtopo.schedules import SCHEDULES

    deep = [lb for lb in DEEP_LABELS if "<" not in lb]
    deep += [f"FedTopo[{s}]" for s in SCHEDULES] + ["FedTopo@conv1", "FedTopo@conv2"]
    labels = {*ALL_METHODS, *REPRESENTATION_METHODS, *CLUSTERING_METHODS, *METHOD_KEYS, *deep}
    listed = set(METHOD_COLOURS) | set(METHOD_VARIANTS)
    assert labels <= listed, sorted(labels - listed)
    assert set(METHOD_COLOURS) == set(METHOD_SYMBOLS)


def test_known_styles_are_fixed_and_all_differ():
    known = [*METHOD_COLOURS, *METHOD_VARIANTS]
    styles = method_styles(known)
    assert len(set(METHOD_COLOURS.values())) == len(METHOD_COLOURS)
    assert len({(s.colour, s.dash) for s in styles.values()}) == len(known)
    for label in known:  # alone, or among others: the same style
        assert method_style(label) == styles[label]
        assert method_styles([label, "FedAvg", "someone else's"])[label] == styles[label]
    assert method_style("FedAvg").colour == METHOD_COLOURS["FedAvg"] == "#1f77b4"
    assert method_style("FedAvg").dash == "solid"


def test_variants_are_related_to_their_method_and_distinguishable():
    for label, (base, k) in METHOD_VARIANTS.items():
        st, parent = method_style(label), method_style(base)
        assert base_method(label) == base
        assert st.symbol == parent.symbol and st.dash == DASHES[1 + (k - 1) % 5] != "solid"
        assert 10 < colour_distance(st.colour, parent.colour) < 80
    # an unlisted variant: a shade of its method, not any listed variant's style
    new = method_style("FedTopo@layer3")
    assert base_method("FedTopo@layer3") == "FedTopo" and new.symbol == METHOD_SYMBOLS["FedTopo"]
    listed = {(method_style(v).colour, method_style(v).dash) for v in METHOD_VARIANTS}
    assert (new.colour, new.dash) not in listed
    # a longer method name is not a variant of a shorter one
    assert base_method("FedAvgM") == "FedAvgM" and base_method("FedAvgMX") is None
    assert base_method("pTopoFL-XY") == "pTopoFL" and base_method("Krumm") is None


@pytest.mark.parametrize("group", [ROBUSTNESS, FEDTOPO_TABLE1, LABEL_AWARE, FEDTOPO_L])
def test_methods_drawn_together_look_different(group):
    """Same dash: at least 25 apart (CIE76); a variant beside its method: at least 15."""
    styles = method_styles(group)
    for a, b in itertools.combinations(group, 2):
        d = colour_distance(styles[a].colour, styles[b].colour)
        assert d >= (25 if styles[a].dash == styles[b].dash else 15), (a, b, d)


def test_unknown_labels_are_hashed_and_never_take_a_colour_of_the_figure():
    labels = ["paper", "ours", "M=1", "beta=0"]
    first = method_styles(labels)
    assert method_styles(labels[::-1]) == first  # not the order of the labels
    assert {s.colour for s in first.values()} <= set(UNKNOWN_SERIES)
    assert not set(UNKNOWN_SERIES) & set(METHOD_COLOURS.values())
    mixed = method_styles([*labels, *FEDTOPO_L])
    known = {mixed[m].colour for m in FEDTOPO_L}
    assert all(mixed[u].colour not in known for u in labels)
    assert len({(s.colour, s.dash) for s in mixed.values()}) == len(mixed)
    # unknown labels avoid colours that look like the figure's when they can
    for u in labels:
        assert min(colour_distance(mixed[u].colour, c) for c in known) >= 20
    # twelve unknown labels: ten colours, then dashed
    many = method_styles([f"label {i}" for i in range(12)])
    assert len({(s.colour, s.dash) for s in many.values()}) == 12


def test_unknown_label_styles_do_not_depend_on_the_process():
    """A CRC of the label, not Python's salted hash: the same in another interpreter."""
    code = ("from topofl_lib.viz.palette import method_styles as m; "
            "print(sorted((k, s.colour, s.dash, s.symbol) for k, s in "
            "m(['paper', 'ours', 'my method', 'FedTopo@layer3', 'x'], ).items()))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    other = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    here = sorted((k, s.colour, s.dash, s.symbol) for k, s in
                  method_styles(["paper", "ours", "my method", "FedTopo@layer3", "x"]).items())
    assert other == str(here)


def test_family_draws_unknown_labels_as_variants():
    styles = method_styles(["full", "M=1", "FedAvg"], family="pTopoFL")
    assert styles["FedAvg"] == method_style("FedAvg")
    for label in ("full", "M=1"):
        assert styles[label].symbol == METHOD_SYMBOLS["pTopoFL"]
        assert styles[label].dash != "solid" or styles[label].colour != METHOD_COLOURS["pTopoFL"]
        assert colour_distance(styles[label].colour, METHOD_COLOURS["pTopoFL"]) < 80
    assert styles["full"] != styles["M=1"]
    with pytest.raises(ValueError, match="family must be one of"):
        method_styles(["a"], family="NoSuchMethod")


def test_colour_helpers_known_values():
    assert rgba("#1f77b4", 0.15) == "rgba(31,119,180,0.15)"
    assert colour_distance("#000000", "#ffffff") == pytest.approx(100.0, abs=0.01)
    assert colour_distance("#1f77b4", "#1f77b4") == 0.0
    with pytest.raises(ValueError, match="#rrggbb"):
        rgba("blue", 1.0)


# ---------------------------------------------------------------- layout


def test_grid_shape_known_values_and_errors():
    assert grid_shape(8) == (2, 4) and grid_shape(5) == (2, 3) and grid_shape(1) == (1, 1)
    assert grid_shape(4) == (1, 4) and grid_shape(9, 3) == (3, 3) and grid_shape(7, 2) == (4, 2)
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        grid_shape(0)
    with pytest.raises(TypeError, match="max_cols must be an int"):
        grid_shape(3, 2.0)
    assert page_width(8, 300) == MAX_WIDTH and page_width(2, 300) == 760


def test_dodge_centres_the_series_on_the_true_x():
    x = np.array([0.0, 0.1, 0.2])
    shifted = [dodge(x, i, 3) for i in range(3)]
    np.testing.assert_allclose(np.mean(shifted, axis=0), x)
    # three series over 0.35 of the 0.1 gap: 2 steps of 0.35 * 0.1 / 3 from first to last
    np.testing.assert_allclose(np.ptp(np.vstack(shifted), axis=0), 2 * 0.35 * 0.1 / 3)
    logx = np.array([0.1, 1.0, 10.0])
    np.testing.assert_allclose(dodge(logx, 0, 2, log=True) * dodge(logx, 1, 2, log=True),
                               logx ** 2)
    np.testing.assert_array_equal(dodge(x, 0, 1), x)
    np.testing.assert_array_equal(dodge([3.0, 3.0], 1, 4), [3.0, 3.0])


# ---------------------------------------------------------------- the figures


def test_a_method_has_the_same_colour_in_every_figure(figures):
    curves = viz.metric_curves(_curves(LABEL_AWARE), "accuracy")
    sweep = viz.metric_vs_parameter(_final(LABEL_AWARE), "rate")
    for name in LABEL_AWARE:
        a, b = _line_of(curves, name), _line_of(sweep, name)
        assert a.line.color == b.line.color == method_style(name).colour
        assert a.line.dash == b.line.dash == method_style(name).dash
    # the ROC figure draws the model-anchored descriptor in pTopoFL-MA's style
    roc = _line_of(figures["roc_figure"], "model_anchored (pTopoFL-MA)")
    assert roc.line.color == _line_of(curves, "pTopoFL-MA").line.color
    # bars and forest-plot marks take the same colours
    panel = figures["final_metric_panels"].data[0]
    assert list(panel.marker.color) == [method_style(m).colour for m in panel.x]
    forest = figures["paired_difference_plot"].data[0]
    assert forest.marker.color[0] == method_style("FedAvg").colour
    assert forest.marker.color[1] == method_style("SCAFFOLD (v1.0.0 rule)").colour


def test_no_two_legend_entries_share_colour_and_dash(figures):
    """Each legend entry has one style (in every panel it is drawn in), and its own."""
    for name, fig in figures.items():
        legend = {t.name: t for t in _legend_traces(fig) if t.type == "scatter"}
        for t in fig.data:  # the same series in another panel: the same style
            first = legend.get(t.name)
            if first is not None and t.type == "scatter" and t.mode == first.mode:
                assert _style(t) == _style(first), (name, t.name)
        styles = [_style(t) for t in legend.values()]
        assert len(set(styles)) == len(styles), (name, styles)


def test_legends_have_no_repeated_names(figures):
    for name, fig in figures.items():
        names = [t.name for t in _legend_traces(fig)]
        assert len(names) == len(set(names)), (name, names)
    roc = [t.name for t in _legend_traces(figures["roc_figure"])]
    assert roc == ["paper (pTopoFL)", "class_conditional (pTopoFL-CC)",
                   "model_anchored (pTopoFL-MA)"]
    bars = [t.name for t in _legend_traces(figures["final_metric_panels"])]
    assert bars == ["healthcare", "benchmark", "paper (Table 1)"]
    assert [t.name for t in _legend_traces(figures["tgbs_table2_plot"])] == [
        "ours (mean ± sd)", "paper"]


def test_a_single_scenario_gets_no_legend_swatch():
    fig = viz.final_metric_panels(_final(["pTopoFL", "FedAvg"]), paper_auc={"FedAvg": 0.8})
    assert [t.name for t in _legend_traces(fig)] == ["paper (Table 1)"]


def test_seed_marks_share_their_line_colour():
    fig = viz.metric_curves(_curves(FEDTOPO_L, n_seeds=3, n_rounds=5), "accuracy")
    for method in FEDTOPO_L:
        line = _line_of(fig, method)
        (dots,) = [t for t in fig.data if t.name == method and t.mode == "markers"]
        assert dots.marker.color == line.line.color == method_style(method).colour
        assert dots.showlegend is False and dots.legendgroup == line.legendgroup
        assert len(dots.y) == 3 * 5
    # bands are filled areas, not points (plotly marks short traces' vertices by default)
    bands = [t for t in fig.data if t.fill == "toself"]
    assert len(bands) == len(FEDTOPO_L) and all(t.mode == "lines" for t in bands)
    # every band is drawn before every line
    order = [t.fill == "toself" for t in fig.data]
    assert order == sorted(order, reverse=True)
    many = viz.metric_curves(_curves(["FedAvg", "pTopoFL"], n_seeds=8), "accuracy")
    assert not [t for t in many.data if t.mode == "markers"]
    forced = viz.metric_curves(_curves(["FedAvg"], n_seeds=8), "accuracy", show_seeds=True)
    assert len([t for t in forced.data if t.mode == "markers"]) == 1


def test_small_multiples_put_the_reference_beside_each_method_once():
    methods = FEDTOPO_TABLE1 + FEDTOPO_L[4:]
    fig = viz.metric_curves_against(_curves(methods, n_seeds=3), "accuracy")
    others = [m for m in methods if m != "FedTopo"]
    assert [a.text for a in fig.layout.annotations] == others
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    for k, method in enumerate(others):  # each panel: the reference's line, then the method's
        ref, own = lines[2 * k], lines[2 * k + 1]
        assert (ref.name, own.name) == ("FedTopo", method)
        assert ref.xaxis == own.xaxis and ref.line.color == method_style("FedTopo").colour
        assert own.line.color == method_style(method).colour
    assert sorted(t.name for t in _legend_traces(fig)) == sorted(methods)
    # within a panel every band is drawn before every line
    for axis in {t.xaxis for t in fig.data}:
        order = [t.fill == "toself" for t in fig.data if t.xaxis == axis]
        assert order == sorted(order, reverse=True)
    with pytest.raises(ValueError, match="reference must be one of .* got 'pTopoFL'"):
        viz.metric_curves_against(_curves(methods), reference="pTopoFL")
    with pytest.raises(ValueError, match="only the reference 'FedTopo'"):
        viz.metric_curves_against(_curves(["FedTopo"]))


def test_bar_seed_marks_share_their_bar_colour(figures):
    fig = figures["variant_bars"]
    bars = fig.data[0]
    for box in (t for t in fig.data if t.type == "box"):
        i = list(bars.x).index(box.name)
        assert box.marker.color == bars.marker.line.color[i] == method_style(
            box.name, family="pTopoFL").colour
        assert box.boxpoints == "all" and len(box.y) == 4 * 3  # one dot per run


@pytest.mark.parametrize(("n", "max_cols", "shape"), [(8, 4, (2, 4)), (8, 3, (3, 3)),
                                                      (1, 4, (1, 1)), (5, 4, (2, 3))])
def test_roc_figure_fills_a_grid_of_at_most_max_cols(n, max_cols, shape):
    curves, aucs = _roc(n)
    fig = viz.roc_figure(curves, aucs, max_cols=max_cols)
    layout = fig.layout.to_plotly_json()
    xs = {v["domain"][0] for k, v in layout.items() if k.startswith("xaxis")}
    ys = {v["domain"][0] for k, v in layout.items() if k.startswith("yaxis")}
    assert (len(ys), len(xs)) == shape
    assert fig.layout.width <= MAX_WIDTH
    # each panel lists its three AUCs, in the lines' colours
    notes = [a for a in fig.layout.annotations if "AUC" in a.text]
    assert len(notes) == n and all(a.text.count("AUC") == 3 for a in notes)
    assert method_style("pTopoFL-MA").colour in notes[0].text


def test_roc_figure_bad_input():
    curves, _ = _roc(1)
    with pytest.raises(ValueError, match="roc_table"):
        viz.roc_figure(curves.drop(columns="tpr"))
    with pytest.raises(ValueError, match="max_cols must be >= 1"):
        viz.roc_figure(curves, max_cols=0)


def test_figures_fit_a_page(figures):
    for name, fig in figures.items():
        assert fig.layout.width <= MAX_WIDTH, (name, fig.layout.width)
        assert fig.layout.height <= 1000, (name, fig.layout.height)
    many = {f"p{i}": None for i in range(7)}
    assert viz.metric_vs_epsilon_facets(pd.DataFrame(
        [(d, "GFC", 1.0, 0.5) for d in many], columns=["dataset", "method", "epsilon", "ari"]
    )).layout.width <= MAX_WIDTH


def test_clients_keep_their_colour_in_both_panels(figures):
    fig = figures["figure5"]
    for k in range(6):
        traces = [t for t in fig.data if t.name.startswith(f"client {k}")]
        assert len(traces) == 2 and traces[0].line.color == traces[1].line.color
    colours = {t.line.color for t in fig.data}
    assert len(colours) == 6
    drift = figures["drift_statistic_plot"]
    assert [t.line.color for t in drift.data] == [
        next(t.line.color for t in fig.data if t.name == d.name) for d in drift.data]
