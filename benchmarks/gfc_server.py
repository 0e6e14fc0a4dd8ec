"""Speed and peak memory of the GFC server step.

Run: ``.venv/bin/python benchmarks/gfc_server.py``. For |S| = 100, 1,000, 10,000
uploaded centroids in 2-D and 10-D and synthetic multipliers 2 and 10 it times the three
parts of the server step (potential, neighbourhood graph, merge tree) and reports the
peak traced memory. As a baseline timed in the same process, the naive persistence that
recomputes connected components at every threshold (O(m) thresholds x O(m) graph work)
is run on the small sizes and compared with the merge tree on the same input.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from topofl_lib.clustering import gravitational_potential, superlevel_persistence
from topofl_lib.clustering.gfc import knn_graph


def naive_peak_count(E, A) -> int:
    """Number of components ever born, recomputing components at every threshold."""
    order = np.argsort(-E)
    A = sparse.csr_matrix(A + A.T)
    best = 0
    for i in range(1, E.size + 1):
        keep = order[:i]
        n, _ = connected_components(A[keep][:, keep], directed=False)
        best = max(best, n)
    return best


def server_step(S, w, m, rng):
    G = rng.uniform(S.min(0), S.max(0), size=(m, S.shape[1]))
    E = gravitational_potential(G, S, w, 2.0, 1.0)
    A = knn_graph(G, 10)
    return E, A, superlevel_persistence(E, A)


def run(n_centroids: int, d: int, multiplier: int, rng) -> dict:
    S = rng.normal(size=(n_centroids, d))
    w = rng.random(n_centroids)
    m = multiplier * n_centroids
    t0 = time.perf_counter()
    G = rng.uniform(S.min(0), S.max(0), size=(m, d))
    E = gravitational_potential(G, S, w, 2.0, 1.0)
    t1 = time.perf_counter()
    A = knn_graph(G, 10)
    t2 = time.perf_counter()
    tree = superlevel_persistence(E, A)
    t3 = time.perf_counter()
    # peak memory in a second, traced run (tracing slows Python loops, so not timed)
    tracemalloc.start()
    server_step(S, w, m, rng)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    row = {"S": n_centroids, "d": d, "mult": multiplier, "m": m, "potential": t1 - t0,
           "graph": t2 - t1, "tree": t3 - t2, "total": t3 - t0, "peak_MB": peak / 2**20,
           "peaks": tree.peaks.size}
    if m <= 2000:
        t4 = time.perf_counter()
        naive_peak_count(E, A)
        row["naive_tree"] = time.perf_counter() - t4
    return row


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    print(f"{'|S|':>6} {'d':>3} {'mult':>4} {'m':>7} {'potential':>9} {'graph':>7} {'tree':>6} "
          f"{'total s':>8} {'peak MB':>8} {'naive tree s':>13}")
    for n in (100, 1000, 10000):
        for d in (2, 10):
            for mult in (2, 10):
                r = run(n, d, mult, rng)
                naive = f"{r['naive_tree']:.2f} ({r['naive_tree'] / r['tree']:.0f}x)" \
                    if "naive_tree" in r else "-"
                print(f"{r['S']:>6} {r['d']:>3} {r['mult']:>4} {r['m']:>7} {r['potential']:>9.2f} "
                      f"{r['graph']:>7.2f} {r['tree']:>6.2f} {r['total']:>8.2f} "
                      f"{r['peak_MB']:>8.0f} {naive:>13}")
