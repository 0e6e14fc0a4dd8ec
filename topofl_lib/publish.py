"""Moving a notebook's staged outputs into place, all or nothing.

``reproduce`` runs each notebook with ``output_dir`` set to a fresh staging folder. When
the notebook has succeeded, :func:`publish` moves its files into the target (the
repository's ``figures/``, ``results/claims/`` and ``build/notebooks/``, or
``build/reproduce/quick/`` for the quick profile):

1. a journal listing every move (staged file -> final name, all on one filesystem), the
   notebook's stale files to remove (those its last run published and this one did
   not, from ``results/manifest.json``) and the new manifest is written atomically;
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

import pandas as pd

from .outputs import write_text_atomic
from .results import comparison_document

__all__ = ["Target", "finish_pending", "publish", "published_profiles", "write_summary"]

BUNDLE = "plotly.min.js"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Target:
    """Where a run's outputs end up, below the output root ``base``.

    ``published`` targets are the repository's ``figures/`` and ``results/`` (executed
    notebooks in ``build/notebooks/``); the quick profile's target is
    ``build/reproduce/quick/`` (``figures/``, ``results/``, ``notebooks/``).
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
        return self.base / "build" / "notebooks" if self.published else self.root / "notebooks"

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


def _manifest(target: Target) -> dict:
    path = target.results / MANIFEST
    return json.loads(path.read_text()) if path.exists() else {}


def publish(stage: Path, target: Target, name: str, claims: str, profile: str) -> list[Path]:
    """Move notebook ``name``'s files from ``stage`` (its finished run) into ``target``.

    ``stage`` holds ``figures/``, ``results/claims/<claims>.csv`` and ``<name>.ipynb``.
    Returns the published paths.

    Raises
    ------
    RuntimeError
        The notebook wrote another claim file than ``<claims>.csv``, or rows that carry
        another profile than ``profile``; nothing is published then.
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
                   and dst.parent != target.executed and dst.name != BUNDLE)
    manifest = _manifest(target)
    old = set(manifest.get(name, {}).get("files", []))
    stale = sorted(f for f in old - set(files)
                   if f.startswith(("figures/", "results/claims/")) and ".." not in f)
    manifest[name] = {"profile": profile, "files": files}
    staged_manifest = write_text_atomic(stage / MANIFEST,
                                        json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    moves.append((staged_manifest, target.results / MANIFEST))
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
