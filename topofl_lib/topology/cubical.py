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

Backends. ``"numba"`` (the default; :mod:`topofl_lib.topology.cubical_unionfind`)
computes the pairs of a whole batch of maps in one compiled call: :math:`H_0` by a
union-find over the pixels in increasing order (4-connectivity, the elder rule),
:math:`H_1` by duality as :math:`H_0` of the superlevel sets of the complement
(8-connectivity and the outside). Its pixel order breaks ties by the flat index, so
its pairs are a deterministic function of the values. ``"torch"``
(:mod:`topofl_lib.topology.cubical_torch`) computes the same pairs, pixel for pixel,
with torch on the maps' own device (on a GPU the maps never go to the host), in rounds
of data-parallel steps. ``"gudhi"`` (MIT) and ``"cripser"`` (GPL-3, optional:
``pip install topofl[fast]``) call a library once per map and stay selectable as
references. All give the same diagrams as multisets of values (``tests/test_cubical.py``,
``tests/test_cubical_torch.py``); where a map has ties, gudhi and cripser may name
different but equal-valued pixels. ``benchmarks/fedtopo_te.py`` times them side by
side; on this 2-core machine, for one batch of 32 Fashion-MNIST images through
FedTopo's CNN, conv1 (192 maps of 24x24) takes 2.1 ms with numba, 28-33 ms with cripser
and 76-77 ms with gudhi; conv2 (512 maps of 8x8) 0.7 ms, 53-55 ms and 43-44 ms.

Conventions: pairs with zero persistence are dropped, and so is the one essential
:math:`H_0` class of each map (its death is infinite); a 2-D grid has no essential
:math:`H_1`.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from .._validation import as_float_array, check_choice

__all__ = ["CUBICAL_BACKENDS", "batch_pairs", "cubical_pairs", "gather_diagrams",
           "gather_values", "resolve_backend"]

#: Persistence backends for cubical complexes.
CUBICAL_BACKENDS = ("auto", "numba", "torch", "cripser", "gudhi")

#: Without numba, ``"auto"`` uses cripser for maps with at least this many pixels.
AUTO_CRIPSER_PIXELS = 256

_INSTALL = {"cripser": "pip install -e .[fast]",  # numba and gudhi: dependencies
            "torch": "pip install -e .[deep]"}


def resolve_backend(backend: str, n_pixels: int | None = None) -> str:
    """The library ``backend`` stands for on maps of ``n_pixels`` pixels.

    ``"auto"``: numba when installed (a dependency of topofl); else cripser if installed
    and the maps have at least :data:`AUTO_CRIPSER_PIXELS` pixels (or their size is not
    given), else gudhi.

    Parameters
    ----------
    backend : {"auto", "numba", "torch", "cripser", "gudhi"}
        The requested backend; a named one must be installed.
    n_pixels : int, optional
        Pixels per map (only ``"auto"`` reads it).

    Returns
    -------
    str
        ``"numba"``, ``"torch"``, ``"cripser"`` or ``"gudhi"``.
    """
    check_choice(backend, "backend", CUBICAL_BACKENDS)
    if backend == "auto":
        if importlib.util.find_spec("numba") is not None:
            return "numba"
        big = n_pixels is None or n_pixels >= AUTO_CRIPSER_PIXELS
        has_cripser = importlib.util.find_spec("cripser") is not None
        return "cripser" if big and has_cripser else "gudhi"
    if importlib.util.find_spec(backend) is None:
        raise ImportError(f"backend={backend!r} needs the {backend} package: pip install "
                          f"{backend}  (or {_INSTALL.get(backend, 'pip install -e .')})")
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


