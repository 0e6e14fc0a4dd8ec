"""The maintainer scripts of ``scripts/``: a bad command line is one line, exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("args", "message"), [
    (["refresh_nbval_outputs.py", "--bogus"], "unrecognized arguments: --bogus"),
    (["refresh_nbval_outputs.py", "missing.ipynb"], "not a notebook file: missing.ipynb"),
    (["refresh_nbval_outputs.py", "README.md"], "not a notebook file: README.md"),
    (["convert_run_store.py", "missing-folder", "--i-trust-these-pickles"],
     "not a folder: missing-folder"),
    (["convert_run_store.py", "."], "required: --i-trust-these-pickles"),
    (["lock.py", "--output", "missing-folder/constraints.txt"],
     "--output missing-folder/constraints.txt: its folder does not exist"),
    (["fill_fedtopo_store.py", "--workers", "0"], "--workers must be >= 1, got 0"),
], ids=lambda a: a[0] if isinstance(a, list) else None)
def test_a_bad_command_line_is_one_line_and_status_2(tmp_path, args, message):
    # run from an empty folder, so a relative path that the script wrongly accepted would
    # find nothing to change
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / args[0]), *args[1:]],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stdout == "" and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"scripts/{args[0]}: error: ") and message in out.stderr
    assert not list(tmp_path.iterdir())  # nothing written
