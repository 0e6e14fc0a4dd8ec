"""Scenario and method registries: plug-ins from above, found by name."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from topofl_lib.core import (
    FederatedScenario,
    get_method,
    get_scenario,
    method_names,
    register_method,
    register_scenario,
    scenario_names,
)
from topofl_lib.core import registry as registry_module
from topofl_lib.data import make_healthcare, make_scenario
from topofl_lib.experiments import run_comparison
from topofl_lib.federated import FedAvg, make_method

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def clean_registries():
    """Remove whatever a test registers."""
    before = (set(registry_module.SCENARIOS.registered()),
              set(registry_module.METHODS.registered()))
    yield
    for reg, names in zip((registry_module.SCENARIOS, registry_module.METHODS), before,
                          strict=True):
        for name in set(reg.registered()) - names:
            reg.unregister(name)


def test_tabular_scenarios_and_methods_are_registered():
    assert {"healthcare", "benchmark", "continual"} <= set(scenario_names())
    assert get_scenario("healthcare").protocols == ("ours", "paper")
    assert get_scenario("continual").protocols == ("ours",)
    make_method("FedAvg")  # loads the catalogue
    assert {"pTopoFL", "FedAvg", "FedProx", "SCAFFOLD", "pFedMe", "Median", "TrimmedMean",
            "Krum", "Local-only"} <= set(method_names())


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown scenario 'nope'; expected one of .*"
                                         r"'healthcare'"):
        make_scenario("nope", random_state=0)
    with pytest.raises(ValueError, match=r"unknown method 'Nope'; expected one of .*'pTopoFL'"):
        make_method("Nope")


def test_protocol_error_names_the_scenarios_that_have_it():
    with pytest.raises(ValueError, match=r"not a protocol of the 'continual' scenario .*"
                                         r"\['benchmark', 'healthcare'\]"):
        make_scenario("continual", random_state=0, protocol="paper")


def test_a_scenario_plugs_in_from_above(clean_registries):
    """A user's scenario, registered by name, runs through the experiment runner."""
    @register_scenario("two_hospitals")
    def two(random_state=None, n_clients=2):
        sc = make_healthcare(n_clients=n_clients, n_adversarial=0, random_state=random_state)
        return FederatedScenario("two_hospitals", sc.clients)

    direct = two(random_state=3)
    by_name = make_scenario("two_hospitals", random_state=3)
    np.testing.assert_array_equal(direct.clients[0].X_train, by_name.clients[0].X_train)
    res = run_comparison("two_hospitals", [0], ["FedAvg"], n_rounds=1, progress=False)
    assert res.final["scenario"].tolist() == ["two_hospitals"]
    with pytest.raises(ValueError, match="already registered"):
        register_scenario("two_hospitals", make_healthcare)
    register_scenario("two_hospitals", make_healthcare, replace=True)
    assert get_scenario("two_hospitals").factory is make_healthcare


def test_a_method_plugs_in_from_above(clean_registries):
    @register_method
    class HalfStep(FedAvg):
        name = "HalfStep"

    assert isinstance(make_method("HalfStep", n_rounds=1), HalfStep)
    assert get_method("HalfStep") is HalfStep
    res = run_comparison("benchmark", [0], ["HalfStep"], n_rounds=1, progress=False)
    assert res.final["method"].tolist() == ["HalfStep"]
    register_method(HalfStep)  # the same class again: a no-op
    with pytest.raises(ValueError, match="already registered"):
        register_method(FedAvg, name="HalfStep")
    with pytest.raises(TypeError, match="must be a class"):
        register_method(FedAvg(), name="x")


@pytest.mark.parametrize("self_registers", [True, False])
def test_entry_points_are_loaded_on_a_miss(tmp_path, monkeypatch, clean_registries,
                                           self_registers):
    """A name only an installed package declares is imported on first use; its module
    registers itself, or the entry point's object is registered under its name."""
    module = f"toy_plugin_{int(self_registers)}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(f"""
        from topofl_lib.core import register_scenario
        from topofl_lib.data import make_benchmark

        def toy(random_state=None):
            return make_benchmark(n_clients=3, random_state=random_state)

        if {self_registers}:
            register_scenario("toy", toy)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = metadata.EntryPoint("toy", f"{module}:toy", registry_module.SCENARIO_GROUP)
    real = registry_module.metadata.entry_points

    def entry_points(group):
        return [ep] if group == registry_module.SCENARIO_GROUP else real(group=group)

    monkeypatch.setattr(registry_module.metadata, "entry_points", entry_points)
    assert module not in sys.modules
    assert "toy" in scenario_names()  # declared, not imported
    assert module not in sys.modules
    assert len(make_scenario("toy", random_state=0).clients) == 3
    assert module in sys.modules and "toy" in registry_module.SCENARIOS.registered()


def test_declared_entry_points_resolve_to_registered_plugins():
    """pyproject.toml's entry points name objects that register under those names."""
    pytest.importorskip("torch")
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert groups[registry_module.SCENARIO_GROUP] == {
        "image": "topofl_lib.deep.scenarios:make_image_scenario"}
    assert groups[registry_module.METHOD_GROUP] == {
        "FedTopo": "topofl_lib.fedtopo.algorithm:FedTopo",
        **{name: f"topofl_lib.deep.{name.lower()}:{name}"
           for name in ("FedDF", "FedSA", "FedGen", "FedFTG")}}
    for group, entries in groups.items():
        for name, value in entries.items():
            obj = metadata.EntryPoint(name, value, group).load()
            reg = (registry_module.SCENARIOS if group == registry_module.SCENARIO_GROUP
                   else registry_module.METHODS)
            entry = reg.get(name)
            assert (entry.factory if group == registry_module.SCENARIO_GROUP else entry) is obj


def test_plugins_are_found_without_importing_them():
    """In a fresh interpreter, make_scenario("image") and make_method("FedTopo") work
    without importing topofl_lib.deep or topofl_lib.fedtopo first (entry points of the
    installed metadata: after editing them in pyproject.toml, reinstall with
    ``pip install -e .``, as ``make`` does)."""
    pytest.importorskip("torch")
    code = textwrap.dedent("""
        import sys
        import topofl_lib as tf
        assert "topofl_lib.deep" not in sys.modules
        sc = tf.make_scenario("image", random_state=0, dataset="digits", n_clients=3,
                              n_train=200, n_test=50)
        assert sc.name == "digits-L0.1" and "topofl_lib.deep" in sys.modules
        assert type(tf.make_method("FedTopo")).__module__ == "topofl_lib.fedtopo.algorithm"
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


def test_learners_satisfy_the_learner_protocol():
    """The logistic learner and the torch model class implement core's protocols."""
    from topofl_lib.core import Learner, ModelClass
    from topofl_lib.federated.local import LogisticLearner

    assert isinstance(LogisticLearner(1.0), Learner)
    torch_model = pytest.importorskip("topofl_lib.deep").TorchModel("digits_cnn")
    assert isinstance(torch_model, ModelClass)
    learner = torch_model.make_learner(64, np.random.default_rng(0))
    assert isinstance(learner, Learner)
    with pytest.raises(TypeError, match="model must be None or a TorchModel"):
        FedAvg(model=object()).fit(make_healthcare(random_state=0))
