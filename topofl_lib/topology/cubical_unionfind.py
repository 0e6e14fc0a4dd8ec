r"""Exact cubical persistence of many small 2-D maps in one compiled call (numba).

The V-construction (:mod:`topofl_lib.topology.cubical`): pixels are vertices, pixels
that are 4-neighbours are joined by an edge, a 2x2 block of pixels spans a square,
and a cell enters the sublevel filtration with the largest value of its pixels.

* :math:`H_0`: the sublevel set's components are those of its pixels under
  **4-connectivity** (a square adds no connection its edges do not already make). So
  :math:`H_0` is a union-find over the pixels in increasing order; when a pixel joins
  several components the oldest survives and each younger one dies there (the elder
  rule): a pair (its first pixel, the joining pixel).
* :math:`H_1` by Alexander duality: a hole of the sublevel set :math:`\{A \le t\}` is a
  bounded component of its complement :math:`\{A > t\}`, and two pixels of the
  complement are connected through the plane exactly when they are
  **8-neighbours** (two diagonal pixels of a square whose other two pixels are in the
  sublevel set touch inside the square, which is not filled). Pixels on the border
  touch the unbounded outside. So :math:`H_1` is a union-find over the pixels in
  *decreasing* order, with 8-connectivity and one extra node, the outside, joined to
  every border pixel and older than every pixel: when a pixel joins several
  components, each younger one dies there, and the hole is born at the joining
  pixel's value and dies at the younger component's first (largest) pixel: a pair
  (joining pixel, first pixel).

The outside and each map's global minimum are the essential classes, and are not
reported; neither are pairs of zero persistence (ties). The order is a total order
of the pixels by value with ties broken by the flat index (:func:`sorted_keys`), so
the pairing is a deterministic function of the values, and the diagram, as a multiset
of values, is that of gudhi and cripser (``tests/test_cubical.py`` checks it on
thousands of maps, ties included).

Speed: one compiled call for the whole batch (no per-map overhead); each pass visits a
pixel once, and finds the root of one neighbour per group of already-filtered
neighbours that touch each other (a table lookup on the 8-bit mask of those
neighbours), so a pixel usually costs one find. The union-find is over the padded
cells themselves (a neighbour is its own handle, with no table from cells to positions
on the way to its root), and a find takes the two steps up that reach most roots before
it tests anything. Both keep the branches that vary from pixel to pixel few: on
Fashion-MNIST's conv1 and conv2 activations they took the kernel 23-33% less time than a
union-find over positions with path halving (``docs/guide/speed.md``). The kernel is
compiled by numba on first use and cached on disk next to this module
(``cache=True``); :func:`pairs_batch` is the whole computation for a batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numba
import numpy as np

__all__ = ["over_map_runs", "pairs_batch", "persistence_threads",
           "persistence_threads_limited", "pixel_order", "set_persistence_threads", "sorted_keys"]

@numba.njit(cache=True, nogil=True)
def _float32_keys(flat):  # pragma: no cover - compiled
    # The bits of a float32, mapped to a uint32 with the same order (-0.0 as 0.0), in the
    # high half of a uint64 whose low half is the pixel index.
    n, N = flat.shape
    bits = flat.view(np.uint32)
    keys = np.empty((n, N), np.uint64)
    for m in range(n):
        for j in range(N):
            b = bits[m, j]
            if b == 0x80000000:
                b = 0
            b ^= 0xFFFFFFFF if b >> 31 else 0x80000000
            keys[m, j] = (np.uint64(b) << np.uint64(32)) | np.uint64(j)
    return keys


def sorted_keys(flat: np.ndarray) -> np.ndarray:
    """Each map's pixels in increasing order of (value, flat index), as ``uint64`` keys
    whose low 32 bits are the pixel index.

    Parameters
    ----------
    flat : ndarray of shape (n_maps, n_pixels), float32 or float64, C-contiguous

    For float32 the high 32 bits hold the value's bits mapped to an unsigned integer of
    the same order, so the keys are distinct and numpy's fast unstable sort has a unique
    answer on every machine; for float64 a stable argsort gives the same order (slower).
    Either way ``-0.0`` and ``0.0`` are the same value.
    """
    if flat.dtype == np.float32:
        keys = _float32_keys(np.ascontiguousarray(flat))
        keys.sort(axis=1)
        return keys
    return np.argsort(flat + 0.0, axis=1, kind="stable").astype(np.uint64)


def pixel_order(flat: np.ndarray) -> np.ndarray:
    """``order[m, r]``: map ``m``'s ``r``-th pixel by (value, flat index), int32."""
    return (sorted_keys(flat) & np.uint64(0xFFFFFFFF)).astype(np.int32)


