r"""Local solvers of the clients: L2-regularised logistic regression trained by SGD.

A model is a vector :math:`w \in \mathbb{R}^{d+1}` (weights, then bias). The local
objective of client :math:`k` is the mean log-loss plus
:math:`\frac{1}{2 C n_k} \|w_{1:d}\|^2`, the per-sample form of scikit-learn's
``LogisticRegression(C=C)`` objective (paper Table 3: C = 1.0).

Every algorithm's client step is :func:`local_sgd` with an optional *extra gradient
term* (FedProx's proximal pull, SCAFFOLD's control-variate correction), so there is
one implementation of local training.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import expit

__all__ = ["add_bias", "logistic_gradient", "local_sgd", "predict_proba"]


def add_bias(X: np.ndarray) -> np.ndarray:
    """Append a column of ones."""
    return np.hstack([X, np.ones((X.shape[0], 1))])


def predict_proba(w: np.ndarray, X: np.ndarray) -> np.ndarray:
    """P(y = 1 | x) under the logistic model ``w`` (X without the bias column)."""
    return expit(X @ w[:-1] + w[-1])


def logistic_gradient(w: np.ndarray, Xb: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    """Gradient of mean log-loss + ``l2 / 2 * ||w[:-1]||^2`` (``Xb`` has the bias column)."""
    g = Xb.T @ (expit(Xb @ w) - y) / Xb.shape[0]
    g[:-1] += l2 * w[:-1]
    return g


def local_sgd(
    w0: np.ndarray,
    Xb: np.ndarray,
    y: np.ndarray,
    *,
    lr: float,
    epochs: int,
    batch_size: int,
    l2: float,
    rng: np.random.Generator,
    extra: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, int]:
    """Mini-batch SGD from ``w0``; returns the final model and the number of steps.

    ``extra(w)`` is added to every stochastic gradient (e.g. ``mu * (w - w_global)``).
    """
    w = w0.copy()
    n = Xb.shape[0]
    steps = 0
    for _ in range(epochs):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            g = logistic_gradient(w, Xb[idx], y[idx], l2)
            if extra is not None:
                g = g + extra(w)
            w -= lr * g
            steps += 1
    return w, steps
