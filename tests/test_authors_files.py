"""The authors' federations (topofl_lib.data.authors_files), read from format-true files.

Each test writes a pickle of the published files' layout (a dict: ``full_data``,
``true_label``, ``num_clusters``, ``kmeans_loss``, ``client_i``), pins its digest in
place of the published one, and reads it back through the loader.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle

import numpy as np
import pytest

from topofl_lib.data import authors_files as af
from topofl_lib.data.locations import DatasetNotFoundError


def _content(n_clients=4, rng=None, permute=False) -> dict:
    rng = rng or np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 0.1, size=(30, 2))
                        for c in (0.0, 5.0, 10.0)]).astype(np.float32)
    y = np.repeat([0.0, 1.0, 2.0], 30)
    order = rng.permutation(len(X)) if permute else np.arange(len(X))
    parts = np.array_split(order, n_clients)
    return {"full_data": X, "num_clusters": 3, "true_label": y,
            "kmeans_loss": 12.5, **{f"client_{i}": X[p] for i, p in enumerate(parts)}}


def _install(tmp_path, monkeypatch, content, name="mnist100fed") -> bytes:
    data = pickle.dumps(content, protocol=4)
    spec = dataclasses.replace(af.AUTHORS_FILES[name], sha256=hashlib.sha256(data).hexdigest(),
                               shape=content["full_data"].shape, n_clusters=3,
                               n_clients=sum(k.startswith("client_") for k in content))
    monkeypatch.setitem(af.AUTHORS_FILES, name, spec)
    folder = tmp_path / af.SUBFOLDER
    folder.mkdir(exist_ok=True)
    (folder / spec.filename).write_bytes(data)
    return data


@pytest.mark.parametrize("permute", [False, True], ids=["slices", "permuted"])
def test_clients_are_matched_to_the_records_row_by_row(tmp_path, monkeypatch, permute):
    content = _content(permute=permute)
    _install(tmp_path, monkeypatch, content)
    fed = af.load_authors_federation("mnist100fed", tmp_path)
    assert fed.X.dtype == np.float64 and fed.X.shape == (90, 2)
    np.testing.assert_array_equal(fed.y, np.repeat([0, 1, 2], 30))
    assert sorted(np.concatenate(fed.clients).tolist()) == list(range(90))
    for i, idx in enumerate(fed.clients):
        np.testing.assert_array_equal(fed.X[idx], content[f"client_{i}"])
    assert fed.kmeans_loss == 12.5


def test_a_copy_that_is_not_the_published_one_is_refused_unread(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch, _content())
    path = tmp_path / af.SUBFOLDER / "mnist100fed.pkl"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1  # one bit of one record
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"{path} has SHA-256 .* not the published .*refused"):
        af.load_authors_federation("mnist100fed", tmp_path)


def test_a_file_that_refers_to_code_is_refused_by_the_unpickler(tmp_path, monkeypatch):
    content = _content()
    content["hook"] = print  # a global that is not an array constructor
    _install(tmp_path, monkeypatch, content)
    with pytest.raises(pickle.UnpicklingError, match="builtins.print, which is not plain data"):
        af.load_authors_federation("mnist100fed", tmp_path)


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c.update(true_label=["a"] * 90), "'true_label' is a list holding values"),
    (lambda c: c.update(true_label=np.zeros((90, 1))), "'true_label' is not a 1-d numeric"),
    (lambda c: c.update(full_data=np.full((90, 2), np.nan)), "of finite values"),
    (lambda c: c.update(true_label=np.repeat([0.0, 1.0], 45)), "2 classes in 'true_label'"),
    (lambda c: c.update(client_0=c["client_0"] + 1.0), "not the records of 'full_data'"),
    (lambda c: c.pop("kmeans_loss"), "'kmeans_loss' is not a number"),
    (lambda c: c.update(kmeans_loss=[1.0] * 10), "'kmeans_loss' is not a number"),
])
def test_a_file_that_does_not_hold_what_the_published_one_holds_is_named(
        tmp_path, monkeypatch, change, message):
    content = _content()
    change(content)
    _install(tmp_path, monkeypatch, content)
    with pytest.raises(ValueError, match=message) as exc:
        af.load_authors_federation("mnist100fed", tmp_path)
    assert "mnist100fed.pkl" in str(exc.value)


def test_a_missing_client_is_named(tmp_path, monkeypatch):
    content = _content()
    _install(tmp_path, monkeypatch, content)
    spec = af.AUTHORS_FILES["mnist100fed"]
    monkeypatch.setitem(af.AUTHORS_FILES, "mnist100fed",
                        dataclasses.replace(spec, n_clients=5))
    with pytest.raises(ValueError, match="'client_4' is not a 2-d numeric array"):
        af.load_authors_federation("mnist100fed", tmp_path)


def test_a_file_larger_than_the_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch, _content())
    monkeypatch.setattr(af, "MAX_AUTHORS_FILE_BYTES", 100)
    with pytest.raises(ValueError, match="more than MAX_AUTHORS_FILE_BYTES"):
        af.load_authors_federation("mnist100fed", tmp_path)


def test_a_missing_file_says_where_it_is_published(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="Topological_Federated_Clustering/blob/"
                                                   "5d2f205bb4ad16cccdff93bbbf6172445f10bb38"):
        af.load_authors_federation("mnist1000fed", tmp_path)
    assert not af.authors_file_present("mnist1000fed", tmp_path)


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="name: unknown authors' file 'mnist'"):
        af.load_authors_federation("mnist")


def test_the_published_files_are_pinned_with_their_commits():
    for spec in af.AUTHORS_FILES.values():
        assert len(spec.sha256) == 64 and len(spec.commit) == 40
        assert spec.commit[:7] in spec.note and spec.sha256[:16] in spec.note
