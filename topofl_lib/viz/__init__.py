"""Plotly figures."""

from .figures import (
    METHOD_COLOURS,
    final_metric_panels,
    metric_curves,
    paired_difference_plot,
    save_figure,
)

__all__ = [
    "METHOD_COLOURS",
    "final_metric_panels",
    "metric_curves",
    "paired_difference_plot",
    "save_figure",
]
