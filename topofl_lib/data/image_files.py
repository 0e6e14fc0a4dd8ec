"""Readers of the files image datasets are published in (nothing is downloaded).

* :func:`read_cifar10` / :func:`read_cifar100`: CIFAR's *binary version*
  (``cifar-10-batches-bin/``, ``cifar-100-binary/``: fixed-size records of label
  byte(s) and 3 072 pixel bytes) or, when that is absent, its *python version*
  (``cifar-10-batches-py/``, ``cifar-100-python/``: pickled dicts), rebuilt by
  :func:`~topofl_lib.data.restricted_unpickle`, never by ``pickle.load``. CIFAR-100
  keeps its 100 fine labels.
* :func:`read_mnist`: the 70 000 MNIST digits in their IDX files (plain or gzipped) in
  ``mnist/``.
* :func:`read_femnist`: FEMNIST as LEAF writes it (``femnist/train/*.json``,
  ``femnist/test/*.json``; 62 classes), with the writer of every image (the natural
  federation: writer = client).

Each reads from the data folder (:func:`~topofl_lib.data.locations.data_dir`: the
``folder`` argument, else ``$TOPOFL_DATA_DIR``, else ``~/topofl_data``) and raises
:class:`~topofl_lib.data.DatasetNotFoundError` (expected files, folder, publisher) when
the dataset is not there, or a ``ValueError`` naming the file when a file is damaged.
Images come back channel-first, ``(n, channels, height, width)``, as stored (CIFAR and
MNIST: ``uint8`` 0-255; FEMNIST: ``float32`` in [0, 1]); scaling is the caller's
(:func:`topofl_lib.deep.load_image_dataset`).
"""

from __future__ import annotations

import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .file_formats import read_idx, restricted_unpickle
from .locations import DatasetNotFoundError, data_dir, dataset_folder

__all__ = ["CIFAR_SOURCE", "FEMNIST_SOURCE", "IMAGE_FILE_READERS", "MNIST_FILES",
           "MNIST_SOURCE", "ImageFiles", "read_cifar10", "read_cifar100", "read_femnist",
           "plain_or_gzipped", "read_mnist"]

#: Where CIFAR-10 and CIFAR-100 are published.
CIFAR_SOURCE = "https://www.cs.toronto.edu/~kriz/cifar.html"
#: Where MNIST is published, and a mirror of the same four files.
MNIST_SOURCE = ("https://yann.lecun.com/exdb/mnist/ (the same four files are mirrored at "
                "https://ossci-datasets.s3.amazonaws.com/mnist/)")
#: Where FEMNIST's LEAF files come from, and how LEAF makes them.
FEMNIST_SOURCE = ("LEAF, https://leaf.cmu.edu/ (https://github.com/TalwalkarLab/leaf: in "
                  "data/femnist run for example `./preprocess.sh -s niid --sf 0.05 -k 0 -t "
                  "sample`, then copy its data/train and data/test folders to femnist/train "
                  "and femnist/test)")

_CIFAR_PIXELS = 3 * 32 * 32
#: MNIST's four IDX files (each plain or gzipped).
MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_FEMNIST_PIXELS, _FEMNIST_CLASSES = 28 * 28, 62
#: What a file that is not a pickle of plain data raises while it is rebuilt.
_DAMAGED_PICKLE = (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError,
                   KeyError, AttributeError)


@dataclass(frozen=True)
class ImageFiles:
    """A labelled image dataset as its files hold it, before any scaling.

    Attributes
    ----------
    X_train, X_test : ndarray of shape (n_images, channels, height, width)
        Images, channel-first, as stored (``uint8`` 0-255, or ``float32`` in [0, 1]).
    y_train, y_test : ndarray of shape (n_images,), dtype int64
        Class labels in ``0..n_classes - 1``.
    n_classes : int
        Number of classes.
    pixel_max : float
        The value of a white pixel (255.0 or 1.0): dividing by it scales to [0, 1].
    writers_train, writers_test : ndarray of shape (n_images,), dtype int64, or None
        The writer of each image, an index into ``writer_names`` (FEMNIST only).
    writer_names : tuple of str or None
        The writers' ids as the files name them (FEMNIST only).
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    pixel_max: float
    writers_train: np.ndarray | None = None
    writers_test: np.ndarray | None = None
    writer_names: tuple[str, ...] | None = None


def _check_labels(path: Path, y: np.ndarray, n_classes: int) -> np.ndarray:
    """``y`` as int64, or a ValueError naming ``path`` if a label is not a class."""
    if y.size == 0:  # an empty JSON list reads as float
        return y.astype(np.int64)
    if y.dtype.kind not in "iu":
        raise ValueError(f"{path}: labels must be integers, got {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"{path}: labels must lie in 0..{n_classes - 1}, got "
                         f"{int(y.min())}..{int(y.max())}; the file is damaged")
    return y.astype(np.int64)


# -- CIFAR ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Cifar:
    """Where one CIFAR dataset's two versions live and how their labels are stored."""

    dataset: str
    n_classes: int
    archive: str
    bin_folder: str
    bin_files: tuple[str, ...]  # the training files, then the test file
    label_bytes: int  # the fine label is the last of them
    py_folder: str
    py_files: tuple[str, ...]
    py_labels: bytes


