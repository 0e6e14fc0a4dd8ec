"""Notebook parameters: one source per profile, every value validated before a write."""

import ast
import os
import re
from pathlib import Path

import nbformat
import papermill as pm
import pytest

from topofl_lib import notebook_params
from topofl_lib.notebook_models import EXECUTION, Robustness
from topofl_lib.notebook_params import (
    NOTEBOOKS,
    PROFILES,
    VALUES_FILE,
    Notebook,
    _assigned,
    load_notebooks,
    notebook_parameters,
    parameters_cell,
    parameters_cell_source,
    write_parameters_cell,
)
from topofl_lib.outputs import atomic_path, output_dirs, write_text_atomic

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("notebook", "bad", "error", "message"), [
    ("ablation_theorems", {"betas": [2.0]}, ValueError,
     r"betas\[0\]: input should be less than or equal to 1, got 2.0"),
    ("ablation_theorems", {"betas": 0.5}, TypeError,
     "betas: input should be a valid list, got 0.5"),
    ("ablation_theorems", {"cluster_counts": [2, 9]}, ValueError,
     r"cluster_counts\[1\]: input should be less than or equal to 8, got 9"),
    ("ablation_theorems", {"etas": []}, ValueError, "etas: list should have at least 1 item"),
    ("robustness", {"rates": [0.0, 0.7]}, ValueError,
     r"rates\[1\]: input should be less than or equal to 0.5, got 0.7"),
    ("robustness", {"attacks": ["sign_flip"]}, ValueError,
     r"attacks: must contain \['label_flip'\]"),
    ("robustness", {"rates": [0.3, 0.3]}, ValueError, "rates: has repeated entries"),
    ("gfc_clustering", {"datasets": ["iris", "irs"]}, ValueError,
     r"datasets\[1\]: input should be 'iris', .* got 'irs'"),
    ("gfc_clustering", {"epsilons": [1.0, 0.0]}, ValueError,
     r"epsilons\[1\]: input should be greater than 0, got 0.0"),
    ("privacy_analysis", {"n_seeds": "3"}, TypeError,
     "n_seeds: input should be a valid integer, got '3'"),
    ("privacy_analysis", {"mia_sizes": [1]}, ValueError,
     r"mia_sizes\[0\]: input should be greater than or equal to 2"),
    ("privacy_analysis", {"deep": 3}, TypeError, r"deep: input should be a valid dictionary"),
    ("privacy_analysis", {"deep": {"seeds": 2}}, ValueError,
     r"deep\['epsilons'\]: missing; .* deep\['seeds'\]: unknown parameter, got 2"),
    ("privacy_analysis", {"deep": {"n_seeds": 0}}, ValueError,
     r"deep\['n_seeds'\]: input should be greater than or equal to 1, got 0"),
    ("privacy_analysis", {"deep": {"level": "record"}}, ValueError,
     r"deep\['level'\]: input should be 'client' or 'sample', got 'record'"),
    ("privacy_analysis", {"deep": {"epsilons": [3.0, 1.0]}}, ValueError,
     r"deep\['epsilons'\]: must be strictly increasing"),
    ("continual_drift", {"n_rounds": 10}, ValueError,
     "n_rounds: input should be greater than or equal to 11, got 10"),
    ("continual_drift", {"drift_threshold": float("nan")}, ValueError,
     "drift_threshold: input should be a finite number"),
    ("fedtopo", {"loss_range": [0.5, 0.1]}, ValueError,
     "loss_range: input should be 'calibrate', got .*loss_range: must be strictly increasing"),
    ("fedtopo", {"loss_range": "calibrated"}, ValueError, "loss_range: input should be"),
    ("fedtopo", {"methods": ["FedAvg"]}, ValueError, r"methods: must contain \['FedTopo'\]"),
    ("ptopofl_deep", {"n_clients": 2}, ValueError,
     "n_clients: input should be greater than or equal to 3, got 2"),
    ("ptopofl_deep", {"alphas": [0.1, True]}, TypeError,
     r"alphas\[1\]: input should be a valid number, got True"),
    ("scenario_a_healthcare", {"n_rounds": 0}, ValueError,
     "n_rounds: input should be greater than or equal to 1, got 0"),
    ("fedtopo", {"n_workers": 0}, ValueError,
     "n_workers: input should be greater than or equal to 1, got 0"),
    ("own_data", {"site": "a\nb"}, ValueError, "site: must be a non-empty one-line string"),
    ("scenario_b_benchmark", {"profile": "fast"}, ValueError, "unknown profile 'fast'"),
])
def test_bad_parameters_name_parameter_and_value(notebook, bad, error, message, tmp_path):
    """Malformed scalars, lists and profiles raise, naming the parameter and the value;
    nothing is written, the namespace included."""
    namespace = {"output_dir": tmp_path, **bad}
    with pytest.raises(error, match=message):
        notebook_parameters(notebook, namespace)
    assert not any(tmp_path.iterdir())
    assert namespace == {"output_dir": tmp_path, **bad}


