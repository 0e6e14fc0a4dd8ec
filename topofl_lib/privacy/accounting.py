r"""Privacy accounting: the total (epsilon, delta) of everything one client releases.

A :class:`PrivacyAccountant` is one client's ledger. Every release is recorded as an
*event*, with the round it happened in (0: before training) and its *channel*
(``"descriptor"``: pTopoFL's topological descriptors; ``"model"``: the model updates):

* a Gaussian mechanism with noise multiplier :math:`z = \sigma / \Delta_2` (a
  descriptor release of :class:`~topofl_lib.privacy.GaussianMechanism`, a round of
  client-level DP-FedAvg), Poisson-subsampled at rate :math:`q` when :math:`q < 1`
  (a round of DP-FedAvg with client sampling, a step of DP-SGD), ``count`` times;
* a Laplace mechanism of pure :math:`\varepsilon` (a descriptor release of
  :class:`~topofl_lib.privacy.LaplaceMechanism`);
* an *unprotected* release (sent without noise: descriptors or models in the clear),
  which has no finite epsilon.

:meth:`PrivacyAccountant.epsilon` composes them, all or one channel's, up to a round.

**The library.** The Gaussian events are composed by Opacus's accountants (Yousefpour et
al. 2021, "Opacus: User-friendly differential privacy library in PyTorch"):

* ``accounting="prv"`` (default): :class:`opacus.accountants.PRVAccountant`, numerical
  composition of privacy loss random variables (Gopi, Lee & Wutschitz 2021, "Numerical
  composition of differential privacy"), the same idea as privacy loss distribution
  (PLD) accounting; it returns an upper bound within ``eps_error`` of the exact epsilon
  of the composition (where the RDP bound exceeds :data:`PRV_LIMIT`, noise too small
  for any meaningful privacy, that bound is returned instead);
* ``accounting="rdp"``: Rényi DP (Mironov 2017) of the subsampled Gaussian (Mironov,
  Talwar & Zhang 2019) with Opacus's conversion to (epsilon, delta) (Balle et al. 2020),
  through :func:`opacus.accountants.analysis.rdp.compute_rdp` and
  :func:`~opacus.accountants.analysis.rdp.get_privacy_spent` at the orders of
  :class:`opacus.accountants.RDPAccountant`; looser, and much faster for many events.

Google's ``dp-accounting`` (PLD and RDP, Laplace events included) was the first choice,
but no release of it installs against this package's lock file: 0.5.0 to 0.6.0 require
``attrs<24`` (the lock pins attrs 26.1.0, for jsonschema) and every earlier one
``numpy~=1.21`` (the lock pins numpy 2.4.6). Opacus 1.6.0 installs against the lock
unchanged (torch stays 2.13.0) and is maintained by Meta.

Opacus accounts only Gaussian mechanisms, so Laplace events (pure
:math:`\varepsilon_i`-DP) are added by basic composition (Dwork & Roth 2014, Thm 3.16):
the total is :math:`\varepsilon_{\rm Gauss}(\delta) + \sum_i \varepsilon_i` at the same
:math:`\delta`, a valid upper bound (exact when there is no Gaussian event). The noise of
a single descriptor release is calibrated by our analytic Gaussian mechanism (Balle &
Wang 2018, :func:`~topofl_lib.privacy.analytic_gaussian_sigma`: Opacus has no exact
calibration for one release, only a binary search through its accountants,
:func:`calibrate_noise_multiplier`); the tests check it against the library's epsilon.

Results are cached by the events' multiset, so clients (and seeds) with the same
releases cost one computation; with ``"prv"`` a composition of hundreds of events takes
about a second. Opacus (and torch, which it needs) are the ``privacy`` extra, imported
only when an epsilon is computed.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from contextlib import contextmanager
from functools import lru_cache

import numpy as np
import pandas as pd

from .._validation import check_choice, check_int, check_real
from ..core.optional import require
from ..storage import register_storable

__all__ = ["ACCOUNTINGS", "CHANNELS", "EVENT_FIELDS", "MAX_TARGET_EPSILON", "MECHANISMS",
           "RELATIONS", "PrivacyAccountant", "calibrate_noise_multiplier", "check_delta",
           "check_event", "compose"]

#: The accountants: Opacus's PRV (default) and RDP.
ACCOUNTINGS = ("prv", "rdp")
#: The neighbouring relations an epsilon can be stated for: datasets that differ by one
#: unit (a record, or a client's whole data) added or removed, or by one unit replaced by
#: another. The events carry the noise multiplier over the relation's sensitivity:
#: replacing moves a clipped sum by up to twice the clip, so the multiplier is halved.
RELATIONS = ("add_remove", "replace")
#: What a release carries: pTopoFL's descriptors, or the model (updates).
CHANNELS = ("descriptor", "model")
#: The mechanisms an event can be: Gaussian (possibly Poisson-subsampled), Laplace, or
#: none (an unprotected release).
MECHANISMS = ("gaussian", "laplace", "none")
#: Above this RDP epsilon the ``"prv"`` accountant returns the RDP bound instead: PRV
#: discretises the privacy loss over a domain as wide as the epsilon, which for noise
#: this small (no meaningful privacy) takes gigabytes (noise multiplier 0.001: 5e5).
PRV_LIMIT = 1000.0
#: The columns of :meth:`PrivacyAccountant.events`.
EVENT_FIELDS = ("round", "channel", "mechanism", "noise_multiplier", "sample_rate",
                "epsilon", "count")


def check_delta(delta, name: str = "delta") -> float:
    """``delta`` as a float in the open interval (0, 1), or a ValueError naming it.

    Parameters
    ----------
    delta : float
        The failure probability of an (epsilon, delta) guarantee.
    name : str, default="delta"
        The parameter's name in the message.

    Returns
    -------
    float
    """
    return check_real(delta, name, low=0.0, high=1.0, low_open=True, high_open=True)


def check_event(event: dict) -> dict:
    """A release event, validated and completed (every field of :data:`EVENT_FIELDS`).

    Parameters
    ----------
    event : dict
        ``mechanism`` (one of :data:`MECHANISMS`), ``channel`` (one of
        :data:`CHANNELS`), ``round`` (int >= 0), ``count`` (int >= 1, default 1) and,
        for ``"gaussian"``, ``noise_multiplier`` (>= 0) and ``sample_rate`` (in (0, 1],
        default 1), for ``"laplace"``, ``epsilon`` (> 0).

    Returns
    -------
    dict
        The event with all fields (NaN where a field does not apply).
    """
    if not isinstance(event, dict):
        raise TypeError(f"event must be a dict, got {type(event).__name__}")
    unknown = set(event) - set(EVENT_FIELDS)
    if unknown:
        raise ValueError(f"event has unknown fields {sorted(unknown)}; expected some of "
                         f"{list(EVENT_FIELDS)}")
    mechanism = check_choice(event.get("mechanism"), "mechanism", MECHANISMS)
    out = {"round": check_int(event.get("round"), "round", low=0),
           "channel": check_choice(event.get("channel"), "channel", CHANNELS),
           "mechanism": mechanism, "noise_multiplier": math.nan, "sample_rate": math.nan,
           "epsilon": math.nan, "count": check_int(event.get("count", 1), "count", low=1)}
    if mechanism == "gaussian":
        out["noise_multiplier"] = check_real(event.get("noise_multiplier"),
                                             "noise_multiplier", low=0.0)
        out["sample_rate"] = check_real(event.get("sample_rate", 1.0), "sample_rate",
                                        low=0.0, high=1.0, low_open=True)
    elif mechanism == "laplace":
        out["epsilon"] = check_real(event.get("epsilon"), "epsilon", low=0.0, low_open=True)
    return out


@register_storable
class PrivacyAccountant:
    """One client's ledger of releases, composed through Opacus's accountants.

    See the module docstring for the events and the library.

    Parameters
    ----------
    accounting : {"prv", "rdp"}, default="prv"
        The accountant of the Gaussian events.
    eps_error : float, default=0.01
        (``"prv"``) how far above the exact epsilon the returned bound may lie.
    relation : {"add_remove", "replace"}, default="add_remove"
        The neighbouring relation the epsilon is stated for (:data:`RELATIONS`); the
        events must carry noise multipliers over that relation's sensitivity (the DP
        options of :mod:`~topofl_lib.privacy.model_channel` record them so). Recorded
        here so that every report names it.

    Attributes
    ----------
    events_ : list of dict
        The recorded events in order (:meth:`events` as a table).

    Examples
    --------
    >>> from topofl_lib.privacy import PrivacyAccountant
    >>> acc = PrivacyAccountant()
    >>> acc.gaussian(2.0, round=0, channel="descriptor")  # doctest: +ELLIPSIS
    PrivacyAccountant(...)
    >>> for r in range(1, 4):
    ...     _ = acc.gaussian(5.0, sample_rate=0.5, round=r, channel="model")
    >>> 0 < acc.epsilon(1e-5, channel="model") < acc.epsilon(1e-5)
    True
    """

    #: Files stored before the relation was recorded were accounted under add/remove.
    relation = "add_remove"

    def __init__(self, accounting: str = "prv", eps_error: float = 0.01,
                 relation: str = "add_remove"):
        self.accounting = check_choice(accounting, "accounting", ACCOUNTINGS)
        self.eps_error = check_real(eps_error, "eps_error", low=0.0, low_open=True)
        self.relation = check_choice(relation, "relation", RELATIONS)
        self.events_: list[dict] = []

    def __repr__(self) -> str:
        return (f"PrivacyAccountant(accounting={self.accounting!r}, "
                f"relation={self.relation!r}, events={len(self.events_)})")

    # -- recording ---------------------------------------------------------------------
    def record(self, event: dict) -> PrivacyAccountant:
        """Record one event (a dict of :data:`EVENT_FIELDS`, :func:`check_event`).

        Parameters
        ----------
        event : dict
            The release.

        Returns
        -------
        PrivacyAccountant
            ``self``.
        """
        self.events_.append(check_event(event))
        return self

    def gaussian(self, noise_multiplier: float, *, sample_rate: float = 1.0,
                 count: int = 1, round: int = 0,
                 channel: str = "model") -> PrivacyAccountant:
        """Record ``count`` Gaussian releases of noise multiplier ``sigma / sensitivity``.

        Parameters
        ----------
        noise_multiplier : float
            Noise standard deviation over the L2 sensitivity (>= 0; 0 is no privacy).
        sample_rate : float, default=1.0
            Poisson sampling rate of each release, in (0, 1] (1: no subsampling).
        count : int, default=1
            How many such releases.
        round : int, default=0
            The round (0: before training).
        channel : {"descriptor", "model"}, default="model"
            What was released.

        Returns
        -------
        PrivacyAccountant
            ``self``.
        """
        return self.record({"mechanism": "gaussian", "noise_multiplier": noise_multiplier,
                            "sample_rate": sample_rate, "count": count, "round": round,
                            "channel": channel})

    def laplace(self, epsilon: float, *, count: int = 1,
                round: int = 0,
                channel: str = "descriptor") -> PrivacyAccountant:
        """Record ``count`` releases of a pure ``epsilon``-DP (Laplace) mechanism.

        Parameters
        ----------
        epsilon : float
            The mechanism's epsilon (> 0).
        count : int, default=1
            How many such releases.
        round : int, default=0
            The round (0: before training).
        channel : {"descriptor", "model"}, default="descriptor"
            What was released.

        Returns
        -------
        PrivacyAccountant
            ``self``.
        """
        return self.record({"mechanism": "laplace", "epsilon": epsilon, "count": count,
                            "round": round, "channel": channel})

    def unprotected(self, *, count: int = 1, round: int = 0,
                    channel: str = "descriptor") -> PrivacyAccountant:
        """Record a release without noise (its epsilon is infinite).

        Parameters
        ----------
        count : int, default=1
            How many such releases.
        round : int, default=0
            The round (0: before training).
        channel : {"descriptor", "model"}, default="descriptor"
            What was released.

        Returns
        -------
        PrivacyAccountant
            ``self``.
        """
        return self.record({"mechanism": "none", "count": count, "round": round,
                            "channel": channel})

    # -- reading ---------------------------------------------------------------------
    def epsilon(self, delta: float, *, through_round: int | None = None,
                channel: str | None = None) -> float:
        """The epsilon at ``delta`` of the events recorded so far.

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).
        through_round : int, optional
            Only the events of rounds ``0 .. through_round``; ``None``: all.
        channel : {"descriptor", "model"}, optional
            Only this channel's events; ``None``: both, composed together.

        Returns
        -------
        float
            0 without events, ``inf`` if any event is unprotected (or has noise
            multiplier 0).
        """
        delta = check_delta(delta)
        if through_round is not None:
            check_int(through_round, "through_round", low=0)
        if channel is not None:
            check_choice(channel, "channel", CHANNELS)
        chosen = [e for e in self.events_
                  if (through_round is None or e["round"] <= through_round)
                  and (channel is None or e["channel"] == channel)]
        return compose(chosen, delta, self.accounting, self.eps_error)

    def events(self) -> pd.DataFrame:
        """The recorded events, one row each (columns :data:`EVENT_FIELDS`).

        Returns
        -------
        pandas.DataFrame
        """
        return pd.DataFrame(self.events_, columns=list(EVENT_FIELDS))

    def history(self, delta: float) -> pd.DataFrame:
        """The cumulative epsilon after each round, per channel and in total.

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).

        Returns
        -------
        pandas.DataFrame
            One row per round from 1 to the last recorded one (round 0 alone if
            nothing happened after it): ``round``, ``epsilon_descriptor``,
            ``epsilon_model``, ``epsilon`` (both channels composed together) and
            ``delta``.
        """
        last = max((e["round"] for e in self.events_), default=0)
        rounds = range(1, last + 1) if last else [0]
        rows = [{"round": r,
                 "epsilon_descriptor": self.epsilon(delta, through_round=r,
                                                    channel="descriptor"),
                 "epsilon_model": self.epsilon(delta, through_round=r, channel="model"),
                 "epsilon": self.epsilon(delta, through_round=r), "delta": delta}
                for r in rounds]
        return pd.DataFrame(rows)


def compose(events: list[dict], delta: float, accounting: str = "prv",
            eps_error: float = 0.01) -> float:
    """The epsilon at ``delta`` of a list of checked events (:func:`check_event`).

    Parameters
    ----------
    events : list of dict
        The releases.
    delta : float
        Target delta.
    accounting : {"prv", "rdp"}, default="prv"
        The accountant of the Gaussian events.
    eps_error : float, default=0.01
        (``"prv"``) the accuracy of the bound.

    Returns
    -------
    float
        Basic composition of the Laplace events' epsilons on top of the Gaussian
        events' epsilon composed by the library; ``inf`` if any event is unprotected.
    """
    gaussian: Counter = Counter()
    pure = 0.0
    for e in events:
        if e["mechanism"] == "none" or (e["mechanism"] == "gaussian"
                                        and e["noise_multiplier"] == 0):
            return math.inf
        if e["mechanism"] == "laplace":
            pure += e["epsilon"] * e["count"]
        else:
            gaussian[(e["noise_multiplier"], e["sample_rate"])] += e["count"]
    if not gaussian:
        return pure
    history = tuple(sorted((z, q, n) for (z, q), n in gaussian.items()))
    return pure + _gaussian_epsilon(history, float(delta), accounting, float(eps_error))


@lru_cache(maxsize=8192)
def _gaussian_epsilon(history: tuple, delta: float, accounting: str,
                      eps_error: float) -> float:
    """Epsilon of the Gaussian events ``history`` (``(z, q, count)`` triples)."""
    require("opacus", "privacy accounting (topofl_lib.privacy.accounting)")
    with _quiet_library():
        from opacus.accountants import RDPAccountant
        from opacus.accountants.analysis.rdp import get_privacy_spent

        rdp = sum(n * _rdp_curve(z, q) for z, q, n in history)
        bound = float(get_privacy_spent(orders=RDPAccountant.DEFAULT_ALPHAS, rdp=rdp,
                                        delta=delta)[0])
        if accounting == "rdp" or bound > PRV_LIMIT:
            return bound
        from opacus.accountants import PRVAccountant

        accountant = PRVAccountant()
        accountant.load_state_dict({"history": [list(h) for h in history],
                                    "mechanism": "prv"})
        return float(accountant.get_epsilon(delta, eps_error=eps_error))


@contextmanager
def _quiet_library():
    """Silence what Opacus's accountants print on valid input: NumPy's log(0) at the
    edge of PRV's domain, and RDP's "Optimal order is the largest alpha" (the epsilon
    is still a valid bound, only perhaps not the tightest; PRV's domain size uses RDP)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"), \
            warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Optimal order", category=UserWarning)
        yield


@lru_cache(maxsize=1024)
def _rdp_curve(noise_multiplier: float, sample_rate: float) -> np.ndarray:
    """Rényi DP of one (subsampled) Gaussian event at Opacus's default orders."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis.rdp import compute_rdp

    return np.asarray(compute_rdp(q=sample_rate, noise_multiplier=noise_multiplier, steps=1,
                                  orders=RDPAccountant.DEFAULT_ALPHAS), dtype=np.float64)


#: The largest budget :func:`calibrate_noise_multiplier` calibrates to.
MAX_TARGET_EPSILON = 1e4


def calibrate_noise_multiplier(target_epsilon: float, delta: float, *, steps: int,
                               sample_rate: float = 1.0, accounting: str = "prv",
                               tolerance: float = 0.01) -> float:
    """The noise multiplier whose ``steps`` (subsampled) Gaussian releases spend
    ``target_epsilon`` at ``delta``: Opacus's binary search
    (:func:`opacus.accountants.utils.get_noise_multiplier`).

    For client-level DP-FedAvg, ``steps`` is the number of rounds and ``sample_rate``
    the client sampling rate; for DP-SGD, every local step of every round, at rate
    ``batch_size / n``. Other releases (descriptors) come on top.

    Parameters
    ----------
    target_epsilon : float
        The budget, in (0, :data:`MAX_TARGET_EPSILON`]. Above it the search cannot
        resolve ``tolerance`` (with 1e20 it never ends), and such a budget protects
        nothing anyway. PRV accounting takes longer the larger the budget (about 13 s
        for 500 over 10 steps here).
    delta : float
        Target delta, in (0, 1).
    steps : int
        Number of releases (>= 1).
    sample_rate : float, default=1.0
        Poisson sampling rate of each, in (0, 1].
    accounting : {"prv", "rdp"}, default="prv"
        The accountant.
    tolerance : float, default=0.01
        The search stops within this of ``target_epsilon`` (from below).

    Returns
    -------
    float
        The noise multiplier (the epsilon it gives is at most ``target_epsilon``).
    """
    check_real(target_epsilon, "target_epsilon", low=0.0, high=MAX_TARGET_EPSILON,
               low_open=True)
    delta = check_delta(delta)
    check_int(steps, "steps", low=1)
    check_real(sample_rate, "sample_rate", low=0.0, high=1.0, low_open=True)
    check_choice(accounting, "accounting", ACCOUNTINGS)
    check_real(tolerance, "tolerance", low=0.0, low_open=True)
    require("opacus", "calibrate_noise_multiplier")
    from opacus.accountants.utils import get_noise_multiplier

    with _quiet_library():
        return float(get_noise_multiplier(
            target_epsilon=float(target_epsilon), target_delta=delta,
            sample_rate=float(sample_rate), steps=int(steps), accountant=accounting,
            epsilon_tolerance=float(tolerance)))
