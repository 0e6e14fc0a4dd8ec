"""Plotly figures of the notebooks, and writing them to ``figures/``."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from ..outputs import ENV_FIGURES, atomic_path, write_text_atomic
from ..prose import counted
from .layout import dodge, grid_shape, page_width, panel_position
from .palette import GREY, METHOD_COLOURS, PAPER_MARK, method_styles, rgba

__all__ = [
    "METHOD_COLOURS",
    "co_clustering_heatmap",
    "metric_curves",
    "metric_curves_against",
    "FIGURE_FORMATS",
    "figure_formats",
    "final_metric_panels",
    "paired_difference_plot",
    "save_figure",
]

_PNG_FAILED = False
#: What :func:`save_figure` may write (:data:`topofl_lib.outputs.ENV_FIGURES` chooses).
#: ``make test`` sets ``"html"``: every PNG export starts a Chromium through kaleido
#: (about 3 core-seconds each here, some 65 in the notebooks' quick runs), and the suite
#: checks the export once on its own (``tests/test_figures.py``); ``reproduce`` sets
#: ``"html+png"`` for every notebook it publishes.
FIGURE_FORMATS = ("html+png", "html")


def figure_formats() -> str:
    """What :func:`save_figure` writes: ``$TOPOFL_FIGURES`` (:data:`ENV_FIGURES`), else
    ``"html+png"``.

    Returns
    -------
    str
        One of :data:`FIGURE_FORMATS`.

    Raises
    ------
    ValueError
        The variable holds another value (the message names it).
    """
    value = os.environ.get(ENV_FIGURES, "html+png")
    if value not in FIGURE_FORMATS:
        raise ValueError(f"{ENV_FIGURES} must be one of {list(FIGURE_FORMATS)}, got {value!r}")
    return value


#: At most this many seeds and metric_curves draws each seed's value as a dot.
SEED_DOTS_UP_TO = 5


def metric_curves(curves: pd.DataFrame, metric: str = "auc", title: str | None = None,
                  show_seeds: bool | None = None) -> go.Figure:
    """Mean over seeds of ``metric`` per round, one line per method, band = +-1 std.

    This is the paper's Figure 2 with its single-run curves replaced by seed statistics.
    Each method has its style of :func:`~topofl_lib.viz.palette.method_styles`; every
    band is drawn before every line, so no band hides a line. Each seed's value can be
    drawn as a small dot in its method's colour (beside the round, so that methods do
    not cover each other).

    Parameters
    ----------
    curves : pandas.DataFrame
        One row per (method, seed, round) with a ``metric`` column.
    metric : str, default="auc"
        The column to plot.
    title : str, optional
        Figure title; a default names the metric and the number of seeds.
    show_seeds : bool, optional
        Draw each seed's value; default: when there are at most
        :data:`SEED_DOTS_UP_TO` seeds.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    methods = list(dict.fromkeys(curves["method"]))
    styles = method_styles(methods)
    n = curves["seed"].nunique()
    dots = n <= SEED_DOTS_UP_TO if show_seeds is None else bool(show_seeds)
    alpha = 0.15 if len(methods) <= 3 else 0.07
    bands, seeds, lines = [], [], []
    for i, method in enumerate(methods):
        band, seed, line = _method_traces(curves[curves["method"] == method], metric, method,
                                          styles[method], dots=dots, alpha=alpha,
                                          slot=(i, len(methods)))
        bands.append(band)
        seeds.extend(seed)
        lines.append(line)
    fig = go.Figure([*bands, *seeds, *lines])
    extra = "; dots: single seeds" if dots else ""
    fig.update_layout(
        title=title or f"{metric.upper()} per round (mean ± 1 sd over {counted(n, 'seed')}{extra})",
        xaxis_title="round", yaxis_title=metric, template="plotly_white", width=760, height=460)
    return fig


def _method_traces(g: pd.DataFrame, metric: str, method: str, style, *, dots: bool,
                   alpha: float, slot: tuple[int, int], legend: bool = True):
    """One method's band (mean +- 1 sd), seed dots (a list, maybe empty) and mean line."""
    s = g.groupby("round")[metric].agg(["mean", "std"]).fillna(0.0)
    x = s.index.to_numpy()
    band = go.Scatter(
        x=np.r_[x, x[::-1]], y=np.r_[s["mean"] + s["std"], (s["mean"] - s["std"])[::-1]],
        mode="lines", fill="toself", fillcolor=rgba(style.colour, alpha), line={"width": 0},
        hoverinfo="skip", showlegend=False, legendgroup=method, name=method)
    seeds = [go.Scatter(
        x=dodge(g["round"], *slot, share=0.45), y=g[metric], mode="markers",
        marker=style.marker(size=5, opacity=0.55), name=method, legendgroup=method,
        showlegend=False, customdata=g["seed"],
        hovertemplate="seed %{customdata}: %{y:.3f}<extra>" + method + "</extra>")] if dots else []
    line = go.Scatter(x=x, y=s["mean"], mode="lines+markers", name=method, line=style.line(),
                      marker=style.marker(), legendgroup=method, showlegend=legend)
    return band, seeds, line


