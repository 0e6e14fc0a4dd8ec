r"""Differential privacy of the model channel: client-level DP-FedAvg and DP-SGD.

pTopoFL's clients send their trained model every round (Algorithm 1: "transmit
:math:`\phi_k` and :math:`\theta_k`"), as every baseline's do. The two options here are
passed as ``model_dp=`` to :class:`~topofl_lib.federated.FedAvg`,
:class:`~topofl_lib.federated.FedProx` and :class:`~topofl_lib.federated.PTopoFL`; the
engine accounts every release with a :class:`~topofl_lib.privacy.PrivacyAccountant` per
client and records the epsilon after each round in ``history_`` (``"epsilon"``: the
largest over the clients; ``"client_epsilon"``: every client's).

**Client-level DP** (:class:`ClientLevelDP`; McMahan, Ramage, Talwar & Zhang 2018,
"Learning differentially private recurrent language models"). Each round every client
takes part with probability ``sample_rate`` (Poisson sampling of clients); the server
clips each participant's update :math:`\Delta_k = \theta_k - \theta` to L2 norm ``clip``
(C), forms the weighted sum :math:`\sum_k a_k\,{\rm clip}_C(\Delta_k)` with weights
:math:`a_k \in [0, 1]` fixed before the round, adds :math:`N(0, z^2 C^2 I)` and divides
by the *expected* total weight :math:`q \sum_k a_k` over all clients (the fixed-denominator
estimator). Removing a client's contribution (its update set to zero) changes the sum by
at most :math:`a_k C \le C`, so each round is a Gaussian mechanism of multiplier ``z``,
Poisson-subsampled at rate ``q``, for every client, whether it took part or not. The
weights are what keeps the sensitivity bounded: FedAvg's data-volume weights
:math:`n_k / \sum n` would let one large client weigh arbitrarily much, so under this
option FedAvg weighs every client 1, and pTopoFL uses its Eq. 6 weights without the size
factor (distance to the cluster's mean descriptor, times Eq. 8 trust), divided by their
largest value in the cluster; they depend only on the descriptors the server received,
so, once those are released (and accounted), they are public. The noise is drawn at the
server (a trusted aggregator, or secure aggregation); the guarantee covers the models the
server broadcasts and everything computed from them.

**Sample-level DP** (:class:`SampleLevelDP`; Abadi, Chu, Goodfellow, McMahan, Mironov,
Talwar & Zhang 2016, "Deep learning with differential privacy"). Each local step samples
a batch by Poisson sampling (every example independently with probability
:math:`q = B / n_k`, B the ``batch_size`` of the algorithm), clips each example's
gradient to L2 norm C, sums, adds :math:`N(0, z^2 C^2 I)` and divides by the expected
batch size :math:`q n_k`; a data-independent penalty (the logistic model's L2 term) and
an algorithm's extra term (FedProx's proximal pull) are added after the noise. Each step
is a Poisson-subsampled Gaussian mechanism of multiplier ``z`` for every example of the
client; the accountant composes all the steps of all rounds. An epoch is
:math:`\lceil n_k / B \rceil` steps. Client sizes are treated as public, as the sampling
rate :math:`q = L/N` of Abadi et al. is. Both learners compute clipped per-example
gradients: in closed form for logistic regression, with :func:`torch.func.vmap` of
:func:`torch.func.grad` for a network.

Opacus's own DP-SGD engine (``PrivacyEngine``: a wrapped module, optimiser and data
loader) does not fit this engine, whose models are flat parameter vectors trained by one
local SGD loop (:func:`topofl_lib.federated.local.local_sgd`); its accountants are used
(:mod:`~topofl_lib.privacy.accounting`), and the per-example gradients come from
``torch.func``, torch's public API for them (the one Opacus itself falls back on).

Both report the epsilon at ``delta`` of the whole run: the model channel composed with
the descriptor releases of pTopoFL (:class:`~topofl_lib.privacy.GaussianMechanism`,
:class:`~topofl_lib.privacy.LaplaceMechanism`; without ``descriptor_mechanism``,
pTopoFL's descriptors go out in the clear and the total epsilon is infinite).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from sklearn.base import BaseEstimator

from .._validation import as_float_array, check_choice, check_int, check_real
from ..core.optional import require
from ..storage import register_storable
from .accounting import ACCOUNTINGS, PrivacyAccountant, check_delta
from .mechanisms import clip_norm

__all__ = ["ClientLevelDP", "SampleLevelDP"]


class _ModelDP(BaseEstimator):
    """The parameters and checks both options share."""

    level = ""

    def check(self) -> None:
        """Validate the parameters: a ValueError (or TypeError) naming the bad one."""
        z = check_real(self.noise_multiplier, "noise_multiplier", low=0.0)
        c = check_real(self.clip, "clip", low=0.0, low_open=True)
        if not math.isfinite(z * c):
            raise ValueError(f"the noise scale noise_multiplier * clip = {z} * {c} "
                             "overflows float64")
        check_delta(self.delta)
        check_choice(self.accounting, "accounting", ACCOUNTINGS)

    def accountant(self) -> PrivacyAccountant:
        """A new, empty accountant of this option's kind (Opacus must be installed: the
        fit asks for one per client before it trains, so a missing ``privacy`` extra is
        named before anything runs).

        Returns
        -------
        PrivacyAccountant
        """
        require("opacus", f"model_dp={self!r} (its accountant)")
        return PrivacyAccountant(self.accounting)

    @property
    def noise_scale(self) -> float:
        """Standard deviation of the noise added to a clipped sum: ``noise_multiplier * clip``."""
        return float(self.noise_multiplier) * float(self.clip)


@register_storable
class ClientLevelDP(_ModelDP):
    """Client-level DP of the model channel (DP-FedAvg, McMahan et al. 2018).

    See the module docstring.

    Parameters
    ----------
    noise_multiplier : float, default=1.0
        ``z``: the server's noise standard deviation over ``clip`` (>= 0; 0 adds no
        noise, and the epsilon is infinite).
    clip : float, default=1.0
        ``C``: the L2 bound of each client update (> 0).
    sample_rate : float, default=1.0
        ``q``: each client takes part in a round with this probability, in (0, 1]
        (1: every client, every round).
    delta : float, default=1e-5
        The delta of the reported epsilon, in (0, 1).
    accounting : {"prv", "rdp"}, default="prv"
        The accountant (:mod:`topofl_lib.privacy.accounting`).

    Examples
    --------
    >>> from topofl_lib import FedAvg, make_healthcare
    >>> from topofl_lib.privacy import ClientLevelDP
    >>> scenario = make_healthcare(n_clients=4, n_adversarial=1, random_state=0)
    >>> dp = ClientLevelDP(noise_multiplier=1.0, clip=0.5)
    >>> est = FedAvg(n_rounds=3, model_dp=dp, random_state=0).fit(scenario)
    >>> est.history_["epsilon"].shape
    (3,)
    """

    level = "client"

    def __init__(self, noise_multiplier: float = 1.0, clip: float = 1.0,
                 sample_rate: float = 1.0, delta: float = 1e-5, accounting: str = "prv"):
        self.noise_multiplier = noise_multiplier
        self.clip = clip
        self.sample_rate = sample_rate
        self.delta = delta
        self.accounting = accounting
        self.check()

    def check(self) -> None:
        """Validate the parameters: a ValueError (or TypeError) naming the bad one."""
        super().check()
        check_real(self.sample_rate, "sample_rate", low=0.0, high=1.0, low_open=True)

    def participants(self, n_clients: int, rng: np.random.Generator) -> np.ndarray:
        """Which clients take part in a round: each with probability ``sample_rate``.

        Parameters
        ----------
        n_clients : int
            The number of clients.
        rng : numpy.random.Generator
            The server's generator (nothing is drawn when ``sample_rate`` is 1).

        Returns
        -------
        ndarray of bool, shape (n_clients,)
        """
        check_int(n_clients, "n_clients", low=1)
        if self.sample_rate == 1:
            return np.ones(n_clients, dtype=bool)
        return rng.random(n_clients) < self.sample_rate

    def noisy_sum(self, updates, weights, rng: np.random.Generator) -> np.ndarray:
        r""":math:`\sum_k a_k\,{\rm clip}_C(\Delta_k) + N(0, z^2 C^2 I)`.

        Parameters
        ----------
        updates : array-like of shape (m, dim)
            The participants' updates (``m`` may be 0: the noise alone).
        weights : array-like of shape (m,)
            Their weights, in [0, 1].
        rng : numpy.random.Generator
            Draws the noise.

        Returns
        -------
        ndarray of shape (dim,)
        """
        updates = as_float_array(updates, "updates")
        weights = as_float_array(weights, "weights")
        if updates.ndim != 2 or weights.shape != (updates.shape[0],):
            raise ValueError(f"updates must be (m, dim) and weights (m,), got shapes "
                             f"{updates.shape} and {weights.shape}")
        if np.any(~(weights >= 0) | (weights > 1)):
            raise ValueError("weights must lie in [0, 1] (they bound each client's share "
                             f"of the sum), got {weights.tolist()[:10]}")
        total = (weights @ clip_norm(updates, self.clip) if updates.shape[0]
                 else np.zeros(updates.shape[1]))
        return total + rng.normal(scale=self.noise_scale, size=total.shape)

    def round_event(self) -> dict:
        """A client's release in one round, for its accountant.

        Returns
        -------
        dict
            A Gaussian event of multiplier ``noise_multiplier``, subsampled at
            ``sample_rate``, on the model channel (the engine adds the round).
        """
        return {"mechanism": "gaussian", "noise_multiplier": float(self.noise_multiplier),
                "sample_rate": float(self.sample_rate), "channel": "model"}


@register_storable
class SampleLevelDP(_ModelDP):
    """Sample-level DP of the model channel: DP-SGD in local training (Abadi et al. 2016).

    See the module docstring. Needs ``solver="sgd"`` and a learner with clipped
    per-example gradients (:class:`topofl_lib.core.learner.PrivateGradients`: the logistic
    model and :class:`topofl_lib.deep.TorchModel` networks have them).

    Parameters
    ----------
    noise_multiplier : float, default=1.0
        ``z``: the noise standard deviation of each step's clipped sum over ``clip``
        (>= 0; 0 adds no noise, and the epsilon is infinite).
    clip : float, default=1.0
        ``C``: the L2 bound of each example's gradient (> 0).
    delta : float, default=1e-5
        The delta of the reported epsilon, in (0, 1).
    accounting : {"rdp", "prv"}, default="rdp"
        The accountant (:mod:`topofl_lib.privacy.accounting`). RDP by default here: a
        client's DP-SGD steps are many and every client's sampling rate differs, so PRV
        composes a new history per client and round (about 1 s each: two minutes for
        the accounting of a 15-round, 8-client tabular run, against 3 s with RDP);
        RDP's epsilon is a few percent higher (42.1 against 39.4 after 15 rounds of
        Scenario A, z = 1, measured). ``"prv"`` gives the tighter number.
    """

    level = "sample"

    def __init__(self, noise_multiplier: float = 1.0, clip: float = 1.0,
                 delta: float = 1e-5, accounting: str = "rdp"):
        self.noise_multiplier = noise_multiplier
        self.clip = clip
        self.delta = delta
        self.accounting = accounting
        self.check()

    @staticmethod
    def sample_rate(n: int, batch_size: int) -> float:
        """Each example's probability of being in a batch: ``min(1, batch_size / n)``.

        Parameters
        ----------
        n : int
            The client's number of examples.
        batch_size : int
            The expected batch size.

        Returns
        -------
        float
        """
        return min(1.0, check_int(batch_size, "batch_size", low=1) / check_int(n, "n", low=1))

    def expected_batch(self, n: int, batch_size: int) -> float:
        """The expected batch size ``sample_rate * n``: the denominator of each step.

        Parameters
        ----------
        n : int
            The client's number of examples.
        batch_size : int
            The requested batch size.

        Returns
        -------
        float
        """
        return float(min(batch_size, n))

    def batches(self, n: int, epochs: int, batch_size: int,
                rng: np.random.Generator) -> Iterator[np.ndarray]:
        """Poisson-sampled batches: ``epochs * ceil(n / batch_size)`` of them.

        Parameters
        ----------
        n : int
            The client's number of examples.
        epochs : int
            Local epochs.
        batch_size : int
            The expected batch size.
        rng : numpy.random.Generator
            Draws the batches (nothing when every example is in every batch).

        Yields
        ------
        ndarray of int
            The indices of one batch (possibly empty), in increasing order.
        """
        check_int(n, "n", low=1)
        q = self.sample_rate(n, batch_size)
        for _ in range(epochs * math.ceil(n / batch_size)):
            yield np.arange(n) if q == 1 else np.flatnonzero(rng.random(n) < q)

    def noise(self, size: int, rng: np.random.Generator, dtype=np.float64) -> np.ndarray:
        """One step's noise, ``N(0, (noise_multiplier * clip)^2)`` in each coordinate.

        Parameters
        ----------
        size : int
            The number of parameters.
        rng : numpy.random.Generator
            Draws it.
        dtype : {numpy.float64, numpy.float32}, default=numpy.float64
            The dtype of the gradients it is added to.

        Returns
        -------
        ndarray of shape (size,)
        """
        return rng.standard_normal(size, dtype=dtype) * dtype(self.noise_scale)

    def round_event(self, n: int, batch_size: int, steps: int) -> dict:
        """A client's releases in one round: ``steps`` subsampled Gaussian steps.

        Parameters
        ----------
        n : int
            The client's number of examples.
        batch_size : int
            The expected batch size.
        steps : int
            The steps it took.

        Returns
        -------
        dict
            The event for its accountant (the engine adds the round).
        """
        return {"mechanism": "gaussian", "noise_multiplier": float(self.noise_multiplier),
                "sample_rate": self.sample_rate(n, batch_size), "count": int(steps),
                "channel": "model"}
