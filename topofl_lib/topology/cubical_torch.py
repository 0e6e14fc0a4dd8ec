r"""Exact cubical persistence of a batch of 2-D maps in torch, on the maps' own device.

The same filtration and pairing as the numba kernel
(:mod:`topofl_lib.topology.cubical_unionfind`): pixels in increasing order of (value,
flat index); :math:`H_0` is the elder rule on the pixel graph under 4-connectivity, and
:math:`H_1`, by Alexander duality, the elder rule on the pixels in *decreasing* order
under 8-connectivity with one extra node per map, the outside, joined to every border
pixel and older than every pixel. What differs is how the elder rule is evaluated: not
by a sweep over the pixels one after another, but by rounds of data-parallel steps over
all edges of all maps at once, so that it runs where the activations are (a CUDA
device, or torch's CPU backend, where it is tested against gudhi).

One round (Borůvka's step, with the elder rule kept exact). Every component picks its
cheapest outgoing edge, edges ordered by (later endpoint, earlier endpoint) in the
filtration, a total order within a map. Following the picks, keys decrease until two
components pick each other, so the picks form trees, each rooted at such a pair, with
keys increasing away from the root. Let :math:`\tau` be the cheapest edge that leaves a
tree. Before :math:`\tau` nothing outside the tree touches it, and a component ``X``
whose pick :math:`s_X` is below :math:`\tau` is, at time :math:`s_X`, still alone
(its children's keys are larger) and joins the component made of the root and every
node of the tree with a smaller key (heap order makes those connected). So its merge is
exact: the younger of ``X``'s oldest pixel and the oldest pixel among the root and the
tree's nodes with smaller keys (a prefix minimum in key order) dies at ``X``'s edge, at
the edge's later pixel. Those nodes are contracted into the root; nodes whose pick is
above :math:`\tau` wait for a later round. Every tree contracts at least its root pair,
so the rounds end; a batch of conv1 activations of FedTopo's CNN (192 maps of 24x24)
takes 9 rounds for both degrees together, each a few dozen tensor operations over all
maps.

The pairs equal the numba kernel's (the same pixels, as a set) and the diagram gudhi's
(``tests/test_cubical_torch.py``); their order differs: grouped by map, then degree,
then ordered by the killing pixel's place in its pass.
"""

from __future__ import annotations

import math

__all__ = ["MAX_NODES", "pairs_torch"]

#: Most nodes of one pass over a batch (``n_maps * (H * W + 2)``): edge keys are ranks
#: times this, and must stay below 2**63.
MAX_NODES = math.isqrt(2**63 - 1)


def _grid_edges(H: int, W: int, diagonals: bool, device):
    """Both ends of every 4- (or 8-) neighbour edge of an H x W grid, as flat indices."""
    import torch

    idx = torch.arange(H * W, device=device).reshape(H, W)
    ends = [(idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])]
    if diagonals:
        ends += [(idx[:-1, :-1], idx[1:, 1:]), (idx[:-1, 1:], idx[1:, :-1])]
    return (torch.cat([a.reshape(-1) for a, _ in ends]),
            torch.cat([b.reshape(-1) for _, b in ends]))


def _border(H: int, W: int, device):
    """Flat indices of the pixels on the grid's border."""
    import torch

    idx = torch.arange(H * W, device=device).reshape(H, W)
    mask = torch.zeros(H, W, dtype=torch.bool, device=device)
    mask[0, :] = mask[-1, :] = mask[:, 0] = mask[:, -1] = True
    return idx[mask]


def _at(values, index):
    """``values[index]`` along the first axis (index_select: several times faster than
    advanced indexing on torch's CPU backend)."""
    return values.index_select(0, index)


def _scatter_min(n: int, groups, values, fill: int):
    """Per label ``0..n-1``, the minimum of ``values`` over the entries each index
    array of ``groups`` assigns to it (``fill`` where none)."""
    import torch

    out = torch.full((n,), fill, dtype=values.dtype, device=values.device)
    for g in groups:
        out.scatter_reduce_(0, g, values, "amin")
    return out