def test_missing_names_take_the_profile_value_and_overrides_say_custom(tmp_path):
    """A parameter the namespace lacks takes the profile's value; a changed value makes the
    rows' profile 'custom'."""
    p = notebook_parameters("robustness", {"profile": "cpu", "output_dir": tmp_path})
    assert p.profile == "cpu"
    assert p.n_seeds == 10 and p.rates == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    assert (p.figures_dir, p.results_dir) == (tmp_path / "figures", tmp_path / "results")
    assert p.claims == "robustness"
    assert notebook_parameters("robustness", {"profile": "cpu", "n_seeds": 10,
                                              "output_dir": tmp_path}).profile == "cpu"
    custom = notebook_parameters("robustness", {"profile": "cpu", "rates": (0, 0.5),
                                                "output_dir": tmp_path})
    assert custom.profile == "custom" and custom.rates == [0.0, 0.5]
    with pytest.raises(AttributeError, match="no parameter 'betas'"):
        custom.betas  # noqa: B018
    loss = notebook_parameters("fedtopo", {"loss_range": [0.01, 2],
                                           "output_dir": tmp_path}).loss_range
    assert loss == [0.01, 2.0]
    with pytest.raises(TypeError, match="n_seeds: input should be a valid integer, got None"):
        notebook_parameters("robustness", {"n_seeds": None, "output_dir": tmp_path})


def test_a_dict_parameter_is_given_whole_and_never_changes_the_profile(tmp_path):
    """A dict parameter (the privacy notebook's deep runs) is checked field by field: a
    changed field makes the run custom, the full profile dict does not; what a notebook
    does to its copy never reaches the profile's stored values."""
    cpu = NOTEBOOKS["privacy_analysis"].values("cpu")["deep"]
    cfg = notebook_parameters("privacy_analysis", {"profile": "cpu", "deep": {**cpu, "n_seeds": 1},
                                                   "output_dir": tmp_path})
    assert cfg.profile == "custom" and cfg.deep == {**cpu, "n_seeds": 1}
    assert list(cfg.deep) == list(cpu)
    same = notebook_parameters("privacy_analysis", {"profile": "cpu", "deep": dict(cpu),
                                                    "output_dir": tmp_path})
    assert same.profile == "cpu"
    same.deep["epsilons"].append(100.0)
    assert NOTEBOOKS["privacy_analysis"].values("cpu")["deep"] == cpu
    with pytest.raises(ValueError, match=r"deep\['level'\]: missing"):
        notebook_parameters("privacy_analysis", {"deep": {"n_seeds": 1}, "output_dir": tmp_path})


