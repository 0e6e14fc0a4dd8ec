"""Figures of the deep notebooks (FedTopo and pTopoFL on images)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .layout import grid_shape, page_width, panel_position
from .palette import HOMOLOGY_COLOURS, LABEL_SERIES, PAPER_MARK, method_style, method_styles

__all__ = [
    "alpha_trajectory_plot",
    "barcode_grid",
    "feature_projection_plot",
    "label_distribution_heatmaps",
    "tgbs_table2_plot",
]


def label_distribution_heatmaps(scenarios: dict) -> go.Figure:
    """One heatmap per partition (at most 4 in a row): clients x classes, class fractions."""
    names = list(scenarios)
    rows, cols = grid_shape(len(names))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=names, shared_yaxes=True)
    for i, name in enumerate(names):
        row, col = panel_position(i, cols)
        dist = scenarios[name].meta["label_distribution"]
        fig.add_trace(go.Heatmap(z=dist, x=[str(c) for c in range(dist.shape[1])],
                                 y=[f"client {k}" for k in range(dist.shape[0])],
                                 coloraxis="coloraxis"), row=row, col=col)
        fig.update_xaxes(title_text="class", row=row, col=col)
    fig.update_layout(coloraxis={"colorscale": "Blues", "colorbar": {"title": "fraction"}},
                      title="Label distribution of each client under each partition",
                      template="plotly_white", width=page_width(cols, 260, margin=120),
                      height=60 + 300 * rows)
    return fig


def tgbs_table2_plot(table2: pd.DataFrame, paper: dict | None = None) -> go.Figure:
    """Table 2 as two panels: separability AUC and accuracy per block (mean +- sd).

    Parameters
    ----------
    table2 : pandas.DataFrame
        :func:`~topofl_lib.studies.fedtopo.block_table`'s rows (``block``, ``auc``, ``accuracy``).
    paper : dict, optional
        ``{"auc" or "accuracy": {block: value}}``: the paper's values, drawn as diamonds.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        "topological class separability (AUC, %)", "FedTopo global accuracy (%)"))
    colour = method_style("FedTopo").colour
    drawn = False
    for col, metric in enumerate(("auc", "accuracy"), start=1):
        g = table2.groupby("block")[metric].agg(["mean", "std"]).fillna(0.0)
        fig.add_trace(go.Bar(x=g.index, y=g["mean"],
                             error_y={"array": g["std"], "color": "black"},
                             name="ours (mean ± sd)", marker_color=colour,
                             showlegend=col == 1), row=1, col=col)
        if paper and metric in paper:
            ref = paper[metric]
            fig.add_trace(go.Scatter(x=list(ref), y=list(ref.values()), mode="markers",
                                     marker=PAPER_MARK, name="paper", legendgroup="paper",
                                     showlegend=not drawn), row=1, col=col)
            drawn = True
    fig.update_layout(title="Table 2: TGBS separability vs accuracy per block",
                      template="plotly_white", width=860, height=420)
    return fig


def alpha_trajectory_plot(logs: dict, client: int = 0) -> go.Figure:
    """TAL weight and TAL value per TAL step of one client, one line per schedule.

    Parameters
    ----------
    logs : dict
        Schedule name -> a FedTopo ``tal_log_`` array (columns: round, client, step, alpha, TAL
        value).
    client : int, default=0
        The client whose steps are drawn.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True,
                        subplot_titles=("alpha (TAL weight)", "TAL value"))
    styles = method_styles(logs)
    for name, log in logs.items():
        mine = log[log[:, 1] == client]
        x = np.arange(mine.shape[0])
        line = styles[str(name)].line(width=1.5)
        fig.add_trace(go.Scatter(x=x, y=mine[:, 3], mode="lines", name=str(name), line=line,
                                 legendgroup=str(name)), row=1, col=1)
        fig.add_trace(go.Scatter(x=x, y=mine[:, 4], mode="lines", name=str(name), line=line,
                                 legendgroup=str(name), showlegend=False), row=2, col=1)
    fig.update_xaxes(title_text=f"TAL step of client {client} (all rounds)", row=2, col=1)
    fig.update_layout(title="Adaptive alpha schedules (Appendix B.2)", template="plotly_white",
                      width=860, height=560)
    return fig


def feature_projection_plot(proj: pd.DataFrame) -> go.Figure:
    """Figure 4 with PCA: one panel per recorded round (at most 4 in a row), global in black."""
    rounds = sorted(proj["round"].unique())
    rows, cols = grid_shape(len(rounds))
    fig = make_subplots(rows=rows, cols=cols,
                        subplot_titles=[f"after round {r}" for r in rounds])
    models = list(dict.fromkeys(proj["model"]))
    for i, r in enumerate(rounds):
        row, col = panel_position(i, cols)
        for j, m in enumerate(models):
            g = proj[(proj["round"] == r) & (proj["model"] == m)]
            fig.add_trace(go.Scatter(x=g["pc1"], y=g["pc2"], mode="markers", name=m,
                                     legendgroup=m, showlegend=i == 0,
                                     marker={"size": 5 if m != "global" else 7, "opacity": 0.7,
                                             "color": LABEL_SERIES[j % len(LABEL_SERIES)]}),
                          row=row, col=col)
    fig.update_layout(title="Figure 4 (PCA): probe-image features under the global and "
                            "client models", template="plotly_white",
                      width=page_width(cols, 330, margin=140), height=60 + 340 * rows)
    return fig


def barcode_grid(bars: pd.DataFrame) -> go.Figure:
    """Figure D.1: barcodes (H0 blue, H1 red), one row per model, one column per round."""
    rounds = sorted(bars["round"].unique())
    models = list(dict.fromkeys(bars["model"]))
    fig = make_subplots(rows=len(models), cols=len(rounds), shared_xaxes=True,
                        column_titles=[f"after round {r}" for r in rounds],
                        row_titles=models, vertical_spacing=0.02)
    for i, m in enumerate(models, start=1):
        for j, r in enumerate(rounds, start=1):
            g = bars[(bars["model"] == m) & (bars["round"] == r)].sort_values(["dim", "birth"])
            for d, colour in HOMOLOGY_COLOURS.items():
                h = g[g["dim"] == d]
                y = np.arange(len(h)) + (0 if d == 0 else (g["dim"] == 0).sum())
                xs = np.c_[h["birth"], h["death"], np.full(len(h), np.nan)].ravel()
                ys = np.c_[y, y, np.full(len(h), np.nan)].ravel()
                fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"color": colour},
                                         name=f"H{d}", legendgroup=f"H{d}",
                                         showlegend=i == 1 and j == 1), row=i, col=j)
            fig.update_yaxes(showticklabels=False, row=i, col=j)
    fig.update_layout(title="Figure D.1: barcodes of one probe image's block activation",
                      template="plotly_white", width=page_width(len(rounds), 380),
                      height=110 * len(models) + 140)
    return fig
