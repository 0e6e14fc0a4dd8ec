"""The values the privacy notebook's comparison with the paper states in prose.

Each function reduces tables the notebook has already shown to the numbers one paragraph
of its "How this compares with the paper" section states; the notebook fills its
templates with :func:`topofl_lib.prose.render`, so a re-run on other seeds or another
profile rewrites the paragraph and no measured number is typed by hand. A value the run
lacks (an epsilon not run) is NaN, which ``render`` shows as ``n/a``.
"""

from __future__ import annotations

import pandas as pd

from ..privacy import GaussianMechanism

__all__ = ["adversary_values", "audit_values", "descriptor_dp_values", "end_to_end_values"]

_INF = float("inf")
_NAN = float("nan")


def _at(series: pd.Series, key) -> float:
    """``series[key]`` as a float, NaN when the run lacks it."""
    return float(series[key]) if key in series.index else _NAN


def descriptor_dp_values(dp: pd.DataFrame, family: pd.DataFrame, epsilons) -> dict:
    """Section 5's paragraph: the noise a private descriptor needs, and what it costs.

    Parameters
    ----------
    dp : pandas.DataFrame
        :func:`~topofl_lib.privacy.dp_utility_experiment` rows of both scenarios
        (``scenario``, ``method``, ``epsilon``, ``sigma``, ``auc``, ``seed``).
    family : pandas.DataFrame
        :func:`~topofl_lib.statistics.holm_family` of non-private pTopoFL minus the
        others, per scenario.
    epsilons : list of float
        The budgets run.

    Returns
    -------
    dict
        ``s1`` / ``s1000``: the mean sigma at epsilon 1 and 1000; ``coord``, a unit
        descriptor's coordinate size 1/sqrt(48); ``h_lo`` / ``h_hi``, the range of
        private pTopoFL's mean healthcare AUC over the budgets, ``e_lo`` / ``e_hi`` the
        budgets' range; ``h_fedavg`` and ``h_nodp``, FedAvg's and non-private pTopoFL's
        healthcare AUC; ``b_lo`` / ``b_hi``, the benchmark's range over every variant;
        non-private pTopoFL minus FedAvg in healthcare: ``d``, wins ``w``, Wilcoxon ``p``,
        Holm ``h``, ``verdict`` and the family's size ``m``; ``r100`` / ``r1000``, how
        many times the classic Gaussian calibration under-noises at epsilon 100 and 1000.
    """
    auc = dp.groupby(["scenario", "method", "epsilon"])["auc"].mean()
    sigma = dp.groupby("epsilon")["sigma"].mean()
    private = auc["healthcare", "pTopoFL"].drop(_INF, errors="ignore")
    gap = family.loc[("healthcare", "FedAvg")]
    under = {e: GaussianMechanism(e).sigma / GaussianMechanism(e, calibration="classic").sigma
             for e in (100.0, 1000.0)}
    return {"s1": _at(sigma, 1.0), "s1000": _at(sigma, 1000.0), "coord": 48 ** -0.5,
            "h_lo": private.min(), "h_hi": private.max(),
            "e_lo": min(epsilons), "e_hi": max(epsilons),
            "h_fedavg": auc["healthcare", "FedAvg"].mean(),
            "h_nodp": _at(auc["healthcare", "pTopoFL"], _INF),
            "b_lo": auc["benchmark"].min(), "b_hi": auc["benchmark"].max(),
            "d": gap["mean_diff"], "w": int(gap["wins"]), "p": gap["p_wilcoxon"],
            "h": gap["p_holm"], "m": int(family["family_size"].iloc[0]),
            "verdict": "significant" if gap["p_holm"] < 0.05 else "not significant",
            "r100": under[100.0], "r1000": under[1000.0]}


def _signed(x: float) -> str:
    """``"+0.002"``, or ``"n/a"`` for NaN."""
    return "n/a" if x != x else f"{x:+.3f}"


def end_to_end_values(t1_final: pd.DataFrame, t1_cost: pd.DataFrame,
                      deep_cost: pd.DataFrame, epsilons) -> dict:
    """Section 6's first paragraph: budgets spent and what they cost.

    Parameters
    ----------
    t1_final : pandas.DataFrame
        :func:`~topofl_lib.studies.dp_tradeoff.dp_table1_comparison`'s ``final`` tables of
        both scenarios.
    t1_cost, deep_cost : pandas.DataFrame
        :func:`~topofl_lib.studies.dp_tradeoff.dp_cost` of the Table 1 runs (AUC) and of
        the deep runs (accuracy).
    epsilons : list of float
        The target epsilons.

    Returns
    -------
    dict
        ``tol`` (the largest target minus spent epsilon), ``d_eps`` (the descriptor
        release's share at the top target), ``top`` / ``low`` (the largest and smallest
        target), ``per_target`` (pTopoFL's cost per target, healthcare then benchmark),
        FedAvg's cost ``f_hc`` / ``f_bm`` at the top target and ``f_hc_low`` /
        ``f_bm_low`` at the lowest, and ``deep_text`` (each deep method's cost in points
        with its 95% interval).
    """
    top, low = max(epsilons), min(epsilons)
    cost = t1_cost["cost"]
    private = t1_final[t1_final["target_epsilon"] < _INF]
    per_target = "; ".join(f"ε = {e:g}: {_signed(_at(cost, ('healthcare', 'pTopoFL', e)))}, "
                           f"{_signed(_at(cost, ('benchmark', 'pTopoFL', e)))}" for e in epsilons)
    deep_text = "; ".join(f"{r.base} at ε = {r.target_epsilon:g}: {100 * r.cost:+.1f} points "
                          f"({100 * r.ci_low:+.1f} to {100 * r.ci_high:+.1f})"
                          for r in deep_cost.reset_index().itertuples())
    return {"tol": (private["target_epsilon"] - private["epsilon"]).max(),
            "d_eps": private.loc[private["target_epsilon"] == top, "epsilon_descriptor"].max(),
            "top": top, "low": low, "per_target": per_target, "deep_text": deep_text or "none",
            "f_hc": _at(cost, ("healthcare", "FedAvg", top)),
            "f_bm": _at(cost, ("benchmark", "FedAvg", top)),
            "f_hc_low": _at(cost, ("healthcare", "FedAvg", low)),
            "f_bm_low": _at(cost, ("benchmark", "FedAvg", low))}


