"""The multi-seed runner: plan the runs, execute those not stored, assemble the tables."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from .._validation import check_bool, check_choice, check_int, check_real
from ..progress import RunProgress
from .assemble import assemble
from .execute import execute, run_spec
from .executors import make_executor
from .plan import check_runs, make_plan
from .result import ComparisonResult
from .tasks import check_picklable

__all__ = ["plan_comparison", "run_comparison"]

#: How many missing runs the error of ``on_missing="raise"`` names.
SHOWN_MISSING = 8


def _devices(device: str) -> list[str]:
    """The devices local workers are pinned to, in turn: the CPU, or every CUDA device."""
    if device == "cpu":
        return ["cpu"]
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return [f"cuda:{i}" for i in range(count)] or ["cuda"]


def _missing_message(plan) -> str:
    """What ``on_missing="raise"`` says: how many runs the store lacks, and which."""
    rows = plan.table[~plan.table["stored"]]
    names = [f"{label} seed {seed}" for label, seed in zip(rows["label"], rows["seed"],
                                                           strict=True)]
    more = len(names) - SHOWN_MISSING
    where = "no run store: cache_dir=None" if plan.cache is None else \
        f"run store {plan.cache.folder}"
    return (f"{len(names)} of {len(plan.table)} runs are not stored ({where}): "
            f"{', '.join(names[:SHOWN_MISSING])}{f' and {more} more' if more > 0 else ''} "
            f"(on_missing='raise' computes nothing)")


def _executor(executor, n_workers: int, device: str):
    """The executor of ``executor`` or, when ``None``, of ``n_workers``."""
    check_int(n_workers, "n_workers", low=1)
    if executor is not None and n_workers != 1:
        raise ValueError(f"give n_workers or executor, not both (n_workers={n_workers}, "
                         f"executor={executor!r})")
    return make_executor(n_workers if executor is None else executor, _devices(device))


def plan_comparison(scenario, seeds: Iterable[int] = range(10),
                    methods: Sequence[str] | None = None, n_rounds: int = 15,
                    scenario_params: dict | None = None, method_params: dict | None = None,
                    variants: dict | None = None, cache_dir=None, device: str = "cpu",
                    keep_models: bool = False) -> pd.DataFrame:
    """What :func:`run_comparison` with the same arguments would compute, computing nothing.

    Parameters
    ----------
    scenario, seeds, methods, n_rounds, scenario_params, method_params
        As for :func:`run_comparison`.
    variants, cache_dir, device, keep_models
        As for :func:`run_comparison`.

    Returns
    -------
    pandas.DataFrame
        One row per (seed, configuration): ``seed``, ``label``, ``method``, ``key`` (the
        run store's key; ``None`` without ``cache_dir``), ``stored`` (the store holds
        the run, so ``run_comparison`` reads it instead of computing it) and ``seconds``
        (the stored run's computing time as its record gives it; NaN when not stored,
        so the stored runs' times can estimate the missing ones'). A stored run
        that cannot be read back counts as not stored, with a warning naming its file;
        nothing is written or removed.

    Examples
    --------
    >>> from topofl_lib.runner import plan_comparison
    >>> plan = plan_comparison("healthcare", seeds=[0, 1], methods=["FedAvg", "pTopoFL"],
    ...                        n_rounds=2, scenario_params={"n_clients": 4})
    >>> len(plan), int(plan["stored"].sum())
    (4, 0)
    """
    runs = check_runs(methods, method_params, variants)
    plan = make_plan(scenario, seeds, runs, n_rounds, scenario_params, cache_dir, device,
                     keep_models, on_divergence="record", on_damaged="recompute")
    return plan.table.drop(columns="run")


def run_comparison(
    scenario,
    seeds: Iterable[int] = range(10),
    methods: Sequence[str] | None = None,
    n_rounds: int = 15,
    scenario_params: dict | None = None,
    method_params: dict | None = None,
    keep_models: bool = False,
    progress: bool = True,
    variants: dict | None = None,
    cache_dir=None,
    n_workers: int = 1,
    on_divergence: str = "raise",
    on_damaged: str = "raise",
    executor=None,
    device: str = "cpu",
    on_missing: str = "compute",
    seconds_per_run: float | None = None,
) -> ComparisonResult:
    """Run every method on ``scenario`` for each seed.

    Parameters
    ----------
    scenario : {"healthcare", "benchmark"} or callable
        Scenario generator (:func:`topofl_lib.data.make_scenario`), or a function
        ``seed -> FederatedScenario`` (e.g. an image scenario of
        :mod:`topofl_lib.deep`); the scenario's ``name`` labels the results.
    seeds : iterable of int
        One scenario realisation and one method seed per entry.
    methods : sequence of str, optional
        Names from :data:`topofl_lib.federated.METHODS` (default: all five).
    n_rounds : int
        Communication rounds.
    scenario_params : dict, optional
        Extra keyword arguments of the scenario generator.
    method_params : dict, optional
        ``{method name: {param: value}}`` overrides.
    keep_models : bool
        Keep the fitted estimators in the result.
    progress : bool
        Show progress (:class:`topofl_lib.progress.RunProgress`): runs done / all runs,
        the time left (estimated from the runs computed in this call), runs left, runs
        reused from ``cache_dir``; also written for ``reproduce``'s terminal.
    variants : dict, optional
        ``{label: (method name, params)}``; replaces ``methods`` and ``method_params``
        (ablations: several configurations of one method). The ``method`` column of the
        result holds the labels.
    cache_dir : str or Path, optional
        The run store (:class:`topofl_lib.run_cache.RunCache`, keyed by each run's whole
        configuration): every finished run is written there by the process that
        computed it, and stored runs are reused, so an interrupted experiment resumes
        where it stopped. ``None``: no store.
    n_workers : int, default=1
        Runs computed at once on this machine: in this process and in ``n_workers - 1``
        spawned ones (each with one torch thread); the numbers are the same as with one
        worker. Short runs stay serial (see ``result.schedule``). A callable
        ``scenario`` must then be picklable (a module-level function or a
        ``functools.partial`` of one).
    on_divergence : {"raise", "record"}, default="raise"
        What a run that diverges (NaN or infinite weights; ``FloatingPointError``) does:
        stop the comparison with the method, scenario and seed named, or stay in the
        result as a *diverged run*: NaN metrics in ``curves`` and ``final`` and the
        reason in :attr:`ComparisonResult.diverged`. Diverged runs are stored like
        finished ones; reading a stored one with ``"raise"`` raises its reason.
    on_damaged : {"raise", "recompute"}, default="raise"
        What a stored run that cannot be read back (truncated, tampered with, not a run
        of its key) does: raise :class:`topofl_lib.run_cache.DamagedRunError` naming
        the file, or be computed again (with a warning naming it) and overwritten.
        Stored runs are data only and are never executed, either way.
    executor : int, str, distributed.Client or Executor, optional
        Where the runs go instead of ``n_workers`` local processes
        (:func:`topofl_lib.runner.executors.make_executor`): a Dask scheduler's address
        (``"tcp://host:8786"``), a ``distributed.Client`` (of a ``dask_jobqueue``
        Slurm/PBS cluster, say), or an executor. Numbers are identical whatever runs
        them.
    device : {"cpu", "cuda"}, default="cpu"
        The device kind the runs compute on; each worker is pinned to one device of
        that kind, and the kind is part of every run's key (CPU and GPU runs are never
        mixed). The device each run used is in its record and in ``result.devices``.
    on_missing : {"compute", "raise"}, default="compute"
        What a run that the run store does not hold does: be computed (and stored), or
        stop the comparison before anything is computed with a :class:`LookupError`
        naming the missing runs (label and seed). ``"raise"`` reads a committed run store
        (``runs/``) without starting hours of training by mistake.
    seconds_per_run : float, optional
        How long one run takes, in seconds, where it is known (runs of minutes at a
        paper's protocol, say): the schedule is chosen from it and every worker starts at
        once, instead of after a first run timed here while they wait. ``None``: time
        the first run (and a second, warm one when the first is short). It changes no
        number.

    Returns
    -------
    ComparisonResult
        Per-round curves and the final metrics of every (method, seed) run.

    Raises
    ------
    ValueError, TypeError
        An argument is bad, or a parameter of any run configuration is (checked for
        every configuration before any run starts: the message names the run's label).
    LookupError
        ``on_missing="raise"`` and the run store lacks a run.

    Notes
    -----
    With ``cache_dir``, or runs crossing processes, the kept models are the fitted
    estimators without their private attributes (training data, network, random
    generators): the parameters and every fitted ``*_`` attribute. A stored run keeps
    no data: ``scenario_`` is left out of the file and set again, on loading, to the
    seed's scenario (rebuilt, identical), the same object for every method of that seed.

    Examples
    --------
    >>> from topofl_lib.runner import run_comparison
    >>> result = run_comparison("healthcare", seeds=[0], methods=["FedAvg", "pTopoFL"],
    ...                         n_rounds=2, progress=False,
    ...                         scenario_params={"n_clients": 4, "n_adversarial": 1})
    >>> sorted(result.final["method"]), len(result.final)
    (['FedAvg', 'pTopoFL'], 2)
    """
    runs = check_runs(methods, method_params, variants)
    check_choice(on_missing, "on_missing", ("compute", "raise"))
    check_bool(progress, "progress")
    check_int(n_workers, "n_workers", low=1)
    if seconds_per_run is not None:
        seconds_per_run = check_real(seconds_per_run, "seconds_per_run", low=0.0)
    plan = make_plan(scenario, seeds, runs, n_rounds, scenario_params, cache_dir, device,
                     keep_models, on_divergence, on_damaged)
    if on_missing == "raise" and plan.todo:
        raise LookupError(_missing_message(plan))
    with _executor(executor, n_workers, plan.device) as pool:
        spec = run_spec(plan, keep_models, on_divergence,
                        slim_models=plan.cache is not None or pool.n_workers > 1)
        if pool.n_workers > 1:
            check_picklable(spec)
        records, schedule = dict(plan.records), []
        label = scenario if isinstance(scenario, str) else getattr(scenario, "__name__",
                                                                   "custom")
        with RunProgress(len(plan.table), len(records), str(label),
                         store=spec.cache_dir, enabled=progress) as bar:
            for seed, i, record in execute(plan, spec, pool, schedule, seconds_per_run):
                records[(seed, i)] = record
                bar.update()
    return assemble(plan, records, keep_models, schedule[0] if schedule else None)
