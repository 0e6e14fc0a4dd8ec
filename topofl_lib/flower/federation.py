"""Start a real Flower federation on this machine, run pTopoFL on it, stop everything.

:class:`LocalFederation` starts one SuperLink and one SuperNode per client as separate
processes on 127.0.0.1 (no Ray, no simulation engine), each SuperNode holding one
client's data file, and submits the Flower App of :mod:`topofl_lib.flower` with
``flwr run``. By default the federation is secure:

* a certificate authority and the SuperLink's TLS certificate are made at start
  (:func:`~topofl_lib.flower.security.make_tls`); the SuperLink serves all its APIs over
  TLS, and the SuperNodes and the ``flwr`` CLI trust only that CA;
* the SuperLink runs with ``--enable-supernode-auth``: each SuperNode has its own key
  pair (:func:`~topofl_lib.flower.security.make_node_key`), its public key is registered
  with ``flwr supernode register`` before it starts, and a node whose key is not
  registered is refused.

``secure=False`` runs everything with ``--insecure`` (plain HTTP; any process that can
reach the port may join). Flower runs unpatched unless ``fast_waits=True``, which opts
into the adapter :mod:`~topofl_lib.flower.fast_waits` (shorter waits inside Flower's
SuperNode and ServerApp and a long-lived ClientApp executor, for the flwr version it was
verified with). The SuperLink is Flower's (:mod:`topofl_lib.flower.superlink` starts it
with its imports frozen for the garbage collector); each SuperNode is
:mod:`topofl_lib.flower.node` (Flower's SuperNode with ``--isolation process`` and
Flower's SuperExec, which starts a ``flwr-clientapp`` process per message; with the
adapter, its executor instead), forked from one process that has imported Flower once
(a zygote). Ports are free ones
picked at start; all Flower state lives in the federation's work folder (``FLWR_HOME``
of the SuperLink and CLI, one per SuperNode). Every process it started is stopped on
:meth:`~LocalFederation.stop`, which the context manager calls also when something
fails; the nodes also die with the zygote, and the zygote ends when the federation's
process does.

:func:`in_process_reference` runs the same method on the same data with the in-process
engine (``rng_streams="per_client"``), for the parity check.
"""
from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import warnings
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._validation import check_bool, check_choice, check_int, check_real
from .fast_waits import POLL

if TYPE_CHECKING:
    from ..data.scenarios import FederatedScenario

__all__ = ["APPS", "FLOWER_METHODS", "FlowerNotInstalled", "LocalFederation", "check_workdir",
           "default_run_config", "in_process_reference", "require_flower", "write_partitions"]

#: Methods the Flower app runs.
FLOWER_METHODS = ("pTopoFL", "FedAvg", "FedProx")
#: The Flower Apps of topofl and their folders: ``"topofl"`` runs pTopoFL, FedAvg or
#: FedProx (:mod:`~topofl_lib.flower.server_app`); ``"secure-dp"`` DP-FedAvg with
#: distributed noise under SecAgg+ (:mod:`~topofl_lib.flower.secure_server_app`).
APPS = {"topofl": "app", "secure-dp": "secure_app"}


class FlowerNotInstalled(ModuleNotFoundError):
    """A package of the ``flower`` extra (``flwr``, ``cryptography``) is not installed."""


def require_flower() -> None:
    """Raise :class:`FlowerNotInstalled` unless the ``flower`` extra is installed.

    Only looks the packages up (``importlib.util.find_spec``): imports nothing.
    """
    for name in ("flwr", "cryptography"):
        if importlib.util.find_spec(name) is None:
            raise FlowerNotInstalled(f"{name} is not installed: pip install -e .[flower]",
                                     name=name)


