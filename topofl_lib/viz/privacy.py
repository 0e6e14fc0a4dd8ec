"""Plotly figures of the privacy notebook."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .layout import grid_shape, page_width, panel_position
from .palette import ATTACK_COLOURS, CHANNEL_COLOURS, OLIVE, method_styles

__all__ = ["attack_success_plot", "dp_utility_plot", "figure6", "leakage_summary_plot"]


def figure6(proxies: pd.DataFrame, model_dim: int) -> go.Figure:
    """The paper's Figure 6: (A) proxy risk per client vs n, (B) MI proxy, (C) dimensions.

    ``model_dim`` is the size of the pTopoFL model a client sends besides its
    descriptor (panel C shows both, which the paper omits).

    Parameters
    ----------
    proxies : pandas.DataFrame
        One row per client with ``n``, ``p``, ``rho_grad``, ``rho_topo``, ``mi_grad_bits`` and
        ``mi_topo_bits``.
    model_dim : int
        Number of model parameters a pTopoFL client sends.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = make_subplots(rows=1, cols=3, subplot_titles=(
        "(A) reconstruction-risk proxy ρ per client", "(B) 'MI proxy' log2(1 + dim·α)",
        "(C) floats transmitted per round"))
    for col, label, colour in (("rho_grad", "gradient", CHANNEL_COLOURS["gradient"]),
                               ("rho_topo", "descriptor", CHANNEL_COLOURS["descriptor"])):
        fig.add_trace(go.Scatter(x=proxies["n"], y=proxies[col], mode="markers", name=label,
                                 marker={"color": colour, "size": 5, "opacity": 0.6}),
                      row=1, col=1)
    fig.update_xaxes(title_text="client records n", row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=1)
    fig.add_trace(go.Bar(x=["gradient", "descriptor"],
                         y=[proxies["mi_grad_bits"].iloc[0], proxies["mi_topo_bits"].iloc[0]],
                         marker_color=[CHANNEL_COLOURS["gradient"], CHANNEL_COLOURS["descriptor"]],
                         showlegend=False), row=1, col=2)
    p = int(proxies["p"].iloc[0])
    fig.add_trace(go.Bar(
        x=["FedAvg: gradient", "pTopoFL: descriptor", "pTopoFL: descriptor + model"],
        y=[p, 48, 48 + model_dim],
        marker_color=[CHANNEL_COLOURS["gradient"], CHANNEL_COLOURS["descriptor"], OLIVE],
        showlegend=False), row=1, col=3)
    fig.update_layout(template="plotly_white", width=1150, height=420,
                      title="Figure 6: the paper's privacy proxies (dimension counts, not leakage)")
    return fig


def attack_success_plot(gradinv: pd.DataFrame) -> go.Figure:
    """Gradient inversion: fraction recovered and cosine vs batch size, per attack."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        "records recovered (relative error ≤ tol)", "cosine to the nearest reconstruction"))
    for attack, g in gradinv.groupby("attack", sort=False):
        s = g.groupby("batch_size")[["recovered", "cosine"]].agg(["mean", "std"]).fillna(0)
        for col, metric in enumerate(("recovered", "cosine"), start=1):
            fig.add_trace(go.Scatter(
                x=s.index, y=s[(metric, "mean")], mode="lines+markers", name=attack,
                error_y={"type": "data", "array": s[(metric, "std")]},
                line={"color": ATTACK_COLOURS.get(attack)}, showlegend=col == 1,
                legendgroup=attack), row=1, col=col)
    fig.update_xaxes(type="log", title_text="batch size", dtick=np.log10(2))
    fig.update_layout(template="plotly_white", width=1000, height=420,
                      title="Gradient inversion against logistic-regression clients")
    return fig


def leakage_summary_plot(descinv: pd.DataFrame, mia: pd.DataFrame) -> go.Figure:
    """Descriptor inversion vs population guess, and membership-inference AUC per channel.

    Pass ``mia`` rows of a single client size.

    Parameters
    ----------
    descinv : pandas.DataFrame
        Descriptor-inversion rows with ``attack`` and ``relative_error``.
    mia : pandas.DataFrame
        Membership-inference rows with ``channel`` and ``auc``.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        "descriptor inversion: relative error to nearest record", "membership inference AUC"))
    s = descinv.groupby("attack", sort=False)["relative_error"].agg(["mean", "std"])
    fig.add_trace(go.Bar(x=s.index, y=s["mean"], error_y={"type": "data", "array": s["std"]},
                         marker_color=[ATTACK_COLOURS.get(a) for a in s.index],
                         showlegend=False), row=1, col=1)
    m = mia.groupby("channel", sort=False)["auc"].agg(["mean", "std"])
    fig.add_trace(go.Bar(x=m.index, y=m["mean"], error_y={"type": "data", "array": m["std"]},
                         marker_color=[CHANNEL_COLOURS.get(c) for c in m.index],
                         showlegend=False), row=1, col=2)
    fig.add_hline(y=0.5, line_dash="dash", line_color="grey", row=1, col=2)
    fig.update_layout(template="plotly_white", width=1000, height=420,
                      title="What the descriptor reveals, measured by attacks")
    return fig


def dp_utility_plot(dp: pd.DataFrame) -> go.Figure:
    """Final AUC of pTopoFL with Gaussian-DP descriptors against epsilon, one panel per scenario.

    Methods keep their colours (:mod:`topofl_lib.viz.palette`): pTopoFL with DP
    descriptors is a solid line with error bars, pTopoFL and FedAvg without DP are
    dotted and dashed references.

    Parameters
    ----------
    dp : pandas.DataFrame
        One row per run, with ``scenario``, ``method``, ``epsilon`` (inf: no DP) and
        ``auc``.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    scenarios = list(dict.fromkeys(dp["scenario"]))
    rows, cols = grid_shape(len(scenarios), 2)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[str(s) for s in scenarios],
                        horizontal_spacing=0.08)
    styles = method_styles(["pTopoFL", "FedAvg"])
    for i, scenario in enumerate(scenarios):
        row, col = panel_position(i, cols)
        g = dp[dp["scenario"] == scenario]
        priv = g[(g["method"] == "pTopoFL") & np.isfinite(g["epsilon"])]
        s = priv.groupby("epsilon")["auc"].agg(["mean", "std"]).fillna(0)
        st = styles["pTopoFL"]
        fig.add_trace(go.Scatter(x=s.index, y=s["mean"], mode="lines+markers",
                                 error_y={"type": "data", "array": s["std"]},
                                 line=st.line(), marker=st.marker(), legendgroup="dp",
                                 name="pTopoFL, DP descriptors", showlegend=i == 0),
                      row=row, col=col)
        span = [s.index.min(), s.index.max()]
        for method, dash in (("pTopoFL", "dot"), ("FedAvg", "dash")):
            ref = g[(g["method"] == method) & ~np.isfinite(g["epsilon"])]["auc"].mean()
            fig.add_trace(go.Scatter(x=span, y=[ref, ref], mode="lines", legendgroup=method,
                                     line={**styles[method].line(), "dash": dash},
                                     name=f"{method}, no DP", showlegend=i == 0),
                          row=row, col=col)
    fig.update_xaxes(type="log", title_text="epsilon (per client, one release)")
    fig.update_yaxes(title_text="final AUC", col=1)
    fig.update_layout(template="plotly_white", width=page_width(cols, 430, margin=240),
                      height=60 + 380 * rows,
                      title="Utility of pTopoFL with (epsilon, 1e-5)-DP descriptors")
    return fig
