"""reproduce publishes whole notebooks or nothing, keeps profiles apart, survives SIGKILL.

Every test runs ``reproduce`` in a temporary copy: a tmp folder with two tiny notebooks
(``tiny_a``, ``tiny_b``) registered through ``reproduce(notebooks=...)``. Each tiny
notebook reads ``value.txt`` and writes two figures, the shared ``plotly.min.js`` and one
claim row; flag files make it hang (after writing its figures) or fail.
"""

import hashlib
import importlib
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from datetime import datetime
from pathlib import Path

import nbformat
import pandas as pd
import pytest

import topofl_lib.publish as publish_module
from topofl_lib.claims_summary import comparison_document
from topofl_lib.notebook_params import Notebook
from topofl_lib.publish import PLOTLY_MIME, fit_notebook, write_summary
from topofl_lib.reproduce import (
    ProfileRefused,
    ReproduceError,
    console,
    figure_renderer,
    kernel_manager_config,
    main,
    reproduce,
)
from topofl_lib.results import claim_rows, write_claims

REPO = Path(__file__).resolve().parents[1]
CLAIMS = {"tiny_a": "ptopofl.t1.hc.auc.fedavg", "tiny_b": "ptopofl.t1.hc.auc.fedprox"}

CODE = '''\
import time
from pathlib import Path

from topofl_lib.outputs import output_dirs
from topofl_lib.results import claim_rows, write_claims

figures_dir, results_dir = output_dirs(output_dir)
value = float(Path("value.txt").read_text())
figures_dir.mkdir(parents=True, exist_ok=True)
names = [NAME] + ([NAME + "_extra"] if Path(NAME + ".extra").exists() else [])
for name in names:
    for ext in ("html", "png"):
        (figures_dir / f"{name}.{ext}").write_text(f"{name} {value} {profile}")
(figures_dir / "plotly.min.js").write_text("bundle")
if Path(NAME + ".hang").exists():
    Path(NAME + ".started").touch()
    time.sleep(300)
if Path(NAME + ".fail").exists():
    raise RuntimeError("planned failure")
write_claims(claim_rows({CLAIM: [value, value + 0.01]}, profile), results_dir, NAME)
'''

REGISTRY_CODE = '''\
from topofl_lib.notebook_models import Ints, Parameters, about
from topofl_lib.notebook_params import Notebook


class Tiny(Parameters):
    n: Ints(1) = about("runs")


def tiny(name, cpu=2):
    return Notebook(name, Tiny, {"quick": {"n": 1}, "cpu": {"n": cpu}, "paper": {"n": 3}})


REGISTRY = {"tiny_a": tiny("tiny_a"), "tiny_b": tiny("tiny_b")}
'''
namespace: dict = {}
exec(REGISTRY_CODE, namespace)
REGISTRY = namespace["REGISTRY"]


