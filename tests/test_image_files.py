"""The readers of CIFAR (binary and python versions), MNIST (IDX) and FEMNIST (LEAF json),
each on tiny files in the true format written here, and their wiring into
``load_image_dataset``."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import pickle
import struct

import numpy as np
import pytest

from topofl_lib.data import DatasetNotFoundError
from topofl_lib.data.image_files import (
    CIFAR_SOURCE,
    IMAGE_FILE_READERS,
    read_cifar10,
    read_cifar100,
    read_femnist,
    read_mnist,
)
from topofl_lib.data.locations import DATA_DIR_VARIABLE, display_path

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="topofl_lib.deep needs torch (the deep extra)")

CIFAR = {  # name: (reader, n_classes, binary folder, its files, python folder, its files)
    "cifar10": (read_cifar10, 10, "cifar-10-batches-bin",
                [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"],
                "cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]),
    "cifar100": (read_cifar100, 100, "cifar-100-binary", ["train.bin", "test.bin"],
                 "cifar-100-python", ["train", "test"]),
}


# -- writers of the true formats --------------------------------------------------------
def _cifar_batches(name: str, seed: int = 0, per_file: int = 2):
    """``[(pixels (n, 3072) uint8, fine labels, coarse labels)]``, one per file."""
    rng = np.random.default_rng(seed)
    n_classes, n_files = CIFAR[name][1], len(CIFAR[name][3])
    return [(rng.integers(0, 256, (per_file, 3072), dtype=np.uint8),
             rng.integers(0, n_classes, per_file), rng.integers(0, 20, per_file))
            for _ in range(n_files)]


def _write_cifar_binary(root, name: str, batches) -> None:
    sub, files = CIFAR[name][2], CIFAR[name][3]
    (root / sub).mkdir(parents=True, exist_ok=True)
    for file, (pixels, fine, coarse) in zip(files, batches, strict=True):
        labels = [fine] if name == "cifar10" else [coarse, fine]
        head = np.stack(labels, axis=1).astype(np.uint8)
        (root / sub / file).write_bytes(np.concatenate([head, pixels], axis=1).tobytes())


def _write_cifar_python(root, name: str, batches, protocol: int = 2) -> None:
    sub, files = CIFAR[name][4], CIFAR[name][5]
    (root / sub).mkdir(parents=True, exist_ok=True)
    for file, (pixels, fine, coarse) in zip(files, batches, strict=True):
        batch = {b"batch_label": file.encode(), b"data": pixels,
                 b"filenames": [b"img_%d.png" % i for i in range(len(fine))]}
        if name == "cifar10":
            batch[b"labels"] = [int(v) for v in fine]
        else:
            batch[b"fine_labels"], batch[b"coarse_labels"] = fine.tolist(), coarse.tolist()
        (root / sub / file).write_bytes(pickle.dumps(batch, protocol=protocol))


def _py2_str(b: bytes) -> bytes:
    """A Python 2 ``str`` as cPickle writes it (SHORT_BINSTRING)."""
    return b"U" + bytes([len(b)]) + b


def _py2_cifar_batch(pixels: np.ndarray, labels) -> bytes:
    """A batch as the published python version holds it: protocol 2 from Python 2's
    cPickle, its byte strings as ``str`` opcodes (not ``_codecs.encode``)."""
    n, m = pixels.shape
    dtype = (b"cnumpy\ndtype\n" + _py2_str(b"u1") + b"K\x00K\x01\x87R(K\x03" + _py2_str(b"|")
             + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb")
    array = (b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85"
             + _py2_str(b"b") + b"\x87R(K\x01M" + struct.pack("<H", n) + b"M"
             + struct.pack("<H", m) + b"\x86" + dtype + b"\x89T"
             + struct.pack("<i", pixels.size) + pixels.tobytes() + b"tb")
    listed = b"](" + b"".join(b"K" + bytes([int(v)]) for v in labels) + b"e"
    return (b"\x80\x02}(" + _py2_str(b"data") + array + _py2_str(b"labels") + listed
            + b"u.")


def _idx(arr: np.ndarray) -> bytes:
    head = bytes([0, 0, 0x08, arr.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape)
    return head + arr.astype(np.uint8).tobytes()


def _write_mnist(root, gz: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    arrays = {"train": (rng.integers(0, 256, (5, 28, 28)), np.arange(5) % 10),
              "t10k": (rng.integers(0, 256, (3, 28, 28)), np.array([9, 0, 4]))}
    (root / "mnist").mkdir(parents=True, exist_ok=True)
    for split, (images, labels) in arrays.items():
        for kind, arr in (("images-idx3", images), ("labels-idx1", labels)):
            data = _idx(arr)
            name = f"{split}-{kind}-ubyte" + (".gz" if gz else "")
            (root / "mnist" / name).write_bytes(gzip.compress(data) if gz else data)
    return arrays


def _femnist_user(rng, first_label: int, n: int):
    pixels = rng.integers(0, 256, (n, 784)) / 255.0
    return {"x": pixels.tolist(), "y": [first_label + i % 2 for i in range(n)]}


def _write_femnist(root, seed: int = 0, n_train: int = 6, n_test: int = 3):
    """Writer f0 writes labels 0/1 only, f1 labels 60/61 only (so a label tells its writer)."""
    rng = np.random.default_rng(seed)
    docs = {}
    for split, n in (("train", n_train), ("test", n_test)):
        users = {"f0_00": _femnist_user(rng, 0, n), "f1_07": _femnist_user(rng, 60, n)}
        docs[split] = {"users": list(users), "num_samples": [n, n], "user_data": users}
        (root / "femnist" / split).mkdir(parents=True, exist_ok=True)
        (root / "femnist" / split / f"all_data_0_niid_05_keep_0_{split}_9.json").write_text(
            json.dumps(docs[split]))
    return docs


# -- CIFAR ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CIFAR))
@pytest.mark.parametrize("version", ["binary", "python"])
def test_cifar_round_trips_pixels_and_fine_labels(tmp_path, name, version):
    batches = _cifar_batches(name)
    (_write_cifar_binary if version == "binary" else _write_cifar_python)(tmp_path, name, batches)
    out = CIFAR[name][0](tmp_path)
    train, test = batches[:-1], batches[-1]
    np.testing.assert_array_equal(out.X_train.reshape(-1, 3072),
                                  np.concatenate([p for p, _, _ in train]))
    np.testing.assert_array_equal(out.y_train, np.concatenate([y for _, y, _ in train]))
    np.testing.assert_array_equal(out.X_test.reshape(-1, 3072), test[0])
    np.testing.assert_array_equal(out.y_test, test[1])
    assert out.X_train.shape == (2 * len(train), 3, 32, 32) and out.X_train.dtype == np.uint8
    assert out.y_train.dtype == np.int64 and out.n_classes == CIFAR[name][1]
    assert out.pixel_max == 255.0 and out.writers_train is None


def test_cifar_images_are_channel_first(tmp_path):
    """A record's first 1024 pixels are the red plane, row by row."""
    batches = _cifar_batches("cifar10")
    pixels = batches[-1][0]
    pixels[0] = 0
    pixels[0, :1024] = 255          # record 0: all red
    pixels[0, 1024 + 32 * 5 + 7] = 17  # green plane, row 5, column 7
    _write_cifar_binary(tmp_path, "cifar10", batches)
    image = read_cifar10(tmp_path).X_test[0]
    assert image.shape == (3, 32, 32)
    assert (image[0] == 255).all() and image[1, 5, 7] == 17 and image[2].sum() == 0


