"""CONTRIBUTING.md's layer picture is a copy of pyproject.toml's import-linter contract.

(Its Python example runs as a test of its own: ``pytest`` collects the file through
pytest-markdown-docs, as it does the README.)
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_contributing_layer_picture_is_the_contract():
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in contract["contracts"] if c["id"] == "layers")["layers"]
    section = (ROOT / "CONTRIBUTING.md").read_text().split("## The layers", 1)[1]
    picture = re.search(r"```text\n(.*?)```", section, re.S).group(1).splitlines()
    assert picture == layers, "update CONTRIBUTING.md's layer picture to pyproject.toml's"


def test_the_supported_python_is_stated_the_same_everywhere():
    """requires-python, ruff's target, the Makefile's check, conda's file and the README."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    lowest = re.fullmatch(r">=3\.(\d+)", pyproject["project"]["requires-python"]).group(1)
    assert pyproject["tool"]["ruff"]["target-version"] == f"py3{lowest}"
    assert f"Programming Language :: Python :: 3.{lowest}" in pyproject["project"]["classifiers"]
    assert f"sys.version_info < (3, {lowest})" in (ROOT / "Makefile").read_text()
    assert f"python=3.{lowest}\n" in (ROOT / "environment.yml").read_text()
    assert f"with Python ≥ 3.{lowest} (with `venv`)" in (ROOT / "README.md").read_text()
    assert "for CPython 3.11 on Linux" in (ROOT / "README.md").read_text()  # the lock's
