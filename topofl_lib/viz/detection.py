"""Plotly figure of the detection report (:mod:`topofl_lib.detection`)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..federated.client_descriptors import PTOPOFL_LABELS
from .layout import MAX_COLS, grid_shape, page_width, panel_position
from .palette import GREY, method_styles

__all__ = ["roc_figure"]


def _descriptor_names(descs: list) -> dict:
    """Descriptor -> its legend name: the pTopoFL label that uses it, where there is one."""
    return {d: f"{d} ({PTOPOFL_LABELS[d]})" if d in PTOPOFL_LABELS else str(d) for d in descs}


def roc_figure(curves: pd.DataFrame, aucs: pd.DataFrame | None = None,
               title: str = "", max_cols: int = MAX_COLS) -> go.Figure:
    """ROC curves of the flagging rule, one panel per scenario, one line per descriptor.

    Panels fill a grid of at most ``max_cols`` columns. A descriptor is drawn in the
    style of the pTopoFL variant that uses it (``paper``: pTopoFL, ``class_conditional``:
    pTopoFL-CC, ``model_anchored``: pTopoFL-MA; :mod:`topofl_lib.viz.palette`), the same
    in every panel, with one legend entry; each panel lists its AUCs in the descriptors'
    colours.

    Parameters
    ----------
    curves : pandas.DataFrame
        Columns scenario, descriptor, fpr, tpr (:func:`topofl_lib.detection.roc_table`).
    aucs : pandas.DataFrame, optional
        Columns scenario, descriptor, auc: each panel shows its lines' AUCs.
    title : str
        Figure title (default: the rule's name).
    max_cols : int, default=4
        Columns of the grid at most.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    need = {"scenario", "descriptor", "fpr", "tpr"}
    if not isinstance(curves, pd.DataFrame) or not need <= set(curves.columns):
        raise ValueError(f"curves needs columns {sorted(need)}; use roc_table")
    scenarios = list(dict.fromkeys(curves["scenario"]))
    rows, cols = grid_shape(len(scenarios), max_cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[str(s) for s in scenarios],
                        shared_yaxes=True,
                        horizontal_spacing=0.04, vertical_spacing=0.12 if rows > 1 else 0.1)
    descs = list(dict.fromkeys(curves["descriptor"]))
    names = _descriptor_names(descs)
    styles = method_styles([PTOPOFL_LABELS.get(d, d) for d in descs])
    style = {d: styles[PTOPOFL_LABELS.get(d, d)] for d in descs}
    shown = set()
    for i, scen in enumerate(scenarios):
        row, col = panel_position(i, cols)
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", showlegend=False,
                                 hoverinfo="skip", line={"dash": "dot", "color": GREY,
                                                         "width": 1}), row=row, col=col)
        lines = []
        for desc in descs:
            c = curves[(curves["scenario"] == scen) & (curves["descriptor"] == desc)]
            if c.empty:
                continue
            fig.add_trace(go.Scatter(x=c["fpr"], y=c["tpr"], mode="lines", name=names[desc],
                                     line={**style[desc].line(), "shape": "hv"},
                                     legendgroup=str(desc), showlegend=desc not in shown),
                          row=row, col=col)
            shown.add(desc)
            if aucs is not None:
                a = aucs[(aucs["scenario"] == scen) & (aucs["descriptor"] == desc)]
                if len(a):
                    lines.append(f"<span style='color:{style[desc].colour}'>"
                                 f"{PTOPOFL_LABELS.get(desc, desc)}: AUC "
                                 f"{a['auc'].iloc[0]:.2f}</span>")
        if lines:
            k = i + 1
            fig.add_annotation(text="<br>".join(lines), showarrow=False, align="right",
                               xref=f"x{k if k > 1 else ''} domain",
                               yref=f"y{k if k > 1 else ''} domain",
                               x=0.98, y=0.02, xanchor="right", yanchor="bottom",
                               font={"size": 11}, bgcolor="rgba(255,255,255,0.8)")
    fig.update_xaxes(range=[0, 1], dtick=0.5)
    fig.update_yaxes(range=[0, 1.02], dtick=0.5)
    for i in range(len(scenarios)):
        if i + cols >= len(scenarios):  # no panel below: this one names the x axis
            fig.update_xaxes(title_text="false-positive rate", row=i // cols + 1,
                             col=i % cols + 1)
    for r in range(1, rows + 1):
        fig.update_yaxes(title_text="true-positive rate", row=r, col=1)
    fig.update_layout(title=title or "Flagging rule z > tau: ROC over tau",
                      template="plotly_white", width=max(560, page_width(cols, 280, margin=120)),
                      height=150 + 270 * rows, margin={"b": 110},
                      legend={"orientation": "h", "yref": "container", "y": 0.01,
                              "yanchor": "bottom", "x": 0.0})
    return fig