def test_validated_values_are_written_back_into_the_namespace(tmp_path):
    """After the call the notebook's parameter variables hold the validated values; profile,
    output_dir and the names the notebook does not declare are left as they are."""
    namespace = {"profile": "cpu", "rates": (0, 0.5), "n_seed": 3, "output_dir": tmp_path,
                 "pd": "a module"}
    cfg = notebook_parameters("robustness", namespace)
    assert namespace == {"profile": "cpu", "output_dir": tmp_path, "n_seed": 3,
                         "pd": "a module", **cfg.values}
    assert namespace["rates"] == [0.0, 0.5] and namespace["n_seeds"] == 10
    assert cfg.profile == "custom" and namespace["attacks"] == list(NOTEBOOKS["robustness"]
                                                                     .values("cpu")["attacks"])
    fresh = {}  # nothing given: the quick profile, the default folders
    assert notebook_parameters("continual_drift", fresh).profile == "quick"
    assert fresh == NOTEBOOKS["continual_drift"].values("quick")
    with pytest.raises(TypeError, match="namespace must be a mutable mapping"):
        notebook_parameters("robustness", None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'profile'"):
        notebook_parameters("robustness", profile="cpu")  # the old keyword form is gone


def test_every_profile_value_is_valid_and_complete():
    """Every notebook gives every parameter a valid value in every profile, and the
    profiles file holds exactly the notebooks there are models for."""
    for notebook in NOTEBOOKS.values():
        for profile in PROFILES:
            assert list(notebook.values(profile)) == notebook.spec
        assert set(notebook.execution) <= set(EXECUTION)
    with pytest.raises(ValueError, match=r"profile 'quick': betas\[0\]: input should be less "
                                         r"than or equal to 1, got 2.0"):
        good = NOTEBOOKS["ablation_theorems"]
        Notebook("x", good.model, {**good.profiles, "quick": {**good.profiles["quick"],
                                                              "betas": [2.0]}})
    with pytest.raises(ValueError, match=r"profile 'cpu': missing \['attacks'\]"):
        values = NOTEBOOKS["robustness"].values("quick")
        Notebook("x", Robustness, {"quick": values, "paper": values,
                                   "cpu": {k: v for k, v in values.items() if k != "attacks"}})


@pytest.mark.parametrize(("edit", "error", "match"), [
    (lambda t: t.replace("n_seeds = 3\n", "n_seeds = -3\n", 1), ValueError,
     r"notebook 'scenario_a_healthcare': profile 'quick': n_seeds: input should be greater"),
    (lambda t: t.replace("[robustness]", "[robustnes]", 1), ValueError,
     r"must hold the notebooks .*got .*'robustnes'"),
    (lambda t: t.replace("n_rounds = 15", "n_rounds = [15", 1), ValueError, "not valid TOML"),
    (lambda t: t.replace('claims = "robustness"\n', "", 1), ValueError, "needs 'claims'"),
])
def test_a_damaged_profiles_file_is_refused_naming_it(edit, error, match, tmp_path):
    """A value out of range, an unknown or missing notebook, broken TOML: refused when the
    file is read, naming the file (and the notebook and profile where there is one)."""
    damaged = tmp_path / "profiles.toml"
    damaged.write_text(edit(VALUES_FILE.read_text()))
    with pytest.raises(error, match=match) as err:
        load_notebooks(damaged)
    assert str(damaged) in str(err.value)


def _code_cells(name):
    nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    return [c for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_parameters_cell_is_rendered_from_the_declaration(name):
    """The tagged cell is exactly what the declaration renders, and it shows what the
    notebook runs: every parameter holds the quick profile's literal value (None only where
    None is the value: the default folders), so the cell alone runs the quick profile."""
    params = _code_cells(name)[0]
    assert "parameters" in params.metadata.get("tags", [])
    assert params.source == parameters_cell_source(name), (
        f"notebooks/{name}.ipynb's parameters cell differs from its declaration "
        "(topofl_lib/profiles.toml, notebook_models.py): run "
        "`python scripts/sync_parameters_cells.py`")
    assigned = {t.id: ast.literal_eval(n.value) for n in ast.parse(params.source).body
                for t in n.targets if isinstance(t, ast.Name)}
    assert assigned.pop("profile") == "quick" and assigned.pop("output_dir") is None
    declared = NOTEBOOKS[name]
    assert assigned == {**declared.values("quick"),
                        **{k: EXECUTION[k] for k in declared.execution}}
    assert [k for k, v in assigned.items() if v is None] == (
        ["data_dir"] if "data_dir" in declared.execution else [])


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_first_code_cell_hands_its_namespace_to_the_check(name):
    """Cell 2 calls notebook_parameters(name, globals()) and unpacks no parameter from cfg
    (the call writes the validated values back); no later cell rebinds cfg."""
    first = _code_cells(name)[1]
    calls = [n for n in ast.walk(ast.parse(first.source)) if isinstance(n, ast.Call)
             and getattr(n.func, "id", None) == "notebook_parameters"]
    assert len(calls) == 1
    assert f'cfg = notebook_parameters("{name}", globals())' in first.source.splitlines()
    declared = {*NOTEBOOKS[name].spec, *NOTEBOOKS[name].execution}
    assert not _assigned(first.source) & declared, "cell 2 sets a parameter again"
    later = "\n".join(c.source for c in _code_cells(name)[2:])
    rebound = [n for n in ast.walk(ast.parse(later)) if isinstance(n, ast.Name)
               and n.id == "cfg" and isinstance(n.ctx, ast.Store)]
    assert not rebound, "a later cell rebinds cfg (the validated parameters)"
    assert "write_claims(claims, results_dir, cfg.claims)" in later
    assert "cfg.profile" in later and "check_parameters" not in later


def test_write_parameters_cell_rewrites_only_that_cell(tmp_path):
    """A stale parameters cell is rewritten from the declaration; its id, tags and the
    other cells stay; a second run changes nothing."""
    path = tmp_path / "robustness.ipynb"
    nb = nbformat.read(REPO / "notebooks" / "robustness.ipynb", as_version=4)
    nb.cells[[c.cell_type for c in nb.cells].index("code")].source = 'profile = "quick"\n'
    nbformat.write(nb, path)
    assert write_parameters_cell(path, "robustness") is True
    assert path.read_text() == (REPO / "notebooks" / "robustness.ipynb").read_text()
    assert write_parameters_cell(path, "robustness") is False
    lines = parameters_cell_source("robustness").splitlines()
    assert ("n_seeds = 3              # scenario realisations per attack rate; cpu, paper: 10"
            in lines)
    assert lines[-1].startswith("output_dir = None        # None: $TOPOFL_OUTPUT_DIR")


def test_write_parameters_cell_names_an_unknown_notebook_before_reading_the_file(tmp_path):
    with pytest.raises(ValueError, match="unknown notebook 'nope'"):
        write_parameters_cell(tmp_path / "missing.ipynb", "nope")  # not FileNotFoundError


@pytest.mark.parametrize(("name", "params", "message"), [
    ("ablation_theorems", {"betas": [2.0]},
     "betas[0]: input should be less than or equal to 1, got 2.0"),
    ("gfc_clustering", {"datasets": ["iris", "irs"]}, "datasets[1]: input should be 'iris'"),
    ("robustness", {"n_seeds": "ten"}, "n_seeds: input should be a valid integer, got 'ten'"),
])
def test_papermill_bad_parameter_fails_first_cell_and_writes_nothing(
        name, params, message, tmp_path, monkeypatch):
    """The issue's example: papermill -y "betas: [2.0]" fails in the first code cell."""
    out = tmp_path / "out"
    monkeypatch.setenv("TOPOFL_OUTPUT_DIR", str(out))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    executed = tmp_path / "executed.ipynb"
    with pytest.raises(pm.PapermillExecutionError) as err:
        pm.execute_notebook(str(REPO / "notebooks" / f"{name}.ipynb"), str(executed),
                            parameters=params, cwd=str(REPO / "notebooks"), progress_bar=False)
    assert message in err.value.evalue
    assert not out.exists()
    ran = [c for c in nbformat.read(executed, as_version=4).cells
           if c.cell_type == "code" and c.execution_count]
    assert len(ran) == 3  # parameters, injected parameters, the failing first code cell


def test_output_dirs_default_env_and_refusal(tmp_path, monkeypatch):
    """Default build/interactive; $TOPOFL_OUTPUT_DIR; the published folders are refused."""
    monkeypatch.delenv("TOPOFL_OUTPUT_DIR", raising=False)
    monkeypatch.chdir(REPO / "notebooks")
    assert output_dirs() == (REPO / "build" / "interactive" / "figures",
                             REPO / "build" / "interactive" / "results")
    monkeypatch.setenv("TOPOFL_OUTPUT_DIR", str(tmp_path))
    assert output_dirs() == (tmp_path / "figures", tmp_path / "results")
    assert output_dirs(tmp_path / "x")[1] == tmp_path / "x" / "results"
    with pytest.raises(ValueError, match="published folder"):
        output_dirs("..")  # the repository root, seen from notebooks/
    monkeypatch.setenv("TOPOFL_OUTPUT_DIR", str(REPO))
    with pytest.raises(ValueError, match=r"\$TOPOFL_OUTPUT_DIR.*only `python -m topofl_lib "
                                         r"reproduce"):
        output_dirs()
    with pytest.raises(TypeError, match="output_dir must be a path or None"):
        output_dirs(3)


def test_an_output_dir_that_is_a_file_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    for given in (tmp_path / "notes.txt", tmp_path / "notes.txt" / "run"):
        with pytest.raises(ValueError, match=r"output_dir = .* cannot be a folder: .*notes\.txt "
                                             r"is a file"):
            output_dirs(given)
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_atomic_writes_leave_no_partial_file(tmp_path):
    """A failed write keeps the old content and leaves no temporary file."""
    target = write_text_atomic(tmp_path / "a.csv", "old\n")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.csv"]
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".csv"
        tmp.write_text("new\n")
    assert target.read_text() == "new\n" and len(list(tmp_path.iterdir())) == 1


def test_save_figure_writes_html_and_one_bundle(tmp_path, monkeypatch):
    """save_figure writes the HTML atomically and plotly.min.js once."""
    import plotly.graph_objects as go

    from topofl_lib.viz import figures

    monkeypatch.setattr(figures, "_PNG_FAILED", True)  # HTML only: no Chromium start
    fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 0]))
    assert figures.save_figure(fig, "a", tmp_path) == [tmp_path / "a.html"]
    bundle = tmp_path / "plotly.min.js"
    stamp = bundle.stat().st_mtime_ns
    figures.save_figure(fig, "b", tmp_path)
    assert bundle.stat().st_mtime_ns == stamp
    assert 'src="plotly.min.js"' in (tmp_path / "b.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.html", "b.html", "plotly.min.js"]


