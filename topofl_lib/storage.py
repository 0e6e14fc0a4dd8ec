"""Data-only files: values, arrays, tables and fitted estimators, never code.

A file written by :func:`dump` is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays):
one member, ``record.npy``, holds a JSON document describing the value, and every array
of the value is a member of its own. :func:`load` reads it with
``numpy.load(allow_pickle=False)`` and :func:`json.loads`, so opening a file can never
run code, whatever the file holds: a pickle, an object array or a crafted document is
refused with :class:`StoredDataError`, which names the file and what is wrong.

What can be stored:

- ``None``, ``bool``, ``int``, ``float`` (NaN and infinities included), ``str``,
  ``bytes``;
- ``list``, ``tuple``, ``set``, ``frozenset``, ``dict`` (any keys of these kinds),
  ``OrderedDict``;
- NumPy arrays of numbers, booleans or strings (not ``object``) and NumPy scalars;
- pandas ``DataFrame`` of such columns (``object`` columns holding only strings);
- torch tensors and devices (torch is imported only when a file holds one);
- instances of the classes registered with :func:`register_storable` (every method
  registered with :func:`topofl_lib.core.register_method` is), stored as their
  attributes (``vars``), or as what their ``to_data()`` returns when they define it
  (and are rebuilt by their classmethod ``from_data(state)``). A class name in a file
  is looked up in that registry only; a name inside :mod:`topofl_lib` that is not
  registered yet imports its module (ours) first. Nothing else is ever imported.

Anything else is refused at :func:`dump` with a ``TypeError`` naming where it sits in
the value, before anything is written.
"""

from __future__ import annotations

import base64
import importlib
import io
import json
import math
import os
import tempfile
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from .core.registry import METHODS

__all__ = ["FORMAT", "MAX_STORED_BYTES", "MAX_STORED_MEMBERS", "StoredDataError", "dump",
           "load", "register_storable"]

#: Written into every file; a file of another format is refused.
FORMAT = "topofl-data/1"

_RECORD = "record"
_STORABLE: dict[str, type] = {}


#: The most bytes the arrays of one stored file may declare (1 GiB); a larger
#: declaration is refused before anything is allocated.
MAX_STORED_BYTES = 2**30
#: The most arrays one stored file may hold.
MAX_STORED_MEMBERS = 100_000


class StoredDataError(ValueError):
    """A stored file is missing, damaged, or holds something that is not plain data."""


