"""Multi-seed experiment runners and their statistics.

Every method sees the same scenario realisation within a seed (scenario and method
are both seeded with it), so per-seed differences between methods are *paired*:
:func:`paired_differences` reports their mean, a t confidence interval and a
Wilcoxon signed-rank p-value.

Table 1 of pTopoFL runs under two protocols (:func:`table1_comparison`): ``"paper"``,
the data, evaluation and local solvers of the paper's released code (like for like
with the paper's table), and ``"ours"``, our harder generators and protocol.
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats
from tqdm.auto import tqdm

from ._validation import check_choice, check_int, check_real
from .core.containers import ATTACKS
from .core.registry import method_names
from .core.seeds import check_seeds
from .data.scenarios import PROTOCOLS, make_scenario
from .federated.client_descriptors import PTOPOFL_LABELS
from .federated.methods import METHODS, make_method
from .federated.metrics import convergence_round
from .progress import RunProgress
from .run_cache import DamagedRunError, RunCache, environment, fingerprint

#: What :func:`run_comparison` does with a run that diverges.
DIVERGENCE = ("raise", "record")

__all__ = [
    "ABLATIONS",
    "PAPER_GD_STEPS",
    "PAPER_ROW_OF",
    "TABLE1_VARIANTS",
    "ComparisonResult",
    "ablation_variants",
    "LABEL_AWARE_BASELINES",
    "PTOPOFL_LABELS",
    "clustering_diagnostics",
    "continual_experiment",
    "label_aware_comparison",
    "holm",
    "holm_family",
    "paired_differences",
    "paper_gaps",
    "robustness_sweep",
    "run_comparison",
    "summarise",
    "table1",
    "table1_comparison",
]

METRICS = ("auc", "accuracy", "convergence_round")

#: The capped local solver of the paper's code's FedProx and SCAFFOLD: 30 full-batch
#: gradient steps of size 0.05 per round (pTopoFL and FedAvg fit to convergence instead).
#: Given to pTopoFL or FedAvg it removes the solver asymmetry between the paper's rows.
PAPER_GD_STEPS = {"lr": 0.05, "local_epochs": 30, "batch_size": None}
#: Table 1's configurations per protocol, ``{label: (method, params)}``.
#:
#: ``"paper"``: the local solvers of the paper's released code (v1.0.0): pTopoFL, FedAvg
#: and Local-only fit their logistic regression to convergence every round (lbfgs);
#: FedProx and SCAFFOLD take 30 full-batch gradient steps of size 0.05 (FedProx
#: ``mu=0.1``); pFedMe takes 20 personalisation steps and one outer step, full batch
#: (step sizes 0.01, ``lam=15``); SCAFFOLD also with that code's server rule
#: (``control_update="add_full"``). Other parameters are ours (pTopoFL's descriptor:
#: exact Rips persistence on 80-point subsamples, M = 2, beta = 0.3, tau = 2.0).
#: ``"ours"``: every method with its defaults (mini-batch SGD, 2 epochs, batch 32).
TABLE1_VARIANTS: dict[str, dict[str, tuple[str, dict]]] = {
    "paper": {
        "pTopoFL": ("pTopoFL", {"solver": "lbfgs"}),
        "FedAvg": ("FedAvg", {"solver": "lbfgs"}),
        "FedProx": ("FedProx", {**PAPER_GD_STEPS, "mu": 0.1}),
        "SCAFFOLD": ("SCAFFOLD", dict(PAPER_GD_STEPS)),
        "SCAFFOLD (v1.0.0 rule)": ("SCAFFOLD", {**PAPER_GD_STEPS, "control_update": "add_full"}),
        "pFedMe": ("pFedMe", {"lr": 0.01, "personal_lr": 0.01, "inner_steps": 20,
                              "local_epochs": 1, "batch_size": None, "lam": 15.0}),
        "Local-only": ("Local-only", {"solver": "lbfgs"}),
    },
    "ours": {
        **{m: (m, {}) for m in METHODS},
        "SCAFFOLD (v1.0.0 rule)": ("SCAFFOLD", {"control_update": "add_full"}),
        "Local-only": ("Local-only", {}),
    },
}
#: pTopoFL's ablation variants (Sec. 4.7: M = 1 and beta = 0; ours: no trust weighting,
#: no feature augmentation, diagram Wasserstein distance), ``{label: parameter changes}``.
ABLATIONS: dict[str, dict] = {
    "full": {}, "M=1": {"n_clusters": 1}, "beta=0": {"beta": 0.0},
    "no trust": {"use_trust": False}, "no augmentation": {"augment": False},
    "Wasserstein": {"distance": "wasserstein"},
}


def ablation_variants(protocol: str = "ours", changes: dict | None = None,
                      references: Sequence[str] = ("FedAvg", "Local-only")) -> dict:
    """``variants`` of :func:`run_comparison` for a pTopoFL ablation under ``protocol``.

    Parameters
    ----------
    protocol : {"ours", "paper"}
        Each variant is pTopoFL's Table 1 configuration under this protocol
        (:data:`TABLE1_VARIANTS`: under ``"paper"`` the lbfgs local solver) with the
        variant's changes applied. Run it on a scenario of the same protocol
        (``scenario_params={"protocol": protocol}``).
    changes : dict, optional
        ``{label: {pTopoFL parameter: value}}`` (default: :data:`ABLATIONS`).
    references : sequence of str
        Labels of :data:`TABLE1_VARIANTS` ``[protocol]`` added unchanged.

    Returns
    -------
    dict
        ``{label: (method name, params)}``.
    """
    check_choice(protocol, "protocol", PROTOCOLS)
    table = TABLE1_VARIANTS[protocol]
    base = table["pTopoFL"][1]
    changes = ABLATIONS if changes is None else changes
    unknown = [r for r in references if r not in table]
    if unknown:
        raise ValueError(f"unknown references {unknown}; expected labels of {list(table)}")
    return {**{label: ("pTopoFL", {**base, **change}) for label, change in changes.items()},
            **{r: table[r] for r in references}}


#: The row of the paper's Table 1 that a non-paper method label explains: the paper's
#: FedAvg row came from code whose "FedAvg" was Local-only; its SCAFFOLD row from the
#: v1.0.0 server rule.
PAPER_ROW_OF = {"Local-only": "FedAvg", "SCAFFOLD (v1.0.0 rule)": "SCAFFOLD"}


class ComparisonResult:
    """Per-round curves and final metrics of a multi-seed comparison.

    Parameters
    ----------
    curves, final : pandas.DataFrame
        Stored as the attributes below.
    models : dict
        Stored as ``models``.
    diverged : dict, optional
        Stored as ``diverged``.

    Attributes
    ----------
    curves : pandas.DataFrame
        Columns ``scenario, method, seed, round, auc, accuracy`` (rounds are 1-based).
    final : pandas.DataFrame
        Columns ``scenario, method, seed, auc, accuracy, convergence_round``: the
        last round's metrics and the first round reaching 95% of the final AUC.
    models : dict
        ``(method, seed) -> fitted estimator`` (kept only if ``keep_models``; ``None``
        for a diverged run).
    diverged : dict
        ``(method, seed) -> reason`` of the runs that diverged (only with
        ``run_comparison(on_divergence="record")``; their metrics are NaN).
    """

    def __init__(self, curves: pd.DataFrame, final: pd.DataFrame, models: dict,
                 diverged: dict | None = None):
        self.curves = curves
        self.final = final
        self.models = models
        self.diverged = dict(diverged or {})

    def summary(self, metric: str = "auc") -> pd.DataFrame:
        """Mean, std and 95% CI per method; see :func:`summarise`."""
        return summarise(self.final, metric)

    def paired(self, reference: str = "pTopoFL", metric: str = "auc") -> pd.DataFrame:
        """Paired differences ``reference - baseline``; see :func:`paired_differences`.

        Parameters
        ----------
        reference : str, default="pTopoFL"
            The method the others are compared with.
        metric : str, default="auc"
            A column of ``final``.

        Returns
        -------
        pandas.DataFrame
            One row per other method.
        """
        return paired_differences(self.final, reference, metric)


def _check_methods(methods) -> list[str]:
    methods = list(METHODS) if methods is None else list(methods)
    if not methods:
        raise ValueError("methods is empty")
    known = method_names()
    for m in methods:
        if m not in known:
            raise ValueError(f"unknown method {m!r}; expected one of {known}")
    return methods


def _check_variants(variants) -> list[tuple[str, str, dict]]:
    if not isinstance(variants, dict) or not variants:
        raise ValueError("variants must be a non-empty dict {label: (method, params)}")
    out = []
    for label, spec in variants.items():
        if not (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], dict)):
            raise ValueError(f"variants[{label!r}] must be a (method name, params dict) tuple")
        _check_methods([spec[0]])
        out.append((str(label), spec[0], spec[1]))
    return out


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
        Show a tqdm progress bar: runs done / all runs, the time left (estimated from
        the runs computed in this call), runs left, and runs reused from ``cache_dir``
        (:class:`topofl_lib.progress.RunProgress`; under ``reproduce`` its terminal shows
        them too).
    variants : dict, optional
        ``{label: (method name, params)}``; replaces ``methods`` and ``method_params``
        (ablations: several configurations of one method). The ``method`` column of the
        result holds the labels.
    cache_dir : str or Path, optional
        Store each finished run there (:class:`topofl_lib.run_cache.RunCache`, keyed by
        its whole configuration) and reuse the stored runs on a re-run, so an
        interrupted experiment resumes where it stopped. ``None``: no store.
    n_workers : int, default=1
        Runs executed at once, each in its own process with one torch thread; the
        numbers are the same as with one worker. A callable ``scenario`` must then be
        picklable (a module-level function or a ``functools.partial`` of one).
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

    Returns
    -------
    ComparisonResult
        Per-round curves and the final metrics of every (method, seed) run.

    Notes
    -----
    With ``cache_dir`` or ``n_workers > 1`` the kept models are the fitted estimators
    without their private attributes (training data, network, random generators):
    the parameters and every fitted ``*_`` attribute. A stored run keeps no data:
    ``scenario_`` is left out of the file and set again, on loading, to the seed's
    scenario (rebuilt, identical), the same object for every method of that seed.

    Examples
    --------
    >>> from topofl_lib.experiments import run_comparison
    >>> result = run_comparison("healthcare", seeds=[0], methods=["FedAvg", "pTopoFL"],
    ...                         n_rounds=2, progress=False,
    ...                         scenario_params={"n_clients": 4, "n_adversarial": 1})
    >>> sorted(result.final["method"]), len(result.final)
    (['FedAvg', 'pTopoFL'], 2)
    """
    seeds = check_seeds(seeds)
    check_choice(on_divergence, "on_divergence", DIVERGENCE)
    check_choice(on_damaged, "on_damaged", ("raise", "recompute"))
    methods = _check_methods(methods)
    check_int(n_rounds, "n_rounds", low=1)
    check_int(n_workers, "n_workers", low=1)
    scenario_params = dict(scenario_params or {})
    method_params = dict(method_params or {})
    for name in method_params:
        _check_methods([name])
    runs = (_check_variants(variants) if variants is not None
            else [(m, m, method_params.get(m, {})) for m in methods])
    if not (callable(scenario) or isinstance(scenario, str)):
        raise TypeError(f"scenario must be a name or a callable seed -> FederatedScenario, "
                        f"got {type(scenario).__name__}")
    cache = None if cache_dir is None else RunCache(cache_dir)
    if n_workers > 1:
        _check_picklable(scenario, scenario_params, runs)
    label = scenario if isinstance(scenario, str) else getattr(scenario, "__name__", "custom")

    # plan: every (seed, run), its key, and whether it is stored already
    records, todo, built = {}, [], None
    env = environment() if cache is not None else None
    for seed in seeds:
        if cache is None:
            todo += [(seed, i, None) for i in range(len(runs))]
            continue
        built = (seed, _build_scenario(scenario, scenario_params, seed))
        scen_key = fingerprint(built[1].name, built[1])
        for i, (_, method, extra) in enumerate(runs):
            key = fingerprint(env, scen_key, method, extra, n_rounds, seed)
            record = _stored_run(cache, key, on_damaged)
            if record is not None and record.get("diverged") and on_divergence == "raise":
                raise FloatingPointError(f"stored run diverged: {record['diverged']} "
                                         "(on_divergence='record' reports it)")
            if record is not None and (record.get("diverged")
                                       or not (keep_models and record.get("model") is None)):
                records[(seed, i)] = record
            else:  # not stored, or stored without the model asked for now
                todo.append((seed, i, key))
    total = len(seeds) * len(runs)
    bar = RunProgress(total, reused=len(records), label=f"{label}", store=cache_dir,
                      enabled=progress)

    def finish(seed, i, key, record):
        if cache is not None:
            cache.store(key, record)
        records[(seed, i)] = record
        bar.update()

    slim = cache is not None or n_workers > 1
    try:
        if n_workers == 1:
            for seed, i, key in todo:
                if built is None or built[0] != seed:
                    built = (seed, _build_scenario(scenario, scenario_params, seed))
                _, method, extra = runs[i]
                finish(seed, i, key, _run_one(built[1].name, built[1], method, extra,
                                              n_rounds, seed, keep_models, slim,
                                              on_divergence))
        elif todo:
            _run_parallel(todo, runs, scenario, scenario_params, n_rounds, keep_models,
                          n_workers, finish, on_divergence)
    finally:
        bar.close()
    curves, final, models, diverged = [], [], {}, {}
    for seed in seeds:
        realised = None
        for i, (name, _, _) in enumerate(runs):
            rec = records[(seed, i)]
            curves.append(rec["curves"].assign(method=name)[CURVE_COLUMNS])
            final.append({**rec["final"], "method": name})
            if rec.get("diverged"):
                diverged[(name, seed)] = rec["diverged"]
            if keep_models:
                model = rec.get("model")
                if model is not None and not hasattr(model, "scenario_"):
                    # a slim model (stored or from a worker): its seed's scenario again,
                    # rebuilt deterministically; the same object for every method
                    if realised is None:
                        realised = (built[1] if built is not None and built[0] == seed
                                    else _build_scenario(scenario, scenario_params, seed))
                    model = copy.copy(model)
                    model.scenario_ = realised
                models[(name, seed)] = model
    final = pd.DataFrame(final)[FINAL_COLUMNS]
    return ComparisonResult(pd.concat(curves, ignore_index=True), final, models, diverged)


