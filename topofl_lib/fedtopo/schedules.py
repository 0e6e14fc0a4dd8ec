r"""Adaptive weighting of the topological alignment loss (FedTopo Appendix B.2).

The TAL weight of client :math:`i` at round :math:`r` (1-based) and local epoch
:math:`e` (0-based) is

.. math:: \alpha_i^{(r,e)} = \lambda^{(r,e)}\,\alpha_i^{\mathrm{base}},\qquad
          \lambda^{(r,e)} = \min\!\Big(1, \frac{e+1}{E_{\mathrm{warm}}}\Big) e^{-\gamma r}
          \qquad\text{(B.2)}

with one of four bases:

``"warmup"``
    :math:`\alpha^{\mathrm{base}} = \alpha_{\max}` (no feedback).
``"linear"`` (Linear-Topo)
    :math:`\bar\ell` = mean of the last ``window`` TAL values,
    :math:`\eta = (\max(\bar\ell-\ell_{\min}, 0)/(\ell_{\max}-\ell_{\min}+\epsilon))^\beta`
    with :math:`\beta` = ``beta_linear`` (1), and
    :math:`\alpha^{\mathrm{base}} = \alpha_{\min} + (\alpha_{\max}-\alpha_{\min})\eta`.
    As printed, :math:`\eta` is not clipped above, so a loss beyond :math:`\ell_{\max}`
    gives a weight beyond :math:`\alpha_{\max}`.
``"piecewise"``
    The same line, clipped: :math:`\alpha_{\min}` below :math:`\ell_{\min}`,
    :math:`\alpha_{\max}` above :math:`\ell_{\max}`.
``"smooth"`` (Smooth-Topo)
    As Linear-Topo on an exponentially weighted moving average of the TAL values
    (smoothing factor ``ewma``, 0.2: an effective window of about nine values, "a
    longer window") with the softened exponent :math:`\beta` = ``beta_smooth`` (0.5),
    clipped to :math:`\eta \le 1`.

Before any TAL value is observed the base is ``alpha_init``. Choices where the paper
gives no value (documented): :math:`E_{\mathrm{warm}} = 2` epochs; the client floor
:math:`\alpha_{\min}^{(i)} = \alpha_{\mathrm{init}}(1 - H(p_i)/\log C)` from the
normalised entropy of its label distribution (a one-class client gets
:math:`\alpha_{\mathrm{init}}`, a balanced one 0), "client-specific by imbalance" in
Table C.3. The other defaults are Table C.3's: :math:`\alpha_{\mathrm{init}} = 0.2`,
window 3, :math:`\gamma = 0.05`, :math:`\alpha_{\max} = 0.7` (the middle of
[0.6, 0.8]), :math:`[\ell_{\min}, \ell_{\max}] = [0.1, 0.85]` (FMNIST).
"""

from __future__ import annotations

from collections import deque

import numpy as np
from sklearn.base import BaseEstimator

from .._validation import (
    as_float_array,
    check_choice,
    check_finite,
    check_int,
    check_range,
    check_real,
)
from ..storage import register_storable

__all__ = ["SCHEDULES", "AlphaSchedule", "calibrate_loss_range", "imbalance_floor"]

#: The four strategies of Appendix B.2 (Table 4's Warm, Linear, P-wise, Smooth).
SCHEDULES = ("warmup", "linear", "piecewise", "smooth")


def imbalance_floor(label_counts, alpha_init: float = 0.2) -> float:
    """:math:`\\alpha_{\\min}^{(i)} = \\alpha_{init}(1 - H(p)/\\log C)` from label counts.

    Parameters
    ----------
    label_counts : array-like of shape (n_classes,)
        Non-negative counts over at least two classes, with a positive total.
    alpha_init : float, default=0.2
        The initial TAL weight :math:`\\alpha_{init}`.

    Returns
    -------
    float
        The floor: 0 for balanced labels, ``alpha_init`` for a single class.
    """
    counts = as_float_array(label_counts, "label_counts")
    if (counts.ndim != 1 or counts.size < 2 or not np.all(np.isfinite(counts))
            or np.any(counts < 0) or counts.sum() <= 0):
        raise ValueError(f"label_counts must be a 1-D array of non-negative counts over "
                         f">= 2 classes with a positive total, got {counts}")
    p = counts / counts.sum()
    nz = p[p > 0]
    return float(alpha_init * (1.0 - (-(nz * np.log(nz)).sum()) / np.log(counts.size)))


