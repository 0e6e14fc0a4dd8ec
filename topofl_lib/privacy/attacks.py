r"""Real attacks on what federated clients transmit.

Threat model: an honest-but-curious server that knows the model ``w`` it broadcast,
the regularisation, the client's record count ``n`` and dimension ``d``, the
descriptor map (``n_sub``, ``L``, grids; not the client's private subsample seed), and
has samples from the population (other hospitals' records). Three attacks:

Gradient inversion (what a FedSGD/FedAvg-style client sends)
    For logistic regression with a bias, the gradient of one record is
    :math:`((\sigma(w^\top x + b) - y)\,x,\ \sigma(w^\top x + b) - y)`, so
    :math:`x = g_w / g_b` exactly and :math:`y = [g_b < 0]`
    (:func:`invert_single_gradient`). For a mini-batch, :func:`invert_batch_gradient`
    runs the optimisation attack of Zhu et al. (2019) / Geiping et al. (2020) in torch:
    dummy records and soft labels are optimised (Adam) so that their gradient matches
    the transmitted one.
Descriptor inversion (what a pTopoFL client sends)
    :func:`invert_descriptor` searches for a point cloud whose descriptor matches the
    transmitted one. The descriptor is piecewise constant in the points (Betti curves
    and pair counts are integers), so its gradient is zero almost everywhere and a
    gradient-based attack through differentiable persistence would only see the
    entropy and amplitude terms; we use a gradient-free (1+1) evolution strategy with
    a 1/5-success step-size rule, started from a population sample. Because the
    descriptor is invariant to isometries, whatever is recovered is at best recovered
    up to a rotation; starting in the population's frame gives the attacker that frame
    for free (a generous assumption).
Membership inference (both channels)
    :func:`membership_inference` plays the standard game: the client's dataset is
    ``n - 1`` population records plus either the target (member) or another population
    record (non-member). The attacker scores the transmitted object with a likelihood
    ratio test against shadow datasets it simulates with and without the target
    (LiRA-style with Gaussians of a shared diagonal variance; Carlini et al. 2022).
    The same attack is run on gradients and on descriptors, so the AUCs are comparable.
    Against a DP option (``mechanism``) the transmitted object is privatised exactly as
    the option does it (:func:`release_map`), in the trial and in every shadow dataset
    the attacker simulates: it knows the mechanism, not the noise.

Which descriptor (:func:`descriptor_map`): both descriptor attacks target the paper's
48-dim descriptor by default, or one of the label-aware descriptors of
:class:`~topofl_lib.federated.PTopoFL` (``"class_conditional"``, ``"model_anchored"``),
or any map ``(X, y, n_sub, random_state) -> vector``. A label-aware descriptor is a
function of the records *and their labels* (and, model-anchored, of the broadcast
model ``w``, which the server knows): the attacker's records then carry labels too; the
search keeps the labels of its population start and moves the features.

:func:`reconstruction_metrics` scores reconstructions: for each true record the closest
reconstruction (relative L2 error and cosine similarity); a record is *recovered* when
its relative error is at most ``tol``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from .._validation import (
    as_float_array,
    check_finite,
    check_int,
    check_labels,
    check_points,
    check_random_state,
    check_real,
)
from ..core.optional import require
from ..core.seeds import draw_seed
from ..federated.metrics import roc_auc
from ..topology.class_conditional import class_conditional_descriptor
from ..topology.descriptor import topological_descriptor
from ..topology.distances import normalise_descriptors
from ..topology.model_anchored import anchor_margins, model_anchored_descriptor
from .model_channel import ClientLevelDP

__all__ = [
    "ATTACK_DESCRIPTORS",
    "descriptor_map",
    "invert_batch_gradient",
    "invert_descriptor",
    "invert_single_gradient",
    "logistic_data_gradient",
    "membership_inference",
    "reconstruction_metrics",
    "release_map",
]


#: Descriptor names the attacks accept (the descriptor options of pTopoFL).
ATTACK_DESCRIPTORS = ("paper", "class_conditional", "model_anchored")


def descriptor_map(descriptor="paper", *, w: np.ndarray | None = None, n_thresholds: int = 20):
    """The map ``(X, y, n_sub, random_state) -> descriptor`` an attack targets.

    Parameters
    ----------
    descriptor : {"paper", "class_conditional", "model_anchored"} or callable
        ``"paper"``: :func:`~topofl_lib.topology.topological_descriptor` (``y`` is
        ignored); ``"class_conditional"``:
        :func:`~topofl_lib.topology.class_conditional_descriptor` (two classes, the
        defaults of pTopoFL's option); ``"model_anchored"``:
        :func:`~topofl_lib.topology.model_anchored_descriptor` of the records' signed
        margins under the logistic model ``w``. A callable is returned as it is.
    w : ndarray of shape (d + 1,), optional
        The broadcast logistic model (weights, bias); required by ``"model_anchored"``.
    n_thresholds : int
        Betti-curve resolution ``L`` of a named descriptor.

    Returns
    -------
    callable
        ``f(X, y, n_sub, random_state)``; ``n_sub=None`` uses every record.
    """
    if callable(descriptor):
        return descriptor
    if not isinstance(descriptor, str) or descriptor not in ATTACK_DESCRIPTORS:
        raise ValueError(f"descriptor must be one of {list(ATTACK_DESCRIPTORS)} or a callable "
                         f"(X, y, n_sub, random_state) -> vector, got {descriptor!r}")
    check_int(n_thresholds, "n_thresholds", low=2)
    if descriptor == "paper":
        return lambda X, y, n_sub, random_state: topological_descriptor(
            X, n_sub, strict=False, n_thresholds=n_thresholds, random_state=random_state)
    if descriptor == "class_conditional":
        return lambda X, y, n_sub, random_state: class_conditional_descriptor(
            X, y, n_sub=n_sub, n_thresholds=n_thresholds, random_state=random_state)
    w = None if w is None else as_float_array(w, "w")
    if w is None or w.ndim != 1 or not np.all(np.isfinite(w)):
        raise ValueError("descriptor='model_anchored' needs the broadcast model w, a finite "
                         f"1-D vector (weights, bias), got {w!r}")
    from ..federated.local import LogisticLearner

    learner = LogisticLearner()
    return lambda X, y, n_sub, random_state: model_anchored_descriptor(
        X, anchor_margins(learner, w, X, y), n_sub=n_sub, n_thresholds=n_thresholds,
        random_state=random_state)


def release_map(channel: str, mechanism=None):
    """What the server receives of a transmitted object under a DP option: ``f(T, rng)``.

    * ``channel="gradient"`` with a :class:`~topofl_lib.privacy.ClientLevelDP`: the
      object (a client's update; here its data gradient, a one-step update up to the
      learning rate) is clipped to L2 norm ``clip`` and receives the server's noise
      :math:`N(0, z^2 C^2 I)`, i.e. :meth:`ClientLevelDP.noisy_sum` of this one update
      with weight 1, what DP-FedAvg adds to its sum for one client;
    * ``channel="descriptor"`` with a mechanism that has ``release`` (a
      :class:`~topofl_lib.privacy.GaussianMechanism` or
      :class:`~topofl_lib.privacy.LaplaceMechanism`): the descriptor is l2-normalised
      and released by the mechanism, as pTopoFL's ``descriptor_mechanism`` does;
    * ``mechanism=None``: the object itself (nothing drawn).

    Parameters
    ----------
    channel : {"gradient", "descriptor"}
        What the client transmits.
    mechanism : ClientLevelDP, GaussianMechanism, LaplaceMechanism or None
        The DP option of that channel.

    Returns
    -------
    callable
        ``f(T, rng) -> ndarray`` of ``T``'s shape (1-D).
    """
    if channel not in ("gradient", "descriptor"):
        raise ValueError(f"unknown channel {channel!r}; expected 'gradient' or 'descriptor'")
    if mechanism is None:
        return lambda T, rng: T
    if channel == "gradient":
        if not isinstance(mechanism, ClientLevelDP):
            raise TypeError("the gradient channel is privatised by a ClientLevelDP (clipped "
                            f"update, server noise), got {type(mechanism).__name__}")
        return lambda T, rng: mechanism.noisy_sum(T[None, :], np.ones(1), rng)
    if not callable(getattr(mechanism, "release", None)):
        raise TypeError("the descriptor channel is privatised by a mechanism with a "
                        "release(x, random_state) method (GaussianMechanism, "
                        f"LaplaceMechanism), got {type(mechanism).__name__}")
    return lambda T, rng: mechanism.release(normalise_descriptors(T[None, :]), rng)[0]


def logistic_data_gradient(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Gradient of the mean log-loss of logistic model ``w`` (weights, bias) on ``(X, y)``.

    This is what a client sends in one FedSGD step, less the regulariser ``l2 * w``,
    which the server knows and subtracts.

    Parameters
    ----------
    w : ndarray of shape (d + 1,)
        Weights, then the bias.
    X : ndarray of shape (n, d)
        Records.
    y : ndarray of shape (n,)
        Binary labels.

    Returns
    -------
    ndarray of shape (d + 1,)
        The gradient (weights, then bias).
    """
    X = check_points(X)
    w = check_finite(as_float_array(w, "w"), "w")
    if w.shape != (X.shape[1] + 1,):
        raise ValueError(f"w must have {X.shape[1] + 1} entries (weights, bias), got shape "
                         f"{w.shape}")
    y = check_labels(y, X.shape[0], require_both=False)
    r = expit(X @ w[:-1] + w[-1]) - y
    return np.r_[X.T @ r, r.sum()] / X.shape[0]


def invert_single_gradient(grad: np.ndarray) -> tuple[np.ndarray, int]:
    """Closed-form inversion of a one-record logistic gradient: ``x = g_w / g_b``."""
    grad = as_float_array(grad, "grad")
    if grad.ndim != 1 or grad.size < 2:
        raise ValueError(f"grad must be a 1-D gradient (weights then bias), got {grad.shape}")
    if not np.all(np.isfinite(grad)):
        raise ValueError("grad must be finite (no NaN or infinite values)")
    if grad[-1] == 0:
        raise ValueError("the bias gradient is 0: the record is fitted exactly; x is not defined")
    return grad[:-1] / grad[-1], int(grad[-1] < 0)


def invert_batch_gradient(
    grad: np.ndarray,
    w: np.ndarray,
    batch_size: int,
    *,
    n_iter: int = 1500,
    lr: float = 0.05,
    restarts: int = 2,
    random_state=None,
) -> np.ndarray:
    """Optimisation attack on a mini-batch logistic gradient (Zhu et al. 2019).

    Minimises ``||g(X_hat, y_hat) - grad||^2 / ||grad||^2`` over ``batch_size`` dummy
    records ``X_hat`` and label logits with Adam; keeps the best of ``restarts`` random
    initialisations. Returns ``X_hat`` of shape ``(batch_size, d)``.

    Parameters
    ----------
    grad : ndarray of shape (d + 1,)
        The observed gradient.
    w : ndarray of shape (d + 1,)
        The model it was computed at.
    batch_size : int
        Number of records to reconstruct.
    n_iter : int, default=1500
        Adam steps per restart.
    lr : float, default=0.05
        Adam's learning rate (> 0).
    restarts : int, default=2
        Random initialisations.
    random_state : None, int or Generator
        Seeds the initialisations.

    Returns
    -------
    ndarray of shape (batch_size, d)
        The reconstruction ``X_hat``.
    """
    require("torch", "invert_batch_gradient (the optimisation attack)")
    import torch

    torch.set_num_threads(1)
    grad = as_float_array(grad, "grad")
    w = as_float_array(w, "w")
    if grad.shape != w.shape:
        raise ValueError(f"grad has shape {grad.shape} but w has shape {w.shape}")
    if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(w))):
        raise ValueError("grad and w must be finite (no NaN or infinite values)")
    check_int(batch_size, "batch_size", low=1)
    check_int(n_iter, "n_iter", low=1)
    check_int(restarts, "restarts", low=1)
    check_real(lr, "lr", low=0.0, low_open=True)
    rng = check_random_state(random_state)
    d = w.size - 1
    target = torch.as_tensor(grad)
    wt, bt = torch.as_tensor(w[:-1]), torch.as_tensor(w[-1])
    scale = target.pow(2).sum().clamp_min(1e-30)
    best, best_loss = None, np.inf
    for _ in range(restarts):
        gen = torch.Generator().manual_seed(draw_seed(rng))
        X = torch.randn(batch_size, d, generator=gen, dtype=torch.float64, requires_grad=True)
        logits = torch.randn(batch_size, generator=gen, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.Adam([X, logits], lr=lr)
        for _ in range(n_iter):
            opt.zero_grad()
            r = torch.sigmoid(X @ wt + bt) - torch.sigmoid(logits)
            g = torch.cat([X.T @ r, r.sum().reshape(1)]) / batch_size
            loss = (g - target).pow(2).sum() / scale
            loss.backward()
            opt.step()
        if loss.item() < best_loss:
            best_loss, best = loss.item(), X.detach().numpy().copy()
    return best


def reconstruction_metrics(X_hat, X_true, tol: float = 0.1) -> dict[str, float]:
    """How well ``X_hat`` reconstructs the records ``X_true``.

    For every true record the nearest reconstruction (L2) is taken. Returns the fraction
    of true records with relative error ``||x_hat - x|| / ||x|| <= tol``
    (``recovered``), the mean relative error and the mean cosine similarity of those
    nearest pairs.

    Parameters
    ----------
    X_hat : array-like of shape (m, d)
        Reconstructed records.
    X_true : array-like of shape (n, d)
        True records.
    tol : float, default=0.1
        Largest relative error of a recovered record (> 0).

    Returns
    -------
    dict of str to float
        ``recovered``, ``relative_error`` and ``cosine``.
    """
    X_hat = check_points(X_hat, "X_hat")
    X_true = check_points(X_true, "X_true")
    if X_hat.shape[1] != X_true.shape[1]:
        raise ValueError(f"X_hat has {X_hat.shape[1]} features, X_true {X_true.shape[1]}")
    check_real(tol, "tol", low=0.0, low_open=True)
    dist = np.linalg.norm(X_true[:, None, :] - X_hat[None, :, :], axis=2)
    nearest = X_hat[dist.argmin(axis=1)]
    norms = np.linalg.norm(X_true, axis=1)
    rel = np.linalg.norm(nearest - X_true, axis=1) / np.maximum(norms, 1e-12)
    cos = (nearest * X_true).sum(1) / np.maximum(
        np.linalg.norm(nearest, axis=1) * norms, 1e-12)
    return {"recovered": float(np.mean(rel <= tol)), "relative_error": float(rel.mean()),
            "cosine": float(cos.mean())}


def _descriptor_loss(phi: np.ndarray, target: np.ndarray) -> float:
    return float(np.sum(((phi - target) / (np.abs(target) + 1.0)) ** 2))


def invert_descriptor(
    target: np.ndarray,
    population,
    n_points: int,
    *,
    n_iter: int = 2000,
    n_thresholds: int = 20,
    descriptor="paper",
    labels=None,
    w: np.ndarray | None = None,
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Search for ``n_points`` records whose descriptor matches ``target``.

    (1+1) evolution strategy: start from ``n_points`` records drawn from
    ``population``; each step moves one random record by Gaussian noise and keeps the
    move if the scaled squared descriptor error does not grow; the step size follows the
    1/5 success rule. Pass ``n_points = min(n, n_sub)``: only the subsample enters the
    descriptor.

    ``descriptor`` is what the client sent (:func:`descriptor_map`; default the paper's
    48-dim one). A label-aware descriptor needs ``labels`` (one per population record):
    the start records keep their labels and only their features move; the
    model-anchored one also needs the broadcast model ``w``.

    Parameters
    ----------
    target : ndarray of shape (8 + 2 * n_thresholds,)
        The observed descriptor.
    population : array-like of shape (N, d)
        Records the attacker can draw from (at least ``n_points``).
    n_points : int
        Records to reconstruct (at least 2).
    n_iter : int, default=2000
        Evolution steps.
    n_thresholds : int, default=20
        Thresholds of the descriptor's Betti curves.
    descriptor : str or callable, default="paper"
        The descriptor the client sent (:func:`descriptor_map`).
    labels : array-like of shape (N,), optional
        Labels of the population records (required by a label-aware descriptor).
    w : ndarray, optional
        The broadcast model (required by ``"model_anchored"``).
    random_state : None, int or Generator
        Seeds the start and the moves.

    Returns
    -------
    X_hat : ndarray (n_points, d)
    losses : ndarray (n_iter + 1,)  descriptor error after each step
    """
    population = check_points(population, "population", min_points=n_points)
    check_int(n_points, "n_points", low=2)
    check_int(n_iter, "n_iter", low=0)
    fn = descriptor_map(descriptor, w=w, n_thresholds=n_thresholds)
    paper = isinstance(descriptor, str) and descriptor == "paper"
    if labels is not None:
        labels = np.asarray(labels)
        if labels.shape != (population.shape[0],):
            raise ValueError(f"labels must have shape ({population.shape[0]},), got "
                             f"{labels.shape}")
    elif not paper:
        raise ValueError(f"descriptor={descriptor!r} is computed from labelled records: "
                         "pass labels (one per population record)")
    target = as_float_array(target, "target")
    if paper and target.shape != (8 + 2 * n_thresholds,):
        raise ValueError(f"target must be a descriptor of shape ({8 + 2 * n_thresholds},) "
                         f"for n_thresholds={n_thresholds}, got shape {target.shape}")
    check_finite(target, "target")
    rng = check_random_state(random_state)
    start = rng.choice(population.shape[0], n_points, replace=False)
    X = population[start].copy()
    y = None if labels is None else labels[start]

    def loss_of(Z):
        return _descriptor_loss(fn(Z, y, None, None), target)

    phi = np.asarray(fn(X, y, None, None), dtype=np.float64)
    if phi.shape != target.shape:
        raise ValueError(f"target has shape {target.shape}, but the descriptor "
                         f"{descriptor!r} of {n_points} records has shape {phi.shape}")
    loss = _descriptor_loss(phi, target)
    losses = [loss]
    step = 0.5 * float(population.std(axis=0).mean())
    for _ in range(n_iter):
        i = int(rng.integers(n_points))
        old = X[i].copy()
        X[i] = old + rng.normal(scale=step, size=old.size)
        new = loss_of(X)
        if new <= loss:
            loss = new
            step *= 1.5
        else:
            X[i] = old
            step *= 1.5 ** -0.25
        losses.append(loss)
    return X, np.asarray(losses)


def membership_inference(
    population,
    labels,
    n: int,
    channel: str,
    *,
    w: np.ndarray | None = None,
    n_targets: int = 50,
    n_shadow: int = 16,
    n_sub: int = 80,
    descriptor="paper",
    mechanism=None,
    random_state=None,
) -> dict:
    """Likelihood-ratio membership inference on one channel; returns the attack AUC.

    For each of ``n_targets`` target records (drawn from ``population``) the challenger
    builds one client dataset of ``n`` records: ``n - 1`` population records plus the
    target (member, half of the trials) or plus another population record (non-member),
    and transmits ``T(D)``: the logistic data gradient at ``w`` (``channel="gradient"``)
    or the descriptor with a private subsample seed (``channel="descriptor"``). The
    attacker simulates ``n_shadow`` datasets with and ``n_shadow`` without the target,
    fits a diagonal Gaussian to each set of transmitted objects, and scores
    ``log N(T | in) - log N(T | out)``.

    ``descriptor`` is the descriptor the client sends on the descriptor channel
    (:func:`descriptor_map`; default the paper's 48-dim one; ``"model_anchored"`` is
    computed against ``w``); a label-aware one sees the dataset's labels.

    ``mechanism`` attacks a DP option instead of the raw object: every transmitted object
    (the trial's and the shadows') is privatised by :func:`release_map` ``(channel,
    mechanism)`` with fresh noise. The per-trial ``scores`` and ``members`` are returned
    too, for an audit (:mod:`topofl_lib.privacy.audit`).

    Parameters
    ----------
    population : array-like of shape (N, d)
        Records the challenger and the attacker draw from (at least ``n + 2``).
    labels : array-like of shape (N,)
        Their binary labels.
    n : int
        Records per client dataset (at least 2).
    channel : {"gradient", "descriptor"}
        What the client transmits.
    w : ndarray of shape (d + 1,), optional
        The model of the gradient channel (required there).
    n_targets : int, default=50
        Target records (trials).
    n_shadow : int, default=16
        Shadow datasets per side.
    n_sub : int, default=80
        Subsample size of the descriptor channel.
    descriptor : str or callable, default="paper"
        What the descriptor channel sends (:func:`descriptor_map`).
    mechanism : ClientLevelDP, GaussianMechanism, LaplaceMechanism or None
        The channel's DP option (:func:`release_map`); None: sent in the clear.
    random_state : None, int or Generator
        Seeds the trials (and the noise).

    Returns
    -------
    dict
        ``auc`` (0.5 = guessing), ``n_trials``, and per trial its ``scores`` (the
        log-likelihood ratio) and ``members`` (whether the target was in).
    """
    population = check_points(population, "population", min_points=n + 2)
    labels = check_labels(labels, population.shape[0], "labels", require_both=False)
    check_int(n, "n", low=2)
    check_int(n_targets, "n_targets", low=2)
    check_int(n_shadow, "n_shadow", low=2)
    if channel not in ("gradient", "descriptor"):
        raise ValueError(f"unknown channel {channel!r}; expected 'gradient' or 'descriptor'")
    if channel == "gradient" and (w is None or np.shape(w) != (population.shape[1] + 1,)):
        raise ValueError("channel='gradient' needs w of shape (d + 1,)")
    describe = (descriptor_map(descriptor, w=w) if channel == "descriptor" else None)
    release = release_map(channel, mechanism)
    classes = labels.astype(np.int64)
    rng = check_random_state(random_state)
    N = population.shape[0]

    def transmit(idx):
        if channel == "gradient":
            return release(logistic_data_gradient(w, population[idx], labels[idx]), rng)
        seed = draw_seed(rng)  # the client's private subsample seed
        return release(describe(population[idx], classes[idx], n_sub, seed), rng)

    def dataset(target, include):
        others = rng.choice(np.delete(np.arange(N), target), n - 1 + (not include),
                            replace=False)
        return np.r_[others, target] if include else others

    scores, truth = [], []
    for t in range(n_targets):
        target = int(rng.integers(N))
        member = t % 2 == 0
        T = transmit(dataset(target, member))
        ins = np.array([transmit(dataset(target, True)) for _ in range(n_shadow)])
        outs = np.array([transmit(dataset(target, False)) for _ in range(n_shadow)])
        var = np.maximum(np.r_[ins, outs].var(axis=0), 1e-12)
        ll_in = -0.5 * np.sum((T - ins.mean(0)) ** 2 / var)
        ll_out = -0.5 * np.sum((T - outs.mean(0)) ** 2 / var)
        scores.append(ll_in - ll_out)
        truth.append(member)
    truth, scores = np.array(truth), np.array(scores)
    return {"auc": roc_auc(truth, scores), "n_trials": n_targets, "scores": scores,
            "members": truth}
