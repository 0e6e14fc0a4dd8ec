r"""Local solvers other than mini-batch SGD (:func:`topofl_lib.federated.local.local_sgd`).

``solver="lbfgs"`` (FedAvg, pTopoFL, Local-only) replaces a client's local SGD by the
exact minimiser of its local objective, mean log-loss plus
:math:`\frac{1}{2 C n_k}\|w_{1:d}\|^2`, found by scikit-learn's
``LogisticRegression(C=C)`` with the lbfgs solver (the same minimiser: scikit-learn's
objective is :math:`C n_k` times ours). This is the local solver of the pTopoFL paper's
released code for pTopoFL and FedAvg (see :mod:`topofl_lib.data.paper_protocol`).

What it changes: the local model no longer depends on the model the server sent, so a
client returns the same model in every round (with static data), the aggregate is the
same in every round and the learning curves are flat after round 1. FedAvg becomes
one-shot averaging of the clients' local optima; pTopoFL, a topology-weighted one-shot
average within clusters blended with the consensus. Methods whose client step adds a
term to the objective (FedProx, SCAFFOLD, pFedMe) keep their gradient steps; the paper's
code runs them full-batch (``batch_size=None``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SOLVERS", "LocalOptima", "fit_logistic"]

#: Local solvers: mini-batch SGD from the received model, or the exact local optimum.
SOLVERS = ("sgd", "lbfgs")


def fit_logistic(X: np.ndarray, y: np.ndarray, C: float, max_iter: int = 1000) -> np.ndarray:
    """The minimiser ``[w, b]`` of a client's L2-regularised logistic objective.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Training features (no bias column).
    y : ndarray of shape (n,)
        Binary labels 0/1 (both present).
    C : float
        Inverse regularisation strength (the intercept is not penalised).
    max_iter : int
        lbfgs iteration cap (scikit-learn's default tolerance decides convergence).

    Returns
    -------
    ndarray of shape (d + 1,)
        Weights, then bias: the parameter vector of
        :class:`~topofl_lib.federated.local.LogisticLearner`.
    """
    # imported here: a Flower ClientApp imports this module through its settings, and
    # scikit-learn's import is most of an interpreter's start there
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=C, max_iter=max_iter).fit(X, y)
    return np.r_[model.coef_.ravel(), model.intercept_]


class LocalOptima:
    """The clients' local optima of one fit (``solver="lbfgs"``), each fitted once per
    data set (a continual scenario's new data are fitted again).

    Parameters
    ----------
    C : float
        Inverse regularisation strength.
    """

    def __init__(self, C: float):
        self.C = C
        self._cache: dict = {}

    def get(self, k: int, data: tuple) -> np.ndarray:
        """Client ``k``'s optimum on ``data`` (the learner's ``(Xb, y, ...)``), a copy.

        Parameters
        ----------
        k : int
            The client.
        data : tuple
            Its data in the logistic learner's form (features with a bias column, labels).

        Returns
        -------
        ndarray of shape (d + 1,)
        """
        cached = self._cache.get(k)
        if cached is None or cached[0] is not data:
            Xb, y = data[0], data[1]
            cached = (data, fit_logistic(Xb[:, :-1], y, self.C))
            self._cache[k] = cached
        return cached[1].copy()