def write_notebook(path: Path, name: str, claim: str, extra_cells=()) -> None:
    """A tiny notebook ``name`` (the CODE cell, then ``extra_cells``) at ``path``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    params = nbformat.v4.new_code_cell('profile = "quick"\nn = 1\noutput_dir = None')
    params.metadata["tags"] = ["parameters"]
    code = f"NAME, CLAIM = {name!r}, {claim!r}\n" + CODE
    nb.cells = [params, nbformat.v4.new_code_cell(code),
                *map(nbformat.v4.new_code_cell, extra_cells)]
    nbformat.write(nb, path)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A tmp 'repository' with the tiny notebooks; kernels import this checkout's code."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.delenv("TOPOFL_OUTPUT_DIR", raising=False)
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    for name, cid in CLAIMS.items():
        write_notebook(nbs / f"{name}.ipynb", name, cid)
    (nbs / "value.txt").write_text("1")
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "explorer_client_panel.png").write_bytes(b"not a notebook's")
    return tmp_path


def run(repo, profile="cpu", **kwargs):
    return reproduce(profile, notebooks_dir=repo / "notebooks", output_dir=repo,
                     notebooks=kwargs.pop("notebooks", REGISTRY), **kwargs)


def published(repo) -> dict[str, bytes]:
    """Every file under figures/ and results/, by relative path."""
    return {p.relative_to(repo).as_posix(): p.read_bytes()
            for d in ("figures", "results") for p in sorted((repo / d).rglob("*"))
            if p.is_file()}


def fake_published(repo, profile="cpu", value=1.0):
    """A published state as an earlier run left it (no manifest: an older checkout)."""
    for name, cid in CLAIMS.items():
        for ext in ("html", "png"):
            (repo / "figures" / f"{name}.{ext}").write_text(f"{name} old")
        write_claims(claim_rows({cid: [value, value]}, profile), repo / "results", name)
    (repo / "figures" / "plotly.min.js").write_text("bundle")
    write_summary(repo / "results")
    return published(repo)


def files_of(name, files):
    return {k for k in files if Path(k).name.startswith(f"{name}.")}


def test_publish_then_quick_never_touches_published(repo):
    """cpu publishes whole notebooks; quick writes only build/reproduce/quick/."""
    path = run(repo, "cpu")
    assert path == repo / "results" / "claims.csv"
    before = published(repo)
    claims = (repo / "results" / "claims.csv").read_text()
    assert claims.count(",cpu,") == 2
    assert "- `cpu`: 2 rows (tiny_a, tiny_b)" in (repo / "results" / "comparison.md").read_text()
    assert (repo / "figures" / "tiny_a.png").read_text() == "tiny_a 1.0 cpu"
    assert (repo / "results" / "notebooks" / "tiny_b.ipynb").exists()
    manifest = json.loads((repo / "results" / "manifest.json").read_text())
    claim_file = repo / "results" / "claims" / "tiny_a.csv"
    assert manifest["tiny_a"] == {"profile": "cpu", "files": [
        "figures/tiny_a.html", "figures/tiny_a.png", "results/claims/tiny_a.csv",
        "results/notebooks/tiny_a.ipynb"], "claims": {
        "file": "results/claims/tiny_a.csv", "rows": 1, "ids": [CLAIMS["tiny_a"]],
        "sha256": hashlib.sha256(claim_file.read_bytes()).hexdigest()}}
    assert not list((repo / "build" / "reproduce" / "staging").iterdir())
    environment = json.loads((repo / "results" / "environment.json").read_text())
    assert sorted(environment["notebooks"]) == ["tiny_a", "tiny_b"]
    runs = environment["notebooks"].values()
    assert {r["profile"] for r in runs} == {"cpu"}
    assert all(datetime.fromisoformat(r["finished"]).tzinfo is not None for r in runs)
    assert {r["git"]["commit"] for r in runs} == {None}  # the tmp folder is no checkout
    ids = {r["environment"] for r in runs}
    assert len(ids) == 1 and set(environment["environments"]) == ids  # stored once
    machine = next(iter(environment["environments"].values()))
    assert machine["packages"]["numpy"] == importlib.metadata.version("numpy")
    assert machine["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert "[`environment.json`](environment.json)" in (
        repo / "results" / "comparison.md").read_text()

    (repo / "notebooks" / "value.txt").write_text("5")
    quick = run(repo, "quick")
    assert published(repo) == before  # byte-identical
    root = repo / "build" / "reproduce" / "quick"
    assert quick == root / "results" / "claims.csv"
    assert quick.read_text().count(",quick,") == 2
    assert (root / "figures" / "tiny_b.html").read_text() == "tiny_b 5.0 quick"
    assert (root / "notebooks" / "tiny_a.ipynb").exists()
    assert set(json.loads((root / "results" / "environment.json").read_text())["notebooks"]) == {
        "tiny_a", "tiny_b"}


def test_cli_quick_says_where_it_wrote(repo, monkeypatch, capsys):
    """The CLI's quick run ends by saying nothing was published, and where its files are."""
    monkeypatch.setattr("topofl_lib.reproduce.NOTEBOOKS", REGISTRY)
    before = fake_published(repo)
    assert main(["reproduce", "--profile", "quick", "--notebooks-dir",
                 str(repo / "notebooks"), "--output-dir", str(repo), "--only", "tiny_a"]) == 0
    out = capsys.readouterr().out
    assert "nothing was published" in out and "build/reproduce/quick" in out
    assert published(repo) == before


