r"""Lower-star persistence of a function on the k-nearest-neighbour graph of a point cloud.

A client's records :math:`x_1, \dots, x_n` and a value :math:`f_i` on each record (for
example the probability that the broadcast global model gives the record's true label)
define a filtration of the *flag complex* of the records' k-nearest-neighbour graph:
vertex :math:`i` enters at :math:`f_i`, edge :math:`(i, j)` at :math:`\max(f_i, f_j)` and
triangle :math:`(i, j, l)` at :math:`\max(f_i, f_j, f_l)` (the lower-star filtration, i.e.
the sublevel sets :math:`\{f \le t\}` of the graph). H0 and H1 of a complex depend only on
its 2-skeleton, so vertices, edges and triangles are all the simplices needed.

Graph
    :func:`knn_edges`: the union of every record's ``n_neighbors`` nearest neighbours
    (Euclidean), so the graph is undirected. With ``n_neighbors >= n - 1`` it is the
    complete graph. Exact distance ties are broken by record order (a measure-zero event
    for real-valued data), which is the only way the graph can depend on record order.
Persistence
    :func:`lower_star_diagrams` builds the filtered complex in a gudhi ``SimplexTree``
    (float64 filtration values; ripser's sparse interface would round them to float32)
    and returns every pair of positive persistence, exactly. Essential classes (the
    components of the graph in H0, the cycles of its flag complex that no triangle fills
    in H1) have death ``inf``. Tests check the diagrams against a brute-force boundary
    matrix reduction on small complexes.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from .._validation import check_int, check_points

__all__ = ["knn_edges", "lower_star_diagrams"]


def knn_edges(X, n_neighbors: int) -> np.ndarray:
    """Undirected edges of the k-nearest-neighbour graph of ``X``.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features)
    n_neighbors : int
        Neighbours per point (at least 1); capped at ``n_points - 1``.

    Returns
    -------
    ndarray of shape (n_edges, 2)
        Pairs ``i < j``, sorted, each once.
    """
    X = check_points(X, min_points=1)
    check_int(n_neighbors, "n_neighbors", low=1)
    n = X.shape[0]
    k = min(n_neighbors, n - 1)
    if k == 0:
        return np.empty((0, 2), dtype=np.int64)
    _, idx = cKDTree(X).query(X, k=k + 1)
    idx = np.asarray(idx).reshape(n, k + 1)
    # Duplicate points may list a twin before themselves: drop self-loops, keep k others.
    rows = np.repeat(np.arange(n), k + 1)
    cols = idx.ravel()
    keep = rows != cols
    pairs = np.sort(np.column_stack([rows[keep], cols[keep]]), axis=1)
    return np.unique(pairs, axis=0).astype(np.int64)


def lower_star_diagrams(values, edges) -> list[np.ndarray]:
    """H0 and H1 of the lower-star filtration of ``values`` on the flag complex of a graph.

    Parameters
    ----------
    values : array-like of shape (n_vertices,)
        Finite function values on the vertices.
    edges : array-like of shape (n_edges, 2)
        Vertex index pairs (from :func:`knn_edges`).

    Returns
    -------
    list of ndarray
        ``[H0, H1]``, each of shape ``(n_pairs, 2)`` with columns (birth, death), sorted;
        pairs of zero persistence are omitted and essential classes have death ``inf``.
    """
    import gudhi

    f = np.asarray(values, dtype=np.float64)
    if f.ndim != 1 or f.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {f.shape}")
    if not np.all(np.isfinite(f)):
        raise ValueError("values contain NaN or infinite entries")
    E = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if E.size and (E.min() < 0 or E.max() >= f.size):
        raise ValueError(f"edges refer to vertices outside 0..{f.size - 1}")
    if E.size and np.any(E[:, 0] == E[:, 1]):
        raise ValueError("edges contain a self-loop")
    st = gudhi.SimplexTree()
    st.insert_batch(np.arange(f.size)[None, :], f)
    if E.size:
        st.insert_batch(E.T, np.maximum(f[E[:, 0]], f[E[:, 1]]))
    st.expansion(2)
    # persistence_dim_max=True: H1 is computed even when the complex has no triangle
    # (gudhi skips the top dimension otherwise).
    st.compute_persistence(homology_coeff_field=2, persistence_dim_max=True)
    out = []
    for q in (0, 1):
        d = np.asarray(st.persistence_intervals_in_dimension(q), dtype=np.float64)
        d = d.reshape(-1, 2)
        d = d[d[:, 1] > d[:, 0]]
        out.append(d[np.lexsort((d[:, 1], d[:, 0]))])
    return out
