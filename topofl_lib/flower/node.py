"""One SuperNode: Flower's SuperNode and a long-lived ClientApp executor.

``python -m topofl_lib.flower.node [--fast-waits] [--task-poll S] [--idle-min S]
[--idle-max S] -- <flower-supernode arguments>`` runs Flower's ``flower-supernode`` with
``--isolation process`` (its arguments are passed on unchanged; they must include
``--isolation process``, ``--port`` and ``--superexec-auth-secret-file``). This is how a
SuperNode is started on a machine of its own (README, "Across machines") and by
:class:`~topofl_lib.flower.LocalFederation`, which forks its nodes from ``python -m
topofl_lib.flower.node --zygote`` (:func:`serve`), a process that has imported all this
once, so each starts in milliseconds. A node has imported Flower and the ClientApp and
forks:

* **the executor** (the child): the role Flower gives ``flower-superexec`` under
  ``--isolation process``. It acquires the node's ClientApp tasks from the SuperNode's
  Runtime API (authenticated with the SuperExec secret) and runs each one with Flower's
  own ``run_clientapp`` in a process forked from it, which starts in milliseconds with
  Flower and ``topofl_lib`` already imported. ``flower-superexec`` instead starts a new
  ``flwr-clientapp`` interpreter per message, about 2 s of imports each, and asks for
  tasks every second; this executor asks every ``--task-poll`` s
  (:data:`~topofl_lib.flower.polling.TASK_POLL`), or, with ``--fast-waits``, is woken by
  the SuperNode the moment a message is stored;
* **the SuperNode** (this process): Flower's ``flower-supernode`` entry point,
  unchanged. With ``--fast-waits`` (opt-in) the waits Flower hard-codes are shortened by
  the adapter :func:`~topofl_lib.flower.fast_waits.adjust_supernode` (between two empty
  pulls from the SuperLink: a few per round, timed by the pace of the run, between
  ``--idle-min`` and ``--idle-max`` instead of 3 s; reply checks, object-pull retries
  and the heartbeat as listed there), which wakes the executor through a pipe after
  each stored message; on a flwr version other than the one the adapter was verified
  with, it changes nothing, says so in one line, and the executor asks for tasks every
  ``--task-poll`` s as without it.

Every process of the node is in the node's process group, so one signal to the group
stops the node, its executor and any ClientApp still running; the executor also stops
when the SuperNode is gone.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import select
import signal
import struct
import sys
import threading
import time
import traceback

from .polling import RECEIVED_AT, TASK_POLL

__all__ = ["RECEIVED_AT", "main"]


def _run_task(address: str, token: str) -> None:
    """Run one ClientApp task with Flower's ``run_clientapp`` (in a forked child)."""
    from flwr.supernode.runtime.run_clientapp import run_clientapp

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    gc.disable()  # a task lives for one message: no garbage worth collecting
    code = 1
    try:
        run_clientapp(runtime_api_address=address, token=token, insecure=True,
                      certificates=None, parent_pid=os.getppid())
        code = 0
    except SystemExit as exit_:  # Flower ends the task with flwr_exit -> sys.exit
        code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _executor(address: str, secret_file: str, wake_fd: int, poll: float | None) -> None:
    """Acquire the node's ClientApp tasks and run each in a forked child.

    Asks for tasks whenever the SuperNode writes to ``wake_fd`` (the adapter's hook: the
    message and its objects are stored), and also every ``poll`` s unless ``poll`` is
    None. Ends when the SuperNode closes its end of the pipe.
    """
    import httpx
    from flwr.proto.runtime_pb2 import AcquireTaskRequest
    from flwr.supercore.auth import load_superexec_auth_secret
    from flwr.supercore.constant import TaskType
    from flwr.supercore.interceptors import (
        RuntimeVersionHttpInterceptor,
        SuperExecAuthHttpInterceptor,
    )
    from flwr.supercore.runtime import RuntimeHttpClient

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    client = RuntimeHttpClient.from_server_address(
        server_address=address, insecure=True, root_certificates=None,
        interceptors=[RuntimeVersionHttpInterceptor(component_name="SuperExec"),
                      SuperExecAuthHttpInterceptor(
                          master_secret=load_superexec_auth_secret(secret_file),
                          protected_methods={"/flwr.proto.Runtime/AcquireTask"})])
    request = AcquireTaskRequest(supported_task_types=[TaskType.CLIENT_APP.value])
    while True:
        if select.select([wake_fd], [], [], poll)[0]:
            data = os.read(wake_fd, 4096)
            if not data:
                return  # the SuperNode closed its end: it is gone
            # when the SuperNode stored the latest message (read by the ClientApp's timing)
            received = struct.unpack_from("d", data, len(data) - 8)[0]
        else:
            received = None  # a poll: the task's message came at most `poll` s ago
        failures = 0
        while True:
            try:
                res = client.AcquireTask(request)
            except httpx.HTTPError:  # the Runtime API is busy or going down: retry a while
                failures += 1
                if failures > 50:
                    break
                time.sleep(0.1)
                continue
            if not (res.HasField("task") and res.token):
                break
            os.environ[RECEIVED_AT] = repr(time.time() if received is None else received)
            if os.fork() == 0:
                os.close(wake_fd)
                _run_task(address, res.token)


