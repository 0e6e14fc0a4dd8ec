"""The executors of the runner (serial, spawned processes, a real local Dask cluster), the
per-process device pinning and the serial/parallel schedule.

Every executor must give the results of a serial map, bit for bit, including a seeded
torch computation; errors of a task come back with their own type; the Dask cluster's
tasks run on two different worker processes (checked by making two tasks wait for each
other: they can only meet on two single-threaded workers).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

# the tasks' module must be importable by name in the workers too: spawned processes and
# the Dask cluster's workers start with this process's sys.path
HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import executor_tasks as tasks  # noqa: E402

from topofl_lib.core import device as device_module  # noqa: E402
from topofl_lib.core.device import (  # noqa: E402
    device_description,
    device_kind,
    pin_device,
    pinned_device,
)
from topofl_lib.runner.executors import (  # noqa: E402
    DaskExecutor,
    Executor,
    ProcessExecutor,
    SerialExecutor,
    make_executor,
)
from topofl_lib.runner.schedule import Schedule, choose_schedule  # noqa: E402

torch = pytest.importorskip("torch")

SEEDS = [(s,) for s in range(6)]
PAIRS = [(x, 10 * x) for x in range(12)]


@pytest.fixture
def one_thread():
    """One torch thread in this process (as every worker has), restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def unpinned(monkeypatch):
    """This process with nothing pinned, whatever a test pins (restored afterwards)."""
    monkeypatch.setattr(device_module, "_PINNED", [])


@pytest.fixture(scope="module")
def processes():
    with ProcessExecutor(2, devices=["cpu", "cpu"]) as ex:
        yield ex


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


def _serial(fn, args_list):
    return dict(SerialExecutor().map_unordered(fn, args_list))


def _same_arrays(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and
                                        a[k].tobytes() == b[k].tobytes() for k in a)


# -- serial ------------------------------------------------------------------------------
def test_serial_executor_yields_every_result_in_order():
    ex = SerialExecutor()
    assert (ex.name, ex.n_workers, ex.startup_seconds) == ("serial", 1, 0.0)
    assert list(ex.map_unordered(tasks.square_plus, PAIRS)) == [
        (i, x * x + 10 * x) for i, (x, _) in enumerate(PAIRS)]


def test_serial_executor_raises_the_tasks_error():
    with pytest.raises(tasks.TaskFailed, match="task 3 failed"):
        list(SerialExecutor().map_unordered(tasks.fail_on, [(x, 3) for x in range(6)]))


# -- processes ---------------------------------------------------------------------------
def test_process_executor_matches_serial(processes, one_thread):
    assert processes.name == "processes" and processes.n_workers == 2
    got = dict(processes.map_unordered(tasks.square_plus, PAIRS))
    assert got == _serial(tasks.square_plus, PAIRS)
    assert _same_arrays(dict(processes.map_unordered(tasks.train_tiny, SEEDS)),
                        _serial(tasks.train_tiny, SEEDS))


def test_process_workers_are_pinned_with_one_thread(processes):
    import multiprocessing

    with multiprocessing.get_context("spawn").Manager() as manager:
        barrier = manager.Barrier(2)
        states = [s for _, s in processes.map_unordered(tasks.meet_at_barrier,
                                                        [(barrier,), (barrier,)])]
    assert len({s["pid"] for s in states}) == 2  # the two met: two worker processes
    assert os.getpid() not in {s["pid"] for s in states}
    assert [(s["device"], s["threads"]) for s in states] == [("cpu", 1), ("cpu", 1)]
    assert processes.startup_seconds == 0.0  # started now


def test_make_executor_2_is_a_pool_of_two_processes(one_thread):
    """make_executor(2): two worker processes; the same results as serial, usable again
    after a failed map."""
    with make_executor(2) as ex:
        assert (ex.n_workers, ex.startup_seconds) == (2, 2 * ex.startup_seconds_per_worker)
        assert _same_arrays(dict(ex.map_unordered(tasks.train_tiny, SEEDS)),
                            _serial(tasks.train_tiny, SEEDS))
        with pytest.raises(tasks.TaskFailed, match="task 5 failed"):
            list(ex.map_unordered(tasks.fail_on, [(x, 5) for x in range(8)]))
        assert dict(ex.map_unordered(tasks.square_plus, PAIRS)) == _serial(
            tasks.square_plus, PAIRS)


