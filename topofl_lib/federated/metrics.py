"""Evaluation metrics, written for speed on many tiny test sets."""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

__all__ = ["accuracy", "convergence_round", "roc_auc"]


def roc_auc(y_true, scores) -> float:
    """Area under the ROC curve via the Mann–Whitney U statistic (ties count 1/2).

    Equals :func:`sklearn.metrics.roc_auc_score` for binary labels, at a fraction of
    its cost. Returns NaN when ``y_true`` has a single class.
    """
    y = np.asarray(y_true).astype(bool)
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(scores)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def accuracy(y_true, proba, threshold: float = 0.5) -> float:
    """Fraction of correct predictions at ``threshold``."""
    y = np.asarray(y_true)
    return float(np.mean((np.asarray(proba) >= threshold) == (y == 1)))


def convergence_round(curve, fraction: float = 0.95) -> int:
    """First round (1-based) whose value reaches ``fraction`` of the final value.

    This is the paper's definition (Table 1: "first round reaching 95% of final AUC").
    """
    curve = np.asarray(curve, dtype=np.float64)
    if curve.size == 0:
        raise ValueError("curve is empty")
    hit = np.flatnonzero(curve >= fraction * curve[-1])
    return int(hit[0]) + 1
