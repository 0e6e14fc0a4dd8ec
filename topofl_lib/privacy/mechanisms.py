r"""Differentially private release of topological descriptors.

The pTopoFL server uses only the direction of a descriptor,
:math:`u = \phi/\|\phi\|_2` (clustering, trust and Eq. 6 weights all work on
l2-normalised descriptors). Every :math:`u` lies on the unit sphere, so for *any* two
datasets :math:`\|u(D) - u(D')\|_2 \le 2`: the L2 sensitivity is 2 whatever the
adjacency relation, with no appeal to the stability theorem (which does not bound the
Betti-curve counts). For the Laplace mechanism the released vector is clipped to L1
norm ``clip`` (default :math:`\sqrt m`, which leaves unit vectors unchanged), giving L1
sensitivity ``2 * clip``.

* :class:`GaussianMechanism`: (epsilon, delta)-DP. ``calibration="analytic"`` (default)
  is the analytic Gaussian mechanism of Balle & Wang (2018), the smallest sigma with
  :math:`\Phi(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}) - e^\varepsilon
  \Phi(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}) \le \delta`, valid for
  every epsilon > 0; ``"classic"`` is :math:`\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon`
  (Dwork & Roth, Thm A.1), proven only for epsilon < 1.
* :class:`LaplaceMechanism`: epsilon-DP with scale :math:`b = \Delta_1/\varepsilon`.

A released descriptor costs its epsilon once per release. pTopoFL releases the paper's
descriptor once (round 0; signature tracking is then off); a model-dependent label-aware
descriptor is released again after every round. ``privacy_event()`` describes one release
for a :class:`~topofl_lib.privacy.PrivacyAccountant`, which composes them.

Both mechanisms are scikit-learn style objects (parameters, ``get_params``), so a run
that uses one can be stored and keyed by the run store like any other parameter.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.base import BaseEstimator

from .._validation import (
    as_float_array,
    check_choice,
    check_finite,
    check_random_state,
    check_real,
    power_of_two_split,
)
from ..storage import register_storable

#: What the vectors of :func:`clip_norm` and the mechanisms' ``release`` are called.
_X = "x (the vectors to release)"

__all__ = ["GaussianMechanism", "LaplaceMechanism", "analytic_gaussian_sigma", "clip_norm"]


def clip_norm(x, bound: float, ord: int = 2) -> np.ndarray:
    """Scale each row of ``x`` so that its ``ord``-norm is at most ``bound``.

    Parameters
    ----------
    x : array-like of shape (n, d) or (d,)
        Finite real vectors (a single vector is treated as one row).
    bound : float
        Largest norm (> 0).
    ord : {1, 2, inf}, default=2
        The norm's order (as :func:`numpy.linalg.norm`).

    Returns
    -------
    ndarray of shape (n, d)
        The clipped rows (rows within the bound unchanged). The norms are computed on
        each row divided by a power of two, so a row whose norm overflows float64 (or
        whose squares underflow) is clipped as exactly as any other.
    """
    check_real(bound, "bound", low=0.0, low_open=True)
    if ord not in (1, 2, np.inf) or isinstance(ord, bool):
        raise ValueError(f"ord must be 1, 2 or inf (a norm), got {ord!r}")
    x = check_finite(np.atleast_2d(as_float_array(x, _X)), _X)
    if x.ndim != 2:
        raise ValueError(f"{_X} must be one vector or a 2-D array of rows, got shape "
                         f"{x.shape}")
    u, e = power_of_two_split(x, axis=1)  # x = u * 2**e, |u| < 1: ||u|| cannot overflow
    norms = np.linalg.norm(u, ord=ord, axis=1, keepdims=True)
    clipped = norms > np.ldexp(bound, -e)  # ||x|| > bound
    return np.where(clipped, u * (bound / np.where(clipped, norms, 1.0)), x)


def _noisy(x: np.ndarray, noise: np.ndarray, mechanism) -> np.ndarray:
    """``x + noise``, refused if it overflowed (a noise scale near the float64 limit)."""
    with np.errstate(over="ignore"):
        out = x + noise
    return check_finite(out, f"the release of {mechanism!r}",
                        hint="; its noise overflowed float64: raise epsilon",
                        error=ValueError)


def _check_scale(scale: float, mechanism: str, **params) -> float:
    """Refuse a noise scale that is not a finite float (``epsilon`` too small)."""
    if not np.isfinite(scale):
        given = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise ValueError(f"epsilon={params['epsilon']!r} is too small: the {mechanism} "
                         f"noise scale for {given} is {scale}, beyond float64")
    return scale


def _check_eps_delta(epsilon, delta):
    check_real(epsilon, "epsilon", low=0.0, low_open=True)
    if delta is not None:
        check_real(delta, "delta", low=0.0, low_open=True)
        if delta >= 1:
            raise ValueError(f"delta must be < 1, got {delta}")


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma making the Gaussian mechanism (epsilon, delta)-DP (Balle & Wang 2018).

    Parameters
    ----------
    epsilon : float
        Privacy loss (> 0).
    delta : float
        Failure probability, in (0, 1).
    sensitivity : float
        L2 sensitivity (> 0).

    Returns
    -------
    float
        The noise standard deviation.
    """
    _check_eps_delta(epsilon, delta)
    check_real(sensitivity, "sensitivity", low=0.0, low_open=True)

    def excess(sigma):
        a = sensitivity / (2 * sigma)
        b = epsilon * sigma / sensitivity
        # e^eps * Phi(-a - b) in log space: exp(eps) overflows for large epsilon
        return norm.cdf(a - b) - np.exp(epsilon + norm.logcdf(-a - b)) - delta

    lo, hi = 1e-6 * sensitivity, sensitivity
    while excess(lo) <= 0:  # very large epsilon: sigma below 1e-6 sensitivity
        if lo < 1e-150 * sensitivity:
            raise ValueError(f"epsilon={epsilon} is too large to calibrate: sigma would be "
                             f"below {lo:.3g} (float64 underflow)")
        lo, hi = 1e-3 * lo, lo
    while excess(hi) > 0:
        if hi > 1e150 * sensitivity:
            raise ValueError(f"epsilon={epsilon}, delta={delta} need sigma above {hi:.3g}")
        hi *= 2.0
    xtol = 1e-12 * min(sensitivity, 1e6 * lo)  # relative to sigma when sigma is tiny
    return float(brentq(excess, lo, hi, xtol=xtol, rtol=1e-12))