def metric_curves_against(curves: pd.DataFrame, metric: str = "accuracy",
                          reference: str = "FedTopo", title: str | None = None,
                          show_seeds: bool | None = None) -> go.Figure:
    """Small multiples of :func:`metric_curves`: ``reference`` against each other method.

    With many methods one panel of curves does not read; here each panel holds the
    reference method and one other (the panel's title), in their own styles, on shared
    axes laid out by :func:`~topofl_lib.viz.layout.grid_shape` (at most 5 columns). The
    legend names each method once.

    Parameters
    ----------
    curves : pandas.DataFrame
        One row per (method, seed, round) with a ``metric`` column.
    metric : str, default="accuracy"
        The column to plot.
    reference : str, default="FedTopo"
        The method drawn in every panel (one of ``curves["method"]``).
    title : str, optional
        Figure title.
    show_seeds : bool, optional
        Draw each seed's value; default: when there are at most
        :data:`SEED_DOTS_UP_TO` seeds.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    methods = list(dict.fromkeys(curves["method"]))
    if reference not in methods:
        raise ValueError(f"reference must be one of the curves' methods {methods}, "
                         f"got {reference!r}")
    others = [m for m in methods if m != reference]
    if not others:
        raise ValueError(f"curves hold only the reference {reference!r}: nothing to compare")
    styles = method_styles(methods)
    n = curves["seed"].nunique()
    dots = n <= SEED_DOTS_UP_TO if show_seeds is None else bool(show_seeds)
    rows, cols = grid_shape(len(others), max_cols=5)
    fig = make_subplots(rows=rows, cols=cols, shared_xaxes=True, shared_yaxes=True,
                        subplot_titles=others,
                        vertical_spacing=0.35 / rows, horizontal_spacing=0.03)
    ref = curves[curves["method"] == reference]
    for i, method in enumerate(others):
        row, col = panel_position(i, cols)
        pair = [_method_traces(g, metric, name, styles[name], dots=dots, alpha=0.15,
                               slot=(j, 2), legend=(j == 1 or i == 0))
                for j, (name, g) in enumerate(((reference, ref),
                                               (method, curves[curves["method"] == method])))]
        (ref_band, ref_dots, ref_line), (band, dots_, line) = pair
        # both bands, then the dots, then both lines: no band hides a line
        for trace in [ref_band, band, *ref_dots, *dots_, ref_line, line]:
            fig.add_trace(trace, row=row, col=col)
    extra = "; dots: single seeds" if dots else ""
    fig.update_annotations(font_size=13)  # the panels' titles: the method beside the reference
    fig.update_xaxes(dtick=1, showticklabels=True)
    fig.update_xaxes(title_text="round", row=rows)
    fig.update_yaxes(title_text=metric, col=1)
    fig.update_layout(
        title=title or f"{metric} per round, {reference} (in every panel) against each "
                       f"method (mean ± 1 sd over {counted(n, 'seed')}{extra})",
        template="plotly_white", width=page_width(cols, 250),
        height=140 + min(240, 860 // rows) * rows)
    return fig


def final_metric_panels(final: pd.DataFrame, paper_auc: dict | None = None,
                        title: str | None = None) -> go.Figure:
    """Figure 3: final AUC (mean +- sd) and convergence round, by scenario and method.

    Bars take their method's colour; a second scenario is drawn lighter, and the
    legend names the scenarios only when there are several. ``paper_auc`` (method ->
    value) adds the paper's Table 1 AUCs as black diamonds (one legend entry).

    Parameters
    ----------
    final : pandas.DataFrame
        One row per run, with ``scenario``, ``method``, ``auc`` and ``convergence_round``.
    paper_auc : dict, optional
        Method -> the paper's AUC (NaN values are skipped).
    title : str, optional
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        "final AUC (mean ± sd)", "convergence round (first round ≥ 95% of final AUC)"))
    styles = method_styles(final["method"])
    scenarios = list(dict.fromkeys(final["scenario"]))
    for i, scenario in enumerate(scenarios):
        g = final[final["scenario"] == scenario]
        agg = g.groupby("method", sort=False)[["auc", "convergence_round"]].agg(["mean", "std"])
        methods = agg.index.tolist()
        opacity = 1.0 if i == 0 else 0.55
        for col, metric in enumerate(("auc", "convergence_round"), start=1):
            fig.add_trace(go.Bar(
                x=methods, y=agg[(metric, "mean")],
                error_y={"type": "data", "array": agg[(metric, "std")].fillna(0.0)},
                marker={"color": [styles[m].colour for m in methods], "opacity": opacity},
                name=scenario, showlegend=False, offsetgroup=str(i)), row=1, col=col)
        if len(scenarios) > 1:  # a neutral swatch: the bars' colours are the methods'
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=scenario,
                                     marker={"symbol": "square", "size": 12,
                                             "color": rgba(GREY, opacity)}), row=1, col=1)
    if paper_auc:
        shown = {m: v for m, v in paper_auc.items() if pd.notna(v)}
        fig.add_trace(go.Scatter(x=list(shown), y=list(shown.values()), mode="markers",
                                 marker=PAPER_MARK, name="paper (Table 1)"), row=1, col=1)
    fig.update_yaxes(range=[0.5, 1.0], row=1, col=1)
    fig.update_layout(barmode="group", template="plotly_white", width=980, height=440,
                      title=title or "Final AUC and convergence round")
    return fig


