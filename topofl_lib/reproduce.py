"""Run the notebooks through papermill and write the results-versus-paper table.

``python -m topofl_lib reproduce --profile quick|cpu|paper|auto [--only NAME ...]`` executes
every registered notebook (or those named) with the profile's parameters, writes the
executed copies to ``<output>/build/notebooks/``, figures to ``<output>/figures/``,
per-notebook claim rows to ``<output>/results/claims/``, and finally merges them into
``<output>/results/claims.csv`` and ``<output>/results/comparison.md``.

Profiles: ``quick`` (CI, minutes), ``paper`` (the papers' protocols: seeds, rounds,
epochs, full datasets), ``cpu`` (the paper profile where it runs on a CPU in
reasonable time, which is every notebook but the two deep ones; for those, a reduced
protocol that runs in about an hour on 2 cores, stated in the notebooks), and ``auto``
(``paper`` when a CUDA GPU is present, else ``cpu``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tqdm.auto import tqdm

from ._validation import check_int
from .flower import cli as flower_cli
from .results import collect_claims, comparison_markdown

__all__ = ["NOTEBOOKS", "PROFILES", "check_parameters", "main", "output_dirs", "reproduce",
           "resolve_profile"]

PROFILES = ("quick", "cpu", "paper")

#: notebook name -> {profile: papermill parameters}
NOTEBOOKS: dict[str, dict[str, dict]] = {
    "scenario_a_healthcare": {
        "quick": {"profile": "quick", "n_seeds": 3, "n_rounds": 15},
        "paper": {"profile": "paper", "n_seeds": 20, "n_rounds": 15},
    },
    "scenario_b_benchmark": {
        "quick": {"profile": "quick", "n_seeds": 3, "n_rounds": 15},
        "paper": {"profile": "paper", "n_seeds": 20, "n_rounds": 15},
    },
    "robustness": {
        "quick": {"profile": "quick", "n_seeds": 3, "n_rounds": 10, "rates": [0.0, 0.3, 0.5]},
        "paper": {"profile": "paper", "n_seeds": 10, "n_rounds": 10,
                  "rates": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]},
    },
    "continual_drift": {
        "quick": {"profile": "quick", "n_seeds": 3, "n_rounds": 20},
        "paper": {"profile": "paper", "n_seeds": 20, "n_rounds": 20},
    },
    "ablation_theorems": {
        "quick": {"profile": "quick", "n_seeds": 3, "n_rounds": 15},
        "paper": {"profile": "paper", "n_seeds": 20, "n_rounds": 15,
                  "betas": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0],
                  "cluster_counts": [1, 2, 3, 4, 5, 6]},
    },
    "gfc_clustering": {
        "quick": {"profile": "quick", "n_seeds": 2},
        "paper": {"profile": "paper", "n_seeds": 10,
                  "epsilons": [1000.0, 100.0, 10.0, 1.0, 0.1, 0.05, 0.01],
                  "datasets": ["iris", "wine", "breast_cancer", "digits", "mnist5k", "blobs2d",
                               "blobs10d"],
                  "local_counts": [5, 15, 30, 60], "client_counts": [100, 1000],
                  "scalability_seeds": 10},
    },
    "privacy_analysis": {
        "quick": {"profile": "quick", "n_seeds": 3, "attack_seeds": 1, "attack_clients": 2,
                  "batch_sizes": [1, 2, 4], "gradient_iters": 300, "descriptor_iters": 150,
                  "mia_targets": 16, "mia_shadows": 8},
        "paper": {"profile": "paper", "n_seeds": 10, "attack_seeds": 3, "attack_clients": 3,
                  "batch_sizes": [1, 2, 4, 8, 16], "gradient_iters": 1500,
                  "descriptor_iters": 1000, "mia_targets": 100, "mia_shadows": 16},
    },
}

NOTEBOOKS["fedtopo"] = {
    "quick": {"profile": "quick", "n_seeds": 1, "n_rounds": 2, "local_epochs": 1,
              "n_train": 1500, "n_test": 500, "tal_every": 4, "n_val": 300,
              "tgbs_pairs": 200},
    "cpu": {"profile": "cpu", "n_seeds": 3, "n_rounds": 5, "local_epochs": 2,
            "n_train": 12000, "n_test": 2000, "tal_every": 4, "n_val": 1000,
            "tgbs_pairs": 500},
    "paper": {"profile": "paper", "n_seeds": 5, "n_rounds": 5, "local_epochs": 5,
              "n_train": 60000, "n_test": 10000, "tal_every": 1, "n_val": 1000,
              "tgbs_pairs": 500},
}
NOTEBOOKS["ptopofl_deep"] = {
    "quick": {"profile": "quick", "n_seeds": 1, "n_rounds": 2, "local_epochs": 1,
              "n_train": 2000, "n_test": 500},
    "cpu": {"profile": "cpu", "n_seeds": 3, "n_rounds": 10, "local_epochs": 1,
            "n_train": 12000, "n_test": 2000},
    "paper": {"profile": "paper", "n_seeds": 5, "n_rounds": 100, "local_epochs": 5,
              "n_train": 60000, "n_test": 10000},
}
for _name, _profiles in NOTEBOOKS.items():  # the CPU runs the paper protocol elsewhere
    _profiles.setdefault("cpu", _profiles["paper"])

ENV_OUTPUT = "TOPOFL_OUTPUT_DIR"


def resolve_profile(profile: str) -> str:
    """``"auto"``: ``"paper"`` with a CUDA GPU, else ``"cpu"``; other names unchanged."""
    if profile == "auto":
        import torch

        return "paper" if torch.cuda.is_available() else "cpu"
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of "
                         f"{[*PROFILES, 'auto']}")
    return profile


def output_dirs(output_dir=None) -> tuple[Path, Path]:
    """``(figures_dir, results_dir)`` for a notebook run.

    ``output_dir`` (a notebook parameter) wins; else the environment variable
    ``TOPOFL_OUTPUT_DIR`` (the test command sets it so that validating notebooks never
    overwrites the committed paper-profile figures); else the repository root, taken as
    the parent of the ``notebooks/`` folder the notebook runs in.
    """
    if output_dir is None:
        output_dir = os.environ.get(ENV_OUTPUT)
    if output_dir is None:
        cwd = Path.cwd()
        output_dir = cwd.parent if cwd.name == "notebooks" else cwd
    if not isinstance(output_dir, (str, os.PathLike)):
        raise TypeError(f"output_dir must be a path or None, got {output_dir!r}")
    root = Path(output_dir).resolve()
    return root / "figures", root / "results"


def check_parameters(profile: str, **counts: int) -> None:
    """Validate a notebook's parameters (papermill injects them) in its first code cell.

    ``profile`` must be a known profile and every keyword a positive int, e.g.
    ``check_parameters(profile, n_seeds=n_seeds, n_rounds=n_rounds)``. Raises
    ``ValueError``/``TypeError`` naming the parameter, so a malformed ``-p n_seeds ten``
    fails in the parameters cell instead of deep inside a run.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {list(PROFILES)}")
    for name, value in counts.items():
        check_int(value, name, low=1)


