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

__all__ = ["laplace_ldp"]


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
