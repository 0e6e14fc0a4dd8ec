"""GFC's datasets: the waveform generator, the file loaders (on tiny files in the true
format), the missing-data rows and the claim mapping of Tables 1 and 4."""

import gzip

import numpy as np
import pandas as pd
import pytest

from topofl_lib.clustering.evaluation import (
    CLUSTERING_DATASETS,
    PAPER_DATASETS,
    load_clustering_dataset,
)
from topofl_lib.data import DatasetNotFoundError, load_file_dataset, make_waveform
from topofl_lib.data.file_datasets import FILE_DATASETS, dataset_path
from topofl_lib.data.generators import WAVEFORM_CLASSES, waveform_base_waves
from topofl_lib.data.locations import DATA_DIR_VARIABLE, display_path
from topofl_lib.results import load_paper_claims, not_run_rows, read_claim_file, write_claims
from topofl_lib.studies.gfc import (
    TABLE1_EPSILONS,
    TABLE4_GRID,
    gfc_claim_values,
    gfc_not_run_rows,
    paper_datasets_present,
)


# --------------------------------------------------------------------------- waveform
def test_base_waves_are_the_three_shifted_triangles():
    h = waveform_base_waves()
    i = np.arange(1, 22)
    assert h.shape == (3, 21)
    assert np.array_equal(h[0], np.maximum(6 - np.abs(i - 11), 0))
    assert np.array_equal(h[1][4:], h[0][:-4]) and np.array_equal(h[2][:-4], h[0][4:])
    assert h.argmax(axis=1).tolist() == [10, 14, 6]  # peaks at i = 11, 15, 7


def test_waveform_shape_classes_and_class_means():
    """Classes about a third each; a class's mean is the midpoint of its two waves
    (E[u] = 1/2, the noise has mean 0)."""
    X, y = make_waveform(30000, random_state=0)
    assert X.shape == (30000, 21) and y.dtype == np.int64
    assert np.allclose(np.bincount(y, minlength=3) / y.size, 1 / 3, atol=0.015)
    h = waveform_base_waves()
    for c, (a, b) in enumerate(WAVEFORM_CLASSES):
        # the mean of ~10,000 records: sd of each coordinate's mean < 0.03
        assert np.allclose(X[y == c].mean(axis=0), (h[a] + h[b]) / 2, atol=0.12)
    # the noise: within-class residual around u*h_a + (1-u)*h_b has unit variance at a
    # coordinate where both waves are 0 (position 1)
    assert np.std(X[:, 0]) == pytest.approx(1.0, abs=0.03)


def test_noise_free_records_lie_on_their_class_segment():
    X, y = make_waveform(500, noise=0.0, random_state=1)
    h = waveform_base_waves()
    for c, (a, b) in enumerate(WAVEFORM_CLASSES):
        rows = X[y == c]
        d = h[a] - h[b]
        u = (rows - h[b]) @ d / (d @ d)
        assert np.all((u >= 0) & (u <= 1))
        assert np.allclose(rows, u[:, None] * h[a] + (1 - u[:, None]) * h[b], atol=1e-12)


def test_waveform_is_deterministic_by_seed():
    X1, y1 = make_waveform(50, random_state=3)
    X2, y2 = make_waveform(50, random_state=3)
    X3, _ = make_waveform(50, random_state=4)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    assert not np.array_equal(X1, X3)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n_samples": 0}, ValueError, "n_samples must be >= 1, got 0"),
    ({"n_samples": 2.5}, TypeError, "n_samples must be an int, got 2.5"),
    ({"noise": -1.0}, ValueError, r"noise must be >= 0.0, got -1.0"),
    ({"noise": float("nan")}, ValueError, "noise must be finite"),
    ({"noise": "1"}, TypeError, "noise must be a real number"),
    ({"random_state": -1}, ValueError, "random_state must be >= 0"),
])
def test_waveform_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_waveform(**kwargs)


