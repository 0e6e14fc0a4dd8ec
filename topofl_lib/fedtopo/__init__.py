"""FedTopo: topology-guided block screening, topological embeddings and the
topological alignment loss with adaptive weighting (torch).

Needs the ``deep`` extra (``pip install 'topofl[deep]'``). Attributes load on first
use, so importing the package imports no torch. Importing
:mod:`topofl_lib.fedtopo.algorithm` registers the ``"FedTopo"`` method, which
:func:`topofl_lib.federated.make_method` also finds through its entry point before that.
"""

from .._lazy import attach
from ..core.optional import require

require("torch", "topofl_lib.fedtopo")

__all__ = [
    "SCHEDULES",
    "TGBS_METRICS",
    "AlphaSchedule",
    "FedTopo",
    "TopologyGuidedBlockScreening",
    "calibrate_loss_range",
    "TopologicalEmbedding",
    "imbalance_floor",
    "persistence_image",
    "projection_spread",
    "sample_pairs",
    "snapshot_barcodes",
    "snapshot_projection",
    "tal_step_time",
]

__getattr__, __dir__ = attach(__name__, {
    ".algorithm": ["FedTopo"],
    ".analysis": ["projection_spread", "snapshot_barcodes", "snapshot_projection",
                  "tal_step_time"],
    ".embedding": ["TopologicalEmbedding", "persistence_image"],
    ".schedules": ["SCHEDULES", "AlphaSchedule", "calibrate_loss_range", "imbalance_floor"],
    ".screening": ["TGBS_METRICS", "TopologyGuidedBlockScreening", "sample_pairs"],
})
