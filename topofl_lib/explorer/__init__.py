"""The interactive persistence explorer (ipywidgets + plotly FigureWidget).

Attributes load on first use.
"""

from .._lazy import attach

__all__ = ["EXPLORER_SCENARIOS", "ExplorerData", "PersistenceExplorer", "gfc_field",
           "load_explorer_data"]

__getattr__, __dir__ = attach(__name__, {
    ".app": ["PersistenceExplorer"],
    ".model": ["EXPLORER_SCENARIOS", "ExplorerData", "gfc_field", "load_explorer_data"],
})