def test_waveform_is_an_offline_clustering_dataset():
    X, y = load_clustering_dataset("waveform")
    assert "waveform" in CLUSTERING_DATASETS and "waveform" in PAPER_DATASETS
    assert X.shape == (5000, 21) and set(np.unique(y)) == {0, 1, 2}
    assert np.abs(X).sum(axis=1).max() == pytest.approx(0.5)


# --------------------------------------------------------------------------- file loaders
def _write(root, name, text, filename=None):
    folder = root / FILE_DATASETS[name].subfolder
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (filename or FILE_DATASETS[name].files[0])
    path.write_text(text)
    return path


SEEDS = ("15.26\t14.84\t0.871\t5.763\t3.312\t2.221\t5.22\t1\n"
         "14.88\t14.57\t0.8811\t5.554\t3.333\t1.018\t\t4.956\t1\n"  # doubled tab, as in the file
         "17.63\t15.98\t0.8673\t6.191\t3.561\t4.076\t6.06\t2\n"
         "11.84\t13.21\t0.8521\t5.175\t2.836\t3.598\t5.044\t3\n")
THYROID = "1,107,10.1,2.2,0.9,2.7\n2,120,15.6,2.9,0.7,1.1\n3,101,5.6,0.6,27.3,33.4\n"
BREAST = ("no-recurrence-events,30-39,premeno,30-34,0-2,no,3,left,left_low,no\n"
          "recurrence-events,50-59,ge40,15-19,36-39,yes,1,right,central,yes\n"
          "recurrence-events,40-49,premeno,25-29,0-2,?,2,left,right_low,yes\n"
          "no-recurrence-events,60-69,lt40,5-9,3-5,no,2,right,left_up,no\n")
HEART = ("63.0,1.0,1.0,145.0,233.0,1.0,2.0,150.0,0.0,2.3,3.0,0.0,6.0,0\n"
         "67.0,1.0,4.0,160.0,286.0,0.0,2.0,108.0,1.0,1.5,2.0,3.0,3.0,2\n"
         "53.0,0.0,3.0,128.0,216.0,0.0,2.0,115.0,0.0,0.0,1.0,0.0,?,0\n"
         "41.0,0.0,2.0,130.0,204.0,0.0,2.0,172.0,0.0,1.4,1.0,?,3.0,1\n")
GESTURE_HEADER = ",".join([f"{p}{a}" for p in ("lh", "rh", "h", "s", "lw", "rw")
                           for a in "xyz"] + ["timestamp", "phase"])
ABALONE = ("M,0.455,0.365,0.095,0.514,0.2245,0.101,0.15,15\n"
           "F,0.53,0.42,0.135,0.677,0.2565,0.1415,0.21,9\n"
           "I,0.33,0.255,0.08,0.205,0.0895,0.0395,0.055,7\n"
           "M,0.44,0.365,0.125,0.516,0.2155,0.114,0.155,10\n")


def _gesture_text():
    rng = np.random.default_rng(0)
    rows = [",".join(f"{v:.6f}" for v in rng.uniform(1, 6, 18)) + f",{5802231 + i},{p}"
            for i, p in enumerate(["Rest", "Preparation", "Stroke", "Hold", "Retraction",
                                   "Rest"])]
    return GESTURE_HEADER + "\n" + "\n".join(rows) + "\n"


def _postures_text():
    header = "Class,User," + ",".join(f"{a}{m}" for m in range(12) for a in "XYZ")
    rng = np.random.default_rng(1)
    lines = [header, ",".join(["0"] * 38)]  # the all-zero record at the file's top
    for cls, markers in [(1, 12), (2, 5), (3, 7), (4, 4), (5, 6)]:  # class 4: too few
        values = [f"{v:.4f}" for v in rng.normal(0, 50, 3 * markers)]
        lines.append(",".join([str(cls), "0", *values, *["?"] * (36 - 3 * markers)]))
    return "\n".join(lines) + "\n"


def _idx(path, array, code):
    dims = b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    data = bytes([0, 0, code, array.ndim]) + dims + array.astype(">u1").tobytes()
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wb") as fh:
        fh.write(data)