CURVE_COLUMNS = ["scenario", "method", "seed", "round", "auc", "accuracy"]
FINAL_COLUMNS = ["scenario", "method", "seed", "auc", "accuracy", "convergence_round"]


def _stored_run(cache: RunCache, key: str, on_damaged: str) -> dict | None:
    """The stored run ``key``; ``None`` when absent, or damaged and to be recomputed."""
    if key not in cache:
        return None
    try:
        return cache.load(key)
    except DamagedRunError as exc:
        if on_damaged == "raise":
            raise
        warnings.warn(f"recomputing a damaged run: {exc}", UserWarning, stacklevel=3)
        return None


def _build_scenario(scenario, scenario_params: dict, seed: int):
    if callable(scenario):
        return scenario(seed)
    return make_scenario(scenario, random_state=seed, **scenario_params)


def _slim(est):
    """``est`` without private attributes (data, network, generators) and without
    ``scenario_`` (the clients' data, which :func:`run_comparison` re-attaches):
    picklable, small (a few MB for the image CNN instead of the 220 MB of a
    60 000-image scenario)."""
    out = copy.copy(est)
    for attr in [a for a in vars(out) if a.startswith("_") or a == "scenario_"]:
        delattr(out, attr)
    return out


def _run_one(label: str, data, method: str, extra: dict, n_rounds: int, seed: int,
             keep_model: bool, slim: bool, on_divergence: str = "raise") -> dict:
    """Fit one method on one scenario realisation; the record a run leaves.

    A run that diverges (the estimator raises ``FloatingPointError``) raises again with
    the method, scenario and seed named, or, with ``on_divergence="record"``, leaves a
    record with NaN metrics and the reason under ``"diverged"``.
    """
    start = time.perf_counter()
    params = {"n_rounds": n_rounds, "random_state": seed, **extra}
    est, reason = None, None
    try:
        est = make_method(method, **params).fit(data)
    except FloatingPointError as exc:
        reason = f"{method} on {label}, seed {seed}: {exc}"
        if on_divergence == "raise":
            raise FloatingPointError(f"{reason} (run_comparison(on_divergence='record') "
                                     "reports it as a diverged run instead)") from exc
    if est is None:  # diverged: NaN metrics for every round
        auc = acc = np.full(n_rounds, np.nan)
    else:
        auc, acc = est.history_["auc"], est.history_["accuracy"]
    curves = pd.DataFrame({"scenario": label, "method": method, "seed": seed,
                           "round": np.arange(1, auc.size + 1), "auc": auc, "accuracy": acc})
    final = {"scenario": label, "method": method, "seed": seed, "auc": auc[-1],
             "accuracy": acc[-1],
             "convergence_round": (np.nan if est is None else
                                   convergence_round(acc if np.all(np.isnan(auc)) else auc))}
    model = (_slim(est) if slim else est) if keep_model and est is not None else None
    record = {"curves": curves, "final": final, "model": model,
              "seconds": time.perf_counter() - start}
    return record if reason is None else {**record, "diverged": reason}


