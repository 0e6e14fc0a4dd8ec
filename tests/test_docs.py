"""CONTRIBUTING.md's layer picture is a copy of pyproject.toml's import-linter contract.

(Its Python example runs as a test of its own: ``pytest`` collects the file through
pytest-markdown-docs, as it does the README.)
"""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_contributing_layer_picture_is_the_contract():
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in contract["contracts"] if c["id"] == "layers")["layers"]
    section = (ROOT / "CONTRIBUTING.md").read_text().split("## The layers", 1)[1]
    picture = re.search(r"```text\n(.*?)```", section, re.S).group(1).splitlines()
    assert picture == layers, "update CONTRIBUTING.md's layer picture to pyproject.toml's"
