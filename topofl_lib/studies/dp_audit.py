r"""The audit of private pTopoFL: its attacks against the DP options at each target epsilon.

For each target total epsilon (:func:`~topofl_lib.studies.dp_tradeoff.run_budgets`: the
split of a Table 1 run between the descriptor and the model channel), the privacy
notebook's attacks see what a private client releases, privatised exactly as the DP
options do (:func:`~topofl_lib.privacy.attacks.release_map`):

* ``attack="membership"``: the likelihood-ratio membership inference on each channel
  (:func:`~topofl_lib.privacy.membership_experiment`): the model channel through the
  client's data gradient, clipped and noised as DP-FedAvg releases one update; the
  descriptor through pTopoFL's mechanism. Its trials, pooled over the seeds, give the
  empirical lower bound on epsilon (:func:`~topofl_lib.privacy.held_out_epsilon`);
* ``attack="canary"``: the strongest attack on one release of each channel, a
  worst-case canary sent through the package's own code: the model channel's option
  (:func:`~topofl_lib.privacy.audit.client_dp_audit`: its clipping, its noise and where
  that noise is drawn) and the descriptor mechanism's ``release``
  (:func:`~topofl_lib.privacy.audit.descriptor_audit`); in the clear, the model channel
  without noise, whose bound is the most the design can certify (``design_epsilon``);
* ``attack="defect noise/10"`` and ``"defect no clipping"``: the same canary against the
  option with a planted defect (:func:`~topofl_lib.privacy.defects.planted_defect`), the
  positive controls: each must certify more than it accounts, or the audit could not
  catch a broken mechanism;
* the single-record gradient inversion (:func:`~topofl_lib.privacy.gradient_inversion_experiment`)
  against the privatised gradient: the reconstruction attack that succeeds in the clear.

Each bound is printed beside the accountant's epsilon of *the release attacked*
(``epsilon_release``) and of the whole run (``target_epsilon``). The membership game
replaces one record (the target or another), so on the model channel two clipped
updates differ by at most :math:`2C`: one release is a Gaussian mechanism of multiplier
:math:`z/2` for that game, and its accounted epsilon is that one's. A descriptor release
is (epsilon, delta)-DP for any two datasets (its sensitivity 2 is the unit sphere's
diameter). The canaries differ by one clipped update, present or not (multiplier
:math:`z`), or by the diameter (multiplier ``sigma / 2``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import pandas as pd

from .._validation import check_int, check_real
from ..core.seeds import check_seeds
from ..federated.metrics import roc_auc
from ..privacy.accounting import PrivacyAccountant
from ..privacy.audit import (
    client_dp_audit,
    descriptor_audit,
    design_epsilon,
    held_out_epsilon,
)
from ..privacy.defects import DEFECTS, planted_defect
from ..privacy.evaluation import gradient_inversion_experiment, membership_experiment
from ..privacy.mechanisms import GaussianMechanism
from ..privacy.model_channel import ClientLevelDP
from .dp_tradeoff import DP_DELTA, run_budgets

__all__ = ["AUDIT_COLUMNS", "dp_audit"]

#: The columns of :func:`dp_audit`'s audit table.
AUDIT_COLUMNS = ("target_epsilon", "attack", "channel", "epsilon_release", "epsilon_lb",
                 "design_epsilon", "auc", "tpr", "fpr", "n_trials")


def _release_epsilon(noise_multiplier: float, delta: float) -> float:
    return PrivacyAccountant().gaussian(noise_multiplier).epsilon(delta)


def _options(budgets: dict, target: float, clip: float, delta: float):
    """pTopoFL's model-channel option and descriptor mechanism at ``target`` (None, None
    in the clear)."""
    if math.isinf(target):
        return None, None
    b = budgets[("pTopoFL", target)]
    return (ClientLevelDP(b["noise_multiplier"], clip=clip, delta=delta),
            GaussianMechanism(b["descriptor_epsilon"], delta))


def dp_audit(scenario: str = "healthcare", seeds: Iterable[int] = range(3),
             epsilons: Sequence[float] = (1.0, 3.0, 10.0, 30.0, 100.0), *, n: int = 5,
             n_targets: int = 50, n_shadow: int = 16, n_rounds: int = 15, clip: float = 1.0,
             descriptor_share: float = 0.1, delta: float = DP_DELTA, alpha: float = 0.05,
             canary_trials: int = 10_000, gradient_iters: int = 300,
             attack_clients: int | None = None, progress: bool = True
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Audit private pTopoFL's two channels at each target (and in the clear).

    Parameters
    ----------
    scenario : str, default="healthcare"
        The scenario the attacks draw their population from.
    seeds : iterable of int, default=range(3)
        Scenario realisations; the membership trials of all of them are pooled.
    epsilons : sequence of float
        Target total epsilons of a run (> 0, distinct); the clear channels are audited
        too (``target_epsilon = inf``).
    n : int, default=5
        Records of the client in the membership game (5: where the attack has power in
        the clear).
    n_targets, n_shadow : int
        Membership trials per seed and channel; shadow datasets per side.
    n_rounds : int, default=15
        The rounds of the run whose budget is split (Table 1's).
    clip : float, default=1.0
        The model channel's clipping bound.
    descriptor_share : float, default=0.1
        pTopoFL's descriptor share of the target.
    delta : float, default=DP_DELTA
        The delta.
    alpha : float, default=0.05
        Each lower bound fails with probability at most ``alpha``.
    canary_trials : int, default=10000
        Releases of each canary audit.
    gradient_iters : int, default=300
        Adam steps of the optimisation inversion.
    attack_clients : int, optional
        Honest clients attacked per seed by the inversion (None: all).
    progress : bool, default=True
        Show progress.

    Returns
    -------
    audit : pandas.DataFrame
        One row per (target, attack, channel): :data:`AUDIT_COLUMNS` (``auc``: the
        membership attack's over the pooled trials; ``tpr``, ``fpr``: at the held-out
        threshold, on the held-out half; ``design_epsilon``: the most the row's trials
        could certify).
    inversion : pandas.DataFrame
        :func:`~topofl_lib.privacy.gradient_inversion_experiment`'s rows (batch size 1)
        with ``target_epsilon``.
    """
    seeds = check_seeds(seeds)
    check_int(n, "n", low=2)
    check_int(canary_trials, "canary_trials", low=8)
    check_real(clip, "clip", low=0.0, low_open=True)
    budgets = run_budgets(epsilons, [(1.0, n_rounds)], methods=["pTopoFL"],
                          descriptor_share=descriptor_share, delta=delta)
    rows, inversion = [], []
    for target in [*sorted({e for _, e in budgets}), math.inf]:
        model_dp, mechanism = _options(budgets, target, clip, delta)
        trials = membership_experiment(scenario, seeds, n=n, n_targets=n_targets,
                                       n_shadow=n_shadow, progress=progress,
                                       model_dp=model_dp, descriptor_mechanism=mechanism,
                                       per_trial=True)
        for channel, g in trials.groupby("channel", sort=False):
            bound = held_out_epsilon(g["score"].to_numpy(), g["member"].to_numpy(), delta,
                                     alpha=alpha, random_state=0)
            release = (math.inf if model_dp is None else
                       _release_epsilon(model_dp.noise_multiplier / 2, delta)
                       if channel == "gradient" else
                       _release_epsilon(mechanism.sigma / mechanism.sensitivity, delta))
            rows.append(_row(target, "membership", channel, release, bound,
                             _auc(g), len(g), delta))
        rows += _canary_rows(target, model_dp, mechanism, clip, delta, alpha, canary_trials)
        inversion.append(gradient_inversion_experiment(
            scenario, seeds, (1,), n_iter=gradient_iters, max_clients=attack_clients,
            progress=progress, model_dp=model_dp).assign(target_epsilon=target))
    return (pd.DataFrame(rows, columns=list(AUDIT_COLUMNS)),
            pd.concat(inversion, ignore_index=True))