def _check_picklable(*objs) -> None:
    import pickle

    try:
        pickle.dumps(objs)
    except Exception as exc:  # lambdas, local functions, open handles...
        raise ValueError("n_workers > 1 sends the scenario and the methods to worker "
                         "processes, and they cannot be pickled (use a module-level "
                         f"function or functools.partial, or n_workers=1): {exc}") from exc


_WORKER: dict = {}


def _worker_init(scenario, scenario_params) -> None:
    import torch

    torch.set_num_threads(1)
    _WORKER.update(scenario=scenario, scenario_params=scenario_params, built=None)


def _worker_run(seed: int, method: str, extra: dict, n_rounds: int, keep_model: bool,
                on_divergence: str = "raise"):
    built = _WORKER["built"]
    if built is None or built[0] != seed:
        built = (seed, _build_scenario(_WORKER["scenario"], _WORKER["scenario_params"], seed))
        _WORKER["built"] = built
    label = built[1].name
    return _run_one(label, built[1], method, extra, n_rounds, seed, keep_model, True,
                    on_divergence)


def _run_parallel(todo, runs, scenario, scenario_params, n_rounds, keep_models, n_workers,
                  finish, on_divergence: str = "raise") -> None:
    """Run ``todo`` on ``n_workers`` spawned processes; ``finish`` each as it completes."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(n_workers, mp_context=ctx, initializer=_worker_init,
                             initargs=(scenario, scenario_params)) as pool:
        pending = {pool.submit(_worker_run, seed, runs[i][1], runs[i][2], n_rounds,
                               keep_models, on_divergence): (seed, i, key)
                   for seed, i, key in todo}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    seed, i, key = pending.pop(fut)
                    finish(seed, i, key, fut.result())
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise


def _ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    n = values.size
    if n < 2:
        return float("nan"), float("nan")
    half = stats.t.ppf(0.5 + level / 2, n - 1) * values.std(ddof=1) / np.sqrt(n)
    return float(values.mean() - half), float(values.mean() + half)


def summarise(final: pd.DataFrame, metric: str = "auc") -> pd.DataFrame:
    """Per method: ``mean``, ``std`` (ddof=1), 95% t-interval, ``n_seeds``.

    The interval is in ``ci_low``/``ci_high``.

    Parameters
    ----------
    final : pandas.DataFrame
        One row per (method, seed), as :attr:`ComparisonResult.final`.
    metric : str, default="auc"
        A name of :data:`METRICS`.

    Returns
    -------
    pandas.DataFrame
        Indexed by method.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {list(METRICS)}")
    rows = []
    for method, g in final.groupby("method", sort=False):
        v = g[metric].to_numpy(dtype=np.float64)
        lo, hi = _ci(v)
        rows.append({"method": method, "mean": v.mean(),
                     "std": v.std(ddof=1) if v.size > 1 else 0.0,
                     "ci_low": lo, "ci_high": hi, "n_seeds": v.size})
    return pd.DataFrame(rows).set_index("method")