_CIFAR10 = _Cifar(
    "CIFAR-10", 10, "cifar-10", "cifar-10-batches-bin",
    tuple(f"data_batch_{i}.bin" for i in range(1, 6)) + ("test_batch.bin",), 1,
    "cifar-10-batches-py", tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",),
    b"labels")
_CIFAR100 = _Cifar("CIFAR-100", 100, "cifar-100", "cifar-100-binary", ("train.bin", "test.bin"),
                   2, "cifar-100-python", ("train", "test"), b"fine_labels")


def _cifar_binary(path: Path, spec: _Cifar) -> tuple[np.ndarray, np.ndarray]:
    """Images and labels of one binary-version file (records of labels + 3 072 pixels)."""
    data = path.read_bytes()
    record = spec.label_bytes + _CIFAR_PIXELS
    if not data or len(data) % record:
        raise ValueError(
            f"{path} holds {len(data)} bytes, not a whole number of {spec.dataset} records "
            f"of {record} bytes ({spec.label_bytes} label byte(s) and {_CIFAR_PIXELS} pixel "
            "bytes); the file is truncated or damaged")
    rows = np.frombuffer(data, dtype=np.uint8).reshape(-1, record)
    y = _check_labels(path, rows[:, spec.label_bytes - 1], spec.n_classes)
    return rows[:, spec.label_bytes:].reshape(-1, 3, 32, 32).copy(), y


def _cifar_python(path: Path, spec: _Cifar) -> tuple[np.ndarray, np.ndarray]:
    """Images and labels of one python-version file, rebuilt from plain data only."""
    try:
        batch = restricted_unpickle(path.read_bytes(), source=str(path))
    except _DAMAGED_PICKLE as exc:
        raise ValueError(f"{path} is not a {spec.dataset} batch of plain data: {exc}") from exc
    if not isinstance(batch, dict) or b"data" not in batch or spec.py_labels not in batch:
        raise ValueError(f"{path} is not a {spec.dataset} batch: expected a dict with keys "
                         f"b'data' and {spec.py_labels!r}")
    X, labels = batch[b"data"], batch[spec.py_labels]
    # types first: a nested list of shared references (a few hundred bytes of pickle) is
    # an array of 2**41 elements to np.asarray
    if not isinstance(X, np.ndarray):
        raise ValueError(f"{path}: b'data' must be a uint8 array, got a "
                         f"{type(X).__name__}; the file is damaged")
    if not (isinstance(labels, np.ndarray)
            or (isinstance(labels, list) and all(type(v) is int for v in labels))):
        raise ValueError(f"{path}: {spec.py_labels!r} must be a list of ints, got a "
                         f"{type(labels).__name__} holding other values; the file is damaged")
    y = np.asarray(labels)
    if X.dtype != np.uint8 or X.ndim != 2 or X.shape[1] != _CIFAR_PIXELS:
        raise ValueError(f"{path}: b'data' must be uint8 of shape (n, {_CIFAR_PIXELS}), got "
                         f"{X.dtype} of shape {X.shape}; the file is damaged")
    if y.shape != (X.shape[0],):
        raise ValueError(f"{path} holds {X.shape[0]} images but labels of shape {y.shape}; "
                         "the file is damaged")
    return X.reshape(-1, 3, 32, 32), _check_labels(path, y, spec.n_classes)


def _cifar_expected(spec: _Cifar) -> tuple[str, str]:
    """The files of both versions, for the message of a missing dataset."""
    return (f"{spec.bin_folder}/{{{','.join(spec.bin_files)}}} (the binary version)",
            f"or {spec.py_folder}/{{{','.join(spec.py_files)}}} (the python version)")


