r"""The pTopoFL paper's privacy *proxies* (Sec. 3.6, Eqs. 10-11; Sec. 4.6, Figure 6).

These are dimension counts, not measurements of leakage:

* reconstruction risk of gradient sharing :math:`\rho_\text{grad} = \min(1, p/(n d))`
  for a model with ``p`` parameters and a client with ``n`` records in
  :math:`\mathbb{R}^d`;
* reconstruction risk of the descriptor :math:`\rho_\text{topo} = \alpha_c\, m/(n d)`
  with ``m = 48`` and the paper's assumed "compression factor" :math:`\alpha_c = 0.1`;
* "mutual-information proxy" :math:`\log_2(1 + \text{dim} \cdot \alpha)` bits, with
  :math:`\alpha = 1` for gradients and :math:`\alpha_c` for descriptors (the paper's
  :math:`\log_2 22` and :math:`\log_2 5.8` for p = 21, m = 48).

Their ratio :math:`\rho_\text{grad}/\rho_\text{topo} = p/(\alpha_c m)` does not depend on
the client at all whenever ``p < n d``; for p = 21 it is 4.375 (the paper: "4.5").
Nothing here observes data: :mod:`topofl_lib.privacy.attacks` measures leakage.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, check_int, check_real

__all__ = ["mi_proxy_bits", "reconstruction_risk_gradient", "reconstruction_risk_topology"]


def _check(n, d):
    n = as_float_array(n, "n")
    if np.any(n < 1) or not np.all(np.isfinite(n)):
        raise ValueError(f"n must be >= 1 records, got {n}")
    check_int(d, "d", low=1)
    return n


def reconstruction_risk_gradient(p: int, n, d: int) -> np.ndarray:
    """Eq. 10: ``min(1, p / (n d))`` (vectorised over ``n``).

    Parameters
    ----------
    p : int
        Floats in the transmitted gradient.
    n : int or array-like of int
        Client records (>= 1).
    d : int
        Features per record.

    Returns
    -------
    ndarray
        The proxy, shaped like ``n`` (a NumPy scalar for a scalar ``n``).
    """
    check_int(p, "p", low=1)
    n = _check(n, d)
    return np.minimum(1.0, p / (n * d))


def reconstruction_risk_topology(m: int, n, d: int, alpha_c: float = 0.1) -> np.ndarray:
    """Eq. 11: ``alpha_c * m / (n d)`` (vectorised over ``n``).

    Parameters
    ----------
    m : int
        Floats in the transmitted descriptor.
    n : int or array-like of int
        Client records (>= 1).
    d : int
        Features per record.
    alpha_c : float, default=0.1
        The paper's compression factor, in (0, 1].

    Returns
    -------
    ndarray
        The proxy, shaped like ``n`` (a NumPy scalar for a scalar ``n``).
    """
    check_int(m, "m", low=1)
    check_real(alpha_c, "alpha_c", low=0.0, low_open=True, high=1.0)
    n = _check(n, d)
    return alpha_c * m / (n * d)


def mi_proxy_bits(dim: int, alpha: float = 1.0) -> float:
    """The paper's ``log2(1 + dim * alpha)`` "mutual-information proxy" in bits.

    Parameters
    ----------
    dim : int
        Dimension of the transmitted object (>= 1).
    alpha : float, default=1.0
        The paper's factor (> 0).

    Returns
    -------
    float
        Bits.
    """
    check_int(dim, "dim", low=1)
    check_real(alpha, "alpha", low=0.0, low_open=True)
    return float(np.log2(1.0 + dim * alpha))
