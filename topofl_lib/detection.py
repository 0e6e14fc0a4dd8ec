r"""Detection report: does a descriptor flag the attackers, and find the hospital types?

pTopoFL flags client ``k`` when its Eq. 8 z-score exceeds ``tau``. For a descriptor, a
scenario and a set of seeds, :func:`detection_runs` fits pTopoFL once per seed and keeps,
for every client, its final z-score (the one the last round's trust used), whether it
is adversarial, its latent type and its cluster. From that table:

* :func:`detection_rates`: true- and false-positive rates of the rule ``z > tau``,
  pooled over seeds (adversaries flagged / adversaries; honest flagged / honest);
* :func:`roc_table`: the ROC curve of the rule as ``tau`` sweeps every value, and its
  AUC (the probability that an adversary's z exceeds an honest client's; ties count
  1/2), pooled over seeds (z-scores are standardised within each run, so they pool);
* :func:`cluster_recovery`: per seed, the adjusted Rand index between the clusters and
  the generator's latent hospital types, over all clients and over honest clients only
  (NaN where the scenario has a single type).

* :func:`per_seed_detection`: the same rates and the ROC AUC within each seed (the
  per-seed values the claim rows average).

:func:`topofl_lib.studies.label_aware.label_aware_comparison` runs pTopoFL with each descriptor
beside FedAvg and the robust aggregators on the label-flip sweep, under our data protocol
and the paper's.

The ROC figure is :func:`topofl_lib.viz.roc_figure` (the ``viz`` extra).

A limit of the z-score rule worth knowing before reading any rate: if a fraction
:math:`\varepsilon` of the clients sits at one distance from everybody else and the rest
are identical, the adversaries' z-score is exactly :math:`\sqrt{(1-\varepsilon)/\varepsilon}`
(:func:`separated_group_z`): 2.0 at 20% (so ``z > 2`` never fires), 1.73 at 2 of 8
clients, 1.53 at 30%, 1.0 at 50%. However well a descriptor separates the attackers,
the paper's thresholds (2.0, 1.8) cannot flag 30% of them; the ROC curve shows what
another threshold would do.

Scenarios (:func:`detection_scenarios`) are functions ``seed -> FederatedScenario``:
the healthcare scenario with label-flipping, noisy-label-flipping or *partially*
flipping hospitals (:func:`partial_flip`: an adversary flips a random fraction of its
training labels, the rest stay clean).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ._validation import check_choice, check_int, check_random_state, check_real
from .core.containers import FederatedScenario
from .core.seeds import check_seeds
from .data.scenarios import make_continual, make_healthcare
from .federated import PTopoFL
from .federated.client_descriptors import DESCRIPTORS

__all__ = [
    "DETECTION_SETTINGS",
    "DetectionScenario",
    "cluster_recovery",
    "detection_rates",
    "detection_runs",
    "detection_scenarios",
    "drift_runs",
    "partial_flip",
    "per_seed_detection",
    "roc_table",
    "separated_group_z",
]

COLUMNS = ("scenario", "descriptor", "seed", "client", "adversarial", "group", "cluster",
           "z", "trust", "final_auc")


def separated_group_z(n_clients: int, n_group: int) -> float:
    r"""Eq. 8 z-score of ``n_group`` identical clients separated from ``n_clients - n_group``
    identical others (population standard deviation).

    :math:`\operatorname{sign}(K - 2a)\sqrt{(1-\varepsilon)/\varepsilon}`, whatever the
    separation: a minority group's z is positive, a majority's negative. With exactly
    half the clients in each group the two are symmetric and every z is 0 (in exact
    arithmetic; Eq. 8 cannot tell the groups apart).

    Parameters
    ----------
    n_clients : int
        Number of clients ``K`` (at least 2).
    n_group : int
        Size ``a`` of the group (1 to ``K - 1``).

    Returns
    -------
    float
        The group's z-score.
    """
    K = check_int(n_clients, "n_clients", low=2)
    a = check_int(n_group, "n_group", low=1, high=K - 1)
    eps = a / K
    return float(np.sign(K - 2 * a) * np.sqrt((1 - eps) / eps))


def partial_flip(scenario: FederatedScenario, fraction: float, random_state=None
                 ) -> FederatedScenario:
    """The scenario with each adversary's training labels flipped on ``fraction`` of its
    records only (the others keep their clean labels).

    ``scenario`` must come from a label-flipping generator (its adversaries' training
    labels fully flipped, as :func:`~topofl_lib.data.make_healthcare` with
    ``attack="label_flip"`` makes them): the full flip is undone and a random
    ``fraction`` of the records, at least one of each class left, is flipped.

    Parameters
    ----------
    scenario : FederatedScenario
        A label-flipping scenario.
    fraction : float
        Fraction of each adversary's records that keep a flipped label, in [0, 1].
    random_state : None, int or Generator
        Seeds which records are flipped.

    Returns
    -------
    FederatedScenario
        A copy, with ``flip_fraction`` added to ``meta``.
    """
    if not isinstance(scenario, FederatedScenario):
        raise TypeError(f"scenario must be a FederatedScenario, got {type(scenario).__name__}")
    check_real(fraction, "fraction", low=0.0, high=1.0)
    rng = check_random_state(random_state)
    clients = []
    for c in scenario.clients:
        if c.adversarial:
            if c.attack != "label_flip":
                raise ValueError(f"partial_flip needs attack='label_flip' adversaries, got "
                                 f"{c.attack!r}")
            y = 1 - c.y_train
            idx = rng.choice(y.size, int(round(fraction * y.size)), replace=False)
            y[idx] = 1 - y[idx]
            if y.min() == y.max():  # the flips took a whole class: give one record back
                y[idx[0]] ^= 1
            c = dataclasses.replace(c, y_train=y)
        clients.append(c)
    return dataclasses.replace(scenario, clients=clients,
                               meta={**scenario.meta, "flip_fraction": fraction})


#: The settings of a detection scenario, carried as columns by :func:`detection_runs`,
#: :func:`per_seed_detection` and :func:`cluster_recovery`.
DETECTION_SETTINGS = ("attack", "protocol", "rate", "flip_fraction")


@dataclass(frozen=True)
class DetectionScenario:
    """A healthcare scenario with adversarial hospitals: ``seed -> FederatedScenario``.

    Parameters
    ----------
    attack : str
        Attack of :func:`~topofl_lib.data.make_healthcare`.
    rate : float
        Fraction of adversarial hospitals (``round(rate * n_clients)`` of them).
    protocol : {"ours", "paper"}, default="ours"
        Data protocol of :func:`~topofl_lib.data.make_healthcare`.
    flip_fraction : float or None, default=None
        A partial flip of this fraction of each adversary's labels (:func:`partial_flip`).
    n_clients : int, default=10
        Number of hospitals.
    """

    attack: str
    rate: float
    protocol: str = "ours"
    flip_fraction: float | None = None
    n_clients: int = 10

    def __call__(self, seed: int) -> FederatedScenario:
        n_adv = int(round(self.rate * self.n_clients))
        scen = make_healthcare(n_clients=self.n_clients, n_adversarial=n_adv,
                               attack=self.attack, protocol=self.protocol, random_state=seed)
        return scen if self.flip_fraction is None else partial_flip(scen, self.flip_fraction,
                                                                    seed)

    @property
    def label(self) -> str:
        """``"<attack> <rate>"``, ``"label_flip paper <rate>"`` or ``"partial<f> <rate>"``."""
        if self.flip_fraction is not None:
            return f"partial{self.flip_fraction:g} {self.rate:g}"
        paper = " paper" if self.protocol == "paper" else ""
        return f"{self.attack}{paper} {self.rate:g}"

    @property
    def settings(self) -> dict:
        """The :data:`DETECTION_SETTINGS` of this scenario (NaN: no partial flip)."""
        return {"attack": self.attack, "protocol": self.protocol, "rate": self.rate,
                "flip_fraction": np.nan if self.flip_fraction is None else self.flip_fraction}


def detection_scenarios(
    rates: Iterable[float] = (0.2, 0.3, 0.5),
    attacks: Iterable[str] = ("label_flip", "noisy_label_flip"),
    partial_fractions: Iterable[float] = (),
    n_clients: int = 10,
    protocols: Iterable[str] = ("ours",),
) -> dict[str, DetectionScenario]:
    """Healthcare scenarios keyed by their label (:attr:`DetectionScenario.label`).

    Under the paper's data protocol (``protocols`` containing ``"paper"``,
    :func:`~topofl_lib.data.paper_protocol.paper_healthcare`) the adversaries flip 30% of
    all their labels, the attack of the paper's code (the other attacks and the partial
    flips are scenarios of our protocol only). Each scenario's settings become columns of
    :func:`detection_runs` (:data:`DETECTION_SETTINGS`).

    Parameters
    ----------
    rates : iterable of float, default=(0.2, 0.3, 0.5)
        Fractions of adversarial hospitals, each in [0, 0.5].
    attacks : iterable of str, default=("label_flip", "noisy_label_flip")
        Attacks of :func:`~topofl_lib.data.make_healthcare`.
    partial_fractions : iterable of float, default=()
        Partial-flip fractions (see :func:`partial_flip`).
    n_clients : int, default=10
        Number of hospitals.
    protocols : iterable of {"ours", "paper"}, default=("ours",)
        Data protocols of :func:`~topofl_lib.data.make_healthcare`.

    Returns
    -------
    dict of str to DetectionScenario
        Scenario label -> ``seed -> FederatedScenario``.
    """
    check_int(n_clients, "n_clients", low=2)
    protocols = list(protocols)
    for protocol in protocols:
        check_choice(protocol, "protocol", ("ours", "paper"))
    rates, attacks, partial_fractions = list(rates), list(attacks), list(partial_fractions)
    for rate in rates:
        check_real(rate, "rate", low=0.0, high=0.5)
    made = []
    for rate in rates:
        if "ours" in protocols:
            made += [DetectionScenario(a, rate, n_clients=n_clients) for a in attacks]
            made += [DetectionScenario("label_flip", rate, flip_fraction=f, n_clients=n_clients)
                     for f in partial_fractions]
        if "paper" in protocols:
            made.append(DetectionScenario("label_flip", rate, "paper", n_clients=n_clients))
    return {scen.label: scen for scen in made}


def _settings_of(make) -> dict:
    """The setting columns of a scenario factory (none for a plain function)."""
    return dict(getattr(make, "settings", {}))


def _carried(group: pd.DataFrame) -> dict:
    """The setting columns of a group of runs (the same on every row of the group)."""
    return {c: group[c].iloc[0] for c in DETECTION_SETTINGS if c in group}


def detection_runs(
    scenarios: dict[str, Callable[[int], FederatedScenario]],
    seeds: Iterable[int],
    descriptors: dict | None = None,
    n_rounds: int = 10,
    tau: float = 1.8,
    params: dict | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Fit pTopoFL with each descriptor on each scenario and seed; one row per client.

    Parameters
    ----------
    scenarios : dict
        ``{name: seed -> FederatedScenario}`` (e.g. :func:`detection_scenarios`).
    seeds : iterable of int
        Each seeds the scenario and pTopoFL.
    descriptors : dict, optional
        ``{label: descriptor option of PTopoFL}``; default the paper's and the two
        label-aware ones.
    n_rounds : int
    tau : float
        pTopoFL's ``tau`` (the trust it applies during training; the rates of other
        thresholds come from :func:`detection_rates` and :func:`roc_table`).
    params : dict, optional
        Further PTopoFL parameters.
    progress : bool

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`, then the scenarios' settings (:data:`DETECTION_SETTINGS`,
        where the factories carry them): ``z`` and ``trust`` from the last server step,
        ``cluster`` the final cluster, ``final_auc`` the run's final mean honest AUC.
    """
    if not isinstance(scenarios, dict) or not scenarios:
        raise ValueError("scenarios must be a non-empty dict {name: seed -> scenario}")
    seeds = check_seeds(seeds)
    check_int(n_rounds, "n_rounds", low=1)
    check_real(tau, "tau")
    descriptors = descriptors or {name: name for name in DESCRIPTORS}
    params = dict(params or {})
    rows, settings = [], {}
    bar = tqdm(total=len(scenarios) * len(seeds) * len(descriptors), desc="detection",
               disable=not progress)
    for name, make in scenarios.items():
        settings[name] = _settings_of(make)
        for seed in seeds:
            scen = make(seed)
            adv = ~scen.honest
            groups = np.array([c.group for c in scen.clients])
            for label, option in descriptors.items():
                est = PTopoFL(n_rounds=n_rounds, tau=tau, descriptor=option,
                              random_state=seed, **params).fit(scen)
                for k in range(len(scen.clients)):
                    rows.append((name, label, seed, k, bool(adv[k]), int(groups[k]),
                                 int(est.labels_[k]), float(est.z_scores_[k]),
                                 float(est.trust_[k]), float(est.history_["auc"][-1])))
                bar.update()
    bar.close()
    runs = pd.DataFrame(rows, columns=list(COLUMNS))
    columns = [c for c in DETECTION_SETTINGS if any(c in v for v in settings.values())]
    for c in columns:
        runs[c] = runs["scenario"].map({n: v.get(c, np.nan) for n, v in settings.items()})
    return runs


