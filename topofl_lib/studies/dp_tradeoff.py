r"""Privacy against utility: pTopoFL and FedAvg under end-to-end DP (issue 29).

Every private run spends a *target* total epsilon per client at ``delta``: both channels
composed by the accountant (:func:`~topofl_lib.privacy.split_budget`). pTopoFL's
descriptor is released once through a :class:`~topofl_lib.privacy.GaussianMechanism`
calibrated to ``descriptor_share`` of the target on its own, and its models get the noise
multiplier at which the composition of both channels is the target; FedAvg, which sends
no descriptor, gets the whole target for its models. The models are private by
client-level DP-FedAvg (:class:`~topofl_lib.privacy.ClientLevelDP`; the only option of
the paper protocol's lbfgs solver) on the Table 1 scenarios and the adversaries, and by
DP-SGD (:class:`~topofl_lib.privacy.SampleLevelDP`) or client-level DP on the deep
scenario. A private run's label is ``"<method>, ε = <target>"`` (:func:`private_label`);
every result table carries ``base`` (the method) and ``target_epsilon`` (``inf`` for a
non-private run), and the runner's ``epsilon`` columns hold what the accountant recorded.

* :func:`dp_table1_comparison`: final AUC of both Table 1 scenarios under the paper's
  protocol (:data:`~topofl_lib.studies.table1.TABLE1_VARIANTS`), private and not;
* :func:`dp_deep_comparison`: the deep Fashion-MNIST Dir(0.1) scenario of the deep
  pTopoFL notebook, through the run store;
* :func:`dp_detection`: do pTopoFL's clustering and trust still find the adversaries of
  the robustness study once the descriptors are noised?
* :func:`dp_cost`: private minus non-private, paired over seeds, per target epsilon.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .._validation import check_choice, check_int, check_real
from ..core.seeds import check_seeds
from ..deep.experiments import deep_variants
from ..privacy.budget import split_budget
from ..privacy.mechanisms import GaussianMechanism
from ..privacy.model_channel import DP_LEVELS, ClientLevelDP, SampleLevelDP
from ..runner import ComparisonResult, run_comparison
from ..runner.plan import build_scenario
from ..statistics import paired_differences
from .table1 import TABLE1_VARIANTS

__all__ = ["DP_DELTA", "DP_LEVELS", "DP_METHODS", "dp_cost", "dp_deep_comparison",
           "dp_detection", "dp_table1_comparison", "private_label", "run_budgets"]

#: The delta of every private run.
DP_DELTA = 1e-5
#: The methods compared under DP (pTopoFL and the method whose models it sends too).
DP_METHODS = ("pTopoFL", "FedAvg")


def private_label(method: str, epsilon: float) -> str:
    """The label of ``method``'s run at target ``epsilon``: ``"pTopoFL, ε = 3"``.

    Parameters
    ----------
    method : str
        The method's name.
    epsilon : float
        The target (``inf``: the non-private run, labelled ``method``).

    Returns
    -------
    str
    """
    return method if math.isinf(epsilon) else f"{method}, ε = {epsilon:g}"


def _check_epsilons(epsilons) -> list[float]:
    out = [check_real(e, "epsilon", low=0.0, low_open=True) for e in epsilons]
    if not out or len(set(out)) < len(out):
        raise ValueError(f"epsilons must be distinct targets, at least one, got {list(epsilons)}")
    return out


def run_budgets(epsilons, releases, *, methods: Sequence[str] = DP_METHODS,
                descriptor_share: float = 0.1, delta: float = DP_DELTA,
                accounting: str = "prv") -> dict[tuple[str, float], dict]:
    """Each method's split of each target (:func:`~topofl_lib.privacy.split_budget`).

    pTopoFL gives its descriptor ``descriptor_share`` of the target; every other method
    sends no descriptor.

    Parameters
    ----------
    epsilons : iterable of float
        Targets (> 0, distinct).
    releases : sequence of (float, int)
        The model releases of each client (:func:`~topofl_lib.privacy.split_budget`).
    methods : sequence of str, default=DP_METHODS
        The methods.
    descriptor_share : float, default=0.1
        pTopoFL's descriptor share, in [0, 1).
    delta : float, default=DP_DELTA
        The delta.
    accounting : {"prv", "rdp"}, default="prv"
        The accountant.

    Returns
    -------
    dict
        ``(method, epsilon) -> split``.
    """
    return {(m, e): split_budget(e, delta, releases=releases, accounting=accounting,
                                 descriptor_share=descriptor_share if m == "pTopoFL" else 0.0)
            for m in methods for e in _check_epsilons(epsilons)}


def _private_params(method: str, budget: dict, level: str, clip: float) -> dict:
    """The DP options of a private run of ``method`` at ``budget``."""
    option = ClientLevelDP if level == "client" else SampleLevelDP
    params = {"model_dp": option(noise_multiplier=budget["noise_multiplier"], clip=clip,
                                 delta=budget["delta"],
                                 **({} if level == "client" else {"accounting": "rdp"}))}
    if budget["descriptor_epsilon"] > 0:
        params["descriptor_mechanism"] = GaussianMechanism(budget["descriptor_epsilon"],
                                                           budget["delta"])
    return params


def _variants(base: dict, budgets: dict, level: str, clip: float) -> dict:
    """Every method's non-private run and one private run per target."""
    out = dict(base)
    for (method, eps), budget in budgets.items():
        name, params = base[method]
        out[private_label(method, eps)] = (name, {**params, **_private_params(
            method, budget, level, clip)})
    return out