def _read_cifar(spec: _Cifar, folder: str | os.PathLike | None) -> ImageFiles:
    """The binary version when all its files are there, else the python version."""
    root = data_dir(folder)
    for sub, files, reader in ((spec.bin_folder, spec.bin_files, _cifar_binary),
                               (spec.py_folder, spec.py_files, _cifar_python)):
        paths = [dataset_folder(sub, root) / name for name in files]
        if all(p.is_file() for p in paths):
            parts = [reader(p, spec) for p in paths]
            train = parts[:-1]
            return ImageFiles(np.concatenate([X for X, _ in train]),
                              np.concatenate([y for _, y in train]), *parts[-1],
                              n_classes=spec.n_classes, pixel_max=255.0)
    raise DatasetNotFoundError(
        spec.dataset, root, _cifar_expected(spec),
        f"{CIFAR_SOURCE} ({spec.archive}-binary.tar.gz or {spec.archive}-python.tar.gz, "
        "unpacked in the data folder)")


def read_cifar10(folder: str | os.PathLike | None = None) -> ImageFiles:
    """CIFAR-10's 50 000 training and 10 000 test images (10 classes).

    Parameters
    ----------
    folder : str or path-like, optional
        The data folder (see :func:`~topofl_lib.data.locations.data_dir`); the files are
        read from its ``cifar-10-batches-bin/`` (``data_batch_1.bin`` ..
        ``data_batch_5.bin``, ``test_batch.bin``) or, if that is not complete, its
        ``cifar-10-batches-py/`` (``data_batch_1`` .. ``data_batch_5``, ``test_batch``).

    Returns
    -------
    ImageFiles
        ``uint8`` images of shape (n, 3, 32, 32) (red, green, blue planes).

    Raises
    ------
    DatasetNotFoundError
        Neither version is complete there; the message names both.
    ValueError
        A file is truncated or damaged (the message names it), or a python-version file
        refers to anything but plain data.
    """
    return _read_cifar(_CIFAR10, folder)


def read_cifar100(folder: str | os.PathLike | None = None) -> ImageFiles:
    """CIFAR-100's 50 000 training and 10 000 test images, with their 100 fine labels.

    Parameters
    ----------
    folder : str or path-like, optional
        The data folder; the files are read from its ``cifar-100-binary/`` (``train.bin``,
        ``test.bin``: a coarse and a fine label byte per record) or, if that is not
        complete, its ``cifar-100-python/`` (``train``, ``test``).

    Returns
    -------
    ImageFiles
        ``uint8`` images of shape (n, 3, 32, 32); labels are the fine labels 0..99.

    Raises
    ------
    DatasetNotFoundError, ValueError
        As :func:`read_cifar10`.
    """
    return _read_cifar(_CIFAR100, folder)


# -- MNIST ------------------------------------------------------------------------------
def plain_or_gzipped(root: Path, name: str) -> Path | None:
    """``root/name``, else ``root/name.gz``, else None.

    Parameters
    ----------
    root : Path
        The folder.
    name : str
        The file's name without ``.gz``.

    Returns
    -------
    Path or None
        The file found (the plain one first), or None.
    """
    for path in (root / name, root / f"{name}.gz"):
        if path.is_file():
            return path
    return None


def _mnist_split(images: Path, labels: Path) -> tuple[np.ndarray, np.ndarray]:
    """One split's images (n, 1, 28, 28) and labels, their shapes and counts checked."""
    X, y = read_idx(images), read_idx(labels)
    if X.dtype != np.uint8 or X.shape[1:] != (28, 28):
        raise ValueError(f"{images} must hold uint8 images of 28x28, got {X.dtype} of shape "
                         f"{X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"{labels} holds labels of shape {y.shape}, but {images} holds "
                         f"{X.shape[0]} images")
    return X.reshape(-1, 1, 28, 28), _check_labels(labels, y, 10)


def read_mnist(folder: str | os.PathLike | None = None) -> ImageFiles:
    """MNIST's 60 000 training and 10 000 test digits from their four IDX files.

    Parameters
    ----------
    folder : str or path-like, optional
        The data folder; the files are read from its ``mnist/``:
        ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
        ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, each plain or gzipped
        (``.gz``; the plain file is read when both are there).

    Returns
    -------
    ImageFiles
        ``uint8`` images of shape (n, 1, 28, 28), labels 0..9.

    Raises
    ------
    DatasetNotFoundError
        A file is missing.
    ValueError
        A file is not IDX, is truncated, or does not hold what it should (the message
        names it).
    """
    root = dataset_folder("mnist", folder)
    paths = [plain_or_gzipped(root, name) for name in MNIST_FILES]
    if None in paths:
        raise DatasetNotFoundError("MNIST", root, [f"{n} (or {n}.gz)" for n in MNIST_FILES],
                                   MNIST_SOURCE)
    return ImageFiles(*_mnist_split(*paths[:2]), *_mnist_split(*paths[2:]), n_classes=10,
                      pixel_max=255.0)