def check_workdir(workdir, name: str = "workdir") -> Path:
    """Return ``workdir`` resolved, if it is a folder this process can write in or create.

    Parameters
    ----------
    workdir : str or Path
        The folder (it need not exist yet).
    name : str, default="workdir"
        Parameter name used in error messages.

    Returns
    -------
    Path
        The absolute path. Nothing is created here.

    Raises
    ------
    TypeError
        ``workdir`` is not a path.
    ValueError
        It is empty, not a folder, lies under something that is not a folder, or its
        nearest existing folder is not writable.
    """
    if not isinstance(workdir, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path, got {workdir!r} ({type(workdir).__name__})")
    if not str(workdir):
        raise ValueError(f"{name} must be a folder, got an empty path")
    path = Path(workdir).resolve()
    existing = next(p for p in (path, *path.parents) if p.exists())
    what = (f"{name} {str(workdir)!r}" if existing == path
            else f"{name} {str(workdir)!r} cannot be created: {existing}")
    if not existing.is_dir():
        raise ValueError(f"{what} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{what} is not writable")
    return path


def default_run_config(app: str = "topofl") -> dict:
    """An app's run configuration and its defaults (the paper's Table 3 settings).

    Read from ``[tool.flwr.app.config]`` of the app's ``pyproject.toml``, the one place
    they are written.

    Parameters
    ----------
    app : {"topofl", "secure-dp"}, default="topofl"
        The app (:data:`APPS`).
    """
    import tomllib

    with open(app_dir(app) / "pyproject.toml", "rb") as fh:
        return dict(tomllib.load(fh)["tool"]["flwr"]["app"]["config"])


#: Seconds between two attempts to restart a SuperNode that the SuperLink still takes for
#: online (after a crash it is offline within two heartbeats: 60 s on an unpatched Flower,
#: 20 s with the fast-waits adapter).
RESTART_WAIT = 4.0


def write_partitions(scenario: FederatedScenario, folder) -> list[Path]:
    """One ``client_<k>.npz`` per client (the only data its SuperNode sees).

    Parameters
    ----------
    scenario : FederatedScenario
        The scenario whose clients are written.
    folder : str or Path
        Destination folder (created if missing).

    Returns
    -------
    list of Path
        The written files, in client order.
    """
    noisy = [k for k, c in enumerate(scenario.clients) if c.load_noise_sd > 0]
    if noisy:
        raise ValueError(f"clients {noisy} have per-load noise (load_noise_sd > 0), which "
                         "the Flower clients do not apply; build the scenario with "
                         "noise='fixed'")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, c in enumerate(scenario.clients):
        p = folder / f"client_{k}.npz"
        np.savez(p, X_train=c.X_train, y_train=c.y_train, X_test=c.X_test, y_test=c.y_test)
        paths.append(p)
    return paths


def app_dir(app: str = "topofl") -> Path:
    """A Flower App's folder (its ``pyproject.toml`` names the ServerApp and ClientApp).

    Parameters
    ----------
    app : {"topofl", "secure-dp"}, default="topofl"
        The app (:data:`APPS`).
    """
    check_choice(app, "app", tuple(APPS))
    return Path(str(resources.files("topofl_lib.flower").joinpath(APPS[app])))


def _toml(value) -> str:
    """A run-config value as TOML (what ``flwr run --run-config`` parses)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _free_port() -> int:
    """A port free on 127.0.0.1 now, outside the range of outgoing connections' ports.

    Ports the kernel gives outgoing connections (``ip_local_port_range``) are avoided: a
    federation opens many connections, and one could take a port picked for a server
    between the pick and the bind.
    """
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
            low, high = map(int, fh.read().split())
    except (OSError, ValueError):  # pragma: no cover - not Linux
        low, high = 32768, 60999
    candidates = range(1024, low) if low > 11024 else range(high + 1, 65536)
    rng = random.Random()
    for port in rng.sample(candidates, min(200, len(candidates))):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # pragma: no cover - all tried are taken
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalFederation:
    """A SuperLink and one SuperNode per data file, as local processes.

    Parameters
    ----------
    data_paths : list of path
        One client data file per SuperNode (:func:`write_partitions`).
    workdir : path
        Logs, credentials, ``FLWR_HOME`` folders and results go here.
    secure : bool, default=True
        TLS with a CA made at start and SuperNode authentication with registered keys;
        ``False`` runs everything with ``--insecure``.
    node_config : dict, optional
        Extra ``--node-config`` entries per client index, e.g. ``{3: {"fault": "nan"}}``
        (see :mod:`~topofl_lib.flower.client_app`).
    idle_max : float, default=2.0
        With ``fast_waits``: the longest wait (s) of a SuperNode between two empty pulls
        from the SuperLink (:mod:`~topofl_lib.flower.node`).
    fast_waits : bool, default=False
        Opt into the adapter :mod:`~topofl_lib.flower.fast_waits`, which shortens waits
        Flower hard-codes by patching its modules in the SuperNodes and the ServerApp and
        runs each node's ClientApps from a long-lived executor instead of Flower's
        SuperExec (only on the flwr version it was verified with; on another it changes
        nothing and logs one line). Off: Flower runs unpatched, with its own executor.
    task_poll : float, optional
        Seconds between two asks of each node's Flower SuperExec for ClientApp tasks,
        set through Flower's public ``FLWR_SUPEREXEC_TASK_POLL_INTERVAL`` (0.01 to 60;
        ``None``: Flower's 1 s). The one wait of an unpatched round that Flower lets a
        user set; the tests use 0.05. The adapter's executor (``fast_waits``) is woken
        instead and ignores it.
    """

    def __init__(self, data_paths, workdir, *, secure: bool = True, node_config=None,
                 idle_max: float = 2.0, fast_waits: bool = False,
                 task_poll: float | None = None):
        require_flower()
        self.data_paths = [Path(p).resolve() for p in data_paths]
        if not self.data_paths:
            raise ValueError("data_paths is empty: a federation needs at least one client")
        missing = [str(p) for p in self.data_paths if not p.is_file()]
        if missing:
            raise ValueError(f"data_paths: no such file {missing[0]!r}")
        self.node_config = {check_int(k, "node_config key", low=0,
                                      high=len(self.data_paths) - 1): dict(v)
                            for k, v in (node_config or {}).items()}
        self.idle_max = check_real(idle_max, "idle_max", low=0.02)
        self.secure = check_bool(secure, "secure")
        self.fast_waits = check_bool(fast_waits, "fast_waits")
        self.task_poll = (None if task_poll is None
                          else check_real(task_poll, "task_poll", low=0.01, high=60.0))
        self.workdir = check_workdir(workdir)
        if not self.secure:
            warnings.warn("LocalFederation(secure=False): no TLS and no SuperNode "
                          "authentication; any process that can reach the SuperLink's port "
                          "can join the federation and read the models", UserWarning,
                          stacklevel=2)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.bin = Path(sys.executable).parent
        self.home = self.workdir / "flwr-home"
        self.home.mkdir(exist_ok=True)
        self.credentials = self.workdir / "credentials"
        self.env = {**os.environ, "FLWR_HOME": str(self.home), "FLWR_TELEMETRY_ENABLED": "0",
                    "FLWR_DISABLE_UPDATE_CHECK": "1",
                    "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
        self.superlink: subprocess.Popen | None = None
        self.nodes: dict[int, NodeProcess] = {}
        self.processes: list = []  # everything started (Popen or NodeProcess), for stop()
        self._zygote: _Zygote | None = None
        self.tls = None
        self.port = None
        self._node_args: dict[int, list[str]] = {}   # each node's flower-supernode args
        self._node_config: dict[int, dict] = {}      # extra node config of its last start
        self._log_offset: dict[int, int] = {}        # where its current log begins

    # -- processes ---------------------------------------------------------------------
    def _spawn(self, args, log_name: str, env=None) -> subprocess.Popen:
        log = open(self.workdir / log_name, "ab")  # the child keeps it open
        try:
            proc = subprocess.Popen(args, env=env or self.env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    cwd=self.workdir)
        finally:
            log.close()
        self.processes.append(proc)
        return proc

    def start(self, wait: float = 120.0) -> LocalFederation:
        """Start the SuperLink and every SuperNode; wait until every node is connected."""
        try:
            log = open(self.workdir / "zygote.log", "ab")
            try:  # imports Flower (and the adapter's ClientApp) while the SuperLink starts
                self._zygote = _Zygote(self.env, self.workdir, log, self.fast_waits)
            finally:
                log.close()
            self._start_superlink(wait)
            if self.secure:
                self.register([self.node_key(k)[1] for k in range(len(self.data_paths))])
            for k in range(len(self.data_paths)):
                self.start_node(k, wait=0)
            deadline = time.monotonic() + wait
            for k in range(len(self.data_paths)):
                self.wait_node(k, max(deadline - time.monotonic(), 1.0))
        except BaseException:
            self.stop()
            raise
        return self

    def _start_superlink(self, wait: float) -> None:
        self.port = _free_port()
        address = f"127.0.0.1:{self.port}"
        if self.secure:
            from .security import make_tls  # needs cryptography (the flower extra)

            self.tls = make_tls(self.credentials)
            tls_args = ["--ssl-ca-certfile", str(self.tls.ca), "--ssl-certfile",
                        str(self.tls.cert), "--ssl-keyfile", str(self.tls.key),
                        "--enable-supernode-auth"]
            connection = f'root-certificates = "{self.tls.ca}"'
        else:
            tls_args, connection = ["--insecure"], "insecure = true"
        (self.home / "config.toml").write_text(
            f'[superlink]\ndefault = "local"\n\n[superlink.local]\n'
            f'address = "{address}"\n{connection}\n')
        self.superlink = self._spawn(
            [sys.executable, "-m", "topofl_lib.flower.superlink", "--host", "127.0.0.1", "--port",
             str(self.port), "--disable-runtime-dependency-installation", *tls_args],
            "superlink.log")  # no --database: the state stays in memory
        deadline = time.monotonic() + wait
        while not _listening(self.port):
            if time.monotonic() > deadline or self.superlink.poll() is not None:
                raise RuntimeError("the SuperLink did not start; see "
                                   f"{self.workdir / 'superlink.log'}")
            time.sleep(0.1)

    def node_key(self, k: int) -> tuple[Path, Path]:
        """Client ``k``'s SuperNode key pair (made on first use; secure mode)."""
        check_int(k, "k", low=0, high=len(self.data_paths) - 1)
        private, public = self.credentials / f"node_{k}.key", self.credentials / f"node_{k}.pub"
        if not private.exists():
            from .security import make_node_key

            make_node_key(self.credentials, f"node_{k}")
        return private, public

    def register(self, public_keys) -> None:
        """Register SuperNode public keys with ``flwr supernode register``."""
        log = self.workdir / "register.log"
        with open(log, "ab") as fh:
            rc = subprocess.run([sys.executable, "-m", "topofl_lib.flower.security",
                                 "register", *map(str, public_keys)], env=self.env,
                                stdout=fh, stderr=subprocess.STDOUT, timeout=300,
                                cwd=self.workdir).returncode
        if rc != 0:
            raise RuntimeError(f"flwr supernode register failed; see {log}")

    def node_args(self, k: int, private_key=None, **node_config) -> list[str]:
        """The ``flower-supernode`` arguments of client ``k``'s SuperNode.

        Parameters
        ----------
        k : int
            Client index (``0 <= k < len(data_paths)``).
        private_key : Path, optional
            The SuperNode's private key; by default the client's own key (secure federations only).
        **node_config
            Extra ``--node-config`` entries (e.g. an injected ``fault``), overriding the stored
            ones.

        Returns
        -------
        list of str
            Command-line arguments for ``flower-supernode``.
        """
        check_int(k, "k", low=0, high=len(self.data_paths) - 1)
        folder = self.workdir / "nodes" / str(k)
        folder.mkdir(parents=True, exist_ok=True)
        from .security import make_secret

        secret = make_secret(folder / "superexec.secret")  # mode 0600 from the start
        config = {"partition-id": k, "data-path": str(self.data_paths[k]),
                  **self.node_config.get(k, {}), **node_config}
        args = ["--superlink", f"127.0.0.1:{self.port}", "--isolation", "process",
                "--host", "127.0.0.1", "--port", str(_free_port()),
                "--superexec-auth-secret-file", str(secret),
                "--node-config", " ".join(f"{key}={_toml(v)}" for key, v in config.items())]
        if not self.secure:
            return [*args, "--insecure"]
        private_key = self.node_key(k)[0] if private_key is None else private_key
        return [*args, "--root-certificates", str(self.tls.ca),
                "--auth-supernode-private-key", str(private_key)]

    def spawn_node(self, k: int, args, log_name: str) -> NodeProcess:
        """Start a SuperNode (:mod:`~topofl_lib.flower.node`) for client ``k`` with
        ``flower-supernode`` ``args``, logging to ``log_name``.

        Parameters
        ----------
        k : int
            Client index.
        args : list of str
            ``flower-supernode`` arguments (see :meth:`node_args`).
        log_name : str
            Log file name inside the work directory.

        Returns
        -------
        NodeProcess
            The forked SuperNode.
        """
        if self._zygote is None:
            raise RuntimeError("start the federation before its SuperNodes")
        env = {"FLWR_HOME": str(self.workdir / "nodes" / str(k) / "flwr-home")}
        options = ["--fast-waits"] if self.fast_waits else []
        if self.task_poll is not None:
            options += ["--task-poll", repr(self.task_poll)]
        proc = self._zygote.fork([*options, "--idle-max", str(self.idle_max), "--", *args],
                                 self.workdir / log_name, env, self.workdir)
        self.processes.append(proc)
        return proc

    def start_node(self, k: int, wait: float = 120.0, **node_config) -> None:
        """(Re)start the SuperNode of client ``k``; wait until it is connected.

        A node restarted after a crash can rejoin with its key once the SuperLink has
        taken it for offline (at most two heartbeats: 60 s, or 20 s with ``fast_waits``):
        until then its start is refused and is retried here.

        Parameters
        ----------
        k : int
            Client index.
        wait : float, default=120.0
            Seconds to wait for the node to connect; ``0`` returns at once.
        **node_config
            Extra ``--node-config`` entries for this node (see :meth:`node_args`).
        """
        self.kill_node(k)
        log = self.workdir / f"supernode_{k}.log"
        self._log_offset[k] = log.stat().st_size if log.exists() else 0
        self._node_config[k] = node_config
        self._node_args[k] = self.node_args(k, **node_config)
        self.nodes[k] = self.spawn_node(k, self._node_args[k], log.name)
        if wait > 0:
            self.wait_node(k, wait)

    def wait_node(self, k: int, timeout: float = 120.0) -> int:
        """Wait until client ``k``'s SuperNode is connected; returns its node id.

        Parameters
        ----------
        k : int
            Client index.
        timeout : float, default=120.0
            Seconds before a ``RuntimeError``.

        Returns
        -------
        int
            The SuperNode id the SuperLink assigned.
        """
        log = self.workdir / f"supernode_{k}.log"
        deadline = time.monotonic() + timeout
        while True:
            # whether it has ended, before reading its log: an ended node's log is complete
            ended = self.nodes[k].poll() is not None
            with open(log, "rb") as fh:
                fh.seek(self._log_offset[k])
                text = fh.read().decode(errors="ignore")
            if "SuperNode ID: " in text:
                return int(text.split("SuperNode ID: ", 1)[1].split()[0])
            if time.monotonic() > deadline:
                raise RuntimeError(f"SuperNode {k} did not connect within {timeout:.0f} s; "
                                   f"see {log}")
            if ended:
                if "address already in use" in text:  # its Runtime API port was taken
                    self._node_args[k] = self.node_args(k, **self._node_config[k])
                elif "Failed to initialize the connection" in text:
                    time.sleep(RESTART_WAIT)  # refused: not yet offline after a crash
                else:
                    raise RuntimeError(f"SuperNode {k} stopped; see {log}")
                self._log_offset[k] = log.stat().st_size
                self.nodes[k] = self.spawn_node(k, self._node_args[k], log.name)
            time.sleep(0.1)

    def kill_node(self, k: int) -> None:
        """Kill client ``k``'s SuperNode (and its executor and ClientApps) at once."""
        proc = self.nodes.get(k)
        if proc is not None:
            _end_group(proc, signal.SIGKILL)

    def stop(self) -> None:
        """Stop every process this federation started, and every process those started,
        and return when all have ended.

        Process groups do not reach everything: the SuperLink starts its SuperExec, which
        starts each ``flwr-serverapp``, in sessions of their own. So the tree below the
        federation's processes is read from ``/proc`` first, and what is left of it once
        the groups have ended is killed and waited for (a ``flwr-serverapp`` used to live
        on for about 10 s after a run that timed out).
        """
        procs = self.processes[::-1]  # runs and nodes before the SuperLink
        roots = [p.pid for p in procs if p.returncode is None]
        if self._zygote is not None and self._zygote.proc.poll() is None:
            roots.append(self._zygote.proc.pid)
        below = _descendants(roots)
        for proc in procs:
            if proc.returncode is None:
                _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in procs:
            _end_group(proc, signal.SIGTERM, max(deadline - time.monotonic(), 0.0))
        if self._zygote is not None:
            self._zygote.close()  # also ends any node it still holds
        _end_processes(below, max(deadline - time.monotonic(), 2.0))

    def __enter__(self) -> LocalFederation:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- runs ----------------------------------------------------------------------------
    def submit(self, name: str = "run", app: str = "topofl", **run_config
               ) -> tuple[subprocess.Popen, Path]:
        """Submit an app with ``flwr run --stream``; returns the process and results path.

        Parameters
        ----------
        name : str, default="run"
            Name of the run's log (``<name>.log``) and results file (``<name>.json``).
        app : {"topofl", "secure-dp"}, default="topofl"
            The app (:data:`APPS`); ``"secure-dp"``'s ``num-clients`` is the federation's
            number of clients unless given.
        **run_config
            Run-config entries overriding ``default_run_config(app)`` (``fast-waits`` is
            the federation's unless given, and where the run's ``fast-waits`` is true,
            ``poll-interval`` is :data:`~topofl_lib.flower.fast_waits.POLL` unless
            given); an unknown key raises ``ValueError``.

        Returns
        -------
        process : subprocess.Popen
            The ``flwr run`` process.
        results_path : Path
            Where the ServerApp writes the results.
        """
        defaults = default_run_config(app)
        own = {"num-clients": len(self.data_paths)} if app == "secure-dp" else {}
        cfg = {**defaults, "fast-waits": self.fast_waits, **own, **run_config,
               "results-path": str(self.workdir / f"{name}.json")}
        if cfg["fast-waits"] and "poll-interval" not in run_config:
            cfg["poll-interval"] = POLL
        if app == "topofl":
            check_choice(cfg["method"], "method", FLOWER_METHODS)
        unknown = set(cfg) - set(defaults)
        if unknown:
            raise ValueError(f"unknown run config keys {sorted(unknown)}; expected "
                             f"{sorted(defaults)}")
        Path(cfg["results-path"]).unlink(missing_ok=True)
        overrides = " ".join(f"{k}={_toml(v)}" for k, v in cfg.items())
        proc = self._spawn([str(self.bin / "flwr"), "run", str(app_dir(app)), "local",
                            "--stream", "--run-config", overrides], f"{name}.log")
        return proc, Path(cfg["results-path"])

    def run(self, name: str = "run", timeout: float = 600.0, app: str = "topofl",
            **run_config) -> dict:
        """Run the app to completion and return its results (see ``server_app``).

        Parameters
        ----------
        name : str, default="run"
            Name of the run's log and results files.
        timeout : float, default=600.0
            Seconds before the run is killed (``subprocess.TimeoutExpired``).
        app : {"topofl", "secure-dp"}, default="topofl"
            The app (see :meth:`submit`).
        **run_config
            Run-config entries (see :meth:`submit`).

        Returns
        -------
        dict
            The ServerApp's results; a run that did not finish raises ``RuntimeError``.
        """
        proc, path = self.submit(name, app, **run_config)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end_group(proc, signal.SIGKILL)
            raise
        results = json.loads(path.read_text()) if path.exists() else {}
        if not results.get("finished"):
            raise RuntimeError(f"the run did not finish; see {self.workdir / (name + '.log')}")
        return results


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class NodeProcess:
    """A SuperNode forked by the federation's zygote (``python -m topofl_lib.flower.node
    --zygote``): the part of ``subprocess.Popen``'s interface the federation uses.

    The zygote reaps a node only when :meth:`poll` finds it ended, so until then its
    pid, which is its process group's id, belongs to this node.
    """

    def __init__(self, zygote: _Zygote, pid: int):
        self.zygote, self.pid, self.returncode = zygote, pid, None

    def exited(self) -> bool:
        """Whether the node has ended (without reaping it)."""
        if self.returncode is None and self.zygote.proc.poll() is not None:
            self.returncode = -signal.SIGKILL  # died with the zygote; its pid is not ours
        if self.returncode is not None:
            return True
        stat = _proc_stat(self.pid)
        return stat is None or stat[0] in ("Z", "X")  # None: gone (not before the reap)

    def poll(self) -> int | None:
        """The exit status if the node has ended (it is then reaped), else None."""
        if self.returncode is None and self.exited():
            self.returncode = self.zygote.reap(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the node to end; returns its exit status."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"node {self.pid}", timeout)
            time.sleep(0.05)
        return self.returncode

    def kill(self) -> None:
        """SIGKILL the node's process group (the SuperNode, its executor, its tasks)."""
        self.exited()  # notes a zygote that is gone
        _signal_group(self, signal.SIGKILL)


class _Zygote:
    """The process that forks the federation's SuperNodes (see :class:`NodeProcess`)."""

    def __init__(self, env: dict, cwd: Path, log, fast_waits: bool):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "topofl_lib.flower.node", "--zygote",
             *(["--fast-waits"] if fast_waits else [])], env=env, cwd=cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            start_new_session=True)
        self.log = Path(log.name)

    def _ask(self, request: dict) -> int:
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
        except (BrokenPipeError, ValueError):
            answer = ""
        if not answer:
            raise RuntimeError(f"the SuperNode zygote stopped; see {self.log}")
        return int(answer)

    def fork(self, argv, log: Path, env: dict, cwd: Path) -> NodeProcess:
        """Start a node (:func:`topofl_lib.flower.node.main` with ``argv``) logging to
        ``log``, which exists when this returns (the node appends to it)."""
        Path(log).touch(mode=0o644)  # whoever reads it next need not wait for the child
        return NodeProcess(self, self._ask({"argv": list(argv), "log": str(log), "env": env,
                                            "cwd": str(cwd)}))

    def reap(self, pid: int) -> int:
        """Reap an ended node; returns its exit status (-9 if the zygote is gone: its
        nodes died with it)."""
        try:
            return self._ask({"reap": pid})
        except RuntimeError:
            return -signal.SIGKILL

    def close(self, timeout: float = 10.0) -> None:
        """End the zygote (it kills and reaps the nodes still running)."""
        if self.proc.returncode is not None:
            return
        try:
            self.proc.stdin.close()
        except BrokenPipeError:  # pragma: no cover - already gone
            pass
        _end_group(self.proc, None, timeout)  # it ends by itself once stdin is closed


