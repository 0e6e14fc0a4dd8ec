"""Wall time of a comparison on 1 worker, 2 local worker processes and a 2-worker Dask
cluster, for short runs and for runs of several seconds.

Run: ``.venv/bin/python benchmarks/bench_executors.py [--workloads table1 deep]``
(under the heavy lock on a shared machine: it keeps every core busy). Two workloads of
:func:`topofl_lib.runner.run_comparison`:

* ``table1``: Table 1's healthcare comparison under our protocol (the five methods with
  their defaults: mini-batch SGD), five methods x 20 seeds x 15 rounds: 100 runs of a few
  tens of milliseconds (the issue's 2.6 s workload);
* ``table1-paper``: the same under the paper's protocol (the ``"paper"`` variants of
  ``TABLE1_VARIANTS``: lbfgs and full-batch solvers): 100 runs of ~0.2 s;
* ``deep``: Fashion-MNIST (10000 training and 500 test images, label skew Dir(0.5), 10
  clients, local test sets), FedAvg, FedProx, SCAFFOLD and pTopoFL x 5 seeds x 5 rounds
  of one local epoch: 20 runs of ~4.5-7.5 s (mean ~5.7 s) on two cores.

Each workload runs with ``executor=1`` (serial), ``executor=2`` (this process and one
helper process it starts inside the timed call, as a user gets them:
:mod:`topofl_lib.runner.helpers`) and
``executor=`` a
``distributed.Client`` of a two-worker ``LocalCluster`` (one thread each), started
after every local timing (a Dask client leaves threads in this process that slow later
local timings down); its start-up is printed separately. Printed per executor:

* wall seconds of ``run_comparison`` and the speed-up over the serial call;
* overhead per run, ``(wall * workers - serial wall) / runs``: the worker-seconds each
  run costs beyond its serial work (start-up, transfers, idle workers at the end);
  with the runner's serial schedule ``workers`` is 1;
* the schedule the runner chose (``result.schedule``: mode, batch size, reason).

The serial call is timed twice, first and last (the last in a fresh process, with this
process's environment as it started: a Dask client leaves threads in this one, and Dask's
``LocalCluster`` writes its workers' variables into its environment), and the speed-ups
are against the mean of the two:
this machine's speed drifts between minutes (two runs of this script minutes apart gave
1.28x and 1.73x on Dask, each against a serial timing minutes before the Dask one).
Both serial timings are printed.

Every executor must give the same ``final`` table as the serial run (asserted).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import pandas as pd

from topofl_lib.runner import run_comparison
from topofl_lib.studies.table1 import TABLE1_VARIANTS

TABLE1_METHODS = ("pTopoFL", "FedAvg", "FedProx", "SCAFFOLD", "pFedMe")
DEEP_METHODS = ("FedAvg", "FedProx", "SCAFFOLD", "pTopoFL")


def table1_workload() -> dict:
    """Table 1's healthcare comparison, our protocol: 100 short runs."""
    return {"scenario": "healthcare", "seeds": range(20), "n_rounds": 15,
            "variants": {m: TABLE1_VARIANTS["ours"][m] for m in TABLE1_METHODS}}


def table1_paper_workload() -> dict:
    """Table 1's healthcare comparison, paper protocol: 100 runs of ~0.2 s."""
    return {"scenario": "healthcare", "seeds": range(20), "n_rounds": 15,
            "scenario_params": {"protocol": "paper"},
            "variants": {m: TABLE1_VARIANTS["paper"][m] for m in TABLE1_METHODS}}


def deep_workload() -> dict:
    """A small Fashion-MNIST comparison: 20 runs of ~4.5-7.5 s each (mean ~5.7 s)."""
    from topofl_lib.deep import deep_variants, load_image_dataset

    data = load_image_dataset("fashion_mnist", n_train=10000, n_test=500, random_state=0)
    return {"scenario": "image", "seeds": range(5), "n_rounds": 5,
            "scenario_params": {"dataset": data, "partition": "L", "param": 0.5,
                                "n_clients": 10, "test": "local"},
            "variants": deep_variants(DEEP_METHODS, local_epochs=1)}


WORKLOADS = {"table1": table1_workload, "table1-paper": table1_paper_workload,
             "deep": deep_workload}


