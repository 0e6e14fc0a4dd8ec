"""Speed of the descriptor and of the whole Table 1 run.

Run: ``make benchmark`` (or ``.venv/bin/python benchmarks/run_benchmarks.py``).
Everything is timed in this one process, and each figure is printed beside a baseline
timed here too, so ratios are comparable across machines:

* descriptor: exact Rips persistence (ripser) vs the paper's triangle approximation,
  at n = 80, 200, 1000 points (all points used), and at n = 1000 with the n_sub = 80
  subsample the pTopoFL clients actually use;
* Table 1: both scenarios, all five methods, the paper profile's 20 seeds and 15
  rounds, against a FedAvg-only run of the same seeds (the cheapest method).
"""

from __future__ import annotations

import time

import numpy as np

from topofl_lib.experiments import run_comparison
from topofl_lib.topology import topological_descriptor

try:  # the library itself never needs torch threads; keep timings single-threaded
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def descriptor_benchmark() -> None:
    rng = np.random.default_rng(0)
    print("descriptor (20-dim points), best of repeats")
    print(f"{'n points':>10} {'n_sub':>6} {'ripser ms':>10} {'triangle ms':>12} {'ratio':>7}")
    for n, n_sub, repeat in ((80, None, 20), (200, None, 5), (1000, None, 2), (1000, 80, 20)):
        X = rng.normal(size=(n, 20))
        exact = best_of(lambda X=X, s=n_sub: topological_descriptor(X, s, random_state=0),
                        repeat)
        approx = best_of(lambda X=X, s=n_sub: topological_descriptor(
            X, s, persistence="triangle", random_state=0), repeat)
        label = "all" if n_sub is None else str(n_sub)
        print(f"{n:>10} {label:>6} {exact * 1e3:>10.1f} {approx * 1e3:>12.1f} "
              f"{exact / approx:>7.2f}")


def table1_benchmark(n_seeds: int = 20) -> None:
    seeds = range(n_seeds)
    print(f"\nTable 1 run: 2 scenarios x {n_seeds} seeds x 15 rounds")
    t0 = time.perf_counter()
    for scenario in ("healthcare", "benchmark"):
        run_comparison(scenario, seeds, methods=["FedAvg"], progress=False)
    base = time.perf_counter() - t0
    per_method = {}
    t_all = time.perf_counter()
    for method in ("pTopoFL", "FedAvg", "FedProx", "SCAFFOLD", "pFedMe"):
        t0 = time.perf_counter()
        for scenario in ("healthcare", "benchmark"):
            run_comparison(scenario, seeds, methods=[method], progress=False)
        per_method[method] = time.perf_counter() - t0
    total = time.perf_counter() - t_all
    print(f"{'method':>10} {'seconds':>8} {'x FedAvg':>9}")
    for method, t in per_method.items():
        print(f"{method:>10} {t:>8.2f} {t / base:>9.1f}")
    print(f"{'all five':>10} {total:>8.2f} {total / base:>9.1f}")
    t0 = time.perf_counter()
    for scenario in ("healthcare", "benchmark"):
        run_comparison(scenario, seeds, methods=["pTopoFL"], progress=False,
                       method_params={"pTopoFL": {"track_signatures": False}})
    untracked = time.perf_counter() - t0
    print(f"pTopoFL without per-round signature tracking: {untracked:.2f} s "
          f"({per_method['pTopoFL'] / untracked:.1f}x faster than with)")


if __name__ == "__main__":
    descriptor_benchmark()
    table1_benchmark()
