"""Rewrite each notebook's ``parameters`` cell from its declaration.

A notebook parameter is declared once: its type and help in ``topofl_lib/notebook_models.py``,
its value in each profile in ``topofl_lib/profiles.toml``; the notebook's cell tagged
``parameters`` (the quick values, each with its help and the other profiles' values) is
rendered from them (``topofl_lib.notebook_params.parameters_cell_source``). After a change, run
``.venv/bin/python scripts/sync_parameters_cells.py`` from the repository root: it
rewrites the source of every registered notebook's parameters cell that differs (its id,
tags and every other cell stay) and names the files it changed.
``tests/test_notebook_params.py`` fails while a cell differs.
"""

from __future__ import annotations

from pathlib import Path

from topofl_lib.notebook_params import NOTEBOOKS, write_parameters_cell

if __name__ == "__main__":
    for name in NOTEBOOKS:
        path = Path("notebooks") / f"{name}.ipynb"
        if write_parameters_cell(path, name):
            print(f"rewrote the parameters cell of {path}")
