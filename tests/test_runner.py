"""The runner package: short functions, device-aware keys, settings as columns."""

import ast
import functools
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

HERE = str(Path(__file__).resolve().parent)  # spawned helpers import executor_tasks too
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import executor_tasks as tasks  # noqa: E402

from topofl_lib.core.device import device_kind  # noqa: E402
from topofl_lib.deep import make_image_scenario  # noqa: E402
from topofl_lib.deep.datasets import ImageDataset  # noqa: E402
from topofl_lib.run_cache import RunCache, environment  # noqa: E402
from topofl_lib.runner import SETTING_COLUMNS, run_comparison  # noqa: E402
from topofl_lib.runner.executors import make_executor  # noqa: E402
from topofl_lib.runner.plan import check_runs, make_plan, run_key  # noqa: E402

RUNNER = Path(__file__).resolve().parent.parent / "topofl_lib" / "runner"


def _code_lines(fn: ast.FunctionDef, source: list[str]) -> int:
    """Lines of a function that hold code (its docstring, comments and blanks left out)."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    lines = set()
    for node in body:
        for n in ast.walk(node):
            if hasattr(n, "lineno"):
                lines.update(range(n.lineno, n.end_lineno + 1))
    return sum(1 for i in lines if source[i - 1].strip()
               and not source[i - 1].strip().startswith("#"))


@pytest.mark.parametrize("path", sorted(RUNNER.glob("*.py")), ids=lambda p: p.name)
def test_no_runner_function_is_over_60_lines_of_code(path):
    source = path.read_text().splitlines()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert _code_lines(node, source) <= 60, f"{path.name}:{node.name}"


def test_cpu_keys_are_unchanged_and_gpu_keys_differ():
    """A CPU run keeps the key it had before devices were keyed; a GPU run gets another."""
    from topofl_lib.run_cache import fingerprint

    env = environment()
    args = (env, "scen", "FedAvg", {"lr": 0.1}, 3, 0)
    assert run_key(*args) == fingerprint(*args) == run_key(*args, device="cpu")
    assert run_key(*args, device="cuda") == run_key(*args, device="cuda:1")
    assert run_key(*args, device="cuda") != run_key(*args)
    assert device_kind("cuda:3") == "cuda" and device_kind("cpu") == "cpu"


def test_records_carry_their_device(tmp_path):
    res = run_comparison("healthcare", seeds=[0], methods=["FedAvg"], n_rounds=2,
                         progress=False, cache_dir=tmp_path,
                         scenario_params={"n_clients": 4, "n_adversarial": 1})
    assert res.devices == ("cpu",)
    (key,) = [p.stem for p in tmp_path.glob("*.npz")]
    assert RunCache(tmp_path).load(key)["device"] == "cpu"


def test_records_carry_their_cpu_and_older_records_say_unrecorded(tmp_path):
    """Each record names the CPU it was computed on (MKL and oneDNN choose kernels by
    CPU, so another one may round differently); one stored without it reads as
    ``unrecorded``, and a comparison lists every CPU of its runs."""
    import torch

    from topofl_lib.environment import cpu_model, cpu_signature
    from topofl_lib.runner.result import UNRECORDED

    here = cpu_signature()
    assert here.startswith(cpu_model())
    assert here.endswith(f"; torch {torch.backends.cpu.get_cpu_capability()}")
    kw = {"methods": ["FedAvg"], "n_rounds": 2, "progress": False, "cache_dir": tmp_path,
          "scenario_params": {"n_clients": 4, "n_adversarial": 1}}
    res = run_comparison("healthcare", seeds=[0, 1], **kw)
    assert res.machines == (here,)
    store = RunCache(tmp_path)
    first = min(tmp_path.glob("*.npz")).stem
    old = store.load(first)
    del old["machine"]
    store.store(first, old)
    again = run_comparison("healthcare", seeds=[0, 1], **kw)
    assert again.machines == tuple(sorted((here, UNRECORDED)))
    pd.testing.assert_frame_equal(again.final, res.final)


def test_a_gpu_study_never_runs_on_a_cpu_worker():
    """A comparison planned for CUDA refuses a worker pinned to the CPU (no GPU here)."""
    with pytest.raises(RuntimeError, match="cuda"):
        run_comparison("healthcare", seeds=[0], methods=["FedAvg"], n_rounds=1,
                       progress=False, device="cuda",
                       scenario_params={"n_clients": 4, "n_adversarial": 1})


def _tiny_images(seed):
    rng = np.random.default_rng(0)
    data = ImageDataset("tiny", rng.random((200, 64), dtype=np.float32),
                        rng.integers(0, 10, 200), rng.random((50, 64), dtype=np.float32),
                        rng.integers(0, 10, 50), (1, 8, 8), 10)
    return make_image_scenario(data, "L", n_clients=3, param=0.5, random_state=seed)


def test_image_settings_travel_as_columns():
    """dataset, partition and param are columns of curves and final (never parsed)."""
    scen = _tiny_images(0)
    assert {k: scen.meta[k] for k in SETTING_COLUMNS} == {
        "dataset": "tiny", "partition": "L", "param": 0.5}
    plan = make_plan(_tiny_images, [0], check_runs(["FedAvg"], None, None), 1)
    assert list(plan.table.columns) == ["seed", "run", "label", "method", "key", "stored",
                                        "seconds"]


def test_tabular_results_have_no_setting_columns():
    res = run_comparison("healthcare", seeds=[0, 1], methods=["FedAvg", "pTopoFL"],
                         n_rounds=2, progress=False,
                         scenario_params={"n_clients": 4, "n_adversarial": 1})
    assert list(res.final.columns) == ["scenario", "method", "seed", "auc", "accuracy",
                                       "convergence_round"]
    assert res.schedule is not None and res.schedule.mode == "serial"
    pd.testing.assert_frame_equal(res.final, run_comparison(
        "healthcare", seeds=[0, 1], methods=["FedAvg", "pTopoFL"], n_rounds=2,
        progress=False, scenario_params={"n_clients": 4, "n_adversarial": 1}).final)


def test_n_workers_and_executor_are_exclusive():
    with pytest.raises(ValueError, match="n_workers or executor"):
        run_comparison("healthcare", seeds=[0], methods=["FedAvg"], n_workers=2,
                       executor=functools.partial(int), progress=False)


def test_a_dask_cluster_gives_the_serial_numbers_and_fills_the_store(tmp_path, monkeypatch):
    """A real two-worker Dask cluster: the same numbers as one process, every run written
    to the store by the worker that computed it, and a second call resumes from it. The
    comparison's spec (with its data) is sent to the cluster once, for the pilots and the
    rest together. No worker waits for the pilots: the first is sent with a run from the
    end of the list beside it, and every run is sent once."""
    distributed = pytest.importorskip("distributed")
    from topofl_lib.runner.executors import DaskExecutor, DaskStream

    kw = {"seeds": [0, 1, 2], "methods": ["FedAvg", "pTopoFL", "FedProx"], "n_rounds": 3,
          "progress": False, "scenario_params": {"n_clients": 4, "n_adversarial": 1}}
    serial = run_comparison("healthcare", **kw)
    shared, sent = [], []
    share, submit = DaskExecutor.share, DaskStream.submit
    monkeypatch.setattr(DaskExecutor, "share",
                        lambda self, value: shared.append(value) or share(self, value))
    monkeypatch.setattr(DaskStream, "submit", lambda self, tag, args: (
        sent.append(args[1]) or submit(self, tag, args)))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        res = run_comparison("healthcare", executor=client, cache_dir=tmp_path, **kw)
    assert len(shared) == 1 and type(shared[0]).__name__ == "RunSpec"
    # the first pilot had company: the other worker computed the last run meanwhile
    assert [item[:2] for item in sent[0]] == [(0, 0)], sent
    assert [item[:2] for item in sent[1]] == [(2, 2)], sent
    assert sorted(item[:2] for batch in sent for item in batch) == [
        (seed, run) for seed in range(3) for run in range(3)]
    pd.testing.assert_frame_equal(res.final, serial.final, check_exact=True)
    pd.testing.assert_frame_equal(res.curves, serial.curves, check_exact=True)
    assert res.schedule is not None and res.devices == ("cpu",)  # computed on the cluster
    assert len(list(tmp_path.glob("*.npz"))) == 9
    again = run_comparison("healthcare", cache_dir=tmp_path, **kw)
    assert again.schedule is None  # nothing computed: every run read from the store
    pd.testing.assert_frame_equal(again.final, serial.final, check_exact=True)


def test_a_dask_pilot_of_two_runs_has_the_other_beside_it(monkeypatch):
    """A list of two runs has one pilot, so the other run is sent beside it at once,
    not after it."""
    distributed = pytest.importorskip("distributed")
    from topofl_lib.runner.executors import DaskStream

    kw = {"seeds": [0], "methods": ["FedAvg", "FedProx"], "n_rounds": 2, "progress": False,
          "scenario_params": {"n_clients": 4, "n_adversarial": 1}}
    sent, submit = [], DaskStream.submit
    monkeypatch.setattr(DaskStream, "submit", lambda self, tag, args: (
        sent.append(args[1]) or submit(self, tag, args)))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        res = run_comparison("healthcare", executor=client, **kw)
    assert [[item[:2] for item in batch] for batch in sent] == [[(0, 0)], [(0, 1)]]
    pd.testing.assert_frame_equal(res.final, run_comparison("healthcare", **kw).final,
                                  check_exact=True)


def test_local_workers_give_the_serial_numbers(tmp_path, monkeypatch):
    """n_workers=2 (this process and a helper process) and n_workers=1 agree exactly;
    this process computes runs beside the pilots, and the helper computes some too (this
    process waits, from seed 2 on, for the helper's first scenario)."""
    from topofl_lib.runner import execute

    kw = {"seeds": range(4), "methods": ["FedAvg", "pTopoFL"], "n_rounds": 3,
          "progress": False}
    scenario = functools.partial(tasks.healthcare_with_a_helper, parent=os.getpid(),
                                 marker=str(tmp_path / "helper"))
    (tmp_path / "helper").touch()  # no helper in the serial run: nothing to wait for
    one = run_comparison(scenario, **kw)
    (tmp_path / "helper").unlink()
    here = []
    batch = execute.run_batch
    monkeypatch.setattr(execute, "run_batch", lambda spec, items: here.extend(items) or batch(
        spec, items))  # this process only: the helper imports the module afresh
    local = make_executor(2)
    local.startup_seconds_per_worker = 0.0  # parallel, however short the runs
    two = run_comparison(scenario, executor=local, **kw)
    assert two.schedule.mode == "parallel", two.schedule
    assert "on 2 workers" in two.schedule.reason
    assert 3 <= len(here) < 8, here  # the pilots, seed 1, and not the helper's runs
    assert (3, 1) not in {(seed, i) for seed, i, _ in here}  # the helper's: the last
    pd.testing.assert_frame_equal(two.final, one.final, check_exact=True)
    pd.testing.assert_frame_equal(two.curves, one.curves, check_exact=True)


def test_a_helpers_error_reaches_the_caller_with_its_type(tmp_path):
    """A run that fails in a helper process stops the comparison with the run's own
    exception (the scenario of seed 3, the last, fails only outside this process)."""
    local = make_executor(2)
    local.startup_seconds_per_worker = 0.0
    scenario = functools.partial(tasks.healthcare_with_a_helper, parent=os.getpid(),
                                 marker=str(tmp_path / "helper"), bad=3)
    with pytest.raises(tasks.TaskFailed, match="seed 3 failed in a helper"):
        run_comparison(scenario, seeds=range(4), methods=["FedAvg"], n_rounds=2,
                       progress=False, executor=local)


@pytest.mark.parametrize("long_run, n_pilots", [(float("inf"), 2), (0.0, 1)])
def test_a_long_first_pilot_sets_the_schedule_alone(monkeypatch, long_run, n_pilots):
    """Two pilot runs, unless the first took LONG_RUN_SECONDS or more: then the rest are
    scheduled from it (the schedule's reason counts the runs left after the pilots), and
    the numbers do not change."""
    from topofl_lib.runner import execute

    kw = {"seeds": [0, 1], "methods": ["FedAvg", "FedProx"], "n_rounds": 2,
          "progress": False, "scenario_params": {"n_clients": 4, "n_adversarial": 1}}
    monkeypatch.setattr(execute, "LONG_RUN_SECONDS", long_run)
    res = run_comparison("healthcare", **kw)
    assert res.schedule.reason.startswith(f"serial: {4 - n_pilots} runs of ~")
    monkeypatch.undo()
    pd.testing.assert_frame_equal(res.final, run_comparison("healthcare", **kw).final,
                                  check_exact=True)


def test_a_known_run_time_skips_the_pilots_and_changes_no_number():
    """seconds_per_run: every run is scheduled from it (none is timed first), on one
    worker or on two, with the numbers of the timed schedule."""
    kw = {"seeds": [0, 1], "methods": ["FedAvg", "pTopoFL"], "n_rounds": 2,
          "progress": False, "scenario_params": {"n_clients": 4, "n_adversarial": 1}}
    timed = run_comparison("healthcare", **kw)
    known = run_comparison("healthcare", seconds_per_run=600, **kw)
    assert known.schedule.reason.startswith("serial: 4 runs of ~600 s"), known.schedule
    two = run_comparison("healthcare", seconds_per_run=600, n_workers=2, **kw)
    assert two.schedule.mode == "parallel" and two.schedule.reason.startswith(
        "parallel: 4 runs of ~600 s"), two.schedule
    for res in (known, two):
        pd.testing.assert_frame_equal(res.final, timed.final, check_exact=True)
        pd.testing.assert_frame_equal(res.curves, timed.curves, check_exact=True)


@pytest.mark.parametrize("bad, error", [(-1.0, ValueError), (float("nan"), ValueError),
                                        ("600", TypeError)])
def test_a_bad_run_time_is_refused_by_name(tmp_path, bad, error):
    with pytest.raises(error, match="seconds_per_run"):
        run_comparison("healthcare", seeds=[0], methods=["FedAvg"], n_rounds=1,
                       progress=False, cache_dir=tmp_path, seconds_per_run=bad)
    assert not list(tmp_path.iterdir())  # refused before anything was written


@pytest.mark.parametrize("params, error, message", [
    ({"mu": -1.0}, ValueError, r"run 'FedProx' \(FedProx\): mu must be >= 0.0, got -1.0"),
    ({"lr": float("nan")}, ValueError, r"run 'FedProx' \(FedProx\): lr must be finite"),
    ({"lr": "0.1"}, TypeError, r"run 'FedProx' \(FedProx\): lr must be a real number"),
    ({"bogus": 1}, TypeError, r"run 'FedProx' \(FedProx\): .*unexpected keyword.*'bogus'"),
])
def test_a_bad_parameter_of_the_last_method_stops_the_comparison_before_any_run(
        tmp_path, params, error, message):
    # FedAvg comes first and is fine: without the up-front check it trained and was stored
    # before FedProx's parameters were read
    with pytest.raises(error, match=message):
        run_comparison("healthcare", seeds=[0], methods=["FedAvg", "FedProx"], n_rounds=1,
                       method_params={"FedProx": params}, progress=False, cache_dir=tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_bad_network_parameter_is_named_before_any_run(tmp_path):
    from topofl_lib.deep import deep_variants

    variants = deep_variants(["FedAvg"], architecture="digits_cnn", local_epochs=1)
    variants["FedAvg"][1]["model"].n_threads = 0
    with pytest.raises(ValueError, match=r"run 'FedAvg' \(FedAvg\): n_threads must be >= 1"):
        run_comparison("healthcare", seeds=[0], variants=variants, n_rounds=1,
                       progress=False, cache_dir=tmp_path)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("kwargs, error, message", [
    ({"seeds": [0, 1, 0]}, ValueError, r"seeds repeats seed\(s\) \[0\]"),
    ({"keep_models": "yes"}, TypeError, "keep_models must be True or False, got 'yes'"),
    ({"progress": "no"}, TypeError, "progress must be True or False, got 'no'"),
    ({"n_workers": 0}, ValueError, "n_workers must be >= 1, got 0"),
])
def test_bad_arguments_are_named_even_where_nothing_would_be_computed(tmp_path, kwargs,
                                                                       error, message):
    # on_missing="raise" must not answer a bad argument with "runs are not stored"
    args = {"seeds": [0], "progress": False, **kwargs}
    with pytest.raises(error, match=message):
        run_comparison("healthcare", methods=["FedAvg"], n_rounds=1, cache_dir=tmp_path,
                       on_missing="raise", **args)
    assert not list(tmp_path.iterdir())
