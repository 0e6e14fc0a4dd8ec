r"""Record-level local differential privacy for the clustering clients.

Each record is first clipped to the L1 ball of radius ``sensitivity / 2``, so that any
two records differ by at most ``sensitivity`` in L1 norm; adding i.i.d.
Laplace(``sensitivity / epsilon``) noise to every coordinate then makes each released
record epsilon-LDP (the Laplace mechanism). Without the clipping the "sensitivity" of
raw data would be unbounded and the guarantee void.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_points, check_random_state, check_real

__all__ = ["check_clients", "laplace_ldp"]


def check_clients(client_datasets) -> list[np.ndarray]:
    """Validate a list of client datasets: non-empty, finite, one shared dimension."""
    if isinstance(client_datasets, np.ndarray) and client_datasets.ndim == 2:
        raise TypeError("client_datasets must be a list of 2-D arrays, one per client")
    clients = list(client_datasets)
    if not clients:
        raise ValueError("client_datasets is empty")
    out = [check_points(X, f"client_datasets[{i}]") for i, X in enumerate(clients)]
    dims = {X.shape[1] for X in out}
    if len(dims) > 1:
        raise ValueError(f"clients have different dimensions {sorted(dims)}")
    return out


def laplace_ldp(X, epsilon: float, sensitivity: float, random_state=None) -> np.ndarray:
    """Clip every record to L1 norm ``sensitivity / 2`` and add Laplace(``sensitivity/epsilon``)."""
    X = check_points(X)
    check_real(epsilon, "epsilon", low=0.0, low_open=True)
    check_real(sensitivity, "sensitivity", low=0.0, low_open=True)
    rng = check_random_state(random_state)
    radius = sensitivity / 2.0
    l1 = np.abs(X).sum(axis=1, keepdims=True)
    clipped = X * np.minimum(1.0, radius / np.maximum(l1, 1e-300))
    return clipped + rng.laplace(scale=sensitivity / epsilon, size=X.shape)