def _parse(argv):
    from .._validation import OneLineArgumentParser

    parser = OneLineArgumentParser(prog="python -m topofl_lib.flower.node",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("--fast-waits", action="store_true",
                        help="shorten Flower's hard-coded waits in this SuperNode (the "
                             "opt-in adapter topofl_lib.flower.fast_waits; only on the flwr "
                             "version it was verified with)")
    parser.add_argument("--task-poll", type=float, default=TASK_POLL,
                        help="seconds between two asks of the executor for ClientApp tasks")
    parser.add_argument("--idle-min", type=float, default=0.02,
                        help="with --fast-waits: first wait (s) between two empty pulls "
                             "after a message")
    parser.add_argument("--idle-max", type=float, default=2.0,
                        help="with --fast-waits: longest wait (s) between two empty pulls")
    parser.add_argument("supernode_args", nargs=argparse.REMAINDER,
                        help="-- then the flower-supernode arguments")
    args = parser.parse_args(argv)
    sn = args.supernode_args[1:] if args.supernode_args[:1] == ["--"] else args.supernode_args
    known = argparse.ArgumentParser(add_help=False)
    known.add_argument("--isolation")
    known.add_argument("--host", default="127.0.0.1")
    known.add_argument("--port", type=int)
    known.add_argument("--superexec-auth-secret-file")
    opts, _ = known.parse_known_args(sn)
    if opts.isolation != "process" or opts.port is None or not opts.superexec_auth_secret_file:
        parser.error("the flower-supernode arguments need --isolation process, --port and "
                     "--superexec-auth-secret-file")
    if not args.task_poll > 0:
        parser.error(f"need --task-poll > 0, got {args.task_poll}")
    if not 0 < args.idle_min <= args.idle_max:
        parser.error(f"need 0 < --idle-min <= --idle-max, got {args.idle_min}, {args.idle_max}")
    return args, sn, f"{opts.host}:{opts.port}", opts.superexec_auth_secret_file


def _preload():
    """Import what a node runs (Flower's SuperNode and ClientApp runtime, the ClientApp);
    returns Flower's ``flower-supernode`` entry point."""
    import flwr.supernode.main  # noqa: F401  (the SuperNode's Runtime API app)
    import flwr.supernode.runtime.run_clientapp  # noqa: F401
    from flwr.supernode.cli.flower_supernode import flower_supernode

    import topofl_lib.flower.client_app  # noqa: F401  (the ClientApp the tasks load)

    return flower_supernode


def main(argv=None) -> None:
    """Run one node in this process (see the module docstring)."""
    args, sn_args, address, secret_file = _parse(argv)
    flower_supernode = _preload()  # before forking: the executor and tasks inherit it
    adjust = None
    if args.fast_waits:
        from . import fast_waits

        # the version gate runs before the fork: the executor learns whether it is woken
        adjust = fast_waits.adjust_supernode if fast_waits.check_version() else None
    wake_r, wake_w = os.pipe()
    if os.fork() == 0:
        os.close(wake_w)
        try:
            _executor(address, secret_file, wake_r, None if adjust else args.task_poll)
        finally:
            os._exit(0)
    os.close(wake_r)
    os.set_blocking(wake_w, False)

    def wake() -> None:
        try:
            os.write(wake_w, struct.pack("d", time.time()))
        except OSError:  # the executor is gone
            pass

    if adjust is not None:
        adjust(args.idle_min, args.idle_max, on_message=wake)
    sys.argv = ["flower-supernode", *sn_args]
    flower_supernode()


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent (the zygote) dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _node_child(request: dict) -> None:
    """In a child of the zygote: become node ``request`` (own session, own log)."""
    code = 1
    try:
        os.setsid()
        _die_with_parent()
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.environ.update(request.get("env", {}))
        os.chdir(request.get("cwd", "."))
        main(request["argv"])
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # noqa: BLE001 - report anything, then leave
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    """The zygote (``--zygote``): start nodes on request, already holding the imports.

    Each line on stdin is a JSON object: ``{"argv": [...], "log": path, "env": {...},
    "cwd": path}`` forks a node (a new session; :func:`main` with ``argv``) and answers
    its pid; ``{"reap": pid}`` waits for that node to end and answers its exit status.
    A node is reaped only on request, so its pid (its process group's id) stays reserved
    until its owner has stopped signalling it. At the end of stdin every node still
    running is killed with its group and reaped. Nodes die with the zygote.
    """
    _preload()
    if threading.active_count() != 1:  # forking with threads would copy held locks
        raise RuntimeError("the zygote must not run threads before forking")
    # The imports never become garbage: keep the collector off them in every node (a
    # full collection would otherwise walk them all) and their pages shared after fork.
    gc.freeze()
    nodes: set[int] = set()
    for line in sys.stdin:
        request = json.loads(line)
        if "reap" in request:
            pid = int(request["reap"])
            reply = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            nodes.discard(pid)
        else:
            reply = os.fork()
            if reply == 0:
                _node_child(request)
            nodes.add(reply)
        sys.stdout.write(f"{reply}\n")
        sys.stdout.flush()
    for pid in nodes:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)


if __name__ == "__main__":
    if sys.argv[1:] == ["--zygote"]:
        serve()
    else:
        main()