def _mnist(root):
    folder = root / "mnist"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(2)
    _idx(folder / "train-images-idx3-ubyte.gz", rng.integers(0, 256, (3, 28, 28)), 0x08)
    _idx(folder / "train-labels-idx1-ubyte", np.array([5, 0, 4]), 0x08)
    _idx(folder / "t10k-images-idx3-ubyte", rng.integers(0, 256, (2, 28, 28)), 0x08)
    _idx(folder / "t10k-labels-idx1-ubyte", np.array([7, 2]), 0x08)


@pytest.fixture
def data_folder(tmp_path):
    _write(tmp_path, "seeds", SEEDS)
    _write(tmp_path, "thyroid", THYROID)
    _write(tmp_path, "breast", BREAST)
    _write(tmp_path, "heart", HEART)
    _write(tmp_path, "gesture", _gesture_text())
    _write(tmp_path, "abalone", ABALONE)
    _write(tmp_path, "postures", _postures_text())
    _write(tmp_path, "celltype", "g1,g2,g3,type\n0.1,2.0,3.5,T cell\n1.2,0.3,0.0,B cell\n"
                                 "0.7,1.1,2.2,T cell\n")
    _mnist(tmp_path)
    return tmp_path


def test_seeds_thyroid_read_as_numbers(data_folder):
    X, y = load_file_dataset("seeds", data_folder)
    assert X.shape == (4, 7) and y.tolist() == [0, 0, 1, 2]
    assert X[1].tolist() == [14.88, 14.57, 0.8811, 5.554, 3.333, 1.018, 4.956]
    X, y = load_file_dataset("thyroid", data_folder)
    assert X.shape == (3, 5) and y.tolist() == [0, 1, 2] and X[2, 4] == 33.4


def test_breast_drops_missing_and_codes_categories_ordinally(data_folder):
    X, y = load_file_dataset("breast", data_folder)
    assert X.shape == (3, 9) and y.tolist() == [0, 1, 0]
    # age 30-39 -> 2, premeno -> 0, 30-34 -> 6, 0-2 -> 0, no -> 0, deg 3 -> 2,
    # left -> 0, left_low -> 1, no -> 0
    assert X[0].tolist() == [2, 0, 6, 0, 0, 2, 0, 1, 0]
    assert X[1].tolist() == [4, 2, 3, 12, 1, 0, 1, 4, 1]
    assert X[2, :3].tolist() == [5, 1, 1]


def test_breast_unknown_category_names_file_and_column(tmp_path):
    _write(tmp_path, "breast", BREAST.replace("left_low", "lower_left"))
    with pytest.raises(ValueError, match="breast-cancer.data: column 'breast-quad'"):
        load_file_dataset("breast", tmp_path)


def _cut(text: str, line: int, keep: int) -> str:
    """``text`` with line ``line`` (1-based) cut after ``keep`` of its fields."""
    lines = text.splitlines()
    sep = "\t" if "\t" in lines[line - 1] else ","
    lines[line - 1] = sep.join(lines[line - 1].split(sep)[:keep])
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("name", "text", "match"), [
    # a heart file whose last row is cut after 5 of its 14 fields (it loaded as a record
    # with the cut fields imputed and labelled 0)
    ("heart", _cut(HEART, 4, 5), "processed.cleveland.data, line 4: 5 fields, expected 14"),
    # thyroid rows of 3 fields (they came back as X of shape (n, 2))
    ("thyroid", "1,107,10.1\n2,120,15.6\n", "new-thyroid.data, line 1: 3 fields, expected 6"),
    ("thyroid", THYROID + "1,107,10.1,2.2,0.9,2.7,5.5\n",
     "new-thyroid.data, line 4: 7 fields, expected 6"),
    # a cell that is not a number (pandas' message named no file)
    ("seeds", SEEDS.replace("0.871", "abc"),
     r"seeds_dataset.txt, line 1: 'abc' in column 2 is not a number"),
    ("heart", HEART.replace("145.0", "x145"), "line 1: 'x145' in column 3 is not a number"),
    ("abalone", ABALONE.replace(",15\n", ",15.5.1\n"), "line 1: '15.5.1' in column 8"),
    # an empty file, and one of blank lines (pandas' EmptyDataError named no file)
    ("abalone", "", "abalone.data holds no records"),
    ("seeds", "\n\n  \n", "seeds_dataset.txt holds no records"),
    ("gesture", GESTURE_HEADER + "\n", "a1_raw.csv holds no records"),
    ("gesture", GESTURE_HEADER + "\n1,2,3\n", "a1_raw.csv, line 2: 3 fields, expected 20"),
])
def test_a_damaged_table_is_refused_naming_file_and_line(tmp_path, name, text, match):
    path = _write(tmp_path, name, text)
    with pytest.raises(ValueError, match=match) as err:
        load_file_dataset(name, tmp_path)
    assert str(path) in str(err.value)