def register_storable(cls: type) -> type:
    """Allow instances of ``cls`` in data files (usable as a class decorator).

    Parameters
    ----------
    cls : type
        A class whose instances are rebuilt from their attributes (or from the state
        its ``to_data``/``from_data`` pair gives).

    Returns
    -------
    type
        ``cls``.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_storable takes a class, got {type(cls).__name__}")
    _STORABLE[_class_name(cls)] = cls
    return cls


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _storable(cls: type) -> bool:
    """``cls`` is registered storable, or is the class of a registered method."""
    if _STORABLE.get(_class_name(cls)) is cls:
        return True
    method = getattr(cls, "name", None)
    if not isinstance(method, str) or method not in METHODS:
        return False
    try:
        return METHODS.get(method) is cls
    except (ValueError, ImportError):
        return False


def _lookup(name: str) -> type:
    """The storable class called ``name`` (``module:qualname``); imports nothing but a
    module of :mod:`topofl_lib` itself."""
    if not isinstance(name, str) or name.count(":") != 1:
        raise StoredDataError(f"malformed class name {name!r}")
    if name in _STORABLE:
        return _STORABLE[name]
    for cls in METHODS.registered().values():
        if isinstance(cls, type) and _class_name(cls) == name:
            return cls
    module, qualname = name.split(":")
    if module.split(".")[0] == "topofl_lib" and "__main__" not in module.split("."):
        try:  # our own module: importing it registers its classes
            obj = importlib.import_module(module)
        except ImportError as exc:
            raise StoredDataError(f"class {name} cannot be imported: {exc}") from None
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        if isinstance(obj, type) and _class_name(obj) == name and _storable(obj):
            return obj
    raise StoredDataError(f"class {name} is not a registered storable class")


# -- encoding ------------------------------------------------------------------------

class _Encoder:
    """Turns a value into a JSON tree, collecting its arrays."""

    def __init__(self):
        self.arrays: list[np.ndarray] = []

    def array(self, arr: np.ndarray, where: str) -> dict:
        if arr.dtype.kind not in "biufcSUMm" or arr.dtype.hasobject:
            raise TypeError(f"{where}: arrays of dtype {arr.dtype} cannot be stored as data")
        self.arrays.append(np.ascontiguousarray(arr))
        return {"__array__": len(self.arrays) - 1}

    def pairs(self, items, where: str) -> list:
        return [[self(k, f"{where} key"), self(v, f"{where}[{k!r}]")] for k, v in items]

    def __call__(self, obj: Any, where: str = "value"):  # noqa: C901 (one case per type)
        if isinstance(obj, np.generic):  # first: np.float64 is a float too
            if obj.dtype.hasobject:
                raise TypeError(f"{where}: a NumPy object scalar cannot be stored as data")
            return {"__scalar__": obj.dtype.str, "value": self(obj.item(), where)}
        if obj is None or type(obj) in (bool, str, int):
            return obj
        if type(obj) is float:
            return obj if math.isfinite(obj) else {"__float__": repr(obj)}
        if isinstance(obj, np.ndarray):
            return self.array(obj, where)
        if isinstance(obj, bytes):
            return {"__bytes__": base64.b64encode(obj).decode("ascii")}
        if isinstance(obj, OrderedDict):
            return {"__odict__": self.pairs(obj.items(), where)}
        if isinstance(obj, dict):
            if all(isinstance(k, str) and not k.startswith("__") for k in obj):
                return {k: self(v, f"{where}[{k!r}]") for k, v in obj.items()}
            return {"__dict__": self.pairs(obj.items(), where)}
        if isinstance(obj, (list, tuple, set, frozenset)):
            items = [self(x, f"{where}[{i}]") for i, x in enumerate(
                sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj)]
            return items if type(obj) is list else {f"__{type(obj).__name__}__": items}
        return self.other(obj, where)

    def other(self, obj: Any, where: str):
        module = type(obj).__module__
        if module.startswith("pandas") and type(obj).__name__ == "DataFrame":
            return self.frame(obj, where)
        if module.startswith("torch"):
            return self.torch(obj, where)
        if not _storable(type(obj)):
            raise TypeError(f"{where}: a {type(obj).__module__}.{type(obj).__qualname__} "
                            "cannot be stored as data (register its class with "
                            "topofl_lib.storage.register_storable)")
        state = obj.to_data() if hasattr(obj, "to_data") else vars(obj)
        return {"__object__": _class_name(type(obj)), "state": self(state, where)}

    def frame(self, df, where: str) -> dict:
        columns = []
        for name in df.columns:
            col = df[name].to_numpy()
            if col.dtype.hasobject:
                if not all(isinstance(x, str) for x in col):
                    raise TypeError(f"{where}: column {name!r} holds objects other than str")
                col = col.astype(str)
            columns.append([self(name, where), str(df[name].dtype),
                            self.array(col, f"{where}[{name!r}]")])
        index = df.index
        plain = type(index).__name__ == "RangeIndex" and index.start == 0 and index.step == 1
        return {"__dataframe__": columns,
                "index": None if plain else self.array(np.asarray(index), f"{where}.index")}

    def torch(self, obj, where: str) -> dict:
        import torch

        if isinstance(obj, torch.device):
            return {"__device__": str(obj)}
        if isinstance(obj, torch.Tensor):
            arr = obj.detach().cpu().numpy()
            return {"__tensor__": self.array(arr, where),
                    "parameter": isinstance(obj, torch.nn.Parameter),
                    "requires_grad": bool(obj.requires_grad)}
        raise TypeError(f"{where}: a {type(obj).__qualname__} cannot be stored as data")


# -- decoding ------------------------------------------------------------------------

class _Decoder:
    """Rebuilds a value from its JSON tree and the archive's arrays."""

    def __init__(self, arrays: dict[str, np.ndarray]):
        self.arrays = arrays

    def array(self, ref) -> np.ndarray:
        name = f"a{ref.get('__array__') if isinstance(ref, dict) else ref}"
        if name not in self.arrays:
            raise StoredDataError(f"array {name} is referenced but not stored")
        return self.arrays[name]

    def __call__(self, node):  # noqa: C901 (one case per tag)
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self(x) for x in node]
        if not isinstance(node, dict):
            raise StoredDataError(f"unexpected JSON value {node!r:.60}")
        tags = [k for k in node if k.startswith("__")]
        if not tags:
            return {k: self(v) for k, v in node.items()}
        tag = tags[0]
        value = node[tag]
        if tag == "__array__":
            return self.array(node)
        if tag == "__float__":
            if value not in ("nan", "inf", "-inf"):
                raise StoredDataError(f"not a float: {value!r}")
            return float(value)
        if tag == "__scalar__":
            return np.dtype(_plain_dtype(value)).type(self(node["value"]))
        if tag == "__bytes__":
            return base64.b64decode(value.encode("ascii"), validate=True)
        if tag in ("__dict__", "__odict__"):
            items = [(_hashable(self(k)), self(v)) for k, v in value]
            return OrderedDict(items) if tag == "__odict__" else dict(items)
        if tag in ("__tuple__", "__set__", "__frozenset__"):
            kind = {"__tuple__": tuple, "__set__": set, "__frozenset__": frozenset}[tag]
            return kind(_hashable(self(x)) if kind is not tuple else self(x) for x in value)
        if tag == "__dataframe__":
            return self.frame(node)
        if tag in ("__tensor__", "__device__"):
            return self.torch(node, tag)
        if tag == "__object__":
            return self.instance(value, node.get("state"))
        raise StoredDataError(f"unknown tag {tag!r}")

    def frame(self, node):
        import pandas as pd

        data = {}
        for name, dtype, ref in node["__dataframe__"]:
            col = self.array(ref)
            data[self(name)] = col.astype(object) if dtype == "object" else col
        index = None if node.get("index") is None else self.array(node["index"])
        return pd.DataFrame(data, index=index)

    def torch(self, node, tag: str):
        import torch

        if tag == "__device__":
            return torch.device(node[tag])
        tensor = torch.from_numpy(self.array(node[tag]).copy())
        if node.get("parameter"):
            return torch.nn.Parameter(tensor, requires_grad=bool(node.get("requires_grad")))
        return tensor.requires_grad_(bool(node.get("requires_grad")))

    def instance(self, name: str, state):
        cls = _lookup(name)
        state = self(state)
        if hasattr(cls, "from_data"):
            return cls.from_data(state)
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            raise StoredDataError(f"the attributes of a {name} are not a dict of names")
        obj = cls.__new__(cls)
        obj.__dict__.update(state)
        return obj


