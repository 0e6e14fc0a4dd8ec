"""The colours of every figure, in one place (plotly's D3 category10, by name).

Figures choose a colour by role (a method, a clustering method, a privacy channel, an
attack, a homology degree) or take the series palettes in order, so the same thing
has the same colour in every notebook.
"""

from __future__ import annotations

__all__ = [
    "ATTACK_COLOURS",
    "BLACK",
    "BLUE",
    "BROWN",
    "CHANNEL_COLOURS",
    "CLUSTERING_COLOURS",
    "CLUSTER_SERIES",
    "CYAN",
    "DESCRIPTOR_COLOURS",
    "GREEN",
    "GREY",
    "HOMOLOGY_COLOURS",
    "LABEL_SERIES",
    "LIGHT_GREY",
    "METHOD_COLOURS",
    "OLIVE",
    "ORANGE",
    "PINK",
    "PURPLE",
    "RED",
    "SCENARIO_SERIES",
]

BLUE, ORANGE, GREEN, RED, PURPLE = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"
BROWN, PINK, GREY, OLIVE, CYAN = "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"
BLACK, LIGHT_GREY = "#000000", "#bbbbbb"

#: Federated methods (a method not listed is drawn in :data:`GREY`).
METHOD_COLOURS = {"pTopoFL": GREEN, "FedAvg": BLUE, "FedProx": ORANGE, "SCAFFOLD": RED,
                  "pFedMe": PURPLE,
                  # reference labels of topofl_lib.experiments.TABLE1_VARIANTS
                  "Local-only": BROWN, "SCAFFOLD (v1.0.0 rule)": PINK}
#: Federated clustering methods (GFC notebook).
CLUSTERING_COLOURS = {"GFC": GREEN, "k-FED": BLUE, "MUFC": ORANGE, "NN-FC": PURPLE}
#: What a client sends, as an attack surface (privacy notebook).
CHANNEL_COLOURS = {"gradient": BLUE, "descriptor": GREEN}
#: Privacy attacks.
ATTACK_COLOURS = {"closed_form": RED, "optimisation": BLUE, "population_guess": GREY,
                  "descriptor_inversion": GREEN}
#: pTopoFL's descriptor options (detection report): the paper's and the label-aware ones.
DESCRIPTOR_COLOURS = {"paper": BLUE, "class_conditional": ORANGE, "model_anchored": GREEN}
#: Persistence diagrams and barcodes: H0 and H1.
HOMOLOGY_COLOURS = {0: BLUE, 1: RED}
#: Scenarios in turn (DP utility).
SCENARIO_SERIES = (BLUE, RED, GREEN, PURPLE)
#: Class labels in turn (label-distribution heatmaps: class 0 black, then D3).
LABEL_SERIES = (BLACK, BLUE, ORANGE, GREEN, RED, PURPLE, BROWN, PINK, GREY, OLIVE, CYAN)
#: Client clusters in turn (explorer).
CLUSTER_SERIES = (BLUE, ORANGE, GREEN, PURPLE, BROWN, PINK, GREY, OLIVE, CYAN, RED)
