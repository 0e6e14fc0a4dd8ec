"""The runs' progress record (topofl_lib.progress) and how reproduce hands it to a kernel."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from topofl_lib import progress as progress_module
from topofl_lib.progress import (
    ENV_PROGRESS,
    FIELDS,
    ProgressWatcher,
    RunProgress,
    describe,
    read_progress,
    write_progress,
)
from topofl_lib.reproduce import kernel_environment, run_store
from topofl_lib.run_cache import ENV_CACHE


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def record_file(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "progress.json"
    monkeypatch.setenv(ENV_PROGRESS, str(path))
    return path


def _record(**changes) -> dict:
    base = {"label": "healthcare", "done": 37, "total": 100, "reused": 0, "left": 63,
            "computed": 37, "elapsed": 148.0, "eta": 252.0, "store": None, "pid": 1,
            "calls": 3, "updated": 1.0, "finished": False}
    return {**base, **changes}


def test_record_fields_and_time_left(record_file):
    clock = Clock()
    bar = RunProgress(10, reused=2, label="healthcare", store="/s/runs", enabled=False,
                      clock=clock)
    first = read_progress(record_file)  # written on creation
    assert set(first) == set(FIELDS)
    assert (first["done"], first["left"], first["computed"], first["reused"]) == (2, 8, 0, 2)
    assert first["eta"] is None and first["store"] == "/s/runs" and not first["finished"]
    assert first["label"] == "healthcare" and first["total"] == 10

    clock.now += 30.0
    bar.update()
    clock.now += 30.0
    bar.update()  # 60 s for 2 computed runs: 30 s a run, 6 left
    rec = bar.record()
    assert (rec["done"], rec["left"], rec["computed"]) == (4, 6, 2)
    assert rec["elapsed"] == 60.0 and rec["eta"] == 180.0


def test_writes_at_most_once_per_interval_and_always_the_last(record_file):
    clock = Clock()
    bar = RunProgress(3, enabled=False, clock=clock, interval=1.0)
    clock.now += 0.5
    bar.update()  # within the interval: not written
    assert read_progress(record_file)["done"] == 0
    clock.now += 0.6
    bar.update()  # 1.1 s after the last write
    assert read_progress(record_file)["done"] == 2
    bar.update()  # the last run: written at once
    assert read_progress(record_file)["done"] == 3
    assert read_progress(record_file)["eta"] == 0.0
    bar.close()
    assert read_progress(record_file)["finished"]


def test_the_bar_redraws_at_most_once_per_mininterval(capfd, monkeypatch):
    """Many short runs redraw the bar a few times, not once per run: in a notebook each
    redraw is a few widget messages, and nbval (5 s between two of a cell's messages once
    it has run) failed a cell whose runs had sent some 1,300."""
    monkeypatch.setenv("TQDM_MININTERVAL", "60")  # tqdm's own setting, as make test's
    monkeypatch.delenv(progress_module.ENV_PROGRESS, raising=False)
    with RunProgress(500, label="short") as bar:
        for _ in range(500):
            bar.update()
    err = capfd.readouterr().err
    assert "500/500" in err  # the last state is drawn, on closing
    assert err.count("\r") <= 4, f"{err.count(chr(13))} redraws for 500 runs"


def test_calls_count_the_runner_calls_of_the_process(record_file):
    with RunProgress(1, enabled=False) as first:
        first.update()
    calls = read_progress(record_file)["calls"]
    with RunProgress(2, label="second", enabled=False):
        pass
    rec = read_progress(record_file)
    assert rec["calls"] == calls + 1 and rec["label"] == "second" and rec["finished"]


def test_no_file_without_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_PROGRESS, raising=False)
    monkeypatch.chdir(tmp_path)
    with RunProgress(2, enabled=False) as bar:
        bar.update(2)
    assert bar.path is None and list(tmp_path.iterdir()) == []


def test_unwritable_file_warns_once_and_runs_on(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_PROGRESS, str(tmp_path / "missing" / "progress.json"))
    with pytest.warns(UserWarning, match="cannot write the progress record"):
        bar = RunProgress(2, enabled=False)
    bar.update(2)
    bar.close()
    assert bar.path is None and bar.done == 2


def test_write_is_atomic_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "progress.json"
    write_progress(path, _record())
    seen = []

    def replace(src, dst):  # what a reader sees just before the rename
        seen.append(read_progress(dst))
        seen.append(json.loads(Path(src).read_text()))
        return real_replace(src, dst)

    real_replace = progress_module.os.replace
    monkeypatch.setattr(progress_module.os, "replace", replace)
    write_progress(path, _record(done=38, left=62))
    assert seen[0]["done"] == 37 and seen[1]["done"] == 38  # old whole, then new whole
    assert read_progress(path)["done"] == 38
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]


@pytest.mark.parametrize("content", [
    b"", b'{"label": "healthcare", "done": 3', b"garbage", b"\xff\xfe\x00", b"[1, 2]",
    b"null", json.dumps(_record(done=-1)).encode(),
    json.dumps(_record(total="100")).encode(),
    json.dumps({k: v for k, v in _record().items() if k != "eta"}).encode(),
    json.dumps(_record()).replace("252.0", "NaN").encode(),
    json.dumps(_record(finished=1)).encode(),
    json.dumps(_record(label="x" * progress_module.MAX_RECORD_BYTES)).encode(),
])
def test_reader_returns_none_for_partial_or_foreign_files(tmp_path, content):
    path = tmp_path / "progress.json"
    path.write_bytes(content)
    assert read_progress(path) is None


def test_reader_missing_file_and_extra_fields(tmp_path):
    assert read_progress(tmp_path / "absent.json") is None
    assert read_progress(tmp_path) is None  # a folder
    path = tmp_path / "progress.json"
    path.write_text(json.dumps({**_record(), "extra": 1}))
    assert read_progress(path) == _record()


def test_describe():
    assert describe(_record()) == ("healthcare (call 3): 37/100 runs, 63 left, "
                                   "~4 min left")
    assert describe(_record(eta=None, computed=0, reused=5, store="/r/build/runs/fedtopo/cpu"),
                    root="/r") == ("healthcare (call 3): 37/100 runs, 63 left, time left not "
                                   "known yet, 5 reused, run store build/runs/fedtopo/cpu")
    assert describe(_record(eta=40.2, store="/elsewhere/runs"), root="/r").endswith(
        "~40 s left, run store /elsewhere/runs")
    assert "~2 h 05 min left" in describe(_record(eta=7500.0))
    assert describe(_record(done=100, left=0, eta=0.0, finished=True, label="")) == (
        "runs (call 3): 100/100 runs, finished")


def test_watcher_shows_the_record_and_removes_the_file(tmp_path):
    path = tmp_path / "progress.json"
    watcher = ProgressWatcher(path, "scenario_a_healthcare", enabled=False)
    assert watcher.poll() is None
    assert watcher.text == "scenario_a_healthcare: running, no run counted yet"
    write_progress(path, _record())
    with watcher:
        assert watcher.poll() == _record()
        assert watcher.text == ("scenario_a_healthcare: healthcare (call 3): 37/100 runs, "
                                "63 left, ~4 min left")
    assert not path.exists()


def test_watcher_bar_follows_the_record(tmp_path):
    path = tmp_path / "progress.json"
    write_progress(path, _record())
    with ProgressWatcher(path, "nb", interval=3600.0) as watcher:  # the thread never polls
        bar = watcher._bar
        assert (bar.total, bar.n) == (100, 37)
        write_progress(path, _record(done=40, total=120, left=80))
        watcher.poll()
        assert (bar.total, bar.n) == (120, 40)
        assert "40/120 runs" in bar.desc
    assert watcher._bar is None and not path.exists()


def test_kernel_environment_names_the_progress_file(tmp_path):
    env = kernel_environment({"PLOTLY_RENDERER": "png"}, tmp_path / "nb.progress.json")
    assert env == {"PLOTLY_RENDERER": "png", ENV_PROGRESS: str(tmp_path / "nb.progress.json")}


def _notebook(path: Path, source: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("default_cache_dir( in prose only"),
                nbformat.v4.new_code_cell(source)]
    nbformat.write(nb, path)
    return path


def test_run_store_only_for_notebooks_that_keep_runs(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_CACHE, str(tmp_path / "store"))
    keeps = _notebook(tmp_path / "deep.ipynb",
                      'cache = default_cache_dir("deep", profile)\nrun_comparison(...)')
    plain = _notebook(tmp_path / "plain.ipynb", "run_comparison(...)")
    assert run_store(keeps, "cpu") == tmp_path / "store" / "deep" / "cpu"
    assert run_store(plain, "cpu") is None


def test_run_store_of_the_registered_notebooks():
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    kept = {p.stem for p in notebooks.glob("*.ipynb") if run_store(p, "quick") is not None}
    assert kept == {"fedtopo", "ptopofl_deep", "label_aware", "own_data",
                    "privacy_analysis"}