def test_lower_profile_refused_without_force(repo, capsys, monkeypatch):
    """cpu never replaces paper rows (other parameters) unless forced; nothing runs first."""
    before = fake_published(repo, profile="paper")
    with pytest.raises(ProfileRefused) as err:
        run(repo, "cpu")
    msg = str(err.value)
    for word in ("tiny_a", "tiny_b", "'paper'", "cpu", "--force"):
        assert word in msg
    assert published(repo) == before
    assert not (repo / "results" / "notebooks").exists()  # refused before running
    monkeypatch.setattr("topofl_lib.reproduce.NOTEBOOKS", REGISTRY)
    args = ["reproduce", "--profile", "cpu", "--notebooks-dir", str(repo / "notebooks"),
            "--output-dir", str(repo)]
    assert main(args) == 2
    assert "--force" in capsys.readouterr().err and published(repo) == before

    run(repo, "cpu", only=["tiny_a"], force=True)
    profiles = pd.read_csv(repo / "results" / "claims.csv")["profile"].value_counts()
    assert profiles["cpu"] == 1 and profiles["paper"] == 1
    md = (repo / "results" / "comparison.md").read_text()
    assert "- `cpu`: 1 rows (tiny_a)" in md and "- `paper`: 1 rows (tiny_b)" in md
    assert "Generated by" not in md


def test_auto_keeps_higher_profile_and_runs_the_rest(repo, capsys, monkeypatch):
    """auto (make reproduce) on a CPU keeps paper rows, says so, and publishes the others."""
    monkeypatch.setattr("topofl_lib.reproduce.resolve_profile", lambda p: "cpu")
    fake_published(repo, profile="paper")
    write_claims(claim_rows({CLAIMS["tiny_b"]: [1.0, 1.0]}, "cpu"), repo / "results", "tiny_b")
    before = published(repo)
    run(repo, "auto")
    err = capsys.readouterr().err
    assert "kept the published results of 'tiny_a'" in err and "--profile paper" in err
    assert "results of 'tiny_b'" not in err
    after = published(repo)
    for key in files_of("tiny_a", before):
        assert after[key] == before[key], key
    assert ",cpu," in (repo / "results" / "claims" / "tiny_b.csv").read_text()
    assert (repo / "figures" / "tiny_b.png").read_text() == "tiny_b 1.0 cpu"


def test_same_protocol_is_not_refused(repo):
    """Where cpu runs the paper protocol, cpu may replace paper rows (nothing is lost)."""
    fake_published(repo, profile="paper")
    same = {"tiny_a": Notebook("tiny_a", namespace["Tiny"],
                               {"quick": {"n": 3}, "cpu": {"n": 3}, "paper": {"n": 3}})}
    run(repo, "cpu", only=["tiny_a"], notebooks=same)
    assert ",cpu," in (repo / "results" / "claims" / "tiny_a.csv").read_text()


def test_failed_notebook_publishes_nothing(repo):
    """A failing notebook leaves its published files byte-identical; earlier ones publish."""
    before = fake_published(repo)
    (repo / "notebooks" / "value.txt").write_text("2")
    (repo / "notebooks" / "tiny_b.fail").touch()
    with pytest.raises(ReproduceError, match="'tiny_b' failed .RuntimeError: planned") as err:
        run(repo, "cpu")
    after = published(repo)
    for key in files_of("tiny_b", before):
        assert after[key] == before[key], key
    assert (repo / "figures" / "tiny_a.html").read_text() == "tiny_a 2.0 cpu"
    executed = Path(str(err.value).rsplit(": ", 1)[1])
    assert executed.exists() and "planned failure" in executed.read_text()


def test_stale_files_of_a_notebook_are_removed(repo):
    """A figure the notebook no longer makes is removed; other files stay."""
    (repo / "notebooks" / "tiny_a.extra").touch()
    run(repo, "cpu", only=["tiny_a"])
    assert (repo / "figures" / "tiny_a_extra.png").exists()
    (repo / "notebooks" / "tiny_a.extra").unlink()
    run(repo, "cpu", only=["tiny_a"])
    assert not (repo / "figures" / "tiny_a_extra.png").exists()
    assert (repo / "figures" / "tiny_a.png").exists()
    assert (repo / "figures" / "explorer_client_panel.png").read_bytes() == b"not a notebook's"


DRIVER = REGISTRY_CODE + '''
import os
import signal
import sys

from topofl_lib.reproduce import reproduce

if sys.argv[2] == "kill-in-move":  # SIGKILL right after tiny_b's second file is in place
    real = os.replace

    def replace(src, dst):
        real(src, dst)
        if str(dst).endswith("tiny_b.png"):
            os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace
root = sys.argv[1]
reproduce("cpu", notebooks_dir=root + "/notebooks", output_dir=root, notebooks=REGISTRY)
'''


