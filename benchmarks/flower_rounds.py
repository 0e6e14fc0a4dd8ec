"""Round times of pTopoFL on a real local Flower federation: unpatched Flower, the opt-in
fast-waits adapter, and the in-process engine.

Run (under the heavy lock on a shared machine)::

    flock /tmp/topofl-heavy.lock .venv/bin/python benchmarks/flower_rounds.py

For 8 and for 32 SuperNodes (the healthcare scenario with that many hospitals, seed 0)
it starts :class:`topofl_lib.flower.LocalFederation` twice, on an unpatched Flower (the
default) and with the adapter :mod:`topofl_lib.flower.fast_waits` (``fast_waits=True``),
runs ``--rounds`` training rounds of pTopoFL with per-phase timing on (``timing`` run
config; clients evaluate once, after the last round), and prints for each

* the start-up time of the federation and the median training round (configure,
  all replies, aggregation);
* the per-round overhead: the median Flower round minus the in-process engine's time
  per round for the same method, data and seed, timed in this process;
* where a round's time goes, per phase (median over rounds and clients, and for the
  client whose reply came last): delivery of the model to the SuperNode, launch of the
  ClientApp, its start-up (Flower's task set-up and imports), the local work, the
  reply's way back to the ServerApp, and the server's aggregation;
* whether the final per-client AUCs equal the in-process engine's;

then one table: the median training round of each, and the adapter's speed-up over the
unpatched baseline timed in this same process (``--modes`` runs only one of them).
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import numpy as np

from topofl_lib.data.scenarios import make_healthcare
from topofl_lib.flower import LocalFederation, in_process_reference, write_partitions
from topofl_lib.flower.fast_waits import VERIFIED_FLWR, check_version, installed_flwr

MODES = {"unpatched": False, "fast-waits": True}
PHASES = ("delivery", "launch", "startup", "work", "reply")


def run(n_nodes: int, rounds: int, seed: int, workdir: Path, **federation) -> dict:
    shutil.rmtree(workdir, ignore_errors=True)
    scenario = make_healthcare(n_clients=n_nodes, n_adversarial=n_nodes // 4,
                               random_state=seed)
    paths = write_partitions(scenario, workdir / "clients")
    cfg = {"num-rounds": rounds, "seed": seed, "eval-every": rounds, "timing": True,
           "round-timeout": 600.0}
    t0 = time.perf_counter()
    ref = in_process_reference(scenario, "pTopoFL", **cfg)
    t_ref = (time.perf_counter() - t0) / rounds
    t0 = time.perf_counter()
    with LocalFederation(paths, workdir, **federation) as fed:
        t_start = time.perf_counter() - t0
        res = fed.run("bench", timeout=3600, **cfg)
    train = res["rounds"]
    rounds_s = np.array([r["seconds"] for r in train])
    med = {p: float(np.median([np.median([c[p] for c in r["phases"].values()])
                               for r in train])) for p in (*PHASES, "import")}
    crit = {p: float(np.median([max(r["phases"].values(), key=lambda c: c["total"])[p]
                                for r in train])) for p in PHASES}
    agg = float(np.median([r["aggregation"] for r in train]))
    scores = res["rounds"][-1]["scores"]
    flower_auc = np.array([scores[str(k)][0] for k in range(n_nodes)])
    same = bool(np.array_equal(flower_auc, ref.history_["client_auc"][-1]))
    return {"nodes": n_nodes, "mode": "fast-waits" if federation.get("fast_waits") else
            "unpatched", "startup": t_start, "median_round": float(np.median(rounds_s)),
            "rounds": rounds_s.tolist(), "in_process_round": t_ref, "median": med,
            "critical": crit, "aggregation": agg, "identical_auc": same}


def report(r: dict) -> None:
    print(f"\n{r['nodes']} SuperNodes, {r['mode']}: federation started in "
          f"{r['startup']:.1f} s")
    print(f"  training rounds (s): {', '.join(f'{t:.2f}' for t in r['rounds'])}")
    print(f"  median training round {r['median_round']:.2f} s; in-process engine "
          f"{r['in_process_round'] * 1e3:.1f} ms per round; overhead "
          f"{r['median_round'] - r['in_process_round']:.2f} s per round "
          f"({r['median_round'] / r['in_process_round']:.0f}x)")
    print("  phase (s)        median client   last client")
    for p in PHASES:
        print(f"  {p:15s}  {r['median'][p]:13.3f}   {r['critical'][p]:11.3f}")
    if np.isnan(r["median"]["delivery"]):  # another executor: no time of arrival at the node
        print("  (delivery and launch: not measured with this executor)")
    print(f"  {'(of startup: import)':15s} {r['median']['import']:.3f}")
    print(f"  {'aggregation':15s}  {r['aggregation']:13.3f}")
    print(f"  final per-client AUCs identical to the in-process engine: {r['identical_auc']}")


def compare(results: list[dict]) -> None:
    """The median training round per mode, and the speed-up over the unpatched baseline
    (its median round divided by the mode's, both timed in this process)."""
    print(f"\nmedian training round (s); flwr {installed_flwr()}, adapter verified with "
          f"flwr {VERIFIED_FLWR}")
    print(f"{'nodes':>5}  {'mode':<10} {'median s':>8} {'speed-up':>9} {'in-process s':>12}"
          f"  AUCs = in-process")
    base = {r["nodes"]: r["median_round"] for r in results if r["mode"] == "unpatched"}
    for r in results:
        ratio = (f"{base[r['nodes']] / r['median_round']:.2f}x" if r["nodes"] in base
                 else "-")
        print(f"{r['nodes']:>5}  {r['mode']:<10} {r['median_round']:>8.2f} {ratio:>9} "
              f"{r['in_process_round']:>12.3f}  {r['identical_auc']}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--workdir", default="build/bench-flower")
    args = parser.parse_args(argv)
    if "fast-waits" in args.modes and not check_version():
        print("(the adapter does not apply to this flwr: both modes run unpatched)")
    results = []
    for n in args.nodes:
        for mode in args.modes:
            results.append(run(n, args.rounds, args.seed,
                               Path(args.workdir) / f"n{n}-{mode}", fast_waits=MODES[mode]))
            report(results[-1])
    compare(results)


if __name__ == "__main__":
    main()