def test_execution_parameters_never_make_a_run_custom():
    """n_workers changes how a notebook runs, not what it measures: the label stays."""
    quick = notebook_parameters("fedtopo", {"profile": "quick", "n_workers": 2})
    assert quick.profile == "quick" and quick.n_workers == 2
    namespace = {"profile": "quick"}
    assert notebook_parameters("fedtopo", namespace).n_workers == 1 == namespace["n_workers"]
    with pytest.raises(ValueError, match="n_workers: input should be greater than or equal "
                                         "to 1, got 0"):
        notebook_parameters("fedtopo", {"profile": "quick", "n_workers": 0})
    robust = notebook_parameters("robustness", {"n_workers": 2})  # not its parameter: ignored
    assert "n_workers" not in robust.values


def test_papermill_profile_takes_that_profiles_values_for_what_was_not_passed(monkeypatch):
    """`papermill NB OUT -p profile cpu -p n_seeds 2`: the cell's quick values give way to
    the cpu profile's, but n_seeds is the one passed (the run is custom); without a
    profile passed the cell's values stand."""
    cell = parameters_cell_source("robustness")
    namespace = {k: v for k, v in NOTEBOOKS["robustness"].values("quick").items()}
    injected = '# Parameters\nprofile = "cpu"\nn_seeds = 2\n'
    monkeypatch.setattr(notebook_params, "_cells_run_before", lambda: [cell, injected])
    cfg = notebook_parameters("robustness", {**namespace, "profile": "cpu", "n_seeds": 2})
    cpu = NOTEBOOKS["robustness"].values("cpu")
    assert cfg.values == {**cpu, "n_seeds": 2} and cfg.profile == "custom"
    monkeypatch.setattr(notebook_params, "_cells_run_before",
                        lambda: [cell, '# Parameters\nprofile = "cpu"\n'])
    assert notebook_parameters("robustness", {**namespace, "profile": "cpu"}).values == cpu
    monkeypatch.setattr(notebook_params, "_cells_run_before",
                        lambda: [cell, "# Parameters\nn_seeds = 2\n"])
    cfg = notebook_parameters("robustness", {**namespace, "n_seeds": 2})
    assert cfg.values == {**namespace, "n_seeds": 2} and cfg.profile == "custom"


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_parameters_cell_comment_names_every_profile(name):
    """The parameters cell's comment tells a reader every profile it can take."""
    source = parameters_cell_source(name)
    comments = " ".join(line for line in source.splitlines() if line.lstrip().startswith("#"))
    assert [p for p in PROFILES if not re.search(rf"\b{p}\b", comments)] == []