def test_cifar_python_version_as_python2_wrote_it(tmp_path):
    batches = _cifar_batches("cifar10")
    (tmp_path / "cifar-10-batches-py").mkdir()
    for file, (pixels, labels, _) in zip(CIFAR["cifar10"][5], batches, strict=True):
        (tmp_path / "cifar-10-batches-py" / file).write_bytes(_py2_cifar_batch(pixels, labels))
    out = read_cifar10(tmp_path)
    np.testing.assert_array_equal(out.X_test.reshape(-1, 3072), batches[-1][0])
    np.testing.assert_array_equal(out.y_train, np.concatenate([y for _, y, _ in batches[:-1]]))


def test_cifar_reads_the_binary_version_first_then_the_python_version(tmp_path):
    binary, python = _cifar_batches("cifar10", seed=1), _cifar_batches("cifar10", seed=2)
    _write_cifar_binary(tmp_path, "cifar10", binary)
    _write_cifar_python(tmp_path, "cifar10", python, protocol=pickle.HIGHEST_PROTOCOL)
    np.testing.assert_array_equal(read_cifar10(tmp_path).y_test, binary[-1][1])
    (tmp_path / "cifar-10-batches-bin" / "data_batch_3.bin").unlink()  # binary incomplete
    np.testing.assert_array_equal(read_cifar10(tmp_path).y_test, python[-1][1])


