r"""Local solvers of the clients: L2-regularised logistic regression trained by SGD.

A model is a vector :math:`w \in \mathbb{R}^{d+1}` (weights, then bias). The local
objective of client :math:`k` is the mean log-loss plus
:math:`\frac{1}{2 C n_k} \|w_{1:d}\|^2`, the per-sample form of scikit-learn's
``LogisticRegression(C=C)`` objective (paper Table 3: C = 1.0).

Every algorithm's client step is :func:`local_sgd` with an optional *extra gradient
term* (FedProx's proximal pull, SCAFFOLD's control-variate correction), so there is
one implementation of local training. :func:`local_sgd` sees the model only as a flat
parameter vector and a gradient function, so the same algorithms run over any model
class: :class:`LogisticLearner` here, and torch networks through
:class:`topofl_lib.deep.TorchModel`.

A *learner* is what an algorithm needs from a model class
(:class:`topofl_lib.core.Learner`, the protocol):

* ``client_data(X, y)``: the client's training data in the learner's own form
  (``client_data(X, y, noise_sd=, noise_seed=)`` for a client with per-load noise,
  :attr:`topofl_lib.core.Client.load_noise_sd`: a learner applies it to every
  mini-batch ``gradient`` loads, or refuses it);
* ``init_params(data)``: the initial parameter vector (``data`` is one client's
  ``client_data``, or ``None`` before any exists: logistic regression then returns
  ``None``, since its size depends on the features);
* ``gradient(w, data, idx)``: the stochastic gradient on samples ``idx``;
* ``evaluate(w, X, y)``: ``(auc, accuracy)`` on a test set (AUC is NaN for multi-class);
* ``predict_proba(w, X)``;
* ``representation(w, X)``: the points pTopoFL's descriptor summarises (the raw
  features for logistic regression, penultimate activations for a network);
* ``momentum``: heavy-ball momentum of the client SGD.

A learner may also have a *work space* (:class:`topofl_lib.core.Workspace`:
``to_work`` / ``from_work``): :func:`workspace` then gives the conversions an
algorithm applies once per local training, so that :func:`local_sgd` and the extra
terms run on the learner's own vectors (a torch network's on its device) instead of
host NumPy arrays, with the same floats. Inside :func:`host_vectors` every learner
trains on NumPy vectors (the reference path).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
from scipy.special import expit

from .._validation import check_int
from ..core.learner import Workspace
from ..storage import register_storable
from .metrics import accuracy, roc_auc

__all__ = ["LogisticLearner", "add_bias", "clip_factors", "client_streams", "epoch_batches",
           "host_vectors", "load_noise_seed", "local_sgd", "logistic_gradient", "predict_proba",
           "private_gradient", "workspace"]

#: True inside :func:`host_vectors`: learners' work spaces are ignored.
_HOST_VECTORS: ContextVar[bool] = ContextVar("topofl_host_vectors", default=False)


@contextmanager
def host_vectors() -> Iterator[None]:
    """Within the block, local training runs on host NumPy vectors for every learner.

    The reference path: before learners had work spaces, every SGD step of a torch
    network copied its vector to the device and its gradient back. The results are the
    same floats either way on the CPU (tested); this is how to check it, or to time
    the old path.

    Yields
    ------
    None
    """
    token = _HOST_VECTORS.set(True)
    try:
        yield
    finally:
        _HOST_VECTORS.reset(token)


def _same(w: Any) -> Any:
    return w


def workspace(learner: object) -> tuple[Callable[[np.ndarray], Any], Callable[[Any], np.ndarray]]:
    """``(to_work, from_work)``: the conversions of local training's vectors.

    Parameters
    ----------
    learner : object
        The algorithm's learner.

    Returns
    -------
    to_work : callable
        A copy of a NumPy vector as a work vector: the learner's ``to_work`` if it has
        a work space (:class:`topofl_lib.core.Workspace`) and the call is not inside
        :func:`host_vectors`, else a NumPy copy.
    from_work : callable
        The work vector back as a NumPy array (the identity for NumPy vectors).
    """
    if not _HOST_VECTORS.get() and isinstance(learner, Workspace):
        return learner.to_work, learner.from_work
    return np.array, _same


def add_bias(X: np.ndarray) -> np.ndarray:
    """Append a column of ones."""
    return np.hstack([X, np.ones((X.shape[0], 1))])


def predict_proba(w: np.ndarray, X: np.ndarray) -> np.ndarray:
    """P(y = 1 | x) under the logistic model ``w`` (X without the bias column).

    Parameters
    ----------
    w : ndarray of shape (d + 1,)
        Weights, then the bias.
    X : ndarray of shape (n, d)
        Features.

    Returns
    -------
    ndarray of shape (n,)
    """
    return expit(X @ w[:-1] + w[-1])


def logistic_gradient(w: np.ndarray, Xb: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    """Gradient of mean log-loss + ``l2 / 2 * ||w[:-1]||^2`` (``Xb`` has the bias column).

    Parameters
    ----------
    w : ndarray of shape (d + 1,)
        Weights, then the bias (not penalised).
    Xb : ndarray of shape (n, d + 1)
        Features with the bias column last.
    y : ndarray of shape (n,)
        Labels in {0, 1}.
    l2 : float
        L2 strength.

    Returns
    -------
    ndarray of shape (d + 1,)
    """
    g = Xb.T @ (expit(Xb @ w) - y) / Xb.shape[0]
    g[:-1] += l2 * w[:-1]
    return g


def _copy(w: Any) -> Any:
    """A copy of a NumPy array, or of a work vector (a torch tensor: ``clone``)."""
    return w.copy() if isinstance(w, np.ndarray) else w.clone()


def _zeros_like(w: Any) -> Any:
    """Zeros of ``w``'s shape, dtype (and device, for a torch tensor)."""
    return np.zeros_like(w) if isinstance(w, np.ndarray) else w.new_zeros(w.shape)


