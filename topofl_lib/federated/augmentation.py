r"""pTopoFL's feature augmentation (Sec. 3.2), computed by each client on its own data.

Four columns are appended to a client's features: the distance of the sample to the
client's training centroid (divided by :math:`\sqrt d`), the H0 and H1 persistence
entropies (divided by :math:`\log m`, m the number of points in the persistence
computation), and the Betti-0 number at the median H0 death scale (divided by m); see
:mod:`topofl_lib.federated.ptopofl`. Kept apart from the estimator so that a client
process (:mod:`topofl_lib.flower.client_app`) imports only what it needs.
"""

from __future__ import annotations

import numpy as np

from ..topology.descriptor import betti_curve

__all__ = ["augment_features", "augmentation_stats"]


def augmentation_stats(X, topology) -> tuple:
    """Sec. 3.2 feature-augmentation statistics of one client (computed client-side).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The client's training features.
    topology : tuple
        :func:`~topofl_lib.topology.client_topology`'s output for ``X``.

    Returns
    -------
    tuple
        ``(centre, scale, constants)`` for :func:`augment_features`: the training
        centroid (d,), :math:`\\sqrt d`, and the three topological columns (3,).
    """
    phi, dgms, Xs = topology
    m = Xs.shape[0]
    h0 = dgms[0]
    median_scale = np.median(h0[:, 1]) if h0.size else 0.0
    b0 = betti_curve(h0, np.array([median_scale]), n_essential=1)[0]
    log_m = np.log(max(m, 2))
    constants = np.array([phi[0] / log_m, phi[1] / log_m, b0 / m])
    return X.mean(axis=0), np.sqrt(X.shape[1]), constants


def augment_features(X, stats) -> np.ndarray:
    """Append the four Sec. 3.2 columns to ``X`` (see the module docstring).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features (training or test).
    stats : tuple
        The client's :func:`augmentation_stats`.

    Returns
    -------
    ndarray of shape (n, d + 4)
    """
    centre, scale, constants = stats
    dist = np.linalg.norm(X - centre, axis=1, keepdims=True) / scale
    return np.hstack([X, dist, np.broadcast_to(constants, (X.shape[0], 3))])
