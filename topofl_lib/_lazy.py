"""Lazy package attributes (PEP 562), so that ``import topofl_lib`` stays cheap.

A package ``__init__`` lists what it exports and where each name lives; the submodule
is imported on the first attribute access, and the value is cached on the package::

    __all__ = ["make_healthcare", ...]
    __getattr__, __dir__ = attach(__name__, {".scenarios": ["make_healthcare", ...]})

``from package import name`` and ``package.name`` work as with eager imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping

__all__ = ["attach"]


def attach(package: str, exports: Mapping[str, Iterable[str]]
           ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` exporting ``{submodule: names}``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping
        Relative submodule (``".scenarios"``) to the public names it defines.

    Returns
    -------
    tuple of callables
        The module-level ``__getattr__`` and ``__dir__``.
    """
    where = {name: sub for sub, names in exports.items() for name in names}

    def __getattr__(name: str) -> object:
        sub = where.get(name)
        if sub is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(sub, package), name)
        setattr(sys.modules[package], name, value)  # the next access skips __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
