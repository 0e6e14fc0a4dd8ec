"""Plotly figures of the privacy notebook."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .layout import grid_shape, page_width, panel_position
from .palette import (
    ATTACK_COLOURS,
    BROWN,
    CHANNEL_COLOURS,
    GREY,
    OLIVE,
    ORANGE,
    PURPLE,
    RED,
    method_styles,
)

__all__ = ["attack_success_plot", "dp_audit_plot", "dp_detection_plot", "dp_tradeoff_plot",
           "dp_utility_plot", "figure6", "leakage_summary_plot"]


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


def _tradeoff_panel(fig, final: pd.DataFrame, metric: str, row: int, col: int,
                    first: bool) -> None:
    """One panel of :func:`dp_tradeoff_plot`: each method's private runs against the
    accounted epsilon (mean ± sd over seeds), its non-private level as a dashed line."""
    styles = method_styles(final["base"].unique())
    private = final[np.isfinite(final["target_epsilon"])]
    span = [private["epsilon"].min(), private["epsilon"].max()]
    for base, g in final.groupby("base", sort=False):
        st = styles[base]
        s = (g[np.isfinite(g["target_epsilon"])].groupby("target_epsilon")
             .agg(epsilon=("epsilon", "mean"), mean=(metric, "mean"), sd=(metric, "std"))
             .fillna(0.0))
        fig.add_trace(go.Scatter(x=s["epsilon"], y=s["mean"], mode="lines+markers",
                                 error_y={"type": "data", "array": s["sd"]}, line=st.line(),
                                 marker=st.marker(), name=f"{base}, DP", legendgroup=base,
                                 showlegend=first), row=row, col=col)
        clear = g[~np.isfinite(g["target_epsilon"])][metric].mean()
        fig.add_trace(go.Scatter(x=span, y=[clear, clear], mode="lines",
                                 line={**st.line(), "dash": "dash"}, name=f"{base}, no DP",
                                 legendgroup=f"{base} clear", showlegend=first),
                      row=row, col=col)


def dp_tradeoff_plot(table1: pd.DataFrame, deep: pd.DataFrame | None = None) -> go.Figure:
    """Utility against the total epsilon per client: Table 1's scenarios (AUC) and the
    deep scenario (accuracy), one panel each.

    A method's private runs are a solid line in its colour at the accountant's total
    epsilon (models and descriptors), mean ± sd over seeds; its non-private level is a
    dashed line in the same colour.

    Parameters
    ----------
    table1 : pandas.DataFrame
        :func:`~topofl_lib.studies.dp_tradeoff.dp_table1_comparison`'s ``final`` tables:
        ``scenario``, ``base``, ``target_epsilon``, ``epsilon``, ``auc``.
    deep : pandas.DataFrame, optional
        :func:`~topofl_lib.studies.dp_tradeoff.dp_deep_comparison`'s ``final`` table
        (``accuracy``).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    panels = [(f"{s}: final AUC", table1[table1["scenario"] == s], "auc")
              for s in dict.fromkeys(table1["scenario"])]
    if deep is not None:
        panels.append(("deep, Fashion-MNIST Dir(0.1): final accuracy", deep, "accuracy"))
    rows, cols = grid_shape(len(panels), 3)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[p[0] for p in panels],
                        horizontal_spacing=0.07)
    for i, (_, final, metric) in enumerate(panels):
        row, col = panel_position(i, cols)
        _tradeoff_panel(fig, final, metric, row, col, i == 0)
    fig.update_xaxes(type="log", title_text="total epsilon per client (accounted, δ = 1e-5)")
    fig.update_layout(template="plotly_white", width=page_width(cols, 420, margin=200),
                      height=60 + 380 * rows,
                      title="Utility against the privacy of a whole run (models and "
                            "descriptors)")
    return fig


#: The audit figure's series: attack -> (dash, marker symbol, label).
_AUDIT_SERIES = {"canary": ("solid", "diamond", "worst-case canary"),
                 "membership": ("dot", "circle", "membership inference"),
                 "defect noise/10": ("dashdot", "x", "planted defect (noise/10)"),
                 "defect no clipping": ("longdash", "triangle-up",
                                        "planted defect (no clipping)")}


