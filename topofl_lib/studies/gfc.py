"""GFC's clustering study: its claim ids and the runs on the paper's own datasets.

The runs themselves are :func:`topofl_lib.clustering.evaluation.clustering_experiment`.
Table 1's paper datasets (:data:`~topofl_lib.clustering.evaluation.PAPER_DATASETS`) run
where their files are in the data folder (:mod:`topofl_lib.data.file_datasets`; Waveform
is generated and always runs); every claim of a dataset whose files are missing gets a
row without a value whose note says so (:func:`gfc_not_run_rows`), never no row. MNIST's
Table 1 ids are measured on the authors' own 2-D MNIST (``gfc-authors/mnist100fed.pkl``,
:mod:`topofl_lib.data.authors_files`) where it is in the data folder, else on the 70,000
MNIST images where ``mnist/`` is there, else on the MNIST-5k stand-in of the main run;
Celltype likewise on MUFC's ``celltype_processed.pkl`` first. Tables 3, 5 and 6 have
their own experiments (:func:`table3_experiment`, :func:`table5_experiment`,
:func:`scalability_experiment`; Table 6 on the authors' 100- and 1,000-client
federations where their files are there). Rows measured on the paper's own data carry
the profile ``paper-data`` and a note naming the files (:func:`gfc_data_notes`); a later
run without that data keeps them (:func:`topofl_lib.publish.publish`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier

from ..claim_keys import METHOD_KEYS
from ..clustering.evaluation import (
    PAPER_DATASETS,
    authors_version,
    clustering_experiment,
    load_clustering_dataset,
)
from ..data.authors_files import AUTHORS_FILES, authors_file_present, load_authors_federation
from ..data.file_datasets import FILE_DATASETS, dataset_path, source_note
from ..data.locations import DatasetNotFoundError
from ..results import PAPER_DATA_PROFILE, claim_rows, load_paper_claims, not_run_rows

__all__ = ["TABLE1_EPSILONS", "TABLE3_ALPHAS", "TABLE4_GRID", "TABLE5_GRID", "TABLE6_EPSILON",
           "authors_files_table", "clustering_experiment", "gfc_claim_values", "gfc_claims",
           "gfc_data_notes", "gfc_text_rows",
           "gfc_not_run_rows", "load_clustering_dataset", "paper_datasets_present",
           "scalability_experiment", "table3_experiment", "table4_experiment",
           "table5_experiment"]

#: The privacy budgets of GFC's Table 1.
TABLE1_EPSILONS = (0.1, 0.05, 0.01)
#: GFC's Table 4 (Abalone): epsilon -> the numbers of local centroids per client.
TABLE4_GRID = {1000.0: (10, 15, 20, 25), 0.01: (1, 5, 10, 15)}
#: GFC's Table 5 (MNIST): epsilon -> the numbers of local centroids per client.
TABLE5_GRID = {1000.0: (100, 200, 300, 400), 0.01: (100, 200, 300, 400)}
#: GFC's Table 3: the synthetic-data multipliers, at epsilon 1000 and 0.01.
TABLE3_ALPHAS = (1.0, 2.0, 5.0, 10.0)
#: The budget of GFC's Table 6 (100 and 1,000 clients).
TABLE6_EPSILON = 0.01
#: Table 3's dataset. The paper does not name it; 2-D blobs (2,000 points, 4 centres)
#: have labels that follow the points, are 2-D like the paper's embedded datasets, and
#: are offline. The authors' MNIST is no candidate: its labels do not follow its points
#: (:mod:`topofl_lib.data.authors_files`), so every multiplier would score about 0.
TABLE3_DATASET = "blobs2d"


def paper_datasets_present(datasets: Sequence[str], folder=None
                           ) -> tuple[list[str], dict[str, DatasetNotFoundError]]:
    """Split Table 1 datasets into those that can run and those whose files are missing.

    Parameters
    ----------
    datasets : sequence of str
        Names of :data:`~topofl_lib.clustering.evaluation.PAPER_DATASETS`.
    folder : str or path-like, optional
        The data folder (default :func:`~topofl_lib.data.locations.data_dir`).

    Returns
    -------
    present : list of str
        The datasets that can run, in the given order (Waveform always).
    missing : dict of str to DatasetNotFoundError
        The others, each with the error that says what is missing where.

    Raises
    ------
    ValueError
        A name is not one of Table 1's datasets.
    """
    present, missing = [], {}
    for name in datasets:
        if name not in PAPER_DATASETS:
            raise ValueError(f"unknown Table 1 dataset {name!r}; expected one of "
                             f"{list(PAPER_DATASETS)}")
        try:
            if name in FILE_DATASETS and authors_version(name, folder) is None:
                dataset_path(name, folder)
            present.append(name)
        except DatasetNotFoundError as err:
            missing[name] = err
    return present, missing


def authors_files_table(folder=None) -> pd.DataFrame:
    """What each authors' file in the data folder holds, and whether its labels follow it.

    Parameters
    ----------
    folder : str or path-like, optional
        The data folder.

    Returns
    -------
    pandas.DataFrame
        One row per file present (none: an empty table): records, features, clients,
        classes, the 3-fold accuracy of a 5-nearest-neighbour classifier of ``true_label``
        from the records (near 1 when the labels follow the points, near 1/classes when
        they do not), the ARI of central, noiseless k-means (k = classes, 3 starts, seed
        0) against the labels (a ceiling no private federated method is expected to
        pass), its loss, and the loss the file stores.
    """
    rows = []
    for key in AUTHORS_FILES:
        if not authors_file_present(key, folder):
            continue
        fed = load_authors_federation(key, folder)
        k = int(fed.y.max()) + 1
        accuracy = cross_val_score(KNeighborsClassifier(5), fed.X, fed.y, cv=3).mean()
        kmeans = KMeans(k, n_init=3, random_state=0).fit(fed.X)
        rows.append({"file": fed.spec.filename, "records": len(fed.X), "features":
                     fed.X.shape[1], "clients": len(fed.clients), "classes": k,
                     "knn_accuracy": accuracy,
                     "kmeans_ari": adjusted_rand_score(fed.y, kmeans.labels_),
                     "kmeans_loss": kmeans.inertia_, "file_kmeans_loss": fed.kmeans_loss})
    return pd.DataFrame(rows, columns=["file", "records", "features", "clients", "classes",
                                       "knn_accuracy", "kmeans_ari", "kmeans_loss",
                                       "file_kmeans_loss"])


def table3_experiment(seeds: Iterable[int], alphas: Sequence[float] = TABLE3_ALPHAS,
                      progress: bool = False) -> pd.DataFrame:
    """GFC on :data:`TABLE3_DATASET` for every synthetic-data multiplier, at epsilon 1000
    and 0.01 (Table 3).

    Parameters
    ----------
    seeds : iterable of int
        The seeds (a partition and a GFC seed each).
    alphas : sequence of float, default=:data:`TABLE3_ALPHAS`
        The multipliers.
    progress : bool, default=False
        Show progress bars.

    Returns
    -------
    pandas.DataFrame
        :func:`~topofl_lib.clustering.evaluation.clustering_experiment`'s rows with a
        column ``alpha``.
    """
    seeds = list(seeds)
    return pd.concat([
        clustering_experiment([TABLE3_DATASET], [1000.0, 0.01], seeds, methods=["GFC"],
                              gfc_params={"alpha": a}, progress=progress).assign(alpha=a)
        for a in alphas], ignore_index=True)


def _mnist_source(folder) -> str:
    """MNIST's Table 5 source: the authors' 60,000 x 2 embedding, else the raw images."""
    return authors_version("mnist", folder) or "mnist"


def table5_experiment(seeds: Iterable[int], folder=None, progress: bool = False
                      ) -> pd.DataFrame:
    """GFC on MNIST for every (epsilon, local centroids) of :data:`TABLE5_GRID`.

    MNIST is the authors' 2-D embedding (``mnist100fed.pkl``) where it is in the data
    folder, else the 70,000 images by UMAP; 10 clients by Algorithm 5, as in Table 1.

    Parameters
    ----------
    seeds : iterable of int
        The seeds (a partition and a GFC seed each).
    folder : str or path-like, optional
        The data folder.
    progress : bool, default=False
        Show progress bars.

    Returns
    -------
    pandas.DataFrame
        :func:`~topofl_lib.clustering.evaluation.clustering_experiment`'s rows with the
        columns ``n_local`` and ``data`` (what was read, for the rows' notes).

    Raises
    ------
    DatasetNotFoundError
        Neither the authors' file nor the MNIST images are in the data folder.
    """
    return _local_centroid_grid(_mnist_source(folder), TABLE5_GRID, seeds, folder,
                                progress).assign(data=_source("mnist", folder))


def scalability_experiment(client_counts: Sequence[int], seeds: Iterable[int], folder=None,
                           progress: bool = False) -> pd.DataFrame:
    """Every method at epsilon :data:`TABLE6_EPSILON` with many clients (Table 6).

    With ``c`` clients: the authors' federation ``mnist<c>fed.pkl`` (their 2-D MNIST and
    their split into ``c`` clients, the same for every seed) where it is in the data
    folder, else MNIST-5k (2-D by PCA) split into ``c`` clients by Algorithm 5.

    Parameters
    ----------
    client_counts : sequence of int
        The numbers of clients.
    seeds : iterable of int
        The seeds.
    folder : str or path-like, optional
        The data folder.
    progress : bool, default=False
        Show progress bars.

    Returns
    -------
    pandas.DataFrame
        :func:`~topofl_lib.clustering.evaluation.clustering_experiment`'s rows with the
        columns ``n_clients`` and ``data`` (the authors' file's note, or ``""``).
    """
    seeds, parts = list(seeds), []
    for c in client_counts:
        key = f"mnist{c}fed"
        if key in AUTHORS_FILES and authors_file_present(key, folder):
            run = clustering_experiment([key], [TABLE6_EPSILON], seeds, folder=folder,
                                        partition="authors", progress=progress)
            note = AUTHORS_FILES[key].note
        else:
            run = clustering_experiment(["mnist5k"], [TABLE6_EPSILON], seeds, n_clients=c,
                                        progress=progress)
            note = ""
        parts.append(run.assign(n_clients=c, data=note))
    return pd.concat(parts, ignore_index=True)


def table4_experiment(seeds: Iterable[int], folder=None, progress: bool = False
                      ) -> pd.DataFrame:
    """GFC on Abalone for every (epsilon, local centroids) of :data:`TABLE4_GRID`.

    Parameters
    ----------
    seeds : iterable of int
        The seeds (a partition and a GFC seed each).
    folder : str or path-like, optional
        The data folder holding ``uci/abalone/``.
    progress : bool, default=False
        Show progress bars.

    Returns
    -------
    pandas.DataFrame
        :func:`~topofl_lib.clustering.evaluation.clustering_experiment`'s rows with a
        column ``n_local``.
    """
    return _local_centroid_grid("abalone", TABLE4_GRID, seeds, folder, progress)


def _local_centroid_grid(dataset: str, grid: Mapping[float, Sequence[int]],
                         seeds: Iterable[int], folder, progress: bool) -> pd.DataFrame:
    """GFC on ``dataset`` for every (epsilon, local centroids) of ``grid`` (Tables 4-5)."""
    seeds = list(seeds)
    return pd.concat([
        clustering_experiment([dataset], [eps], seeds, methods=["GFC"],
                              gfc_params={"n_local": k}, progress=progress,
                              folder=folder).assign(n_local=k)
        for eps, counts in grid.items() for k in counts], ignore_index=True)


def gfc_not_run_rows(missing: Mapping[str, DatasetNotFoundError]) -> pd.DataFrame:
    """A row without a value for every Table 1 and Table 4 claim whose data is missing.

    MNIST's Table 1 ids are left out (they are then measured on the MNIST-5k stand-in);
    its Table 5 ids get their rows here.

    Parameters
    ----------
    missing : Mapping of str to DatasetNotFoundError
        Dataset -> its error (:func:`paper_datasets_present`).

    Returns
    -------
    pandas.DataFrame
        :func:`~topofl_lib.results.not_run_rows` (profile ``not run``, the error's
        ``not_run_note`` as the note).
    """
    ids = load_paper_claims().index
    notes = {}
    for name, err in missing.items():
        prefixes = [f"gfc.t1.{name}."] if name != "mnist" else ["gfc.t5."]
        if name == "abalone":
            prefixes.append("gfc.t4.")
        notes.update({cid: err.not_run_note for cid in ids
                      if any(cid.startswith(p) for p in prefixes)})
    return not_run_rows(notes)


def _per_seed(g: pd.DataFrame, metric: str, scale: float = 1.0) -> np.ndarray:
    return scale * g.sort_values("seed")[metric].to_numpy(dtype=np.float64)


def _claim_id(source: str, dataset: str, key: str, full_mnist: bool) -> str | None:
    """The id a (dataset, key) row of the ``main`` or ``table1`` runs measures."""
    if source == "table1":
        return f"gfc.t1.{dataset}.{key}"
    if dataset == "mnist5k":
        return None if full_mnist else f"gfc.t1.mnist.{key}"
    return f"topofl.gfc.{dataset}.{key}"


def _table1_values(main: pd.DataFrame, table1: pd.DataFrame | None, known) -> dict:
    out = {}
    runs = {"main": main}
    if table1 is not None and len(table1):
        runs["table1"] = table1
    full_mnist = "table1" in runs and bool((table1["dataset"] == "mnist").any())
    for source, frame in runs.items():
        for (dataset, eps, method), g in frame.groupby(["dataset", "epsilon", "method"]):
            for metric in ("ari", "nmi"):
                cid = _claim_id(source, dataset, f"eps{eps:g}.{metric}.{METHOD_KEYS[method]}",
                                full_mnist)
                if cid in known:  # Table 1 (and its MNIST-5k stand-in) is in percent
                    scale = 100.0 if cid.startswith("gfc.") else 1.0
                    out[cid] = _per_seed(g, metric, scale)
    return out


def gfc_claim_values(main: pd.DataFrame, multiplier: pd.DataFrame | None = None,
                     scalability: pd.DataFrame | None = None,
                     table1: pd.DataFrame | None = None,
                     table4: pd.DataFrame | None = None,
                     scalings: pd.DataFrame | None = None,
                     table5: pd.DataFrame | None = None) -> dict[str, np.ndarray]:
    """``gfc.*`` ids (Tables 1 and 6 in percent, like the paper; Tables 3-5 as fractions).

    Parameters
    ----------
    main : pandas.DataFrame
        ARI/NMI per dataset, epsilon, method and seed on the offline datasets
        (``topofl.gfc.*`` ids; MNIST-5k gives ``gfc.t1.mnist.*`` unless ``table1``
        holds the 70,000 MNIST images).
    multiplier : pandas.DataFrame, optional
        ARI/NMI per ``alpha``, epsilon and seed (Table 3, :func:`table3_experiment`).
    scalability : pandas.DataFrame, optional
        ARI/NMI per ``n_clients``, method, epsilon and seed (Table 6,
        :func:`scalability_experiment`; in percent: the paper's 1.51 for 100 clients
        cannot be a fraction).
    table1 : pandas.DataFrame, optional
        ARI/NMI per dataset, epsilon, method and seed on Table 1's datasets
        (``gfc.t1.<dataset>.*``).
    table4 : pandas.DataFrame, optional
        GFC's ARI/NMI on Abalone per epsilon, ``n_local`` and seed (Table 4).
    scalings : pandas.DataFrame, optional
        ARI/NMI per dataset, ``scaling`` (:data:`~topofl_lib.clustering.evaluation.SCALINGS`),
        epsilon, method and seed: ``topofl.gfc.<dataset>.<scaling>.*`` ids, in percent
        like Table 1 (what bounding the records does to Table 1's numbers).
    table5 : pandas.DataFrame, optional
        GFC's ARI/NMI on MNIST per epsilon, ``n_local`` and seed (Table 5,
        :func:`table5_experiment`).

    Returns
    -------
    dict of str to ndarray
        Claim id -> per-seed values sorted by seed (only known ids).
    """
    known = set(load_paper_claims().index)
    out = _table1_values(main, table1, known)
    def t6(c, method, eps, metric):
        suffix = "" if method == "GFC" else f".{METHOD_KEYS[method]}"
        return f"gfc.t6.mnist{c}.{metric}{suffix}" if eps == TABLE6_EPSILON else None

    for frame, by, make_id, scale in (
            (scalings, ["dataset", "scaling", "epsilon", "method"],
             lambda d, s, e, m, metric: f"topofl.gfc.{d}.{s}.eps{e:g}.{metric}.{METHOD_KEYS[m]}",
             100.0),
            (multiplier, ["alpha", "epsilon"],
             lambda a, e, metric: f"gfc.t3.eps{e:g}.alpha{a:g}.{metric}", 1.0),
            (table5, ["epsilon", "n_local"],
             lambda e, k, metric: f"gfc.t5.mnist.eps{e:g}.k{k}.{metric}", 1.0),
            (table4, ["epsilon", "n_local"],
             lambda e, k, metric: f"gfc.t4.abalone.eps{e:g}.k{k}.{metric}", 1.0),
            (scalability, ["n_clients", "method", "epsilon"], t6, 100.0)):  # percent
        if frame is None:
            continue
        for key, g in frame.groupby(by):
            for metric in ("ari", "nmi"):
                if (cid := make_id(*key, metric)) in known:
                    out[cid] = _per_seed(g, metric, scale)
    return out


def _source(name: str, folder) -> str:
    key = authors_version(name, folder)
    return AUTHORS_FILES[key].note if key is not None else source_note(name, folder)


def _best_range(frame: pd.DataFrame | None, key: str, eps: float) -> list[float] | None:
    """The values of ``key`` whose mean ARI is within one standard error of the best
    (the best first, then the others in increasing order)."""
    if frame is None or not len(frame) or not (frame["epsilon"] == eps).any():
        return None
    g = frame[frame["epsilon"] == eps].groupby(key)["ari"]
    mean, se = g.mean(), g.std(ddof=1).fillna(0.0) / np.sqrt(g.count())
    if not mean.max() > 0:
        return None  # every setting scores 0 (or below): no setting is best
    best = mean.idxmax()
    return [float(best), *sorted(float(v) for v in mean.index[mean >= mean[best] - se[best]])]


def _improvement(values: Mapping[str, np.ndarray], prefix: str) -> float | None:
    """100 (GFC - best baseline) / best baseline, on mean ARI; None when undefined."""
    means = {m: float(np.mean(values[f"{prefix}.{m}"])) for m in ("gfc", "kfed", "mufc", "nnfc")
             if f"{prefix}.{m}" in values}
    base = max((v for m, v in means.items() if m != "gfc"), default=0.0)
    return 100.0 * (means["gfc"] - base) / base if "gfc" in means and base > 0 else None


def _time_gap(main: pd.DataFrame) -> float | None:
    """The largest 100 |t_GFC - t_kFED| / t_kFED over the main run's datasets."""
    t = main.groupby(["dataset", "method"])["seconds"].mean().unstack()
    if not {"GFC", "k-FED"} <= set(t.columns):
        return None
    return float((100.0 * (t["GFC"] - t["k-FED"]).abs() / t["k-FED"]).max())


