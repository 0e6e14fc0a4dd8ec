"""The papers' claims and our measurements of them, one claim file per notebook.

The package carries its own copy of the claims table (``paper_claims.csv``: id, paper,
experiment, setting, method, metric, value, paper_std, source): every number the three
papers print, and rows whose ``paper`` is ``topofl``, measurements that go beyond the
papers (no paper value). A notebook turns its per-seed measurements into rows ``id,
measured_mean, measured_std, n_seeds, profile`` with :func:`claim_rows` and writes them
with :func:`write_claims`; the reproduce command merges every notebook's rows
(:func:`collect_claims`) and :mod:`topofl_lib.claims_summary` turns them into
``results/claims.csv`` and ``results/comparison.md``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ._bounded_files import BoundedFileError, check_csv_rows, read_text
from .outputs import atomic_path, check_unpublished

__all__ = [
    "CLAIM_COLUMNS",
    "NOT_RUN_PROFILE",
    "PAPER_DATA_PROFILE",
    "REQUIRED_CLAIM_COLUMNS",
    "SETTING_PROFILES",
    "ClaimFileError",
    "claim_rows",
    "collect_claims",
    "compare_with_paper",
    "load_paper_claims",
    "not_run_rows",
    "read_claim_file",
    "write_claims",
]

CLAIM_COLUMNS = ["id", "measured_mean", "measured_std", "n_seeds", "profile", "note"]
#: The profile of a row without a value (``n_seeds`` 0; its note says why it was not run).
NOT_RUN_PROFILE = "not run"
#: The profile of a row measured on a paper's own data at the paper's protocol
#: (:mod:`topofl_lib.studies.paper_data`), whatever profile its notebook ran under.
PAPER_DATA_PROFILE = "paper-data"
#: The profiles a notebook's rows may carry besides the profile it ran under.
SETTING_PROFILES = (NOT_RUN_PROFILE, PAPER_DATA_PROFILE)


def load_paper_claims() -> pd.DataFrame:
    """The papers' numbers, indexed by claim id.

    ``value`` is the paper's number as a float (NaN where the paper prints none, or prints
    a formula such as ``O(p)``), ``value_text`` the same as the paper prints it (``"0.790"``,
    ``"O(p)"``; empty where it prints none), so that its precision can be read, and
    ``paper_std`` the spread the paper prints beside it (NaN where it prints none).

    Returns
    -------
    pandas.DataFrame
        Columns paper, experiment, setting, method, metric, value, paper_std, source and
        value_text, indexed by claim id, in the order of ``paper_claims.csv``.

    Examples
    --------
    >>> claims = load_paper_claims()
    >>> row = claims.loc["ptopofl.t1.hc.auc.fedavg"]
    >>> float(row["value"]), row["value_text"]
    (0.79, '0.790')
    """
    with resources.files("topofl_lib").joinpath("paper_claims.csv").open() as fh:
        claims = pd.read_csv(fh, dtype={"value": str, "paper_std": str}).set_index("id")
    text = claims["value"].fillna("").str.strip()
    return claims.assign(value=pd.to_numeric(text, errors="coerce"),
                         paper_std=pd.to_numeric(claims["paper_std"], errors="coerce"),
                         value_text=text)


def claim_rows(values: Mapping[str, np.ndarray], profile: str,
               notes: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Rows of ``claims.csv`` from per-seed measurements ``{claim id: values}``.

    ``notes`` (``{claim id: text}``) marks rows measured in a different setting than the
    paper's, e.g. a stand-in dataset. Raises ``ValueError`` for an id that is not in the
    claims table, so a typo cannot silently drop a measurement. A NaN value is a seed whose
    run diverged (:func:`~topofl_lib.runner.run_comparison` with
    ``on_divergence="record"``): the mean and std are over the finite values, ``n_seeds``
    counts them, and the note says how many seeds diverged; an id whose every value is NaN
    gets a NaN mean and ``n_seeds`` 0. An infinite value raises ``ValueError``.

    Parameters
    ----------
    values : Mapping of str to array-like
        Claim id -> per-seed measurements.
    profile : str
        The run profile recorded in every row.
    notes : Mapping of str to str, optional
        Claim id -> note.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CLAIM_COLUMNS`: the mean, the standard deviation (ddof=1) and the number of
        seeds per id.

    Examples
    --------
    >>> row = claim_rows({"fedtopo.t1.fmnist.Q.fedavg": [89.0, float("nan"), 91.0]}, "cpu")
    >>> float(row.loc[0, "measured_mean"]), int(row.loc[0, "n_seeds"]), row.loc[0, "note"]
    (90.0, 2, '1 of 3 seeds diverged (NaN), left out')
    """
    notes = dict(notes or {})
    known = load_paper_claims().index
    rows = []
    for cid, v in values.items():
        if cid not in known:
            raise ValueError(f"unknown claim id {cid!r}; see topofl_lib/paper_claims.csv")
        v = np.asarray(v, dtype=np.float64).ravel()
        if np.isinf(v).any():
            raise ValueError(f"values of claim {cid!r} contain an infinite value: {v.tolist()}")
        finite = v[~np.isnan(v)]
        note = notes.get(cid, "")
        if finite.size < v.size:
            lost = f"{v.size - finite.size} of {v.size} seeds diverged (NaN), left out"
            note = f"{note}; {lost}" if note else lost
        rows.append({"id": cid, "measured_mean": finite.mean() if finite.size else np.nan,
                     "measured_std": finite.std(ddof=1) if finite.size > 1 else 0.0,
                     "n_seeds": finite.size, "profile": profile, "note": note})
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def not_run_rows(notes: Mapping[str, str]) -> pd.DataFrame:
    """Rows of claims that could not run here: no value, ``n_seeds`` 0, profile ``not run``.

    Parameters
    ----------
    notes : Mapping of str to str
        Claim id -> why it did not run (for a missing dataset, its
        :attr:`~topofl_lib.data.DatasetNotFoundError.not_run_note`).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CLAIM_COLUMNS`, one row per id (mean and std empty).

    Raises
    ------
    ValueError
        An id is not in the claims table, or a note is empty.

    Examples
    --------
    >>> row = not_run_rows({"gfc.t4.abalone.eps0.01.k1.ari": "not run: Abalone not found in x"})
    >>> int(row.loc[0, "n_seeds"]), row.loc[0, "profile"]
    (0, 'not run')
    """
    known = load_paper_claims().index
    for cid, note in notes.items():
        if cid not in known:
            raise ValueError(f"unknown claim id {cid!r}; see topofl_lib/paper_claims.csv")
        if not isinstance(note, str) or not note.strip():
            raise ValueError(f"the note of not-run claim {cid!r} must say why, got {note!r}")
    n = len(notes)  # typed columns: an empty table concatenates like a full one
    return pd.DataFrame({"id": list(notes), "measured_mean": np.full(n, np.nan),
                         "measured_std": np.full(n, np.nan), "n_seeds": np.zeros(n, int),
                         "profile": ["not run"] * n, "note": list(notes.values())},
                        columns=CLAIM_COLUMNS)


