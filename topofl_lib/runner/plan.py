"""Plan a comparison: the table of its runs, their keys, and which are stored already.

A run is one method configuration on one seed's scenario realisation. Its key
(:func:`run_key`) fingerprints everything that can change its numbers, the device kind
included: a run computed on a GPU never shares a key with a CPU run. (CPU runs keep the
keys they had before the device became part of the key, so stored CPU runs stay valid.)
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._validation import check_bool, check_choice, check_int
from ..core.device import device_kind
from ..core.registry import method_names
from ..core.seeds import check_seeds
from ..data.scenarios import make_scenario
from ..federated.methods import METHODS, make_method
from ..run_cache import DamagedRunError, RunCache, environment, fingerprint

__all__ = ["DIVERGENCE", "Plan", "build_scenario", "check_configurations", "check_runs",
           "make_plan", "run_key"]

#: What a run that diverges does: stop the comparison, or stay in it as a diverged run.
DIVERGENCE = ("raise", "record")


@dataclass
class Plan:
    """A comparison's runs: what to compute, what the run store holds already.

    Attributes
    ----------
    scenario : str or callable
        The scenario generator's name, or a function ``seed -> FederatedScenario``.
    scenario_params : dict
        Keyword arguments of a named generator.
    runs : list of (label, method, params)
        The configurations, one per label.
    seeds : list of int
        The seeds, in order.
    n_rounds : int
        Communication rounds.
    device : str
        The device kind the runs compute on (``"cpu"`` or ``"cuda"``).
    table : pandas.DataFrame
        One row per (seed, run): ``seed``, ``run`` (index into ``runs``), ``label``,
        ``method``, ``key`` (``None`` without a run store), ``stored`` and ``seconds``
        (what the stored run took to compute, its record's ``seconds``; NaN when not
        stored).
    records : dict
        ``(seed, run) -> record`` of the runs read from the store.
    cache : RunCache or None
        The run store.
    last_built : tuple or None
        ``(seed, scenario)`` of the last scenario built while planning.
    """

    scenario: object
    scenario_params: dict
    runs: list
    seeds: list
    n_rounds: int
    device: str
    table: pd.DataFrame
    records: dict = field(default_factory=dict)
    cache: RunCache | None = None
    last_built: tuple | None = None

    @property
    def todo(self) -> list[tuple[int, int, str | None]]:
        """``(seed, run, key)`` of every run still to compute, in plan order."""
        rows = self.table[~self.table["stored"]]
        return list(zip(rows["seed"], rows["run"], rows["key"], strict=True))


def check_runs(methods: Sequence[str] | None, method_params: dict | None,
               variants: dict | None) -> list[tuple[str, str, dict]]:
    """The ``(label, method, params)`` of a comparison, checked.

    Parameters
    ----------
    methods : sequence of str or None
        Registered method names (default: :data:`topofl_lib.federated.METHODS`).
    method_params : dict or None
        ``{method: {param: value}}`` overrides.
    variants : dict or None
        ``{label: (method, params)}``; replaces the two above.

    Returns
    -------
    list of tuple
        One ``(label, method, params)`` per run configuration.
    """
    if variants is not None:
        if not isinstance(variants, dict) or not variants:
            raise ValueError("variants must be a non-empty dict {label: (method, params)}")
        out = []
        for label, spec in variants.items():
            if not (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], dict)):
                raise ValueError(f"variants[{label!r}] must be a (method name, params dict) "
                                 "tuple")
            _check_methods([spec[0]])
            out.append((str(label), spec[0], spec[1]))
        return out
    methods = _check_methods(list(METHODS) if methods is None else list(methods))
    method_params = dict(method_params or {})
    for name in method_params:
        _check_methods([name])
    return [(m, m, method_params.get(m, {})) for m in methods]


def check_configurations(runs: list, n_rounds: int, seed: int) -> None:
    """Check every parameter of every run configuration before any run starts.

    Without it a bad parameter of the last method would stop a comparison only after the
    others had trained (and been stored).

    Parameters
    ----------
    runs : list of (label, method, params)
        From :func:`check_runs`.
    n_rounds : int
        Communication rounds.
    seed : int
        A seed of the comparison (the methods' ``random_state``).

    Raises
    ------
    ValueError, TypeError
        A parameter is unknown to its method, out of range or of the wrong type; the
        message names the run's label.
    """
    for label, method, params in runs:
        try:
            make_method(method, n_rounds=n_rounds, random_state=seed, **params).check_params()
        except (TypeError, ValueError) as exc:
            kind = TypeError if isinstance(exc, TypeError) else ValueError
            raise kind(f"run {label!r} ({method}): {exc}") from exc


def _check_methods(methods: list) -> list[str]:
    if not methods:
        raise ValueError("methods is empty")
    known = method_names()
    for m in methods:
        if m not in known:
            raise ValueError(f"unknown method {m!r}; expected one of {known}")
    return methods


def build_scenario(scenario, scenario_params: dict, seed: int):
    """The seed's realisation of ``scenario`` (a generator name or a callable).

    Parameters
    ----------
    scenario : str or callable
        A name of :func:`topofl_lib.data.make_scenario`, or ``seed -> scenario``.
    scenario_params : dict
        Keyword arguments of a named generator.
    seed : int
        The seed.

    Returns
    -------
    FederatedScenario
        The realisation.
    """
    if callable(scenario):
        return scenario(seed)
    return make_scenario(scenario, random_state=seed, **scenario_params)


def run_key(env: dict, scenario_key: str, method: str, params: dict, n_rounds: int,
            seed: int, device: str = "cpu") -> str:
    """The run store key of one run.

    Parameters
    ----------
    env : dict
        :func:`topofl_lib.run_cache.environment`.
    scenario_key : str
        The fingerprint of the realised scenario.
    method, params, n_rounds, seed
        The run's configuration.
    device : str, default="cpu"
        The device (its kind is keyed: ``"cpu"`` adds nothing, so CPU runs keep the keys
        they had before devices were keyed; ``"cuda"`` is part of the key).

    Returns
    -------
    str
        A 64-digit hex fingerprint.
    """
    kind = device_kind(device)
    extra = () if kind == "cpu" else ({"device": kind},)
    return fingerprint(env, scenario_key, method, params, n_rounds, seed, *extra)


def _stored(cache: RunCache, key: str, on_damaged: str) -> dict | None:
    """The stored run ``key``; ``None`` when absent, or damaged and to be recomputed."""
    if key not in cache:
        return None
    try:
        return cache.load(key)
    except DamagedRunError as exc:
        if on_damaged == "raise":
            raise
        warnings.warn(f"recomputing a damaged run: {exc}", UserWarning, stacklevel=4)
        return None


def _usable(record: dict | None, keep_models: bool, on_divergence: str) -> bool:
    """Whether a stored record serves this comparison (raising for a refused divergence)."""
    if record is None:
        return False
    if record.get("diverged") and on_divergence == "raise":
        raise FloatingPointError(f"stored run diverged: {record['diverged']} "
                                 "(on_divergence='record' reports it)")
    return bool(record.get("diverged")) or not (keep_models and record.get("model") is None)


def make_plan(scenario, seeds: Iterable[int], runs: list, n_rounds: int,
              scenario_params: dict | None = None, cache_dir=None, device: str = "cpu",
              keep_models: bool = False, on_divergence: str = "raise",
              on_damaged: str = "raise") -> Plan:
    """Plan every (seed, run): its key, and its record where the run store has it.

    Parameters
    ----------
    scenario : str or callable
        See :func:`build_scenario`.
    seeds : iterable of int
        The seeds.
    runs : list of (label, method, params)
        From :func:`check_runs`.
    n_rounds : int
        Communication rounds.
    scenario_params : dict, optional
        Keyword arguments of a named generator.
    cache_dir : path, optional
        The run store; ``None``: none (every run is computed).
    device : str, default="cpu"
        The device kind of the runs (part of their keys).
    keep_models : bool, default=False
        A stored run without its model is computed again when models are kept.
    on_divergence : {"raise", "record"}, default="raise"
        A stored diverged run raises with ``"raise"``.
    on_damaged : {"raise", "recompute"}, default="raise"
        What an unreadable stored run does.

    Returns
    -------
    Plan
        The table of runs and the stored records.
    """
    seeds = check_seeds(seeds)
    check_int(n_rounds, "n_rounds", low=1)
    check_bool(keep_models, "keep_models")
    check_choice(on_divergence, "on_divergence", DIVERGENCE)
    check_choice(on_damaged, "on_damaged", ("raise", "recompute"))
    check_configurations(runs, n_rounds, seeds[0])
    if not (callable(scenario) or isinstance(scenario, str)):
        raise TypeError(f"scenario must be a name or a callable seed -> FederatedScenario, "
                        f"got {type(scenario).__name__}")
    plan = Plan(scenario, dict(scenario_params or {}), runs, seeds, n_rounds,
                device_kind(device), pd.DataFrame(),
                cache=None if cache_dir is None else RunCache(cache_dir))
    env = environment() if plan.cache is not None else None
    rows = []
    for seed in seeds:
        scen_key = None
        if plan.cache is not None:
            plan.last_built = (seed, build_scenario(scenario, plan.scenario_params, seed))
            scen_key = fingerprint(plan.last_built[1].name, plan.last_built[1])
        for i, (label, method, params) in enumerate(runs):
            key = (None if scen_key is None else
                   run_key(env, scen_key, method, params, n_rounds, seed, device))
            record = None if key is None else _stored(plan.cache, key, on_damaged)
            stored = _usable(record, keep_models, on_divergence)
            if stored:
                plan.records[(seed, i)] = record
            rows.append({"seed": seed, "run": i, "label": label, "method": method,
                         "key": key, "stored": stored,
                         "seconds": float(record["seconds"]) if stored else np.nan})
    plan.table = pd.DataFrame(rows, columns=["seed", "run", "label", "method", "key",
                                             "stored", "seconds"])
    return plan