# -- issue 23: writes outside where they belong, parameters papermill would drop ---------


def test_output_inside_or_linked_to_a_published_folder_is_refused(tmp_path, monkeypatch):
    """By real path: a published folder, a folder inside one, or links to them."""
    monkeypatch.delenv("TOPOFL_OUTPUT_DIR", raising=False)
    for bad in (REPO / "results", REPO / "figures", REPO / "results" / "claims" / "x"):
        with pytest.raises(ValueError, match=rf"output_dir = '{bad}' would write into the "
                                             rf"published folder {REPO}/(results|figures)"):
            notebook_parameters("robustness", {"output_dir": bad})
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "results").symlink_to(REPO / "results")
    (linked / "figures").symlink_to(REPO / "figures")
    with pytest.raises(ValueError, match=rf"published folder {REPO}/figures .*real path "
                                         rf"{REPO}/figures"):
        output_dirs(linked)
    (linked / "figures").unlink()
    with pytest.raises(ValueError, match=rf"published folder {REPO}/results"):
        output_dirs(linked)
    monkeypatch.setenv("TOPOFL_OUTPUT_DIR", str(linked))
    with pytest.raises(ValueError, match=r"\$TOPOFL_OUTPUT_DIR"):
        output_dirs()


def test_write_claims_refuses_a_published_folder_by_real_path(tmp_path, monkeypatch):
    """A results folder linked to the published one after the check: write_claims refuses
    it, so a notebook cannot overwrite results/claims/ (a stand-in checkout here)."""
    from topofl_lib.results import claim_rows, write_claims

    checkout = tmp_path / "checkout"
    (checkout / "topofl_lib").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    published = checkout / "results" / "claims"
    published.mkdir(parents=True)
    (published / "robustness.csv").write_text("published rows\n")
    monkeypatch.chdir(checkout)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results").symlink_to(checkout / "results")
    rows = claim_rows({"ptopofl.robust.50.ptopofl": [0.5]}, "quick")
    with pytest.raises(ValueError, match=rf"write_claims would write into the published folder "
                                         rf"{checkout}/results"):
        write_claims(rows, out / "results", "robustness")
    assert (published / "robustness.csv").read_text() == "published rows\n"
    assert [p.name for p in published.iterdir()] == ["robustness.csv"]
    assert write_claims(rows, tmp_path / "elsewhere", "robustness").exists()