def epoch_batches(n: int, epochs: int, batch_size: int,
                  rng: np.random.Generator) -> Iterator[np.ndarray]:
    """The mini-batches of plain local SGD: each epoch, a fresh permutation of the ``n``
    samples cut into consecutive batches (the last one of an epoch may be smaller).

    Parameters
    ----------
    n : int
        Number of client samples.
    epochs : int
        Passes over them.
    batch_size : int
        Mini-batch size.
    rng : numpy.random.Generator
        Draws each epoch's permutation, when the epoch starts.

    Yields
    ------
    ndarray of int
        The indices of one mini-batch.
    """
    for _ in range(epochs):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            yield order[start:start + batch_size]


def clip_factors(norms: Any, clip: float) -> Any:
    r"""Per-row factors :math:`\min(1, C / \|g_i\|)` that scale rows to norm at most ``clip``.

    Computed as ``clip / max(norm, clip)``: exactly 1 for a row within the bound (a zero
    row included), so clipping leaves such rows bit for bit unchanged.

    Parameters
    ----------
    norms : ndarray or torch.Tensor
        The rows' L2 norms.
    clip : float
        The bound (> 0).

    Returns
    -------
    ndarray or torch.Tensor
        Of ``norms``' type and shape.
    """
    return clip / norms.clip(min=clip)


def private_gradient(learner: Any, data: Any, dp: Any, *, n: int, batch_size: int,
                     rng: np.random.Generator,
                     to_work: Callable[[np.ndarray], Any]) -> Callable[[Any, np.ndarray], Any]:
    """DP-SGD's stochastic gradient ``g(w, idx)`` of one client (Abadi et al. 2016).

    ``(sum of the clipped per-example gradients + noise) / expected batch size``, plus
    the penalty's gradient: :class:`topofl_lib.privacy.SampleLevelDP` explains it.

    Parameters
    ----------
    learner : PrivateGradients
        The learner (:class:`topofl_lib.core.learner.PrivateGradients`).
    data : object
        The client's ``client_data``.
    dp : SampleLevelDP
        The option (its ``clip``, ``noise`` and ``expected_batch``).
    n : int
        The client's number of samples.
    batch_size : int
        The expected batch size.
    rng : numpy.random.Generator
        Draws the noise of every step.
    to_work : callable
        Copies a NumPy vector into the learner's work space (:func:`workspace`).

    Returns
    -------
    callable
        ``g(w, idx)``, of ``w``'s type.
    """
    denominator = dp.expected_batch(n, batch_size)

    def gradient(w, idx):
        total = learner.clipped_gradient_sum(w, data, idx, dp.clip)
        dtype = np.float32 if str(total.dtype).endswith("float32") else np.float64
        g = (total + to_work(dp.noise(total.shape[0], rng, dtype))) / denominator
        penalty = learner.penalty_gradient(w, data)
        return g if penalty is None else g + penalty

    return gradient


