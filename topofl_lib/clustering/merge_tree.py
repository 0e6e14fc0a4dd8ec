r"""0-dimensional superlevel-set persistence of a function on a graph (a merge tree).

Vertices are processed by decreasing value. A vertex with no processed neighbour is
born as a new peak; a vertex adjacent to several components merges them, and every
component except the one with the highest peak (the elder rule) dies at the vertex's
value. A peak's persistence is its birth value minus the value at which it merges into a
higher peak; the global maximum (and the peak of every other component that never
merges) dies at the minimum value of the function. Each vertex is assigned to the basin
of the component it joins. A peak's *leaf* is its component just before that component
first meets another one (a younger peak merging into it, or itself merging into an elder):
the vertices above the highest saddle next to the peak. With union-find (path halving,
union by peak) the whole tree costs O(m alpha(m)) after an O(m log m) sort, instead of
recomputing components at every threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from .._validation import as_float_array

__all__ = ["MergeTree", "superlevel_persistence"]


@dataclass(frozen=True)
class MergeTree:
    """Result of :func:`superlevel_persistence`.

    Attributes
    ----------
    peaks : ndarray (n_peaks,)      vertex index of each peak, by decreasing persistence
    birth : ndarray (n_peaks,)      value at the peak
    death : ndarray (n_peaks,)      value at which it merged into a higher peak
    basin : ndarray (m,)            for every vertex, the peak (vertex index) of its basin
    merged_into : ndarray (n_peaks,) the peak each one merged into (-1: never merged)
    rank : ndarray (m,)             position of every vertex in the sweep (0: highest value)
    first_merge : ndarray (n_peaks,) sweep position of the vertex at which the peak's
                                    component first met another one (m: never)
    """

    peaks: np.ndarray
    birth: np.ndarray
    death: np.ndarray
    basin: np.ndarray
    merged_into: np.ndarray
    rank: np.ndarray
    first_merge: np.ndarray

    def assign(self, selected) -> np.ndarray:
        """Label every vertex with the selected peak its basin drains into (-1: none).

        A basin of an unselected peak joins the basin of the peak it merged into,
        repeatedly, until a selected peak is reached.
        """
        selected = set(int(s) for s in selected)
        target = dict(zip(self.peaks.tolist(), self.merged_into.tolist(), strict=True))
        resolved = {}
        for p in self.peaks.tolist():
            q, seen = p, []
            while q not in selected and q != -1 and q not in resolved:
                seen.append(q)
                q = target[q]
            end = resolved.get(q, q) if q not in selected else q
            for s in seen:
                resolved[s] = end
            if p in selected:
                resolved[p] = p
        lut = np.vectorize(lambda b: resolved.get(int(b), -1), otypes=[np.int64])
        return lut(self.basin)

    def leaves(self, selected) -> np.ndarray:
        """Label every vertex with the selected peak whose leaf holds it (-1: none).

        The leaf of a peak is its component in the superlevel set just above the value at
        which that component first meets another one, i.e. the vertices of its basin swept
        before that first merge. Leaves of different peaks are disjoint. A peak whose
        component never meets another one (a connected component of the graph with a single
        peak) keeps its whole basin.
        """
        first = dict(zip(self.peaks.tolist(), self.first_merge.tolist(), strict=True))
        labels = np.full(self.basin.size, -1, dtype=np.int64)
        for p in selected:
            p = int(p)
            if p not in first:
                raise ValueError(f"vertex {p} is not a peak of this merge tree")
            labels[(self.basin == p) & (self.rank < first[p])] = p
        return labels

    @property
    def persistence(self) -> np.ndarray:
        """``birth - death`` for each peak."""
        return self.birth - self.death


def superlevel_persistence(values, graph) -> MergeTree:
    """Merge tree of the superlevel sets of ``values`` on an undirected ``graph``.

    Parameters
    ----------
    values : array-like (m,)
        Function values on the vertices (finite).
    graph : scipy sparse matrix (m, m)
        Adjacency (any non-zero entry is an edge; symmetrised here).

    Returns
    -------
    MergeTree
    """
    values = as_float_array(values, "values")
    m = values.size
    if values.ndim != 1 or m == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("values contain NaN or infinite entries")
    A = sparse.csr_matrix(graph)
    if A.shape != (m, m):
        raise ValueError(f"graph must be ({m}, {m}), got {A.shape}")
    A = (A + A.T).tocsr()
    indptr, indices = A.indptr, A.indices
    order = np.argsort(-values, kind="stable")
    parent = np.full(m, -1, dtype=np.int64)  # -1: not yet processed
    peak_of = np.zeros(m, dtype=np.int64)    # root -> its peak vertex
    basin = np.empty(m, dtype=np.int64)
    death, merged, first = {}, {}, {}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pos, v in enumerate(order.tolist()):
        roots = {find(u) for u in indices[indptr[v]:indptr[v + 1]].tolist() if parent[u] >= 0}
        if not roots:
            parent[v] = v
            peak_of[v] = v
            basin[v] = v
            continue
        # the component with the highest peak survives (elder rule)
        elder = max(roots, key=lambda r: values[peak_of[r]])
        if len(roots) > 1:
            for r in roots:
                first.setdefault(int(peak_of[r]), pos)
        for r in roots:
            if r != elder:
                death[int(peak_of[r])] = values[v]
                merged[int(peak_of[r])] = int(peak_of[elder])
                parent[r] = elder
        parent[v] = elder
        basin[v] = peak_of[elder]
    peaks = np.array(sorted({int(b) for b in basin}), dtype=np.int64)
    floor = values.min()
    deaths = np.array([death.get(int(p), floor) for p in peaks])
    births = values[peaks]
    into = np.array([merged.get(int(p), -1) for p in peaks], dtype=np.int64)
    firsts = np.array([first.get(int(p), m) for p in peaks], dtype=np.int64)
    sweep = np.empty(m, dtype=np.int64)
    sweep[order] = np.arange(m)
    rank = np.argsort(-(births - deaths), kind="stable")
    return MergeTree(peaks[rank], births[rank], deaths[rank], basin, into[rank], sweep,
                     firsts[rank])