def paired_differences(final: pd.DataFrame, reference: str = "pTopoFL",
                       metric: str = "auc") -> pd.DataFrame:
    """Per-seed paired differences ``reference - method`` for every other method.

    Columns: ``mean_diff``, 95% t-interval ``ci_low``/``ci_high``, ``wins`` (seeds where
    the reference is strictly better), ``n_seeds``, the two-sided Wilcoxon signed-rank
    ``p_wilcoxon`` (NaN when every difference is zero or n < 2), and ``p_holm``: the
    Wilcoxon p-values Holm-adjusted over the comparisons of this table (:func:`holm`).
    A notebook that reports several tables adjusts over all of them with
    :func:`holm_family`; a difference is called significant only when its adjusted
    p-value is below 0.05.

    Parameters
    ----------
    final : pandas.DataFrame
        One row per (method, seed), as :attr:`ComparisonResult.final`.
    reference : str, default="pTopoFL"
        The method the others are compared with (must be present).
    metric : str, default="auc"
        A name of :data:`METRICS`.

    Returns
    -------
    pandas.DataFrame
        Indexed by method (every method but ``reference``).
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {list(METRICS)}")
    wide = final.pivot(index="seed", columns="method", values=metric)
    if reference not in wide:
        raise ValueError(f"reference method {reference!r} is not in the results")
    rows = []
    for method in wide.columns:
        if method == reference:
            continue
        d = (wide[reference] - wide[method]).dropna().to_numpy(dtype=np.float64)
        lo, hi = _ci(d)
        p = float("nan")
        if d.size >= 2 and np.any(d != 0):
            p = float(stats.wilcoxon(d).pvalue)
        rows.append({"method": method, "mean_diff": d.mean(), "ci_low": lo, "ci_high": hi,
                     "wins": int((d > 0).sum()), "n_seeds": d.size, "p_wilcoxon": p})
    out = pd.DataFrame(rows).set_index("method")
    return out.assign(p_holm=holm(out["p_wilcoxon"].to_numpy(dtype=np.float64)))


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (Holm, 1979).

    The ``i``-th smallest of ``m`` p-values becomes ``max_{j <= i} min(1, (m - j + 1)
    p_(j))``; rejecting where the adjusted value is below ``alpha`` controls the
    family-wise error rate at ``alpha``. NaN entries (no test) stay NaN and do not
    count in ``m``.

    Parameters
    ----------
    pvalues : array-like of float
        The raw p-values, each in [0, 1] or NaN.

    Returns
    -------
    numpy.ndarray
        The adjusted p-values, in the input's order.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be 1-D, got shape {p.shape}")
    tested = ~np.isnan(p)
    if np.any((p[tested] < 0) | (p[tested] > 1)):
        raise ValueError(f"pvalues must lie in [0, 1], got {p[tested].min()} to "
                         f"{p[tested].max()}")
    out = np.full_like(p, np.nan)
    idx = np.flatnonzero(tested)[np.argsort(p[tested], kind="stable")]
    m = idx.size
    out[idx] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[idx]))
    return out


def holm_family(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The paired tables of one notebook as one family: ``p_holm`` over all of them.

    Parameters
    ----------
    tables : dict
        ``{name: table}`` of :func:`paired_differences` outputs (each with
        ``p_wilcoxon``), e.g. one per scenario or protocol.

    Returns
    -------
    pandas.DataFrame
        The tables stacked (first index level: the name), with ``p_holm`` recomputed
        over every comparison of the family and ``family_size`` (the number of tests).
    """
    if not isinstance(tables, Mapping) or not tables:
        raise ValueError("tables must be a non-empty dict {name: paired table}")
    stacked = pd.concat(dict(tables), names=["table"])
    if "p_wilcoxon" not in stacked:
        raise ValueError("tables must be paired_differences outputs (no p_wilcoxon column)")
    adjusted = holm(stacked["p_wilcoxon"].to_numpy(dtype=np.float64))
    return stacked.assign(p_holm=adjusted,
                          family_size=int(stacked["p_wilcoxon"].notna().sum()))


