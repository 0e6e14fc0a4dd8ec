"""Plotly figures of the GFC notebook."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..clustering.gfc import gravitational_potential
from .layout import dodge, grid_shape, page_width, panel_position
from .palette import method_styles, rgba

__all__ = ["energy_contours", "metric_vs_epsilon_facets"]


def metric_vs_epsilon_facets(df: pd.DataFrame, metric: str = "ari",
                             title: str | None = None) -> go.Figure:
    """One panel per dataset: mean ± sd of ``metric`` against epsilon (log), per method.

    At most four panels in a row; each method in its style
    (:func:`~topofl_lib.viz.palette.method_styles`), its points set slightly apart from
    the other methods' so that their error bars do not cover each other.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per run, with ``dataset``, ``method``, ``epsilon`` and ``metric`` columns.
    metric : str, default="ari"
        The column to plot.
    title : str, optional
        Figure title; a default names the metric.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    datasets = list(dict.fromkeys(df["dataset"]))
    rows, cols = grid_shape(len(datasets))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=datasets)
    methods = list(dict.fromkeys(df["method"]))
    styles, shown = method_styles(methods), set()
    for i, name in enumerate(datasets):
        row, col = panel_position(i, cols)
        d = df[df["dataset"] == name]
        for j, method in enumerate(methods):
            g, st = d[d["method"] == method], styles[method]
            if g.empty:
                continue
            s = g.groupby("epsilon")[metric].agg(["mean", "std"]).fillna(0.0)
            fig.add_trace(go.Scatter(x=dodge(s.index, j, len(methods), log=True), y=s["mean"],
                                     mode="lines+markers", name=method,
                                     error_y={"type": "data", "array": s["std"],
                                              "color": rgba(st.colour, 0.6), "width": 2},
                                     line=st.line(), marker=st.marker(size=6),
                                     customdata=s.index, legendgroup=method,
                                     hovertemplate="epsilon %{customdata}: %{y:.3f}"
                                                   f"<extra>{method}</extra>",
                                     showlegend=method not in shown), row=row, col=col)
            shown.add(method)
    fig.update_xaxes(type="log", title_text="epsilon")
    fig.update_layout(template="plotly_white", width=page_width(cols, 300, margin=150),
                      height=320 * rows + 80,
                      title=title or f"{metric.upper()} against epsilon (mean ± sd over seeds)")
    return fig


def energy_contours(models: dict, resolution: int = 120) -> go.Figure:
    """Contours of the potential of fitted 2-D GFC models (one panel per label).

    Uploaded centroids are white dots; the chosen centres are red crosses.

    Parameters
    ----------
    models : dict
        Panel label -> fitted :class:`~topofl_lib.clustering.gfc.GravitationalFederatedClustering`
        on 2-D data (else ``ValueError``).
    resolution : int, default=120
        Grid points per axis.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    labels = list(models)
    rows, cols = grid_shape(len(labels))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[str(k) for k in labels])
    for i, key in enumerate(labels):
        row, col = panel_position(i, cols)
        est = models[key]
        S, w = est.centroids_, est.masses_
        if S.shape[1] != 2:
            raise ValueError("energy_contours needs 2-D data")
        lo, hi = S.min(axis=0), S.max(axis=0)
        xs, ys = np.linspace(lo[0], hi[0], resolution), np.linspace(lo[1], hi[1], resolution)
        grid = np.array(np.meshgrid(xs, ys)).reshape(2, -1).T
        E = gravitational_potential(grid, S, w, est.p, est.delta_)
        fig.add_trace(go.Contour(x=xs, y=ys, z=np.log10(E.reshape(resolution, resolution)),
                                 colorscale="Viridis", showscale=i == len(labels) - 1,
                                 colorbar={"title": "log10 E"}), row=row, col=col)
        fig.add_trace(go.Scatter(x=S[:, 0], y=S[:, 1], mode="markers", showlegend=False,
                                 marker={"size": 3, "color": "white"}), row=row, col=col)
        C = est.cluster_centers_
        fig.add_trace(go.Scatter(x=C[:, 0], y=C[:, 1], mode="markers", showlegend=False,
                                 marker={"size": 12, "color": "red", "symbol": "x"}),
                      row=row, col=col)
    fig.update_layout(template="plotly_white", width=page_width(cols, 360, margin=80),
                      height=60 + 320 * rows,
                      title="Gravitational energy landscape (log scale)")
    return fig