def start_driver(repo, mode):
    (repo / "driver.py").write_text(DRIVER)
    return subprocess.Popen([sys.executable, str(repo / "driver.py"), str(repo), mode],
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def assert_consistent_summary(repo):
    """claims.csv and comparison.md are exactly those of the per-notebook files."""
    claims, markdown = comparison_document(repo / "results")
    assert (repo / "results" / "claims.csv").read_text() == claims.to_csv(
        index=False, float_format="%.6g")
    assert (repo / "results" / "comparison.md").read_text() == markdown


def test_sigkill_mid_run_leaves_old_or_finished_files(repo):
    """SIGKILL while tiny_b runs: tiny_a's files all new, everything else byte-identical."""
    before = fake_published(repo)
    (repo / "notebooks" / "value.txt").write_text("2")
    (repo / "notebooks" / "tiny_b.hang").touch()
    proc = start_driver(repo, "hang")
    try:
        deadline = time.monotonic() + 240
        while not (repo / "notebooks" / "tiny_b.started").exists():
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "tiny_b never started"
            time.sleep(0.2)
        time.sleep(0.5)  # tiny_b's figures are in its staging folder now
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    after = published(repo)
    new_a = files_of("tiny_a", before)
    for key in new_a:
        assert after[key] != before[key] and b"2" in after[key], key
    summary = {"results/claims.csv", "results/comparison.md", "results/manifest.json"}
    for key in set(before) - new_a - summary:
        assert after[key] == before[key], key
    assert set(after) == set(before) | {"results/manifest.json", "results/environment.json",
                                        "results/notebooks/tiny_a.ipynb"}
    assert_consistent_summary(repo)
    means = pd.read_csv(repo / "results" / "claims.csv").set_index("id")["measured_mean"]
    assert means[CLAIMS["tiny_a"]] == pytest.approx(2.005)
    assert means[CLAIMS["tiny_b"]] == pytest.approx(1.0)
    assert not (repo / "build" / "reproduce" / "journal-published.json").exists()


def test_sigkill_while_moving_is_completed_by_the_next_run(repo):
    """SIGKILL between two renames: the journal completes the notebook at the next run."""
    before = fake_published(repo)
    (repo / "notebooks" / "value.txt").write_text("2")
    proc = start_driver(repo, "kill-in-move")
    assert proc.wait(timeout=300) == -signal.SIGKILL
    journal = repo / "build" / "reproduce" / "journal-published.json"
    assert journal.exists()
    torn = published(repo)  # tiny_b.png is new, its claim file still old
    assert torn["figures/tiny_b.png"] == b"tiny_b 2.0 cpu"
    assert torn["results/claims/tiny_b.csv"] == before["results/claims/tiny_b.csv"]
    run(repo, "quick", only=["tiny_a"])  # quick leaves the pending publish alone
    assert published(repo) == torn and journal.exists()
    run(repo, "cpu", only=["tiny_a"])  # completes tiny_b first
    assert not journal.exists()
    after = published(repo)
    for key in files_of("tiny_b", after):
        assert b"2" in after[key], key
    assert "tiny_b" in json.loads(after["results/manifest.json"])
    assert_consistent_summary(repo)


FIGURE_CELL = """\
import plotly.graph_objects as go

go.Figure(go.Scatter(x=[0, 1, 2], y=[1, 0, 2]))
"""


def test_published_notebook_shows_its_figures(repo):
    """The executed notebook is published with its outputs, a figure with a static PNG."""
    if figure_renderer() != "plotly_mimetype+png":
        pytest.skip("kaleido cannot export PNG here (Chromium missing)")
    write_notebook(repo / "notebooks" / "tiny_fig.ipynb", "tiny_fig",
                   "ptopofl.t1.hc.auc.scaffold", [FIGURE_CELL])
    registry = {"tiny_fig": namespace["tiny"]("tiny_fig")}
    renderer = os.environ.get("PLOTLY_RENDERER")
    run(repo, "cpu", notebooks=registry)
    assert os.environ.get("PLOTLY_RENDERER") == renderer  # set for the kernels only
    path = repo / "results" / "notebooks" / "tiny_fig.ipynb"
    outputs = [o for c in nbformat.read(path, as_version=4).cells for o in c.get("outputs", [])]
    figure = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(figure) == 1 and PLOTLY_MIME in figure[0]["data"]
    assert path.stat().st_size <= publish_module.NOTEBOOK_LIMIT


def _notebook_with(tmp_path, outputs) -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = outputs
    nb.cells = [nbformat.v4.new_markdown_cell("text"), cell]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    return path


def test_fit_notebook_keeps_small_drops_interactive_data_then_refuses(tmp_path):
    """Within the bound: untouched. Over it: plotly data with a PNG goes, then an error."""
    png = "iVBORw0KGgo" * 100
    figure = nbformat.v4.new_output("display_data", data={
        PLOTLY_MIME: {"data": [{"y": list(range(5000))}]}, "image/png": png})
    table = nbformat.v4.new_output("execute_result", data={"text/plain": "a table"})
    path = _notebook_with(tmp_path, [figure, table])
    before = path.read_bytes()
    assert fit_notebook(path, limit=len(before)) == len(before)
    assert path.read_bytes() == before

    size = fit_notebook(path, limit=len(before) - 1)
    assert size == path.stat().st_size < 5000
    kept = nbformat.read(path, as_version=4).cells[1].outputs
    assert kept[0]["data"] == {"image/png": png} and kept[1]["data"] == {"text/plain": "a table"}

    big = nbformat.v4.new_output("stream", name="stdout", text="y" * 30_000)
    path = _notebook_with(tmp_path, [big])
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match=r"nb.ipynb takes 0.03 MB, over the 0.01 MB bound"
                                           r".*cell 1 stream"):
        fit_notebook(path, limit=10_000)
    assert path.read_bytes() == before