def test_workers_take_the_devices_the_fewest_workers_hold(one_thread):
    """Each worker process takes, on its first call, the device the fewest live workers
    hold (a worker of an earlier executor that loky reuses takes a device of the new one)."""
    import multiprocessing

    from topofl_lib.runner.executors import _DeviceBook

    with multiprocessing.get_context("spawn").Manager() as manager:
        book = _DeviceBook(("cpu", "cuda:0", "cuda:1"), manager)
        assert book.take() == "cpu"
        book.held[os.getppid()] = "cpu"  # a live worker
        book.held[2**22 + 12345] = "cuda:0"  # a worker that died: its device is free again
        assert book.take() == "cuda:0"  # this process anew: cpu is held, cuda:0 is free
        assert dict(book.held) == {os.getppid(): "cpu", os.getpid(): "cuda:0"}
    assert _DeviceBook(("cpu",)).take() == "cpu"


def test_process_executor_raises_the_tasks_error(processes):
    with pytest.raises(tasks.TaskFailed, match="task 5 failed"):
        list(processes.map_unordered(tasks.fail_on, [(x, 5) for x in range(8)]))
    # the pool survives a failed task
    assert dict(processes.map_unordered(tasks.square_plus, [(2, 1)])) == {0: 5}


def test_process_executor_is_lazy_and_checks_its_devices():
    ex = ProcessExecutor(3, devices=["cuda:0", "cuda:1"])
    assert ex.startup_seconds == pytest.approx(4.5)  # nothing started yet
    assert ex.devices == ("cuda:0", "cuda:1")
    ex.close()  # closing an executor that never started is fine
    with pytest.raises(ValueError, match="'tpu'"):
        ProcessExecutor(2, devices=["cpu", "tpu"])
    with pytest.raises(ValueError, match="at least one device"):
        ProcessExecutor(2, devices=[])
    with pytest.raises(ValueError, match="n_workers must be >= 1, got 0"):
        ProcessExecutor(0)


# -- a real local Dask cluster -----------------------------------------------------------
def test_dask_cluster_matches_serial_bit_for_bit(dask_client, one_thread):
    ex = DaskExecutor(client=dask_client)
    assert (ex.name, ex.n_workers) == ("dask", 2)
    assert dict(ex.map_unordered(tasks.square_plus, PAIRS)) == _serial(tasks.square_plus,
                                                                       PAIRS)
    got = dict(ex.map_unordered(tasks.train_tiny, SEEDS))
    assert _same_arrays(got, _serial(tasks.train_tiny, SEEDS))
    assert not _same_arrays({0: got[0]}, {0: got[1]})  # the seeds matter


def test_dask_sends_a_shared_argument_once(dask_client, monkeypatch):
    """``share`` scatters a value once; calls given its future are not sent it again,
    and an argument of several calls of one map is scattered once (not per call)."""
    ex = DaskExecutor(client=dask_client)
    shared = ex.share(3)
    scattered = []
    scatter = dask_client.scatter
    monkeypatch.setattr(dask_client, "scatter",
                        lambda data, **kw: scattered.append(data) or scatter(data, **kw))
    assert dict(ex.map_unordered(tasks.square_plus, [(shared, y) for y in range(4)])) == {
        y: 9 + y for y in range(4)}
    assert scattered == []
    table = np.arange(6.0)
    assert sorted(dict(ex.map_unordered(tasks.total_plus, [(table, y) for y in range(3)]))
                  .values()) == [15.0, 16.0, 17.0]
    assert len(scattered) == 1 and scattered[0][0] is table


def test_serial_and_process_executors_share_the_value_itself(processes):
    value = object()
    assert SerialExecutor().share(value) is value and processes.share(value) is value


