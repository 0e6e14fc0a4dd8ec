"""FedTopo: topology-guided block screening, topological embeddings and the
topological alignment loss with adaptive weighting (torch)."""

from .algorithm import FedTopo
from .analysis import projection_spread, snapshot_barcodes, snapshot_projection, tal_step_time
from .embedding import TopologicalEmbedding, persistence_image
from .schedules import SCHEDULES, AlphaSchedule, calibrate_loss_range, imbalance_floor
from .screening import TGBS_METRICS, TopologyGuidedBlockScreening, sample_pairs

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
