"""The package's layers only point down (import-linter), and no module reads another's
private attributes."""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = ("import sys; from importlinter.cli import lint_imports_command; "
        "sys.argv = ['lint-imports', '--no-cache']; sys.exit(lint_imports_command())")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the package in ``tree`` with ``tree``'s pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([sys.executable, "-c", LINT], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300)


def test_layer_contract_is_kept():
    """pyproject.toml's layer contracts (the package's, the runner's) hold as it is."""
    res = _lint_imports(ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 kept, 0 broken" in res.stdout


@pytest.mark.parametrize("module, line", [
    # a lazy (function-level) import upward: data must not reach deep
    ("data/partitions.py",
     "\n\ndef _upward():\n    from ..deep.scenarios import make_image_scenario\n"
     "    return make_image_scenario\n"),
    # a top-level import upward: federated must not reach experiments
    ("federated/metrics.py", "\nfrom ..experiments import summarise  # noqa\n"),
])
def test_an_upward_import_breaks_the_contract(tmp_path, module, line):
    """The check is not vacuous: a copy of the package with one upward import fails."""
    shutil.copytree(ROOT / "topofl_lib", tmp_path / "topofl_lib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / "topofl_lib" / module, "a") as fh:
        fh.write(line)
    res = _lint_imports(tmp_path)
    assert res.returncode != 0
    assert "BROKEN" in res.stdout and "is not allowed to import" in res.stdout, res.stdout


def test_no_module_reads_another_modules_private_names(capsys):
    """scripts/check_private_access.py finds no cross-module private reads or writes."""
    script = runpy.run_path(str(ROOT / "scripts" / "check_private_access.py"))
    assert script["main"]() == 0, capsys.readouterr().out


def test_private_access_check_finds_a_private_read(tmp_path):
    """The AST check flags ``est._learner`` and ``from .x import _y`` in another module."""
    script = runpy.run_path(str(ROOT / "scripts" / "check_private_access.py"))
    bad = tmp_path / "topofl_lib" / "bad.py"
    bad.parent.mkdir()
    bad.write_text("from .descriptor import _grid\n\n\ndef f(est):\n"
                   "    return est._learner\n")
    found = script["private_reads"](bad, root=tmp_path / "topofl_lib")
    assert len(found) == 2
    assert "import _grid" in found[0] and "reads est._learner" in found[1]


def test_no_import_cycle_between_modules():
    """No two modules of topofl_lib import each other, directly or round a loop, lazily or
    not (the layer contract checks packages against each other; this checks modules, the
    layers' insides included). grimp: import-linter's own import graph."""
    import grimp

    graph = grimp.build_graph("topofl_lib", cache_dir=None)
    cycles = sorted({tuple(sorted((m, n))) for m in graph.modules
                     for n in graph.find_modules_directly_imported_by(m)
                     if n != m and graph.chain_exists(importer=n, imported=m)})
    assert not cycles, f"modules on an import cycle: {cycles}"


def test_the_round_loop_class_stays_small():
    """The base class keeps the round loop (issue 46): its shared settings' checks
    (``federated.settings``), the clients' evaluation (``federated.metrics``), per-load
    noise (``federated.load_noise``) and the model channel's privacy
    (``federated.private_training``) live in modules of their own. At most 400 lines, as
    the notebooks' parameter layer (``notebook_params``) is."""
    import inspect

    from topofl_lib import notebook_params
    from topofl_lib.federated import FederatedAlgorithm

    lines, _ = inspect.getsourcelines(FederatedAlgorithm)
    assert len(lines) <= 400, f"FederatedAlgorithm has {len(lines)} lines"
    assert len(inspect.getsource(notebook_params).splitlines()) <= 400
