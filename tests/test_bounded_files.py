"""The bounded readers of the package's own text files (claim files, manifests, journals)."""

from __future__ import annotations

import json

import pytest

from topofl_lib._bounded_files import (
    MAX_JSON_DEPTH,
    BoundedFileError,
    check_csv_rows,
    json_depth_fault,
    read_json,
    read_text,
)


@pytest.mark.parametrize(("text", "deep"), [
    ("[" * (MAX_JSON_DEPTH + 1), True),
    ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, False),
    (json.dumps({"a": "[" * 1000}), False),  # brackets in a string are text
    (json.dumps({"a": '\\"[' * 1000}), False),  # escaped quotes keep the string open
    (json.dumps([{"a": [1, {"b": "]]]]"}]}]), False),
])
def test_the_depth_scan_agrees_with_the_json_nesting(text, deep):
    assert bool(json_depth_fault(text)) is deep
    if not deep:
        json.loads(text)  # well-formed: the scan read it as the parser does


def test_read_json_names_the_file_for_every_fault(tmp_path):
    path = tmp_path / "m.json"
    for text, message in [('{"a": ' * 10_000, "nests deeper than 64 levels"),
                          ('{"a": 1', "is not valid JSON"),
                          (b"\xff\xfe", "is not UTF-8 text")]:
        (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
        with pytest.raises(BoundedFileError, match=rf"m\.json.*{message}"):
            read_json(path)
    path.write_text('{"a": [1, 2]}')
    assert read_json(path) == {"a": [1, 2]}


def test_a_file_past_the_bound_is_refused_unread(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("x" * 101)
    with pytest.raises(BoundedFileError, match=r"big\.csv holds 101 bytes, more than the 100"):
        read_text(path, max_bytes=100)
    assert read_text(path, max_bytes=101) == "x" * 101


@pytest.mark.parametrize(("text", "message"), [
    ("a,b\n1,2\n3\n", "line 3 has 1 fields, its header 2"),
    ("a,b\n1,2,3\n", "line 2 has 3 fields, its header 2"),
    ('a,b\n"1,2\n', "line 2: unexpected end of data"),
])
def test_csv_rows_must_have_the_headers_fields(tmp_path, text, message):
    with pytest.raises(BoundedFileError, match=rf"c\.csv cannot be read as CSV: {message}"):
        check_csv_rows(text, tmp_path / "c.csv")
    check_csv_rows('a,b\n1,"2,3"\n\n', tmp_path / "c.csv")  # quoted commas, a blank line
