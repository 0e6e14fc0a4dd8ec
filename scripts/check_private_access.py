"""List reads of another module's private names in topofl_lib (exit 1 if any).

A *private read* is

* ``from topofl_lib.x import _name`` (or a relative form) in another module;
* ``obj._name`` (read or written) where ``obj`` is not ``self``/``cls``/``super()`` and
  ``_name`` is not defined in the module doing it (as a function, class, variable or
  ``self._name``): a private attribute of an object that another module made, e.g.
  ``est._scenario`` on an estimator fitted elsewhere.

Dunder names (``__name__``) are public, and so are the names in :data:`ALLOWED`: public
API of other libraries despite the underscore (``os._exit``), or a documented, tested
reach into a pinned dependency. Run: ``python scripts/check_private_access.py``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "topofl_lib"

#: ``(module path inside topofl_lib, expression)`` -> why it is allowed.
ALLOWED = {
    ("flower/forking.py", "os._exit"):
        "the standard library's documented exit of a forked child (finish_child, the one "
        "place every forked process of the Flower deployment ends)",
    ("flower/fast_waits.py", "start_client_internal._pull_and_store_message"):
        "flwr has no setting for the SuperNode's pull waits; the opt-in adapter "
        "fast_waits.py replaces this function only when the installed flwr is the version "
        "it was verified with (VERIFIED_FLWR), and changes nothing otherwise (its module "
        "docstring)",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined(tree: ast.AST) -> set[str]:
    """Private names a module defines: functions, classes, assignments, self.x = ..."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and _is_self(node.value)):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
    return {n for n in out if _private(n)}


def _is_self(node: ast.AST) -> bool:
    if isinstance(node, ast.Name) and node.id in ("self", "cls"):
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "super")


def private_reads(path: Path, root: Path = ROOT) -> list[str]:
    """The private reads and writes in the module at ``path`` (inside package ``root``)."""
    tree = ast.parse(path.read_text(), str(path))
    own = _defined(tree)
    rel = path.relative_to(root.parent)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            inside = node.level > 0 or module.startswith("topofl_lib")
            for alias in node.names:
                if inside and _private(alias.name):
                    found.append(f"{rel}:{node.lineno}: from {'.' * node.level}{module} "
                                 f"import {alias.name}")
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            allowed = (rel.relative_to("topofl_lib").as_posix(), ast.unparse(node)) in ALLOWED
            if not _is_self(node.value) and node.attr not in own and not allowed:
                what = "writes" if isinstance(node.ctx, ast.Store) else "reads"
                found.append(f"{rel}:{node.lineno}: {what} {ast.unparse(node)}")
    return found


def main() -> int:
    found = [f for p in sorted(ROOT.rglob("*.py")) for f in private_reads(p)]
    print("\n".join(found) if found else "no private reads across modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
