"""Data-only files: every kind of value round-trips; nothing else is written or read."""

from __future__ import annotations

import io
import math
import zipfile
from collections import OrderedDict

import numpy as np
import pandas as pd
import pytest
import torch

from topofl_lib import storage
from topofl_lib.storage import StoredDataError


def _roundtrip(tmp_path, value):
    return storage.load(storage.dump(tmp_path / "v.npz", value))


def test_plain_values_round_trip_with_their_types(tmp_path):
    value = {"none": None, "t": True, "i": 2**70, "f": 0.1, "nan": math.nan,
             "inf": -math.inf, "s": "é", "b": b"\x00\xff", "tuple": (1, (2, 3)),
             "set": {3, 1}, "frozen": frozenset({"a"}), "list": [1.5, [None]],
             "odict": OrderedDict([("z", 1), ("a", 2)]), 3: "int key", ("a", 1): "tuple key",
             "__dunder": "a key that looks like a tag"}
    back = _roundtrip(tmp_path, value)
    assert math.isnan(back.pop("nan")) and math.isnan(value.pop("nan"))
    assert back == value
    assert type(back["tuple"]) is tuple and type(back["odict"]) is OrderedDict
    assert list(back["odict"]) == ["z", "a"] and type(back["i"]) is int


def test_numpy_pandas_and_torch_round_trip_bit_for_bit(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"method": ["FedAvg", "FedTopo"], "seed": np.array([0, 1]),
                          "auc": [np.nan, 0.25]})
    value = {"a": rng.normal(size=(3, 4)).astype(np.float32), "u": np.array(["x", "yz"]),
             "scalar": np.float64(np.nan), "i": np.int64(-3), "frame": frame,
             "indexed": frame.set_index("seed"), "t": torch.arange(4.0),
             "p": torch.nn.Parameter(torch.ones(2)), "dev": torch.device("cpu")}
    back = _roundtrip(tmp_path, value)
    np.testing.assert_array_equal(back["a"], value["a"])
    assert back["a"].dtype == np.float32 and back["u"].tolist() == ["x", "yz"]
    assert type(back["scalar"]) is np.float64 and np.isnan(back["scalar"])
    assert type(back["i"]) is np.int64 and back["i"] == -3
    pd.testing.assert_frame_equal(back["frame"], frame, check_exact=True)
    pd.testing.assert_frame_equal(back["indexed"].reset_index(drop=True),
                                  frame.drop(columns="seed"), check_exact=True)
    assert torch.equal(back["t"], value["t"]) and isinstance(back["p"], torch.nn.Parameter)
    assert back["dev"] == torch.device("cpu")


@pytest.mark.parametrize("value, where", [
    (object(), "value"),
    ({"model": lambda x: x}, r"value\['model'\]"),
    ([np.array([1, None], dtype=object)], r"value\[0\]"),
    ({"frame": pd.DataFrame({"c": [1, "a"]})}, "column 'c'"),
])
def test_non_data_is_refused_before_writing(tmp_path, value, where):
    with pytest.raises(TypeError, match=where):
        storage.dump(tmp_path / "v.npz", value)
    assert not list(tmp_path.iterdir())


def test_registered_classes_only(tmp_path):
    from topofl_lib.federated import FedAvg
    from topofl_lib.federated.local import LogisticLearner

    est = FedAvg(n_rounds=2, random_state=3)
    est.learner_, est.coef_ = LogisticLearner(C=0.5), np.arange(3.0)
    back = _roundtrip(tmp_path, est)
    assert type(back) is FedAvg and back.get_params() == est.get_params()
    assert back.learner_.C == 0.5 and np.array_equal(back.coef_, est.coef_)

    class Unregistered:
        pass

    with pytest.raises(TypeError, match="register_storable"):
        storage.dump(tmp_path / "u.npz", Unregistered())


@pytest.mark.parametrize("doc, message", [
    ('{"format":"other/1","value":1}', "not a topofl-data/1 document"),
    ('{"format":"topofl-data/1","value":{"__object__":"os:system","state":{}}}',
     "not a registered storable class"),
    ('{"format":"topofl-data/1","value":{"__array__":7}}', "array a7 is referenced"),
    ('{"format":"topofl-data/1","value":{"__scalar__":"|O","value":1}}', "object dtype"),
    ('{"format":"topofl-data/1","value":{"__float__":"1e3"}}', "not a float"),
    ('{"format":"topofl-data/1","value":{"__eval__":"1"}}', "unknown tag"),
    ('not json', "JSONDecodeError"),
])
def test_crafted_documents_are_refused_naming_the_file(tmp_path, doc, message):
    path = tmp_path / "v.npz"
    with open(path, "wb") as fh:
        np.savez(fh, record=np.array(doc))
    with pytest.raises(StoredDataError, match=rf"v\.npz.*{message}"):
        storage.load(path)