def test_oversized_notebook_publishes_nothing(repo, monkeypatch):
    """An executed notebook over the bound stops reproduce; its files stay as they were."""
    before = fake_published(repo)
    (repo / "notebooks" / "value.txt").write_text("2")
    monkeypatch.setattr(publish_module, "NOTEBOOK_LIMIT", 1000)
    with pytest.raises(ReproduceError, match="'tiny_a': the executed notebook tiny_a.ipynb "
                                             "takes .* over the 0.001 MB bound"):
        run(repo, "cpu", only=["tiny_a"])
    assert published(repo) == before


def test_cli_errors_are_one_line(tmp_path, capsys):
    """A bad argument or a missing notebooks folder: one error line, no traceback, status 2."""
    with pytest.raises(SystemExit) as exit_:
        main(["reproduce", "--profile", "fast"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "argument --profile: invalid choice: 'fast'" in err
    code = main(["reproduce", "--profile", "quick", "--notebooks-dir", str(tmp_path / "nope"),
                 "--output-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("error: notebook(s)") and "nope" in err
    assert not (tmp_path / "build").exists()


# -- issue 28: the topofl command ------------------------------------------------------


def _console(monkeypatch, *args: str) -> int:
    """Run the ``topofl`` console script's function with ``args``: its exit status."""
    monkeypatch.setattr(sys, "argv", ["topofl", *args])
    try:
        return console()
    except SystemExit as exit_:
        return exit_.code


def test_console_script_is_declared_and_is_the_cli():
    """pyproject's ``topofl`` script names :func:`console`, which runs :func:`main`."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["topofl"].partition(":")
    assert getattr(importlib.import_module(module), name) is console


def test_version_prints_the_package_version(monkeypatch, capsys):
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert _console(monkeypatch, "--version") == 0
    assert capsys.readouterr().out == f"topofl {version}\n"
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"topofl {version}\n"


@pytest.mark.parametrize("args,message", [
    ((), "topofl: error: the following arguments are required: command"),
    (("frobnicate",), "topofl: error: argument command: invalid choice: 'frobnicate'"),
    (("reproduce", "--workers", "0"),
     "topofl reproduce: error: argument --workers: must be >= 1, got 0"),
    (("flower", "--rounds", "ten"),
     "topofl flower: error: argument --rounds: expected an integer, got 'ten'"),
])
def test_console_bad_arguments_one_line_exit_2(monkeypatch, capsys, args, message):
    assert _console(monkeypatch, *args) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith(message)
    assert len(out.err.strip().splitlines()) == 1


def test_without_fcntl_reproduce_says_what_to_do(tmp_path):
    """Where Python has no fcntl (Windows) the module imports, and reproduce stops with one
    line, status 2, before anything is written."""
    code = ("import sys; sys.modules['fcntl'] = None\n"  # `import fcntl` raises ImportError
            "from topofl_lib.reproduce import main\n"
            f"sys.exit(main(['reproduce', '--only', 'continual_drift', '--notebooks-dir', "
            f"{str(REPO / 'notebooks')!r}, '--output-dir', {str(tmp_path)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: reproduce locks its output folders with POSIX file "
                                  "locks (Python's fcntl module)")
    assert "WSL 2" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_reproduce_prints_no_spurious_warning(repo):
    """A notebook run by reproduce, in a process of its own as ``make reproduce`` runs it:
    its stderr has neither ipykernel's "Kernel is running over TCP without encryption"
    (the kernel gets CurveZMQ keys, kernel_manager_config) nor nbformat's
    MissingIDFieldWarning nor papermill's "Unable to parse line"."""
    code = REGISTRY_CODE + (
        "from topofl_lib.reproduce import reproduce\n"
        f"reproduce('quick', ['tiny_a'], {str(repo / 'notebooks')!r}, {str(repo)!r}, "
        "notebooks=REGISTRY)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=repo, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (repo / "build" / "reproduce" / "quick" / "results" / "claims" / "tiny_a.csv").exists()
    for spurious in ("without encryption", "MissingIDFieldWarning", "Unable to parse",
                     "Passed unknown parameter"):
        assert spurious not in done.stderr, done.stderr


def test_kernel_manager_config_asks_for_encryption():
    """reproduce's kernels are provisioned with CurveZMQ keys where the kernel spec allows,
    and the notebooks' kernel spec (ipykernel's) allows it."""
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    manager = KernelManager(kernel_name="python3", config=kernel_manager_config())
    assert manager.transport_encryption == "auto"
    spec = KernelSpecManager().get_kernel_spec("python3")
    assert "curve" in spec.metadata.get("supported_encryption", [])


def test_without_fork_flower_says_what_to_do(monkeypatch, capsys, tmp_path):
    """Where Python has no os.fork (Windows), ``topofl flower`` stops with one line."""
    monkeypatch.delattr(os, "fork")
    assert _console(monkeypatch, "flower", "--workdir", str(tmp_path / "fl")) == 2
    err = capsys.readouterr().err
    assert err.startswith("topofl flower: error: the local federation forks its SuperNodes")
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "fl").exists()


# -- issue 23 --------------------------------------------------------------------------


def test_damaged_published_claim_file_refuses_before_running(repo, capsys, monkeypatch):
    """A published claim file cut short stops a run of another notebook before anything
    runs (exit 2, one line naming it and the remedies); run on its own, its notebook
    re-publishes it."""
    run(repo, "cpu")
    capsys.readouterr()
    path = repo / "results" / "claims" / "tiny_b.csv"
    data = path.read_bytes()
    path.write_bytes(data[: int(0.6 * len(data))])
    before = published(repo)
    monkeypatch.setattr("topofl_lib.reproduce.NOTEBOOKS", REGISTRY)
    args = ["reproduce", "--profile", "cpu", "--notebooks-dir", str(repo / "notebooks"),
            "--output-dir", str(repo)]
    assert main([*args, "--only", "tiny_a"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"error: {path}")
    assert f"git checkout -- {path}" in err and "--only tiny_b" in err
    assert published(repo) == before
    assert not list((repo / "build" / "reproduce" / "staging").iterdir())  # nothing ran
    assert main([*args, "--only", "tiny_a", "tiny_b"]) == 2  # not on its own: refused too
    assert main([*args, "--only", "tiny_b"]) == 0
    assert path.read_bytes() == data
    assert_consistent_summary(repo)


def test_journal_outside_the_published_folders_is_refused(repo, capsys, monkeypatch):
    """A journal asking to remove ../some_file: reproduce refuses it whole, naming it."""
    victim = repo.parent / "some_file"
    victim.write_text("precious")
    journal = repo / "build" / "reproduce" / "journal-published.json"
    journal.parent.mkdir(parents=True)
    journal.write_text(json.dumps({"notebook": "tiny_a", "moves": [],
                                   "remove": ["../some_file"], "results": "results"}))
    monkeypatch.setattr("topofl_lib.reproduce.NOTEBOOKS", REGISTRY)
    assert main(["reproduce", "--profile", "cpu", "--notebooks-dir", str(repo / "notebooks"),
                 "--output-dir", str(repo)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"the publish journal {journal} removes '../some_file', outside" in err
    assert victim.read_text() == "precious" and journal.exists()
    assert not (repo / "results").exists()


def test_a_published_notebook_carries_no_path_of_the_machine(repo):
    """The staging folder reaches the kernel through $TOPOFL_OUTPUT_DIR: the injected
    parameters (the profile's every value) say ``output_dir = None`` and papermill's
    record names the repository's paths, not the folders the notebook ran in; yet the
    files went there and were published. (The tiny notebook's own last output, the claim
    file's path, still names its folder: what a notebook prints is its own.)"""
    run(repo, "cpu")
    nb = nbformat.read(repo / "results" / "notebooks" / "tiny_a.ipynb", as_version=4)
    (injected,) = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected.source.splitlines()[1:] == ['profile = "cpu"', "n = 2", "output_dir = None"]
    assert (nb.metadata.papermill.input_path, nb.metadata.papermill.output_path) == (
        "notebooks/tiny_a.ipynb", "results/notebooks/tiny_a.ipynb")
    assert (repo / "figures" / "tiny_a.png").read_text() == "tiny_a 1.0 cpu"


def test_notebook_without_a_usable_parameters_cell_is_refused_first(repo):
    """No cell tagged parameters (papermill would inject above it) or a parameters cell that
    lacks a parameter reproduce passes (output_dir, n): refused, naming the notebook, before
    anything is written."""
    path = repo / "notebooks" / "tiny_a.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].metadata["tags"] = []
    nbformat.write(nb, path)
    with pytest.raises(ValueError, match=r"tiny_a.ipynb has 0 code cells tagged 'parameters'"):
        run(repo, "cpu")
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.cells[0].source = 'profile = "quick"'
    nbformat.write(nb, path)
    with pytest.raises(ValueError, match=r"tiny_a.ipynb: its parameters cell does not set "
                                         r"\['n', 'output_dir'\]"):
        run(repo, "quick")
    assert not (repo / "build").exists() and not (repo / "results").exists()


def test_cli_bad_workers_or_kernel_exit_2_before_anything(repo, capsys, monkeypatch):
    """--workers 0 and an unknown --kernel: one line, status 2, nothing written or started;
    a notebook that fails once started: status 1."""
    monkeypatch.setattr("topofl_lib.reproduce.NOTEBOOKS", REGISTRY)
    args = ["reproduce", "--profile", "cpu", "--notebooks-dir", str(repo / "notebooks"),
            "--output-dir", str(repo)]
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--workers", "0"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "argument --workers: must be >= 1, got 0" in err
    assert main([*args, "--kernel", "nope"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: unknown kernel 'nope'; installed kernels: [")
    assert not (repo / "build").exists() and not (repo / "results").exists()
    (repo / "notebooks" / "tiny_a.fail").touch()
    assert main([*args, "--only", "tiny_a"]) == 1
    assert "'tiny_a' failed" in capsys.readouterr().err


def test_not_run_rows_lose_nothing_and_paper_data_rows_rank_as_paper(repo):
    """A notebook's rows may carry `not run` and `paper-data` besides its profile: they are
    published with it; a not-run row never makes a lower profile refused, and cpu is
    refused over a paper run with paper-data rows."""
    extra = ("\nimport pandas as pd\n"
             "from topofl_lib.studies.paper_data import not_run_rows\n"
             "rows = pd.concat([claim_rows({CLAIM: [value, value]}, profile),\n"
             "                  not_run_rows(['fedtopo.t3.a.with'], 'not run: x')])\n"
             "if Path('paper_data').exists():\n"
             "    rows = pd.concat([rows, claim_rows({'fedtopo.t3.c.with': [60.0]}, "
             "'paper-data')])\n"
             "write_claims(rows, results_dir, NAME)\n")
    write_notebook(repo / "notebooks" / "tiny_a.ipynb", "tiny_a", CLAIMS["tiny_a"], [extra])
    run(repo, "cpu", only=["tiny_a"])
    profiles = pd.read_csv(repo / "results" / "claims" / "tiny_a.csv")["profile"]
    assert sorted(profiles) == ["cpu", "not run"]
    run(repo, "cpu", only=["tiny_a"])  # the not-run row loses nothing: not refused
    (repo / "notebooks" / "paper_data").touch()
    run(repo, "paper", only=["tiny_a"])
    assert "paper-data" in set(pd.read_csv(repo / "results" / "claims" / "tiny_a.csv")["profile"])
    with pytest.raises(ProfileRefused, match="higher-ranked profile"):
        run(repo, "cpu", only=["tiny_a"])