def _groups(runs: pd.DataFrame, columns=COLUMNS):
    if not isinstance(runs, pd.DataFrame):
        raise TypeError(f"runs must be a pandas DataFrame, got {type(runs).__name__}")
    missing = set(columns) - set(runs.columns)
    if missing:
        raise ValueError(f"runs lacks columns {sorted(missing)}; use detection_runs "
                         "(or drift_runs)")
    return runs.groupby(["scenario", "descriptor"], sort=False)


def detection_rates(runs: pd.DataFrame, tau: float = 1.8) -> pd.DataFrame:
    """TPR and FPR of ``z > tau`` per scenario and descriptor (pooled over seeds).

    Columns ``tpr``, ``fpr``, ``n_adversarial``, ``n_honest``, ``seeds_all_flagged``
    (seeds in which every adversary is flagged) and ``seeds_any_false`` (seeds with at
    least one honest client flagged). TPR is NaN without adversaries.

    Parameters
    ----------
    runs : pandas.DataFrame
        Per-client rows from :func:`detection_runs`.
    tau : float, default=1.8
        The trust threshold.

    Returns
    -------
    pandas.DataFrame
        One row per (scenario, descriptor), with ``tau`` and the columns above.
    """
    check_real(tau, "tau")
    rows = []
    for (scen, desc), g in _groups(runs):
        flagged = g["z"] > tau
        adv = g["adversarial"]
        per_seed = g.assign(flag=flagged).groupby("seed")
        rows.append({
            "scenario": scen, "descriptor": desc, "tau": tau,
            "tpr": flagged[adv].mean() if adv.any() else np.nan,
            "fpr": flagged[~adv].mean(),
            "n_adversarial": int(adv.sum()), "n_honest": int((~adv).sum()),
            "seeds_all_flagged": int(per_seed.apply(
                lambda s: bool(s["adversarial"].any() and s["flag"][s["adversarial"]].all())
            ).sum()),
            "seeds_any_false": int(per_seed.apply(
                lambda s: bool(s["flag"][~s["adversarial"]].any())).sum()),
        })
    return pd.DataFrame(rows)