def local_sgd(
    w0: Any,
    gradient: Callable[[Any, np.ndarray], Any],
    n: int,
    *,
    lr: float,
    epochs: int,
    batch_size: int,
    rng: np.random.Generator,
    extra: Callable[[Any], Any] | None = None,
    momentum: float = 0.0,
    batches: Iterable[np.ndarray] | None = None,
) -> tuple[Any, int]:
    """Mini-batch SGD from ``w0``; returns the final model and the number of steps.

    The vectors may be NumPy arrays or a learner's work vectors (:func:`workspace`):
    the loop only copies, adds, scales by Python floats and updates in place, each
    operation rounding as NumPy's does, so both give the same floats.

    Parameters
    ----------
    w0 : ndarray or work vector
        Initial parameter vector (not modified).
    gradient : callable
        ``gradient(w, idx)``: stochastic gradient of the client loss on samples ``idx``.
    n : int
        Number of client samples (each epoch visits a fresh permutation of them).
    lr : float
        Step size.
    epochs : int
        Passes over the ``n`` samples.
    batch_size : int
        Mini-batch size (the last batch of an epoch may be smaller).
    rng : numpy.random.Generator
        Draws each epoch's permutation.
    extra : callable, optional
        ``extra(w)`` is added to every stochastic gradient (e.g. ``mu * (w - w_global)``).
    momentum : float
        Heavy-ball momentum ``v = momentum * v + g; w -= lr * v`` (0: plain SGD), as
        ``torch.optim.SGD``; the buffer starts at zero every round.
    batches : iterable of ndarray, optional
        The mini-batches, one step each (DP-SGD's Poisson-sampled ones); ``None``:
        :func:`epoch_batches` of ``n``, ``epochs``, ``batch_size`` and ``rng``.

    Returns
    -------
    w : ndarray or work vector
        The final model, of ``w0``'s type.
    steps : int
        Number of SGD steps taken.
    """
    w = _copy(w0)
    velocity = _zeros_like(w) if momentum else None
    steps = 0
    if batches is None:
        batches = epoch_batches(n, epochs, batch_size, rng)
    for idx in batches:
        g = gradient(w, idx)
        if extra is not None:
            g = g + extra(w)
        if velocity is not None:
            velocity *= momentum
            velocity += g
            g = velocity
        w -= lr * g
        steps += 1
    return w, steps


