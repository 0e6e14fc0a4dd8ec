"""Moving a notebook's staged outputs into place, all or nothing.

``reproduce`` runs each notebook with ``output_dir`` set to a fresh staging folder. When
the notebook has succeeded, :func:`publish` moves its files into the target (the
repository's ``figures/``, ``results/claims/`` and ``results/notebooks/``, or
``build/reproduce/quick/`` for the quick profile):

0. the executed notebook is checked against :data:`NOTEBOOK_LIMIT` (:func:`fit_notebook`:
   over it, the interactive data of figures that also carry a static image is dropped;
   still over it, nothing is published);
1. every claim file the new summary will be built from is checked
   (:func:`check_claim_files`): its columns and values, and, where ``manifest.json``
   recorded them when its notebook was published, its row count, claim ids and SHA-256.
   A damaged file stops the publication before anything is written; the message names
   it and how to restore it. So does a row that no rule of ``topofl_lib/protocols.csv``
   gives a protocol (:func:`topofl_lib.claims_summary.assign_protocols`), since the
   summary could not be built;
2. a journal listing every move (staged file -> final name, all on one filesystem), the
   notebook's stale files to remove (those its last run published and this one did
   not, from ``results/manifest.json``), the new manifest (with the record of the new
   claim file) and the new ``results/environment.json`` (the environment the notebook
   ran in, :mod:`topofl_lib.environment`) is written atomically;
3. the moves are done with ``os.replace`` (SIGINT is held back meanwhile), the stale
   files removed;
4. ``claims.csv`` and ``comparison.md`` are regenerated from the per-notebook claim
   files (:func:`topofl_lib.claims_summary.comparison_document`), each written to a
   temporary file and renamed;
5. the journal is removed.

A run killed before step 2 has changed nothing. A run killed after it (a window of a
few renames) is completed by :func:`finish_pending` at the start of the next
publishing run, since every staged file is then complete. So each published file is
always either that of the previous run or of a notebook that finished. A journal only
moves files from the staging folder into the target's ``figures/`` and ``results/`` (and
the quick target's ``notebooks/``) and removes files there, by real path; one that asks
for anything else, or cannot be read, is refused whole, naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ._bounded_files import BoundedFileError, read_json
from .claims_summary import assign_protocols, comparison_document
from .environment import ENVIRONMENT_FILE, add_notebook
from .outputs import write_text_atomic
from .readme_sections import documents, write_readme
from .results import (
    CLAIM_COLUMNS,
    PAPER_DATA_PROFILE,
    SETTING_PROFILES,
    ClaimFileError,
    read_claim_file,
)

__all__ = ["NOTEBOOK_LIMIT", "DamagedResults", "Target", "check_claim_files",
           "finish_pending", "fit_notebook", "publish", "published_profiles",
           "write_readme_sections", "write_summary"]

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

    @property
    def staging(self) -> Path:
        """The staging folders' parent: the only place a journal moves files from."""
        return self.work / "staging"

    @property
    def folders(self) -> tuple[Path, ...]:
        """The folders a journal may move files into and remove files from."""
        return (self.figures, self.results) + (() if self.published else (self.executed,))


