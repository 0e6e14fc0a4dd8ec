"""Reading the package's own text files (claim files, manifests, journals) with bounds.

Every reader here checks the file's size before reading it, names the file in every
error, and never lets a ``MemoryError``, ``RecursionError`` or a parser's message
without the file's name escape: a results folder may have been edited by hand, cut
short by a crash, or handed over by someone else.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

#: The largest claim file, manifest or journal read (64 MiB; ours are below 1 MiB).
MAX_TEXT_BYTES = 64 * 2**20
#: The deepest nesting of a JSON document read (ours nest at most 4 deep).
MAX_JSON_DEPTH = 64


class BoundedFileError(ValueError):
    """A file too large, not text, nested too deep or with a malformed row."""


def read_text(path: Path, *, max_bytes: int | None = None) -> str:
    """The UTF-8 text of ``path``, refused unread above ``max_bytes``.

    Parameters
    ----------
    path : Path
        The file.
    max_bytes : int, optional
        The bound (default :data:`MAX_TEXT_BYTES`).

    Returns
    -------
    str
        Its text.

    Raises
    ------
    BoundedFileError
        The file is larger than the bound, or not UTF-8; the message names it.
    """
    limit = MAX_TEXT_BYTES if max_bytes is None else max_bytes
    size = Path(path).stat().st_size
    if size > limit:
        raise BoundedFileError(f"{path} holds {size} bytes, more than the {limit} "
                               "a file of this kind may hold")
    try:
        return Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BoundedFileError(f"{path} is not UTF-8 text (byte {exc.start})") from None


def json_depth_fault(text: str, max_depth: int = MAX_JSON_DEPTH) -> str:
    """Why ``text`` nests deeper than ``max_depth`` ("" when it does not).

    Brackets inside strings are skipped, so the scan agrees with a JSON parser.

    Parameters
    ----------
    text : str
        A JSON document.
    max_depth : int
        The deepest nesting allowed.

    Returns
    -------
    str
        "" or the reason, with the character where the bound was passed.
    """
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                return f"nests deeper than {max_depth} levels (character {i})"
        elif ch in "]}":
            depth -= 1
    return ""


def read_json(path: Path, *, max_bytes: int | None = None) -> object:
    """The JSON value in ``path``, its size and nesting bounded before it is parsed.

    Parameters
    ----------
    path : Path
        The file.
    max_bytes : int, optional
        The size bound (default :data:`MAX_TEXT_BYTES`).

    Returns
    -------
    object
        The parsed value.

    Raises
    ------
    BoundedFileError
        Too large, not UTF-8, nested deeper than :data:`MAX_JSON_DEPTH`, or not JSON;
        the message names the file.
    """
    text = read_text(path, max_bytes=max_bytes)
    fault = json_depth_fault(text)
    if fault:
        raise BoundedFileError(f"{path} {fault}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BoundedFileError(f"{path} is not valid JSON ({exc})") from None


def check_csv_rows(text: str, path: Path) -> None:
    """Refuse a CSV whose rows do not all have the header's number of fields.

    Parameters
    ----------
    text : str
        The file's text.
    path : Path
        The file, for the message.

    Raises
    ------
    BoundedFileError
        A row with another number of fields, or a field the csv module refuses; the
        message names the file and the line.
    """
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        for row in reader:
            if row and header is not None and len(row) != len(header):
                raise BoundedFileError(
                    f"{path} cannot be read as CSV: line {reader.line_num} has {len(row)} "
                    f"fields, its header {len(header)} (the row was cut short or edited)")
    except csv.Error as exc:
        raise BoundedFileError(f"{path} cannot be read as CSV: line {reader.line_num}: "
                               f"{exc}") from None
