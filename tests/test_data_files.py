"""The data-folder rules, the missing-dataset error, the IDX reader and the restricted unpickler."""

import gzip
import pickle

import numpy as np
import pytest

from topofl_lib.data import DatasetNotFoundError, data_dir, read_idx, restricted_unpickle
from topofl_lib.data.file_formats import PANDAS_GLOBALS
from topofl_lib.data.locations import DATA_DIR_VARIABLE, dataset_folder, display_path


def test_data_dir_argument_then_variable_then_default(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_VARIABLE, str(tmp_path / "env"))
    assert data_dir(tmp_path / "arg") == (tmp_path / "arg").resolve()
    assert data_dir() == (tmp_path / "env").resolve()
    monkeypatch.delenv(DATA_DIR_VARIABLE)
    assert data_dir() == (data_dir("~") / "topofl_data")


@pytest.mark.parametrize("bad, error", [(3, TypeError), ("  ", ValueError)])
def test_data_dir_refuses_bad_folders(bad, error):
    with pytest.raises(error, match="folder"):
        data_dir(bad)


def test_dataset_folder_accepts_the_data_folder_or_the_dataset_folder(tmp_path):
    assert dataset_folder("cifar", tmp_path) == tmp_path.resolve() / "cifar"
    assert dataset_folder("cifar", tmp_path / "cifar") == tmp_path.resolve() / "cifar"


def test_missing_dataset_message_names_files_folder_and_source(tmp_path):
    err = DatasetNotFoundError("CIFAR-10", tmp_path, ["data_batch_1.bin"], "https://x.org/c")
    assert isinstance(err, FileNotFoundError)
    text = str(err)
    for part in ("CIFAR-10 not found in", str(tmp_path), "data_batch_1.bin", "https://x.org/c",
                 DATA_DIR_VARIABLE):
        assert part in text
    assert err.not_run_note == f"not run: CIFAR-10 not found in {display_path(tmp_path)}"
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == text and again.not_run_note == err.not_run_note


def test_display_path_writes_home_as_tilde(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert display_path(tmp_path / "a" / "b") == "~/a/b"
    assert display_path("/elsewhere/x") == "/elsewhere/x"


def _idx_bytes(arr: np.ndarray, code: int) -> bytes:
    head = bytes([0, 0, code, arr.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape)
    return head + arr.tobytes()


@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_round_trips_bytes_and_big_endian_ints(tmp_path, gz):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    ints = np.array([1, -2, 70000], dtype=">i4")
    for name, arr, code in (("img-idx3-ubyte", images, 0x08), ("int-idx1", ints, 0x0C)):
        path = tmp_path / (name + (".gz" if gz else ""))
        path.write_bytes(gzip.compress(_idx_bytes(arr, code)) if gz else _idx_bytes(arr, code))
        out = read_idx(path)
        np.testing.assert_array_equal(out, arr)
        assert out.dtype.byteorder in "=|"


def test_read_idx_refuses_other_files(tmp_path):
    bad = tmp_path / "x"
    bad.write_bytes(b"PK\x03\x04rest")
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(bad)
    short = tmp_path / "short"
    short.write_bytes(_idx_bytes(np.zeros((2, 2), np.uint8), 0x08)[:-1])
    with pytest.raises(ValueError, match="needs 16"):
        read_idx(short)


def test_read_idx_bounds_the_header_before_reading(tmp_path):
    """Dimensions whose product passes 2**64 (it used to wrap to 0 and pass the size
    check), a declared size above the cap, a cut header, a gzip stream that inflates past
    its header and a damaged gzip stream are all refused, naming the file."""
    wrap = tmp_path / "wrap-idx3-ubyte"
    wrap.write_bytes(bytes([0, 0, 0x08, 4]) + (2**16).to_bytes(4, "big") * 4)  # 2**64 bytes
    with pytest.raises(ValueError, match=rf"{wrap}: its IDX header .* more than MAX_IDX_BYTES"):
        read_idx(wrap)
    big = tmp_path / "big-idx1-ubyte"
    big.write_bytes(bytes([0, 0, 0x0E, 1]) + (2**31).to_bytes(4, "big"))  # 16 GiB of f8
    with pytest.raises(ValueError, match="17179869184 bytes, more than MAX_IDX_BYTES"):
        read_idx(big)
    cut = tmp_path / "cut-idx3-ubyte"
    cut.write_bytes(bytes([0, 0, 0x08, 3, 0, 0]))
    with pytest.raises(ValueError, match=f"{cut} holds 6 bytes; .* 3 dimensions and needs 16"):
        read_idx(cut)
    bomb = tmp_path / "bomb-idx1-ubyte.gz"  # declares 4 bytes, inflates to 64 MB
    bomb.write_bytes(gzip.compress(bytes([0, 0, 0x08, 1, 0, 0, 0, 4]) + bytes(2**26)))
    with pytest.raises(ValueError, match=f"{bomb} holds more than 12 bytes; .* needs 12"):
        read_idx(bomb)
    damaged = tmp_path / "damaged-idx1-ubyte.gz"
    damaged.write_bytes(gzip.compress(_idx_bytes(np.arange(50, dtype=np.uint8), 0x08))[:-12])
    with pytest.raises(ValueError, match=f"{damaged} is damaged"):
        read_idx(damaged)


def test_restricted_unpickle_rebuilds_arrays_and_frames():
    batch = {b"data": np.arange(12, dtype=np.uint8).reshape(2, 6), b"labels": [1, 2]}
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        out = restricted_unpickle(pickle.dumps(batch, protocol=protocol))
        np.testing.assert_array_equal(out[b"data"], batch[b"data"])
        assert out[b"labels"] == [1, 2]
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"site": ["a", "b"], "age": [30, 40], "x": [0.5, np.nan]})
    pd.testing.assert_frame_equal(restricted_unpickle(pickle.dumps(frame), PANDAS_GLOBALS), frame)


class _Evil:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_restricted_unpickle_refuses_code(capsys):
    with pytest.raises(pickle.UnpicklingError, match=r"evil.pkl refers to builtins\.print"):
        restricted_unpickle(pickle.dumps(_Evil()), source="evil.pkl")
    assert capsys.readouterr().out == ""