def test_cifar_folder_may_be_the_version_folder_itself(tmp_path):
    batches = _cifar_batches("cifar100")
    _write_cifar_binary(tmp_path, "cifar100", batches)
    out = read_cifar100(tmp_path / "cifar-100-binary")
    np.testing.assert_array_equal(out.y_test, batches[-1][1])


@pytest.mark.parametrize("name", list(CIFAR))
def test_truncated_cifar_binary_file_is_refused_by_name(tmp_path, name):
    _write_cifar_binary(tmp_path, name, _cifar_batches(name))
    path = tmp_path / CIFAR[name][2] / CIFAR[name][3][0]
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match=rf"{path.name} holds \d+ bytes, not a whole number"):
        CIFAR[name][0](tmp_path)


def test_cifar_binary_label_out_of_range_is_refused(tmp_path):
    _write_cifar_binary(tmp_path, "cifar10", _cifar_batches("cifar10"))
    path = tmp_path / "cifar-10-batches-bin" / "test_batch.bin"
    data = bytearray(path.read_bytes())
    data[0] = 10
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"test_batch.bin: labels must lie in 0\.\.9"):
        read_cifar10(tmp_path)


def _doubled(depth: int) -> list:
    """A list of ``2**depth`` zeros in ``depth`` levels, each level two references to the
    one below: its pickle is a few hundred bytes."""
    x: list = [0]
    for _ in range(depth):
        x = [x, x]
    return x


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[: len(b) // 2], "test_batch is not a CIFAR-10 batch of plain data"),
    (lambda b: pickle.dumps({b"data": np.zeros((2, 5), np.uint8), b"labels": [0, 1]}),
     r"test_batch: b'data' must be uint8 of shape \(n, 3072\)"),
    (lambda b: pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}),
     "test_batch holds 2 images but labels of shape"),
    (lambda b: pickle.dumps([1, 2]), "test_batch is not a CIFAR-10 batch: expected a dict"),
    # a few hundred bytes that np.asarray took for 2**41 elements (MemoryError)
    (lambda b: pickle.dumps({b"data": _doubled(41), b"labels": [0]}),
     "test_batch: b'data' must be a uint8 array, got a list"),
    (lambda b: pickle.dumps({b"data": np.zeros((1, 3072), np.uint8), b"labels": _doubled(41)}),
     "test_batch: b'labels' must be a list of ints, got a list holding other values"),
])
def test_damaged_cifar_python_file_is_refused_by_name(tmp_path, damage, message):
    _write_cifar_python(tmp_path, "cifar10", _cifar_batches("cifar10"))
    path = tmp_path / "cifar-10-batches-py" / "test_batch"
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ValueError, match=message):
        read_cifar10(tmp_path)


class _Payload:
    """Pickles as a call of ``os.system``: loading it with ``pickle.load`` runs a command."""

    def __init__(self, marker) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_cifar_python_file_with_code_is_refused_and_nothing_runs(tmp_path):
    _write_cifar_python(tmp_path, "cifar10", _cifar_batches("cifar10"))
    marker = tmp_path / "ran"
    evil = {b"data": _Payload(marker), b"labels": [0, 1]}
    path = tmp_path / "cifar-10-batches-py" / "data_batch_2"
    path.write_bytes(pickle.dumps(evil, protocol=2))
    with pytest.raises(ValueError, match=r"data_batch_2 refers to (posix|nt|os)\.system"):
        read_cifar10(tmp_path)
    assert not marker.exists()