def timed(workload: dict, executor) -> tuple[float, object]:
    t0 = time.perf_counter()
    result = run_comparison(**workload, progress=False, executor=executor)
    return time.perf_counter() - t0, result


def start_dask(n_workers: int = 2):
    """A local Dask cluster of ``n_workers`` single-threaded processes, and its client."""
    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    client.wait_for_workers(n_workers)
    return cluster, client, time.perf_counter() - t0


#: This process's environment as it started: creating a ``LocalCluster`` writes Dask's
#: worker variables into it (``MALLOC_TRIM_THRESHOLD_`` among them, which made the
#: serial call 2.6 times as slow in a process started afterwards: 208-222 s against 79 s)
ENVIRONMENT = dict(os.environ)


def serial_in_fresh_process(name: str) -> float:
    """Seconds of the serial call of workload ``name`` in a new interpreter, started with
    this process's environment as it was before Dask wrote to it."""
    done = subprocess.run([sys.executable, __file__, "--serial-only", name], check=True,
                          capture_output=True, text=True, env=ENVIRONMENT)
    return float(done.stdout.split()[-1])


def _row(label: str, workers: int, wall: float, result, serial: float, n_runs: int) -> dict:
    schedule = result.schedule
    used = workers if schedule.mode == "parallel" else 1
    return {"executor": label, "wall s": wall, "speed-up": serial / wall,
            "overhead s/run": (wall * used - serial) / n_runs,
            "schedule": f"{schedule.mode}, batch {schedule.batch_size}",
            "reason": schedule.reason}


def _print(name: str, rows: list, serial: float, n_runs: int) -> None:
    table = pd.DataFrame(rows).set_index("executor")
    print(f"\n{name}: {n_runs} runs, ~{serial / n_runs:.3g} s each serially; final tables "
          "identical across executors")
    with pd.option_context("display.width", 200, "display.max_colwidth", 120):
        print(table.drop(columns="reason").round(3).to_string())
        for label, reason in table["reason"].items():
            print(f"  {label}: {reason}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS),
                        default=list(WORKLOADS))
    parser.add_argument("--serial-only", choices=list(WORKLOADS),
                        help="print the serial call's seconds of this workload, and nothing else")
    args = parser.parse_args(argv)
    if args.serial_only:
        print(timed(WORKLOADS[args.serial_only](), 1)[0])
        return
    print("overhead s/run = (wall x workers used - serial wall) / runs: worker-seconds per "
          "run beyond the serial work (workers used: 1 when the runner stayed serial)")
    loads = {name: WORKLOADS[name]() for name in args.workloads}
    timings = {}  # name -> {label: (workers, wall, result)}
    # every local timing first: a Dask client leaves threads in this process that slow
    # the later local timings down
    for name, workload in loads.items():
        serial, reference = timed(workload, 1)
        local, result = timed(workload, 2)
        pd.testing.assert_frame_equal(result.final, reference.final, check_exact=True)
        timings[name] = {"1 worker": (1, serial, reference), "2 local workers": (2, local, result)}
    cluster, client, startup = start_dask(2)
    print(f"Dask LocalCluster (2 worker processes, 1 thread each) started in {startup:.2f} s "
          "(not in the timings)")
    try:
        for name, workload in loads.items():
            wall, result = timed(workload, client)
            reference = timings[name]["1 worker"][2]
            pd.testing.assert_frame_equal(result.final, reference.final, check_exact=True)
            timings[name]["Dask, 2 workers"] = (2, wall, result)
    finally:
        client.close()
        cluster.close()
    for name, workload in loads.items():
        n_runs = len(workload["seeds"]) * len(workload["variants"])
        first, reference = timings[name]["1 worker"][1:]
        last = serial_in_fresh_process(name)
        serial = (first + last) / 2
        timings[name]["1 worker"] = (1, serial, reference)
        rows = [_row(label, workers, wall, result, serial, n_runs)
                for label, (workers, wall, result) in timings[name].items()]
        print(f"\n{name}: the serial call took {first:.1f} s first and {last:.1f} s last "
              "(in a fresh process); speed-ups against their mean")
        _print(name, rows, serial, n_runs)


if __name__ == "__main__":
    main()