def calibrate_loss_range(tal_log, quantiles=(10.0, 90.0)) -> tuple[float, float]:
    """``[l_min, l_max]`` from observed TAL values (column 4 of ``FedTopo.tal_log_``).

    Table C.3 says the range is "tuned per dataset"; this tunes it to the scale of *our*
    embedding (a pilot run's TAL percentiles), not to any accuracy. Zero values (the
    first step of a round, where local = global) are ignored.

    Parameters
    ----------
    tal_log : array-like
        A ``tal_log_`` array (n_steps, 5), or the TAL values themselves.
    quantiles : tuple of float, default=(10.0, 90.0)
        Lower and upper percentiles.

    Returns
    -------
    l_min, l_max : float
        The two percentiles of the positive TAL values.
    """
    quantiles = check_range(quantiles, "quantiles", check_real, low=0.0, high=100.0)
    log = check_finite(as_float_array(tal_log, "tal_log"), "tal_log")
    if log.ndim == 2 and log.shape[1] != 5:
        raise ValueError(f"tal_log must be a tal_log_ array of shape (n_steps, 5) or the "
                         f"TAL values, got shape {log.shape}")
    losses = log[:, 4] if log.ndim == 2 else log.ravel()
    losses = losses[losses > 0]
    if losses.size < 2:
        raise ValueError("need at least two positive TAL values to calibrate loss_range")
    lo, hi = np.percentile(losses, quantiles)
    if not hi > lo:
        raise ValueError(f"TAL percentiles {quantiles} coincide ({lo}); cannot calibrate")
    return float(lo), float(hi)