def _exited(proc) -> bool:
    """Whether ``proc`` (Popen or NodeProcess) has ended, without reaping it."""
    if isinstance(proc, NodeProcess):
        return proc.exited()
    return (proc.returncode is not None
            or os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None)


def _signal_group(proc, sig: int) -> None:
    """Send ``sig`` to the process group ``proc`` leads (started in a new session).

    Only while ``proc`` is not reaped: until then its pid, which is the group's id,
    cannot be given to another process.
    """
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):  # the group is gone
            pass


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, parent pid, start time)`` of process ``pid`` from ``/proc``, or None if
    it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[19])


def _descendants(roots: list[int]) -> dict[int, int]:
    """Every live process below ``roots``, ``{pid: start time}`` (the start time tells a
    pid given later to another process apart); empty where ``/proc`` is not there."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        stat = _proc_stat(int(entry)) if entry.isdigit() else None
        if stat is not None and stat[0] not in ("Z", "X"):
            children.setdefault(stat[1], []).append((int(entry), stat[2]))
    found: dict[int, int] = {}
    todo = list(roots)
    while todo:
        for pid, start in children.get(todo.pop(), ()):
            if pid not in found:
                found[pid] = start
                todo.append(pid)
    return found


def _end_processes(processes: dict[int, int], timeout: float) -> None:
    """SIGKILL what is still alive of ``processes`` (``{pid: start time}``) and wait up
    to ``timeout`` s until none is (a zombie counts as ended: its parent reaps it)."""
    def alive() -> list[int]:
        out = []
        for pid, start in processes.items():
            stat = _proc_stat(pid)
            if stat is not None and stat[2] == start and stat[0] not in ("Z", "X"):
                out.append(pid)
        return out

    for pid in alive():
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + timeout
    while alive() and time.monotonic() < deadline:
        time.sleep(0.02)


def _end_group(proc, sig: int | None, timeout: float = 10.0) -> None:
    """Signal ``proc``'s group (unless ``sig`` is None), wait up to ``timeout`` s for
    ``proc`` to exit, SIGKILL what is left of the group (``proc``'s forked children),
    then reap ``proc``."""
    if proc.returncode is not None:  # reaped earlier: nothing of ours to signal
        return
    if sig is not None:
        _signal_group(proc, sig)
    deadline = time.monotonic() + timeout
    while not _exited(proc) and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal_group(proc, signal.SIGKILL)
    proc.wait()


def in_process_reference(scenario: FederatedScenario, method: str = "pTopoFL",
                         **run_config):
    """The in-process engine on the same data and seed as a Flower run.

    Parameters
    ----------
    scenario : FederatedScenario
        The data the Flower run uses.
    method : {"pTopoFL", "FedAvg", "FedProx", "DP-FedAvg"}, default="pTopoFL"
        The federated method; ``"DP-FedAvg"`` is the ``secure-dp`` app's: FedAvg with
        ``model_dp=ClientLevelDP(noise="distributed")``.
    **run_config
        Flower run-config entries (``num-rounds``, ``seed``, ``lr``, ...) overriding the
        app's ``default_run_config``; they are mapped onto the method's parameters.

    Returns
    -------
    estimator
        The fitted in-process method (its ``history_`` holds the per-round scores).
    """
    from ..federated import make_method

    check_choice(method, "method", (*FLOWER_METHODS, "DP-FedAvg"))
    secure = method == "DP-FedAvg"
    cfg = {**default_run_config("secure-dp" if secure else "topofl"), **run_config}
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
    elif secure:
        from ..privacy.model_channel import ClientLevelDP

        params["model_dp"] = ClientLevelDP(
            float(cfg["noise-multiplier"]), float(cfg["clip"]), delta=float(cfg["delta"]),
            relation=str(cfg["relation"]), noise="distributed")
    return make_method("FedAvg" if secure else method, **params).fit(scenario)
