"""The method labels of the deep experiments, as plain data.

:func:`topofl_lib.deep.experiments.deep_variants` turns these labels into runs (its
docstring says what each one runs). They live here, apart from the runs, so that what
only checks a label (the notebooks' parameter models, the studies' tables) imports
neither torch nor the methods.
"""

from __future__ import annotations

__all__ = ["BASELINE_PARAMS", "DECOUPLED_LABELS", "DEEP_LABELS", "DISTILLATION_LABELS",
           "PERSONAL"]

#: FedTopo Table 1's aggregation baselines: label -> their own parameters (FedTopo gives
#: none; see their modules).
BASELINE_PARAMS = {
    "FedAvgM": {"server_momentum": 0.9, "server_lr": 1.0},
    "FedNova": {},
    "FedDyn": {"alpha": 0.01},
    "FedDC": {"alpha": 0.01},
}
#: FedTopo's distillation baselines, run with their own papers' defaults (their classes).
DISTILLATION_LABELS = ("FedDF", "FedSA", "FedGen", "FedFTG")
#: The suffix of a decoupled method's label scored with each client's own model.
PERSONAL = " (personal models)"
#: The methods with a classifier per client (:class:`~topofl_lib.federated.representation.
#: DecoupledFedAvg`), each also as ``label + PERSONAL``.
DECOUPLED_LABELS = ("FedPAC", "FedCCFA")
#: Every label :func:`~topofl_lib.deep.experiments.deep_variants` accepts; ``<schedule>``
#: and ``<block>`` stand for a schedule's and a block's name.
DEEP_LABELS = ("FedAvg", "FedProx", "SCAFFOLD", "pFedMe", "pTopoFL", "pTopoFL-CC",
               "pTopoFL-MA", "Median", "TrimmedMean", "Krum", "MOON", "FedFM",
               *DECOUPLED_LABELS, *(f"{m}{PERSONAL}" for m in DECOUPLED_LABELS), "FedTopo",
               "FedTopo w/o TAL", "FedTopo[<schedule>]", "FedTopo@<block>",
               *BASELINE_PARAMS, *DISTILLATION_LABELS)