def clustering_diagnostics(result: ComparisonResult) -> pd.DataFrame:
    """What pTopoFL's round-0 server step found, per seed (needs ``keep_models=True``).

    Columns: ``ari_latent_groups`` (adjusted Rand index between the topology clusters
    and the generator's latent client types; NaN when the generator has a single type),
    ``adversarial_trust`` (mean trust weight
    of adversarial clients, NaN if none), ``honest_trust`` (mean over honest clients),
    ``flagged_adversarial`` and ``flagged_honest`` (clients with z > tau).
    """
    from sklearn.metrics import adjusted_rand_score

    rows = []
    for (name, seed), est in sorted(result.models.items(), key=lambda kv: kv[0][1]):
        if name != "pTopoFL":
            continue
        groups = np.array([c.group for c in est.scenario_.clients])
        adv = ~est.honest_
        flagged = est.z_scores_ > est.tau
        rows.append({
            "seed": seed,
            "ari_latent_groups": (adjusted_rand_score(groups, est.labels_)
                                  if np.unique(groups).size > 1 else np.nan),
            "adversarial_trust": est.trust_[adv].mean() if adv.any() else np.nan,
            "honest_trust": est.trust_[~adv].mean(),
            "flagged_adversarial": int((flagged & adv).sum()),
            "flagged_honest": int((flagged & ~adv).sum()),
        })
    if not rows:
        raise ValueError("no fitted pTopoFL models in the result; run with keep_models=True")
    return pd.DataFrame(rows).set_index("seed")


def table1(result: ComparisonResult, single_run: ComparisonResult | None = None
           ) -> pd.DataFrame:
    """Table 1 for one scenario: ours (mean ± sd, 95% CI) next to the paper's values.

    A method label of :data:`PAPER_ROW_OF` (Local-only, the v1.0.0 SCAFFOLD rule) is
    shown beside the paper row it explains (column ``paper row``, present when any label
    differs from its paper row). ``single_run`` (a one-seed result, e.g. seed 42, the
    paper's single run) adds its values in a column ``seed <s>``.

    Parameters
    ----------
    result : ComparisonResult
        A multi-seed comparison on one scenario.
    single_run : ComparisonResult, optional
        A one-seed comparison on the same scenario.

    Returns
    -------
    pandas.DataFrame
        Indexed by (metric, method), with ``scenario``, ``ours``, ``95% CI``, ``paper``, ``seeds``
        and the optional columns above.
    """
    from .results import METHOD_KEYS, SCENARIO_KEYS, load_paper_claims

    paper = load_paper_claims()["value"]
    scen = result.final["scenario"].iloc[0]
    single = None
    if single_run is not None:
        seeds = single_run.final["seed"].unique()
        if seeds.size != 1:
            raise ValueError(f"single_run must hold one seed, got {sorted(seeds.tolist())}")
        single = single_run.final.set_index("method")
    rows = []
    for metric, key in (("auc", "auc"), ("accuracy", "acc"), ("convergence_round", "conv")):
        s = result.summary(metric)
        for method, r in s.iterrows():
            row_of = PAPER_ROW_OF.get(method, method)
            cid = (f"ptopofl.t1.{SCENARIO_KEYS.get(scen)}.{key}."
                   f"{METHOD_KEYS.get(row_of)}")
            row = {
                "scenario": scen, "metric": metric, "method": method,
                "ours": f"{r['mean']:.3f} ± {r['std']:.3f}",
                "95% CI": f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
                "paper": paper.get(cid, np.nan),
                "seeds": int(r["n_seeds"]),
            }
            if any(m in PAPER_ROW_OF for m in s.index):
                row["paper row"] = row_of if cid in paper.index else ""
            if single is not None:
                row[f"seed {seeds[0]}"] = (single.loc[method, metric] if method in single.index
                                           else np.nan)
            rows.append(row)
    return pd.DataFrame(rows).set_index(["metric", "method"])


