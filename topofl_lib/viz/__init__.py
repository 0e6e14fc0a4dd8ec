"""Plotly figures."""

from .clustering import energy_contours, metric_vs_epsilon_facets
from .deep import (
    alpha_trajectory_plot,
    barcode_grid,
    feature_projection_plot,
    label_distribution_heatmaps,
    tgbs_table2_plot,
)
from .figures import (
    METHOD_COLOURS,
    final_metric_panels,
    metric_curves,
    paired_difference_plot,
    save_figure,
)
from .privacy import attack_success_plot, dp_utility_plot, figure6, leakage_summary_plot
from .sweeps import (
    adversarial_weight_plot,
    drift_statistic_plot,
    figure5,
    metric_vs_parameter,
    stability_plot,
    variant_bars,
)

__all__ = [
    "METHOD_COLOURS",
    "adversarial_weight_plot",
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
    "dp_utility_plot",
    "figure6",
    "leakage_summary_plot",
    "final_metric_panels",
    "metric_curves",
    "paired_difference_plot",
    "save_figure",
]
