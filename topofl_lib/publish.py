"""Moving a notebook's staged outputs into place, all or nothing.

``reproduce`` runs each notebook with ``output_dir`` set to a fresh staging folder. When
the notebook has succeeded, :func:`publish` moves its files into the target (the
repository's ``figures/``, ``results/claims/`` and ``results/notebooks/``, or
``build/reproduce/quick/`` for the quick profile):

0. the executed notebook is checked against :data:`NOTEBOOK_LIMIT` (:func:`fit_notebook`:
   over it, the interactive data of figures that also carry a static image is dropped;
   still over it, nothing is published);
1. a journal listing every move (staged file -> final name, all on one filesystem), the
   notebook's stale files to remove (those its last run published and this one did
   not, from ``results/manifest.json``), the new manifest and the new
   ``results/environment.json`` (the environment the notebook ran in,
   :mod:`topofl_lib.environment`) is written atomically;
2. the moves are done with ``os.replace`` (SIGINT is held back meanwhile), the stale
   files removed;
3. ``claims.csv`` and ``comparison.md`` are regenerated from the per-notebook claim
   files, each written to a temporary file and renamed;
4. the journal is removed.

A run killed before step 1 has changed nothing. A run killed after it (a window of a
few renames) is completed by :func:`finish_pending` at the start of the next
publishing run, since every staged file is then complete. So each published file is
always either that of the previous run or of a notebook that finished.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pandas as pd

from .environment import ENVIRONMENT_FILE, add_notebook
from .outputs import write_text_atomic
from .results import comparison_document

__all__ = ["NOTEBOOK_LIMIT", "Target", "finish_pending", "fit_notebook", "publish",
           "published_profiles", "write_summary"]

BUNDLE = "plotly.min.js"
MANIFEST = "manifest.json"
#: The most bytes a published executed notebook may take (2 MB), so that a reader can
#: open it on the web with its tables and figures.
NOTEBOOK_LIMIT = 2_000_000
#: The interactive plotly figure data in a notebook output (its static image is PNG).
PLOTLY_MIME = "application/vnd.plotly.v1+json"


@dataclass(frozen=True)
class Target:
    """Where a run's outputs end up, below the output root ``base``.

    ``published`` targets are the repository's ``figures/`` and ``results/`` (executed
    notebooks in ``results/notebooks/``); the quick profile's target is
    ``build/reproduce/quick/`` (``figures/``, ``results/``, ``notebooks/``).

    Attributes
    ----------
    base : Path
        The output root.
    published : bool
        Whether this is the repository's published target (else the quick one).
    """

    base: Path
    published: bool

    @property
    def root(self) -> Path:
        return self.base if self.published else self.base / "build" / "reproduce" / "quick"

    @property
    def figures(self) -> Path:
        return self.root / "figures"

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def executed(self) -> Path:
        return self.results / "notebooks" if self.published else self.root / "notebooks"

    @property
    def work(self) -> Path:
        """Staging folders, journal and lock (always under ``build/``)."""
        return self.base / "build" / "reproduce"

    @property
    def kind(self) -> str:
        return "published" if self.published else "quick"

    @property
    def journal(self) -> Path:
        return self.work / f"journal-{self.kind}.json"


def published_profiles(results_dir, claims: str) -> set[str] | None:
    """Profiles of the rows in ``results_dir/claims/<claims>.csv`` (None: no such file).

    A file without a ``profile`` column gives ``{"<unknown>"}``.

    Parameters
    ----------
    results_dir : str or Path
        A ``results/`` folder.
    claims : str
        The claim file's stem.

    Returns
    -------
    set of str or None
        The profiles named in the file, or None without the file.
    """
    path = Path(results_dir) / "claims" / f"{claims}.csv"
    if not path.exists():
        return None
    rows = pd.read_csv(path)
    if "profile" not in rows:
        return {"<unknown>"}
    return set(rows["profile"].dropna().astype(str))


def write_summary(results_dir) -> None:
    """Regenerate ``claims.csv`` and ``comparison.md`` from ``claims/*.csv``, atomically."""
    results_dir = Path(results_dir)
    claims, markdown = comparison_document(results_dir)
    write_text_atomic(results_dir / "claims.csv",
                      claims.to_csv(index=False, float_format="%.6g"))
    write_text_atomic(results_dir / "comparison.md", markdown)


@contextmanager
def _sigint_held() -> Iterator[None]:
    """Defer Ctrl-C until the block is done (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt


def _apply(journal: dict, base: Path) -> None:
    with _sigint_held():
        for src, dst in journal["moves"]:
            if (base / src).exists():  # absent: moved before an interruption
                os.replace(base / src, base / dst)
        for path in journal["remove"]:
            (base / path).unlink(missing_ok=True)
        write_summary(base / journal["results"])


def finish_pending(target: Target) -> str | None:
    """Complete a publish that was interrupted after its journal was written.

    Returns the notebook's name, or None if nothing was pending.
    """
    if not target.journal.exists():
        return None
    journal = json.loads(target.journal.read_text())
    _apply(journal, target.base)
    target.journal.unlink()
    return journal["notebook"]


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _output_sizes(nb) -> list[tuple[int, int, str]]:
    """``(bytes, cell index, MIME type or output type)`` of every output, largest first."""
    sizes = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            parts = output.get("data") or {output.get("output_type", "output"): output}
            sizes += [(len(json.dumps(v)), index, k) for k, v in parts.items()]
    return sorted(sizes, reverse=True)


def fit_notebook(path, limit: int | None = None) -> int:
    """Keep the executed notebook at ``path`` within ``limit`` bytes, or refuse it.

    Over the limit, the interactive plotly data of every figure that also carries a
    static image (``image/png``) is dropped, and the notebook rewritten atomically: the
    tables and the figures' images stay, and the interactive figures are in
    ``figures/*.html``.

    Parameters
    ----------
    path : path
        The executed notebook (``.ipynb``).
    limit : int, optional
        The bound in bytes (default :data:`NOTEBOOK_LIMIT`).

    Returns
    -------
    int
        Its size in bytes afterwards.

    Raises
    ------
    RuntimeError
        Still over the limit: the message names its size and its largest outputs.
    """
    path = Path(path)
    limit = NOTEBOOK_LIMIT if limit is None else limit
    size = path.stat().st_size
    if size <= limit:
        return size
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if PLOTLY_MIME in data and "image/png" in data:
                del data[PLOTLY_MIME]
    text = nbformat.writes(nb)
    text += "" if text.endswith("\n") else "\n"  # as nbformat.write ends a file
    size = len(text.encode())
    if size > limit:
        largest = ", ".join(f"cell {i} {kind} ({n / 1e6:.2f} MB)"
                            for n, i, kind in _output_sizes(nb)[:3])
        raise RuntimeError(
            f"the executed notebook {path.name} takes {size / 1e6:.2f} MB, over the "
            f"{limit / 1e6:g} MB bound of a published notebook (largest outputs: {largest}); "
            "make those outputs smaller (fewer rows shown, a smaller figure)")
    write_text_atomic(path, text)
    return size


def publish(stage: Path, target: Target, name: str, claims: str, profile: str,
            environment: tuple[dict, dict] | None = None) -> list[Path]:
    """Move notebook ``name``'s files from ``stage`` (its finished run) into ``target``.

    ``stage`` holds ``figures/``, ``results/claims/<claims>.csv`` and ``<name>.ipynb``;
    ``environment`` is ``(run, machine)``, the :func:`topofl_lib.environment.run_record`
    and :func:`~topofl_lib.environment.machine_record` of the notebook's run, recorded in
    ``results/environment.json`` (None: the file is left as it is). Returns the
    published paths.

    Parameters
    ----------
    stage : Path
        The notebook's staging folder.
    target : Target
        Where its outputs go.
    name : str
        The notebook's name.
    claims : str
        The stem of its claim file.
    profile : str
        The profile it ran under (every claim row must carry it).
    environment : tuple of dict, optional
        ``(run, machine)`` records (see above).

    Returns
    -------
    list of Path
        The published paths.

    Raises
    ------
    RuntimeError
        The notebook wrote another claim file than ``<claims>.csv``, or rows that carry
        another profile than ``profile``, or its executed copy exceeds
        :data:`NOTEBOOK_LIMIT`; nothing is published then.
    """
    stage, base = Path(stage), target.base
    staged_claims = stage / "results" / "claims"
    found = sorted(p.name for p in staged_claims.glob("*.csv"))
    if found != [f"{claims}.csv"]:
        raise RuntimeError(f"notebook {name!r} wrote claim files {found}; expected exactly "
                           f"['{claims}.csv'] (see topofl_lib.notebook_params.NOTEBOOKS)")
    labels = published_profiles(stage / "results", claims) or set()
    if labels - {profile}:
        raise RuntimeError(f"notebook {name!r} ran under profile {profile!r} but its rows say "
                           f"{sorted(labels)}; nothing of it was published")
    try:
        fit_notebook(stage / f"{name}.ipynb")
    except RuntimeError as exc:
        raise RuntimeError(f"notebook {name!r}: {exc}; nothing of it was published") from None
    figures = sorted(p for p in (stage / "figures").glob("*")
                     if p.is_file() and p.name != BUNDLE and not p.name.startswith("."))
    moves = [(p, target.figures / p.name) for p in figures]
    bundle = stage / "figures" / BUNDLE
    if bundle.exists() and (not (target.figures / BUNDLE).exists()
                            or (target.figures / BUNDLE).read_bytes() != bundle.read_bytes()):
        moves.append((bundle, target.figures / BUNDLE))
    moves.append((stage / f"{name}.ipynb", target.executed / f"{name}.ipynb"))
    moves.append((staged_claims / f"{claims}.csv", target.results / "claims" / f"{claims}.csv"))

    def rel(path: Path) -> str:
        return path.relative_to(target.root).as_posix()

    files = sorted(rel(dst) for _, dst in moves if target.root in dst.parents
                   and dst.name != BUNDLE)
    manifest = _read_json(target.results / MANIFEST)
    old = set(manifest.get(name, {}).get("files", []))
    stale = sorted(f for f in old - set(files)
                   if f.startswith(("figures/", "results/claims/")) and ".." not in f)
    manifest[name] = {"profile": profile, "files": files}
    staged_manifest = write_text_atomic(stage / MANIFEST,
                                        json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    moves.append((staged_manifest, target.results / MANIFEST))
    if environment is not None:
        record = add_notebook(_read_json(target.results / ENVIRONMENT_FILE), name, *environment)
        staged = write_text_atomic(stage / ENVIRONMENT_FILE,
                                   json.dumps(record, indent=1) + "\n")
        moves.append((staged, target.results / ENVIRONMENT_FILE))
    for _, dst in moves:
        dst.parent.mkdir(parents=True, exist_ok=True)
    journal = {
        "notebook": name,
        "moves": [[src.relative_to(base).as_posix(), dst.relative_to(base).as_posix()]
                  for src, dst in moves],
        "remove": [(target.root / f).relative_to(base).as_posix() for f in stale],
        "results": target.results.relative_to(base).as_posix(),
    }
    write_text_atomic(target.journal, json.dumps(journal, indent=1) + "\n")
    _apply(journal, base)
    target.journal.unlink()
    return [dst for _, dst in moves]
