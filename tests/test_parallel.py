"""The suite's parallel run (``make test``: pytest-xdist, ``--dist loadgroup``): the
groups of ``conftest.py`` are made, and pytest-xdist honours them.

pytest 9.2 changed how node ids are stored, and pytest-xdist 3.8's loadgroup, which
rewrites the legacy id, then spreads a group over the workers without a word (pytest-xdist
issue 1386): a notebook's cells ran in three kernels and failed. The lock keeps
pytest < 9.2; the first test fails should an upgrade bring the bug back.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytest.importorskip("xdist")


def _pytest(args: list[str], cwd: Path, extra_path: Path | None = None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        str(p) for p in (extra_path, REPO) if p is not None)}
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_xdist_keeps_a_group_on_one_worker(tmp_path):
    """Six grouped tests in two files run on one worker; the ungrouped ones may spread."""
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(
            "import pytest\n\n\n"
            "@pytest.mark.xdist_group('together')\n"
            "@pytest.mark.parametrize('i', range(3))\n"
            "def test_grouped(i):\n    pass\n\n\n"
            "@pytest.mark.parametrize('i', range(3))\n"
            "def test_free(i):\n    pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = _pytest(["-n", "2", "--dist", "loadgroup", "-v"], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    grouped = re.findall(r"\[(gw\d+)\].*PASSED (test_\w\.py::test_grouped\[\d\])(@\w+)?",
                         done.stdout)
    assert len(grouped) == 6, done.stdout[-3000:]
    assert {g[2] for g in grouped} == {"@together"}, (
        "pytest-xdist dropped the group from the node ids (pytest-xdist issue 1386): "
        f"{grouped}")
    assert len({g[0] for g in grouped}) == 1, f"the group ran on several workers: {grouped}"


PLUGIN = """
import json, sys

def pytest_collection_finish(session):
    out = {}
    for item in session.items:
        mark = item.get_closest_marker("xdist_group")
        out[item.nodeid] = mark.args[0] if mark is not None else None
    print("GROUPS " + json.dumps(out), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def groups(tmp_path_factory) -> dict[str, str | None]:
    """``{node id: group}`` of a few of the suite's files, as ``conftest.py`` marks them."""
    where = tmp_path_factory.mktemp("plugin")
    (where / "show_groups.py").write_text(PLUGIN)
    done = _pytest(["--collect-only", "-q", "-o", "addopts=", "--nbval-lax", "-p", "show_groups",
                    "notebooks/explorer.ipynb", "tests/test_flower.py",
                    "tests/test_docs_site.py", "tests/test_cubical.py"], REPO, where)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("GROUPS "))
    return json.loads(line[len("GROUPS "):])


def test_conftest_groups_notebook_cells_federations_and_shared_fixtures(groups):
    cells = {g for n, g in groups.items() if n.startswith("notebooks/explorer.ipynb::")}
    assert cells == {"file:explorer.ipynb"}
    federations = {n: g for n, g in groups.items()
                   if "test_faults_with_many_supernodes" in n
                   or "test_flower_run_matches_in_process_engine" in n
                   or "test_insecure_federation_still_runs" in n}
    assert len(federations) == 6 and set(federations.values()) == {"federations"}
    assert {g for n, g in groups.items() if n.startswith("tests/test_docs_site.py::")
            and "test_the_site_has_its_pages" in n} == {"fixture:test_docs_site.py:crawl"}
    # the 10 starts and the plain unit tests stay free, to spread over the workers
    starts = [g for n, g in groups.items() if "test_secure_federation_starts_every_time" in n]
    assert len(starts) == 10 and set(starts) == {None}
    assert {g for n, g in groups.items() if n.startswith("tests/test_cubical.py::")} == {None}


def test_no_group_name_is_mistaken_for_a_parameter(groups):
    """pytest-xdist reads the group after the last "@" of a node id only if no "]"
    follows it (else it takes the "@" for part of a parameter id and ignores the group)."""
    assert not [g for g in groups.values() if g is not None and "]" in g]


def test_the_federations_come_first(groups):
    """pytest-xdist hands out work in collection order: the longest group starts first."""
    order = list(groups.values())
    first_free = order.index(None)
    assert set(order[:first_free]) >= {"federations", "file:explorer.ipynb"}
    assert order[0] == "federations"