# The 8 neighbours of a pixel, as bits 0..7 of a mask, at these (row, column) offsets;
# neighbour k sees the pixel as its neighbour 7 - k.
_DI = (-1, -1, -1, 0, 0, 1, 1, 1)
_DJ = (-1, 0, 1, -1, 1, -1, 0, 1)


def _representatives(conn: int) -> np.ndarray:
    """For each set of already-filtered neighbours (a mask), one neighbour per group of
    them that is connected within the neighbourhood (4- or 8-connectivity); for
    4-connectivity only groups that touch the pixel (an edge-neighbour) count."""
    table = np.zeros(256, np.uint8)
    for mask in range(256):
        cells = [k for k in range(8) if mask >> k & 1]
        group = {k: k for k in cells}
        for a in cells:
            for b in cells:
                di, dj = abs(_DI[a] - _DI[b]), abs(_DJ[a] - _DJ[b])
                if (di + dj == 1) if conn == 4 else (max(di, dj) == 1):
                    ga, gb = group[a], group[b]
                    for k in cells:  # merge b's group into a's
                        if group[k] == gb:
                            group[k] = ga
        touching = [k for k in cells if conn == 8 or abs(_DI[k]) + abs(_DJ[k]) == 1]
        first = {}
        for k in touching:
            first.setdefault(group[k], k)
        for k in first.values():
            table[mask] |= 1 << k
    return table


_REP4, _REP8 = _representatives(4), _representatives(8)
_LOWEST_BIT = np.array([0] + [(m & -m).bit_length() - 1 for m in range(1, 256)], np.uint8)


@numba.njit(cache=True, nogil=True)
def _find(parent, x):
    while parent[x] != x:  # path halving
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@numba.njit(cache=True, nogil=True, inline="always")
def _root(parent, x):
    # The root of x's component, and x made its child. Most roots are at most two steps
    # up, so those two steps are taken without a test (a root is its own parent): a
    # branch whose outcome varied from pixel to pixel cost more than the loads.
    r = parent[parent[x]]
    if parent[r] != r:
        r = _find(parent, r)
    parent[x] = r
    return r


@numba.njit(cache=True, nogil=True)
def _sweep(m, v, seq, cells, rk, parent, seen, first_off, rest, lowest_bit, off, dim, out_map,
           out_pairs, count):  # pragma: no cover - compiled
    # One union-find pass over the pixels in the order ``seq`` (padded cells ``cells``).
    # The union-find is over the padded cells, so a neighbour is its own handle; a
    # component's root is its first cell in the pass, and the elder rule compares the
    # roots' positions ``rk[cell]`` (1, 2, ...; the padding, the outside, is 0). ``seen[c]``
    # has bit k set once neighbour k of cell c is in the filtration; neighbours connected
    # within the 3x3 neighbourhood are one component already, so one find per group is
    # enough: ``first_off[mask]`` is the offset of the first group's neighbour (0 if there
    # is none: the pixel is then its own root, a new component) and ``rest[mask]`` the
    # bits of the others. Returns the new number of pairs.
    for i in range(seq.size):
        c = cells[i]
        mask = seen[c]
        for k in range(8):
            seen[c + off[k]] |= np.uint8(1 << (7 - k))
        parent[c] = c  # its own root if no group (offset 0), else it joins the first
        # group's component, which is older than it
        cur = _root(parent, c + first_off[mask])
        parent[c] = cur
        bits = rest[mask]
        while bits:  # each further group: the elder survives, the younger dies here
            k = lowest_bit[bits]
            bits &= bits - 1
            rs = _root(parent, c + off[k])
            if rs == cur:
                continue
            old, young = (rs, cur) if rk[rs] < rk[cur] else (cur, rs)
            parent[young] = old
            cur = old
            p = seq[i]  # the younger component, born at q, dies at p
            q = seq[rk[young] - 1]
            lo, hi = (q, p) if dim == 0 else (p, q)
            if v[hi] > v[lo]:
                out_map[count] = m
                out_pairs[count, 0] = dim
                out_pairs[count, 1] = lo
                out_pairs[count, 2] = hi
                count += 1
    return count


