"""Plotly figures of the robustness, continual-drift and ablation notebooks."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .palette import METHOD_COLOURS

__all__ = [
    "adversarial_weight_plot",
    "drift_statistic_plot",
    "figure5",
    "metric_vs_parameter",
    "stability_plot",
    "variant_bars",
]


def metric_vs_parameter(final: pd.DataFrame, x: str, metric: str = "auc",
                        group: str = "method", title: str | None = None,
                        log_x: bool = False) -> go.Figure:
    """Mean ± sd of ``metric`` against column ``x``, one line per ``group``.

    Parameters
    ----------
    final : pandas.DataFrame
        One row per run.
    x : str
        Column on the x axis.
    metric : str, default="auc"
        Column on the y axis.
    group : str, default="method"
        Column whose values get one line each.
    title : str, optional
        Figure title.
    log_x : bool, default=False
        Logarithmic x axis.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = go.Figure()
    for name, g in final.groupby(group, sort=False):
        s = g.groupby(x)[metric].agg(["mean", "std"]).fillna(0.0)
        fig.add_trace(go.Scatter(x=s.index, y=s["mean"], mode="lines+markers", name=str(name),
                                 error_y={"type": "data", "array": s["std"]},
                                 line={"color": METHOD_COLOURS.get(name)}))
    fig.update_xaxes(title_text=x, type="log" if log_x else "linear")
    fig.update_layout(template="plotly_white", width=820, height=460, yaxis_title=metric,
                      title=title or f"{metric} against {x} (mean ± sd over seeds)")
    return fig


def adversarial_weight_plot(t5: pd.DataFrame) -> go.Figure:
    """Theorem 5: measured adversarial consensus weight vs the bound, per rate and seed."""
    fig = go.Figure()
    data = t5[t5["eps"] > 0]
    for holds, g in data.groupby("assumption_holds"):
        label = "Δ > 0 (assumption holds)" if holds else "Δ ≤ 0 (assumption fails)"
        fig.add_trace(go.Scatter(x=g["rate"], y=g["adversarial_weight"], mode="markers",
                                 name=f"measured weight, {label}",
                                 marker={"symbol": "circle" if holds else "x", "size": 9}))
        fig.add_trace(go.Scatter(x=g["rate"], y=g["bound"], mode="markers",
                                 name=f"Theorem 5 bound, {label}",
                                 marker={"symbol": "diamond-open", "size": 9}))
    rates = sorted(data["rate"].unique())
    fig.add_trace(go.Scatter(x=rates, y=rates, mode="lines", name="FedAvg-like share ε",
                             line={"dash": "dash", "color": "grey"}))
    fig.update_layout(template="plotly_white", width=820, height=460,
                      xaxis_title="fraction of adversarial clients ε",
                      yaxis_title="total consensus weight of adversaries",
                      title="Adversarial aggregation weight against Theorem 5's bound")
    return fig


def figure5(per_round: pd.DataFrame, seed: int) -> go.Figure:
    """Figure 5: H0 and H1 persistence entropy per client and round (one seed).

    Parameters
    ----------
    per_round : pandas.DataFrame
        Per-client, per-round rows with ``seed``, ``client``, ``round``, ``shifted``, ``entropy_h0``
        and ``entropy_h1``.
    seed : int
        The seed to draw.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    d = per_round[per_round["seed"] == seed]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("H0 persistence entropy",
                                                        "H1 persistence entropy"))
    for k, g in d.groupby("client"):
        dash = "dash" if g["shifted"].iloc[0] else "solid"
        label = f"client {k}" + (" (new task)" if g["shifted"].iloc[0] else "")
        for col, feat in enumerate(("entropy_h0", "entropy_h1"), start=1):
            fig.add_trace(go.Scatter(x=g["round"], y=g[feat], mode="lines", name=label,
                                     line={"dash": dash}, legendgroup=label,
                                     showlegend=col == 1), row=1, col=col)
    fig.update_xaxes(title_text="round")
    fig.update_layout(template="plotly_white", width=1000, height=420,
                      title=f"Figure 5: topological signatures over rounds (seed {seed})")
    return fig


def drift_statistic_plot(per_round: pd.DataFrame, seed: int, threshold: float,
                         shift_round: int) -> go.Figure:
    """Drift statistic per client and round with the re-clustering threshold.

    Parameters
    ----------
    per_round : pandas.DataFrame
        Per-client, per-round rows with ``seed``, ``client``, ``round``, ``shifted`` and
        ``drift_statistic``.
    seed : int
        The seed to draw.
    threshold : float
        The re-clustering threshold (a horizontal line).
    shift_round : int
        The last round before the new task arrives (a vertical line after it).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    d = per_round[per_round["seed"] == seed]
    fig = go.Figure()
    for k, g in d.groupby("client"):
        shifted = bool(g["shifted"].iloc[0])
        fig.add_trace(go.Scatter(x=g["round"], y=g["drift_statistic"], mode="lines+markers",
                                 name=f"client {k}" + (" (new task)" if shifted else ""),
                                 line={"dash": "dash" if shifted else "solid"}))
    fig.add_hline(y=threshold, line_color="red", annotation_text="threshold")
    fig.add_vline(x=shift_round + 0.5, line_color="grey", line_dash="dot",
                  annotation_text="new task arrives")
    fig.update_layout(template="plotly_white", width=820, height=440, xaxis_title="round",
                      yaxis_title="drift statistic",
                      title=f"Drift statistic per client (seed {seed})")
    return fig


def variant_bars(final: pd.DataFrame, metric: str = "auc", paper: dict | None = None,
                 title: str | None = None) -> go.Figure:
    """Bars of ``metric`` (mean ± sd) per variant label; ``paper`` adds reference markers.

    Parameters
    ----------
    final : pandas.DataFrame
        One row per run, with ``method`` and ``metric`` columns.
    metric : str, default="auc"
        The column to plot.
    paper : dict, optional
        Variant label -> the paper's value.
    title : str, optional
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    s = final.groupby("method", sort=False)[metric].agg(["mean", "std"]).fillna(0.0)
    fig = go.Figure(go.Bar(x=s.index, y=s["mean"], name="ours",
                           error_y={"type": "data", "array": s["std"]}))
    if paper:
        fig.add_trace(go.Scatter(x=list(paper), y=list(paper.values()), mode="markers",
                                 name="paper", marker={"symbol": "diamond", "size": 11,
                                                       "color": "black"}))
    fig.update_yaxes(range=[0.5, 1.0] if metric == "auc" else None)
    fig.update_layout(template="plotly_white", width=860, height=440, yaxis_title=metric,
                      title=title or f"{metric} per variant (mean ± sd over seeds)")
    return fig


def stability_plot(stability: pd.DataFrame) -> go.Figure:
    """Theorem 3: fraction of perturbations that change the clusters vs eta / margin."""
    fig = go.Figure()
    for seed, g in stability.groupby("seed"):
        fig.add_trace(go.Scatter(x=g["eta_over_margin"], y=g["changed"], mode="lines+markers",
                                 name=f"seed {seed}"))
    fig.add_vline(x=0.5, line_dash="dash", line_color="grey",
                  annotation_text="η = margin / 2 (Theorem 3)")
    fig.update_layout(template="plotly_white", width=820, height=440,
                      xaxis_title="η / separation margin",
                      yaxis_title="fraction of perturbations changing the partition",
                      title="Theorem 3: stability of the topology clustering")
    return fig