def write_claims(rows: pd.DataFrame, results_dir, name: str) -> Path:
    """Write one notebook's claim rows to ``results_dir/claims/<name>.csv`` (atomically).

    Parameters
    ----------
    rows : pandas.DataFrame
        Claim rows, as from :func:`claim_rows`.
    results_dir : str or Path
        The results folder.
    name : str
        The file's stem.

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    ValueError
        The file's real path (symbolic links resolved) lies in the repository's
        published ``results/``, which only ``python -m topofl_lib reproduce`` writes
        (:func:`topofl_lib.outputs.check_unpublished`); nothing is written then.
    """
    path = check_unpublished(Path(results_dir) / "claims" / f"{name}.csv", "write_claims")
    with atomic_path(path) as tmp:
        rows.to_csv(tmp, index=False, float_format="%.6g")
    return path


class ClaimFileError(ValueError):
    """A claim file that cannot be read as claim rows; the message names it and the fault."""


#: Columns every claim file has (``note`` may be missing from older files).
REQUIRED_CLAIM_COLUMNS = CLAIM_COLUMNS[:-1]


def _parse_claim_file(path: Path) -> pd.DataFrame:
    try:
        text = read_text(path)
        check_csv_rows(text, path)
        return pd.read_csv(io.StringIO(text))
    except BoundedFileError as exc:
        raise ClaimFileError(str(exc)) from None
    except pd.errors.EmptyDataError:
        raise ClaimFileError(f"{path} is empty (not even its header line)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        reason = " ".join(str(exc).split())
        raise ClaimFileError(f"{path} cannot be read as CSV ({reason})") from None


def _bad_rows(rows: pd.DataFrame, bad: pd.Series) -> str:
    """``line N (id 'x')`` for the first few rows where ``bad`` is true (line 1: header)."""
    where = [f"line {i + 2} (id {rows['id'].iloc[i]!r})" for i in np.flatnonzero(bad)[:3]]
    more = int(bad.sum()) - len(where)
    return ", ".join(where) + (f" and {more} more" if more > 0 else "")


def _check_claim_columns(rows: pd.DataFrame, path: Path) -> None:
    missing = [c for c in REQUIRED_CLAIM_COLUMNS if c not in rows]
    unknown = [c for c in rows if c not in CLAIM_COLUMNS]
    if missing or unknown:
        raise ClaimFileError(f"{path} has columns {list(rows.columns)}: "
                             + "; ".join(filter(None, [missing and f"{missing} missing",
                                                       unknown and f"{unknown} unknown"]))
                             + f"; a claim file has columns {CLAIM_COLUMNS}")


def _check_claim_values(rows: pd.DataFrame, path: Path) -> None:
    ids = rows["id"]
    faults = {"id is empty": ids.isna() | (ids.astype(str).str.strip() == ""),
              "id repeats an earlier row's": ids.duplicated() & ids.notna()}
    numbers = {c: pd.to_numeric(rows[c], errors="coerce")
               for c in ("measured_mean", "measured_std", "n_seeds")}
    for column, values in numbers.items():
        faults[f"{column} is not a number"] = values.isna() & rows[column].notna()
    seeds, mean, std = numbers["n_seeds"], numbers["measured_mean"], numbers["measured_std"]
    faults["n_seeds is not a whole number >= 0"] = ~((seeds >= 0) & (seeds % 1 == 0))
    faults["measured_std is not a finite number >= 0"] = ~(np.isfinite(std) & (std >= 0)) & ~(
        std.isna() & (seeds == 0))  # a row without a value (n_seeds 0) has no std either
    faults["measured_mean is empty or infinite while n_seeds > 0"] = (
        ~np.isfinite(mean) & (seeds > 0))
    faults["profile is empty"] = rows["profile"].isna() | (
        rows["profile"].astype(str).str.strip() == "")
    for what, bad in faults.items():
        if bad.any():
            raise ClaimFileError(f"{path}: {what} at {_bad_rows(rows, bad)}")


def read_claim_file(path) -> pd.DataFrame:
    """Read one notebook's claim file, checking its columns and every value.

    Parameters
    ----------
    path : str or Path
        A ``claims/<name>.csv`` file, as :func:`write_claims` writes it.

    Returns
    -------
    pandas.DataFrame
        Its rows, as read (columns :data:`CLAIM_COLUMNS`; ``note`` may be missing).

    Raises
    ------
    ClaimFileError
        The file is empty or not CSV, lacks a column of :data:`REQUIRED_CLAIM_COLUMNS`
        or has an unknown one, or a row has an empty or repeated id, a non-numeric or
        negative value, a missing std where ``n_seeds`` > 0 (a row that did not run,
        :func:`not_run_rows`, has neither mean nor std), a fractional ``n_seeds``, or an
        empty profile (what a file cut
        short leaves in its last row). The message names the file, the fault and the
        first rows that show it.
    """
    path = Path(path)
    rows = _parse_claim_file(path)
    _check_claim_columns(rows, path)
    _check_claim_values(rows, path)
    return rows


def _read_claims(results_dir) -> pd.DataFrame:
    """Every ``claims/*.csv`` merged, with a ``source`` column (the file's stem)."""
    files = sorted((Path(results_dir) / "claims").glob("*.csv"))
    if not files:
        return pd.DataFrame(columns=[*CLAIM_COLUMNS, "source"])
    merged = pd.concat([read_claim_file(f).assign(source=f.stem) for f in files],
                       ignore_index=True)
    repeated = merged[merged["id"].duplicated(keep=False)]
    if len(repeated):
        cid = repeated["id"].iloc[0]
        sources = sorted(repeated.loc[repeated["id"] == cid, "source"])
        raise ClaimFileError(f"claim id {cid!r} is in more than one claim file "
                             f"({', '.join(f'claims/{s}.csv' for s in sources)} in "
                             f"{results_dir}); each claim belongs to one notebook")
    notes = merged["note"] if "note" in merged else pd.Series("", index=merged.index)
    merged["note"] = notes.astype(object).where(notes.notna(), "")
    order = {cid: i for i, cid in enumerate(load_paper_claims().index)}
    return merged.sort_values("id", key=lambda s: s.map(order)).reset_index(drop=True)


def collect_claims(results_dir, source: bool = False) -> pd.DataFrame:
    """Merge every ``results_dir/claims/*.csv`` (sorted by claim-table order).

    A setting that cannot run here has rows without a value in its notebook's file
    (:func:`not_run_rows`: ``n_seeds`` 0, profile ``not run``, the reason as the note).

    Parameters
    ----------
    results_dir : str or Path
        A results folder (``claims/`` in it).
    source : bool, default=False
        Add a ``source`` column: the stem of the claim file each row comes from.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CLAIM_COLUMNS` (and ``source``), one row per claim id.

    Raises
    ------
    ClaimFileError
        A claim file is damaged (:func:`read_claim_file`), or an id is in two files.
    """
    merged = _read_claims(results_dir)
    return merged[[*CLAIM_COLUMNS, "source"]] if source else merged[CLAIM_COLUMNS]


def compare_with_paper(measured: pd.DataFrame) -> pd.DataFrame:
    """Claim rows joined with the paper's numbers, indexed by claim id.

    Parameters
    ----------
    measured : pandas.DataFrame
        Claim rows (:func:`claim_rows`, :func:`collect_claims`, or the summary of
        :func:`topofl_lib.claims_summary.summary_table`).

    Returns
    -------
    pandas.DataFrame
        ``measured``'s columns (but ``id``, the index) and the paper's: ``paper``,
        ``setting``, ``method``, ``metric``, ``paper_value`` (float), ``value_text`` (as
        printed), ``paper_std``, ``source``, and ``difference`` (our mean minus the
        paper's value). Whether they agree is :func:`topofl_lib.claims_summary.paper_verdict`.
    """
    paper = load_paper_claims()[["paper", "setting", "method", "metric", "value",
                                 "value_text", "paper_std", "source"]]
    df = measured.set_index("id").join(paper.rename(columns={"value": "paper_value"}),
                                       how="left")
    return df.assign(difference=df["measured_mean"] - df["paper_value"])