def _segment_prefix_min(tree, key, value):
    """For entries ordered by (tree, key): the minimum of ``value`` over the earlier
    entries of the same tree (``-1`` where there is none), and that order."""
    import torch

    by_key = torch.argsort(key, stable=True)
    order = _at(by_key, torch.argsort(_at(tree, by_key), stable=True))
    t, v = _at(tree, order), _at(value, order)
    # Later trees get smaller offsets, so a running minimum never crosses into one.
    offset = (int(t.max()) - t) * (int(v.max()) + 1)
    running = torch.cummin(offset + v, dim=0).values - offset
    prev = torch.full_like(running, -1)
    prev[1:] = torch.where(t[1:] == t[:-1], running[:-1], prev[1:])
    return order, prev


def _elder_merges(rank, u, v):
    """Every merge of the elder rule on a graph whose nodes enter in order ``rank``.

    Parameters
    ----------
    rank : LongTensor (n_nodes,)
        Each node's place in the filtration, distinct within a connected part of the
        graph (a map: ``m * (n_per_map + 1) + place``, so ranks of different maps
        differ).
    u, v : LongTensor (n_edges,)
        The edges.

    Returns
    -------
    young, joiner : LongTensor (n_merges,)
        For each merge, the rank of the younger component's first node (it dies) and
        the node at which it dies (the edge's later end).
    """
    import torch

    n = rank.numel()
    device = rank.device
    ar = torch.arange(n, device=device)
    big = torch.iinfo(torch.int64).max
    span = int(rank.max()) + 1
    ru, rv = _at(rank, u), _at(rank, v)
    key = torch.maximum(ru, rv) * span + torch.minimum(ru, rv)
    later = torch.where(ru > rv, u, v)
    comp, first = ar.clone(), rank.clone()  # label of each node; a label's oldest rank
    young, joiner = [], []
    while u.numel():
        cu, cv = _at(comp, u), _at(comp, v)
        ext = cu != cv
        if not bool(ext.all()):  # drop the edges inside a component, for good
            keep = torch.nonzero(ext).squeeze(1)
            u, v, key, later, cu, cv = (_at(t, keep) for t in (u, v, key, later, cu, cv))
            if not keep.numel():
                break
        best = _scatter_min(n, (cu, cv), key, big)
        target, dies = ar.clone(), ar.clone()
        for a, b in ((cu, cv), (cv, cu)):  # the component a's pick leads to b
            chosen = torch.nonzero(key == _at(best, a)).squeeze(1)
            a_chosen = _at(a, chosen)
            target.index_copy_(0, a_chosen, _at(b, chosen))
            dies.index_copy_(0, a_chosen, _at(later, chosen))
        parent = torch.where((_at(target, target) == ar) & (ar < target), ar, target)
        root = parent
        while True:  # pointer jumping to each tree's root
            nxt = _at(root, root)
            if torch.equal(nxt, root):
                break
            root = nxt
        tu, tv = _at(root, cu), _at(root, cv)
        tau = _scatter_min(n, (tu, tv), torch.where(tu != tv, key, big), big)
        active = torch.nonzero(best < big).squeeze(1)
        root_a = _at(root, active)
        is_root = _at(parent, active) == active
        x = active[~is_root & (_at(best, active) < _at(tau, root_a))]
        r = active[is_root]
        root_x = _at(root, x)
        entries = torch.cat([x, r])
        order, prev = _segment_prefix_min(
            torch.cat([root_x, r]), torch.cat([_at(best, x), torch.full_like(r, -1)]),
            _at(first, entries))
        node = _at(entries, order)
        merged = torch.nonzero(node != _at(root, node)).squeeze(1)  # roots: not merged
        node_m = _at(node, merged)
        young.append(torch.maximum(_at(first, node_m), _at(prev, merged)))
        joiner.append(_at(dies, node_m))
        first.scatter_reduce_(0, root_x, _at(first, x), "amin")
        relabel = ar.clone()
        relabel.index_copy_(0, x, root_x)
        comp = _at(relabel, comp)
    if not young:
        empty = torch.empty(0, dtype=torch.int64, device=device)
        return empty, empty
    return torch.cat(young), torch.cat(joiner)


