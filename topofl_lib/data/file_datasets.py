"""GFC's real datasets, read from files the user puts in the data folder.

Nothing is downloaded: each loader reads the files of one dataset from its sub-folder
of the data folder (:func:`~topofl_lib.data.locations.data_dir`: the ``folder``
argument, else ``$TOPOFL_DATA_DIR``, else ``~/topofl_data``), as published, and raises
:class:`~topofl_lib.data.locations.DatasetNotFoundError` (which names the files and the
page to get them from) when they are not there. ``folder`` may also be the dataset's own
sub-folder.

=========  ==========================  ====================================  ===========
name       sub-folder                  files                                 records x d
=========  ==========================  ====================================  ===========
seeds      ``uci/seeds/``              ``seeds_dataset.txt``                 210 x 7
thyroid    ``uci/thyroid/``            ``new-thyroid.data``                  215 x 5
breast     ``uci/breast/``             ``breast-cancer.data``                277 x 9
heart      ``uci/heart/``              ``processed.cleveland.data``          303 x 13
gesture    ``uci/gesture/``            ``a1_raw.csv``                        1,747 x 18
abalone    ``uci/abalone/``            ``abalone.data``                      4,177 x 8
postures   ``uci/postures/``           ``Postures.csv``                      74,975 x 15
celltype   ``celltype/``               ``celltype.csv``                      12,009 x 10
mnist      ``mnist/``                  the four MNIST IDX files              70,000 x 784
=========  ==========================  ====================================  ===========

The loaders return the records as the files hold them, with the encodings GFC's
Table 2 implies (its dimensions count one column per attribute, so categorical
attributes are coded as one ordinal column each, never one-hot):

* **breast**: the 9 attributes are categorical; each is coded by the rank of its
  category in a fixed order (interval bins by their lower end, ``no``/``yes`` as 0/1,
  ``left``/``right`` as 0/1, menopause ``premeno``/``lt40``/``ge40`` as 0/1/2, the
  quadrant in the order of the UCI documentation). The 9 records with a ``?`` are
  dropped (286 -> 277, Table 2's count). Clusters: ``no-recurrence-events`` /
  ``recurrence-events``.
* **heart**: the 13 attributes as numbers; the 6 missing values (``?`` in ``ca`` and
  ``thal``) take their column's median, so all 303 records stay (Table 2). Clusters:
  ``num`` 0 (no disease) against 1-4.
* **abalone**: Table 2's 8 dimensions are the 8 attributes, so sex stays a feature,
  coded M = 1, I = 0, F = -1 (infants between the two adult sexes); the 3 clusters are
  the ring groups 1-8, 9-10 and 11-29, the three-class version of the UCI
  documentation (Waugh 1995).
* **gesture**: ``a1_raw.csv`` (the raw file of 1,747 frames): the 18 coordinates, the
  timestamp dropped; clusters: the 5 phases.
* **postures**: the 15 coordinates of markers 0-4 (``X0`` ... ``Z4``); records missing
  any of them (``?``) and the all-zero record at the top of the file are dropped;
  ``User`` is dropped; clusters: the 5 postures.
* **celltype**: the paper names no source; the file is a CSV with a header line, the
  features in every column but the last and the cell type (any labels) in the last.
* **mnist**: the 70,000 training and test images, flattened, pixels 0-255.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .file_formats import open_data
from .image_files import MNIST_FILES, MNIST_SOURCE, plain_or_gzipped, read_mnist
from .locations import DatasetNotFoundError, data_dir

__all__ = ["FILE_DATASETS", "MAX_TABLE_BYTES", "PROVENANCE_FILE", "FileDataset",
           "dataset_path", "load_file_dataset", "source_note"]

#: The largest table a loader reads, in bytes (inflated, for a gzipped copy): 1 GiB, far
#: above the largest of GFC's tables (Postures, 17 MB).
MAX_TABLE_BYTES = 2**30
#: The provenance record a dataset's folder holds when ``topofl data`` wrote it
#: (:mod:`topofl_lib.data.packaged`): JSON, with ``"files"``, file name -> SHA-256.
PROVENANCE_FILE = "SOURCE.json"
#: The largest provenance record read, in bytes.
_MAX_PROVENANCE_BYTES = 2**16


@dataclass(frozen=True)
class FileDataset:
    """Where one dataset's files live and where it is published.

    Attributes
    ----------
    title : str
        The dataset's name as the paper writes it.
    subfolder : str
        Its folder inside the data folder (``"uci/seeds"``).
    files : tuple of str
        The files read (a ``.gz`` copy of an IDX file is accepted too).
    source : str
        Where to get it.
    """

    title: str
    subfolder: str
    files: tuple[str, ...]
    source: str


_UCI = "https://archive.ics.uci.edu/dataset/"

#: Every dataset :func:`load_file_dataset` reads, by name.
FILE_DATASETS: dict[str, FileDataset] = {
    "seeds": FileDataset("Seeds", "uci/seeds", ("seeds_dataset.txt",), f"{_UCI}236/seeds"),
    "thyroid": FileDataset("Thyroid", "uci/thyroid", ("new-thyroid.data",),
                           f"{_UCI}102/thyroid+disease (new-thyroid.data)"),
    "breast": FileDataset("Breast", "uci/breast", ("breast-cancer.data",),
                          f"{_UCI}14/breast+cancer"),
    "heart": FileDataset("Heart", "uci/heart", ("processed.cleveland.data",),
                         f"{_UCI}45/heart+disease"),
    "gesture": FileDataset("Gesture", "uci/gesture", ("a1_raw.csv",),
                           f"{_UCI}302/gesture+phase+segmentation"),
    "abalone": FileDataset("Abalone", "uci/abalone", ("abalone.data",), f"{_UCI}1/abalone"),
    "postures": FileDataset("Postures", "uci/postures", ("Postures.csv",),
                            f"{_UCI}405/motion+capture+hand+postures"),
    "celltype": FileDataset("Celltype", "celltype", ("celltype.csv",),
                            "the Celltype table of the federated-clustering benchmarks "
                            "(12,009 cells, 10 features, 4 types; the GFC paper names no "
                            "source): a CSV with a header, features then the cell type"),
    "mnist": FileDataset("MNIST", "mnist", MNIST_FILES, MNIST_SOURCE),
}


def _check_name(name: str) -> FileDataset:
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__} {name!r}")
    if name not in FILE_DATASETS:
        raise ValueError(f"unknown dataset {name!r}; expected one of {list(FILE_DATASETS)}")
    return FILE_DATASETS[name]


def _folder(spec: FileDataset, folder) -> Path:
    root = data_dir(folder)
    last = spec.subfolder.rsplit("/", 1)[-1]
    return root if root.name == last else root / spec.subfolder


def dataset_path(name: str, folder: str | os.PathLike | None = None) -> list[Path]:
    """The files of dataset ``name`` in the data folder, checked to exist.

    Parameters
    ----------
    name : str
        A key of :data:`FILE_DATASETS`.
    folder : str or path-like, optional
        The data folder (or the dataset's own folder); default
        :func:`~topofl_lib.data.locations.data_dir`.

    Returns
    -------
    list of Path
        One path per file of :attr:`FileDataset.files`, in that order.

    Raises
    ------
    DatasetNotFoundError
        A file is missing; its ``not_run_note`` is the note of a row that could not run.
    """
    spec = _check_name(name)
    where = _folder(spec, folder)
    found = [plain_or_gzipped(where, f) for f in spec.files]
    if any(p is None for p in found):
        raise DatasetNotFoundError(spec.title, where, spec.files, spec.source)
    _check_recorded_digests(found)
    return found


def _recorded_digests(record: Path) -> dict[str, str]:
    with open(record, "rb") as fh:
        raw = fh.read(_MAX_PROVENANCE_BYTES + 1)
    try:
        if len(raw) > _MAX_PROVENANCE_BYTES:
            raise ValueError(f"more than {_MAX_PROVENANCE_BYTES} bytes")
        files = json.loads(raw)["files"]
        if not (isinstance(files, dict)
                and all(isinstance(v, str) for v in files.values())):
            raise ValueError("'files' is not a mapping of names to digests")
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{record} is damaged ({exc}); run `topofl data` again") from None
    return files


def _check_recorded_digests(paths: list[Path]) -> None:
    """Refuse a file whose folder's provenance record (``topofl data``) has another digest."""
    record = paths[0].parent / PROVENANCE_FILE
    if not record.is_file():
        return  # a copy the user put there: only its contents are checked
    digests = _recorded_digests(record)
    for path in paths:
        if (expected := digests.get(path.name)) is None:
            continue
        with open(path, "rb") as fh:
            got = hashlib.file_digest(fh, "sha256").hexdigest()
        if got != expected:
            raise ValueError(f"{path} is damaged: its SHA-256 is {got}, but {record.name} "
                             f"records {expected}; run `topofl data` to fetch it again")


def source_note(name: str, folder: str | os.PathLike | None = None) -> str:
    """Which files dataset ``name`` was read from, for a result row's note.

    Each file by name with the first 16 hex digits of its SHA-256, and the package it was
    read out of where ``topofl data`` wrote it (its folder's :data:`PROVENANCE_FILE`).

    Parameters
    ----------
    name : str
        A key of :data:`FILE_DATASETS`.
    folder : str or path-like, optional
        As for :func:`dataset_path`.

    Returns
    -------
    str
        For example ``"data: new-thyroid.data (sha256 fdcb2d62c244ee2e), from r-cran-mclust
        6.0.0-1 (debian)"``.

    Raises
    ------
    DatasetNotFoundError
        A file is missing.
    ValueError
        A file differs from its provenance record.
    """
    paths = dataset_path(name, folder)
    files = []
    for path in paths:
        with open(path, "rb") as fh:
            files.append(f"{path.name} (sha256 "
                         f"{hashlib.file_digest(fh, 'sha256').hexdigest()[:16]})")
    record = paths[0].parent / PROVENANCE_FILE
    origin = "the user's copy"
    if record.is_file():
        with open(record, "rb") as fh:
            meta = json.loads(fh.read(_MAX_PROVENANCE_BYTES))
        origin = f"from {meta.get('package')} {meta.get('version')} ({meta.get('registry')})"
    return f"data: {', '.join(files)}, {origin}"


def _text(path: Path) -> str:
    """The file's text, read (inflated) only up to :data:`MAX_TABLE_BYTES`."""
    with open_data(path) as fh:
        raw = fh.read(MAX_TABLE_BYTES + 1)
    if len(raw) > MAX_TABLE_BYTES:
        raise ValueError(f"{path} holds more than MAX_TABLE_BYTES ({MAX_TABLE_BYTES}) bytes; "
                         "it is not one of GFC's tables")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not text (UTF-8): {exc}") from exc


def _frame(path: Path, *, n_fields: int | None = None, sep: str = ",", header=None,
           na=("?",)) -> pd.DataFrame:
    """The table of ``path``, every record checked to have ``n_fields`` fields (the
    header's count where there is a header); its index is each record's line number."""
    split = (lambda ln: re.split(sep, ln.strip())) if len(sep) > 1 else (
        lambda ln: ln.split(sep))
    lines = [(i, ln) for i, ln in enumerate(_text(path).splitlines(), 1) if ln.strip()]
    if header is not None and lines:
        n_fields = n_fields or len(split(lines[0][1]))
    records = lines[1:] if header is not None else lines
    if not records:
        raise ValueError(f"{path} holds no records")
    n_fields = n_fields or len(split(records[0][1]))
    for i, ln in lines:
        if len(split(ln)) != n_fields:
            raise ValueError(f"{path}, line {i}: {len(split(ln))} fields, expected {n_fields}")
    text = "\n".join(ln for _, ln in lines)
    table = pd.read_csv(io.StringIO(text), sep=sep, header=header, na_values=list(na),
                        skipinitialspace=True, engine="python")
    table.index = [i for i, _ in records]
    return table


def _numbers(table: pd.DataFrame, path: Path, dtype=np.float64) -> np.ndarray:
    """The columns of ``table`` as numbers; a cell that is not one is named (file, line,
    column)."""
    for column in table.columns:
        values = table[column]
        bad = pd.to_numeric(values, errors="coerce").isna() & values.notna()
        if bad.any():
            line = bad.index[bad.to_numpy().argmax()]
            raise ValueError(f"{path}, line {line}: {values[line]!r} in column {column!r} is "
                             "not a number")
    try:
        return table.to_numpy(dtype)
    except (ValueError, TypeError, OverflowError) as exc:  # NaN or too large for an int
        raise ValueError(f"{path}: the columns {list(table.columns)} do not hold "
                         f"{np.dtype(dtype).name} numbers: {exc}") from exc


def _codes(values: pd.Series, order: Sequence[str], column: str, path: Path) -> np.ndarray:
    lookup = {v: i for i, v in enumerate(order)}
    bad = sorted(set(values) - set(lookup))
    if bad:
        raise ValueError(f"{path}: column {column!r} holds {bad}; expected {list(order)}")
    return values.map(lookup).to_numpy(dtype=np.float64)


def _labels(values) -> np.ndarray:
    """Labels as 0..k-1 in sorted order of the values."""
    return np.unique(np.asarray(values), return_inverse=True)[1].astype(np.int64)


def _seeds(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    table = _frame(paths[0], n_fields=8, sep=r"\s+")  # tabs, some rows with doubled tabs
    return _numbers(table.iloc[:, :7], paths[0]), _labels(table.iloc[:, 7])


def _thyroid(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    table = _frame(paths[0], n_fields=6)  # class first, then 5 laboratory tests
    return _numbers(table.iloc[:, 1:6], paths[0]), _labels(table.iloc[:, 0])


def _bins(labels: Sequence[str]) -> list[str]:
    return sorted(labels, key=lambda s: int(s.split("-")[0]))


_BREAST_ORDERS = {
    "age": _bins(["10-19", "20-29", "30-39", "40-49", "50-59", "60-69", "70-79", "80-89",
                  "90-99"]),
    "menopause": ["premeno", "lt40", "ge40"],
    "tumor-size": _bins([f"{a}-{a + 4}" for a in range(0, 60, 5)]),
    "inv-nodes": _bins([*(f"{a}-{a + 2}" for a in range(0, 36, 3)), "36-39"]),
    "node-caps": ["no", "yes"],
    "deg-malig": ["1", "2", "3"],
    "breast": ["left", "right"],
    "breast-quad": ["left_up", "left_low", "right_up", "right_low", "central"],
    "irradiat": ["no", "yes"],
}


def _breast(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    table = _frame(paths[0], n_fields=10).dropna().astype(str)
    table.columns = ["class", *_BREAST_ORDERS]
    X = np.column_stack([_codes(table[c].str.strip(), order, c, paths[0])
                         for c, order in _BREAST_ORDERS.items()])
    y = _codes(table["class"].str.strip(), ["no-recurrence-events", "recurrence-events"],
               "class", paths[0])
    return X, y.astype(np.int64)


def _heart(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    table = pd.DataFrame(_numbers(_frame(paths[0], n_fields=14), paths[0]))
    X = table.iloc[:, :13]
    X = X.fillna(X.median())
    return X.to_numpy(np.float64), (table.iloc[:, 13] > 0).to_numpy(np.int64)


def _gesture(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    table = _frame(paths[0], header=0)
    if table.shape[1] < 19:
        raise ValueError(f"{paths[0]} has {table.shape[1]} columns; expected the 18 "
                         "coordinates, the timestamp and the phase")
    return _numbers(table.iloc[:, :18], paths[0]), _labels(table.iloc[:, -1].astype(str))


def _abalone(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    table = _frame(paths[0], n_fields=9)
    sex = _codes(table.iloc[:, 0].astype(str).str.strip(), ["F", "I", "M"], "sex",
                 paths[0]) - 1.0  # F -1, I 0, M 1
    X = np.column_stack([sex, _numbers(table.iloc[:, 1:8], paths[0])])
    rings = _numbers(table.iloc[:, 8:9], paths[0], np.int64)[:, 0]
    return X, np.digitize(rings, [9, 11]).astype(np.int64)  # 1-8, 9-10, 11+


_POSTURE_COLUMNS = [f"{axis}{m}" for m in range(5) for axis in "XYZ"]


def _postures(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    table = _frame(paths[0], header=0)
    missing = [c for c in ("Class", *_POSTURE_COLUMNS) if c not in table]
    if missing:
        raise ValueError(f"{paths[0]} lacks the columns {missing} (header: "
                         f"{list(table.columns)[:6]}...)")
    classes = _numbers(table[["Class"]], paths[0], np.int64)[:, 0]
    keep = (classes > 0) & table[_POSTURE_COLUMNS].notna().all(axis=1).to_numpy()
    return _numbers(table.loc[keep, _POSTURE_COLUMNS], paths[0]), _labels(classes[keep])


def _celltype(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    table = _frame(paths[0], header=0, na=())
    if table.shape[1] < 2:
        raise ValueError(f"{paths[0]} has {table.shape[1]} column; expected the features "
                         "and the cell type")
    return _numbers(table.iloc[:, :-1], paths[0]), _labels(table.iloc[:, -1].astype(str))


def _mnist(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    files = read_mnist(paths[0].parent)  # the same reader as the deep datasets'
    X = np.concatenate([files.X_train, files.X_test]).reshape(-1, 28 * 28)
    return X.astype(np.float64), np.concatenate([files.y_train, files.y_test])


_READERS: dict[str, Callable[[list[Path]], tuple[np.ndarray, np.ndarray]]] = {
    "seeds": _seeds, "thyroid": _thyroid, "breast": _breast, "heart": _heart,
    "gesture": _gesture, "abalone": _abalone, "postures": _postures,
    "celltype": _celltype, "mnist": _mnist}


def load_file_dataset(name: str,
                      folder: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of one of GFC's real datasets, read from its files (module docstring).

    Parameters
    ----------
    name : str
        Which dataset (:data:`FILE_DATASETS` lists them).
    folder : str or path-like, optional
        Where to look, as for :func:`dataset_path`.

    Returns
    -------
    X : ndarray of shape (n, d), dtype float64
        The records, categorical attributes coded as the module docstring says, not
        scaled.
    y : ndarray of shape (n,), dtype int64
        The clusters, ``0..k-1``.

    Raises
    ------
    TypeError
        ``name`` is not a string.
    ValueError
        ``name`` is unknown, or a file holds a value its format does not allow (the
        message names the file and the column).
    DatasetNotFoundError
        A file is missing (the message names the files, the folder and the source).
    """
    paths = dataset_path(name, folder)
    X, y = _READERS[name](paths)
    if not np.isfinite(X).all():
        raise ValueError(f"{paths[0]}: {name} holds values that are not numbers after "
                         "its missing values were handled")
    return X, y