def _canary_rows(target, model_dp, mechanism, clip, delta, alpha, n_trials) -> list[dict]:
    """The canaries through the package's own code: the model channel's option (and its
    planted defects, the positive controls) and the descriptor mechanism at ``target``;
    in the clear, the model channel without noise (the audit's ceiling)."""
    def audit(dp):
        return client_dp_audit(dp, delta, n_trials=n_trials, alpha=alpha, random_state=0)

    if model_dp is None:
        bound = audit(ClientLevelDP(noise_multiplier=0.0, clip=clip, delta=delta))
        return [_row(target, "canary", "gradient", bound["epsilon"], bound, math.nan,
                     n_trials, delta)]
    rows = []
    for attack, dp in (("canary", model_dp),
                       *((f"defect {d}", planted_defect(model_dp, d)) for d in DEFECTS)):
        bound = audit(dp)
        rows.append(_row(target, attack, "gradient", bound["epsilon"], bound, math.nan,
                         n_trials, delta))
    bound = descriptor_audit(mechanism, n_trials=n_trials, alpha=alpha, random_state=0)
    rows.append(_row(target, "canary", "descriptor", bound["epsilon"], bound, math.nan,
                     n_trials, delta))
    return rows


def _auc(trials: pd.DataFrame) -> float:
    return roc_auc(trials["member"].to_numpy(), trials["score"].to_numpy())


def _row(target, attack, channel, release, bound, auc, n_trials, delta) -> dict:
    return {"target_epsilon": target, "attack": attack, "channel": channel,
            "epsilon_release": release, "epsilon_lb": bound["epsilon_lb"],
            "design_epsilon": design_epsilon(bound["n_members"], bound["n_nonmembers"],
                                             delta, bound["alpha"]),
            "auc": auc, "tpr": bound["tpr"], "fpr": bound["fpr"], "n_trials": n_trials}