def _annotate(result: ComparisonResult, budgets: dict) -> ComparisonResult:
    """``result`` with the ``base`` and ``target_epsilon`` of every run's label."""
    labels = {private_label(m, e): (m, e) for m, e in budgets}
    labels.update({m: (m, math.inf) for m, _ in budgets})

    def annotate(df):
        known = df["method"].map(labels)
        return df.assign(base=known.str[0], target_epsilon=known.str[1].astype(float))
    return ComparisonResult(annotate(result.curves), annotate(result.final), result.models,
                            result.diverged, result.schedule, result.devices,
                            result.machines)


def _check_common(clip, descriptor_share, methods) -> list[str]:
    check_real(clip, "clip", low=0.0, low_open=True)
    check_real(descriptor_share, "descriptor_share", low=0.0, high=1.0, high_open=True)
    methods = list(methods)
    unknown = [m for m in methods if m not in DP_METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be some of {list(DP_METHODS)}, got {methods}")
    return methods


def dp_table1_comparison(scenario: str, seeds: Iterable[int] = range(20),
                         epsilons: Sequence[float] = (1.0, 3.0, 10.0, 30.0, 100.0), *,
                         methods: Sequence[str] = DP_METHODS, n_rounds: int = 15,
                         clip: float = 1.0, descriptor_share: float = 0.1,
                         delta: float = DP_DELTA, cache_dir=None, n_workers: int = 1,
                         progress: bool = True) -> ComparisonResult:
    """Table 1's pTopoFL and FedAvg under the paper's protocol, private at each target.

    The paper code's solvers (lbfgs), its generator and evaluation; every client takes
    part in every round (client sampling rate 1), so a run's model channel is
    ``n_rounds`` Gaussian releases per client.

    Parameters
    ----------
    scenario : {"healthcare", "benchmark"}
        Table 1's scenario.
    seeds : iterable of int, default=range(20)
        Scenario realisations (and method seeds).
    epsilons : sequence of float
        Target total epsilons per client (> 0, distinct).
    methods : sequence of str, default=DP_METHODS
        Some of :data:`DP_METHODS`.
    n_rounds : int, default=15
        Rounds (Table 1: 15).
    clip : float, default=1.0
        The L2 bound of a client's update (> 0).
    descriptor_share : float, default=0.1
        pTopoFL's descriptor share of the target, in [0, 1).
    delta : float, default=DP_DELTA
        The delta.
    cache_dir : str or Path, optional
        The run store (:func:`~topofl_lib.runner.run_comparison`).
    n_workers : int, default=1
        Runs at once (:func:`~topofl_lib.runner.run_comparison`).
    progress : bool, default=True
        Show progress.

    Returns
    -------
    ComparisonResult
        With ``base`` and ``target_epsilon`` columns.
    """
    if scenario not in ("healthcare", "benchmark"):
        raise ValueError(f"Table 1 has the scenarios 'healthcare' and 'benchmark', got "
                         f"{scenario!r}")
    methods = _check_common(clip, descriptor_share, methods)
    check_int(n_rounds, "n_rounds", low=1)
    budgets = run_budgets(epsilons, [(1.0, n_rounds)], methods=methods,
                          descriptor_share=descriptor_share, delta=delta)
    base = {m: TABLE1_VARIANTS["paper"][m] for m in methods}
    res = run_comparison(scenario, check_seeds(seeds), n_rounds=n_rounds,
                         scenario_params={"protocol": "paper"},
                         variants=_variants(base, budgets, "client", clip),
                         cache_dir=cache_dir, n_workers=n_workers, progress=progress)
    return _annotate(res, budgets)


def dp_deep_comparison(dataset, seeds: Iterable[int] = range(3),
                       epsilons: Sequence[float] = (3.0,), *,
                       methods: Sequence[str] = DP_METHODS, alpha: float = 0.1,
                       n_clients: int = 10, n_rounds: int = 10, local_epochs: int = 1,
                       level: str = "sample", clip: float = 1.0,
                       descriptor_share: float = 0.1, delta: float = DP_DELTA,
                       architecture: str = "fmnist_cnn", cache_dir=None, n_workers: int = 1,
                       progress: bool = True) -> ComparisonResult:
    """The deep pTopoFL notebook's Dir(``alpha``) scenario, private at each target.

    The scenario and the methods' configurations are those of the deep pTopoFL notebook
    (:func:`~topofl_lib.deep.deep_variants`: SGD lr 0.01, momentum 0.9, batch 32; the
    same ``scenario_params``), so its non-private runs are the same runs and share a run
    store. ``level="sample"``: DP-SGD in local training; each client's steps and sampling
    rate follow from its size, which the Dirichlet split draws per seed, so the noise is
    calibrated per seed for the client that spends most. ``level="client"``: DP-FedAvg,
    one calibration for every seed.

    Parameters
    ----------
    dataset : str or ImageDataset
        The image dataset (:func:`~topofl_lib.deep.load_image_dataset`).
    seeds : iterable of int, default=range(3)
        Seeds.
    epsilons : sequence of float, default=(3.0,)
        Target total epsilons per client.
    methods : sequence of str, default=DP_METHODS
        Some of :data:`DP_METHODS`.
    alpha : float, default=0.1
        The Dirichlet concentration of the label split.
    n_clients, n_rounds, local_epochs : int
        The federation, its rounds and the local epochs per round.
    level : {"sample", "client"}, default="sample"
        The model channel's option.
    clip : float, default=1.0
        The L2 bound of each per-example gradient (``"sample"``) or client update.
    descriptor_share : float, default=0.1
        pTopoFL's descriptor share of the target.
    delta : float, default=DP_DELTA
        The delta.
    architecture : str, default="fmnist_cnn"
        The network (:func:`~topofl_lib.deep.deep_variants`; the deep notebook's).
    cache_dir : str or Path, optional
        The run store; every finished run is kept there and reused.
    n_workers : int, default=1
        Runs at once (:func:`~topofl_lib.runner.run_comparison`).
    progress : bool, default=True
        Show progress.

    Returns
    -------
    ComparisonResult
        With ``base`` and ``target_epsilon`` columns.
    """
    methods = _check_common(clip, descriptor_share, methods)
    check_choice(level, "level", DP_LEVELS)
    base = deep_variants(methods, architecture=architecture, local_epochs=local_epochs)
    params = {"dataset": dataset, "partition": "L", "param": alpha, "n_clients": n_clients,
              "test": "local"}
    kw = {"n_rounds": n_rounds, "scenario_params": params, "cache_dir": cache_dir,
          "n_workers": n_workers, "progress": progress}
    if level == "client":
        budgets = run_budgets(epsilons, [(1.0, n_rounds)], methods=methods,
                              descriptor_share=descriptor_share, delta=delta)
        return _annotate(run_comparison("image", check_seeds(seeds), variants=_variants(
            base, budgets, level, clip), **kw), budgets)
    batch = base[methods[0]][1]["batch_size"]
    parts = []
    for seed in check_seeds(seeds):
        sizes = [c.n_train for c in build_scenario("image", params, seed).clients]
        releases = [(SampleLevelDP.sample_rate(n, batch),
                     n_rounds * local_epochs * math.ceil(n / batch)) for n in sizes]
        budgets = run_budgets(epsilons, releases, methods=methods, accounting="rdp",
                              descriptor_share=descriptor_share, delta=delta)
        parts.append(_annotate(run_comparison("image", [seed], variants=_variants(
            base, budgets, level, clip), **kw), budgets))
    return ComparisonResult(pd.concat([p.curves for p in parts], ignore_index=True),
                            pd.concat([p.final for p in parts], ignore_index=True),
                            {k: v for p in parts for k, v in p.models.items()},
                            {k: v for p in parts for k, v in p.diverged.items()},
                            devices=sorted({d for p in parts for d in p.devices}),
                            machines=sorted({m for p in parts for m in p.machines}))


def dp_detection(seeds: Iterable[int] = range(10),
                 epsilons: Sequence[float] = (1.0, 3.0, 10.0, 30.0, 100.0), *,
                 n_clients: int = 10, n_adversarial: int = 3,
                 attack: str = "noisy_label_flip", n_rounds: int = 10, tau: float = 1.8,
                 clip: float = 1.0, descriptor_share: float = 0.1, delta: float = DP_DELTA,
                 cache_dir=None, n_workers: int = 1, progress: bool = True) -> pd.DataFrame:
    """Does private pTopoFL still find the adversaries of the robustness study?

    ``n_adversarial`` of ``n_clients`` hospitals of our healthcare generator run
    ``attack`` (default: flipped labels and noised features, the attack whose clients
    pTopoFL's clustering isolates in the clear; robustness notebook); pTopoFL uses the
    robustness study's ``tau``. Each private run spends the target as in
    :func:`dp_table1_comparison` (client-level DP-FedAvg, every client every round).

    Parameters
    ----------
    seeds : iterable of int, default=range(10)
        Scenario realisations.
    epsilons : sequence of float
        Target total epsilons per client.
    n_clients, n_adversarial : int
        Hospitals, and how many of them attack.
    attack : str, default="noisy_label_flip"
        The adversaries' attack.
    n_rounds : int, default=10
        Rounds (the robustness study's).
    tau : float, default=1.8
        pTopoFL's Eq. 8 threshold.
    clip, descriptor_share, delta
        As in :func:`dp_table1_comparison`.
    cache_dir : str or Path, optional
        The run store.
    n_workers : int, default=1
        Runs at once.
    progress : bool, default=True
        Show progress.

    Returns
    -------
    pandas.DataFrame
        One row per (target, seed), non-private runs with target ``inf``:
        ``target_epsilon``, ``seed``, the accounted ``epsilon`` and ``descriptor_epsilon``
        (the mechanism's), ``flagged`` (fraction of the adversaries whose Eq. 8 trust is
        below 1), ``false_alarms`` (the same for honest clients), ``isolated`` (fraction
        of the adversaries in a cluster without an honest client), ``adversarial_weight``
        (their total share of the Eq. 7 consensus, the weights the aggregation used),
        ``adversarial_share`` (their share of the clients: the weight they would have
        with uniform weights) and ``auc``.
    """
    check_int(n_clients, "n_clients", low=3)
    check_int(n_adversarial, "n_adversarial", low=1, high=n_clients - 1)
    _check_common(clip, descriptor_share, ["pTopoFL"])
    budgets = run_budgets(epsilons, [(1.0, n_rounds)], methods=["pTopoFL"],
                          descriptor_share=descriptor_share, delta=delta)
    base = {"pTopoFL": ("pTopoFL", {"tau": tau})}
    res = _annotate(run_comparison(
        "healthcare", check_seeds(seeds), n_rounds=n_rounds,
        scenario_params={"n_clients": n_clients, "n_adversarial": n_adversarial,
                         "attack": attack},
        variants=_variants(base, budgets, "client", clip), keep_models=True,
        cache_dir=cache_dir, n_workers=n_workers, progress=progress), budgets)
    rows = []
    for r in res.final.itertuples(index=False):
        est = res.models[(r.method, r.seed)]
        adv = ~est.honest_
        mixed = {j for j in np.unique(est.labels_) if est.honest_[est.labels_ == j].any()}
        budget = budgets.get(("pTopoFL", r.target_epsilon), {})
        rows.append({"target_epsilon": r.target_epsilon, "seed": r.seed,
                     "epsilon": getattr(r, "epsilon", math.nan),
                     "descriptor_epsilon": budget.get("descriptor_epsilon", math.inf),
                     "flagged": float(np.mean(est.trust_[adv] < 1)),
                     "false_alarms": float(np.mean(est.trust_[~adv] < 1)),
                     "isolated": float(np.mean([est.labels_[k] not in mixed
                                                for k in np.flatnonzero(adv)])),
                     "adversarial_weight": float(est.consensus_weights_[adv].sum()),
                     "adversarial_share": float(adv.mean()), "auc": r.auc})
    return pd.DataFrame(rows).sort_values(["target_epsilon", "seed"], ignore_index=True)


def dp_cost(final: pd.DataFrame, metric: str = "auc") -> pd.DataFrame:
    """Private minus non-private ``metric``, paired over seeds, per target.

    Parameters
    ----------
    final : pandas.DataFrame
        The ``final`` table of :func:`dp_table1_comparison` or :func:`dp_deep_comparison`
        (several scenarios may be concatenated): ``scenario``, ``method``, ``seed``,
        ``base``, ``target_epsilon``, ``epsilon`` and ``metric``.
    metric : {"auc", "accuracy"}, default="auc"
        The metric.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(scenario, base, target_epsilon)``: ``epsilon`` (the accountant's
        total, largest over the seeds), ``private`` and ``non_private`` (means), ``cost``
        (mean of the paired private minus non-private), its 95% t-interval ``ci_low``,
        ``ci_high``, ``n_seeds`` and the Wilcoxon ``p_wilcoxon``.
    """
    rows = []
    for (scenario, base), g in final.groupby(["scenario", "base"], sort=False):
        paired = paired_differences(g, base, metric)  # non-private minus each private
        reference = g[g["method"] == base][metric].mean()
        for label, p in paired.iterrows():
            run = g[g["method"] == label]
            rows.append({"scenario": scenario, "base": base,
                         "target_epsilon": run["target_epsilon"].iloc[0],
                         "epsilon": run["epsilon"].max(), "private": run[metric].mean(),
                         "non_private": reference, "cost": -p["mean_diff"],
                         "ci_low": -p["ci_high"], "ci_high": -p["ci_low"],
                         "n_seeds": p["n_seeds"], "p_wilcoxon": p["p_wilcoxon"]})
    return (pd.DataFrame(rows).sort_values(["scenario", "base", "target_epsilon"])
            .set_index(["scenario", "base", "target_epsilon"]))