@pytest.mark.parametrize("name", list(CIFAR))
def test_missing_cifar_names_both_versions_folder_and_publisher(tmp_path, name):
    reader, _, bin_sub, bin_files, py_sub, py_files = CIFAR[name]
    (tmp_path / bin_sub).mkdir()
    (tmp_path / bin_sub / bin_files[0]).write_bytes(b"")  # an incomplete version is absent
    with pytest.raises(DatasetNotFoundError) as info:
        reader(tmp_path)
    text = str(info.value)
    for part in (bin_sub, py_sub, *bin_files, *py_files, str(tmp_path), CIFAR_SOURCE,
                 "binary version", "python version"):
        assert part in text
    label = "CIFAR-10" if name == "cifar10" else "CIFAR-100"
    assert info.value.not_run_note == f"not run: {label} not found in {display_path(tmp_path)}"


def test_data_folder_argument_wins_over_the_environment(tmp_path, monkeypatch):
    by_env, by_arg = _cifar_batches("cifar10", seed=3), _cifar_batches("cifar10", seed=4)
    _write_cifar_binary(tmp_path / "env", "cifar10", by_env)
    _write_cifar_binary(tmp_path / "arg", "cifar10", by_arg)
    monkeypatch.setenv(DATA_DIR_VARIABLE, str(tmp_path / "env"))
    np.testing.assert_array_equal(read_cifar10().X_test.reshape(-1, 3072), by_env[-1][0])
    np.testing.assert_array_equal(read_cifar10(tmp_path / "arg").X_test.reshape(-1, 3072),
                                  by_arg[-1][0])
    monkeypatch.setenv(DATA_DIR_VARIABLE, str(tmp_path / "nowhere"))
    with pytest.raises(DatasetNotFoundError, match="nowhere"):
        read_mnist()


# -- MNIST ------------------------------------------------------------------------------
@pytest.mark.parametrize("gz", [False, True])
def test_mnist_idx_round_trips_plain_and_gzipped(tmp_path, gz):
    arrays = _write_mnist(tmp_path, gz)
    out = read_mnist(tmp_path)
    np.testing.assert_array_equal(out.X_train[:, 0], arrays["train"][0])
    np.testing.assert_array_equal(out.y_train, arrays["train"][1])
    np.testing.assert_array_equal(out.X_test[:, 0], arrays["t10k"][0])
    np.testing.assert_array_equal(out.y_test, arrays["t10k"][1])
    assert out.X_train.shape == (5, 1, 28, 28) and out.X_train.dtype == np.uint8
    assert out.n_classes == 10 and out.pixel_max == 255.0


def test_mnist_prefers_the_plain_file_and_mixes_plain_and_gzipped(tmp_path):
    arrays = _write_mnist(tmp_path, gz=True)
    plain = np.array([1, 1, 1])
    (tmp_path / "mnist" / "t10k-labels-idx1-ubyte").write_bytes(_idx(plain))
    out = read_mnist(tmp_path / "mnist")
    np.testing.assert_array_equal(out.y_test, plain)
    np.testing.assert_array_equal(out.y_train, arrays["train"][1])


def test_missing_mnist_names_its_files_folder_and_publisher(tmp_path):
    _write_mnist(tmp_path, gz=False)
    (tmp_path / "mnist" / "t10k-images-idx3-ubyte").unlink()
    with pytest.raises(DatasetNotFoundError) as info:
        read_mnist(tmp_path)
    text = str(info.value)
    for part in ("MNIST not found in", str(tmp_path / "mnist"), "train-images-idx3-ubyte",
                 "t10k-images-idx3-ubyte (or t10k-images-idx3-ubyte.gz)",
                 "https://yann.lecun.com/exdb/mnist/", "ossci-datasets"):
        assert part in text


def test_damaged_mnist_files_are_refused_by_name(tmp_path):
    _write_mnist(tmp_path, gz=False)
    labels = tmp_path / "mnist" / "t10k-labels-idx1-ubyte"
    labels.write_bytes(_idx(np.array([1, 2])))  # 2 labels for 3 images
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte holds labels of shape"):
        read_mnist(tmp_path)
    labels.write_bytes(_idx(np.array([1, 2, 12])))
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte: labels must lie in 0\.\.9"):
        read_mnist(tmp_path)
    images = tmp_path / "mnist" / "train-images-idx3-ubyte"
    images.write_bytes(images.read_bytes()[:-5])
    with pytest.raises(ValueError, match="train-images-idx3-ubyte holds"):
        read_mnist(tmp_path)
    images.write_bytes(_idx(np.zeros((5, 14, 14))))
    with pytest.raises(ValueError, match="train-images-idx3-ubyte must hold uint8 images"):
        read_mnist(tmp_path)


