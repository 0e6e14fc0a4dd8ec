"""Package attributes imported on first use, so that importing one submodule stays cheap.

A package's ``__init__`` maps each public name to the submodule that defines it and
calls :func:`lazy_exports`; ``import topofl_lib.federated.local`` then no longer imports
every estimator (and scikit-learn) with the package. ``from package import name`` and
``package.name`` work as before.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable, Callable]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict
        Public name -> submodule (relative, e.g. ``".fedavg"``) that defines it.

    Returns
    -------
    (__getattr__, __dir__)
    """

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name], package), name)
        setattr(sys.modules[package], name, value)  # later look-ups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
