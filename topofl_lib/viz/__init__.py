"""Plotly figures (the ``viz`` extra: ``pip install 'topofl[viz]'``); one style per method,
the same in every figure, from :mod:`topofl_lib.viz.palette` (:func:`method_styles`);
panel grids in :mod:`topofl_lib.viz.layout`. Attributes load on first use."""

from .._lazy import attach
from ..core.optional import require

require("plotly", "topofl_lib.viz")

__all__ = [
    "METHOD_COLOURS",
    "method_style",
    "method_styles",
    "adversarial_weight_plot",
    "co_clustering_heatmap",
    "alpha_trajectory_plot",
    "barcode_grid",
    "feature_projection_plot",
    "label_distribution_heatmaps",
    "tgbs_table2_plot",
    "attack_success_plot",
    "drift_statistic_plot",
    "energy_contours",
    "metric_vs_epsilon_facets",
    "figure5",
    "metric_vs_parameter",
    "stability_plot",
    "variant_bars",
    "dp_audit_plot",
    "dp_detection_plot",
    "dp_tradeoff_plot",
    "dp_utility_plot",
    "figure6",
    "leakage_summary_plot",
    "roc_figure",
    "final_metric_panels",
    "metric_curves",
    "metric_curves_against",
    "paired_difference_plot",
    "save_figure",
]

__getattr__, __dir__ = attach(__name__, {
    ".clustering": ["energy_contours", "metric_vs_epsilon_facets"],
    ".detection": ["roc_figure"],
    ".deep": ["alpha_trajectory_plot", "barcode_grid", "feature_projection_plot",
              "label_distribution_heatmaps", "tgbs_table2_plot"],
    ".figures": ["co_clustering_heatmap", "final_metric_panels", "metric_curves",
                 "metric_curves_against", "paired_difference_plot", "save_figure"],
    ".palette": ["METHOD_COLOURS", "method_style", "method_styles"],
    ".privacy": ["attack_success_plot", "dp_audit_plot", "dp_detection_plot",
                 "dp_tradeoff_plot", "dp_utility_plot", "figure6", "leakage_summary_plot"],
    ".sweeps": ["adversarial_weight_plot", "drift_statistic_plot", "figure5",
                "metric_vs_parameter", "stability_plot", "variant_bars"],
})