class DamagedResults(ValueError):
    """A published file is not as its publication left it; nothing was written.

    The message names the file, what is wrong with it and how to restore it.
    """


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it lies below it, else absolute."""
    path = Path(path).absolute()
    cwd = Path.cwd()
    return path.relative_to(cwd).as_posix() if cwd in path.parents else str(path)


def _read_json(path: Path) -> dict:
    """The JSON object in ``path`` ({} without the file); a damaged file is named."""
    if not path.exists():
        return {}
    try:
        value = read_json(path)
    except BoundedFileError as exc:
        value = exc
    if not isinstance(value, dict):
        why = value if isinstance(value, Exception) else f"holds a {type(value).__name__}"
        raise DamagedResults(
            f"{_shown(path)} is not a JSON object ({why}); nothing was published. Restore "
            f"it from git (`git checkout -- {_shown(path)}`)")
    return value


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _claims_owners(manifest: dict) -> dict[str, tuple[str, dict]]:
    """Claim file (relative to the target root) -> (notebook, its manifest entry)."""
    owners = {}
    for name, entry in manifest.items():
        files = entry.get("files") if isinstance(entry, dict) else None
        for rel in files if isinstance(files, list) else []:
            if isinstance(rel, str) and rel.startswith("results/claims/") and rel.endswith(".csv"):
                owners[rel] = (name, entry)
    return owners


def _restore_hint(path: Path, owner: tuple[str, dict] | None) -> str:
    again = (f"re-publish notebook {owner[0]!r} on its own (`python -m topofl_lib reproduce "
             f"--profile {owner[1].get('profile', 'cpu')} --only {owner[0]}`)" if owner
             else "re-run the notebook that writes it")
    return (f"Nothing was published. Restore it from git (`git checkout -- {_shown(path)}`) "
            f"or {again}")


def _record_fault(path: Path, rows, owner: tuple[str, dict]) -> str | None:
    """What differs between the claim file and its notebook's manifest entry (None: nothing)."""
    name, entry = owner
    labels = sorted(set(rows["profile"].astype(str)) - set(SETTING_PROFILES))
    if labels and labels != [entry.get("profile")]:
        return (f"its rows say profile {labels}, but manifest.json records that notebook "
                f"{name!r} published them under {entry.get('profile')!r}")
    record = entry.get("claims")
    if not isinstance(record, dict):  # published before records were kept: columns only
        return None
    ids = rows["id"].astype(str).tolist()
    if len(rows) != record.get("rows") or ids != record.get("ids"):
        recorded = record.get("ids") or []
        missing = [i for i in recorded if i not in set(ids)]
        extra = [i for i in ids if i not in set(recorded)]
        return (f"it holds {len(rows)} rows, but notebook {name!r} published "
                f"{record.get('rows')} (manifest.json)"
                + (f"; missing ids {missing[:4]}{' ...' if len(missing) > 4 else ''}"
                   if missing else "")
                + (f"; unknown ids {extra[:4]}{' ...' if len(extra) > 4 else ''}"
                   if extra else "")
                + ("" if missing or extra else "; its rows are in another order"))
    if _sha256(path) != record.get("sha256"):
        return (f"its content changed since notebook {name!r} published it (its SHA-256 is "
                "not the one manifest.json recorded), though its ids are the same")
    return None


def _check_claim_file(path: Path, owner: tuple[str, dict] | None) -> list[str]:
    """The ids of the claim file at ``path``, once it is found intact (see below)."""
    if not path.exists():
        raise DamagedResults(f"{_shown(path)} is missing, though manifest.json lists it "
                             f"for notebook {owner[0]!r}. {_restore_hint(path, owner)}")
    try:
        rows = read_claim_file(path)
    except ClaimFileError as exc:
        raise DamagedResults(f"{exc}. {_restore_hint(path, owner)}") from None
    fault = owner and _record_fault(path, rows, owner)
    if fault:
        raise DamagedResults(f"{_shown(path)}: {fault}. {_restore_hint(path, owner)}")
    return rows["id"].astype(str).tolist()


def check_claim_files(results_dir, skip=()) -> dict[str, list[str]]:
    """Check every claim file that ``results_dir``'s summary is built from.

    Each ``claims/*.csv`` must read as claim rows (:func:`topofl_lib.results.read_claim_file`:
    its columns and values), and no claim id may be in two files. A file that
    ``manifest.json`` lists for a notebook must exist and carry that notebook's profile;
    where the manifest also recorded the file at publication (its rows, ids and SHA-256:
    every publication since this check exists), it must match that record. Entries
    published before records were kept are checked by columns and values only.

    Parameters
    ----------
    results_dir : str or Path
        A ``results/`` folder (``manifest.json`` and ``claims/`` in it).
    skip : iterable of str
        Claim file stems left unchecked: those about to be replaced.

    Returns
    -------
    dict of str to list of str
        Each checked file (``results/claims/<name>.csv``) -> its claim ids.

    Raises
    ------
    DamagedResults
        Naming the first damaged file, what is wrong and how to restore it (from git, or
        by re-publishing its notebook).
    """
    results_dir = Path(results_dir)
    root, skip = results_dir.parent, set(skip)
    owners = _claims_owners(_read_json(results_dir / MANIFEST))
    paths = {p.relative_to(root).as_posix() for p in (results_dir / "claims").glob("*.csv")}
    ids, seen = {}, {}
    for rel in sorted(paths | set(owners)):
        path = root / rel
        if path.stem in skip:
            continue
        ids[rel] = _check_claim_file(path, owners.get(rel))
        clash = next((i for i in ids[rel] if i in seen), None)
        if clash is not None:
            raise DamagedResults(
                f"claim id {clash!r} is in both {seen[clash]} and {rel} (in {_shown(root)}); "
                f"each claim belongs to one notebook. {_restore_hint(path, owners.get(rel))}")
        seen.update(dict.fromkeys(ids[rel], rel))
    return ids