def _check_maps(maps, backend: str) -> tuple[np.ndarray, str]:
    arr = np.asarray(maps)
    if arr.dtype != np.float32:
        arr = as_float_array(arr, "maps")
    if arr.ndim != 3:
        raise ValueError(f"maps must have shape (n_maps, H, W), got shape {arr.shape}")
    name = resolve_backend(backend, arr.shape[1] * arr.shape[2])
    low = 2 if name == "cripser" else 1  # cripser treats a 1 x W map as isolated points
    if arr.shape[1] < low or arr.shape[2] < low:
        raise ValueError(f"each map must be at least {low}x{low} for backend {name!r}, "
                         f"got {arr.shape[1:]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("maps contain NaN or infinite values")
    return arr, name


def batch_pairs(maps, backend: str = "auto", dims=(0, 1)) -> tuple[np.ndarray, np.ndarray]:
    """Persistence pairs of a batch of maps as pixel indices, in two flat arrays.

    Parameters
    ----------
    maps : array-like of shape (n_maps, H, W)
        Finite values (float32 is kept, anything else becomes float64); each map is
        filtered by its sublevel sets (V-construction).
    backend : {"auto", "numba", "torch", "cripser", "gudhi"}
    dims : tuple of int, default=(0, 1)
        Homology degrees kept.

    Returns
    -------
    map_index : ndarray of int64, shape (n_pairs,)
        The map of each pair (grouped by map, maps in order).
    pairs : ndarray of int64, shape (n_pairs, 3)
        Rows ``(dim, birth_pixel, death_pixel)``, pixels as C-order flat indices into
        the map; only finite pairs with positive persistence.
    """
    arr, name = _check_maps(maps, backend)
    dims = tuple(int(d) for d in dims)
    n, H, W = arr.shape
    if name == "numba":
        from .cubical_unionfind import pairs_batch

        return pairs_batch(arr, dims)
    if name == "torch":
        import torch

        from .cubical_torch import pairs_torch

        map_index, pairs = pairs_torch(torch.from_numpy(np.ascontiguousarray(arr)), dims)
        return map_index.numpy(), pairs.numpy()
    fn = _pairs_cripser if name == "cripser" else _pairs_gudhi
    out = []
    for m in arr.astype(np.float64):
        p = fn(np.ascontiguousarray(m))
        flat = m.ravel()
        out.append(p[(flat[p[:, 2]] > flat[p[:, 1]]) & np.isin(p[:, 0], dims)])
    counts = [len(p) for p in out]
    pairs = np.vstack(out) if sum(counts) else np.empty((0, 3), np.int64)
    return np.repeat(np.arange(n, dtype=np.int64), counts), pairs


def cubical_pairs(maps, backend: str = "auto") -> list[np.ndarray]:
    """Persistence pairs of each map as pixel indices.

    Parameters
    ----------
    maps : array-like of shape (n_maps, H, W)
        Finite values; each map is filtered by its sublevel sets (V-construction).
    backend : {"auto", "numba", "torch", "cripser", "gudhi"}

    Returns
    -------
    list of ndarray of shape (n_pairs, 3)
        For each map, rows ``(dim, birth_pixel, death_pixel)`` with pixels as C-order
        flat indices into the map; only finite pairs with positive persistence.

    Examples
    --------
    Four local minima (pixels 0, 2, 6 and 8) separated by ridges of value 3: the
    component of the global minimum (pixel 0) never dies (not listed), each of the three
    others dies at the ridge pixel that joins it to an older one:

    >>> import numpy as np
    >>> m = np.array([[0.0, 3.0, 1.0], [3.0, 3.0, 3.0], [2.0, 3.0, 0.5]])
    >>> cubical_pairs(m[None], backend="gudhi")[0]
    array([[0, 2, 1],
           [0, 6, 3],
           [0, 8, 5]])
    """
    map_index, pairs = batch_pairs(maps, backend)
    n = np.shape(maps)[0]
    return np.split(pairs, np.searchsorted(map_index, np.arange(1, n))) if n else []


def gather_values(flat_maps, map_index: np.ndarray, pairs: np.ndarray):
    """Birth and death values read from ``flat_maps`` at the pairs' pixels (one gather).

    Parameters
    ----------
    flat_maps : torch.Tensor of shape (n_maps, H * W)
        The maps the pairs were computed on (may require grad).
    map_index, pairs : ndarray or torch.LongTensor
        Output of :func:`batch_pairs` (or, as tensors on the maps' device, of
        :func:`~topofl_lib.topology.cubical_torch.pairs_torch`) for those maps.

    Returns
    -------
    birth, death : torch.Tensor of shape (n_pairs,)
        Differentiable with respect to ``flat_maps``.
    """
    import torch

    N = flat_maps.shape[1]
    map_index, pairs = (torch.as_tensor(a, device=flat_maps.device) for a in (map_index, pairs))
    idx = torch.cat([map_index * N + pairs[:, 1], map_index * N + pairs[:, 2]])
    values = flat_maps.reshape(-1).index_select(0, idx)
    return values[:len(pairs)], values[len(pairs):]


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
    map_index = np.repeat(np.arange(len(pairs), dtype=np.int64), counts)
    birth, death = gather_values(flat_maps, map_index, stacked)
    device = flat_maps.device
    return (torch.from_numpy(map_index).to(device), torch.from_numpy(stacked[:, 0]).to(device),
            birth, death)