def test_a_table_is_bounded_before_it_is_read(tmp_path, monkeypatch):
    """A table larger than MAX_TABLE_BYTES (inflated, for a gzipped copy) and a damaged
    gzip stream or non-text bytes are refused naming the file."""
    import topofl_lib.data.file_datasets as fd

    path = _write(tmp_path, "thyroid", THYROID)
    monkeypatch.setattr(fd, "MAX_TABLE_BYTES", len(THYROID) - 1)
    with pytest.raises(ValueError, match=f"{path} holds more than MAX_TABLE_BYTES"):
        load_file_dataset("thyroid", tmp_path)
    monkeypatch.undo()
    path.write_bytes(b"\xff\xfe\x00 not text")
    with pytest.raises(ValueError, match=f"{path} is not text"):
        load_file_dataset("thyroid", tmp_path)
    path.unlink()
    gz = path.with_name(path.name + ".gz")
    gz.write_bytes(gzip.compress(THYROID.encode())[:-10])
    monkeypatch.setattr(fd, "plain_or_gzipped", lambda where, f: where / (f + ".gz"))
    with pytest.raises(ValueError, match=f"{gz} is damaged"):
        load_file_dataset("thyroid", tmp_path)


def test_heart_imputes_medians_and_splits_disease(data_folder):
    X, y = load_file_dataset("heart", data_folder)
    assert X.shape == (4, 13) and y.tolist() == [0, 1, 0, 1]
    assert X[2, 12] == 3.0  # thal: the median of 6, 3, 3
    assert X[3, 11] == 0.0  # ca: the median of 0, 3, 0


def test_gesture_keeps_18_coordinates_and_5_phases(data_folder):
    X, y = load_file_dataset("gesture", data_folder)
    assert X.shape == (6, 18) and len(set(y.tolist())) == 5 and y[0] == y[5]
    assert np.all((X >= 1) & (X <= 6))  # the timestamp is not a feature


def test_abalone_codes_sex_and_bins_rings(data_folder):
    X, y = load_file_dataset("abalone", data_folder)
    assert X.shape == (4, 8)
    assert X[:, 0].tolist() == [1.0, -1.0, 0.0, 1.0]  # M, F, I, M
    assert y.tolist() == [2, 1, 0, 1]  # rings 15, 9, 7, 10


def test_postures_drops_the_dummy_and_incomplete_records(data_folder):
    X, y = load_file_dataset("postures", data_folder)
    assert X.shape == (4, 15) and y.tolist() == [0, 1, 2, 3]  # classes 1, 2, 3, 5


def test_celltype_and_mnist(data_folder):
    X, y = load_file_dataset("celltype", data_folder)
    assert X.shape == (3, 3) and y.tolist() == [1, 0, 1]
    X, y = load_file_dataset("mnist", data_folder)
    assert X.shape == (5, 784) and y.tolist() == [5, 0, 4, 7, 2] and X.max() <= 255


def test_dataset_folder_itself_and_the_environment_variable(data_folder, monkeypatch):
    X, _ = load_file_dataset("seeds", data_folder / "uci" / "seeds")
    assert X.shape == (4, 7)
    monkeypatch.setenv(DATA_DIR_VARIABLE, str(data_folder))
    assert load_file_dataset("thyroid")[0].shape == (3, 5)