def adversary_values(detection: pd.DataFrame, epsilons) -> dict:
    """Section 6's "Adversaries under noise": isolation, flags and weight per budget.

    Parameters
    ----------
    detection : pandas.DataFrame
        :func:`~topofl_lib.studies.dp_tradeoff.dp_detection`'s table
        (``target_epsilon``, ``isolated``, ``flagged``, ``adversarial_weight``,
        ``adversarial_share``).
    epsilons : list of float
        The target epsilons.

    Returns
    -------
    dict
        ``top`` / ``low`` (the largest and smallest target); ``iso_*``, ``flag_*`` and
        ``w_*`` (isolated fraction, flagged fraction, adversarial weight) for ``clear``
        (no DP), ``top`` and ``low``; ``share``, the adversaries' share of the hospitals.
    """
    det = detection.groupby("target_epsilon").mean(numeric_only=True)
    out = {"share": float(det["adversarial_share"].mean()), "top": max(epsilons),
           "low": min(epsilons)}
    for name, eps in (("clear", _INF), ("top", max(epsilons)), ("low", min(epsilons))):
        for key, col in (("iso", "isolated"), ("flag", "flagged"), ("w", "adversarial_weight")):
            out[f"{key}_{name}"] = _at(det[col], eps)
    return out


def audit_values(audit: pd.DataFrame, inversion: pd.DataFrame, epsilons) -> dict:
    """Section 6's audit paragraph: what the attacks certify against what is accounted.

    Parameters
    ----------
    audit : pandas.DataFrame
        :func:`~topofl_lib.studies.dp_audit.dp_audit`'s first table (``attack``,
        ``channel``, ``target_epsilon``, ``epsilon_lb``, ``epsilon_release``).
    inversion : pandas.DataFrame
        Its second table (``attack``, ``target_epsilon``, ``recovered``).
    epsilons : list of float
        The target epsilons.

    Returns
    -------
    dict
        ``top`` / ``low`` (the largest and smallest target); ``mia_max`` (the membership
        attack's largest certified epsilon against a private release), ``rel_lo`` /
        ``rel_hi`` (the accounted epsilons of those releases); ``clear_grad`` /
        ``clear_desc`` (certified in the clear on each channel); the gradient canary's
        certified and accounted epsilon at the lowest (``can_low``, ``acc_low``) and top
        target (``can_top``, ``acc_top``); the closed-form inversion's recovered fraction
        in the clear and at the top target (``inv_clear``, ``inv_top``); the canary
        through the model channel without noise (``can_clear``) and the most its trials
        can certify (``design``); of the planted defects (``defect_n``) those the design
        can catch, whose accounted epsilon lies below ``design``
        (``defect_catchable``): their smallest certified epsilon (``defect_lb``) and
        their largest accounted one (``defect_acc``).
    """
    top, low = max(epsilons), min(epsilons)
    aud = audit.set_index(["attack", "channel", "target_epsilon"])
    lb, release = aud["epsilon_lb"], aud["epsilon_release"]
    private_mia = audit[(audit["attack"] == "membership") & (audit["target_epsilon"] < _INF)]
    defects = audit[audit["attack"].str.startswith("defect")]
    catchable = defects[defects["epsilon_release"] < defects["design_epsilon"]]
    closed = (inversion[inversion["attack"] == "closed_form"]
              .groupby("target_epsilon")["recovered"].mean())
    return {"top": top, "low": low, "mia_max": private_mia["epsilon_lb"].max(),
            "rel_lo": private_mia["epsilon_release"].min(),
            "rel_hi": private_mia["epsilon_release"].max(),
            "clear_grad": _at(lb, ("membership", "gradient", _INF)),
            "clear_desc": _at(lb, ("membership", "descriptor", _INF)),
            "can_low": _at(lb, ("canary", "gradient", low)),
            "acc_low": _at(release, ("canary", "gradient", low)),
            "can_top": _at(lb, ("canary", "gradient", top)),
            "acc_top": _at(release, ("canary", "gradient", top)),
            "inv_clear": _at(closed, _INF), "inv_top": _at(closed, top),
            "can_clear": _at(lb, ("canary", "gradient", _INF)),
            "design": _at(aud["design_epsilon"], ("canary", "gradient", _INF)),
            "defect_lb": catchable["epsilon_lb"].min(),
            "defect_acc": catchable["epsilon_release"].max(),
            "defect_n": len(defects), "defect_catchable": len(catchable)}

