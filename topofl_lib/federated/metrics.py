"""Evaluation metrics, written for speed on many tiny test sets."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._validation import as_float_array, check_choice, check_finite, check_real
from .settings import EVALUATE_ON

__all__ = ["accuracy", "convergence_round", "evaluate_clients", "evaluation_choices",
           "roc_auc", "round_history"]


def _check_scored(y_true, scores, name: str) -> tuple[np.ndarray, np.ndarray]:
    y, s = np.asarray(y_true), as_float_array(scores, name)
    if y.ndim != 1 or s.shape != y.shape:
        raise ValueError(f"y_true and {name} must be 1-D of the same length, got shapes "
                         f"{y.shape} and {s.shape}")
    if y.size == 0:
        raise ValueError(f"y_true and {name} are empty: there is nothing to score")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError(f"y_true must hold binary labels 0/1, got {np.unique(y)[:10].tolist()}")
    return y, check_finite(s, name)


def roc_auc(y_true, scores) -> float:
    """Area under the ROC curve via the Mann–Whitney U statistic (ties count 1/2).

    Equals :func:`sklearn.metrics.roc_auc_score` for binary labels, at a fraction of
    its cost.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels 0/1.
    scores : array-like of shape (n,)
        Finite scores, higher meaning class 1.

    Returns
    -------
    float
        The AUC; NaN when ``y_true`` has a single class.
    """
    y, scores = _check_scored(y_true, scores, "scores")
    y = y.astype(bool)
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    # imported here: scipy.stats costs 0.6 s to import, and a Flower ClientApp, a new
    # interpreter per message under Flower's own executor, scores only when asked to
    from scipy.stats import rankdata

    ranks = rankdata(scores)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def accuracy(y_true, proba, threshold: float = 0.5) -> float:
    """Fraction of correct predictions at ``threshold``.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels 0/1.
    proba : array-like of shape (n,)
        P(y = 1); predicted 1 where ``proba >= threshold``.
    threshold : float, default=0.5

    Returns
    -------
    float
    """
    y, proba = _check_scored(y_true, proba, "proba")
    check_real(threshold, "threshold")
    return float(np.mean((proba >= threshold) == (y == 1)))


def convergence_round(curve, fraction: float = 0.95) -> int:
    """First round (1-based) whose value reaches ``fraction`` of the final value.

    This is the paper's definition (Table 1: "first round reaching 95% of final AUC").

    Parameters
    ----------
    curve : array-like of shape (n_rounds,)
        Finite metric per round.
    fraction : float, default=0.95
        In (0, 1].

    Returns
    -------
    int
    """
    curve = as_float_array(curve, "curve")
    if curve.ndim != 1 or curve.size == 0:
        raise ValueError(f"curve must be a non-empty 1-D array, got shape {curve.shape}")
    check_finite(curve, "curve", hint=" (AUC is NaN for multi-class models: use accuracy)")
    check_real(fraction, "fraction", low=0.0, low_open=True, high=1.0)
    hit = np.flatnonzero(curve >= fraction * curve[-1])
    return int(hit[0]) + 1


def evaluate_clients(learner: Any, model_of: Callable[[int], np.ndarray],
                     tests: Sequence[tuple[np.ndarray, np.ndarray]],
                     round_number: int) -> np.ndarray:
    """Every client's (AUC, accuracy) on its test set after a round.

    Parameters
    ----------
    learner : Learner
        Reads the flat parameter vectors (its ``evaluate``).
    model_of : callable
        ``model_of(k)``: the model client ``k`` deploys; checked finite, in client order.
    tests : sequence of (X_test, y_test)
        Each client's test set (its model input).
    round_number : int
        The round just ended (1-based), named in the error.

    Returns
    -------
    ndarray of shape (n_clients, 2)
        Clients that share a model and a test set are evaluated once.

    Raises
    ------
    FloatingPointError
        A deployed model is not finite (the server's aggregate diverged).
    """
    scores, cache = np.empty((len(tests), 2)), {}
    for k, (X_test, y_test) in enumerate(tests):
        w = check_finite(np.ascontiguousarray(model_of(k)),
                         f"the model client {k} deploys after round {round_number}",
                         hint=" (the server's aggregate diverged)", error=FloatingPointError)
        key = (id(X_test), hashlib.blake2b(w.tobytes(), digest_size=16).digest())
        if key not in cache:
            cache[key] = learner.evaluate(w, X_test, y_test)
        scores[k] = cache[key]
    return scores


def evaluation_choices(method, scenario) -> dict:
    """The evaluation choices of a fit: the method's own, else the scenario's
    (``scenario.meta["evaluation"]``), else ``evaluate_on="honest"``, no standardising.

    Parameters
    ----------
    method : FederatedAlgorithm
        Its ``evaluate_on`` and ``standardise`` (None: not chosen).
    scenario : FederatedScenario

    Returns
    -------
    dict
        ``evaluate_on`` and ``standardise``.
    """
    chosen = {"evaluate_on": "honest", "standardise": False,
              **scenario.meta.get("evaluation", {})}
    for key in chosen:
        if getattr(method, key) is not None:
            chosen[key] = getattr(method, key)
    check_choice(chosen["evaluate_on"], "evaluate_on", EVALUATE_ON)
    return chosen


def round_history(client_auc: np.ndarray, client_acc: np.ndarray, scored) -> dict:
    """A fit's ``history_`` of metrics: each round's mean over the ``scored`` clients,
    and every client's.

    Parameters
    ----------
    client_auc, client_acc : ndarray of shape (n_rounds, K)
    scored : ndarray of int
        The evaluated clients.

    Returns
    -------
    dict of ndarray
        ``auc``, ``accuracy``, ``client_auc``, ``client_accuracy``.
    """
    return {"auc": client_auc[:, scored].mean(axis=1),
            "accuracy": client_acc[:, scored].mean(axis=1),
            "client_auc": client_auc, "client_accuracy": client_acc}