def test_missing_and_foreign_files(tmp_path):
    with pytest.raises(StoredDataError, match="no such file"):
        storage.load(tmp_path / "absent.npz")
    np.savez(tmp_path / "plain.npz", x=np.arange(3))
    with pytest.raises(StoredDataError, match="no record member"):
        storage.load(tmp_path / "plain.npz")


def _npy_bytes(shape, dtype="<f8", body=b"", version=(1, 0)) -> bytes:
    """A .npy member whose header declares ``shape`` but whose data is ``body``."""
    buf = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    if version == (1, 0):
        np.lib.format.write_array_header_1_0(buf, header)
    else:
        np.lib.format.write_array_header_2_0(buf, header)
    return buf.getvalue() + body


def _archive(path, members, compression=zipfile.ZIP_STORED):
    record = io.BytesIO()
    np.save(record, np.array('{"format":"topofl-data/1","value":1}'))
    with zipfile.ZipFile(path, "w", compression) as zf:
        zf.writestr("record.npy", record.getvalue())
        for name, data in members.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize("members, compression, message", [
    # an array header declaring 2**40 float64 (8 TiB) over 8 bytes: before the check,
    # numpy allocated the declared array (MemoryError, or 8 TiB of address space)
    ({"a0.npy": _npy_bytes((2**40,), body=b"\0" * 8)}, zipfile.ZIP_STORED,
     r"a0\.npy.*2\*\*40|a0\.npy.*1099511627776 x float64"),
    # the same with the version 2.0 header
    ({"a0.npy": _npy_bytes((2**20, 2**20), body=b"\0" * 8, version=(2, 0))},
     zipfile.ZIP_STORED, r"a0\.npy.*1099511627776 x float64"),
    ({"code.py": b"import os"}, zipfile.ZIP_STORED, r"'code\.py' is not a \.npy array"),
    ({"a0.npy": b"\x93NUMPY\x01\x00\xff\xff"}, zipfile.ZIP_STORED, "bad array header"),
    ({"a0.npy": _npy_bytes((3,), dtype="|O", body=b"\0" * 24)}, zipfile.ZIP_STORED,
     r"'a0\.npy' is an object array"),
])
def test_hostile_archives_are_refused_before_allocating(tmp_path, members, compression,
                                                        message):
    path = _archive(tmp_path / "h.npz", members, compression)
    assert path.stat().st_size < 2**22  # what is refused is declared, never held
    with pytest.raises(StoredDataError, match=rf"h\.npz: .*({message})"):
        storage.load(path)


def test_a_zip_bomb_is_refused_from_its_declared_size(tmp_path, monkeypatch):
    """A member that inflates past the bound (zeros compress 1000-fold) is refused from
    the zip directory's declared size; the bound is lowered so the test stays small."""
    monkeypatch.setattr(storage, "MAX_STORED_BYTES", 2**20)
    bomb = {"a0.npy": _npy_bytes((2**18,), body=b"\0" * 8 * 2**18)}
    path = _archive(tmp_path / "b.npz", bomb, zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 2**14
    with pytest.raises(StoredDataError, match=r"b\.npz: .*declare \d+ bytes, more than "
                                              r"MAX_STORED_BYTES \(1048576\)"):
        storage.load(path)


def test_too_many_members_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "MAX_STORED_MEMBERS", 3)
    members = {f"a{i}.npy": _npy_bytes((1,), body=b"\0" * 8) for i in range(3)}
    with pytest.raises(StoredDataError, match=r"4 members, more than MAX_STORED_MEMBERS"):
        storage.load(_archive(tmp_path / "m.npz", members))


def test_a_stored_value_still_round_trips_after_the_checks(tmp_path):
    value = {"a": np.arange(12.0).reshape(3, 4), "s": np.array(["x", "yz"]),
             "e": np.zeros((0, 5)), "b": np.array([True, False])}
    back = storage.load(storage.dump(tmp_path / "ok.npz", value))
    for key, arr in value.items():
        np.testing.assert_array_equal(back[key], arr)
        assert back[key].dtype == arr.dtype
