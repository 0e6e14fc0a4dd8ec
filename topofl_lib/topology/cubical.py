r"""Cubical sublevel-set persistence of 2-D maps, with the pixels that create and kill
each feature, so that diagrams (and everything built on them) are differentiable.

FedTopo (Sec. 3.1, Eq. 1) filters an activation map :math:`A \in \mathbb{R}^{H\times W}`
by its sublevel sets :math:`\{(i,j) : A_{ij} \le \lambda\}`, with the values on the grid
*vertices* (Appendix B.3: the "V-construction": pixels are vertices, 4-neighbours are
joined by edges, unit squares fill in). Every finite persistence pair
:math:`(b, d)` is created by one pixel and killed by another, and its coordinates are
exactly those two pixel values: :math:`b = A_{p_b}`, :math:`d = A_{p_d}`. So
:func:`cubical_pairs` asks the persistence library for ``(p_b, p_d)`` and
:func:`gather_diagrams` reads the values from a torch tensor; gradients then flow from
anything computed on the diagram back into the map (the pairing is locally constant,
so this is the exact derivative wherever the map has no ties).

Backends, measured on this machine (``benchmarks/fedtopo_te.py``, one batch of 32
Fashion-MNIST images through FedTopo's CNN): for conv1 (192 maps of 24x24) ``cripser``
takes 0.05 s and ``gudhi`` 0.10 s; for conv2 (512 maps of 8x8) ``gudhi`` takes 0.05 s
and ``cripser`` 0.09 s (its per-call overhead dominates small maps). Tiling all maps of
a batch into one large image separated by barriers was *slower* with both (0.06 s and
0.36 s for conv1), so each map is one call. ``"auto"`` therefore uses cripser for maps
of at least 16x16 pixels when it is installed (it is GPL-licensed, so it is an optional
extra: ``pip install topofl[fast]``) and gudhi (MIT) otherwise. Both give the same
diagrams (a test checks it); where a map has ties they may name different but
equal-valued pixels.

Conventions: pairs with zero persistence are dropped, and so is the one essential
:math:`H_0` class of each map (its death is infinite); a 2-D grid has no essential
:math:`H_1`.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from .._validation import check_choice

__all__ = ["CUBICAL_BACKENDS", "cubical_pairs", "gather_diagrams", "resolve_backend"]

#: Persistence libraries for cubical complexes.
CUBICAL_BACKENDS = ("auto", "cripser", "gudhi")


#: ``"auto"`` uses cripser for maps with at least this many pixels (16x16).
AUTO_CRIPSER_PIXELS = 256


def resolve_backend(backend: str, n_pixels: int | None = None) -> str:
    """The library ``backend`` stands for on maps of ``n_pixels`` pixels.

    ``"auto"``: cripser if installed and the maps have at least
    :data:`AUTO_CRIPSER_PIXELS` pixels (or their size is not given), else gudhi.
    """
    check_choice(backend, "backend", CUBICAL_BACKENDS)
    if backend == "auto":
        big = n_pixels is None or n_pixels >= AUTO_CRIPSER_PIXELS
        has_cripser = importlib.util.find_spec("cripser") is not None
        return "cripser" if big and has_cripser else "gudhi"
    if importlib.util.find_spec(backend) is None:
        extra = "fast" if backend == "cripser" else "all"
        raise ImportError(f"backend={backend!r} needs the {backend} package: "
                          f"pip install {backend}  (or pip install -e .[{extra}])")
    return backend


def _pairs_gudhi(m: np.ndarray) -> np.ndarray:
    import gudhi

    # gudhi indexes vertices in Fortran order; the transpose's Fortran order is the
    # map's C order, and the complex (hence the diagram) is the same.
    cc = gudhi.CubicalComplex(vertices=m.T)
    cc.compute_persistence(homology_coeff_field=2, min_persistence=0.0)
    regular, _ = cc.vertices_of_persistence_pairs()
    out = [np.column_stack([np.full(len(p), d), p]) for d, p in enumerate(regular) if len(p)]
    return np.vstack(out).astype(np.int64) if out else np.empty((0, 3), np.int64)


def _pairs_cripser(m: np.ndarray) -> np.ndarray:
    import cripser

    r = cripser.computePH(m, maxdim=1)
    finite = r[:, 2] < np.finfo(np.float64).max / 2
    r = r[finite & (r[:, 2] > r[:, 1])]
    W = m.shape[1]
    birth = r[:, 3].astype(np.int64) * W + r[:, 4].astype(np.int64)
    death = r[:, 6].astype(np.int64) * W + r[:, 7].astype(np.int64)
    return np.column_stack([r[:, 0].astype(np.int64), birth, death])


def cubical_pairs(maps, backend: str = "auto") -> list[np.ndarray]:
    """Persistence pairs of each map as pixel indices.

    Parameters
    ----------
    maps : array-like of shape (n_maps, H, W)
        Finite values; each map is filtered by its sublevel sets (V-construction).
    backend : {"auto", "cripser", "gudhi"}

    Returns
    -------
    list of ndarray of shape (n_pairs, 3)
        For each map, rows ``(dim, birth_pixel, death_pixel)`` with pixels as C-order
        flat indices into the map; only finite pairs with positive persistence.
    """
    arr = np.asarray(maps, dtype=np.float64)
    if arr.ndim != 3:
        raise ValueError(f"maps must have shape (n_maps, H, W), got shape {arr.shape}")
    if arr.shape[1] < 2 or arr.shape[2] < 2:
        raise ValueError(f"each map must be at least 2x2, got {arr.shape[1:]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("maps contain NaN or infinite values")
    n_pixels = arr.shape[1] * arr.shape[2]
    fn = _pairs_cripser if resolve_backend(backend, n_pixels) == "cripser" else _pairs_gudhi
    out = []
    for m in arr:
        p = fn(np.ascontiguousarray(m))
        flat = m.ravel()
        out.append(p[flat[p[:, 2]] > flat[p[:, 1]]])  # positive persistence only
    return out


def gather_diagrams(flat_maps, pairs: list[np.ndarray]):
    """Birth and death values read from ``flat_maps`` at the pairs' pixels.

    Parameters
    ----------
    flat_maps : torch.Tensor of shape (n_maps, H * W)
        The maps the pairs were computed on (may require grad).
    pairs : list of ndarray
        Output of :func:`cubical_pairs` for those maps.

    Returns
    -------
    map_index, dim : torch.LongTensor of shape (n_pairs,)
    birth, death : torch.Tensor of shape (n_pairs,)
        Differentiable with respect to ``flat_maps``.
    """
    import torch

    if len(pairs) != flat_maps.shape[0]:
        raise ValueError(f"got {len(pairs)} pair lists for {flat_maps.shape[0]} maps")
    counts = [len(p) for p in pairs]
    stacked = np.vstack(pairs) if sum(counts) else np.empty((0, 3), np.int64)
    device = flat_maps.device
    map_index = torch.from_numpy(np.repeat(np.arange(len(pairs)), counts)).to(device)
    idx = torch.from_numpy(stacked).to(device)
    birth = flat_maps[map_index, idx[:, 1]]
    death = flat_maps[map_index, idx[:, 2]]
    return map_index, idx[:, 0], birth, death