@register_storable
class LogisticLearner:
    """L2-regularised logistic regression (the paper's local model for Scenarios A/B).

    Parameters
    ----------
    C : float
        Inverse regularisation strength; client ``k``'s penalty is ``1 / (C n_k)``.
    """

    n_classes = 2
    momentum = 0.0

    def __init__(self, C: float = 1.0):
        self.C = C

    def client_data(self, X: np.ndarray, y: np.ndarray, noise_sd: float = 0.0,
                    noise_seed: int | None = None):
        """``(X with a bias column, y as float, the client's L2 strength 1 / (C n))``.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Training features.
        y : ndarray of shape (n,)
            Binary training labels.
        noise_sd : float, default=0.0
            Per-load noise (:attr:`topofl_lib.core.Client.load_noise_sd`): refused unless
            0, since this learner trains on the arrays as they are.
        noise_seed : int or None
            Unused (the per-load noise's seed).

        Returns
        -------
        tuple
            ``(Xb, y, l2)``.
        """
        if noise_sd != 0:
            raise ValueError(f"the logistic learner (model=None) cannot add noise to its "
                             f"mini-batches, got a client with load_noise_sd={noise_sd!r}; "
                             "per-load noise needs a TorchModel, or add the noise to "
                             "X_train once")
        return add_bias(X), np.asarray(y, dtype=np.float64), 1.0 / (self.C * X.shape[0])

    def init_params(self, data) -> np.ndarray | None:
        return None if data is None else np.zeros(data[0].shape[1])

    def gradient(self, w: np.ndarray, data, idx: np.ndarray) -> np.ndarray:
        """Gradient of the regularised log-loss on samples ``idx``.

        Parameters
        ----------
        w : ndarray of shape (d + 1,)
            Weights, then the bias.
        data : tuple
            The client's :meth:`client_data`.
        idx : ndarray of int
            Indices of the mini-batch.

        Returns
        -------
        ndarray of shape (d + 1,)
        """
        Xb, y, l2 = data
        return logistic_gradient(w, Xb[idx], y[idx], l2)

    def clipped_gradient_sum(self, w: np.ndarray, data, idx: np.ndarray,
                             clip: float) -> np.ndarray:
        r"""Sum over ``idx`` of each example's log-loss gradient clipped to L2 norm ``clip``.

        Example ``i``'s gradient is :math:`r_i x_i` (:math:`r_i = p_i - y_i`, :math:`x_i`
        with its bias entry), of norm :math:`|r_i| \|x_i\|`, so the clipped sum is
        ``Xb.T @ (r * factors)``: the plain gradient's product when nothing is clipped.

        Parameters
        ----------
        w : ndarray of shape (d + 1,)
            Weights, then the bias.
        data : tuple
            The client's :meth:`client_data`.
        idx : ndarray of int
            Indices of the examples.
        clip : float
            The bound of each example's gradient.

        Returns
        -------
        ndarray of shape (d + 1,)
        """
        Xb, y, _ = data
        Xb, y = Xb[idx], y[idx]
        r = expit(Xb @ w) - y
        norms = np.abs(r) * np.linalg.norm(Xb, axis=1)
        return Xb.T @ (r * clip_factors(norms, clip))

    def penalty_gradient(self, w: np.ndarray, data) -> np.ndarray:
        """Gradient of the L2 penalty ``l2 / 2 * ||w[:-1]||^2`` (the bias is not penalised).

        Parameters
        ----------
        w : ndarray of shape (d + 1,)
            Weights, then the bias.
        data : tuple
            The client's :meth:`client_data` (its last entry is ``l2``).

        Returns
        -------
        ndarray of shape (d + 1,)
        """
        g = np.zeros_like(w)
        g[:-1] = data[2] * w[:-1]
        return g

    def predict_proba(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """P(y = 1 | x) for each row of ``X``.

        Parameters
        ----------
        w : ndarray of shape (d + 1,)
            Weights, then the bias.
        X : ndarray of shape (n, d)
            Features (no bias column).

        Returns
        -------
        ndarray of shape (n,)
        """
        return predict_proba(w, X)

    def evaluate(self, w: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """ROC AUC and accuracy (threshold 0.5) on a test set.

        Parameters
        ----------
        w : ndarray of shape (d + 1,)
            Weights, then the bias.
        X : ndarray of shape (n, d)
            Test features.
        y : ndarray of shape (n,)
            Binary test labels.

        Returns
        -------
        tuple of float
            ``(auc, accuracy)``.
        """
        p = predict_proba(w, X)
        return roc_auc(y, p), accuracy(y, p)

    def representation(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The raw features: pTopoFL's descriptor of a logistic client summarises ``X``.

        Parameters
        ----------
        w : ndarray of shape (d + 1,)
            Weights, then the bias.
            Unused.
        X : ndarray of shape (n, d)
            Features.

        Returns
        -------
        ndarray of shape (n, d)
            ``X`` itself.
        """
        return X


def _check_stream_ids(random_state: int, k: int) -> None:
    """The run's seed and the client's index are non-negative ints (SeedSequence's entropy
    and spawn key); a run seed of None is allowed (fresh entropy)."""
    if random_state is not None:
        check_int(random_state, "random_state", low=0)
    check_int(k, "k", low=0)


def load_noise_seed(random_state: int, k: int, round_number: int = 0) -> int:
    """The seed of client ``k``'s per-load noise (:attr:`topofl_lib.core.Client.load_noise_sd`).

    ``SeedSequence(random_state, spawn_key=(k, 2, round_number))``: beside
    :func:`client_streams`' two streams (``(k, 0)``, ``(k, 1)``) and independent of them,
    so adding the noise changes neither the mini-batch orders nor the subsamples, and a
    client that knows the run seed and its index can draw the same noise.

    Parameters
    ----------
    random_state : int
        The run's seed.
    k : int
        The client's index.
    round_number : int, default=0
        The round whose data the client loads (0 at the start; a continual scenario's
        round when its data change), so new data get new noise.

    Returns
    -------
    int
        A seed in ``[0, 2**32)``.
    """
    _check_stream_ids(random_state, k)
    check_int(round_number, "round_number", low=0)
    sequence = np.random.SeedSequence(random_state, spawn_key=(k, 2, round_number))
    return int(sequence.generate_state(1)[0])


def client_streams(random_state: int, k: int) -> tuple[np.random.Generator, int]:
    """Client ``k``'s own mini-batch generator and persistence-subsample seed.

    Both derive from ``SeedSequence(random_state, spawn_key=(k, ...))``, so a client
    process that knows only the run seed and its partition id draws exactly the numbers
    the in-process engine (``rng_streams="per_client"``) draws for it.

    Parameters
    ----------
    random_state : int
        The run's seed.
    k : int
        The client's index (partition id).

    Returns
    -------
    sgd : numpy.random.Generator
        The client's mini-batch generator.
    seed : int
        The seed of the client's persistence subsamples.
    """
    _check_stream_ids(random_state, k)
    sgd = np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(random_state, spawn_key=(k, 0))))
    topo = int(np.random.SeedSequence(random_state, spawn_key=(k, 1)).generate_state(1)[0])
    return sgd, topo