def paper_gaps(result: ComparisonResult, reference: str = "pTopoFL",
               metric: str = "auc") -> pd.DataFrame:
    """The paper's Table 1 gaps ``reference - method`` beside our paired ones.

    The paper reports one run, so its gap between two methods is one draw of the
    per-seed paired difference. For every other method label (mapped to its paper row by
    :data:`PAPER_ROW_OF`), the columns are ``paper_gap``, our ``mean_diff`` with its 95%
    t-interval ``ci_low``/``ci_high``, the standard deviation ``sd_seed`` of the per-seed
    differences, and ``z = (paper_gap - mean_diff) / sd_seed``: how unusual the paper's
    gap would be as a single run of our protocol (|z| > 2: the paper's gap does not
    come from the same mechanism). Methods without a paper row are left out.

    Parameters
    ----------
    result : ComparisonResult
        A multi-seed comparison on one scenario.
    reference : str, default="pTopoFL"
        The method the gaps are taken from.
    metric : {"auc", "accuracy"}, default="auc"
        The compared metric.

    Returns
    -------
    pandas.DataFrame
        Indexed by method, with the columns above.
    """
    from .results import METHOD_KEYS, SCENARIO_KEYS, load_paper_claims

    paper = load_paper_claims()["value"]
    scen = result.final["scenario"].iloc[0]
    key = {"auc": "auc", "accuracy": "acc"}.get(metric)
    if key is None:
        raise ValueError(f"paper_gaps compares 'auc' or 'accuracy', got {metric!r}")

    def claim(label):
        cid = (f"ptopofl.t1.{SCENARIO_KEYS.get(scen)}.{key}."
               f"{METHOD_KEYS.get(PAPER_ROW_OF.get(label, label))}")
        return paper.get(cid, np.nan)

    paired = paired_differences(result.final, reference, metric)
    wide = result.final.pivot(index="seed", columns="method", values=metric)
    rows = []
    for method, r in paired.iterrows():
        gap = claim(reference) - claim(method)
        if np.isnan(gap):
            continue
        sd = float((wide[reference] - wide[method]).std(ddof=1))
        rows.append({"method": method, "paper_row": PAPER_ROW_OF.get(method, method),
                     "paper_gap": gap, "mean_diff": r["mean_diff"], "ci_low": r["ci_low"],
                     "ci_high": r["ci_high"], "sd_seed": sd,
                     "z": (gap - r["mean_diff"]) / sd if sd > 0 else np.nan,
                     "n_seeds": int(r["n_seeds"])})
    return pd.DataFrame(rows).set_index("method")


def table1_comparison(
    scenario: str,
    protocol: str = "paper",
    seeds: Iterable[int] = range(20),
    methods: Sequence[str] | None = None,
    n_rounds: int = 15,
    keep_models: bool = False,
    progress: bool = True,
) -> ComparisonResult:
    """Table 1 of pTopoFL on one scenario under a data and evaluation protocol.

    Parameters
    ----------
    scenario : {"healthcare", "benchmark"}
    protocol : {"paper", "ours"}
        ``"paper"``: the generators, evaluation (all clients, per-client
        standardisation) and local solvers of the paper's released code
        (:mod:`topofl_lib.data.paper_protocol`, :data:`TABLE1_VARIANTS`), like for like
        with the paper's Table 1. ``"ours"``: our generators and defaults.
    seeds : iterable of int
        One scenario realisation per seed; every method is seeded with it too. (The
        paper's code seeds each baseline with the scenario seed + 100, + 200, ...; under
        its solvers only pTopoFL's persistence subsample draws random numbers, so the
        method seed hardly matters: full-batch steps and lbfgs are deterministic.)
    methods : sequence of str, optional
        Labels of :data:`TABLE1_VARIANTS` ``[protocol]`` (default: all of them).
    n_rounds, keep_models, progress
        As in :func:`run_comparison`.

    Returns
    -------
    ComparisonResult
        ``curves`` and ``final`` carry a ``protocol`` column; the method labels are those
        of :data:`TABLE1_VARIANTS` (see :func:`table1` for the paper's values).
    """
    if scenario not in ("healthcare", "benchmark"):
        raise ValueError(f"Table 1 has the scenarios 'healthcare' and 'benchmark', got "
                         f"{scenario!r}")
    check_choice(protocol, "protocol", PROTOCOLS)
    table = TABLE1_VARIANTS[protocol]
    labels = list(table) if methods is None else list(methods)
    unknown = [m for m in labels if m not in table]
    if unknown or not labels:
        raise ValueError(f"methods must be a non-empty list of {list(table)}, got {labels}")
    res = run_comparison(scenario, seeds, n_rounds=n_rounds,
                         scenario_params={"protocol": protocol},
                         variants={m: table[m] for m in labels}, keep_models=keep_models,
                         progress=progress)
    return ComparisonResult(res.curves.assign(protocol=protocol),
                            res.final.assign(protocol=protocol), res.models)


