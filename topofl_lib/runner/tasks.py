"""One run, and the batches of runs an executor hands to a worker.

:func:`run_batch` is what every executor calls, in this process or in a worker anywhere:
it builds the seed's scenario (once per seed and worker), fits each run, writes each
finished run to the run store (so a run finished on any worker is never lost, and an
interrupted study resumes from the store), and returns the records.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.device import device_description, device_kind, pinned_device
from ..environment import cpu_signature
from ..federated.methods import make_method
from ..federated.metrics import convergence_round
from ..run_cache import RunCache
from .plan import build_scenario
from .result import PRIVACY_COLUMNS, settings_of

__all__ = ["RunSpec", "check_picklable", "forget_scenarios", "run_batch", "run_one", "slim"]


@dataclass(frozen=True)
class RunSpec:
    """What every run of one comparison shares (sent once per batch to a worker).

    Attributes
    ----------
    scenario, scenario_params, runs, n_rounds
        As in :class:`topofl_lib.runner.plan.Plan`.
    keep_models : bool
        Return the fitted estimators (slim: see :func:`slim`).
    on_divergence : {"raise", "record"}
        What a diverging run does.
    cache_dir : str or None
        The run store the worker writes each finished run to.
    device : str
        The device kind the worker must be pinned to.
    slim_models : bool
        Keep models slim (:func:`slim`): always when they are stored or cross processes.
    token : str
        Identifies the comparison, so a worker reuses a scenario it built for it.
    """

    scenario: object
    scenario_params: dict
    runs: list
    n_rounds: int
    keep_models: bool
    on_divergence: str
    cache_dir: str | None
    device: str
    slim_models: bool
    token: str


def check_picklable(spec: RunSpec) -> None:
    """Refuse a comparison whose scenario or methods cannot be sent to worker processes.

    Parameters
    ----------
    spec : RunSpec
        The comparison.

    Raises
    ------
    ValueError
        Naming what cannot be pickled (a lambda, a local function, an open handle...).
    """
    import pickle  # only to test that the spec can travel; nothing stored is a pickle

    try:
        pickle.dumps(spec)
    except Exception as exc:
        raise ValueError("n_workers > 1 sends the scenario and the methods to worker "
                         "processes, and they cannot be pickled (use a module-level "
                         f"function or functools.partial, or n_workers=1): {exc}") from exc


def slim(est):
    """``est`` without private attributes (data, network, generators) and without
    ``scenario_`` (the clients' data, which the runner re-attaches): small and
    storable (a few MB for the image CNN instead of the 220 MB of a 60 000-image
    scenario).

    Parameters
    ----------
    est : estimator
        A fitted federated method.

    Returns
    -------
    estimator
        A shallow copy without those attributes.
    """
    out = copy.copy(est)
    for attr in [a for a in vars(out) if a.startswith("_") or a == "scenario_"]:
        delattr(out, attr)
    return out


def run_one(data, method: str, params: dict, n_rounds: int, seed: int,
            keep_model: bool = False, slim_model: bool = True,
            on_divergence: str = "raise") -> dict:
    """Fit one method on one scenario realisation; the record the run leaves.

    Parameters
    ----------
    data : FederatedScenario
        The seed's realisation.
    method : str
        A registered method name.
    params : dict
        Its parameters (besides ``n_rounds`` and ``random_state``).
    n_rounds : int
        Communication rounds.
    seed : int
        The method's ``random_state``.
    keep_model : bool, default=False
        Keep the fitted estimator under ``"model"``.
    slim_model : bool, default=True
        Keep it slim (:func:`slim`).
    on_divergence : {"raise", "record"}, default="raise"
        A run that diverges (``FloatingPointError``) raises again with the method,
        scenario and seed named, or leaves NaN metrics and the reason under
        ``"diverged"``.

    Returns
    -------
    dict
        ``curves``, ``final``, ``model``, ``seconds``, ``device``, ``machine`` (the CPU,
        :func:`~topofl_lib.environment.cpu_signature`), ``settings`` (the
        scenario's, :func:`~topofl_lib.runner.assemble.settings_of`) and, for a diverged
        run, ``diverged``. A run with ``model_dp`` adds the
        :data:`~topofl_lib.runner.result.PRIVACY_COLUMNS` to ``curves`` and ``final``.
    """
    start = time.perf_counter()
    est, reason = None, None
    try:
        est = make_method(method, n_rounds=n_rounds, random_state=seed, **params).fit(data)
    except FloatingPointError as exc:
        reason = f"{method} on {data.name}, seed {seed}: {exc}"
        if on_divergence == "raise":
            raise FloatingPointError(f"{reason} (run_comparison(on_divergence='record') "
                                     "reports it as a diverged run instead)") from exc
    nan = np.full(n_rounds, np.nan)
    auc, acc = (nan, nan) if est is None else (est.history_["auc"], est.history_["accuracy"])
    curves = pd.DataFrame({"scenario": data.name, "method": method, "seed": seed,
                           "round": np.arange(1, auc.size + 1), "auc": auc, "accuracy": acc})
    final = {"scenario": data.name, "method": method, "seed": seed, "auc": auc[-1],
             "accuracy": acc[-1],
             "convergence_round": (np.nan if est is None else
                                   convergence_round(acc if np.all(np.isnan(auc)) else auc))}
    privacy = {c: est.history_[c] for c in PRIVACY_COLUMNS
               if est is not None and c in est.history_}
    if privacy:  # model_dp: the epsilon after each round, and after the last
        curves = curves.assign(**privacy)
        final.update({c: float(v[-1]) for c, v in privacy.items()})
    model = None
    if keep_model and est is not None:
        model = slim(est) if slim_model else est
    record = {"curves": curves, "final": final, "model": model,
              "seconds": time.perf_counter() - start,
              "device": device_description(pinned_device()), "machine": cpu_signature(),
              "settings": settings_of(data)}
    return record if reason is None else {**record, "diverged": reason}


_BUILT: dict = {}  # this process's last scenario: {(token, seed): scenario}


def _scenario(spec: RunSpec, seed: int):
    """The seed's scenario, built once per comparison and seed in this process."""
    if (spec.token, seed) not in _BUILT:
        _BUILT.clear()
        _BUILT[(spec.token, seed)] = build_scenario(spec.scenario, spec.scenario_params, seed)
    return _BUILT[(spec.token, seed)]


def forget_scenarios() -> None:
    """Drop the scenario this process keeps for its next batch (frees its memory)."""
    _BUILT.clear()


def run_batch(spec: RunSpec, items: list[tuple[int, int, str | None]]) -> list[dict]:
    """Compute ``items`` (``(seed, run index, key)``), store each, return their records.

    Parameters
    ----------
    spec : RunSpec
        The comparison.
    items : list of tuple
        The runs of this batch.

    Returns
    -------
    list of dict
        The records, in the order of ``items``.

    Raises
    ------
    RuntimeError
        This process is pinned to a device of another kind than the comparison's (a
        GPU run must never be stored under a CPU key, nor the reverse).
    """
    here = device_kind(pinned_device())
    if here != spec.device:
        raise RuntimeError(f"this worker is pinned to {pinned_device()!r}, but the "
                           f"comparison runs on {spec.device!r}: give the executor "
                           f"{spec.device} devices, or run_comparison(device={here!r})")
    cache = None if spec.cache_dir is None else RunCache(spec.cache_dir)
    out = []
    for seed, i, key in items:
        _, method, params = spec.runs[i]
        record = run_one(_scenario(spec, seed), method, params, spec.n_rounds, seed,
                         spec.keep_models, spec.slim_models, spec.on_divergence)
        if cache is not None:
            cache.store(key, record)
        out.append(record)
    return out