@pytest.mark.parametrize("name", sorted(FILE_DATASETS))
def test_missing_files_name_files_folder_and_uci_page(name, tmp_path):
    spec = FILE_DATASETS[name]
    with pytest.raises(DatasetNotFoundError) as info:
        load_file_dataset(name, tmp_path)
    err = info.value
    assert err.dataset == spec.title and err.folder == tmp_path.resolve() / spec.subfolder
    for part in (*spec.files, spec.source):
        assert part in str(err)
    assert err.not_run_note == (f"not run: {spec.title} not found in "
                                f"{display_path(tmp_path.resolve() / spec.subfolder)}")
    if spec.subfolder.startswith("uci/"):
        assert spec.source.startswith("https://archive.ics.uci.edu/dataset/")


def test_unknown_file_dataset():
    with pytest.raises(ValueError, match="unknown dataset 'iris'"):
        dataset_path("iris")
    with pytest.raises(TypeError, match="name must be a str"):
        load_file_dataset(3)


def test_file_datasets_are_scaled_into_the_l1_ball(data_folder):
    X, y = load_clustering_dataset("abalone", data_folder)
    assert X.shape == (4, 8) and np.abs(X).sum(axis=1).max() == pytest.approx(0.5)


def test_large_datasets_are_embedded_in_2d_by_umap(tmp_path):
    """Celltype (a large set) goes through UMAP: 2-D, in the L1 ball, and two well
    separated groups of cells stay apart."""
    pytest.importorskip("umap")
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (40, 10)), rng.normal(8, 1, (40, 10))])
    table = pd.DataFrame(X, columns=[f"g{i}" for i in range(10)]).assign(
        type=["a"] * 40 + ["b"] * 40)
    _write(tmp_path, "celltype", table.to_csv(index=False))
    E, y = load_clustering_dataset("celltype", tmp_path)
    assert E.shape == (80, 2) and np.abs(E).sum(axis=1).max() == pytest.approx(0.5)
    centres = np.array([E[y == c].mean(axis=0) for c in (0, 1)])
    nearest = np.argmin(((E[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    assert np.array_equal(nearest, y)


# --------------------------------------------------------------------------- claims
def test_missing_data_gives_a_not_run_row_for_every_claim(tmp_path):
    present, missing = paper_datasets_present(PAPER_DATASETS, tmp_path)
    assert present == ["waveform"] and set(missing) == set(PAPER_DATASETS) - {"waveform"}
    rows = gfc_not_run_rows(missing)
    ids = load_paper_claims().index
    for name in set(missing) - {"mnist"}:
        expected = {c for c in ids if c.startswith(f"gfc.t1.{name}.")}
        got = rows[rows["id"].str.startswith(f"gfc.t1.{name}.")]
        assert expected and set(got["id"]) == expected
        assert (got["note"] == missing[name].not_run_note).all()
    assert not rows["id"].str.startswith("gfc.t1.mnist.").any()  # the MNIST-5k stand-in
    t4 = {c for c in ids if c.startswith("gfc.t4.")}
    assert t4 <= set(rows["id"])
    assert (rows["profile"] == "not run").all() and (rows["n_seeds"] == 0).all()
    assert rows["measured_mean"].isna().all()
    back = read_claim_file(write_claims(rows, tmp_path / "out", "gfc"))
    assert len(back) == len(rows) and back["measured_mean"].isna().all()


def test_present_data_is_not_reported_missing(data_folder):
    present, missing = paper_datasets_present(["seeds", "waveform", "abalone"], data_folder)
    assert present == ["seeds", "waveform", "abalone"] and missing == {}
    with pytest.raises(ValueError, match="unknown Table 1 dataset 'iris'"):
        paper_datasets_present(["iris"], data_folder)


def test_not_run_rows_refuse_unknown_ids_and_empty_notes():
    with pytest.raises(ValueError, match="unknown claim id 'gfc.t1.nope'"):
        not_run_rows({"gfc.t1.nope": "not run: x"})
    with pytest.raises(ValueError, match="must say why"):
        not_run_rows({"gfc.t4.abalone.eps0.01.k1.ari": " "})


def _runs(dataset, seeds, methods=("GFC", "k-FED", "MUFC", "NN-FC"), epsilons=TABLE1_EPSILONS):
    return pd.DataFrame([{"dataset": dataset, "epsilon": e, "seed": s, "method": m,
                          "ari": 0.1 * (s + 1), "nmi": 0.2} for e in epsilons
                         for m in methods for s in seeds])


def test_table1_rows_are_percent_and_full_mnist_replaces_the_stand_in():
    main = _runs("mnist5k", range(2))
    table1 = pd.concat([_runs("waveform", range(20)), _runs("mnist", range(20))])
    values = gfc_claim_values(main, table1=table1)
    v = values["gfc.t1.waveform.eps0.1.ari.gfc"]
    assert v.size == 20 and np.allclose(v, 10 * np.arange(1, 21))
    assert values["gfc.t1.mnist.eps0.01.ari.gfc"].size == 20  # not the 2 MNIST-5k seeds
    assert gfc_claim_values(main)["gfc.t1.mnist.eps0.01.ari.gfc"].size == 2


def test_table4_rows_are_fractions_per_epsilon_and_local_count():
    table4 = pd.concat([_runs("abalone", range(3), ["GFC"], [eps]).assign(n_local=k)
                        for eps, counts in TABLE4_GRID.items() for k in counts])
    values = gfc_claim_values(_runs("iris", range(3)), table4=table4)
    t4 = {c for c in load_paper_claims().index if c.startswith("gfc.t4.")}
    assert t4 <= set(values)
    assert np.allclose(values["gfc.t4.abalone.eps1000.k15.ari"], [0.1, 0.2, 0.3])


def test_scalings_bound_or_only_standardise_the_records():
    from topofl_lib.clustering.evaluation import load_clustering_dataset

    Xb, yb = load_clustering_dataset("iris")
    Xz, yz = load_clustering_dataset("iris", scaling="zscore")
    np.testing.assert_array_equal(yb, yz)
    assert np.abs(Xb).sum(axis=1).max() == pytest.approx(0.5)
    np.testing.assert_allclose(Xz.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Xz.std(axis=0), 1.0)
    # the bound is one common factor: the bounded records are the z-scored ones, shrunk
    np.testing.assert_allclose(Xb, Xz * (0.5 / np.abs(Xz).sum(axis=1).max()))
    with pytest.raises(ValueError, match="scaling"):
        load_clustering_dataset("iris", scaling="minmax")


def test_scaling_runs_map_to_their_own_ids_in_percent():
    import pandas as pd

    from topofl_lib.studies.gfc import gfc_claim_values

    runs = pd.DataFrame({"dataset": "waveform", "scaling": ["zscore", "zscore", "l1_ball"],
                         "epsilon": 0.1, "method": "k-FED", "seed": [1, 0, 0],
                         "ari": [0.2, 0.1, 0.0], "nmi": [0.3, 0.4, 0.0]})
    empty = runs.iloc[:0].drop(columns="scaling")
    values = gfc_claim_values(empty, scalings=runs)
    np.testing.assert_allclose(values["topofl.gfc.waveform.zscore.eps0.1.ari.kfed"], [10, 20])
    np.testing.assert_allclose(values["topofl.gfc.waveform.zscore.eps0.1.nmi.kfed"], [40, 30])
    np.testing.assert_allclose(values["topofl.gfc.waveform.l1_ball.eps0.1.ari.kfed"], [0.0])


def test_tables_3_5_and_6_map_to_their_ids():
    from topofl_lib.studies.gfc import TABLE3_ALPHAS, TABLE5_GRID

    multiplier = pd.concat([_runs("blobs2d", range(3), ["GFC"], [1000.0, 0.01]).assign(alpha=a)
                            for a in TABLE3_ALPHAS])
    table5 = pd.concat([_runs("mnist100fed", range(3), ["GFC"], [eps]).assign(n_local=k)
                        for eps, counts in TABLE5_GRID.items() for k in counts])
    scalability = pd.concat([_runs("mnist100fed", range(3), epsilons=[0.01]).assign(
        n_clients=c) for c in (100, 1000)])
    values = gfc_claim_values(_runs("iris", range(3)), multiplier, scalability, table5=table5)
    ids = load_paper_claims().index
    for table in ("gfc.t3.", "gfc.t5.", "gfc.t6."):
        assert {c for c in ids if c.startswith(table)} <= set(values), table
    assert np.allclose(values["gfc.t3.eps0.01.alpha5.nmi"], 0.2)            # fractions
    assert np.allclose(values["gfc.t5.mnist.eps1000.k300.ari"], [0.1, 0.2, 0.3])
    assert np.allclose(values["gfc.t6.mnist1000.ari.mufc"], [10.0, 20.0, 30.0])  # percent
    assert np.allclose(values["gfc.t6.mnist100.nmi"], 20.0)


def _authors_mnist(tmp_path, monkeypatch, n_clients=4):
    """A format-true ``mnist100fed.pkl`` (3 blobs, 90 records) pinned in place of the
    published one."""
    import dataclasses
    import hashlib
    import pickle

    from topofl_lib.data import authors_files as af

    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 0.3, size=(40, 2)) for c in (0.0, 5.0, 10.0)])
    content = {"full_data": X.astype(np.float32), "true_label": np.repeat([0.0, 1.0, 2.0], 40),
               "num_clusters": 3, "kmeans_loss": 1.0,
               **{f"client_{i}": X.astype(np.float32)[p]
                  for i, p in enumerate(np.array_split(np.arange(120), n_clients))}}
    data = pickle.dumps(content, protocol=4)
    monkeypatch.setitem(af.AUTHORS_FILES, "mnist100fed", dataclasses.replace(
        af.AUTHORS_FILES["mnist100fed"], sha256=hashlib.sha256(data).hexdigest(),
        shape=(120, 2), n_clusters=3, n_clients=n_clients))
    (tmp_path / af.SUBFOLDER).mkdir()
    (tmp_path / af.SUBFOLDER / "mnist100fed.pkl").write_bytes(data)
    return af.AUTHORS_FILES["mnist100fed"]


def test_the_authors_mnist_replaces_the_raw_images_and_its_rows_say_so(tmp_path, monkeypatch):
    from topofl_lib.clustering.evaluation import load_clustering_dataset
    from topofl_lib.results import PAPER_DATA_PROFILE
    from topofl_lib.studies.gfc import gfc_claims, gfc_data_notes, scalability_experiment

    spec = _authors_mnist(tmp_path, monkeypatch)
    present, missing = paper_datasets_present(["mnist", "seeds"], tmp_path)
    assert present == ["mnist"] and list(missing) == ["seeds"]
    X, y = load_clustering_dataset("mnist", tmp_path)
    assert X.shape == (120, 2) and np.abs(X).sum(axis=1).max() == pytest.approx(0.5)
    runs = scalability_experiment([100, 7], [0], folder=tmp_path)
    by_count = runs.groupby("n_clients")["data"].first()
    assert by_count[100] == spec.note and by_count[7] == ""  # 7 clients: MNIST-5k
    assert len(runs) == 8 and set(runs["dataset"]) == {"mnist100fed", "mnist5k"}
    values = gfc_claim_values(_runs("mnist", range(2)), scalability=runs,
                              table1=_runs("mnist", range(2)))
    notes = gfc_data_notes(values, present, tmp_path, scalability=runs)
    assert notes["gfc.t6.mnist100.ari"] == spec.note
    assert notes["gfc.t1.mnist.eps0.1.ari.gfc"] == spec.note
    rows = gfc_claims(values, "cpu", missing, notes).set_index("id")
    assert rows.loc["gfc.t1.mnist.eps0.1.ari.gfc", "profile"] == PAPER_DATA_PROFILE
    assert rows.loc["gfc.t1.mnist.eps0.1.ari.gfc", "note"] == spec.note
    assert (rows.loc[rows.index.str.startswith("gfc.t1.seeds."), "profile"] == "not run").all()


def test_the_authors_clients_run_as_saved_for_every_seed(tmp_path, monkeypatch):
    from topofl_lib.clustering.evaluation import clustering_experiment

    _authors_mnist(tmp_path, monkeypatch, n_clients=3)
    runs = clustering_experiment(["mnist100fed"], [1000.0], [0, 1], methods=["k-FED"],
                                 folder=tmp_path, partition="authors", progress=False)
    assert (runs["ari"] > 0.9).all()  # each saved client holds one blob: k-FED finds them
    with pytest.raises(ValueError, match=r"partition='authors' needs .*got datasets \['iris'\]"):
        clustering_experiment(["iris"], [1.0], [0], partition="authors")
    with pytest.raises(ValueError, match="partition"):
        clustering_experiment(["iris"], [1.0], [0], partition="dirichlet")


def test_the_texts_numbers_are_derived_from_their_rows():
    from topofl_lib.studies.gfc import TABLE3_ALPHAS, gfc_text_rows

    ids = {c for c in load_paper_claims().index if c.startswith("gfc.text.")}
    main = pd.DataFrame([{"dataset": d, "method": m, "seconds": t, "epsilon": 1.0}
                         for d, ts in (("iris", (1.0, 1.02)), ("wine", (2.0, 2.2)))
                         for m, t in zip(("k-FED", "GFC"), ts, strict=True)])
    values = {f"gfc.t1.mnist.eps0.01.ari.{m}": np.array(v) for m, v in
              (("gfc", [50.0, 54.0]), ("kfed", [19.0, 21.0]), ("mufc", [10.0, 12.0]),
               ("nnfc", [0.0, 0.0]))}
    multiplier = pd.DataFrame([{"alpha": a, "epsilon": e, "seed": s, "ari": v + 0.01 * s}
                               for a, v in zip(TABLE3_ALPHAS, (0.5, 0.88, 0.875, 0.4), strict=True)
                               for e in (1000.0, 0.01) for s in range(3)])
    rows = gfc_text_rows(values, main, "cpu", multiplier).set_index("id")
    assert set(rows.index) == ids
    got = rows["measured_mean"]
    assert got["gfc.text.mnist.eps0.01.ari.improv_upto"] == pytest.approx(160.0)  # 52 vs 20
    assert got["gfc.text.efficiency.kfed.time_diff_max"] == pytest.approx(10.0)
    assert got["gfc.text.efficiency.eps0.01.ari.improv_min"] == pytest.approx(160.0)
    # alpha 2 is the best at both budgets; 5 lies within one standard error of it
    assert (got["gfc.text.synth.eps1000.best_alpha.min"],
            got["gfc.text.synth.eps1000.best_alpha.max"]) == (2.0, 5.0)
    assert got["gfc.text.synth.eps0.01.best_alpha"] == 2.0
    for cid in ("gfc.text.abalone.eps0.01.ari.improv_upto", "gfc.text.sens.mnist.best_k.min",
                "gfc.text.data.balancescale.n"):
        assert rows.loc[cid, "profile"] == "not run" and rows.loc[cid, "note"].startswith(
            "not run: ")


def test_no_best_setting_is_named_where_every_setting_scores_zero():
    from topofl_lib.studies.gfc import TABLE3_ALPHAS, gfc_text_rows

    zero = pd.DataFrame([{"alpha": a, "epsilon": e, "seed": s, "ari": 0.0}
                         for a in TABLE3_ALPHAS for e in (1000.0, 0.01) for s in range(3)])
    main = pd.DataFrame({"dataset": ["iris"] * 2, "method": ["GFC", "k-FED"],
                         "seconds": [1.0, 1.0], "epsilon": [1.0, 1.0]})
    rows = gfc_text_rows({}, main, "cpu", zero).set_index("id")
    for cid in ("gfc.text.synth.eps0.01.best_alpha", "gfc.text.synth.eps1000.best_alpha.min"):
        assert rows.loc[cid, "profile"] == "not run"
        assert "every multiplier scored ARI 0" in rows.loc[cid, "note"]