def robustness_sweep(
    rates: Sequence[float] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5),
    seeds: Iterable[int] = range(10),
    methods: Sequence[str] | None = None,
    attack: str = "label_flip",
    n_clients: int = 10,
    n_rounds: int = 10,
    tau: float = 1.8,
    progress: bool = True,
    protocol: str = "ours",
) -> tuple[ComparisonResult, pd.DataFrame]:
    """Sweep the fraction of adversarial hospitals (pTopoFL Sec. 4.4, Figure 4).

    ``round(rate * n_clients)`` hospitals of :func:`~topofl_lib.data.make_healthcare`
    run ``attack``; pTopoFL uses ``tau`` (paper Table 3: 1.8 for robustness). Returns the
    merged :class:`ComparisonResult` (with ``rate`` and ``protocol`` columns in
    ``curves`` and ``final``)
    and a Theorem 5 table for pTopoFL: per rate and seed, the measured adversarial
    weight in the consensus, the trust share of adversaries, the separation
    ``lam_delta`` and the bound.

    Parameters
    ----------
    rates : sequence of float, default=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
        Fractions of adversarial hospitals, each in [0, 0.5].
    seeds : iterable of int, default=range(10)
        The seeds.
    methods : sequence of str, optional
        Under ``protocol="ours"`` method names (default: :data:`METHODS`) with their
        defaults; under ``protocol="paper"`` labels of :data:`TABLE1_VARIANTS`
        ``["paper"]`` (default: all of them), i.e. the paper code's local solvers.
    attack : str, default="label_flip"
        The adversaries' attack (see :func:`~topofl_lib.data.make_healthcare`).
    n_clients : int, default=10
        Number of hospitals.
    n_rounds : int, default=10
        Communication rounds.
    tau : float, default=1.8
        pTopoFL's trust threshold.
    progress : bool, default=True
        Show tqdm bars.
    protocol : {"ours", "paper"}, default="ours"
        ``"ours"``: our generator (adversaries flip all their training labels, only
        honest hospitals are scored). ``"paper"``: the generator, evaluation and local
        solvers of the paper's released code; the hospitals are ``n_clients`` draws of
        :func:`~topofl_lib.data.paper_protocol.paper_healthcare`, whose adversaries flip
        30% of all their labels (test labels included) and are scored with the others.

    Returns
    -------
    result : ComparisonResult
        All rates' runs, with ``rate`` and ``protocol`` columns.
    theorem5 : pandas.DataFrame
        One row per (rate, seed) of pTopoFL: ``protocol``, ``eps``, ``adversarial_weight``,
        ``adversarial_trust_share``, ``delta_sep``, ``lam``, ``lam_delta``, ``bound`` and
        ``assumption_holds``.
    """
    from .theory import adversarial_separation, theorem5_bound

    seeds = check_seeds(seeds)
    check_choice(protocol, "protocol", PROTOCOLS)
    if protocol == "paper":
        table = TABLE1_VARIANTS["paper"]
        labels = list(table) if methods is None else list(methods)
        unknown = [m for m in labels if m not in table]
        if unknown or not labels:
            raise ValueError(f"with protocol='paper', methods must be a non-empty list of "
                             f"{list(table)}, got {labels}")
        runs = {m: table[m] for m in labels}
    else:
        runs = {m: (m, {}) for m in _check_methods(methods)}
    runs = {label: (m, {**extra, "tau": tau} if m == "pTopoFL" else extra)
            for label, (m, extra) in runs.items()}
    curves, finals, rows = [], [], []
    for rate in rates:
        check_real(rate, "rate", low=0.0, high=0.5)
        n_adv = int(round(rate * n_clients))
        res = run_comparison(
            "healthcare", seeds, n_rounds=n_rounds,
            scenario_params={"n_clients": n_clients, "n_adversarial": n_adv, "attack": attack,
                             "protocol": protocol},
            variants=runs, keep_models="pTopoFL" in runs, progress=progress)
        curves.append(res.curves.assign(rate=rate, protocol=protocol))
        finals.append(res.final.assign(rate=rate, protocol=protocol))
        for (name, seed), est in res.models.items():
            if name != "pTopoFL":
                continue
            adv = ~est.honest_
            sep = adversarial_separation(est.distances_, adv)
            eps = adv.mean()
            rows.append({
                "protocol": protocol, "rate": rate, "seed": seed, "eps": eps,
                "adversarial_weight": float(est.consensus_weights_[adv].sum()),
                "adversarial_trust_share": float(est.trust_[adv].sum() / est.trust_.sum()),
                **sep,
                "bound": (theorem5_bound(eps, sep["lam_delta"])
                          if np.isfinite(sep["lam_delta"]) else np.nan),
                "assumption_holds": bool(sep["delta_sep"] > 0) if adv.any() else False,
            })
    merged = ComparisonResult(pd.concat(curves, ignore_index=True),
                              pd.concat(finals, ignore_index=True), {})
    return merged, pd.DataFrame(rows)