# -- FEMNIST (LEAF) ---------------------------------------------------------------------
def _leaf_user(path: Path, user: str, entry) -> tuple[np.ndarray, np.ndarray]:
    """One writer's images (n, 784) and labels from a LEAF file, checked."""
    try:
        X, y = np.asarray(entry["x"], dtype=np.float32), np.asarray(entry["y"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: user_data[{user!r}] must hold 'x' (lists of "
                         f"{_FEMNIST_PIXELS} pixels) and 'y' (labels): {exc}") from exc
    X = X.reshape(0, _FEMNIST_PIXELS) if X.size == 0 else X
    if X.ndim != 2 or X.shape[1] != _FEMNIST_PIXELS or y.ndim != 1:
        raise ValueError(f"{path}: user {user!r} must have images of {_FEMNIST_PIXELS} "
                         f"pixels and one label each, got x of shape {X.shape}")
    if X.shape[0] != y.size:
        raise ValueError(f"{path}: user {user!r} has {X.shape[0]} images but {y.size} labels")
    if not np.all((X >= 0.0) & (X <= 1.0)):
        raise ValueError(f"{path}: user {user!r} has pixels outside [0, 1]")
    return X, _check_labels(path, y, _FEMNIST_CLASSES)


def _leaf_file(path: Path) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``[(writer, images, labels)]`` of one LEAF json file, in its ``users`` order."""
    try:
        doc = json.loads(path.read_text())
        users, data, counts = doc["users"], doc["user_data"], doc.get("num_samples")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a LEAF json file with 'users' and 'user_data': "
                         f"{exc}") from exc
    if not isinstance(users, list) or not isinstance(data, dict) or any(
            u not in data for u in users):
        raise ValueError(f"{path}: every name in 'users' needs an entry in 'user_data'")
    out = [(str(u), *_leaf_user(path, u, data[u])) for u in users]
    if counts is not None and list(counts) != [y.size for _, _, y in out]:
        raise ValueError(f"{path}: 'num_samples' {list(counts)} does not match the users' "
                         "images; the file is damaged")
    return out


def _leaf_split(files: list[Path], index: dict[str, int]):
    """Images, labels and writer indices of one split (``index`` grows with new writers)."""
    X, y, writers = [np.empty((0, _FEMNIST_PIXELS), np.float32)], [np.empty(0, np.int64)], []
    for path in files:
        for user, Xu, yu in _leaf_file(path):
            writers.append(np.full(yu.size, index.setdefault(user, len(index)), np.int64))
            X.append(Xu)
            y.append(yu)
    return (np.concatenate(X).reshape(-1, 1, 28, 28), np.concatenate(y),
            np.concatenate([np.empty(0, np.int64), *writers]))


def read_femnist(folder: str | os.PathLike | None = None) -> ImageFiles:
    """FEMNIST (62 classes: digits, upper- and lower-case letters) as LEAF writes it.

    Parameters
    ----------
    folder : str or path-like, optional
        The data folder; the files are read from its ``femnist/train/*.json`` and
        ``femnist/test/*.json`` (LEAF's ``data/train`` and ``data/test``), each
        ``{"users": [...], "num_samples": [...], "user_data": {user: {"x": [[784 pixels
        in 0..1], ...], "y": [labels 0..61, ...]}}}``; files are read in name order.

    Returns
    -------
    ImageFiles
        ``float32`` images of shape (n, 1, 28, 28) in [0, 1], and the writer of every
        training and test image: ``writers_train``/``writers_test`` index
        ``writer_names`` (the training writers first, in file and ``users`` order; a
        writer in both splits has one index).

    Raises
    ------
    DatasetNotFoundError
        ``femnist/train`` or ``femnist/test`` holds no ``.json`` file.
    ValueError
        A file is not valid JSON or not in LEAF's layout (the message names it).
    """
    root = dataset_folder("femnist", folder)
    train, test = (sorted((root / split).glob("*.json")) for split in ("train", "test"))
    if not train or not test:
        raise DatasetNotFoundError("FEMNIST", root, ["train/*.json", "test/*.json"],
                                   FEMNIST_SOURCE)
    index: dict[str, int] = {}
    Xtr, ytr, wtr = _leaf_split(train, index)
    Xte, yte, wte = _leaf_split(test, index)
    return ImageFiles(Xtr, ytr, Xte, yte, n_classes=_FEMNIST_CLASSES, pixel_max=1.0,
                      writers_train=wtr, writers_test=wte, writer_names=tuple(index))


#: The readers by dataset name, as :func:`topofl_lib.deep.load_image_dataset` names them.
IMAGE_FILE_READERS = {"cifar10": read_cifar10, "cifar100": read_cifar100, "mnist": read_mnist,
                      "femnist": read_femnist}
