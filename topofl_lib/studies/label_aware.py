"""Label-aware descriptors: the AUC comparison driver and the ``topofl.cc.*`` claim ids.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from .._validation import check_choice, check_int, check_real
from ..claim_keys import DESCRIPTOR_KEYS, METHOD_KEYS, rate_key
from ..core.containers import ATTACKS
from ..data.scenarios import PROTOCOLS
from ..federated.client_descriptors import PTOPOFL_LABELS
from ..results import load_paper_claims
from ..runner import run_comparison
from ..statistics import paired_differences, summarise

__all__ = [
    "deep_ma_values", "detection_prefix", "LABEL_AWARE_ATTACK_KEYS", "LABEL_AWARE_BASELINES",
    "label_aware_claim_values", "label_aware_comparison",
]

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
    the robustness sweep's attack) and :func:`~topofl_lib.runner.run_comparison`
    runs pTopoFL (tau ``tau``) with each descriptor option, labelled
    :data:`PTOPOFL_LABELS`, and the ``baselines``. Returns the runs' ``final`` table
    with ``attack``, ``protocol`` and ``rate`` columns; pair methods within an (attack,
    protocol, rate) with :func:`~topofl_lib.statistics.paired_differences`. A rate with
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

#: Claim-id prefix of the label-aware notebook's attacks (the label flip has none).
LABEL_AWARE_ATTACK_KEYS = {"label_flip": "", "noisy_label_flip": "noisy."}

def detection_prefix(settings) -> str | None:
    """The claim-id prefix of a detection scenario, from its setting columns.

    Parameters
    ----------
    settings : Mapping or pandas.Series
        A row with :data:`topofl_lib.detection.DETECTION_SETTINGS` (``attack``,
        ``protocol``, ``flip_fraction``).

    Returns
    -------
    str or None
        ``""`` for our protocol's label flip, ``"noisy."`` for the noisy flip,
        ``"paper."`` for the paper protocol's flip, ``"partial<f%>."`` for a partial
        flip; ``None`` for a scenario without ids.
    """
    fraction = settings.get("flip_fraction", np.nan)
    if fraction is not None and not pd.isna(fraction):
        return f"partial{rate_key(fraction)}."
    if settings.get("protocol", "ours") == "paper":
        return "paper." if settings.get("attack") == "label_flip" else None
    return LABEL_AWARE_ATTACK_KEYS.get(settings.get("attack"))


def label_aware_claim_values(detection: pd.DataFrame | None = None,
                             recovery: pd.DataFrame | None = None,
                             final: pd.DataFrame | None = None,
                             drift: pd.DataFrame | None = None,
                             descinv: pd.DataFrame | None = None,
                             mia: pd.DataFrame | None = None,
                             dp: pd.DataFrame | None = None,
                             deep: pd.DataFrame | None = None) -> dict[str, np.ndarray]:
    """``topofl.cc.*`` ids from the label-aware notebook's tables (per-seed values).

    Parameters
    ----------
    detection : DataFrame, optional
        :func:`~topofl_lib.detection.per_seed_detection` of detection runs (with the
        setting columns attack, protocol, rate, flip_fraction):
        ``topofl.cc.detect.<rate%>.<desc>.tpr`` / ``.fpr``
        (tau 1.8), ``.tpr.tau1`` / ``.fpr.tau1`` (tau 1.0), ``.rocauc`` for the label
        flip, ``topofl.cc.detect.noisy.<rate%>.<desc>.*`` for the noisy label flip,
        ``topofl.cc.detect.paper.<rate%>.<desc>.*`` for the paper protocol's flip and
        ``topofl.cc.detect.partial30.<rate%>.<desc>.*`` for a 30% partial flip
        (:func:`detection_prefix`, from the setting columns); other scenarios have no id.
    recovery : DataFrame, optional
        :func:`~topofl_lib.detection.cluster_recovery` of the same runs:
        ``topofl.cc.ari.<rate%>.<desc>`` (ARI) and ``.ari90`` (ARI >= 0.9, 0/1).
    final : DataFrame, optional
        :func:`~topofl_lib.studies.label_aware.label_aware_comparison`:
        ``topofl.cc.auc.<protocol>.<rate%>.<method>`` for the label flip (every row
        when there is no ``attack`` column), ``topofl.cc.auc.noisy.<protocol>.<rate%>.
        <method>`` for the noisy label flip.
    drift : DataFrame, optional
        ``per_seed_detection(drift_runs(...), (), "drift", "shifted")``:
        ``topofl.cc.drift.<desc>.rocauc``.
    descinv, mia, dp : DataFrame, optional
        The privacy runners' tables (healthcare, with a ``descriptor`` column):
        ``topofl.cc.privacy.<desc>.descinv.recovered`` / ``.descinv.relerr``,
        ``.mia.auc`` (descriptor channel), ``.dp.eps1.auc`` / ``.dp.nodp.auc``.
    deep : DataFrame, optional
        ``final`` of the deep Fashion-MNIST Dir(0.1) runs (``method``, ``seed``,
        ``accuracy``): ``topofl.cc.deep.fmnist01.<method>.acc``.

    Returns
    -------
    dict
        ``{claim id: per-seed values}``. Values are averaged within a seed (over
        clients), one per seed in seed order; NaN seeds (no ARI with one latent type)
        are left out. Only ids present in the claims table are returned; an empty
        selection is dropped.
    """
    known = set(load_paper_claims().index)
    out: dict[str, np.ndarray] = {}

    def put(cid, df, column, **where):  # mean within each seed (clients), seeds in order
        if cid not in known:
            return
        m = np.ones(len(df), dtype=bool)
        for key, value in where.items():
            m &= (df[key] == value).to_numpy()
        v = df[m].groupby("seed", sort=True)[column].mean().to_numpy(dtype=np.float64)
        v = v[~np.isnan(v)]
        if v.size:
            out[cid] = v

    for desc, dkey in DESCRIPTOR_KEYS.items():
        if detection is not None:
            for scen, g in detection.groupby("scenario", sort=False):
                prefix = detection_prefix(g.iloc[0])
                if prefix is None:
                    continue
                base = f"topofl.cc.detect.{prefix}{rate_key(g['rate'].iloc[0])}.{dkey}"
                for column, suffix in (("tpr@1.8", "tpr"), ("fpr@1.8", "fpr"),
                                       ("tpr@1", "tpr.tau1"), ("fpr@1", "fpr.tau1"),
                                       ("auc", "rocauc")):
                    if column in detection:
                        put(f"{base}.{suffix}", detection, column, scenario=scen,
                            descriptor=desc)
        if recovery is not None:
            for scen, g in recovery.groupby("scenario", sort=False):
                if detection_prefix(g.iloc[0]) != "":  # the label flip of our protocol
                    continue
                base = f"topofl.cc.ari.{rate_key(g['rate'].iloc[0])}.{dkey}"
                put(base, recovery, "ari", scenario=scen, descriptor=desc)
                put(f"{base}.ari90", recovery.assign(
                    ari90=(recovery["ari"] >= 0.9).astype(float).where(
                        recovery["ari"].notna())), "ari90", scenario=scen, descriptor=desc)
        if drift is not None:
            put(f"topofl.cc.drift.{dkey}.rocauc", drift, "auc", descriptor=desc)
        base = f"topofl.cc.privacy.{dkey}"
        if descinv is not None:
            put(f"{base}.descinv.recovered", descinv, "recovered", scenario="healthcare",
                descriptor=desc, attack="descriptor_inversion")
            put(f"{base}.descinv.relerr", descinv, "relative_error", scenario="healthcare",
                descriptor=desc, attack="descriptor_inversion")
        if mia is not None:
            put(f"{base}.mia.auc", mia, "auc", scenario="healthcare", descriptor=desc,
                channel="descriptor", n=100)
        if dp is not None:
            put(f"{base}.dp.eps1.auc", dp, "auc", scenario="healthcare", descriptor=desc,
                method="pTopoFL", epsilon=1.0)
            put(f"{base}.dp.nodp.auc", dp, "auc", scenario="healthcare", descriptor=desc,
                method="pTopoFL", epsilon=np.inf)
    if deep is not None:
        for method in deep["method"].unique():
            key = METHOD_KEYS.get(method)
            if key:
                put(f"topofl.cc.deep.fmnist01.{key}.acc", deep, "accuracy", method=method)
    if final is not None:
        if "attack" not in final:  # a table of label-flip runs only
            final = final.assign(attack="label_flip")
        for (attack, protocol, rate, method), _ in final.groupby(
                ["attack", "protocol", "rate", "method"]):
            key = METHOD_KEYS.get(method)
            if key and attack in LABEL_AWARE_ATTACK_KEYS:
                put(f"topofl.cc.auc.{LABEL_AWARE_ATTACK_KEYS[attack]}{protocol}."
                    f"{rate_key(rate)}.{key}", final, "auc", attack=attack,
                    protocol=protocol, rate=rate, method=method)
    return out


def deep_ma_values(final: pd.DataFrame) -> dict:
    """The deep label-skew paragraph: the model-anchored descriptor against the others.

    Parameters
    ----------
    final : pandas.DataFrame
        The deep run's ``final`` table (``method``, ``seed``, ``accuracy``) with
        ``pTopoFL-MA``, ``pTopoFL``, ``FedAvg``, ``TrimmedMean``, ``Median`` and ``Krum``.

    Returns
    -------
    dict
        Mean personalised accuracy of each method: ``ma`` (pTopoFL-MA), ``pt`` (pTopoFL),
        ``fa``, ``tm``, ``md``, ``kr`` (FedAvg, TrimmedMean, Median, Krum), with the 95%
        interval of the first two (``ma_lo``, ``ma_hi``, ``pt_lo``, ``pt_hi``); pTopoFL-MA
        minus pTopoFL (``d1``) and minus FedAvg (``d2``), paired: each with its 95%
        interval (``*_lo``, ``*_hi``), wins ``w*`` and Wilcoxon ``p*``. NaN for a method
        not run.
    """
    names = {"ma": "pTopoFL-MA", "pt": "pTopoFL", "fa": "FedAvg", "tm": "TrimmedMean",
             "md": "Median", "kr": "Krum"}
    levels = summarise(final, "accuracy").reindex(list(names.values()))
    out = {}
    for key, method in names.items():
        out[key] = levels.loc[method, "mean"]
        if key in ("ma", "pt"):
            out[f"{key}_lo"], out[f"{key}_hi"] = levels.loc[method, ["ci_low", "ci_high"]]
    gain = paired_differences(final, "pTopoFL-MA", "accuracy").reindex(["pTopoFL", "FedAvg"])
    for key, method in (("d1", "pTopoFL"), ("d2", "FedAvg")):
        row = gain.loc[method]
        out.update({key: row["mean_diff"], f"{key}_lo": row["ci_low"],
                    f"{key}_hi": row["ci_high"], f"w{key[1]}": row["wins"],
                    f"p{key[1]}": row["p_wilcoxon"]})
    return out
