"""Start a real Flower federation on this machine, run pTopoFL on it, stop everything.

:class:`LocalFederation` starts one SuperLink and one SuperNode per client as separate
processes on 127.0.0.1 (``flower-superlink --insecure``, ``flower-supernode
--insecure``; no Ray, no simulation engine), each SuperNode holding one client's data
file, and submits the Flower App of :mod:`topofl_lib.flower` with ``flwr run``. Ports
are free ones picked at start, and all Flower state (installed app bundles, the CLI's
connection config) lives in the federation's work folder (``FLWR_HOME``). Every process
it started is stopped on :meth:`~LocalFederation.stop`, which the context manager calls
also when something fails.

:func:`in_process_reference` runs the same method on the same data with the in-process
engine (``rng_streams="per_client"``), for the parity check.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np

from .._validation import check_choice, check_int
from ..data.scenarios import FederatedScenario

__all__ = ["FLOWER_METHODS", "LocalFederation", "in_process_reference", "write_partitions"]

#: Methods the Flower app runs.
FLOWER_METHODS = ("pTopoFL", "FedAvg", "FedProx")

#: Run configuration of the app and its defaults (the paper's Table 3 settings).
DEFAULT_RUN_CONFIG = {"method": "pTopoFL", "num-rounds": 15, "seed": 0, "lr": 0.1,
                      "local-epochs": 2, "batch-size": 32, "C": 1.0, "n-clusters": 2,
                      "beta": 0.3, "tau": 2.0, "mu": 0.1, "n-sub": 80, "augment": True,
                      "min-nodes": 1, "round-timeout": 60.0, "eval-every": 1,
                      "track-signatures": True,
                      "results-path": ""}


def write_partitions(scenario: FederatedScenario, folder) -> list[Path]:
    """One ``client_<k>.npz`` per client (the only data its SuperNode sees)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, c in enumerate(scenario.clients):
        p = folder / f"client_{k}.npz"
        np.savez(p, X_train=c.X_train, y_train=c.y_train, X_test=c.X_test, y_test=c.y_test)
        paths.append(p)
    return paths


def app_dir() -> Path:
    """The Flower App folder (its ``pyproject.toml`` names the ServerApp and ClientApp)."""
    return Path(str(resources.files("topofl_lib.flower").joinpath("app")))