@register_storable
class GaussianMechanism(BaseEstimator):
    """Add N(0, sigma^2 I) calibrated to (epsilon, delta) and an L2 sensitivity.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    sensitivity : float, default=2.0
        L2 sensitivity of the released vector (2 for unit-norm descriptors).
    calibration : {"analytic", "classic"}
    """

    def __init__(self, epsilon: float, delta: float = 1e-5, sensitivity: float = 2.0,
                 calibration: str = "analytic"):
        _check_eps_delta(epsilon, delta)
        if delta is None:
            raise ValueError("delta must be given for the Gaussian mechanism")
        check_real(sensitivity, "sensitivity", low=0.0, low_open=True)
        check_choice(calibration, "calibration", ("analytic", "classic"))
        self.epsilon, self.delta = float(epsilon), float(delta)
        self.sensitivity, self.calibration = float(sensitivity), calibration
        if calibration == "classic":  # the analytic sigma is finite (or refused) for all
            with np.errstate(over="ignore"):
                _check_scale(self.sigma, "Gaussian", epsilon=epsilon, delta=delta,
                             sensitivity=sensitivity)

    @property
    def sigma(self) -> float:
        """Noise standard deviation per coordinate."""
        if self.calibration == "classic":
            return self.sensitivity * np.sqrt(2 * np.log(1.25 / self.delta)) / self.epsilon
        return analytic_gaussian_sigma(self.epsilon, self.delta, self.sensitivity)

    def release(self, x, random_state=None) -> np.ndarray:
        """Clip rows of ``x`` to L2 norm ``sensitivity / 2`` and add Gaussian noise.

        Parameters
        ----------
        x : array-like of shape (n, d) or (d,)
            Vectors to release.
        random_state : None, int or Generator
            Seeds the noise.

        Returns
        -------
        ndarray of shape (n, d)
            The noisy release.
        """
        rng = check_random_state(random_state)
        x = clip_norm(x, self.sensitivity / 2, ord=2)
        return _noisy(x, rng.normal(scale=self.sigma, size=x.shape), self)

    def privacy_event(self) -> dict:
        """One release, for a :class:`~topofl_lib.privacy.PrivacyAccountant`.

        Returns
        -------
        dict
            A Gaussian event of noise multiplier ``sigma / sensitivity``.
        """
        return {"mechanism": "gaussian", "noise_multiplier": self.sigma / self.sensitivity}

    def __repr__(self) -> str:
        return (f"GaussianMechanism(epsilon={self.epsilon}, delta={self.delta}, "
                f"sensitivity={self.sensitivity}, calibration={self.calibration!r})")


@register_storable
class LaplaceMechanism(BaseEstimator):
    """Add i.i.d. Laplace(b) noise, ``b = 2 * clip / epsilon`` after clipping to L1 norm ``clip``.

    Parameters
    ----------
    epsilon : float > 0
    clip : float, default=sqrt(48)
        L1 clipping bound; unit-L2 vectors of dimension 48 have L1 norm at most sqrt(48).
    """

    def __init__(self, epsilon: float, clip: float = float(np.sqrt(48))):
        _check_eps_delta(epsilon, None)
        check_real(clip, "clip", low=0.0, low_open=True)
        self.epsilon, self.clip = float(epsilon), float(clip)
        with np.errstate(over="ignore"):
            _check_scale(self.scale, "Laplace", epsilon=epsilon, clip=clip)

    @property
    def scale(self) -> float:
        """Laplace scale ``b`` (noise std is ``sqrt(2) b``)."""
        return 2.0 * self.clip / self.epsilon

    def release(self, x, random_state=None) -> np.ndarray:
        """Clip rows of ``x`` to L1 norm ``clip`` and add Laplace noise.

        Parameters
        ----------
        x : array-like of shape (n, d) or (d,)
            Vectors to release.
        random_state : None, int or Generator
            Seeds the noise.

        Returns
        -------
        ndarray of shape (n, d)
            The noisy release.
        """
        rng = check_random_state(random_state)
        x = clip_norm(x, self.clip, ord=1)
        return _noisy(x, rng.laplace(scale=self.scale, size=x.shape), self)

    def privacy_event(self) -> dict:
        """One release, for a :class:`~topofl_lib.privacy.PrivacyAccountant`.

        Returns
        -------
        dict
            A Laplace event of pure ``epsilon``.
        """
        return {"mechanism": "laplace", "epsilon": self.epsilon}

    def __repr__(self) -> str:
        return f"LaplaceMechanism(epsilon={self.epsilon}, clip={self.clip})"
