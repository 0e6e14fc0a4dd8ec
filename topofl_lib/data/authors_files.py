"""The federations GFC's authors published: their MNIST and Celltype pickles, read as data.

GFC's repository (Yunbo-max/Topological_Federated_Clustering) ships MNIST already
embedded in 2-D and split among 100 and 1,000 clients; the MUFC repository it builds on
(thupchnsky/mufc) ships Celltype processed to 10 features and split among 100 clients.
Each file is a pickled dict: ``full_data`` (the records), ``true_label``, ``num_clusters``,
``kmeans_loss`` and ``client_0`` ... ``client_{m-1}`` (each client's records). Put them in
the data folder:

* ``mnist100fed`` and ``mnist1000fed``: ``gfc-authors/mnist100fed.pkl`` and
  ``gfc-authors/mnist1000fed.pkl``, 60,000 x 2, from Yunbo-max/Topological_Federated_Clustering
  (``dataset/``, commit 5d2f205);
* ``celltype_processed``: ``gfc-authors/celltype_processed.pkl``, 12,009 x 10, from
  thupchnsky/mufc (commit be95c75).

A file is read only if its SHA-256 is the published one (a different copy is refused,
naming the file and both digests), then rebuilt through the allow-list unpickler
(:func:`~topofl_lib.data.file_formats.restricted_unpickle`: array constructors only, so it
can never run code), and its keys, shapes, labels and clients are checked.

What the files hold, measured (``tests/test_authors_files.py`` checks the properties on
format-true files; the notebook prints them for the real ones): Celltype's labels agree
with its records (a 5-nearest-neighbour classifier recovers them with accuracy 0.94), and
its 100 clients are a permutation of its records. MNIST's clients are consecutive slices
of ``full_data``, but ``true_label`` does **not** follow the records: the same classifier
recovers it with accuracy 0.12 (10 classes; the notebook's table), and the file's
``kmeans_loss`` (2.37e6) is not k-means' loss on ``full_data`` (2.66e5), so the labels
were saved in another order
than the points. GFC's own evaluation (``models/final.py``) scores against that
``true_label``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import numpy as np

from .file_formats import NUMPY_GLOBALS, restricted_unpickle
from .locations import DatasetNotFoundError, data_dir

__all__ = ["AUTHORS_FILES", "MAX_AUTHORS_FILE_BYTES", "AuthorsFederation", "AuthorsFile",
           "authors_file_present", "load_authors_federation"]

#: The largest authors' file read, in bytes (the three published ones are about 2 MB).
MAX_AUTHORS_FILE_BYTES = 256 * 2**20


@dataclass(frozen=True)
class AuthorsFile:
    """One published file: where it goes, where it is published, what it must hold.

    Parameters
    ----------
    filename : str
        Its name in the ``gfc-authors/`` sub-folder of the data folder.
    repository, commit, path : str
        Where it is published (``owner/name``, the full commit hash, its path there).
    sha256 : str
        The published file's SHA-256.
    shape : tuple of int
        ``full_data``'s shape.
    n_clusters, n_clients : int
        The classes in ``true_label`` and the clients ``client_0`` ... it holds.
    """

    filename: str
    repository: str
    commit: str
    path: str
    sha256: str
    shape: tuple[int, int]
    n_clusters: int
    n_clients: int

    @property
    def source(self) -> str:
        """Where the file is published (repository, path, commit)."""
        return f"https://github.com/{self.repository}/blob/{self.commit}/{self.path}"

    @property
    def note(self) -> str:
        """The file as a result row names it."""
        return (f"data: {self.filename} from {self.repository}@{self.commit[:7]} "
                f"(sha256 {self.sha256[:16]})")


_GFC = ("Yunbo-max/Topological_Federated_Clustering", "5d2f205bb4ad16cccdff93bbbf6172445f10bb38")
_MUFC = ("thupchnsky/mufc", "be95c75167547aa21556a9feaeed60a0afa59854")
#: The sub-folder of the data folder the files go in.
SUBFOLDER = "gfc-authors"

#: The published files, by name.
AUTHORS_FILES: dict[str, AuthorsFile] = {
    "mnist100fed": AuthorsFile(
        "mnist100fed.pkl", *_GFC, "dataset/mnist100fed.pkl",
        "5b68fc7fd4afc0ab98d1551f5d021db547680e9d93731d9fe2b65da131d0eafd", (60000, 2), 10, 100),
    "mnist1000fed": AuthorsFile(
        "mnist1000fed.pkl", *_GFC, "dataset/mnist1000fed.pkl",
        "77268fe6b5b8312f6cd0b0fb6ff143b0f3e8e3eef2c95de36a80189202a942e7", (60000, 2), 10,
        1000),
    "celltype_processed": AuthorsFile(
        "celltype_processed.pkl", *_MUFC, "celltype_processed.pkl",
        "862bf3bdc5af362400361079da912999e50e48573846a7c0f69bca4824d34fea", (12009, 10), 4, 100),
}


@dataclass(frozen=True)
class AuthorsFederation:
    """The records, their labels and the clients of one authors' file.

    Attributes
    ----------
    X : ndarray of shape (n, d), dtype float64
        ``full_data``.
    y : ndarray of shape (n,), dtype int64
        ``true_label`` as ``0..k-1``, in the file's order.
    clients : list of ndarray of int
        Client ``i``'s records as indices into ``X`` (``client_i``, matched row by row).
    spec : AuthorsFile
        Which file.
    kmeans_loss : float
        The k-means loss the file stores (``kmeans_loss``).
    """

    X: np.ndarray
    y: np.ndarray
    clients: list[np.ndarray]
    spec: AuthorsFile
    kmeans_loss: float


def authors_file_present(name: str, folder: str | os.PathLike | None = None) -> bool:
    """Whether the authors' file ``name`` is in the data folder (not yet checked).

    Parameters
    ----------
    name : str
        A key of :data:`AUTHORS_FILES`.
    folder : str or path-like, optional
        The data folder (:func:`~topofl_lib.data.locations.data_dir`).

    Returns
    -------
    bool
    """
    spec = AUTHORS_FILES[name]
    return (data_dir(folder) / SUBFOLDER / spec.filename).is_file()


def _path(spec: AuthorsFile, folder) -> os.PathLike:
    root = data_dir(folder)
    path = root / SUBFOLDER / spec.filename
    if not path.is_file():
        raise DatasetNotFoundError(spec.filename, root / SUBFOLDER, (spec.filename,), spec.source)
    return path


def _read(path, spec: AuthorsFile) -> bytes:
    size = os.path.getsize(path)
    if size > MAX_AUTHORS_FILE_BYTES:
        raise ValueError(f"{path} has {size} bytes, more than MAX_AUTHORS_FILE_BYTES "
                         f"({MAX_AUTHORS_FILE_BYTES}); it is not {spec.filename}")
    with open(path, "rb") as fh:
        data = fh.read(size + 1)
    if (got := hashlib.sha256(data).hexdigest()) != spec.sha256:
        raise ValueError(f"{path} has SHA-256 {got}, not the published {spec.sha256} "
                         f"({spec.source}): a different or damaged copy, refused unread")
    return data


def _array(content: dict, key: str, path, ndim: int) -> np.ndarray:
    value = content.get(key)
    if isinstance(value, list):  # labels saved as a list of numbers
        if not all(type(v) in (int, float) for v in value):
            raise ValueError(f"{path}: {key!r} is a list holding values that are not numbers")
        value = np.asarray(value)
    if not isinstance(value, np.ndarray) or value.ndim != ndim or value.dtype.kind not in "iuf":
        raise ValueError(f"{path}: {key!r} is not a {ndim}-d numeric array "
                         f"(found {type(value).__name__})")
    return value


def _client_indices(X: np.ndarray, clients: list[np.ndarray], path) -> list[np.ndarray]:
    """Each client's rows as indices into ``X`` (each row of ``X`` used once)."""
    order = np.lexsort(X.T[::-1])
    flat = np.concatenate(clients)
    flat_order = np.lexsort(flat.T[::-1])
    if flat.shape != X.shape or not np.array_equal(flat[flat_order], X[order]):
        raise ValueError(f"{path}: the clients' records are not the records of 'full_data'")
    index = np.empty(len(flat), dtype=np.int64)
    index[flat_order] = order
    bounds = np.cumsum([0, *(len(c) for c in clients)])
    return [index[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _federation(content: object, spec: AuthorsFile, path) -> AuthorsFederation:
    if not isinstance(content, dict) or not all(isinstance(k, str) for k in content):
        raise ValueError(f"{path} does not hold a dict with string keys")
    X = _array(content, "full_data", path, 2).astype(np.float64)
    labels = _array(content, "true_label", path, 1)
    if X.shape != spec.shape or len(labels) != len(X) or not np.isfinite(X).all():
        raise ValueError(f"{path}: 'full_data' {X.shape} and 'true_label' ({len(labels)},) "
                         f"are not the published {spec.shape} of finite values")
    classes, y = np.unique(labels, return_inverse=True)
    if len(classes) != spec.n_clusters:
        raise ValueError(f"{path}: {len(classes)} classes in 'true_label', expected "
                         f"{spec.n_clusters}")
    keys = [f"client_{i}" for i in range(spec.n_clients)]
    clients = [_array(content, k, path, 2) for k in keys]
    if sum(1 for k in content if k.startswith("client_")) != spec.n_clients:
        raise ValueError(f"{path}: expected clients client_0 .. client_{spec.n_clients - 1}")
    loss = content.get("kmeans_loss")
    if type(loss) not in (int, float):
        raise ValueError(f"{path}: 'kmeans_loss' is not a number")
    return AuthorsFederation(X, y.astype(np.int64), _client_indices(X, clients, path), spec,
                             float(loss))


def load_authors_federation(name: str, folder: str | os.PathLike | None = None
                            ) -> AuthorsFederation:
    """Read one of the authors' files (module docstring) from the data folder.

    Parameters
    ----------
    name : str
        A key of :data:`AUTHORS_FILES`.
    folder : str or path-like, optional
        The data folder (:func:`~topofl_lib.data.locations.data_dir`); the file is read
        from its ``gfc-authors/`` sub-folder.

    Returns
    -------
    AuthorsFederation

    Raises
    ------
    ValueError
        ``name`` is unknown; the file is larger than :data:`MAX_AUTHORS_FILE_BYTES`, is not
        the published copy (its SHA-256), or does not hold what the published one holds
        (the message names the file and the key).
    DatasetNotFoundError
        The file is not in the data folder (the message says where it is published).
    pickle.UnpicklingError
        The file refers to anything but array constructors.
    """
    if name not in AUTHORS_FILES:
        raise ValueError(f"name: unknown authors' file {name!r}; expected one of "
                         f"{list(AUTHORS_FILES)}")
    spec = AUTHORS_FILES[name]
    path = _path(spec, folder)
    content = restricted_unpickle(_read(path, spec), NUMPY_GLOBALS, str(path))
    return _federation(content, spec, path)