def _papermill(notebook: Path, params, tmp_path, monkeypatch):
    """Run ``notebook`` (cwd notebooks/) under papermill; the error it fails with."""
    monkeypatch.setenv("TOPOFL_OUTPUT_DIR", str(tmp_path / "env_out"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    with pytest.raises(pm.PapermillExecutionError) as err:
        pm.execute_notebook(str(notebook), str(tmp_path / "executed.ipynb"),
                            parameters=params, cwd=str(REPO / "notebooks"), progress_bar=False)
    assert not (tmp_path / "env_out").exists() and not (tmp_path / "mine").exists()
    return err.value


def test_papermill_unknown_parameter_fails_naming_it_and_the_known_ones(tmp_path, monkeypatch):
    """`-p n_seed 1` (misspelt): papermill only warns; the parameter check refuses it."""
    err = _papermill(REPO / "notebooks" / "continual_drift.ipynb",
                     {"n_seed": 1, "n_rounds": 12}, tmp_path, monkeypatch)
    assert err.ename == "TypeError"
    assert err.evalue == (
        "papermill passed parameter(s) ['n_seed'], which 'continual_drift' does not have "
        "(misspelt?); its parameters are ['drift_threshold', 'n_rounds', 'n_seeds', "
        "'output_dir', 'profile']")


def test_papermill_parameters_overwritten_by_an_untagged_cell_fail(tmp_path, monkeypatch):
    """A parameters cell without its tag runs after papermill's values and resets them to
    the quick values: the check says so before anything is written (before: the profile's values ran
    and wrote to the default folder)."""
    nb = nbformat.read(REPO / "notebooks" / "continual_drift.ipynb", as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    first.metadata["tags"] = []
    untagged = tmp_path / "continual_drift.ipynb"
    nbformat.write(nb, untagged)
    err = _papermill(untagged, {"n_seeds": 1, "output_dir": str(tmp_path / "mine")},
                     tmp_path, monkeypatch)
    assert err.ename == "ValueError"
    assert err.evalue.startswith("['n_seeds', 'output_dir'] passed to papermill were set again "
                                 "by a later cell before this check")
    assert "lost its 'parameters' tag" in err.evalue
    with pytest.raises(ValueError, match=r"has 0 code cells tagged 'parameters'"):
        parameters_cell(untagged)


def test_parameters_cell_of_every_notebook_takes_what_reproduce_passes():
    """Each registered notebook has one parameters cell setting profile, output_dir, every
    parameter of its profiles and its execution parameters (what reproduce passes)."""
    for name, notebook in NOTEBOOKS.items():
        names = parameters_cell(REPO / "notebooks" / f"{name}.ipynb",
                                ["profile", "output_dir", *notebook.spec, *notebook.execution])
        assert names == {"profile", "output_dir", *notebook.spec, *notebook.execution}


# -- issue 28: a clean first run -------------------------------------------------------


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_papermill_reads_every_parameter_without_a_warning(name, caplog):
    """papermill parses each line of the parameters cell (a help with a second '=' would
    make it log "Unable to parse line ..." on every run) and finds every parameter."""
    with caplog.at_level("WARNING", logger="papermill"):
        found = pm.inspect_notebook(str(REPO / "notebooks" / f"{name}.ipynb"))
    assert [r.getMessage() for r in caplog.records] == []
    assert set(found) == {"profile", *NOTEBOOKS[name].spec, *NOTEBOOKS[name].execution,
                          "output_dir"}


def test_every_notebook_has_unique_cell_ids():
    """nbformat 4.5 with an id on every cell: reading one (papermill, nbval, reproduce)
    emits no MissingIDFieldWarning, and an edit with nbformat keeps the ids."""
    import warnings

    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # MissingIDFieldWarning, DuplicateCellId
            nb = nbformat.read(path, as_version=4)
            nbformat.validate(nb)
        assert (nb.nbformat, nb.nbformat_minor) >= (4, 5), path.name
        ids = [cell.get("id") for cell in nb.cells]
        assert all(ids) and len(set(ids)) == len(ids), path.name


def test_the_privacy_notebooks_deep_runs_are_the_deep_notebooks():
    """The privacy notebook's deep DP runs share the deep notebook's protocol in every
    profile, so their non-private runs are that notebook's stored runs."""
    privacy, deep = NOTEBOOKS["privacy_analysis"], NOTEBOOKS["ptopofl_deep"]
    names = ("n_seeds", "n_rounds", "local_epochs", "n_train", "n_test")
    for profile in PROFILES:
        mine, theirs = privacy.values(profile), deep.values(profile)
        assert {k: mine["deep"][k] for k in names} == {k: theirs[k] for k in names}
        assert list(mine["deep"]) == ["epsilons", "level", *names]
        assert mine["dp_seeds"] >= (2 if profile == "quick" else 20)
        assert theirs["alphas"][0] == 0.1 and "fashion_mnist" in theirs["datasets"]


def test_profiles_that_mean_all_of_a_library_list_hold_all_of_it():
    """profiles.toml spells out lists that the library also holds (every FedTopo Table 1
    method, every attack, the paper-data settings, the bundled table's columns): they
    must stay equal to the library's, so that a method added there is run here too."""
    from topofl_lib.clustering.evaluation import CLUSTERING_DATASETS, PAPER_DATASETS
    from topofl_lib.data.records import MEDICALDATA
    from topofl_lib.data.scenarios import ATTACKS
    from topofl_lib.fedtopo.schedules import SCHEDULES
    from topofl_lib.studies.fedtopo import TABLE1_METHODS
    from topofl_lib.studies.own_data import OWN_DATA_SOURCE, OWN_DATA_TABLE
    from topofl_lib.studies.paper_data import settings_of_paper
    from topofl_lib.studies.table1 import TABLE1_VARIANTS

    def values(name, profile="paper"):
        return NOTEBOOKS[name].values(profile)

    for profile in ("cpu", "paper"):
        assert values("fedtopo", profile)["methods"] == list(TABLE1_METHODS)
    assert values("fedtopo")["schedules"] == list(SCHEDULES)
    assert values("fedtopo")["paper_settings"] == settings_of_paper("FedTopo")
    assert values("ptopofl_deep")["paper_settings"] == settings_of_paper("pTopoFL")
    assert values("robustness")["attacks"] == list(ATTACKS)
    assert values("gfc_clustering")["table1_datasets"] == list(PAPER_DATASETS)
    assert values("gfc_clustering")["datasets"] == [d for d in CLUSTERING_DATASETS
                                                    if d != "waveform"]
    demo, own = MEDICALDATA[OWN_DATA_TABLE], values("own_data", "quick")
    assert own["records_path"] == OWN_DATA_SOURCE
    assert (own["site"], own["label"], own["positive"], own["features"]) == (
        demo.site, demo.label, demo.positive, list(demo.features))
    assert own["methods"] == list(TABLE1_VARIANTS["ours"])
