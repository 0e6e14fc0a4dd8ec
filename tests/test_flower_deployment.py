"""The Flower guide's deployment across machines (``docs/guide/flower.md``, "Across
machines"), run on one machine.

Every "machine" is a folder of its own (its credentials, data and ``FLWR_HOME``) and a
loopback address of its own: the SuperLink listens on 127.0.0.2 with a certificate for
that address, the two SuperNodes bind their Runtime APIs on 127.0.0.3 and 127.0.0.4 (the
same port on both) and connect to 127.0.0.2, and the operator's ``flwr`` CLI reaches the
SuperLink through a connection that trusts only the federation's CA. The commands are
the guide's, in its order; only ``ca.pem`` and the public keys travel between folders.
Flower runs unpatched (no ``--fast-waits``): each node's ClientApps run under Flower's
own SuperExec, one ``flwr-clientapp`` process per message. Every process started here is
stopped at the end, also on failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import topofl_lib as tf

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("flwr") is None,
                       reason="Flower is not installed: pip install -e .[flower]"),
    pytest.mark.slow,
    pytest.mark.federation,
]

SUPERLINK = "127.0.0.2"
NODES = ("127.0.0.3", "127.0.0.4")


def _free_port(*hosts: str) -> int:
    """A port free on every one of ``hosts`` (the same number on each)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind((hosts[0], 0))
            port = s.getsockname()[1]
        try:
            for host in hosts[1:]:
                with socket.socket() as s:
                    s.bind((host, port))
        except OSError:
            continue
        return port
    raise RuntimeError(f"no port free on all of {hosts}")


def _listening(host: str, port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex((host, port)) == 0


class Machine:
    """A folder standing for one machine, whose commands run with its ``FLWR_HOME``."""

    def __init__(self, root: Path, name: str):
        self.dir = root / name
        (self.dir / "flwr-home").mkdir(parents=True)
        bin_dir = str(Path(sys.executable).parent)
        self.env = {**os.environ, "FLWR_HOME": str(self.dir / "flwr-home"),
                    "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
                    "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        self.started: list[subprocess.Popen] = []

    def run(self, *args: str) -> str:
        out = subprocess.run(list(args), cwd=self.dir, env=self.env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, f"{args} failed:\n{out.stdout}\n{out.stderr}"
        return out.stdout

    def start(self, log: str, *args: str) -> subprocess.Popen:
        with open(self.dir / log, "ab") as fh:
            proc = subprocess.Popen(list(args), cwd=self.dir, env=self.env, stdout=fh,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.started.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.started:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_superlink_and_supernodes_on_other_addresses(tmp_path):
    py = sys.executable
    link, operator = Machine(tmp_path, "superlink"), Machine(tmp_path, "operator")
    nodes = [Machine(tmp_path, f"node{k}") for k in range(len(NODES))]
    port, node_port = _free_port(SUPERLINK), _free_port(*NODES)
    scenario = tf.make_healthcare(n_clients=len(NODES), n_adversarial=0, random_state=0)
    try:
        # 1. the SuperLink machine: the CA and the SuperLink's certificate
        link.run(py, "-m", "topofl_lib.flower.security", "tls", "credentials",
                 "--hosts", SUPERLINK)
        # 2. each SuperNode machine: its key pair, its SuperExec secret, its data
        for k, node in enumerate(nodes):
            node.run(py, "-m", "topofl_lib.flower.security", "node-key", "credentials",
                     "node")
            node.run(py, "-m", "topofl_lib.flower.security", "secret",
                     "credentials/superexec.secret")
            c = scenario.clients[k]
            np.savez(node.dir / "data.npz", X_train=c.X_train, y_train=c.y_train,
                     X_test=c.X_test, y_test=c.y_test)
        # 3. copy ca.pem to every machine, the nodes' public keys to the operator
        for machine in (*nodes, operator):
            (machine.dir / "credentials").mkdir(exist_ok=True)
            shutil.copy(link.dir / "credentials" / "ca.pem", machine.dir / "credentials")
        for k, node in enumerate(nodes):
            shutil.copy(node.dir / "credentials" / "node.pub", operator.dir / f"node_{k}.pub")
        # 4. start the SuperLink
        superlink = link.start(
            "superlink.log", py, "-m", "topofl_lib.flower.superlink", "--host", SUPERLINK,
            "--port", str(port), "--ssl-ca-certfile", "credentials/ca.pem",
            "--ssl-certfile", "credentials/superlink.pem", "--ssl-keyfile",
            "credentials/superlink.key", "--enable-supernode-auth",
            "--disable-runtime-dependency-installation")
        deadline = time.monotonic() + 60
        while not _listening(SUPERLINK, port):
            assert superlink.poll() is None and time.monotonic() < deadline, (
                (link.dir / "superlink.log").read_text())
            time.sleep(0.1)
        # 5. the operator: a connection trusting only the CA, then register the nodes
        ca = operator.dir / "credentials" / "ca.pem"
        (operator.dir / "flwr-home" / "config.toml").write_text(
            f'[superlink.topofl]\naddress = "{SUPERLINK}:{port}"\n'
            f'root-certificates = "{ca}"\n')
        for k in range(len(nodes)):
            operator.run("flwr", "supernode", "register", f"node_{k}.pub", "topofl")
        # 6. each SuperNode machine: start its node
        for k, (node, host) in enumerate(zip(nodes, NODES, strict=True)):
            node.start("supernode.log", py, "-m", "topofl_lib.flower.node", "--",
                       "--superlink", f"{SUPERLINK}:{port}",
                       "--root-certificates", "credentials/ca.pem",
                       "--auth-supernode-private-key", "credentials/node.key",
                       "--isolation", "process", "--host", host, "--port", str(node_port),
                       "--superexec-auth-secret-file", "credentials/superexec.secret",
                       "--node-config",
                       f'partition-id={k} data-path="{node.dir / "data.npz"}"')
        node_ids = []
        for node in nodes:
            deadline = time.monotonic() + 120
            while "SuperNode ID: " not in (text := (node.dir / "supernode.log").read_text()):
                assert time.monotonic() < deadline, text
                time.sleep(0.1)
            node_ids.append(int(text.split("SuperNode ID: ", 1)[1].split()[0]))
        # 7. the operator: run the app
        results = link.dir / "results.json"
        app = operator.run(py, "-c", "from topofl_lib.flower import app_dir; print(app_dir())")
        operator.run("flwr", "run", app.strip(), "topofl", "--stream", "--run-config",
                     f'num-rounds=1 eval-every=1 results-path="{results}"')
    finally:
        for machine in (*nodes, link):
            machine.stop()
    res = json.loads(results.read_text())
    assert res["finished"] and res["n_clients"] == len(NODES)
    assert [r["replied"] for r in res["rounds"]] == [[0, 1]]
    assert sorted(res["rounds"][-1]["scores"]) == ["0", "1"]
    assert len(set(node_ids)) == len(NODES)
    for node, host in zip(nodes, NODES, strict=True):  # each Runtime API on its own address
        log = (node.dir / "supernode.log").read_text()
        assert f"{host}:{node_port}" in log
        # Flower's executor: its SuperExec, and a flwr-clientapp process per message
        assert "Starting Flower SuperExec" in log and "Start `flwr-clientapp` process" in log
