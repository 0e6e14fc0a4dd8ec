"""Compute the fedtopo notebook's paper-profile runs into the run store, seeds first.

``reproduce --profile paper --only fedtopo`` computes whatever the store lacks, in the
notebook's order: every seed of one section before the next section. On a machine where
the whole is more than a sitting (about 58 CPU-hours: issue 27), this script computes
the same runs (the same configurations, so the same keys: the notebook then reuses them)
in a different order, so that every cell has some seeds before any has all of them:
the N-skew readings, Table 1's four partitions (with the L-skew variants), Table 4's
two settings, the N-skew hyperparameter probes of FedFM and FedAvgM, FedAvg with the
N-skew noise in pixel units and Table 2's block runs for seeds 0-2, then the same for
seeds 3-4. A run already stored is
skipped; stop it at any time and start it again::

    nice -n 19 .venv/bin/python scripts/fill_fedtopo_store.py --workers 2

``--status`` computes nothing and says how many runs of each group the store holds, and
about how long the missing ones take: each at the mean recorded seconds of its
configuration's stored seeds (the median stored run where none is stored).

It reads the paper profile's parameters from ``topofl_lib.notebook_params`` (the
notebook's), and the adaptive schedules' loss range from the stored one-round pilot run
as the notebook does (it computes the pilot when missing). The runs that keep a model
(the pilot, Figure 4's run, the schedules' first seed) and TGBS are left to the notebook.
"""

from __future__ import annotations

import sys
from pathlib import Path

STORE = Path(__file__).resolve().parents[1] / "runs" / "fedtopo" / "paper"
SEED_GROUPS = ([0, 1, 2], [3, 4])
#: A run at Table C.3's protocol takes 2-35 minutes on one core: both workers start at
#: once instead of after a first run timed alone (the schedule only; no number changes).
RUN_SECONDS = 300.0


def _parse(argv):
    from topofl_lib._validation import OneLineArgumentParser

    parser = OneLineArgumentParser(prog="scripts/fill_fedtopo_store.py",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="runs at once (default 2)")
    parser.add_argument("--store", type=Path, default=STORE,
                        help=f"the run store (default {STORE})")
    parser.add_argument("--status", action="store_true",
                        help="compute nothing: say how many runs of each group are stored")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    if not args.store.resolve().is_dir():
        parser.error(f"--store {args.store} is not a folder")
    return args


def _groups(p: dict, tal: dict, schedule: dict, pixel_sd: float):
    """``(title, seeds, variants, n_rounds, scenario)`` of every comparison, in the order
    the fill computes them."""
    from topofl_lib.deep import deep_variants, sweep_variants
    from topofl_lib.studies.fedtopo import (
        HYPERPARAMETER_PROBES,
        NSKEW_READINGS,
        TABLE2_BLOCKS,
        TABLE4_SETTINGS,
        table1_variants,
    )

    epochs, rounds = p["local_epochs"], p["n_rounds"]
    pair = deep_variants(["FedAvg", "FedTopo"], local_epochs=epochs, fedtopo=tal,
                         schedule=schedule)
    schedules = deep_variants([f"FedTopo[{s}]" for s in p["schedules"]],
                              local_epochs=epochs, fedtopo=tal, schedule=schedule)
    for seeds in SEED_GROUPS:
        for reading, (options, n) in NSKEW_READINGS.items():
            yield f"N-skew reading {reading}", seeds, pair, n or rounds, {"partition": "N",
                                                                          **options}
        for part in p["partitions"]:
            yield (f"Table 1, {part}-skew", seeds,
                   table1_variants(part, p["methods"], epochs, tal, schedule), rounds,
                   {"partition": part})
        for setting, params in TABLE4_SETTINGS.items():
            yield f"Table 4, setting {setting}", seeds, schedules, rounds, params
        for label, (param, values) in HYPERPARAMETER_PROBES.items():
            yield (f"{label}, {param} in {values}, N-skew", seeds,
                   sweep_variants(label, param, values, local_epochs=epochs), rounds,
                   {"partition": "N"})
        yield ("N-skew, noise sd 0.5 in pixel units", seeds,
               deep_variants(["FedAvg"], local_epochs=epochs), rounds,
               {"partition": "N", "param": pixel_sd})
        yield ("Table 2, FedTopo aligning each block, L-skew", seeds,
               deep_variants([f"FedTopo@{b}" for b in TABLE2_BLOCKS], local_epochs=epochs,
                             fedtopo=tal, schedule=schedule), rounds, {"partition": "L"})