def _roc(z: np.ndarray, adv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """ROC of ``z > tau`` over every tau: (tau, fpr, tpr, auc), tau decreasing."""
    taus = np.r_[np.inf, np.unique(z)[::-1], -np.inf]
    za, zh = z[adv], z[~adv]
    tpr = np.array([(za > t).mean() for t in taus])
    fpr = np.array([(zh > t).mean() for t in taus])
    greater = (za[:, None] > zh[None, :]).mean()
    ties = (za[:, None] == zh[None, :]).mean()
    return taus, fpr, tpr, float(greater + 0.5 * ties)


def roc_table(runs: pd.DataFrame, score: str = "z", positive: str = "adversarial"
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ROC curves of ``score > tau`` and their AUCs, per scenario and descriptor.

    Returns ``(curves, aucs)``: ``curves`` has columns scenario, descriptor, tau, fpr,
    tpr (tau from +inf down to -inf, so the curve runs from (0, 0) to (1, 1)); ``aucs``
    has scenario, descriptor, auc and ``tpr_at_fpr05`` (the best TPR among thresholds
    with FPR <= 0.05), pooled over seeds. Scenarios without positives are skipped.
    ``score="drift", positive="shifted"`` reads :func:`drift_runs`.

    Parameters
    ----------
    runs : pandas.DataFrame
        Per-client rows (:func:`detection_runs` or :func:`drift_runs`).
    score : str, default="z"
        The score column.
    positive : str, default="adversarial"
        The boolean column of the positives.

    Returns
    -------
    curves : pandas.DataFrame
        See above.
    aucs : pandas.DataFrame
        See above.
    """
    curves, aucs = [], []
    for (scen, desc), g in _groups(runs, ("scenario", "descriptor", score, positive)):
        adv = g[positive].to_numpy(dtype=bool)
        if not adv.any() or adv.all():
            continue
        taus, fpr, tpr, auc = _roc(g[score].to_numpy(dtype=np.float64), adv)
        curves.append(pd.DataFrame({"scenario": scen, "descriptor": desc, "tau": taus,
                                    "fpr": fpr, "tpr": tpr}))
        aucs.append({"scenario": scen, "descriptor": desc, "auc": auc,
                     "tpr_at_fpr05": float(tpr[fpr <= 0.05].max())})
    if not curves:
        raise ValueError("no scenario in runs has both adversarial and honest clients")
    return pd.concat(curves, ignore_index=True), pd.DataFrame(aucs)


def drift_runs(
    seeds: Iterable[int],
    descriptors: dict | None = None,
    n_rounds: int = 20,
    scenario_params: dict | None = None,
    params: dict | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Drift detection on the continual scenario, one row per client and run.

    pTopoFL (no re-clustering) is fitted on :func:`~topofl_lib.data.make_continual` with
    each descriptor; a client's ``drift`` score is the largest drift statistic
    (:class:`~topofl_lib.federated.PTopoFL`'s ``drift_statistic_``) from the shift round
    on, as :func:`~topofl_lib.studies.continual.continual_experiment` judges detection.
    Columns: scenario (``"continual"``), descriptor, seed, client, shifted, drift,
    final_auc. ROC: ``roc_table(runs, "drift", "shifted")``.

    Parameters
    ----------
    seeds : iterable of int
        The seeds.
    descriptors : dict, optional
        Label -> PTopoFL ``descriptor`` option; default every name of
        :data:`~topofl_lib.federated.client_descriptors.DESCRIPTORS`.
    n_rounds : int, default=20
        Communication rounds (at least 2).
    scenario_params : dict, optional
        Further :func:`~topofl_lib.data.make_continual` parameters.
    params : dict, optional
        Further :class:`~topofl_lib.federated.PTopoFL` parameters.
    progress : bool, default=True
        Show a tqdm bar.

    Returns
    -------
    pandas.DataFrame
        One row per (seed, descriptor, client), with the columns above.
    """
    seeds = check_seeds(seeds)
    check_int(n_rounds, "n_rounds", low=2)
    descriptors = descriptors or {name: name for name in DESCRIPTORS}
    rows = []
    bar = tqdm(total=len(seeds) * len(descriptors), desc="drift", disable=not progress)
    for seed in seeds:
        scen = make_continual(n_rounds=n_rounds, random_state=seed, **(scenario_params or {}))
        shifted = np.isin(np.arange(len(scen.clients)), scen.meta["shifted"])
        start = scen.meta["shift_round"]
        for label, option in descriptors.items():
            est = PTopoFL(n_rounds=n_rounds, descriptor=option, random_state=seed,
                          **(params or {})).fit(scen)
            stat = est.drift_statistic_[start:]
            score = np.where(np.all(np.isnan(stat), axis=0), np.nan,
                             np.nanmax(np.nan_to_num(stat, nan=-np.inf), axis=0))
            for k in range(len(scen.clients)):
                rows.append(("continual", label, seed, k, bool(shifted[k]), float(score[k]),
                             float(est.history_["auc"][-1])))
            bar.update()
    bar.close()
    return pd.DataFrame(rows, columns=["scenario", "descriptor", "seed", "client", "shifted",
                                       "drift", "final_auc"])


def cluster_recovery(runs: pd.DataFrame) -> pd.DataFrame:
    """Adjusted Rand index of the clusters against the latent types, per run.

    Columns scenario, descriptor, seed, ``ari`` (all clients), ``ari_honest`` (honest
    clients only); NaN where the clients have a single latent type.
    """
    from sklearn.metrics import adjusted_rand_score

    rows = []
    for (scen, desc, seed), g in runs.groupby(["scenario", "descriptor", "seed"], sort=False):
        h = ~g["adversarial"]

        def ari(part):
            if part["group"].nunique() < 2:
                return np.nan
            return adjusted_rand_score(part["group"], part["cluster"])

        rows.append({"scenario": scen, "descriptor": desc, "seed": seed, **_carried(g),
                     "ari": ari(g), "ari_honest": ari(g[h])})
    return pd.DataFrame(rows)


def per_seed_detection(runs: pd.DataFrame, taus: Iterable[float] = (1.8, 1.0),
                       score: str = "z", positive: str = "adversarial") -> pd.DataFrame:
    """Per scenario, descriptor and seed: TPR and FPR of ``score > tau`` and the ROC AUC.

    Columns scenario, descriptor, seed, ``tpr@<tau>`` / ``fpr@<tau>`` for each tau
    (``<tau>`` written with ``:g``), ``auc`` (the seed's ROC AUC, ties 1/2; NaN without
    positives or without negatives). ``score="drift", positive="shifted"`` reads
    :func:`drift_runs`.

    Parameters
    ----------
    runs : pandas.DataFrame
        :func:`detection_runs` (or :func:`drift_runs`): one row per client and seed with
        columns scenario, descriptor, seed, ``score`` and ``positive``.
    taus : iterable of float, default=(1.8, 1.0)
        Thresholds of the ``score > tau`` rule.
    score : str, default="z"
        Column of the score.
    positive : str, default="adversarial"
        Boolean column of the true positives.

    Returns
    -------
    pandas.DataFrame
        One row per (scenario, descriptor, seed) with the rates per tau and ``auc``.
    """
    taus = [check_real(t, "tau") for t in taus]
    rows = []
    groups = _groups(runs, ("scenario", "descriptor", "seed", score, positive))
    for (scen, desc), g in groups:
        for seed, s in g.groupby("seed", sort=True):
            z = s[score].to_numpy(dtype=np.float64)
            pos = s[positive].to_numpy(dtype=bool)
            row = {"scenario": scen, "descriptor": desc, "seed": seed, **_carried(s)}
            for t in taus:
                row[f"tpr@{t:g}"] = (z[pos] > t).mean() if pos.any() else np.nan
                row[f"fpr@{t:g}"] = (z[~pos] > t).mean() if (~pos).any() else np.nan
            row["auc"] = _roc(z, pos)[3] if pos.any() and not pos.all() else np.nan
            rows.append(row)
    return pd.DataFrame(rows)