# -- FEMNIST ----------------------------------------------------------------------------
def test_femnist_round_trips_pixels_labels_and_writers(tmp_path):
    docs = _write_femnist(tmp_path)
    out = read_femnist(tmp_path)
    assert out.writer_names == ("f0_00", "f1_07") and out.n_classes == 62
    for split, X, y, writers in (("train", out.X_train, out.y_train, out.writers_train),
                                 ("test", out.X_test, out.y_test, out.writers_test)):
        users = docs[split]["user_data"]
        np.testing.assert_array_equal(
            X.reshape(len(y), 784),
            np.array(users["f0_00"]["x"] + users["f1_07"]["x"], dtype=np.float32))
        np.testing.assert_array_equal(y, users["f0_00"]["y"] + users["f1_07"]["y"])
        n = len(users["f0_00"]["y"])
        np.testing.assert_array_equal(writers, [0] * n + [1] * n)
    assert out.X_train.shape == (12, 1, 28, 28) and out.X_train.dtype == np.float32
    assert out.pixel_max == 1.0


def test_femnist_writers_share_one_index_across_files_and_splits(tmp_path):
    _write_femnist(tmp_path)
    extra = {"users": ["f2_11"], "num_samples": [2],
             "user_data": {"f2_11": {"x": [[0.5] * 784, [1.0] * 784], "y": [61, 3]}}}
    (tmp_path / "femnist" / "test" / "b.json").write_text(json.dumps(extra))
    out = read_femnist(tmp_path)
    assert out.writer_names == ("f0_00", "f1_07", "f2_11")
    np.testing.assert_array_equal(out.writers_test, [0, 0, 0, 1, 1, 1, 2, 2])
    np.testing.assert_array_equal(out.y_test[-2:], [61, 3])


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(num_samples=[6, 5]), "'num_samples' .* does not match"),
    (lambda d: d["user_data"]["f1_07"]["x"][0].__setitem__(3, 1.5), "pixels outside"),
    (lambda d: d["user_data"]["f1_07"]["y"].__setitem__(0, 62), r"labels must lie in 0\.\.61"),
    (lambda d: d["user_data"]["f0_00"]["x"][0].pop(), "must hold 'x'|must have images of 784"),
    (lambda d: d["user_data"]["f0_00"]["y"].pop(), "has 6 images but 5 labels"),
    (lambda d: d["user_data"].pop("f1_07"), "every name in 'users' needs an entry"),
    (lambda d: d.pop("users"), "is not a LEAF json file"),
])
def test_damaged_femnist_files_are_refused_by_name(tmp_path, edit, message):
    docs = _write_femnist(tmp_path)
    path = tmp_path / "femnist" / "train" / "all_data_0_niid_05_keep_0_train_9.json"
    edit(docs["train"])
    path.write_text(json.dumps(docs["train"]))
    with pytest.raises(ValueError, match=message) as info:
        read_femnist(tmp_path)
    assert path.name in str(info.value)


def test_femnist_file_that_is_not_json_is_refused_by_name(tmp_path):
    _write_femnist(tmp_path)
    path = tmp_path / "femnist" / "test" / "all_data_0_niid_05_keep_0_test_9.json"
    path.write_text('{"users": ["f0_00"], "user_da')
    with pytest.raises(ValueError, match=f"{path.name} is not a LEAF json file"):
        read_femnist(tmp_path)


def test_missing_femnist_names_its_files_folder_and_publisher(tmp_path):
    _write_femnist(tmp_path)
    for path in (tmp_path / "femnist" / "test").iterdir():
        path.unlink()
    with pytest.raises(DatasetNotFoundError) as info:
        read_femnist(tmp_path)
    text = str(info.value)
    for part in ("FEMNIST not found in", str(tmp_path / "femnist"), "train/*.json",
                 "test/*.json", "https://leaf.cmu.edu/", "TalwalkarLab/leaf", "preprocess.sh"):
        assert part in text


