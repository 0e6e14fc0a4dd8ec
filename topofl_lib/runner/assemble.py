"""Assemble a comparison's records into its curves and final tables."""

from __future__ import annotations

import copy

import pandas as pd

from .plan import Plan, build_scenario
from .result import (
    CURVE_COLUMNS,
    FINAL_COLUMNS,
    PRIVACY_COLUMNS,
    SETTING_COLUMNS,
    UNRECORDED,
    ComparisonResult,
    settings_of,
)

__all__ = ["assemble"]


def _with_scenario(model, plan: Plan, seed: int, realised: dict):
    """A slim ``model`` with its seed's scenario attached again (one object per seed)."""
    if model is None or hasattr(model, "scenario_"):
        return model
    if seed not in realised:
        built = plan.last_built
        realised[seed] = (built[1] if built is not None and built[0] == seed
                          else build_scenario(plan.scenario, plan.scenario_params, seed))
    model = copy.copy(model)
    model.scenario_ = realised[seed]
    return model


def assemble(plan: Plan, records: dict, keep_models: bool = False,
             schedule=None) -> ComparisonResult:
    """The :class:`ComparisonResult` of ``records`` (``(seed, run) -> record``).

    Every row gets its scenario's settings as columns (:func:`settings_of`; from the
    record, or, for a run stored before records carried them, from the scenario
    realised while planning).

    Parameters
    ----------
    plan : Plan
        The planned comparison.
    records : dict
        Every run's record, stored or computed.
    keep_models : bool, default=False
        Collect the models (slim ones get their seed's scenario again, rebuilt
        deterministically: the same object for every method of that seed).
    schedule : Schedule, optional
        How the computed runs were executed.

    Returns
    -------
    ComparisonResult
        Rows in seed order, then run order.
    """
    planned = settings_of(plan.last_built[1]) if plan.last_built is not None else {}
    curves, final, models, diverged, realised = [], [], {}, {}, {}
    for seed in plan.seeds:
        for i, (name, _, _) in enumerate(plan.runs):
            rec = records[(seed, i)]
            settings = {**planned, **(rec.get("settings") or {})}
            kept = [*CURVE_COLUMNS, *(c for c in PRIVACY_COLUMNS if c in rec["curves"])]
            curves.append(rec["curves"].assign(method=name)[kept].assign(**settings))
            final.append({**rec["final"], "method": name, **settings})
            if rec.get("diverged"):
                diverged[(name, seed)] = rec["diverged"]
            if keep_models:
                models[(name, seed)] = _with_scenario(rec.get("model"), plan, seed, realised)
    final = pd.DataFrame(final)
    columns = [*FINAL_COLUMNS, *(c for c in (*PRIVACY_COLUMNS, *SETTING_COLUMNS)
                                 if c in final)]
    devices = sorted({str(rec.get("device", "cpu")) for rec in records.values()})
    machines = sorted({str(rec.get("machine", UNRECORDED)) for rec in records.values()})
    return ComparisonResult(pd.concat(curves, ignore_index=True), final[columns], models,
                            diverged, schedule, devices, machines)