def test_dask_tasks_run_on_two_worker_processes(dask_client):
    a, b = f"a-{uuid.uuid4()}", f"b-{uuid.uuid4()}"
    ex = make_executor(dask_client)
    states = dict(ex.map_unordered(tasks.meet_at_dask_event, [(a, b), (b, a)]))
    pids = {s["pid"] for s in states.values()}
    assert len(pids) == 2 and pids <= set(dask_client.run(os.getpid).values())
    assert os.getpid() not in pids
    # the plugin pinned each worker (no devices, no TOPOFL_DEVICE: the CPU), one thread
    assert [(s["device"], s["threads"]) for s in states.values()] == [("cpu", 1), ("cpu", 1)]


def test_dask_executor_raises_the_tasks_error(dask_client):
    ex = DaskExecutor(client=dask_client)
    with pytest.raises(tasks.TaskFailed, match="task 2 failed"):
        list(ex.map_unordered(tasks.fail_on, [(x, 2) for x in range(6)]))
    ex.close()  # a given client stays open
    assert dict(ex.map_unordered(tasks.square_plus, [(3, 1)])) == {0: 10}


def test_dask_stream_takes_calls_while_it_yields_results(dask_client):
    """A stream yields each call's result with its tag as it finishes, those submitted
    while it yields included, and raises a call's error with its type."""
    ex = DaskExecutor(client=dask_client)
    got = []
    with ex.stream(tasks.square_plus) as stream:
        stream.submit("first", (2, 0))
        for tag, result in stream:
            got.append((tag, result))
            if tag == "first":  # sent after the first result came back
                stream.submit("second", (3, 1))
                stream.submit("third", (4, 2))
    assert got[0] == ("first", 4) and sorted(got[1:]) == [("second", 10), ("third", 18)]
    with pytest.raises(tasks.TaskFailed, match="task 1 failed"), \
            ex.stream(tasks.fail_on) as stream:
        stream.submit(0, (1, 1))
        list(stream)


def test_dask_device_assignment_by_sorted_worker_address(dask_client):
    ex = DaskExecutor(client=dask_client, devices=["cuda:0", "cuda:1"])
    workers = sorted(dask_client.scheduler_info(n_workers=-1)["workers"])
    assert ex.device_assignment() == {workers[0]: "cuda:0", workers[1]: "cuda:1"}
    assert DaskExecutor(client=dask_client).device_assignment() == {}


def test_dask_plugin_prefers_the_workers_variable(monkeypatch):
    from topofl_lib.runner.dask_plugin import DEVICE_VARIABLE, DevicePinning

    plugin = DevicePinning({"tcp://w1:1": "cuda:1"})
    monkeypatch.delenv(DEVICE_VARIABLE, raising=False)
    assert (plugin.device_for("tcp://w1:1"), plugin.device_for("tcp://w2:1")) == ("cuda:1",
                                                                                  "cpu")
    monkeypatch.setenv(DEVICE_VARIABLE, "cuda:0")
    assert plugin.device_for("tcp://w1:1") == "cuda:0"