@register_storable
class AlphaSchedule(BaseEstimator):
    """One of the four TAL weight schedules; :meth:`start` gives a per-client state.

    Parameters
    ----------
    strategy : {"warmup", "linear", "piecewise", "smooth"}, default="smooth"
    alpha_max : float, default=0.7
    alpha_init : float, default=0.2
    warmup_epochs : int, default=2
    decay : float, default=0.05
        :math:`\\gamma` of Eq. B.2.
    window : int, default=3
    loss_range : tuple of float, default=(0.1, 0.85)
    beta_linear : float, default=1.0
    beta_smooth : float, default=0.5
    ewma : float, default=0.2
    """

    def __init__(self, strategy: str = "smooth", alpha_max: float = 0.7,
                 alpha_init: float = 0.2, warmup_epochs: int = 2, decay: float = 0.05,
                 window: int = 3, loss_range: tuple = (0.1, 0.85), beta_linear: float = 1.0,
                 beta_smooth: float = 0.5, ewma: float = 0.2):
        self.strategy = strategy
        self.alpha_max = alpha_max
        self.alpha_init = alpha_init
        self.warmup_epochs = warmup_epochs
        self.decay = decay
        self.window = window
        self.loss_range = loss_range
        self.beta_linear = beta_linear
        self.beta_smooth = beta_smooth
        self.ewma = ewma

    def validate(self) -> AlphaSchedule:
        check_choice(self.strategy, "strategy", SCHEDULES)
        check_real(self.alpha_max, "alpha_max", low=0.0)
        check_real(self.alpha_init, "alpha_init", low=0.0)
        check_int(self.warmup_epochs, "warmup_epochs", low=1)
        check_real(self.decay, "decay", low=0.0)
        check_int(self.window, "window", low=1)
        lo, hi = check_range(self.loss_range, "loss_range", check_real)
        if not lo < hi:
            raise ValueError(f"loss_range must be (low, high) with low < high, "
                             f"got {self.loss_range}")
        check_real(self.beta_linear, "beta_linear", low=0.0, low_open=True, high=1.0)
        check_real(self.beta_smooth, "beta_smooth", low=0.0, low_open=True, high=1.0)
        check_real(self.ewma, "ewma", low=0.0, low_open=True, high=1.0)
        return self

    def start(self, alpha_min: float = 0.0) -> ScheduleState:
        """A fresh state for one client with floor ``alpha_min``."""
        self.validate()
        check_real(alpha_min, "alpha_min", low=0.0)
        return ScheduleState(self, float(alpha_min))

    def trajectory(self, losses, n_rounds: int, epochs: int, steps_per_epoch: int,
                   alpha_min: float = 0.0) -> np.ndarray:
        """Alphas a client would use for the TAL ``losses`` it observes, step by step.

        ``losses`` has one value per step (``n_rounds * epochs * steps_per_epoch``);
        returns the alpha used at each step (before that step's loss is observed).

        Parameters
        ----------
        losses : array-like of shape (n_rounds * epochs * steps_per_epoch,)
            The TAL value observed at each step.
        n_rounds : int
            Number of rounds.
        epochs : int
            Local epochs per round.
        steps_per_epoch : int
            Steps per local epoch.
        alpha_min : float, default=0.0
            The client's floor.

        Returns
        -------
        ndarray of shape (n_rounds * epochs * steps_per_epoch,)
            The alpha used at each step.
        """
        state = self.start(alpha_min)
        for value, name in ((n_rounds, "n_rounds"), (epochs, "epochs"),
                            (steps_per_epoch, "steps_per_epoch")):
            check_int(value, name, low=1)
        losses = check_finite(as_float_array(losses, "losses"), "losses")
        if losses.shape != (n_rounds * epochs * steps_per_epoch,):
            raise ValueError(f"losses must hold one value per step, shape "
                             f"({n_rounds * epochs * steps_per_epoch},), got {losses.shape}")
        out = np.empty(losses.size)
        t = 0
        for r in range(1, n_rounds + 1):
            for e in range(epochs):
                for _ in range(steps_per_epoch):
                    out[t] = state.alpha(r, e)
                    state.observe(losses[t])
                    t += 1
        return out


class ScheduleState:
    """Running TAL statistics of one client (kept across rounds)."""

    def __init__(self, schedule: AlphaSchedule, alpha_min: float):
        self.schedule = schedule
        self.alpha_min = alpha_min
        self.recent = deque(maxlen=schedule.window)
        self.smoothed: float | None = None

    def observe(self, loss: float) -> None:
        loss = float(loss)
        self.recent.append(loss)
        a = self.schedule.ewma
        self.smoothed = loss if self.smoothed is None else a * loss + (1 - a) * self.smoothed

    def base(self) -> float:
        s = self.schedule
        if s.strategy == "warmup":
            return float(s.alpha_max)
        if not self.recent:
            return float(s.alpha_init)
        lo, hi = s.loss_range
        span = hi - lo + 1e-8
        level = self.smoothed if s.strategy == "smooth" else float(np.mean(self.recent))
        eta = max(level - lo, 0.0) / span
        if s.strategy == "linear":
            eta = eta ** s.beta_linear
        elif s.strategy == "piecewise":
            eta = min(eta, 1.0)
        else:
            eta = min(eta, 1.0) ** s.beta_smooth
        return float(self.alpha_min + (s.alpha_max - self.alpha_min) * eta)

    def alpha(self, round_: int, epoch: int) -> float:
        """Eq. B.2 at round ``round_`` (1-based) and local epoch ``epoch`` (0-based)."""
        s = self.schedule
        lam = min(1.0, (epoch + 1) / s.warmup_epochs) * np.exp(-s.decay * round_)
        return float(lam * self.base())
