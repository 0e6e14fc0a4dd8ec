"""The environment a run records, the package's one version source, and the lock file.

``constraints.txt`` pins what ``make setup`` installs: it must name every dependency of
``pyproject.toml``, agree with it, and agree with the versions installed here (the
environment the committed results are made with; CI installs from the lock, so there it
agrees by construction). After changing a dependency, run ``make lock``.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import topofl_lib
from topofl_lib.environment import (
    add_notebook,
    distribution_version,
    git_state,
    machine_record,
    package_versions,
    run_record,
)

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints.txt"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


# -- the environment record ------------------------------------------------------------
def test_machine_record_describes_this_process():
    record = machine_record()
    assert record["python"]["version"] == platform.python_version()
    assert record["packages"]["numpy"] == importlib.metadata.version("numpy")
    assert record["packages"] == package_versions()
    assert list(record["packages"]) == sorted(record["packages"], key=str.lower)
    cpu = record["cpu"]
    assert cpu["logical_cores"] == os.cpu_count() and 1 <= cpu["available_cores"] <= os.cpu_count()
    assert isinstance(cpu["model"], str) and cpu["model"]
    # NumPy's OpenBLAS and the kernels it chose (its rounding depends on them)
    assert cpu["blas_kernels"].get("openblas") not in (None, "", "None")
    torch = record["torch"]
    if torch is not None:
        assert torch["version"] == importlib.metadata.version("torch")
        assert torch["threads"] >= 1 and isinstance(torch["cuda"], bool)
    assert record["memory_gib"] is None or record["memory_gib"] > 0


def test_package_versions_of_named_distributions_keep_order_and_mark_absent():
    versions = package_versions(["scipy", "no-such-distribution-xyz", "numpy"])
    assert list(versions) == ["scipy", "no-such-distribution-xyz", "numpy"]
    assert versions["no-such-distribution-xyz"] is None
    assert versions["numpy"] == importlib.metadata.version("numpy")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c",
                           "user.email=t@example.org", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def test_git_state_commit_and_dirty_code_but_not_outputs(tmp_path):
    """dirty: the code differs from the commit; new figures/results do not count."""
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is not installed")
    assert git_state(tmp_path) == {"commit": None, "dirty": None, "changed": []}
    _git(tmp_path, "init", "-q")
    for name in ("code.py", "results/claims.csv", "figures/a.png"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("1")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "first")
    clean = git_state(tmp_path)
    assert clean == {"commit": _git(tmp_path, "rev-parse", "HEAD"), "dirty": False,
                     "changed": []}
    (tmp_path / "results" / "claims.csv").write_text("2")
    (tmp_path / "figures" / "b.png").write_text("new")
    assert git_state(tmp_path) == clean
    (tmp_path / "code.py").write_text("2")
    (tmp_path / "new.py").write_text("")
    dirty = {**clean, "dirty": True, "changed": ["code.py", "new.py"]}
    assert git_state(tmp_path) == dirty
    assert git_state(tmp_path / "results") == dirty  # any folder: the whole checkout


def test_add_notebook_stores_each_environment_once():
    """Notebooks share one stored environment; one no notebook uses is dropped."""
    git = {"commit": "abc", "dirty": False, "changed": []}
    machine_a, machine_b = {"packages": {"numpy": "1"}}, {"packages": {"numpy": "2"}}
    doc = add_notebook(None, "nb1", run_record("cpu", git), machine_a)
    doc = add_notebook(doc, "nb2", run_record("cpu", git, workers=2), machine_a)
    assert len(doc["environments"]) == 1
    assert doc["notebooks"]["nb1"]["environment"] == doc["notebooks"]["nb2"]["environment"]
    assert doc["notebooks"]["nb2"]["workers"] == 2 and doc["notebooks"]["nb1"]["git"] == git
    again = add_notebook(doc, "nb1", run_record("paper", git), machine_b)
    assert len(again["environments"]) == 2 and len(doc["environments"]) == 1  # not modified
    last = add_notebook(again, "nb2", run_record("paper", git), machine_b)
    assert list(last["environments"].values()) == [machine_b]
    assert {e["profile"] for e in last["notebooks"].values()} == {"paper"}


# -- one source for the version --------------------------------------------------------
def test_version_comes_from_the_installed_distribution():
    """__version__ is the metadata's, which pyproject.toml sets; no copy in the code."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert topofl_lib.__version__ == importlib.metadata.version("topofl")
    assert distribution_version() == pyproject["project"]["version"], (
        "the installed metadata is stale: reinstall (make setup)")
    assert distribution_version("no-such-distribution-xyz") == "0+unknown"
    literal = re.compile(r"__version__\s*=\s*['\"]")
    assert not [p for p in (ROOT / "topofl_lib").rglob("*.py") if literal.search(p.read_text())]


def test_version_lookup_is_lazy():
    """``import topofl_lib`` does not read the metadata; the first ``__version__`` does."""
    code = ("import sys, topofl_lib; before = 'importlib.metadata' in sys.modules; "
            "v = topofl_lib.__version__; print(before, v == topofl_lib.__version__)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, check=True)
    assert res.stdout.split() == ["False", "True"]


# -- the lock file ---------------------------------------------------------------------
def _locked() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            match = PIN.match(line.strip())
            assert match, f"constraints.txt: not a pin: {line!r}"
            pins[canonicalize_name(match[1])] = match[2]
    return pins


def _requirements() -> list[Requirement]:
    """Every requirement of the package and its extras, the package's own excluded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values()
                                         for r in extra)]
    return [r for r in map(Requirement, lines) if canonicalize_name(r.name) != "topofl"]


def test_lock_names_and_satisfies_every_requirement():
    locked = _locked()
    missing = sorted({r.name for r in _requirements()} - set(locked))
    assert not missing, f"{missing} not in constraints.txt: run make lock"
    wrong = [f"{r} (lock: {locked[canonicalize_name(r.name)]})" for r in _requirements()
             if not r.specifier.contains(locked[canonicalize_name(r.name)], prereleases=True)]
    assert not wrong, f"the lock breaks pyproject.toml: {wrong}; run make lock"


def test_lock_pins_the_cpu_torch_release_and_no_cuda_package():
    locked = _locked()
    assert locked["torch"] == "2.13.0"  # no local label: the CPU wheel where pip finds it
    cuda = sorted(n for n in locked if n.startswith(("nvidia-", "triton")))
    assert not cuda, f"the lock names CUDA packages: {cuda}"
    assert all(Version(v).local is None for v in locked.values())


def test_lock_agrees_with_the_installed_versions():
    """Each pinned package that is installed here is installed at the pinned version."""
    wrong = []
    for name, pinned in sorted(_locked().items()):
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if Version(Version(installed).public) != Version(pinned):
            wrong.append(f"{name}: installed {installed}, lock {pinned}")
    assert not wrong, ("constraints.txt disagrees with this environment (make setup installs "
                       f"the lock; make lock re-pins it to the installed versions): {wrong}")


def test_make_installs_with_the_lock():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"pip install .*-c \$\(LOCK\) -e \"\.\[all\]\"", makefile)
    assert re.search(r"^LOCK\s*:=\s*constraints\.txt$", makefile, re.M)
    assert re.search(r"^\$\(STAMP\): pyproject\.toml \$\(LOCK\)$", makefile, re.M)
