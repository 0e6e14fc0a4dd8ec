"""Every public function, class and method of topofl_lib with two or more parameters has a
numpydoc ``Parameters`` section naming each of them, and a ``Returns`` (or ``Yields``)
section when it returns something.

What is checked (numpydoc's own parser, ``numpydoc.docscrape``, reads the sections):

- the public objects are the names in each module's ``__all__`` (every module of the
  package is walked; a module without ``__all__`` contributes its public names defined
  there; ``__main__`` and private modules such as ``_validation`` are skipped), the
  public methods those classes define themselves (inherited ones are checked where they
  are defined), each object once;
- parameters: those of the signature without ``self``/``cls``; ``*args``/``**kwargs``
  count as parameters and are documented as ``*args``/``**kwargs`` (numpydoc's
  convention); an object with fewer than two is not checked;
- a class's parameters are its ``__init__``'s, documented in the class docstring
  (scikit-learn's convention; an ``__init__`` inherited from outside topofl_lib, such as
  a ``Protocol``'s, has none); a dataclass or ``NamedTuple`` may document its fields in
  an ``Attributes`` section instead (they are both);
- ``Returns``/``Yields`` is required when the return annotation is present and is not
  ``None`` (a method returning ``self`` documents it as ``self``);
- a documented parameter that the signature lacks is an error too (stale docs); a base
  class may document a parameter that some of its subclasses add.

A module whose optional extra is not installed is skipped (its import fails with
``ImportError``); the dev environment has every extra, so there nothing is skipped.

``docstring_backlog.txt`` (next to this file) lists the objects not yet documented when
the check was introduced. It may only shrink: an object outside it that fails fails the
test, and so does an entry that now passes or no longer exists (delete the line).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import warnings
from pathlib import Path

import pytest

docscrape = pytest.importorskip("numpydoc.docscrape")

import topofl_lib  # noqa: E402

SKIP_MODULES = {"topofl_lib.__main__"}
BACKLOG = Path(__file__).with_name("docstring_backlog.txt")


def _backlog() -> set[str]:
    """Qualified names of the objects still waiting for their sections."""
    lines = BACKLOG.read_text().splitlines() if BACKLOG.exists() else []
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


def _modules():
    """Every importable module of topofl_lib, and the names of those that are not."""
    mods, missing = [topofl_lib], []
    for info in pkgutil.walk_packages(topofl_lib.__path__, "topofl_lib."):
        if info.name in SKIP_MODULES or any(p.startswith("_") for p in info.name.split(".")):
            continue
        try:
            mods.append(importlib.import_module(info.name))
        except ImportError as exc:  # an optional extra that is not installed
            missing.append(f"{info.name}: {exc}")
    return mods, missing


def _public_objects():
    """``{qualified name: object}`` for every public function, class and method."""
    mods, _ = _modules()
    found: dict[str, object] = {}
    for mod in mods:
        names = getattr(mod, "__all__", None)
        if names is None:
            names = [n for n, v in vars(mod).items() if not n.startswith("_")
                     and getattr(v, "__module__", None) == mod.__name__]
        for name in names:
            obj = getattr(mod, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if not getattr(obj, "__module__", "").startswith("topofl_lib"):
                continue
            found.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if isinstance(member, (staticmethod, classmethod)):
                        member = member.__func__
                    if inspect.isfunction(member):
                        found.setdefault(f"{member.__module__}.{member.__qualname__}", member)
    return found


def _parameters(obj) -> list[str]:
    """The documented-name form of ``obj``'s parameters (a class: its ``__init__``'s)."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    if inspect.isclass(obj) and not getattr(target, "__module__", "").startswith("topofl_lib"):
        return []  # object's or typing.Protocol's __init__: nothing to document
    is_method = "." in target.__qualname__.replace("<locals>.", "")
    names = []
    for i, p in enumerate(inspect.signature(target).parameters.values()):
        if i == 0 and is_method and p.name in ("self", "cls"):
            continue
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        names.append(prefix + p.name)
    return names


def _subclasses(cls) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def _returns_something(func) -> bool:
    ann = inspect.signature(func).return_annotation
    return ann is not inspect.Signature.empty and ann not in (None, "None")


def _documented(doc, section: str) -> set[str]:
    """The parameter names of a numpydoc section (``x, y : int`` names two)."""
    return {n.strip() for item in doc[section] for n in item.name.split(",") if n.strip()}


def _problems(name: str, obj) -> list[str]:
    params = _parameters(obj)
    if len(params) < 2:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpydoc warns on unknown sections
        doc = docscrape.NumpyDocString(inspect.getdoc(obj) or "")
    documented = _documented(doc, "Parameters")
    is_record = inspect.isclass(obj) and (dataclasses.is_dataclass(obj)
                                          or hasattr(obj, "_fields"))
    if is_record:
        documented |= _documented(doc, "Attributes")
    out = []
    if missing := [p for p in params if p not in documented]:
        out.append(f"{name}: Parameters section lacks {', '.join(missing)}")
    bare = {p.lstrip("*") for p in params} | set(params)
    if inspect.isclass(obj):  # a base class may document its subclasses' shared parameters
        bare |= {p for sub in _subclasses(obj) for p in _parameters(sub)}
    if stale := sorted(d for d in documented if d not in bare and not is_record):
        out.append(f"{name}: documents parameters it does not have: {', '.join(stale)}")
    if (not inspect.isclass(obj) and _returns_something(obj)
            and not (doc["Returns"] or doc["Yields"])):
        out.append(f"{name}: no Returns/Yields section")
    return out


def test_the_walk_finds_the_public_api():
    """Not vacuous: the walk sees the central entry points, and every extra is here."""
    objects = _public_objects()
    for name in ("topofl_lib.topology.estimator.TopologicalDescriptor",
                 "topofl_lib.federated.ptopofl.PTopoFL",
                 "topofl_lib.data.scenarios.make_healthcare",
                 "topofl_lib.clustering.gfc.GravitationalFederatedClustering"):
        assert name in objects
    assert len(objects) > 150


def test_public_docstrings_have_numpydoc_sections():
    """Each public object with two or more parameters documents them (and what it returns)."""
    objects, backlog = _public_objects(), _backlog()
    problems = {name: _problems(name, obj) for name, obj in sorted(objects.items())}
    offenders = [p for name, ps in problems.items() if name not in backlog for p in ps]
    assert not offenders, f"{len(offenders)} docstring problems:\n" + "\n".join(offenders)
    done = sorted(n for n in backlog if not problems.get(n))
    assert not done, (f"{BACKLOG.name} lists objects that are documented now (or gone); "
                      "delete their lines:\n" + "\n".join(done))


def test_the_check_catches_an_undocumented_function():
    """The check is not vacuous: a function documenting one of two parameters fails."""

    def f(a: int, b: int) -> int:
        """Sum.

        Parameters
        ----------
        a : int
            First.
        """
        return a + b

    problems = _problems("f", f)
    assert any("lacks b" in p for p in problems)
    assert any("Returns" in p for p in problems)