def continual_experiment(
    seeds: Iterable[int] = range(10),
    n_rounds: int = 20,
    drift_threshold: float = 0.12,
    scenario_params: dict | None = None,
    progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """pTopoFL on :func:`~topofl_lib.data.make_continual` (Sec. 4.5, Figure 5).

    Each seed is run twice: with drift-triggered re-clustering (``drift_threshold``) and
    without (round-0 clusters kept). Returns

    * ``per_round``: seed, client, round (1-based), shifted, entropy_h0, entropy_h1,
      drift_statistic (of the run without re-clustering, so detection is judged on the
      same statistic for every client);
    * ``per_seed``: seed, mean Eq. 9 drift, the fraction of shifted clients whose
      statistic exceeded the threshold at or after the shift (``detected``), the
      fraction of stable clients that ever exceeded it (``false_alarms``), the rounds at
      which re-clustering fired, and the final AUC with and without re-clustering.

    Parameters
    ----------
    seeds : iterable of int, default=range(10)
        The seeds.
    n_rounds : int, default=20
        Communication rounds.
    drift_threshold : float, default=0.12
        Re-clustering threshold of the adaptive run (> 0).
    scenario_params : dict, optional
        Further :func:`~topofl_lib.data.make_continual` parameters.
    progress : bool, default=True
        Show a tqdm bar.

    Returns
    -------
    per_round : pandas.DataFrame
        See above.
    per_seed : pandas.DataFrame
        See above.
    """
    from .data.scenarios import make_continual
    from .federated.ptopofl import PTopoFL
    from .topology.descriptor import DESCRIPTOR_NAMES

    seeds = check_seeds(seeds)
    check_real(drift_threshold, "drift_threshold", low=0.0, low_open=True)
    scenario_params = dict(scenario_params or {})
    h0 = DESCRIPTOR_NAMES.index("entropy_h0")
    h1 = DESCRIPTOR_NAMES.index("entropy_h1")
    rounds, seeds_rows = [], []
    for seed in tqdm(seeds, desc="continual", disable=not progress):
        scen = make_continual(n_rounds=n_rounds, random_state=seed, **scenario_params)
        shifted = np.zeros(len(scen.clients), dtype=bool)
        shifted[scen.meta["shifted"]] = True
        start = scen.meta["shift_round"]
        static = PTopoFL(n_rounds=n_rounds, random_state=seed).fit(scen)
        adaptive = PTopoFL(n_rounds=n_rounds, drift_threshold=drift_threshold,
                           random_state=seed).fit(scen)
        stat = static.drift_statistic_
        for k in range(len(scen.clients)):
            rounds.append(pd.DataFrame({
                "seed": seed, "client": k, "round": np.arange(1, n_rounds + 1),
                "shifted": shifted[k], "entropy_h0": static.signatures_[:, k, h0],
                "entropy_h1": static.signatures_[:, k, h1], "drift_statistic": stat[:, k]}))
        fired = np.nan_to_num(stat, nan=0.0) > drift_threshold
        seeds_rows.append({
            "seed": seed, "mean_drift": float(static.drift_.mean()),
            "detected": float(fired[start:, shifted].any(axis=0).mean())
            if shifted.any() else np.nan,
            "false_alarms": float(fired[:, ~shifted].any(axis=0).mean()),
            "recluster_rounds": adaptive.recluster_rounds_,
            "auc_static": float(static.history_["auc"][-1]),
            "auc_reclustering": float(adaptive.history_["auc"][-1]),
        })
    return pd.concat(rounds, ignore_index=True), pd.DataFrame(seeds_rows)


#: Labels of pTopoFL with each descriptor option in :func:`label_aware_comparison`.
#: The baselines of :func:`label_aware_comparison`.
LABEL_AWARE_BASELINES = ("FedAvg", "Median", "TrimmedMean", "Krum")


def label_aware_comparison(
    rates: Iterable[float] = (0.0, 0.3, 0.5),
    seeds: Iterable[int] = range(100, 120),
    protocols: Iterable[str] = ("ours", "paper"),
    descriptors: Iterable[str] = tuple(PTOPOFL_LABELS),
    baselines: Iterable[str] = LABEL_AWARE_BASELINES,
    attacks: Iterable[str] = ("label_flip",),
    n_clients: int = 10,
    n_rounds: int = 10,
    tau: float = 1.8,
    progress: bool = True,
) -> pd.DataFrame:
    """Final metrics of pTopoFL with each descriptor and of the baselines, per attack,
    protocol and fraction of adversarial hospitals.

    For each attack, protocol (``make_healthcare(attack=..., protocol=...)``) and rate,
    ``round(rate * n_clients)`` hospitals attack (by default they flip their labels,
    the robustness sweep's attack) and :func:`~topofl_lib.experiments.run_comparison`
    runs pTopoFL (tau ``tau``) with each descriptor option, labelled
    :data:`PTOPOFL_LABELS`, and the ``baselines``. Returns the runs' ``final`` table
    with ``attack``, ``protocol`` and ``rate`` columns; pair methods within an (attack,
    protocol, rate) with :func:`~topofl_lib.experiments.paired_differences`. A rate with
    no adversarial hospital is run once per protocol (the attack changes nothing there)
    and its rows are repeated under each attack.

    Parameters
    ----------
    rates : iterable of float, default=(0.0, 0.3, 0.5)
        Fractions of label-flipping hospitals, each in [0, 0.5].
    seeds : iterable of int, default=range(100, 120)
        Scenario seeds (the issue's pre-registered report seeds).
    protocols : iterable of {"ours", "paper"}, default=("ours", "paper")
        Data protocols of :func:`~topofl_lib.data.make_healthcare`.
    descriptors : iterable of str, default=all of PTOPOFL_LABELS
        pTopoFL's descriptor options (``"paper"``, ``"class_conditional"``,
        ``"model_anchored"``).
    baselines : iterable of str, default=LABEL_AWARE_BASELINES
        Method names run with their defaults beside pTopoFL.
    attacks : iterable of str, default=("label_flip",)
        What the adversarial hospitals do, each one of
        :data:`~topofl_lib.core.containers.ATTACKS` (``"label_flip"``,
        ``"noisy_label_flip"``, ``"sign_flip"``).
    n_clients : int, default=10
        Hospitals per scenario (at least 2).
    n_rounds : int, default=10
        Communication rounds.
    tau : float, default=1.8
        pTopoFL's anomaly threshold.
    progress : bool, default=True
        Show tqdm bars.

    Returns
    -------
    pandas.DataFrame
        The ``final`` table of every run, with ``attack``, ``protocol`` and ``rate``
        columns.
    """
    check_int(n_clients, "n_clients", low=2)
    attacks = list(attacks)
    for attack in attacks:
        check_choice(attack, "attacks", ATTACKS)
    variants = {}
    for d in descriptors:
        check_choice(d, "descriptors", PTOPOFL_LABELS)
        variants[PTOPOFL_LABELS[d]] = ("pTopoFL", {"tau": tau, "descriptor": d})
    variants.update({b: (b, {}) for b in baselines})
    protocols, rates = list(protocols), list(rates)
    for protocol in protocols:
        check_choice(protocol, "protocol", PROTOCOLS)
    for rate in rates:
        check_real(rate, "rate", low=0.0, high=0.5)
    finals, honest = [], {}  # honest: (protocol, rate) -> runs without adversaries
    for attack in attacks:
        for protocol in protocols:
            for rate in rates:
                n_adversarial = int(round(rate * n_clients))
                if n_adversarial == 0 and (protocol, rate) in honest:
                    final = honest[protocol, rate]  # no adversary: the attack changes nothing
                else:
                    final = run_comparison(
                        "healthcare", seeds, n_rounds=n_rounds, variants=variants,
                        scenario_params={"n_clients": n_clients, "protocol": protocol,
                                         "attack": attack, "n_adversarial": n_adversarial},
                        progress=progress).final
                    if n_adversarial == 0:
                        honest[protocol, rate] = final
                finals.append(final.assign(attack=attack, protocol=protocol, rate=rate))
    return pd.concat(finals, ignore_index=True)