def dp_audit_plot(audit: pd.DataFrame) -> go.Figure:
    """The audit: each attack's empirical lower bound on epsilon against the accounted
    epsilon of the release it attacked, one line per attack and channel.

    The grey diagonal is the accounted epsilon itself, which no valid bound of a correct
    mechanism exceeds; a bound near it says the accounting is tight for that attack, a
    bound of 0 that the attack certifies nothing. The planted defects (positive
    controls) must lie above it; the dotted line is the most the canary's trials can
    certify.

    Parameters
    ----------
    audit : pandas.DataFrame
        :func:`~topofl_lib.studies.dp_audit.dp_audit`'s audit table: ``attack``,
        ``channel``, ``epsilon_release``, ``epsilon_lb`` (rows in the clear, with an
        infinite ``epsilon_release``, are left out).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    finite = audit[np.isfinite(audit["epsilon_release"])]
    fig = go.Figure()
    span = [finite["epsilon_release"].min(), finite["epsilon_release"].max()]
    fig.add_trace(go.Scatter(x=span, y=span, mode="lines", name="accounted (the ceiling)",
                             line={"color": GREY, "dash": "dash", "width": 1.5}))
    for (attack, channel), g in finite.groupby(["attack", "channel"], sort=False):
        dash, symbol, label = _AUDIT_SERIES[attack]
        g = g.sort_values("epsilon_release")
        colour = CHANNEL_COLOURS.get(channel, OLIVE)
        fig.add_trace(go.Scatter(x=g["epsilon_release"], y=g["epsilon_lb"],
                                 mode="lines+markers", name=f"{label}, {channel} channel",
                                 line={"color": colour, "dash": dash, "width": 2},
                                 marker={"color": colour, "symbol": symbol, "size": 8}))
    if "design_epsilon" in audit:
        ceiling = audit.loc[audit["attack"].eq("canary"), "design_epsilon"].max()
        fig.add_trace(go.Scatter(x=span, y=[ceiling, ceiling], mode="lines",
                                 name="the most the canary's trials can certify",
                                 line={"color": GREY, "dash": "dot", "width": 1}))
    fig.update_xaxes(type="log", title_text="accounted epsilon of the release attacked")
    fig.update_yaxes(title_text="empirical lower bound on epsilon (95%)", rangemode="tozero")
    fig.update_layout(template="plotly_white", width=760, height=460,
                      title="Audit: what the attacks certify against what is accounted")
    return fig


#: The detection figure's series: column -> (panel, colour, label).
_DETECTION_SERIES = {
    "flagged": (1, RED, "adversaries flagged (Eq. 8 trust < 1)"),
    "isolated": (1, PURPLE, "adversaries in a cluster without honest clients"),
    "false_alarms": (1, ORANGE, "honest clients flagged"),
    "adversarial_weight": (2, BROWN, "adversaries' share of the consensus"),
}


def dp_detection_plot(detection: pd.DataFrame) -> go.Figure:
    """pTopoFL's adversary detection against the target epsilon: (A) how many
    adversaries are flagged and isolated, and how many honest clients are flagged;
    (B) the adversaries' weight in the consensus beside their share of the clients.

    Non-private levels are dashed lines in the series' colour.

    Parameters
    ----------
    detection : pandas.DataFrame
        :func:`~topofl_lib.studies.dp_tradeoff.dp_detection`'s rows.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        "(A) detection", "(B) weight of the adversaries"))
    private = detection[np.isfinite(detection["target_epsilon"])]
    clear = detection[~np.isfinite(detection["target_epsilon"])]
    span = [private["target_epsilon"].min(), private["target_epsilon"].max()]
    for column, (col, colour, label) in _DETECTION_SERIES.items():
        s = private.groupby("target_epsilon")[column].agg(["mean", "std"]).fillna(0.0)
        fig.add_trace(go.Scatter(x=s.index, y=s["mean"], mode="lines+markers", name=label,
                                 error_y={"type": "data", "array": s["std"]},
                                 line={"color": colour, "width": 2}, legendgroup=column,
                                 marker={"color": colour, "size": 7}), row=1, col=col)
        level = clear[column].mean()
        fig.add_trace(go.Scatter(x=span, y=[level, level], mode="lines",
                                 name=f"{label}, no DP", legendgroup=column,
                                 line={"color": colour, "dash": "dash", "width": 1.5}),
                      row=1, col=col)
    share = detection["adversarial_share"].mean()
    fig.add_trace(go.Scatter(x=span, y=[share, share], mode="lines",
                             name="adversaries' share of the clients",
                             line={"color": GREY, "dash": "dot", "width": 1.5}), row=1, col=2)
    fig.update_xaxes(type="log", title_text="target epsilon per client (whole run)")
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(title_text="fraction", col=1)
    fig.update_layout(template="plotly_white", width=1100, height=440,
                      title="Private pTopoFL against adversarial hospitals")
    return fig