def _checked(maps, dims):
    """``maps`` as an (n_maps, H * W) floating tensor, -0.0 made 0.0, and ``dims`` as a
    tuple, both checked."""
    import torch

    if not isinstance(maps, torch.Tensor):
        raise TypeError(f"maps must be a torch.Tensor, got {type(maps).__name__}")
    if maps.is_complex():
        raise TypeError("maps must hold real numbers, got a complex tensor")
    if maps.ndim != 3:
        raise ValueError(f"maps must have shape (n_maps, H, W), got shape {tuple(maps.shape)}")
    n, H, W = maps.shape
    if H < 1 or W < 1:
        raise ValueError(f"each map must be at least 1x1, got {(H, W)}")
    if n * (H * W + 2) > MAX_NODES:
        raise ValueError(f"a batch of {n} maps of {H}x{W} pixels has more than MAX_NODES = "
                         f"{MAX_NODES} nodes in one pass; split the batch")
    dims = tuple(int(d) for d in dims)
    if any(d not in (0, 1) for d in dims):
        raise ValueError(f"dims must be a subset of (0, 1), got {dims}")
    flat = maps.detach().reshape(n, H * W)
    if not flat.is_floating_point():
        flat = flat.to(torch.float64)
    if not bool(torch.isfinite(flat).all()):
        raise ValueError("maps contain NaN or infinite values")
    return flat + 0.0, dims  # -0.0 and 0.0: one value


def pairs_torch(maps, dims=(0, 1)):
    """Finite persistence pairs of every map of a batch, computed with torch on the
    maps' device.

    Parameters
    ----------
    maps : torch.Tensor of shape (n_maps, H, W)
        Finite real values, each map at least 1x1, on the CPU or a CUDA device (integer
        and boolean maps are filtered as float64); at most :data:`MAX_NODES` nodes in
        all (``n_maps * (H * W + 2)``: split a larger batch).
    dims : tuple of int
        Homology degrees, a subset of ``(0, 1)``.

    Returns
    -------
    map_index : LongTensor (n_pairs,)
        The map of each pair, in increasing map order.
    pairs : LongTensor (n_pairs, 3)
        Rows ``(dim, birth_pixel, death_pixel)``, C-order flat pixel indices; the same
        pairs as the numba kernel's, possibly in another order within a map.
    """
    import torch

    flat, dims = _checked(maps, dims)
    n, H, W = maps.shape
    N = H * W
    device = maps.device
    if n == 0 or not dims:
        empty = torch.empty(0, dtype=torch.int64, device=device)
        return empty, empty.reshape(0, 3)
    order = torch.sort(flat, dim=1, stable=True).indices  # (value, flat index)
    place = torch.empty_like(order)
    place.scatter_(1, order, torch.arange(N, device=device).expand(n, N))
    maps_ar = torch.arange(n, device=device)
    out = []
    for dim in (0, 1):
        if dim not in dims:
            continue
        per = N if dim == 0 else N + 1  # nodes per map (H1: the outside is node N)
        a, b = _grid_edges(H, W, diagonals=dim == 1, device=device)
        if dim == 1:
            border = _border(H, W, device)
            a, b = torch.cat([a, border]), torch.cat([b, torch.full_like(border, N)])
            # the pixels in decreasing order are places 1..N; the outside is place 0
            node_place = torch.cat([N - place, torch.zeros(n, 1, dtype=place.dtype,
                                                            device=device)], dim=1)
        else:
            node_place = place
        offset = (maps_ar * per)[:, None]
        rank = (node_place + maps_ar[:, None] * (per + 1)).reshape(-1)
        u = (a[None, :] + offset).reshape(-1)
        v = (b[None, :] + offset).reshape(-1)
        young, joiner = _elder_merges(rank, u, v)
        m = joiner // per
        young_place = young - m * (per + 1)
        first_pixel = order[m, young_place if dim == 0 else N - young_place]
        joining = joiner % per
        lo, hi = (first_pixel, joining) if dim == 0 else (joining, first_pixel)
        keep = flat[m, hi] > flat[m, lo]
        sort_key = (m * 2 + dim) * (N + 2) + (place[m, joining] if dim == 0
                                             else N - place[m, joining])
        out.append((sort_key[keep], m[keep], torch.stack(
            [torch.full_like(lo[keep], dim), lo[keep], hi[keep]], dim=1)))
    keys = torch.cat([k for k, _, _ in out])
    order_out = torch.argsort(keys, stable=True)
    return (torch.cat([m for _, m, _ in out])[order_out],
            torch.cat([p for _, _, p in out])[order_out])
