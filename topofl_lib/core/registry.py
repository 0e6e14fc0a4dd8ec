"""Registries of scenarios and methods: the sockets that higher layers plug into.

The lower layers look names up here and never import a plug-in by name; whatever
defines a scenario or a method registers it, from above:

* :mod:`topofl_lib.data` registers the tabular scenarios (``"healthcare"`` and
  ``"benchmark"`` with the protocols ``"ours"`` and ``"paper"``, ``"continual"``);
* :mod:`topofl_lib.federated` registers its algorithms (pTopoFL and the baselines);
* :mod:`topofl_lib.deep` registers the ``"image"`` scenario and :mod:`topofl_lib.fedtopo`
  the ``FedTopo`` method, when they are imported.

A name that is not registered yet is looked up among the package entry points of the
groups ``topofl_lib.scenarios`` and ``topofl_lib.methods`` (``pyproject.toml``), and
the module an entry point names is imported (it registers itself; a bare object is
registered under the entry point's name). So ``make_scenario("image")`` works for a user
who never imported :mod:`topofl_lib.deep`, and another installed package plugs in the
same way::

    [project.entry-points."topofl_lib.methods"]
    MyMethod = "my_package.method:MyMethod"

Error messages name every known entry, registered or declared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

__all__ = [
    "METHOD_GROUP",
    "SCENARIO_GROUP",
    "Registry",
    "ScenarioSpec",
    "get_method",
    "get_scenario",
    "method_names",
    "register_method",
    "registered_scenarios",
    "register_scenario",
    "scenario_names",
]

#: Entry-point groups the registries read on a lookup miss.
SCENARIO_GROUP = "topofl_lib.scenarios"
METHOD_GROUP = "topofl_lib.methods"


@dataclass(frozen=True)
class ScenarioSpec:
    """A registered scenario generator.

    Attributes
    ----------
    name : str
        What :func:`topofl_lib.data.make_scenario` is called with.
    factory : callable
        ``factory(random_state=..., **params) -> FederatedScenario``.
    protocols : tuple of str
        The data and evaluation protocols the generator offers (its ``protocol=``
        argument); ``("ours",)`` for a generator without one.
    """

    name: str
    factory: Callable[..., Any]
    protocols: tuple[str, ...] = ("ours",)


class Registry:
    """Names -> objects, completed from package entry points on a miss.

    Parameters
    ----------
    kind : str
        What the entries are (``"scenario"``, ``"method"``), for messages.
    group : str
        The entry-point group searched for a name that is not registered.
    wrap : callable, optional
        Turns an object loaded from an entry point (that did not register itself)
        into the registered entry.
    """

    def __init__(self, kind: str, group: str, wrap: Callable[[str, Any], Any] | None = None):
        self.kind = kind
        self.group = group
        self._wrap = wrap or (lambda name, obj: obj)
        self._entries: dict[str, Any] = {}

    def register(self, name: str, entry: Any, *, replace: bool = False) -> Any:
        """Register ``entry`` under ``name``; a different entry under a taken name is
        refused unless ``replace``. Registering the same entry again is a no-op.

        Parameters
        ----------
        name : str
            Non-empty name.
        entry : object
            What a lookup of ``name`` returns.
        replace : bool, default=False
            Replace a different entry already registered under ``name``.

        Returns
        -------
        object
            ``entry``.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"a {self.kind} name must be a non-empty str, got {name!r}")
        old = self._entries.get(name)
        if old is not None and not _same(old, entry) and not replace:
            raise ValueError(f"{self.kind} {name!r} is already registered ({old!r}); pass "
                             "replace=True to replace it")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests, interactive work); unknown names are ignored."""
        self._entries.pop(name, None)

    def registered(self) -> dict[str, Any]:
        """The entries registered so far (a copy; entry points not loaded are absent)."""
        return dict(self._entries)

    def _entry_points(self) -> list:
        return list(metadata.entry_points(group=self.group))

    def names(self) -> list[str]:
        """Registered names, then names declared by entry points and not loaded yet."""
        declared = [ep.name for ep in self._entry_points() if ep.name not in self._entries]
        return [*self._entries, *dict.fromkeys(declared)]

    def __contains__(self, name: object) -> bool:
        return name in self._entries or any(ep.name == name for ep in self._entry_points())

    def get(self, name: str) -> Any:
        """The entry registered as ``name``, loading its entry point if needed.

        Raises
        ------
        ValueError
            ``name`` is neither registered nor declared; the message lists the known names.
        ImportError
            The plug-in's module cannot be imported (e.g. a missing optional extra; the
            message says which).
        """
        if name in self._entries:
            return self._entries[name]
        for ep in self._entry_points():
            if ep.name == name:
                obj = ep.load()  # importing the module registers its entries
                if name not in self._entries:
                    self.register(name, self._wrap(name, obj))
                return self._entries[name]
        raise ValueError(f"unknown {self.kind} {name!r}; expected one of {self.names()}")


def _origin(entry: Any) -> tuple:
    obj = entry.factory if isinstance(entry, ScenarioSpec) else entry
    extra = entry.protocols if isinstance(entry, ScenarioSpec) else ()
    return getattr(obj, "__module__", None), getattr(obj, "__qualname__", id(obj)), extra


def _same(old: Any, new: Any) -> bool:
    """The same entry, or the same definition again (a reloaded module)."""
    return old is new or old == new or _origin(old) == _origin(new)


SCENARIOS = Registry("scenario", SCENARIO_GROUP,
                     wrap=lambda name, obj: obj if isinstance(obj, ScenarioSpec)
                     else ScenarioSpec(name, obj))
METHODS = Registry("method", METHOD_GROUP)


def register_scenario(name: str, factory: Callable | None = None, *,
                      protocols: tuple[str, ...] = ("ours",), replace: bool = False):
    """Register a scenario generator under ``name`` (usable as a decorator).

    Parameters
    ----------
    name : str
        The name :func:`topofl_lib.data.make_scenario` accepts.
    factory : callable, optional
        ``factory(random_state=..., **params) -> FederatedScenario``; when omitted,
        returns a decorator that registers the function it decorates.
    protocols : tuple of str, default=("ours",)
        Protocols the generator accepts as ``protocol=`` (``"ours"`` first: it is the
        default and is not passed on).
    replace : bool, default=False
        Replace an entry already registered under ``name``.

    Returns
    -------
    callable
        ``factory`` (or the decorator).
    """
    def add(f):
        if not callable(f):
            raise TypeError(f"a scenario factory must be callable, got {type(f).__name__}")
        protos = tuple(protocols)
        if not protos or protos[0] != "ours":
            raise ValueError(f"protocols must start with 'ours' (the default), got {protos}")
        SCENARIOS.register(name, ScenarioSpec(name, f, protos), replace=replace)
        return f

    return add if factory is None else add(factory)


def register_method(cls: type | None = None, *, name: str | None = None,
                    replace: bool = False):
    """Register an algorithm class under ``name`` (default: its ``name`` attribute);
    usable as a class decorator.

    Parameters
    ----------
    cls : type, optional
        A :class:`~topofl_lib.federated.FederatedAlgorithm` subclass; when omitted,
        returns a decorator.
    name : str, optional
        The name :func:`topofl_lib.federated.make_method` accepts.
    replace : bool, default=False
        Replace an entry already registered under the name.

    Returns
    -------
    type
        ``cls`` (or the decorator).
    """
    def add(c):
        if not isinstance(c, type):
            raise TypeError(f"a method must be a class, got {type(c).__name__}")
        METHODS.register(name or c.name, c, replace=replace)
        return c

    return add if cls is None else add(cls)


def get_scenario(name: str) -> ScenarioSpec:
    """The :class:`ScenarioSpec` registered (or declared by an entry point) as ``name``."""
    return SCENARIOS.get(name)


def get_method(name: str) -> type:
    """The algorithm class registered (or declared by an entry point) as ``name``."""
    return METHODS.get(name)


def registered_scenarios() -> dict[str, ScenarioSpec]:
    """The scenarios registered so far, ``{name: ScenarioSpec}`` (plug-ins declared by
    entry points appear once loaded)."""
    return SCENARIOS.registered()


def scenario_names() -> list[str]:
    """Every scenario name known now (registered, then declared by entry points)."""
    return SCENARIOS.names()


def method_names() -> list[str]:
    """Every method name known now (registered, then declared by entry points)."""
    return METHODS.names()
