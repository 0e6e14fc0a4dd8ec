"""The interactive persistence explorer (ipywidgets + plotly FigureWidget)."""

from .app import PersistenceExplorer
from .model import EXPLORER_SCENARIOS, ExplorerData, gfc_field, load_explorer_data

__all__ = ["EXPLORER_SCENARIOS", "ExplorerData", "PersistenceExplorer", "gfc_field",
           "load_explorer_data"]