# -- load_image_dataset -----------------------------------------------------------------
@needs_torch
def test_every_reader_is_a_dataset_of_load_image_dataset():
    from topofl_lib.deep.datasets import DATASETS, FILE_DATASETS, OFFLINE_DATASETS
    from topofl_lib.notebook_models import IMAGE_DATASETS

    assert set(FILE_DATASETS) == set(IMAGE_FILE_READERS) == {"cifar10", "cifar100", "mnist",
                                                             "femnist"}
    assert DATASETS == OFFLINE_DATASETS + FILE_DATASETS
    assert IMAGE_DATASETS == ("fashion_mnist", "mnist5k", "digits")  # ptopofl_deep's


@needs_torch
@pytest.mark.parametrize("name", list(CIFAR))
def test_load_cifar_standardises_each_channel(tmp_path, name):
    from topofl_lib.deep import load_image_dataset

    batches = _cifar_batches(name, per_file=12 if name == "cifar100" else 2)
    _write_cifar_binary(tmp_path, name, batches)
    d = load_image_dataset(name, folder=tmp_path)
    n_train = sum(len(y) for _, y, _ in batches[:-1])
    assert d.X_train.shape == (n_train, 3072) and d.X_train.dtype == np.float32
    assert d.X_test.shape == (len(batches[-1][1]), 3072) and d.X_test.dtype == np.float32
    assert d.image_shape == (3, 32, 32) and d.n_classes == CIFAR[name][1]
    channels = d.X_train.reshape(n_train, 3, -1)
    np.testing.assert_allclose(channels.mean(axis=(0, 2)), 0, atol=1e-4)
    np.testing.assert_allclose(channels.std(axis=(0, 2)), 1, atol=1e-4)
    raw = np.concatenate([p for p, _, _ in batches[:-1]]).reshape(n_train, 3, -1) / 255.0
    np.testing.assert_allclose(d.channel_std, raw.std(axis=(0, 2)), rtol=1e-5)
    assert d.pixel_std == pytest.approx(np.mean(d.channel_std))
    np.testing.assert_array_equal(d.y_test, batches[-1][1])
    assert d.writers_train is None and d.writers_test is None


@needs_torch
def test_load_mnist_and_the_data_folder_variable(tmp_path, monkeypatch):
    from topofl_lib.deep import load_image_dataset

    arrays = _write_mnist(tmp_path / "env", gz=True)
    monkeypatch.setenv(DATA_DIR_VARIABLE, str(tmp_path / "env"))
    d = load_image_dataset("mnist")
    assert d.X_train.shape == (5, 784) and d.image_shape == (1, 28, 28) and d.n_classes == 10
    np.testing.assert_array_equal(d.y_test, arrays["t10k"][1])
    assert abs(d.X_train.mean()) < 1e-4 and d.channel_std == (d.pixel_std,)
    with pytest.raises(DatasetNotFoundError, match="MNIST not found"):
        load_image_dataset("mnist", folder=tmp_path / "elsewhere")
    with pytest.raises(TypeError, match="folder must be a path"):
        load_image_dataset("mnist", folder=3)


@needs_torch
def test_load_femnist_keeps_each_images_writer_in_a_subset(tmp_path):
    from topofl_lib.deep import load_image_dataset

    _write_femnist(tmp_path, n_train=30, n_test=3)
    full = load_image_dataset("femnist", folder=tmp_path)
    assert full.n_classes == 62 and full.image_shape == (1, 28, 28)
    assert full.writer_names == ("f0_00", "f1_07")
    np.testing.assert_array_equal(full.writers_train, [0] * 30 + [1] * 30)
    sub = load_image_dataset("femnist", n_train=20, folder=tmp_path, random_state=1)
    assert sub.X_train.shape == (20, 784) and sub.writers_train.shape == (20,)
    np.testing.assert_array_equal(sub.writers_train, (sub.y_train >= 60).astype(int))
    np.testing.assert_array_equal(np.bincount(sub.y_train, minlength=62)[[0, 1, 60, 61]],
                                  [5, 5, 5, 5])
    np.testing.assert_array_equal(sub.writers_test, (sub.y_test >= 60).astype(int))


@needs_torch
@pytest.mark.parametrize("name", ["cifar10", "cifar100", "mnist", "femnist"])
def test_load_image_dataset_names_a_missing_dataset(tmp_path, name):
    from topofl_lib.deep import load_image_dataset

    with pytest.raises(DatasetNotFoundError) as info:
        load_image_dataset(name, folder=tmp_path)
    assert str(tmp_path) in str(info.value) and "Nothing is downloaded" in str(info.value)
