"""Refresh the stored outputs of the notebooks' nbval-checked cells.

CI validates the notebooks with ``pytest --nbval-lax``: only cells whose source starts
with ``# NBVAL_CHECK_OUTPUT`` are compared with their stored output. After changing a
notebook, run ``.venv/bin/python scripts/refresh_nbval_outputs.py`` from the repository
root (``scripts/refresh_nbval_outputs.py notebooks/NAME.ipynb`` for one notebook): it
executes every notebook with its default (quick) parameters in a temporary folder, with
a fresh run store (``$TOPOFL_CACHE_DIR``, as ``make test`` has), and copies the outputs of
the checked cells, and only those, into the source notebook. All other outputs stay
cleared so the committed notebooks stay small.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from topofl_lib._validation import OneLineArgumentParser

MARK = "# NBVAL_CHECK_OUTPUT"


def refresh(path: Path) -> None:
    # imported here: a bad command line is refused in a fraction of a second, without
    # papermill's and nbformat's imports (about 2 s; nbformat's JSON schema alone 1.3 s)
    import nbformat
    import papermill as pm

    from topofl_lib.reproduce import kernel_manager_config

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TOPOFL_OUTPUT_DIR"] = tmp
        os.environ["TOPOFL_CACHE_DIR"] = str(Path(tmp) / "runs")  # every run computed
        out = Path(tmp) / path.name
        pm.execute_notebook(str(path), str(out), cwd=str(path.parent), progress_bar=False,
                            config=kernel_manager_config())
        executed = nbformat.read(out, as_version=4)
    nb = nbformat.read(path, as_version=4)
    runs = [c for c in executed.cells if c.cell_type == "code"]
    code = [c for c in nb.cells if c.cell_type == "code"]
    # papermill may insert an "injected-parameters" cell; match cells by source.
    by_source = {c.source: c for c in runs}
    for cell in code:
        cell.execution_count = None
        cell.outputs = []
        if cell.source.startswith(MARK):
            ran = by_source[cell.source]
            cell.outputs = [o for o in ran.outputs if o.get("output_type") == "stream"]
            cell.execution_count = 1  # nbval refuses stored outputs of an "unrun" cell
    nbformat.write(nb, path)
    print(f"refreshed {path}")


def main(argv=None) -> int:
    """Refresh the named notebooks (default: every notebook of ``notebooks/``)."""
    parser = OneLineArgumentParser(prog="scripts/refresh_nbval_outputs.py",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to refresh (default: notebooks/*.ipynb)")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        if path.suffix != ".ipynb" or not path.is_file():
            parser.error(f"not a notebook file: {path}")
    for path in args.notebooks or sorted(Path("notebooks").glob("*.ipynb")):
        refresh(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