@pytest.mark.parametrize(("variable", "expected"), [("65536", "True"), (None, "False")])
def test_restore_malloc_only_where_dask_set_the_trim_threshold(variable, expected):
    """Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_ (a training run took 2.5
    times as long with it); every worker set-up sets glibc's thresholds back, and does
    nothing without the variable. In a child process: this one keeps glibc's defaults."""
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's mallopt is Linux's")
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    if variable is not None:
        env["MALLOC_TRIM_THRESHOLD_"] = variable
    out = subprocess.run([sys.executable, "-c", "from topofl_lib.runner.malloc import "
                          "restore_malloc; print(restore_malloc())"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected


def test_every_worker_set_up_restores_malloc(monkeypatch):
    """Creating a Dask ``LocalCluster`` writes MALLOC_TRIM_THRESHOLD_ into its process's
    environment, so local worker processes started afterwards inherit it (a serial deep
    workload took 2.6 times as long in such a process): the local pool's, the helpers'
    and Dask's set-ups all run the one worker set-up, which restores glibc's thresholds
    besides the threads and the device."""
    from topofl_lib.runner import dask_plugin, executors, helpers, worker

    calls = []
    monkeypatch.setattr(worker, "one_thread_each", lambda: calls.append("threads"))
    monkeypatch.setattr(worker, "restore_malloc", lambda: calls.append("malloc"))
    monkeypatch.setattr(worker, "pin_device", lambda device: calls.append(device))
    monkeypatch.setattr(executors, "_READY", [])
    book = type("Book", (), {"token": "t", "take": lambda self: "cuda:1"})()
    assert executors._in_worker(3, lambda x: x + 1, (1,), book) == (3, 2)
    monkeypatch.setattr(helpers, "_SPEC", [])
    helpers._start_helper("spec", "cpu")
    monkeypatch.delenv(dask_plugin.DEVICE_VARIABLE, raising=False)
    address = "tcp://127.0.0.1:1"
    dask_worker = type("W", (), {"address": address})()
    dask_plugin.DevicePinning({address: "cuda:0"}).setup(dask_worker)
    assert calls == ["threads", "malloc", "cuda:1", "threads", "malloc", "cpu",
                     "threads", "malloc", "cuda:0"]
    assert helpers._SPEC == ["spec"]


def test_make_executor_takes_a_dask_cluster_or_address(dask_client):
    cluster = dask_client.cluster
    ex = make_executor(cluster)
    try:
        assert isinstance(ex, DaskExecutor) and ex.address == cluster.scheduler_address
        assert dict(ex.map_unordered(tasks.square_plus, [(4, 0)])) == {0: 16}
    finally:
        ex.close()
    by_address = make_executor("tcp://127.0.0.1:1")  # no connection until first used
    assert isinstance(by_address, DaskExecutor) and by_address.address == "tcp://127.0.0.1:1"


# -- make_executor -----------------------------------------------------------------------
def test_make_executor_accepts():
    assert isinstance(make_executor(1), SerialExecutor)
    ex = make_executor(4, devices=["cpu"])
    assert isinstance(ex, ProcessExecutor) and (ex.n_workers, ex.devices) == (4, ("cpu",))
    assert make_executor(1, devices=["cpu"]).device == "cpu"
    same = SerialExecutor()
    assert make_executor(same) is same
    assert isinstance(same, Executor)


@pytest.mark.parametrize("value, error, text", [
    (0, ValueError, "executor must be a number of workers >= 1, got 0"),
    (-2, ValueError, "got -2"),
    (True, TypeError, "got True"),
    (2.5, TypeError, "got 2.5"),
    (None, TypeError, "got None"),
    ("localhost:8786", ValueError, "got 'localhost:8786'"),
    ("http://10.0.0.1:8786", ValueError, "tcp://"),
])
def test_make_executor_refuses(value, error, text):
    with pytest.raises(error, match="executor") as info:
        make_executor(value)
    assert text in str(info.value)


def test_dask_executor_needs_one_of_address_and_client():
    with pytest.raises(ValueError, match="address or a client"):
        DaskExecutor()
    with pytest.raises(ValueError, match="'10.0.0.1:8786'"):
        DaskExecutor(address="10.0.0.1:8786")


# -- device pinning ----------------------------------------------------------------------
def test_pin_device_validates(unpinned):
    for bad in ("tpu", "cuda:", "cuda:01", "CPU", "cuda:-1"):
        with pytest.raises(ValueError, match=repr(bad).replace("(", r"\(")):
            pin_device(bad)
    with pytest.raises(ValueError, match="3"):
        pin_device(3)
    assert pinned_device() == "cpu" and pinned_device(default=None) is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_pin_cuda_without_cuda_is_a_runtime_error(unpinned):
    with pytest.raises(RuntimeError, match="'cuda:0'.*no CUDA"):
        pin_device("cuda:0")
    assert pinned_device(default=None) is None  # nothing pinned after the failure


def test_resolve_device_honours_the_pinned_device(unpinned, monkeypatch):
    from topofl_lib.deep.learner import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # "auto" would be cuda
    assert resolve_device("auto") == torch.device("cuda")
    pin_device("cpu")
    assert pinned_device() == "cpu"
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cuda") == torch.device("cuda")  # explicit devices stay


def test_device_kind_and_description():
    assert [device_kind(d) for d in ("cpu", "cuda", "cuda:3")] == ["cpu", "cuda", "cuda"]
    assert device_description("cpu") == "cpu"
    if not torch.cuda.is_available():
        assert device_description("cuda:0") == "cuda:0 (not available)"
    with pytest.raises(ValueError, match="'gpu'"):
        device_kind("gpu")


# -- schedule ----------------------------------------------------------------------------
@dataclass
class StubExecutor:
    name: str = "processes"
    n_workers: int = 2
    startup_seconds: float = 3.0
    startup_phrase: str = "starting {n} worker processes"


def test_schedule_serial_when_workers_do_not_pay():
    s = choose_schedule(99, 0.026, ProcessExecutor(2))
    assert s == Schedule("serial", 1, "serial: 99 runs of ~0.026 s (2.6 s) do not pay for "
                                      "starting 2 worker processes (~3 s)")
    # below PAYOFF times the start-up: serial (the hand-overs would eat the gain)
    assert choose_schedule(999, 0.026, ProcessExecutor(2)).mode == "serial"
    assert choose_schedule(10_000, 5.0, SerialExecutor()).reason == (
        "serial: 10000 runs of ~5 s, and the serial executor has 1 worker")
    assert choose_schedule(0, 5.0, StubExecutor()).mode == "serial"
    # one run left: nothing to compute beside it, however long
    assert choose_schedule(1, 600.0, StubExecutor()) == Schedule(
        "serial", 1, "serial: 1 run of ~600 s left")
    # a local pool's calling process computes too: one process to start for 2 workers
    assert choose_schedule(99, 0.026, ProcessExecutor(2), 1.5, spawned=1).reason == (
        "serial: 99 runs of ~0.026 s (2.6 s) do not pay for starting 1 worker process "
        "(~1.5 s)")
    with pytest.raises(ValueError, match="spawned must be >= 0, got -1"):
        choose_schedule(9, 1.0, ProcessExecutor(2), spawned=-1)


def test_one_thread_each_for_a_block_restores_every_count():
    """While this process computes beside helpers: one torch, BLAS/OpenMP and
    persistence thread; afterwards the counts it had."""
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    from topofl_lib.runner.threads import one_thread_each_meanwhile
    from topofl_lib.topology.cubical_unionfind import (
        persistence_threads,
        set_persistence_threads,
    )

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        set_persistence_threads(2)
        with threadpool_limits(2):
            blas = [p["num_threads"] for p in threadpool_info()]
            with one_thread_each_meanwhile():
                assert torch.get_num_threads() == 1 and persistence_threads() == 1
                assert all(p["num_threads"] == 1 for p in threadpool_info())
            assert [p["num_threads"] for p in threadpool_info()] == blas
            assert (torch.get_num_threads(), persistence_threads()) == (2, 2)
    finally:
        torch.set_num_threads(before)
        set_persistence_threads(None)


def test_schedule_parallel_batches():
    s = choose_schedule(400, 0.026, StubExecutor(startup_seconds=0.5))
    assert (s.mode, s.batch_size) == ("parallel", math.ceil(0.5 / 0.026)) == ("parallel", 20)
    assert s.reason == ("parallel: 400 runs of ~0.026 s (10 s) on 2 workers "
                        "(processes, start-up ~0.5 s), 20 runs per task")
    assert choose_schedule(19, 8.0, StubExecutor()).batch_size == 1  # long runs: one a task
    assert choose_schedule(100, 0.1, StubExecutor(startup_seconds=0.5)).batch_size == 5
    # the start-up estimate read before the workers were started
    assert choose_schedule(100, 0.1, StubExecutor(), startup=0.5).mode == "parallel"
    # at most ceil(n_runs / n_workers): every worker gets work
    assert choose_schedule(10, 0.01, StubExecutor(startup_seconds=0.005)).batch_size == 5
    assert choose_schedule(7, 0.0, StubExecutor(n_workers=3, startup_seconds=0.0)
                           ).batch_size == 3


def test_schedule_validates():
    with pytest.raises(ValueError, match="n_runs must be >= 0"):
        choose_schedule(-1, 0.1, StubExecutor())
    with pytest.raises(ValueError, match="seconds_per_run must be finite"):
        choose_schedule(5, float("nan"), StubExecutor())
    with pytest.raises(ValueError, match="unknown mode 'batched'"):
        Schedule("batched", 2, "")