def reproduce(profile: str = "quick", only: list[str] | None = None,
              notebooks_dir="notebooks", output_dir=".", kernel: str | None = None) -> Path:
    """Execute the notebooks of ``profile`` and write the claims table; returns its path."""
    import papermill as pm

    profile = resolve_profile(profile)
    names = list(NOTEBOOKS) if not only else list(only)
    unknown = [n for n in names if n not in NOTEBOOKS]
    if unknown:
        raise ValueError(f"unknown notebook(s) {unknown}; expected names from {list(NOTEBOOKS)}")
    notebooks_dir = Path(notebooks_dir).resolve()
    out = Path(output_dir).resolve()
    executed = out / "build" / "notebooks"
    executed.mkdir(parents=True, exist_ok=True)
    bar = tqdm(names, desc=f"notebooks ({profile})", unit="nb")
    for name in bar:
        bar.set_postfix_str(name)
        src = notebooks_dir / f"{name}.ipynb"
        if not src.exists():
            raise FileNotFoundError(f"notebook {src} not found (run from the repository root)")
        params = {**NOTEBOOKS[name][profile], "output_dir": str(out)}
        pm.execute_notebook(str(src), str(executed / f"{name}.ipynb"), parameters=params,
                            cwd=str(notebooks_dir), kernel_name=kernel, progress_bar=False)
    results = out / "results"
    claims = collect_claims(results)
    claims.to_csv(results / "claims.csv", index=False, float_format="%.6g")
    header = (
        f"# Results versus the papers\n\nGenerated by `python -m topofl_lib reproduce "
        f"--profile {profile}`. Ours: mean ± sample standard deviation over seeds (the "
        "spread of single runs, not the error of the mean). The papers report single "
        "runs, so 'paper within ±2 sd' asks whether the paper's number is a plausible "
        "single run of our setting; it is a coarse check, not a test. Paired tests "
        "between methods are in the notebooks.\n\n"
    )
    (results / "comparison.md").write_text(header + comparison_markdown(claims))
    return results / "claims.csv"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m topofl_lib")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the notebooks and write results/")
    rep.add_argument("--profile", choices=[*PROFILES, "auto"], default="quick")
    rep.add_argument("--only", nargs="+", metavar="NAME", choices=list(NOTEBOOKS),
                     help="run only these notebooks")
    rep.add_argument("--notebooks-dir", default="notebooks")
    rep.add_argument("--output-dir", default=".")
    rep.add_argument("--kernel", default=None, help="Jupyter kernel name (default: notebook's)")
    flower_cli.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "flower":
        return flower_cli.run(args)
    path = reproduce(args.profile, args.only, args.notebooks_dir, args.output_dir, args.kernel)
    print(f"wrote {path} and {path.with_name('comparison.md')}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
