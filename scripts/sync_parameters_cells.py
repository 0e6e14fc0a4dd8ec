"""Rewrite each notebook's ``parameters`` cell from its declaration in ``NOTEBOOKS``.

A notebook parameter is declared once, in ``NOTEBOOKS`` of
``topofl_lib/notebook_params.py`` (value spec, one-line help, profile values); the
notebook's cell tagged ``parameters`` is rendered from it
(``topofl_lib.notebook_params.parameters_cell_source``). After changing ``NOTEBOOKS``, run
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