def _toml(value) -> str:
    """A run-config value as TOML (what ``flwr run --run-config`` parses)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalFederation:
    """A SuperLink and one SuperNode per data file, as local processes.

    Parameters
    ----------
    data_paths : list of path
        One client data file per SuperNode (:func:`write_partitions`).
    workdir : path
        Logs, ``FLWR_HOME`` and results go here.
    """

    def __init__(self, data_paths, workdir):
        self.data_paths = [Path(p).resolve() for p in data_paths]
        if not self.data_paths:
            raise ValueError("data_paths is empty: a federation needs at least one client")
        self.workdir = Path(workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.bin = Path(sys.executable).parent
        self.home = self.workdir / "flwr-home"
        self.home.mkdir(exist_ok=True)
        self.env = {**os.environ, "FLWR_HOME": str(self.home), "FLWR_TELEMETRY_ENABLED": "0",
                    "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
        self.superlink: subprocess.Popen | None = None
        self.nodes: dict[int, subprocess.Popen] = {}
        self.port = None

    # -- processes ---------------------------------------------------------------------
    def _spawn(self, args, log_name: str) -> subprocess.Popen:
        log = open(self.workdir / log_name, "ab")  # the child keeps it open
        return subprocess.Popen(args, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=self.workdir)

    def start(self, wait: float = 60.0) -> LocalFederation:
        """Start the SuperLink and every SuperNode; wait until the nodes are connected."""
        self.port = _free_port()
        (self.home / "config.toml").write_text(
            f'[superlink]\ndefault = "local"\n\n[superlink.local]\n'
            f'address = "127.0.0.1:{self.port}"\ninsecure = true\n')
        self.superlink = self._spawn(
            [str(self.bin / "flower-superlink"), "--insecure", "--host", "127.0.0.1",
             "--port", str(self.port)],  # no --database: the state stays in memory
            "superlink.log")
        deadline = time.monotonic() + wait
        while not self._listening(self.port):
            if time.monotonic() > deadline or self.superlink.poll() is not None:
                self.stop()
                raise RuntimeError("the SuperLink did not start; see "
                                   f"{self.workdir / 'superlink.log'}")
            time.sleep(0.2)
        for k in range(len(self.data_paths)):
            self.start_node(k)
        time.sleep(2.0)
        return self

    @staticmethod
    def _listening(port: int) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    def start_node(self, k: int) -> None:
        """(Re)start the SuperNode of client ``k``."""
        check_int(k, "k", low=0, high=len(self.data_paths) - 1)
        self.nodes[k] = self._spawn(
            [str(self.bin / "flower-supernode"), "--insecure", "--superlink",
             f"127.0.0.1:{self.port}", "--port", str(_free_port()), "--node-config",
             f'partition-id={k} data-path="{self.data_paths[k]}"'],
            f"supernode_{k}.log")

    def kill_node(self, k: int) -> None:
        """Kill client ``k``'s SuperNode (and its ClientApp processes) at once."""
        proc = self.nodes.get(k)
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def stop(self) -> None:
        """Stop every process this federation started."""
        procs = [*self.nodes.values(), self.superlink]
        for proc in procs:
            if proc is not None and proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:  # pragma: no cover - already gone
                    pass
        for proc in procs:
            if proc is None:
                continue
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def __enter__(self) -> LocalFederation:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- runs ----------------------------------------------------------------------------
    def submit(self, name: str = "run", **run_config) -> tuple[subprocess.Popen, Path]:
        """Submit the app with ``flwr run --stream``; returns the process and results path."""
        cfg = {**DEFAULT_RUN_CONFIG, **run_config,
               "results-path": str(self.workdir / f"{name}.json")}
        check_choice(cfg["method"], "method", FLOWER_METHODS)
        unknown = set(cfg) - set(DEFAULT_RUN_CONFIG)
        if unknown:
            raise ValueError(f"unknown run config keys {sorted(unknown)}; expected "
                             f"{sorted(DEFAULT_RUN_CONFIG)}")
        overrides = " ".join(f"{k}={_toml(v)}" for k, v in cfg.items())
        proc = self._spawn([str(self.bin / "flwr"), "run", str(app_dir()), "local", "--stream",
                            "--run-config", overrides], f"{name}.log")
        return proc, Path(cfg["results-path"])

    def run(self, name: str = "run", timeout: float = 600.0, **run_config) -> dict:
        """Run the app to completion and return its results (see ``server_app``)."""
        proc, path = self.submit(name, **run_config)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        deadline = time.monotonic() + 30
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if not path.exists():
            raise RuntimeError(f"the run wrote no results; see {self.workdir / (name + '.log')}")
        return json.loads(path.read_text())


def in_process_reference(scenario: FederatedScenario, method: str = "pTopoFL",
                         **run_config):
    """The in-process engine on the same data and seed as a Flower run."""
    from ..federated import make_method

    cfg = {**DEFAULT_RUN_CONFIG, **run_config}
    check_choice(method, "method", FLOWER_METHODS)
    params = {"n_rounds": int(cfg["num-rounds"]), "lr": float(cfg["lr"]),
              "local_epochs": int(cfg["local-epochs"]), "batch_size": int(cfg["batch-size"]),
              "C": float(cfg["C"]), "random_state": int(cfg["seed"]),
              "rng_streams": "per_client"}
    if method == "pTopoFL":
        params.update(n_clusters=int(cfg["n-clusters"]), beta=float(cfg["beta"]),
                      tau=float(cfg["tau"]), n_sub=int(cfg["n-sub"]),
                      augment=bool(cfg["augment"]),
                      track_signatures=bool(cfg["track-signatures"]))
    elif method == "FedProx":
        params["mu"] = float(cfg["mu"])
    return make_method(method, **params).fit(scenario)