def gfc_text_rows(values: Mapping[str, np.ndarray], main: pd.DataFrame, profile: str,
                  multiplier: pd.DataFrame | None = None, table4: pd.DataFrame | None = None,
                  table5: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows of the numbers GFC's text derives from its tables (``gfc.text.*``).

    Each is computed here from the measured rows it comes from, one value per id: the
    largest ARI improvement of GFC over the best baseline at epsilon 0.01 (Abalone,
    MNIST; undefined, so not run, where every baseline scores 0), the best synthetic
    multiplier and number of local centroids (the values whose mean ARI is within one
    standard error of the best: their smallest and largest; the "required" multiplier at
    epsilon 0.01: the best; none where every value scores 0), and GFC's largest runtime
    gap to k-FED over the main run's datasets. An id whose source did not run gets a row
    without a value that says why.

    Parameters
    ----------
    values : Mapping of str to array-like
        :func:`gfc_claim_values` (Table 1 ids in percent).
    main : pandas.DataFrame
        The main run (its ``seconds``).
    profile : str
        The run's profile.
    multiplier, table4, table5 : pandas.DataFrame, optional
        Tables 3, 4 and 5's runs.

    Returns
    -------
    pandas.DataFrame
        Claim rows (:func:`~topofl_lib.results.claim_rows`, then
        :func:`~topofl_lib.results.not_run_rows`).
    """
    found: dict[str, list[float]] = {}
    missing: dict[str, str] = {}

    def put(cid: str, value: float | None, why: str) -> None:
        if value is None:
            missing[cid] = f"not run: {why}"
        else:
            found[cid] = [value]

    for name in ("abalone", "mnist"):
        put(f"gfc.text.{name}.eps0.01.ari.improv_upto",
            _improvement(values, f"gfc.t1.{name}.eps0.01.ari"),
            f"no Table 1 row of {name} at epsilon 0.01 with a baseline above 0 to compare with")
    gap = _time_gap(main)
    put("gfc.text.efficiency.kfed.time_diff_max", gap, "GFC and k-FED did not both run")
    gains = [g for d in PAPER_DATASETS
             if (g := _improvement(values, f"gfc.t1.{d}.eps0.01.ari")) is not None]
    put("gfc.text.efficiency.eps0.01.ari.improv_min", min(gains) if gains else None,
        "no Table 1 dataset at epsilon 0.01 has a baseline above 0 to compare with")
    for eps, tag in ((1000.0, "eps1000"), (0.01, "eps0.01")):
        best = _best_range(multiplier, "alpha", eps)
        why = (f"Table 3 did not run at epsilon {eps:g}, or every multiplier scored ARI 0 "
               "there, so none is best")
        if eps == 0.01:
            put("gfc.text.synth.eps0.01.best_alpha", best and best[0], why)
        else:
            put(f"gfc.text.synth.{tag}.best_alpha.min", best and best[1], why)
            put(f"gfc.text.synth.{tag}.best_alpha.max", best and best[-1], why)
    for name, frame in (("abalone", table4), ("mnist", table5)):
        best = _best_range(frame, "n_local", 0.01)
        why = (f"the local-centroid table of {name} did not run (its data is missing), or "
               "every number of local centroids scored ARI 0 at epsilon 0.01, so none is best")
        put(f"gfc.text.sens.{name}.best_k.min", best and best[1], why)
        put(f"gfc.text.sens.{name}.best_k.max", best and best[-1], why)
    missing["gfc.text.data.balancescale.n"] = (
        "not run: Balance Scale is named only in Appendix A's list of datasets; no table or "
        "figure uses it")
    parts = [claim_rows(found, profile), not_run_rows(missing)]
    return pd.concat([p for p in parts if len(p)], ignore_index=True)


def gfc_data_notes(values: Mapping[str, np.ndarray], present: Sequence[str], folder=None,
                   table5: pd.DataFrame | None = None,
                   scalability: pd.DataFrame | None = None) -> dict[str, str]:
    """Claim id -> the files it was measured on, for every id measured on the paper's data.

    Table 1 ids of the datasets read from files (the packaged UCI tables, the authors'
    files, the user's copies), Table 5 ids, and Table 6 ids of the client counts that ran
    on the authors' federations.

    Parameters
    ----------
    values : Mapping of str to array-like
        :func:`gfc_claim_values`.
    present : sequence of str
        Table 1 datasets that ran (:func:`paper_datasets_present`).
    folder : str or path-like, optional
        The data folder they were read from.
    table5, scalability : pandas.DataFrame, optional
        :func:`table5_experiment`'s and :func:`scalability_experiment`'s rows.

    Returns
    -------
    dict of str to str
        The note of each such id (:func:`~topofl_lib.data.file_datasets.source_note`, or
        the authors' file with its repository, commit and digest).
    """
    sources = {name: _source(name, folder) for name in present if name in FILE_DATASETS}
    notes = {cid: sources[cid.split(".")[2]] for cid in values
             if cid.startswith("gfc.t1.") and cid.split(".")[2] in sources}
    if table5 is not None and len(table5):
        notes.update({cid: str(table5["data"].iloc[0]) for cid in values
                      if cid.startswith("gfc.t5.")})
    if scalability is not None:
        for c, g in scalability.groupby("n_clients"):
            if note := str(g["data"].iloc[0]):
                notes.update({cid: note for cid in values
                              if cid.startswith(f"gfc.t6.mnist{c}.")})
    return notes


def gfc_claims(values: Mapping[str, np.ndarray], profile: str,
               missing: Mapping[str, DatasetNotFoundError],
               data_notes: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The notebook's claim rows: the measured ones, then one per claim that could not run.

    Parameters
    ----------
    values : Mapping of str to array-like
        Claim id -> per-seed values (:func:`gfc_claim_values`).
    profile : str
        The run's profile.
    missing : Mapping of str to DatasetNotFoundError
        Table 1 datasets whose files are missing (:func:`paper_datasets_present`).
    data_notes : Mapping of str to str, optional
        The ids measured on the paper's own data and the files they were measured on
        (:func:`gfc_data_notes`): their rows carry the profile
        :data:`~topofl_lib.results.PAPER_DATA_PROFILE` (the paper's protocol on the
        paper's data, whatever profile the notebook ran under), and the note.

    Returns
    -------
    pandas.DataFrame
        :func:`~topofl_lib.results.claim_rows` followed by :func:`gfc_not_run_rows`.
    """
    data_notes = dict(data_notes or {})
    ours = {cid: v for cid, v in values.items() if cid not in data_notes}
    theirs = {cid: v for cid, v in values.items() if cid in data_notes}
    parts = [claim_rows(ours, profile), claim_rows(theirs, PAPER_DATA_PROFILE, data_notes),
             gfc_not_run_rows(missing)]
    return pd.concat([p for p in parts if len(p)], ignore_index=True) if any(
        len(p) for p in parts) else parts[0]