def _time_left(seconds: dict, missing: list, workers: int) -> str:
    """The missing runs' estimated computing time, from the stored runs' recorded seconds.

    ``seconds`` maps ``(group, label)`` to the recorded seconds of its stored runs;
    ``missing`` lists the ``(group, label)`` of each run not stored."""
    import numpy as np

    from topofl_lib.prose import counted

    if not missing:
        return "left: nothing"
    every = [t for ts in seconds.values() for t in ts]
    typical = float(np.median(every)) if every else float("nan")
    guessed = sum(1 for m in missing if m not in seconds)
    hours = sum(float(np.mean(seconds[m])) if m in seconds else typical
                for m in missing) / 3600
    return (f"left: about {hours:.1f} core-hours, {hours / workers:.1f} h with "
            f"{counted(workers, 'worker')} ({counted(len(missing), 'run')}; {guessed} of "
            "them without a stored seed, taken at the median stored run)")


def main(argv=None) -> int:
    """Compute the missing runs, seed group by seed group (``--status``: count them)."""
    args = _parse(argv)
    from topofl_lib.deep import deep_variants, load_image_dataset
    from topofl_lib.fedtopo import calibrate_loss_range
    from topofl_lib.notebook_params import notebook_parameters
    from topofl_lib.runner import plan_comparison, run_comparison
    from topofl_lib.studies.fedtopo import pixel_noise_sd

    p = {"profile": "paper", "output_dir": "build/fill_fedtopo", "n_workers": args.workers}
    notebook_parameters("fedtopo", p)
    store = str(args.store.resolve())
    data = load_image_dataset("fashion_mnist", n_train=p["n_train"], n_test=p["n_test"],
                              random_state=0)
    tal = {"tal_every": p["tal_every"], "tal_samples": p["tal_samples"]}
    pilot = run_comparison(
        "image", seeds=[0], n_rounds=1, keep_models=True, cache_dir=store,
        scenario_params={"dataset": data, "partition": "L", "n_clients": 5},
        variants=deep_variants(["FedTopo[warmup]"], local_epochs=p["local_epochs"],
                               fedtopo=tal),
        on_missing="raise" if args.status else "compute", progress=not args.status,
    ).models[("FedTopo[warmup]", 0)]
    schedule = {"loss_range": calibrate_loss_range(pilot.tal_log_)}
    stored = total = 0
    seconds: dict[tuple[str, str], list[float]] = {}
    missing: list[tuple[str, str]] = []
    for title, seeds, variants, n_rounds, scenario in _groups(p, tal, schedule,
                                                              pixel_noise_sd(data, 0.5)):
        kw = {"seeds": seeds, "n_rounds": n_rounds, "variants": variants, "cache_dir": store,
              "scenario_params": {"dataset": data, "n_clients": 5, **scenario}}
        if args.status:
            plan = plan_comparison("image", **kw)
            for label, is_stored, took in plan[["label", "stored", "seconds"]].itertuples(
                    index=False):
                if is_stored:
                    seconds.setdefault((title, label), []).append(took)
                else:
                    missing.append((title, label))
            stored, total = stored + int(plan["stored"].sum()), total + len(plan)
            print(f"{title}, seeds {seeds}: {int(plan['stored'].sum())} of {len(plan)} stored",
                  flush=True)
        else:
            print(f"{title}, seeds {seeds}", flush=True)
            run_comparison("image", n_workers=args.workers, on_divergence="record",
                           seconds_per_run=RUN_SECONDS, **kw)
    if args.status:
        done = sum(t for ts in seconds.values() for t in ts if t == t) / 3600  # NaN: unrecorded
        print(f"all: {stored} of {total} runs stored, {done:.1f} core-hours by their recorded "
              "seconds")
        print(_time_left(seconds, missing, args.workers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