def _claims_record(path: Path, rel: str) -> dict:
    """What :func:`check_claim_files` compares a published claim file with."""
    rows = read_claim_file(path)
    return {"file": rel, "rows": len(rows), "ids": rows["id"].astype(str).tolist(),
            "sha256": _sha256(path)}


def published_profiles(results_dir, claims: str) -> set[str] | None:
    """Profiles of the rows in ``results_dir/claims/<claims>.csv`` (None: no such file).

    A damaged file (:func:`topofl_lib.results.read_claim_file` refuses it) gives the
    profile ``manifest.json`` recorded for it, else ``{"<unknown>"}``.

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
    results_dir = Path(results_dir)
    path = results_dir / "claims" / f"{claims}.csv"
    if not path.exists():
        return None
    try:
        rows = read_claim_file(path)
    except ClaimFileError:
        owner = _claims_owners(_read_json(results_dir / MANIFEST)).get(
            f"results/claims/{claims}.csv")
        return {str(owner[1].get("profile"))} if owner else {"<unknown>"}
    return set(rows["profile"].astype(str))


def write_summary(results_dir) -> None:
    """Regenerate ``claims.csv`` and ``comparison.md`` from ``claims/*.csv``, atomically.

    Every claim file is checked first (:func:`check_claim_files`); a damaged one stops
    it before anything is written, and so does a row without a protocol rule (both texts
    are built before either file is written). Each file is written to a temporary file
    and renamed over the old one.

    Parameters
    ----------
    results_dir : str or Path
        A ``results/`` folder.

    Raises
    ------
    DamagedResults
        A claim file is damaged; the message names it and how to restore it.
    ValueError
        A row matches no rule of ``topofl_lib/protocols.csv``.
    """
    results_dir = Path(results_dir)
    check_claim_files(results_dir)
    claims, markdown = comparison_document(results_dir)
    write_text_atomic(results_dir / "claims.csv",
                      claims.to_csv(index=False, float_format="%.6g"))
    write_text_atomic(results_dir / "comparison.md", markdown)


def write_readme_sections(target: Target) -> bool:
    """Re-render the marked sections of the README and the guides from the target's
    published results.

    Only a published target has them (``target.base``'s
    :func:`~topofl_lib.readme_sections.documents`); the text between each
    ``<!-- topofl:begin NAME -->`` / ``<!-- topofl:end NAME -->`` pair is rewritten
    (atomically, file by file) from ``results/`` by
    :func:`topofl_lib.readme_sections.write_readme`, nothing else. Called right after
    :func:`write_summary`.

    Parameters
    ----------
    target : Target
        The target just published to.

    Returns
    -------
    bool
        Whether a document was rewritten.

    Raises
    ------
    topofl_lib.traceability.SectionError
        A document's markers are malformed (the message names the line).
    """
    if not target.published:
        return False
    written = [write_readme(path, target.results) for path in documents(target.base)]
    return any(written)


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


def _entry(base: Path, rel: str) -> Path:
    """The real place of the directory entry ``base / rel`` (its folder's links resolved)."""
    path = base / rel
    return path.parent.resolve() / path.name


def _inside(path: Path, folders) -> bool:
    return path.name not in ("", ".", "..") and any(f.resolve() in path.parents
                                                    for f in folders)


def _journal_fault(journal, target: Target) -> str | None:
    """Why ``journal`` is not one that :func:`publish` writes for ``target`` (None: it is)."""
    if not isinstance(journal, dict) or not isinstance(journal.get("notebook"), str):
        return "does not name its notebook"
    moves, remove = journal.get("moves"), journal.get("remove")
    if not (isinstance(moves, list) and all(
            isinstance(m, list) and len(m) == 2 and all(isinstance(p, str) for p in m)
            for m in moves)):
        return "has no list of [from, to] moves"
    if not (isinstance(remove, list) and all(isinstance(p, str) for p in remove)):
        return "has no list of files to remove"
    base, folders = target.base, target.folders
    for src, dst in moves:
        if not _inside(_entry(base, src), [target.staging]):
            return f"moves {src!r}, which is not in the staging folder {_shown(target.staging)}"
        if not _inside(_entry(base, dst), folders):
            return f"moves a file to {dst!r}, outside {[_shown(f) for f in folders]}"
    for rel in remove:
        if not _inside(_entry(base, rel), folders):
            return f"removes {rel!r}, outside {[_shown(f) for f in folders]}"
    return None


def _read_journal(target: Target) -> dict | None:
    """The pending journal of ``target`` (None: none), checked whole before any use."""
    path = target.journal
    if not path.exists():
        return None
    try:
        journal = read_json(path)
    except BoundedFileError as exc:
        journal, fault = None, f"cannot be read ({exc}): it was cut short or edited"
    else:
        fault = _journal_fault(journal, target)
    if fault:
        name = journal.get("notebook") if isinstance(journal, dict) else None
        again = f"notebook {name!r}" if isinstance(name, str) else "the notebook it was for"
        restore = ("restore any half-moved file (`git status -- figures results`; "
                   "`git checkout -- FILE`), then " if target.published else "")
        raise DamagedResults(
            f"the publish journal {_shown(path)} {fault}; nothing was moved or removed. "
            "reproduce writes a journal just before it moves a finished notebook's files "
            "into place, so that the next run completes an interrupted publication; this "
            f"one cannot be followed. Remove it (`rm {_shown(path)}`), {restore}"
            f"re-publish {again}")
    return journal


def _apply(journal: dict, target: Target) -> None:
    base = target.base
    with _sigint_held():
        for src, dst in journal["moves"]:
            if (base / src).exists():  # absent: moved before an interruption
                os.replace(base / src, base / dst)
        for path in journal["remove"]:
            (base / path).unlink(missing_ok=True)
        write_summary(target.results)
        write_readme_sections(target)


def finish_pending(target: Target) -> str | None:
    """Complete a publish that was interrupted after its journal was written.

    Parameters
    ----------
    target : Target
        The target whose journal to complete.

    Returns
    -------
    str or None
        The notebook's name, or None if nothing was pending.

    Raises
    ------
    DamagedResults
        The journal cannot be read, or asks to move a file from outside the staging
        folder, or to move or remove one outside the target's published folders (by
        real path): nothing is done then. Or a claim file is damaged
        (:func:`write_summary`).
    """
    journal = _read_journal(target)
    if journal is None:
        return None
    _apply(journal, target)
    target.journal.unlink()
    return journal["notebook"]


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
    import nbformat  # here: its jsonschema costs a second of every CLI start

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if PLOTLY_MIME in data and "image/png" in data:
                del data[PLOTLY_MIME]
    text = _notebook_text(nb)
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


def repository_paths(path, name: str) -> None:
    """Record papermill's input and output paths of the executed notebook ``name`` at
    ``path`` as the repository's (``notebooks/<name>.ipynb``, ``results/notebooks/...``),
    not the folders of the machine that ran it (rewritten atomically).

    Parameters
    ----------
    path : path
        The executed notebook.
    name : str
        The notebook's name.
    """
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    record = nb.metadata.get("papermill")
    if not record:
        return
    record["input_path"] = f"notebooks/{name}.ipynb"
    record["output_path"] = f"results/notebooks/{name}.ipynb"
    write_text_atomic(path, _notebook_text(nb))


def _notebook_text(nb) -> str:
    """``nb`` as the text of a notebook file (ending in a newline, as nbformat.write does)."""
    import nbformat

    text = nbformat.writes(nb)
    return text + ("" if text.endswith("\n") else "\n")


def _check_stage(stage: Path, name: str, claims: str, profile: str) -> Path:
    """The staged claim file, once the notebook's outputs are fit to publish."""
    staged_claims = stage / "results" / "claims"
    found = sorted(p.name for p in staged_claims.glob("*.csv"))
    if found != [f"{claims}.csv"]:
        raise RuntimeError(f"notebook {name!r} wrote claim files {found}; expected exactly "
                           f"['{claims}.csv'] (see topofl_lib.notebook_params.NOTEBOOKS)")
    path = staged_claims / f"{claims}.csv"
    try:
        labels = set(read_claim_file(path)["profile"].astype(str))
    except ClaimFileError as exc:
        raise RuntimeError(f"notebook {name!r} wrote a damaged claim file: {exc}; nothing of "
                           "it was published") from None
    if labels - {profile, *SETTING_PROFILES}:  # not-run and paper-data rows say so instead
        raise RuntimeError(f"notebook {name!r} ran under profile {profile!r} but its rows say "
                           f"{sorted(labels)}; nothing of it was published")
    repository_paths(stage / f"{name}.ipynb", name)
    try:
        fit_notebook(stage / f"{name}.ipynb")
    except RuntimeError as exc:
        raise RuntimeError(f"notebook {name!r}: {exc}; nothing of it was published") from None
    return path


#: What a row kept from the last run on the paper's data says first.
KEPT_NOTE = "kept from the last run on the paper's own data, which this run lacked"


def _keep_paper_data(staged: Path, published: Path) -> None:
    """Keep the published rows measured on the paper's own data that the new run lacks.

    The paper's data is the user's (a file from a registry package, an authors' file):
    a later run without it must not erase what it measured. Where the published claim
    file holds a row of profile ``paper-data`` with a value and the staged file's row of
    the same id is anything else (not run, or a stand-in), the published row replaces
    it, its note prefixed with :data:`KEPT_NOTE`. A damaged published file keeps nothing.
    """
    try:
        old = read_claim_file(published).reindex(columns=CLAIM_COLUMNS)
    except (FileNotFoundError, ClaimFileError):
        return  # nothing published, or nothing trustworthy to keep: the new file replaces it
    keep = old[(old["profile"].astype(str) == PAPER_DATA_PROFILE)
               & (old["n_seeds"] > 0)].set_index("id")
    new = read_claim_file(staged).reindex(columns=CLAIM_COLUMNS)
    lost = (new["profile"].astype(str) != PAPER_DATA_PROFILE) & new["id"].isin(keep.index)
    if not lost.any():
        return
    kept = keep.loc[new.loc[lost, "id"]].reset_index()
    kept["note"] = [f"{KEPT_NOTE}: {n}" if not str(n).startswith(KEPT_NOTE) else n
                    for n in kept["note"].fillna("").astype(str)]
    new.loc[lost, CLAIM_COLUMNS] = kept[CLAIM_COLUMNS].to_numpy()
    write_text_atomic(staged, new[CLAIM_COLUMNS].to_csv(index=False, float_format="%.6g"))


def _check_protocols(results_dir: Path, staged: Path, name: str) -> None:
    """Refuse notebook ``name`` when a row of the summary it would give has no protocol."""
    files = [p for p in sorted((results_dir / "claims").glob("*.csv"))
             if p.name != staged.name] + [staged]
    rows = pd.concat([read_claim_file(p)[["id", "profile"]] for p in files], ignore_index=True)
    try:
        assign_protocols(rows)
    except ValueError as exc:
        raise RuntimeError(f"notebook {name!r}: {exc}; nothing of it was published") from None


def _file_moves(stage: Path, target: Target, name: str, claims: Path) -> list[tuple[Path, Path]]:
    """(staged file, final name) of the figures, the executed notebook and the claim file."""
    figures = sorted(p for p in (stage / "figures").glob("*")
                     if p.is_file() and p.name != BUNDLE and not p.name.startswith("."))
    moves = [(p, target.figures / p.name) for p in figures]
    bundle = stage / "figures" / BUNDLE
    if bundle.exists() and (not (target.figures / BUNDLE).exists()
                            or (target.figures / BUNDLE).read_bytes() != bundle.read_bytes()):
        moves.append((bundle, target.figures / BUNDLE))
    moves.append((stage / f"{name}.ipynb", target.executed / f"{name}.ipynb"))
    moves.append((claims, target.results / "claims" / claims.name))
    return moves


def publish(stage: Path, target: Target, name: str, claims: str, profile: str,
            environment: tuple[dict, dict] | None = None) -> list[Path]:
    """Move notebook ``name``'s files from ``stage`` (its finished run) into ``target``.

    ``stage`` (a folder in ``target.staging``) holds ``figures/``,
    ``results/claims/<claims>.csv`` and ``<name>.ipynb``; ``environment`` is
    ``(run, machine)``, the :func:`topofl_lib.environment.run_record` and
    :func:`~topofl_lib.environment.machine_record` of the notebook's run, recorded in
    ``results/environment.json`` (None: the file is left as it is). The manifest records
    the new claim file (rows, ids, SHA-256) for :func:`check_claim_files`. Returns the
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
        The notebook wrote another claim file than ``<claims>.csv``, a damaged one, or
        rows that carry another profile than ``profile``, or a row that no protocol rule
        matches (``topofl_lib/protocols.csv``), or its executed copy exceeds
        :data:`NOTEBOOK_LIMIT`, or ``stage`` is not in ``target.staging``; nothing is
        published then.
    DamagedResults
        Another notebook's published claim file is damaged (:func:`check_claim_files`);
        nothing is published then.
    """
    stage, base = Path(stage), target.base
    staged = _check_stage(stage, name, claims, profile)
    others = check_claim_files(target.results, skip={claims})
    new_ids = set(read_claim_file(staged)["id"].astype(str))
    clash = sorted((rel, i) for rel, ids in others.items() for i in ids if i in new_ids)
    if clash:
        raise RuntimeError(f"notebook {name!r} wrote claim id {clash[0][1]!r}, which "
                           f"{clash[0][0]} already holds (each claim belongs to one notebook); "
                           "nothing of it was published")
    _keep_paper_data(staged, target.results / "claims" / staged.name)
    _check_protocols(target.results, staged, name)
    moves = _file_moves(stage, target, name, staged)

    def rel(path: Path) -> str:
        return path.relative_to(target.root).as_posix()

    files = sorted(rel(dst) for _, dst in moves if target.root in dst.parents
                   and dst.name != BUNDLE)
    manifest = _read_json(target.results / MANIFEST)
    old = set(manifest.get(name, {}).get("files", []))
    stale = sorted(f for f in old - set(files)
                   if f.startswith(("figures/", "results/claims/")) and ".." not in f)
    manifest[name] = {"profile": profile, "files": files,
                      "claims": _claims_record(staged, f"results/claims/{staged.name}")}
    staged_manifest = write_text_atomic(stage / MANIFEST,
                                        json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    moves.append((staged_manifest, target.results / MANIFEST))
    if environment is not None:
        record = add_notebook(_read_json(target.results / ENVIRONMENT_FILE), name, *environment)
        staged_env = write_text_atomic(stage / ENVIRONMENT_FILE,
                                       json.dumps(record, indent=1) + "\n")
        moves.append((staged_env, target.results / ENVIRONMENT_FILE))
    journal = {
        "notebook": name,
        "moves": [[src.relative_to(base).as_posix(), dst.relative_to(base).as_posix()]
                  for src, dst in moves],
        "remove": [(target.root / f).relative_to(base).as_posix() for f in stale],
    }
    fault = _journal_fault(journal, target)
    if fault:
        raise RuntimeError(f"notebook {name!r}: its publication {fault}; nothing of it was "
                           "published")
    for _, dst in moves:
        dst.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target.journal, json.dumps(journal, indent=1) + "\n")
    _apply(journal, target)
    target.journal.unlink()
    return [dst for _, dst in moves]