def paired_difference_plot(paired: pd.DataFrame, reference: str = "pTopoFL",
                           title: str | None = None) -> go.Figure:
    """Forest plot of ``reference - baseline`` paired differences with 95% CIs.

    Each baseline's mark has its method's colour and symbol.

    Parameters
    ----------
    paired : pandas.DataFrame
        Indexed by baseline, with ``mean_diff``, ``ci_low`` and ``ci_high`` (as from
        :func:`~topofl_lib.statistics.paired_differences`).
    reference : str, default="pTopoFL"
        The method the differences are taken from (used in the default title).
    title : str, optional
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    labels = [str(m) for m in paired.index]
    styles = method_styles(labels)
    fig = go.Figure(go.Scatter(
        x=paired["mean_diff"], y=labels, mode="markers", showlegend=False,
        error_x={"type": "data", "symmetric": False, "color": "black",
                 "array": paired["ci_high"] - paired["mean_diff"],
                 "arrayminus": paired["mean_diff"] - paired["ci_low"]},
        marker={"size": 11, "color": [styles[m].colour for m in labels],
                "symbol": [styles[m].symbol for m in labels]}))
    fig.add_vline(x=0.0, line_dash="dash", line_color="grey")
    fig.update_layout(title=title or f"{reference} minus baseline (mean, 95% CI over seeds)",
                      xaxis_title="difference", template="plotly_white", width=700,
                      height=max(300, 140 + 45 * len(labels)))
    return fig


def co_clustering_heatmap(matrix: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Heatmap of how often two clients share a cluster (fraction of seeds, 0 to 1).

    Parameters
    ----------
    matrix : pandas.DataFrame
        Square, indexed and labelled by client (as from
        :func:`topofl_lib.studies.own_data.co_clustering`).
    title : str, optional
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    labels = [str(c) for c in matrix.columns]
    values = matrix.to_numpy(dtype=np.float64)
    fig = go.Figure(go.Heatmap(z=values, x=labels, y=[str(i) for i in matrix.index],
                               zmin=0.0, zmax=1.0, colorscale="Blues",
                               text=np.round(values, 2), texttemplate="%{text}",
                               colorbar={"title": "share of seeds"}))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(title=title or "How often two sites share a cluster",
                      template="plotly_white", width=520, height=460)
    return fig


def save_figure(fig: go.Figure, name: str, figures_dir) -> list[Path]:
    """Write ``fig`` as ``<name>.html`` and, where a Chromium is available, ``<name>.png``
    (unless ``$TOPOFL_FIGURES`` is ``"html"``: :func:`figure_formats`).

    Each file is written atomically (a temporary file renamed over the target), so an
    interrupted run never leaves a partial figure. The HTML files share one
    ``plotly.min.js`` in ``figures_dir``, written once (also atomically), so they open
    offline. PNG export uses kaleido, which needs Chromium (Debian package
    ``chromium``); without it a warning is issued once and only HTML is written.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        The figure.
    name : str
        File stem.
    figures_dir : str or Path
        Destination folder.

    Returns
    -------
    list of Path
        The files written (the HTML file, then the PNG file when it could be made).
    """
    global _PNG_FAILED
    png_wanted = figure_formats() == "html+png"
    out = Path(figures_dir)
    html = write_text_atomic(out / f"{name}.html",
                             fig.to_html(include_plotlyjs="directory", full_html=True))
    bundle = out / "plotly.min.js"
    if not bundle.exists():
        write_text_atomic(bundle, get_plotlyjs())
    written = [html]
    if png_wanted and not _PNG_FAILED:
        try:
            png = out / f"{name}.png"
            with atomic_path(png) as tmp:
                fig.write_image(tmp, format="png", scale=1.5)
            written.append(png)
        except Exception as exc:  # kaleido raises several types when Chromium is missing
            _PNG_FAILED = True
            warnings.warn(
                f"static PNG export failed ({type(exc).__name__}: {exc}); writing HTML only. "
                "Install Debian's 'chromium' for PNG figures.", stacklevel=2)
    return written
