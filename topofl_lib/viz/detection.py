"""Plotly figure of the detection report (:mod:`topofl_lib.detection`)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .palette import CLUSTER_SERIES, DESCRIPTOR_COLOURS, GREY

__all__ = ["roc_figure"]


def roc_figure(curves: pd.DataFrame, aucs: pd.DataFrame | None = None,
               title: str = "") -> go.Figure:
    """ROC curves of the flagging rule, one panel per scenario, one line per descriptor.

    Parameters
    ----------
    curves : pandas.DataFrame
        Columns scenario, descriptor, fpr, tpr (:func:`topofl_lib.detection.roc_table`).
    aucs : pandas.DataFrame, optional
        Columns scenario, descriptor, auc: each line's legend shows its AUC.
    title : str
        Figure title (default: the rule's name).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    need = {"scenario", "descriptor", "fpr", "tpr"}
    if not isinstance(curves, pd.DataFrame) or not need <= set(curves.columns):
        raise ValueError(f"curves needs columns {sorted(need)}; use roc_table")
    scenarios = list(dict.fromkeys(curves["scenario"]))
    fig = make_subplots(rows=1, cols=len(scenarios), subplot_titles=scenarios,
                        shared_yaxes=True)
    descs = list(dict.fromkeys(curves["descriptor"]))
    others = iter(c for c in CLUSTER_SERIES if c not in DESCRIPTOR_COLOURS.values())
    colours = {d: DESCRIPTOR_COLOURS.get(d) or next(others, GREY) for d in descs}
    for i, scen in enumerate(scenarios, start=1):
        for desc in descs:
            c = curves[(curves["scenario"] == scen) & (curves["descriptor"] == desc)]
            if c.empty:
                continue
            name = desc
            if aucs is not None:
                a = aucs[(aucs["scenario"] == scen) & (aucs["descriptor"] == desc)]
                if len(a):
                    name = f"{desc} (AUC {a['auc'].iloc[0]:.2f})"
            fig.add_trace(go.Scatter(x=c["fpr"], y=c["tpr"], mode="lines", name=name,
                                     line={"shape": "hv", "color": colours[desc]},
                                     legendgroup=desc, showlegend=True), row=1, col=i)
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", showlegend=False,
                                 line={"dash": "dot", "color": GREY}), row=1, col=i)
        fig.update_xaxes(title_text="false-positive rate", range=[0, 1], row=1, col=i)
    fig.update_yaxes(title_text="true-positive rate", range=[0, 1.02], row=1, col=1)
    fig.update_layout(title=title or "Flagging rule z > tau: ROC over tau",
                      height=380, width=max(420, 330 * len(scenarios)))
    return fig
