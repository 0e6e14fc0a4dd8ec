r"""The 48-dim descriptor's statistics in *per-point* form, for clouds of any size.

:func:`~topofl_lib.topology.descriptor_from_diagrams` reports raw counts (number of
pairs, Betti numbers), so two clients whose clouds have the same shape but a different
number of points (a client smaller than ``n_sub`` uses all its points) get descriptors
whose l2 direction differs mostly through those counts. On our healthcare scenario that
is enough to make the paper's descriptor cluster hospitals by size rather than by their
latent case-mix type. The summaries here keep the same ``8 + 2 L`` layout and the same
statistics, divided so that they do not grow with the number of points ``m``:

=====================================  ============================================
entry                                  per-point form
=====================================  ============================================
persistence entropy :math:`H_q`        :math:`H_q / \log m`
amplitude :math:`A_q`                  :math:`A_q / \sqrt m` (root-mean-square
                                       persistence per point, in filtration units)
pairs above median persistence         divided by :math:`m`
total pairs                            divided by :math:`m`
Betti curves                           divided by :math:`m`
=====================================  ============================================

The threshold grids are given by the caller: the paper's data-adaptive grids (0 to the
95th percentile of the deaths, :func:`paper_grids`) for Vietoris–Rips clouds, or a fixed
grid shared by every client for function filtrations whose values are comparable across
clients (:mod:`topofl_lib.topology.model_anchored`).
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, check_finite, check_int, check_real, l2_norm
from .descriptor import betti_curve, betti_grid, descriptor_names, persistence_entropy

__all__ = ["paper_grids", "per_point_summary", "summary_names"]


def paper_grids(diagrams, n_thresholds: int = 20) -> list[np.ndarray]:
    """Appendix B grids of finite ``[H0, H1]`` diagrams: 0 to the 95th death percentile.

    Parameters
    ----------
    diagrams : list of array-like
        ``[H0, H1]`` (further diagrams are ignored).
    n_thresholds : int, default=20
        Points per grid.

    Returns
    -------
    list of ndarray
        The H0 grid and the H1 grid, each of shape (n_thresholds,).
    """
    return [betti_grid(_pairs(d, f"diagrams[{q}]")[:, 1], n_thresholds)
            for q, d in enumerate(diagrams[:2])]


def _pairs(dgm, name: str) -> np.ndarray:
    """``dgm`` as an (n, 2) float array of pairs with finite births, no NaN (deaths may
    be ``inf``: essential classes)."""
    d = as_float_array(dgm, name)
    if d.size % 2:
        raise ValueError(f"{name} must hold (birth, death) pairs, got shape {d.shape}")
    d = d.reshape(-1, 2)
    if np.isnan(d).any() or not np.isfinite(d[:, 0]).all():
        raise ValueError(f"{name} holds NaN or an infinite birth")
    return d


def per_point_summary(diagrams, n_points: int, grids, n_essential=(1, 0),
                      cap: float | None = None) -> np.ndarray:
    """The ``8 + 2 L`` statistics of :func:`descriptor_from_diagrams` in per-point form.

    Parameters
    ----------
    diagrams : list of ndarray
        ``[H0, H1]`` finite (birth, death) pairs.
    n_points : int
        ``m``, the number of points (vertices) the diagrams were computed from.
    grids : list of two ndarray
        Thresholds of the H0 and H1 Betti curves (same length ``L``).
    n_essential : tuple of two int
        Classes that never die, born at or below the first threshold, that are *not*
        in ``diagrams`` but are counted in the Betti curves (the paper's convention
        counts the one essential H0 class of a Rips filtration).
    cap : float, optional
        Diagrams may hold essential classes as pairs with death ``inf``; the Betti
        curves count them as alive from their birth on, and the other statistics use
        ``min(death, cap)`` (the end of the filtration). Required when a death is
        infinite.

    Returns
    -------
    numpy.ndarray of shape (8 + 2 L,)
        Layout and names as :data:`~topofl_lib.topology.DESCRIPTOR_NAMES`.
    """
    m = check_int(n_points, "n_points", low=1)
    h0, h1 = (_pairs(d, f"diagrams[{q}]") for q, d in enumerate(diagrams[:2]))
    if cap is None and not (np.all(np.isfinite(h0)) and np.all(np.isfinite(h1))):
        raise ValueError("diagrams hold infinite deaths; give cap (the filtration's end)")
    if cap is not None:
        check_real(cap, "cap")
    g0, g1 = (check_finite(as_float_array(g, f"grids[{i}]"), f"grids[{i}]")
              for i, g in enumerate(grids))
    if g0.shape != g1.shape or g0.ndim != 1:
        raise ValueError(f"grids must be two 1-D arrays of one length, got {g0.shape}, {g1.shape}")
    pers = [np.minimum(d[:, 1], np.inf if cap is None else cap) - d[:, 0] for d in (h0, h1)]
    log_m = np.log(max(m, 2))
    scalars = [persistence_entropy(p) / log_m for p in pers]
    scalars += [l2_norm(p, divisor=m) for p in pers]
    scalars += [float((p > np.median(p)).sum()) / m if p.size else 0.0 for p in pers]
    scalars += [h0.shape[0] / m, h1.shape[0] / m]
    curves = []
    for d, g, e in zip((h0, h1), (g0, g1), n_essential, strict=True):
        finite = np.isfinite(d[:, 1])
        alive_forever = (d[~finite, 0][None, :] <= g[:, None]).sum(axis=1)
        curves.append((betti_curve(d[finite], g, n_essential=e) + alive_forever) / m)
    return np.concatenate([scalars, *curves])


def summary_names(n_thresholds: int, prefix: str = "") -> list[str]:
    """Names of a summary's entries, each prefixed by ``prefix``.

    Parameters
    ----------
    n_thresholds : int
        Points per Betti curve.
    prefix : str, default=""

    Returns
    -------
    list of str
    """
    return [prefix + n for n in descriptor_names(n_thresholds)]
