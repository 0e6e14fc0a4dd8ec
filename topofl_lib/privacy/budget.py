r"""A whole run's privacy budget, split between pTopoFL's two channels.

A private pTopoFL client releases its descriptor once (round 0, through
:class:`~topofl_lib.privacy.GaussianMechanism`) and its model every round (client-level
DP-FedAvg: one Gaussian release per round; DP-SGD: one per local step). To make a run
spend a *target* total epsilon per client, :func:`split_budget` gives the descriptor a
fixed share of the target (its mechanism is calibrated to ``descriptor_share *
target_epsilon`` on its own) and then finds the model channel's noise multiplier at which
the accountant's composition of *both* channels (:func:`~topofl_lib.privacy.accounting.compose`)
equals the target, for the client that spends most.

The composition is not additive: Opacus's PRV accountant composes Gaussian releases far
more tightly than the sum of their epsilons, so a descriptor given a tenth of the target
costs the model channel much less than a tenth. Opacus's own search
(:func:`~topofl_lib.privacy.calibrate_noise_multiplier`) handles one kind of release
repeated; it brackets the answer here (the model channel alone at the whole target, and
at its share), and a bisection over the accountant's composition of the mixed history
finishes it. Without a descriptor (``descriptor_share=0``: FedAvg, or pTopoFL sending
its descriptors in the clear is not private at all) it is Opacus's search alone, for the
client that spends most.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._validation import check_choice, check_int, check_real
from .accounting import (
    ACCOUNTINGS,
    MAX_TARGET_EPSILON,
    calibrate_noise_multiplier,
    check_delta,
    check_event,
    compose,
)
from .mechanisms import GaussianMechanism

__all__ = ["BUDGET_FIELDS", "split_budget"]

#: The keys of :func:`split_budget`'s result.
BUDGET_FIELDS = ("target_epsilon", "delta", "descriptor_share", "descriptor_epsilon",
                 "noise_multiplier", "epsilon", "epsilon_model", "epsilon_descriptor")


def _check_releases(releases) -> list[tuple[float, int]]:
    if not isinstance(releases, Sequence) or isinstance(releases, str) or not releases:
        raise ValueError("releases must be a non-empty list of (sample_rate, count) pairs, "
                         f"one per client, got {releases!r}")
    out = []
    for i, pair in enumerate(releases):
        if not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"releases[{i}] must be a (sample_rate, count) pair, got {pair!r}")
        out.append((check_real(pair[0], f"releases[{i}] sample_rate", low=0.0, high=1.0,
                               low_open=True),
                    check_int(pair[1], f"releases[{i}] count", low=1)))
    return sorted(set(out))


def _spent(z: float, releases, descriptor: list[dict], delta: float, accounting: str,
           channel: str | None = None) -> float:
    """The largest epsilon over the clients at model noise multiplier ``z``."""
    worst = 0.0
    for q, count in releases:
        model = [] if channel == "descriptor" else [check_event(
            {"mechanism": "gaussian", "noise_multiplier": z, "sample_rate": q,
             "count": count, "round": 1, "channel": "model"})]
        events = (descriptor if channel != "model" else []) + model
        worst = max(worst, compose(events, delta, accounting))
    return worst


def split_budget(target_epsilon: float, delta: float, *, releases,
                 descriptor_share: float = 0.1, accounting: str = "prv",
                 tolerance: float = 0.01) -> dict:
    """The model noise multiplier and descriptor mechanism that spend ``target_epsilon``.

    Parameters
    ----------
    target_epsilon : float
        The total epsilon per client of the whole run, both channels, in
        (0, :data:`~topofl_lib.privacy.accounting.MAX_TARGET_EPSILON`].
    delta : float
        Its delta, in (0, 1).
    releases : sequence of (float, int)
        Each client's model releases as ``(sample_rate, count)``: client-level DP-FedAvg
        ``[(q, n_rounds)]`` (every client alike); DP-SGD one pair per client, its
        sampling rate ``batch_size / n_k`` and its number of steps over the run.
    descriptor_share : float, default=0.1
        The descriptor's mechanism is calibrated to ``descriptor_share * target_epsilon``
        on its own, in [0, 1); 0: no descriptor release.
    accounting : {"prv", "rdp"}, default="prv"
        The accountant (:mod:`topofl_lib.privacy.accounting`).
    tolerance : float, default=0.01
        The total lies in ``[target - tolerance, target]`` (when the descriptor alone
        leaves room for it).

    Returns
    -------
    dict
        :data:`BUDGET_FIELDS`: the model channel's ``noise_multiplier``, the
        ``descriptor_epsilon`` of its mechanism (0 without one; the mechanism is
        ``GaussianMechanism(descriptor_epsilon, delta)``), and the accountant's epsilons
        of the run for the client that spends most: ``epsilon`` (both channels),
        ``epsilon_model``, ``epsilon_descriptor``.
    """
    target = check_real(target_epsilon, "target_epsilon", low=0.0, high=MAX_TARGET_EPSILON,
                        low_open=True)
    delta = check_delta(delta)
    releases = _check_releases(releases)
    share = check_real(descriptor_share, "descriptor_share", low=0.0, high=1.0,
                       high_open=True)
    check_choice(accounting, "accounting", ACCOUNTINGS)
    tolerance = check_real(tolerance, "tolerance", low=0.0, low_open=True)

    def calibrated(epsilon):
        return _largest_calibration(epsilon, delta, releases, accounting, tolerance)

    descriptor = []
    if share > 0:
        mechanism = GaussianMechanism(share * target, delta)
        descriptor = [check_event({**mechanism.privacy_event(), "round": 0,
                                   "channel": "descriptor"})]
    z = calibrated(target)
    if descriptor:
        z = _bisect(target, tolerance, calibrated((1 - share) * target), z,
                    lambda s: _spent(s, releases, descriptor, delta, accounting))
    return {"target_epsilon": target, "delta": delta, "descriptor_share": share,
            "descriptor_epsilon": share * target, "noise_multiplier": z,
            "epsilon": _spent(z, releases, descriptor, delta, accounting),
            "epsilon_model": _spent(z, releases, descriptor, delta, accounting, "model"),
            "epsilon_descriptor": (_spent(z, releases, descriptor, delta, accounting,
                                          "descriptor") if descriptor else 0.0)}


#: How far below ``target - tolerance`` a client's RDP epsilon must lie for
#: :func:`_largest_calibration` to skip its search: far above the rounding of Opacus's RDP
#: curves (an epsilon is exactly non-increasing in the noise multiplier; its computed
#: value is so up to rounding).
_RDP_MARGIN = 1e-6


def _largest_calibration(epsilon: float, delta: float, releases, accounting: str,
                         tolerance: float) -> float:
    """The largest of the clients' calibrated noise multipliers (Opacus's search each).

    With RDP accounting a search is run only for a client that could need more noise
    than the largest found so far: Opacus's search ends at a multiplier whose epsilon is
    at least ``epsilon - tolerance``, so a client whose epsilon at that largest multiplier
    lies further below (by :data:`_RDP_MARGIN`) ends below it, and the maximum is the
    one every search would give, bit for bit. The client with the highest sampling rate,
    then the most releases, goes first. (PRV's computed epsilons are bounds within its
    ``eps_error``, not exactly monotone, so with PRV every client is searched.)
    """
    def search(q, n):
        return calibrate_noise_multiplier(epsilon, delta, steps=n, sample_rate=q,
                                          accounting=accounting, tolerance=tolerance)

    order = sorted(releases, reverse=True)
    if accounting != "rdp":
        return max(search(q, n) for q, n in order)
    largest = search(*order[0])
    for q, n in order[1:]:
        event = {"mechanism": "gaussian", "noise_multiplier": largest, "sample_rate": q,
                 "count": n}
        if compose([event], delta, "rdp") >= epsilon - tolerance - _RDP_MARGIN:
            largest = max(largest, search(q, n))
    return largest


def _bisect(target: float, tolerance: float, high: float, low: float, spent) -> float:
    """The noise multiplier in ``[low, high]`` whose ``spent`` lies in
    ``[target - tolerance, target]`` (``high`` raised until it spends at most the target)."""
    while spent(high) > target:
        low, high = high, 1.5 * high
        if not math.isfinite(high):
            raise ValueError(f"no noise multiplier spends target_epsilon={target}: the "
                             "descriptor's share alone exceeds it")
    for _ in range(100):
        mid = 0.5 * (low + high)
        eps = spent(mid)
        if eps > target:
            low = mid
        else:
            high = mid
            if eps >= target - tolerance:
                break
    return high