def _plain_dtype(text) -> str:
    dtype = np.dtype(text)
    if dtype.hasobject:
        raise StoredDataError(f"object dtype {text!r}")
    return text


def _hashable(x):
    if isinstance(x, list):
        return tuple(_hashable(v) for v in x)
    return x


# -- files ---------------------------------------------------------------------------

def dump(path, obj) -> Path:
    """Write ``obj`` to ``path`` as a data-only file, atomically.

    The file is written to a temporary name in the same folder, synced, and renamed,
    so a reader sees the old file or the new one, never a part.

    Parameters
    ----------
    path : str or Path
        The file (conventionally ``*.npz``); its folder is created.
    obj : object
        A value of the kinds listed in the module docstring.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    TypeError
        ``obj`` holds something that is not data (the message says where); nothing is
        written.
    """
    path = Path(path)
    enc = _Encoder()
    tree = {"format": FORMAT, "value": enc(obj)}
    doc = json.dumps(tree, allow_nan=False, separators=(",", ":"))
    arrays = {f"a{i}": a for i, a in enumerate(enc.arrays)}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **{_RECORD: np.array(doc)}, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load(path):
    """Read a file written by :func:`dump`; never runs code.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    object
        The value stored.

    Raises
    ------
    StoredDataError
        The file is missing, truncated, not of this format (a pickle, say), holds an
        object array, or describes something that is not registered data; the message
        names the file.
    """
    path = Path(path)
    try:
        arrays = _read_arrays(path)
        tree = json.loads(str(arrays.pop(_RECORD)[()]))
        if not isinstance(tree, dict) or tree.get("format") != FORMAT:
            raise StoredDataError(f"not a {FORMAT} document")
        return _Decoder(arrays)(tree.get("value"))
    except StoredDataError as exc:
        raise StoredDataError(f"{path}: {exc}") from None
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError,
            AttributeError, RecursionError, zipfile.BadZipFile) as exc:
        raise StoredDataError(f"{path}: not a readable {FORMAT} file "
                              f"({type(exc).__name__}: {exc})") from None


def _read_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of ``path``, every size bounded before anything is allocated.

    A member's declared size (the zip directory's) must fit in the file when stored, and
    in :data:`MAX_STORED_BYTES` in all; an array's header must describe exactly the
    bytes its member holds, so a header declaring 2**40 elements is refused unread.
    """
    if not path.is_file():
        raise StoredDataError("no such file")
    data = path.read_bytes()
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise StoredDataError(f"not a {FORMAT} file (not a NumPy .npz archive)")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = zf.infolist()
        if len(infos) > MAX_STORED_MEMBERS:
            raise StoredDataError(f"{len(infos)} members, more than MAX_STORED_MEMBERS "
                                  f"({MAX_STORED_MEMBERS})")
        declared = sum(info.file_size for info in infos)
        if declared > MAX_STORED_BYTES:
            raise StoredDataError(f"its members declare {declared} bytes, more than "
                                  f"MAX_STORED_BYTES ({MAX_STORED_BYTES})")
        for info in infos:
            _check_member(zf, info, len(data))
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        if _RECORD not in npz.files:
            raise StoredDataError(f"no {_RECORD} member")
        return {name: npz[name] for name in npz.files}


def _check_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, file_size: int) -> None:
    """Refuse member ``info`` unless its array header describes exactly its bytes."""
    if info.compress_type == zipfile.ZIP_STORED and info.file_size > file_size:
        raise StoredDataError(f"member {info.filename!r} declares {info.file_size} bytes "
                              f"in a file of {file_size}")
    if not info.filename.endswith(".npy"):
        raise StoredDataError(f"member {info.filename!r} is not a .npy array")
    with zf.open(info) as fh:
        try:
            version = np.lib.format.read_magic(fh)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, _, dtype = read_header(fh)
            header = fh.tell()
        except ValueError as exc:
            raise StoredDataError(f"member {info.filename!r}: bad array header "
                                  f"({exc})") from None
    if dtype.hasobject:
        raise StoredDataError(f"member {info.filename!r} is an object array (pickled "
                              "objects), not data")
    count = math.prod(shape)
    if count * dtype.itemsize != info.file_size - header:
        raise StoredDataError(
            f"member {info.filename!r}: its header describes {count} x {dtype} "
            f"({count * dtype.itemsize} bytes), but the member holds "
            f"{info.file_size - header}")