@numba.njit(cache=True, nogil=True)
def _kernel(values, keys, H, W, dims, out_map, out_pairs, rep4, rep8,
            lowest_bit):  # pragma: no cover - compiled
    # H0: the pixels in increasing order, 4-connectivity. H1: in decreasing order,
    # 8-connectivity and the outside. The map is padded by one cell on each side: the
    # padding never enters H0, and in H1 it is the outside (rank 0, older than any pixel,
    # a neighbour of every border pixel from the start), so no neighbour needs a check.
    n, N = values.shape
    Wp = W + 2
    Np = (H + 2) * Wp
    pad = np.empty(N, np.int64)  # pixel -> padded cell
    inside = np.zeros(Np, np.bool_)
    for p in range(N):
        pad[p] = (p // W + 1) * Wp + p % W + 1
        inside[pad[p]] = True
    off = np.empty(8, np.int64)
    for k in range(8):
        off[k] = _DI[k] * Wp + _DJ[k]
    outside = np.zeros(Np, np.uint8)  # bits of the padding neighbours of each cell
    for p in range(N):
        for k in range(8):
            if not inside[pad[p] + off[k]]:
                outside[pad[p]] |= np.uint8(1 << k)
    rk = np.zeros(Np, np.int64)  # padded cell -> position in the pass (padding: 0)
    # union-find over the padded cells: every padding cell's parent is cell 0, a padding
    # cell, its own root (the outside); a pixel's is set when the pass reaches it
    parent = np.zeros(Np, np.int64)
    seen = np.empty(Np, np.uint8)
    first_off = np.zeros((2, 256), np.int64)  # per degree, as _sweep reads them
    rest = np.zeros((2, 256), np.uint8)
    for d in range(2):
        rep = rep4 if d == 0 else rep8
        for mask in range(256):
            if rep[mask]:
                first_off[d, mask] = off[lowest_bit[rep[mask]]]
                rest[d, mask] = rep[mask] & (rep[mask] - 1)
    seq = np.empty(N, np.int64)  # the pixels in the pass's order
    cells = np.empty(N, np.int64)  # and their padded cells
    count = 0
    for m in range(n):
        v = values[m]
        for dim in range(2):
            if not dims[dim]:
                continue
            for r in range(N):
                seq[r] = keys[m, r if dim == 0 else N - 1 - r] & 0xFFFFFFFF
                cells[r] = pad[seq[r]]
                rk[cells[r]] = r + 1
            if dim == 0:
                seen[:] = 0
            else:
                seen[:] = outside
            count = _sweep(m, v, seq, cells, rk, parent, seen, first_off[dim], rest[dim],
                           lowest_bit, off, dim, out_map, out_pairs, count)
    return count


def persistence_threads() -> int:
    """The threads :func:`pairs_batch` spreads a batch over when not told: the value of
    :func:`set_persistence_threads`, else numba's thread count (``NUMBA_NUM_THREADS``,
    by default the machine's cores).

    Returns
    -------
    int
    """
    return _THREADS[0] if _THREADS else int(numba.config.NUMBA_NUM_THREADS)


def set_persistence_threads(n_threads: int | None) -> None:
    """Set how many threads :func:`pairs_batch` uses (``None``: numba's thread count).

    The runner's worker processes set 1: each already has a core of its own.

    Parameters
    ----------
    n_threads : int or None
        At least 1.
    """
    from .._validation import check_int

    _THREADS[:] = [] if n_threads is None else [check_int(n_threads, "n_threads", low=1)]


@contextmanager
def persistence_threads_limited(n_threads: int) -> Iterator[None]:
    """Use at most ``n_threads`` threads in a ``with`` block, then restore the setting.

    Parameters
    ----------
    n_threads : int
        At least 1.

    Yields
    ------
    None
    """
    saved = _THREADS[:]
    set_persistence_threads(min(n_threads, persistence_threads()))
    try:
        yield
    finally:
        _THREADS[:] = saved


_THREADS: list[int] = []
_POOLS: dict[int, ThreadPoolExecutor] = {}


def _pool(n_workers: int) -> ThreadPoolExecutor:
    if n_workers not in _POOLS:  # kept: a TE step calls this every local step
        _POOLS[n_workers] = ThreadPoolExecutor(n_workers, thread_name_prefix="persistence")
    return _POOLS[n_workers]


def _chunk_pairs(flat, keys, H, W, want):
    """The compiled kernel on a contiguous run of maps (it releases the GIL); the maps'
    pixels are sorted here first unless ``keys`` has them."""
    n = flat.shape[0]
    if keys is None:
        keys = sorted_keys(flat)
    out_map = np.empty(n * H * W, np.int64)
    out_pairs = np.empty((n * H * W, 3), np.int64)
    count = _kernel(flat, keys, H, W, want, out_map, out_pairs, _REP4, _REP8, _LOWEST_BIT)
    return out_map[:count], out_pairs[:count]


def pairs_batch(maps: np.ndarray, dims=(0, 1), keys: np.ndarray | None = None,
                n_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Finite persistence pairs of every map of a batch, as pixel indices.

    The maps are split into ``n_threads`` contiguous runs, each computed by the compiled
    kernel in a thread of its own (:func:`over_map_runs`; the kernel releases the GIL);
    each map's pairs depend on that map alone, so the result is identical, bit for bit,
    for any thread count.

    Parameters
    ----------
    maps : ndarray of shape (n_maps, H, W), float32 or float64, finite
        Not validated here (:func:`~topofl_lib.topology.cubical.batch_pairs` does).
    dims : tuple of int
        Homology degrees to compute, a subset of ``(0, 1)``.
    keys : ndarray or None
        :func:`sorted_keys` of the flattened maps, if already computed.
    n_threads : int or None
        Threads (``None``: :func:`persistence_threads`); never more than the maps.

    Returns
    -------
    map_index : ndarray of int64, shape (n_pairs,)
        The map of each pair; pairs are grouped by map, in increasing map order.
    pairs : ndarray of int64, shape (n_pairs, 3)
        Rows ``(dim, birth_pixel, death_pixel)``, pixels as C-order flat indices.
    """
    n, H, W = maps.shape
    flat = np.ascontiguousarray(maps.reshape(n, H * W))
    want = np.array([0 in dims, 1 in dims], dtype=np.bool_)

    def run(a, b):  # each thread sorts its own maps' pixels too, and numbers its maps
        out_map, out_pairs = _chunk_pairs(flat[a:b], None if keys is None else keys[a:b],
                                          H, W, want)
        return out_map + a, out_pairs

    parts = over_map_runs(run, n, n_threads)
    if len(parts) == 1:  # a copy, not a view of the kernel's n * H * W rows
        return parts[0][0], parts[0][1].copy()
    return np.concatenate([m for m, _ in parts]), np.concatenate([p for _, p in parts])


def over_map_runs(fn, n_maps: int, n_threads: int | None = None) -> list:
    """``fn(a, b)`` for contiguous runs of maps ``[a, b)`` covering ``n_maps``, one run a
    thread (as equal as can be), in order; the calling thread computes the first run while
    ``n_threads - 1`` pool threads compute the others (so no more threads than cores are
    awake, and the caller does not wait for a pool thread to start its share). ``fn``
    should release the GIL (a ``nogil`` compiled kernel) and touch only its maps' rows.

    Parameters
    ----------
    fn : callable
        ``fn(a, b)``, the work of maps ``a`` to ``b - 1``.
    n_maps : int
    n_threads : int or None
        Threads (``None``: :func:`persistence_threads`); never more than the maps.

    Returns
    -------
    list
        ``fn``'s results, run by run.
    """
    threads = min(persistence_threads() if n_threads is None else n_threads, max(n_maps, 1))
    if threads <= 1:
        return [fn(0, n_maps)]
    bounds = np.linspace(0, n_maps, threads + 1).astype(np.int64)
    others = [_pool(threads - 1).submit(fn, a, b) for a, b in zip(bounds[1:-1], bounds[2:],
                                                                   strict=True)]
    return [fn(0, int(bounds[1]))] + [f.result() for f in others]
