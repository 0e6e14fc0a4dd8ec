r"""Auditing differential privacy: the lower bound on epsilon an attack's error rates imply.

An attack on a mechanism :math:`M` plays a membership game: in each trial the challenger
runs :math:`M` on one of two neighbouring datasets (the target in, or not), and the
attack says "member" when its score is at least a threshold :math:`t`. If :math:`M` is
:math:`(\varepsilon, \delta)`-DP, every such test obeys (Kairouz, Oh & Viswanath 2015)

.. math::

    {\rm TPR} \le e^\varepsilon {\rm FPR} + \delta, \qquad
    1 - {\rm FPR} \le e^\varepsilon (1 - {\rm TPR}) + \delta,

so :math:`\varepsilon \ge \log\frac{{\rm TPR} - \delta}{{\rm FPR}}` and
:math:`\varepsilon \ge \log\frac{1 - {\rm FPR} - \delta}{1 - {\rm TPR}}`. Measured on
finite trials the rates are estimates; the audit (Jagielski, Ullman & Oprea 2020,
"Auditing differentially private machine learning: how private is private SGD?"; Nasr,
Song, Thakurta, Papernot & Carlini 2021, "Adversary instantiation: lower bounds for
differentially private machine learning") puts a one-sided Clopper-Pearson lower bound
on TPR and an upper bound on FPR into both expressions: the result is a lower bound on
the mechanism's true epsilon that holds with probability at least ``1 - alpha``.

Thresholds, two ways:

* :func:`empirical_epsilon`: the thresholds are given (fixed before the scores are
  seen); the largest bound over them is taken, with Bonferroni's correction: each of the
  ``2 m`` one-sided intervals of ``m`` thresholds at level ``alpha / (2 m)``;
* :func:`held_out_epsilon`: the threshold is chosen on a random half of the trials (the
  one whose bound is largest there) and the bound is computed on the other half at level
  ``alpha``: valid however the threshold was found, at the price of half the trials.
  The privacy notebook's audit uses this one.

A bound of 0 says the attack certifies nothing; a bound near the accounted epsilon says
the accounting is tight for that attack. :func:`gaussian_mechanism_audit` runs the
strongest attack on one Gaussian release (the worst-case pair of neighbouring inputs,
where a threshold on the output is the optimal test), the positive control of the audit.
It simulates the Gaussian; :func:`client_dp_audit` plays the same game through the
package's own code instead (:meth:`~topofl_lib.privacy.ClientLevelDP.noisy_sum`: its
clipping, its noise and where that noise is drawn), under the option's neighbouring
relation, and reports beside its bound the accounted epsilon and the most its design
could certify (:func:`design_epsilon`). Measured with 20,000 trials: a round without
noise certifies 7.2 (the design's ceiling); the noise at a tenth, or the clipping off,
certify 6.75 against an accounted 2.00; the correct mechanism stays below its accounted
epsilon at z = 0.5, 1 and 2, with each noise placement and relation (``tests``).
:func:`descriptor_audit` does the same for a descriptor mechanism's own ``release``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import beta as beta_distribution

from .._validation import as_float_array, check_int, check_random_state, check_real
from .accounting import PrivacyAccountant, check_delta
from .mechanisms import GaussianMechanism

__all__ = ["AUDIT_FIELDS", "client_dp_audit", "clopper_pearson", "descriptor_audit",
           "design_epsilon", "empirical_epsilon", "epsilon_from_rates",
           "gaussian_mechanism_audit", "held_out_epsilon"]

#: The keys of an audit's result (:func:`empirical_epsilon`, :func:`held_out_epsilon`).
AUDIT_FIELDS = ("epsilon_lb", "threshold", "tpr", "fpr", "tpr_low", "fpr_high",
                "n_members", "n_nonmembers", "n_thresholds", "alpha")


def _check_alpha(alpha) -> float:
    return check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)


def clopper_pearson(k, n, alpha: float, side: str):
    """One-sided Clopper-Pearson bound on a binomial proportion from ``k`` of ``n``.

    Parameters
    ----------
    k : int or array-like of int
        Successes, each in ``0 .. n``.
    n : int or array-like of int
        Trials (>= 1).
    alpha : float
        The bound fails with probability at most ``alpha``, in (0, 1).
    side : {"lower", "upper"}
        A lower bound (the ``alpha`` quantile of Beta(k, n - k + 1); 0 when k = 0) or an
        upper bound (the ``1 - alpha`` quantile of Beta(k + 1, n - k); 1 when k = n).

    Returns
    -------
    float or ndarray
        The bound, in [0, 1] (an array for array input).
    """
    alpha = _check_alpha(alpha)
    if side not in ("lower", "upper"):
        raise ValueError(f"side must be 'lower' or 'upper', got {side!r}")
    k_arr, n_arr = np.asarray(k), np.asarray(n)
    for name, arr in (("k", k_arr), ("n", n_arr)):
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be an int or an array of ints, got {arr.dtype} "
                            f"({arr.ravel()[:5].tolist()})")
    if np.any(n_arr < 1) or np.any((k_arr < 0) | (k_arr > n_arr)):
        raise ValueError(f"need 1 <= n and 0 <= k <= n, got k={k_arr.tolist()}, "
                         f"n={n_arr.tolist()}")
    k_arr, n_arr = np.broadcast_arrays(k_arr.astype(np.float64), n_arr.astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        if side == "lower":
            out = np.where(k_arr == 0, 0.0,
                           beta_distribution.ppf(alpha, k_arr, n_arr - k_arr + 1))
        else:
            out = np.where(k_arr == n_arr, 1.0,
                           beta_distribution.ppf(1 - alpha, k_arr + 1, n_arr - k_arr))
    return float(out) if out.ndim == 0 else out


def epsilon_from_rates(tpr, fpr, delta: float):
    r"""The epsilon that rates ``(tpr, fpr)`` of one test imply at ``delta``.

    :math:`\max(\log\frac{{\rm tpr} - \delta}{{\rm fpr}},
    \log\frac{1 - {\rm fpr} - \delta}{1 - {\rm tpr}}, 0)`; a term whose numerator is not
    positive (or whose denominator is 0 with a positive numerator: infinite) follows the
    usual limits. Pass a lower bound on TPR and an upper bound on FPR for a lower bound
    on epsilon.

    Parameters
    ----------
    tpr, fpr : float or array-like
        True- and false-positive rates, in [0, 1].
    delta : float
        The delta of the guarantee, in (0, 1).

    Returns
    -------
    float or ndarray
        Non-negative; ``inf`` where a rate pair is impossible for every finite epsilon.
    """
    delta = check_delta(delta)
    tpr, fpr = (as_float_array(v, name) for v, name in ((tpr, "tpr"), (fpr, "fpr")))
    for name, v in (("tpr", tpr), ("fpr", fpr)):
        if not np.all((v >= 0) & (v <= 1)):
            raise ValueError(f"{name} must lie in [0, 1], got {v.ravel()[:5].tolist()}")
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(tpr - delta > 0, np.log(np.maximum(tpr - delta, 1e-300))
                         - np.log(fpr), -np.inf)
        second = np.where(1 - fpr - delta > 0, np.log(np.maximum(1 - fpr - delta, 1e-300))
                          - np.log(1 - tpr), -np.inf)
    out = np.maximum(np.maximum(first, second), 0.0)
    return float(out) if out.ndim == 0 else out


def _trials(scores, members) -> tuple[np.ndarray, np.ndarray]:
    scores = as_float_array(scores, "scores")
    if scores.ndim != 1 or scores.size < 2 or not np.all(np.isfinite(scores)):
        raise ValueError(f"scores must be a 1-D array of at least 2 finite values, got "
                         f"shape {scores.shape}")
    members = np.asarray(members)
    if members.shape != scores.shape or members.dtype.kind not in "bi" or not np.all(
            np.isin(members, (0, 1))):
        raise ValueError(f"members must be booleans (or 0/1), one per score ({scores.size}), "
                         f"got {members.ravel()[:5].tolist()} of shape {members.shape}")
    members = members.astype(bool)
    if members.all() or not members.any():
        raise ValueError("the trials need members and non-members, got "
                         f"{int(members.sum())} members of {members.size}")
    return scores, members


def empirical_epsilon(scores, members, delta: float, *, thresholds,
                      alpha: float = 0.05) -> dict:
    """The audit's lower bound on epsilon, Bonferroni-corrected over ``thresholds``.

    For each threshold ``t`` the attack says "member" when ``score >= t``; its TPR gets
    a Clopper-Pearson lower bound and its FPR an upper bound, each at level
    ``alpha / (2 m)`` for ``m`` thresholds, and :func:`epsilon_from_rates` turns them
    into a bound; the largest is returned. It holds with probability at least
    ``1 - alpha`` when the thresholds were fixed independently of these trials.

    Parameters
    ----------
    scores : array-like of shape (n,)
        The attack's score of each trial (higher: more likely a member).
    members : array-like of bool, shape (n,)
        Whether the target was in (both kinds needed).
    delta : float
        The delta of the audited guarantee, in (0, 1).
    thresholds : array-like of shape (m,)
        Finite thresholds (at least one).
    alpha : float, default=0.05
        The bound fails with probability at most ``alpha``, in (0, 1).

    Returns
    -------
    dict
        :data:`AUDIT_FIELDS`: ``epsilon_lb`` and, at the threshold that gave it,
        ``threshold``, the rates ``tpr``, ``fpr`` and their bounds ``tpr_low``,
        ``fpr_high``; ``n_members``, ``n_nonmembers``, ``n_thresholds`` and ``alpha``.
    """
    scores, members = _trials(scores, members)
    delta = check_delta(delta)
    alpha = _check_alpha(alpha)
    thresholds = as_float_array(thresholds, "thresholds").ravel()
    if thresholds.size == 0 or not np.all(np.isfinite(thresholds)):
        raise ValueError(f"thresholds must be at least one finite value, got "
                         f"{thresholds[:5].tolist()}")
    n_in, n_out = int(members.sum()), int((~members).sum())
    tp, fp = (kind.size - np.searchsorted(np.sort(kind), thresholds, side="left")
              for kind in (scores[members], scores[~members]))  # scores >= each threshold
    level = alpha / (2 * thresholds.size)
    tpr_low = np.atleast_1d(clopper_pearson(tp, n_in, level, "lower"))
    fpr_high = np.atleast_1d(clopper_pearson(fp, n_out, level, "upper"))
    bounds = np.atleast_1d(epsilon_from_rates(tpr_low, fpr_high, delta))
    best = int(np.argmax(bounds))
    return {"epsilon_lb": float(bounds[best]), "threshold": float(thresholds[best]),
            "tpr": float(tp[best] / n_in), "fpr": float(fp[best] / n_out),
            "tpr_low": float(tpr_low[best]), "fpr_high": float(fpr_high[best]),
            "n_members": n_in, "n_nonmembers": n_out, "n_thresholds": int(thresholds.size),
            "alpha": alpha}


def held_out_epsilon(scores, members, delta: float, *, alpha: float = 0.05,
                     random_state=None) -> dict:
    """The audit's lower bound on epsilon with the threshold chosen on held-out trials.

    The trials are split at random into two halves, members and non-members each halved
    (:func:`empirical_epsilon` needs both kinds on either side). On the first half every
    distinct score is tried as a threshold and the one with the largest (Bonferroni)
    bound is kept; on the second half that single threshold gives the bound, at level
    ``alpha``.

    Parameters
    ----------
    scores : array-like of shape (n,)
        The attack's score of each trial (at least 2 members and 2 non-members).
    members : array-like of bool, shape (n,)
        Whether the target was in.
    delta : float
        The delta of the audited guarantee, in (0, 1).
    alpha : float, default=0.05
        The bound fails with probability at most ``alpha``, in (0, 1).
    random_state : None, int or Generator
        Draws the split.

    Returns
    -------
    dict
        :data:`AUDIT_FIELDS`, of the second half (``n_thresholds`` is 1).
    """
    scores, members = _trials(scores, members)
    if min(members.sum(), (~members).sum()) < 2:
        raise ValueError("a held-out threshold needs at least 2 members and 2 non-members, "
                         f"got {int(members.sum())} members of {members.size}")
    rng = check_random_state(random_state)
    choose = np.zeros(members.size, dtype=bool)
    for kind in (members, ~members):
        idx = rng.permutation(np.flatnonzero(kind))
        choose[idx[: idx.size // 2]] = True
    chosen = empirical_epsilon(scores[choose], members[choose], delta,
                               thresholds=np.unique(scores[choose]), alpha=alpha)
    return empirical_epsilon(scores[~choose], members[~choose], delta,
                             thresholds=[chosen["threshold"]], alpha=alpha)


def gaussian_mechanism_audit(noise_multiplier: float, delta: float, *, n_trials: int = 10_000,
                             alpha: float = 0.05, random_state=None) -> dict:
    """Audit one Gaussian release with the strongest attack: the positive control.

    The worst-case neighbours of a Gaussian mechanism of sensitivity 1 (a clipped update
    of norm C present or not, in units of C; a descriptor at the far side of the sphere)
    differ by 1 along one direction, so the release is :math:`N(0, z^2)` or
    :math:`N(1, z^2)` there, and a threshold on it is the most powerful test
    (Neyman-Pearson). ``n_trials`` releases, half of them with the target, are scored by
    their value and audited by :func:`held_out_epsilon`.

    Parameters
    ----------
    noise_multiplier : float
        ``z``: the noise standard deviation over the sensitivity (> 0).
    delta : float
        The delta, in (0, 1).
    n_trials : int, default=10000
        Releases simulated (>= 8).
    alpha : float, default=0.05
        The bound fails with probability at most ``alpha``.
    random_state : None, int or Generator
        Draws the releases and the split.

    Returns
    -------
    dict
        :data:`AUDIT_FIELDS` and ``epsilon``, the accountant's epsilon of the release.
    """
    z = check_real(noise_multiplier, "noise_multiplier", low=0.0, low_open=True)
    delta = check_delta(delta)
    check_int(n_trials, "n_trials", low=8)
    rng = check_random_state(random_state)
    members = np.arange(n_trials) % 2 == 0
    releases = members + z * rng.standard_normal(n_trials)
    out = held_out_epsilon(releases, members, delta, alpha=alpha, random_state=rng)
    accounted = PrivacyAccountant().gaussian(z).epsilon(delta)
    return {**out, "epsilon": accounted if math.isfinite(accounted) else math.inf}


def design_epsilon(n_members: int, n_nonmembers: int, delta: float,
                   alpha: float = 0.05) -> float:
    """The largest epsilon an audit of this many trials can certify: its bound when the
    attack separates members from non-members perfectly (TPR 1, FPR 0 measured).

    Parameters
    ----------
    n_members, n_nonmembers : int
        The trials the bound is computed on (the held-out half of
        :func:`held_out_epsilon`).
    delta : float
        The delta, in (0, 1).
    alpha : float, default=0.05
        The bound's failure probability.

    Returns
    -------
    float
    """
    m = check_int(n_members, "n_members", low=1)
    k = check_int(n_nonmembers, "n_nonmembers", low=1)
    alpha = _check_alpha(alpha)
    return float(epsilon_from_rates(clopper_pearson(m, m, alpha / 2, "lower"),
                                    clopper_pearson(0, k, alpha / 2, "upper"),
                                    check_delta(delta)))


def client_dp_audit(dp, delta: float | None = None, *, n_trials: int = 20_000,
                    n_clients: int = 4, dim: int = 8, alpha: float = 0.05,
                    random_state=None) -> dict:
    """Audit one round of client-level DP through the package's own clipping and noise.

    The game of ``dp.relation``: every trial runs ``dp.noisy_sum`` (and so, with
    ``noise="distributed"`` or ``"local"``, each client's own noise) on ``n_clients - 1``
    fixed updates and, in the member trials, a canary client whose update points along
    the first axis with 10 times the clip (the clipping must bring it back to the clip);
    under ``"replace"`` the non-member trials have the canary's opposite instead of no
    canary. The canary takes part with probability ``dp.sample_rate`` (the round's
    Poisson sampling). The attack scores each release by its first coordinate (the most
    powerful test for a Gaussian release), and :func:`held_out_epsilon` bounds epsilon.

    A correct mechanism stays below the accounted epsilon of the round; a mechanism whose
    noise is too small, or whose clipping is off, certifies more than it accounts.

    Parameters
    ----------
    dp : ClientLevelDP
        The option audited (its noise placement and relation included).
    delta : float, optional
        The delta (default ``dp.delta``).
    n_trials : int, default=20000
        Releases (>= 8), half with the canary.
    n_clients : int, default=4
        The clients of the round with the canary (>= 2).
    dim : int, default=8
        The updates' dimension.
    alpha : float, default=0.05
        The bound fails with probability at most ``alpha``.
    random_state : None, int or Generator
        Draws the updates, the noise and the split.

    Returns
    -------
    dict
        :data:`AUDIT_FIELDS`, ``epsilon`` (the accountant's epsilon of the round) and
        ``design_epsilon`` (the most this design can certify, :func:`design_epsilon`).
    """
    delta = check_delta(dp.delta if delta is None else delta)
    check_int(n_trials, "n_trials", low=8)
    n = check_int(n_clients, "n_clients", low=2)
    d = check_int(dim, "dim", low=1)
    rng = check_random_state(random_state)
    others = rng.normal(size=(n - 1, d))
    others *= 0.5 * dp.clip / np.linalg.norm(others, axis=1, keepdims=True)
    canary = np.zeros(d)
    canary[0] = 10.0 * dp.clip
    members = np.arange(n_trials) % 2 == 0
    scores = np.empty(n_trials)
    for t, member in enumerate(members):
        present = bool(dp.participants(1, rng)[0])
        if member and present:
            updates = np.vstack([others, canary])
        elif dp.relation == "replace" and present:
            updates = np.vstack([others, -canary])
        else:
            updates = others
        scores[t] = dp.noisy_sum(updates, np.ones(len(updates)), rng)[0]
    accounted = dp.accountant().record({**dp.round_event(), "round": 1}).epsilon(delta)
    return _canary_bound(scores, members, delta, alpha, rng, accounted)


def descriptor_audit(mechanism, *, n_trials: int = 20_000, dim: int = 48,
                     alpha: float = 0.05, random_state=None) -> dict:
    """Audit one descriptor release through the mechanism's own ``release``.

    The game of any two inputs (a descriptor mechanism's guarantee): the member trials
    release a canary 10 times the sphere's radius along the first axis (the release must
    clip it back), the others its opposite, so the two differ by the mechanism's whole
    sensitivity. A release is scored by its first coordinate and
    :func:`held_out_epsilon` bounds epsilon.

    Parameters
    ----------
    mechanism : GaussianMechanism
        The mechanism audited (its ``release`` and ``privacy_event``).
    n_trials : int, default=20000
        Releases (>= 8), half of them the canary's.
    dim : int, default=48
        The descriptor's dimension.
    alpha : float, default=0.05
        The bound fails with probability at most ``alpha``.
    random_state : None, int or Generator
        Draws the noise and the split.

    Returns
    -------
    dict
        :data:`AUDIT_FIELDS`, ``epsilon`` (the accountant's epsilon of the release) and
        ``design_epsilon``.
    """
    if not isinstance(mechanism, GaussianMechanism):
        raise TypeError(f"mechanism must be a GaussianMechanism, got {mechanism!r}")
    check_int(n_trials, "n_trials", low=8)
    d = check_int(dim, "dim", low=1)
    rng = check_random_state(random_state)
    delta = check_delta(mechanism.delta)
    members = np.arange(n_trials) % 2 == 0
    canaries = np.zeros((n_trials, d))
    canaries[:, 0] = np.where(members, 10.0, -10.0) * mechanism.sensitivity
    scores = np.asarray(mechanism.release(canaries, random_state=rng))[:, 0]
    accounted = PrivacyAccountant().record(
        {**mechanism.privacy_event(), "channel": "descriptor", "round": 1}).epsilon(delta)
    return _canary_bound(scores, members, delta, alpha, rng, accounted)


def _canary_bound(scores, members, delta: float, alpha: float, rng,
                  accounted: float) -> dict:
    """A canary audit's result: the held-out bound, the accounted epsilon and the most
    the design can certify."""
    out = held_out_epsilon(scores, members, delta, alpha=alpha, random_state=rng)
    return {**out, "epsilon": accounted,
            "design_epsilon": design_epsilon(out["n_members"], out["n_nonmembers"], delta,
                                             alpha)}
