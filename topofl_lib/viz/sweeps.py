"""Plotly figures of the robustness, continual-drift and ablation notebooks."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .layout import dodge
from .palette import (
    CLIENT_SERIES,
    CYAN,
    PAPER_MARK,
    PINK,
    method_style,
    method_styles,
    rgba,
)

__all__ = [
    "adversarial_weight_plot",
    "drift_statistic_plot",
    "figure5",
    "metric_vs_parameter",
    "stability_plot",
    "variant_bars",
]


def _client_line(i: int, shifted: bool) -> dict:
    """Client ``i``'s line: its colour in every panel, dashed once it has a new task."""
    return {"color": CLIENT_SERIES[i % len(CLIENT_SERIES)],
            "dash": "dash" if shifted else "solid"}


def metric_vs_parameter(final: pd.DataFrame, x: str, metric: str = "auc",
                        group: str = "method", title: str | None = None,
                        log_x: bool = False, family: str | None = None) -> go.Figure:
    """Mean ± sd of ``metric`` against column ``x``, one line per ``group``.

    Lines take the styles of :func:`~topofl_lib.viz.palette.method_styles`. Where ``x``
    is numeric, each line's points sit slightly apart around the true x (the hover
    shows the true x), so that error bars of close lines do not cover each other.

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
    family : str, optional
        The method the group values are variants of, where they are no method names
        (see :func:`~topofl_lib.viz.palette.method_styles`).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = go.Figure()
    groups = list(final.groupby(group, sort=False))
    styles = method_styles((name for name, _ in groups), family=family)
    numeric = pd.to_numeric(final[x], errors="coerce").notna().all()
    for i, (name, g) in enumerate(groups):
        s = g.groupby(x)[metric].agg(["mean", "std"]).fillna(0.0)
        st = styles[str(name)]
        xs = dodge(s.index.astype(float), i, len(groups), log=log_x) if numeric else s.index
        fig.add_trace(go.Scatter(x=xs, y=s["mean"], mode="lines+markers", name=str(name),
                                 error_y={"type": "data", "array": s["std"],
                                          "color": rgba(st.colour, 0.6), "width": 3},
                                 line=st.line(), marker=st.marker(), customdata=s.index,
                                 hovertemplate=f"{x} = %{{customdata}}: %{{y:.3f}}"
                                               f"<extra>{name}</extra>"))
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
        colour = CYAN if holds else PINK  # one colour per case: measured dot, bound diamond
        fig.add_trace(go.Scatter(x=g["rate"], y=g["adversarial_weight"], mode="markers",
                                 name=f"measured weight, {label}",
                                 marker={"symbol": "circle", "size": 9, "color": colour}))
        fig.add_trace(go.Scatter(x=g["rate"], y=g["bound"], mode="markers",
                                 name=f"Theorem 5 bound, {label}",
                                 marker={"symbol": "diamond-open", "size": 10, "color": colour,
                                         "line": {"width": 2}}))
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
    for i, (k, g) in enumerate(d.groupby("client")):
        line = _client_line(i, bool(g["shifted"].iloc[0]))
        label = f"client {k}" + (" (new task)" if g["shifted"].iloc[0] else "")
        for col, feat in enumerate(("entropy_h0", "entropy_h1"), start=1):
            fig.add_trace(go.Scatter(x=g["round"], y=g[feat], mode="lines", name=label,
                                     line=line, legendgroup=label,
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
    for i, (k, g) in enumerate(d.groupby("client")):
        shifted = bool(g["shifted"].iloc[0])
        line = _client_line(i, shifted)
        fig.add_trace(go.Scatter(x=g["round"], y=g["drift_statistic"], mode="lines+markers",
                                 name=f"client {k}" + (" (new task)" if shifted else ""),
                                 line=line, marker={"color": line["color"]}))
    fig.add_hline(y=threshold, line_color="red", annotation_text="threshold")
    fig.add_vline(x=shift_round + 0.5, line_color="grey", line_dash="dot",
                  annotation_text="new task arrives")
    fig.update_layout(template="plotly_white", width=820, height=440, xaxis_title="round",
                      yaxis_title="drift statistic",
                      title=f"Drift statistic per client (seed {seed})")
    return fig


def variant_bars(final: pd.DataFrame, metric: str = "auc", paper: dict | None = None,
                 title: str | None = None, family: str | None = None) -> go.Figure:
    """Bars of ``metric`` (mean ± sd) per variant label; ``paper`` adds reference markers.

    Each bar has its label's colour (:func:`~topofl_lib.viz.palette.method_styles`) and
    each run (seed) is a dot over it in the same colour.

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
    family : str, optional
        The method the labels that are no method names are variants of (the ablation:
        ``"pTopoFL"``).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    s = final.groupby("method", sort=False)[metric].agg(["mean", "std"]).fillna(0.0)
    labels = [str(m) for m in s.index]
    styles = method_styles(labels, family=family)
    fig = go.Figure(go.Bar(x=labels, y=s["mean"], name="ours (mean ± sd)", showlegend=False,
                           marker={"color": [rgba(styles[m].colour, 0.35) for m in labels],
                                   "line": {"color": [styles[m].colour for m in labels],
                                            "width": 1.5}},
                           error_y={"type": "data", "array": s["std"], "color": "black"}))
    for label, g in final.groupby("method", sort=False):
        st = styles[str(label)]
        fig.add_trace(go.Box(x=[str(label)] * len(g), y=g[metric], name=str(label),
                             boxpoints="all", jitter=0.5, pointpos=0, showlegend=False,
                             fillcolor="rgba(0,0,0,0)", line={"color": "rgba(0,0,0,0)"},
                             marker=st.marker(size=5, opacity=0.8,
                                              line={"color": "white", "width": 0.5}),
                             hoverinfo="y"))
    if paper:
        fig.add_trace(go.Scatter(x=list(paper), y=list(paper.values()), mode="markers",
                                 name="paper", marker=PAPER_MARK))
    fig.update_yaxes(range=[0.5, 1.0] if metric == "auc" else None)
    fig.update_layout(template="plotly_white", width=860, height=440, yaxis_title=metric,
                      title=title or f"{metric} per variant (mean ± sd over seeds)")
    return fig


def stability_plot(stability: pd.DataFrame) -> go.Figure:
    """Theorem 3: fraction of perturbations that change the clusters vs eta / margin."""
    fig = go.Figure()
    colour = method_style("pTopoFL").colour  # pTopoFL's clustering, one line per seed
    for i, (seed, g) in enumerate(stability.groupby("seed")):
        fig.add_trace(go.Scatter(x=g["eta_over_margin"], y=g["changed"], mode="lines+markers",
                                 name=f"one seed ({stability['seed'].nunique()} in all)",
                                 legendgroup="seeds", showlegend=i == 0,
                                 line={"color": rgba(colour, 0.45), "width": 1.5},
                                 marker={"color": colour, "size": 5, "opacity": 0.7},
                                 hovertemplate=f"seed {seed}: %{{y:.2f}}<extra></extra>"))
    fig.add_vline(x=0.5, line_dash="dash", line_color="grey",
                  annotation_text="η = margin / 2 (Theorem 3)")
    fig.update_layout(template="plotly_white", width=820, height=440,
                      xaxis_title="η / separation margin",
                      yaxis_title="fraction of perturbations changing the partition",
                      title="Theorem 3: stability of the topology clustering")
    return fig
