"""One SuperNode: Flower's SuperNode and Flower's SuperExec, its ClientApp executor.

``python -m topofl_lib.flower.node [--fast-waits] [--task-poll S] [--idle-min S]
[--idle-max S] -- <flower-supernode arguments>`` runs Flower's ``flower-supernode`` with
``--isolation process`` (its arguments are passed on unchanged; they must include
``--isolation process``, ``--port`` and ``--superexec-auth-secret-file``) together with
the ClientApp executor that ``--isolation process`` expects to be started beside it.
This is how a SuperNode is started on a machine of its own (the Flower guide, "Across machines")
and by :class:`~topofl_lib.flower.LocalFederation`, which forks its nodes from ``python
-m topofl_lib.flower.node --zygote`` (:func:`serve`), a process that has imported all
this once, so each starts in milliseconds.

By default both processes are Flower's own, run through Flower's console entry points and
nothing else of Flower: ``flwr.supernode.cli:flower_supernode`` and
``flwr.supercore.cli:flower_superexec``, the functions that Flower's ``flower-supernode``
and ``flower-superexec`` commands call (the flwr distribution's ``console_scripts``; a
test checks that this module imports no other ``flwr`` name):

* **the SuperNode** (this process): ``flower-supernode`` with the arguments given;
* **Flower's SuperExec** (a child forked before the SuperNode starts): ``flower-superexec
  --runtime-api-address HOST:PORT --insecure --superexec-auth-secret-file FILE
  --parent-pid PID``, pointed at the SuperNode's Runtime API (its ``--host`` and
  ``--port``; a Runtime API served over TLS, ``--ssl-ca-certfile`` given, is trusted with
  ``--root-certificates`` instead of ``--insecure``) and authenticated with the node's
  SuperExec secret. It is the command's own code, run in a fork rather than a new
  interpreter, which would import Flower again (about 2 s per node). It asks the
  SuperNode for ClientApp tasks every second (Flower's default; ``--task-poll`` sets
  Flower's ``FLWR_SUPEREXEC_TASK_POLL_INTERVAL`` for it) and runs each task in a new
  ``flwr-clientapp`` process, a fresh interpreter that imports Flower and the ClientApp
  (about 2 s on an idle core; the nodes of a machine start theirs at the same moment).

With ``--fast-waits`` (opt-in) the adapter :mod:`~topofl_lib.flower.fast_waits` takes
over, on the flwr version it was verified with only: it shortens the waits Flower
hard-codes in the SuperNode (:func:`~topofl_lib.flower.fast_waits.adjust_supernode`:
between two empty pulls from the SuperLink a few per round, timed by the pace of the run,
between ``--idle-min`` and ``--idle-max`` instead of 3 s; reply checks, object-pull
retries and the heartbeat as listed there) and runs its own long-lived executor in place
of Flower's SuperExec (:func:`~topofl_lib.flower.fast_waits.start_executor`: woken by the
SuperNode the moment a message is stored, it runs each task with Flower's
``run_clientapp`` in a process forked from it, Flower and the ClientApp already imported,
in milliseconds). Both reach into Flower's internal modules. On any other flwr version
the adapter changes nothing, says so in one line, and the node runs Flower's SuperExec as
without ``--fast-waits``.

Every process of the node is in the node's process group, so one signal to the group
stops the SuperNode, its executor and any ClientApp still running. The executor also
stops when the SuperNode is gone: Flower's SuperExec through its ``--parent-pid`` and, as
the SuperNode's forked child, through the signal the kernel sends it when the SuperNode
exits (``PR_SET_PDEATHSIG``; ``--parent-pid`` alone waits for the ended SuperNode to be
reaped); the adapter's executor when the SuperNode's end of its pipe closes.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import signal
import sys
import threading

from .forking import finish_child

__all__ = ["SUPEREXEC_TASK_POLL", "main"]

#: Flower's environment variable for the seconds between two asks of its SuperExec for
#: tasks (``flower-superexec`` reads it; 1 s by default, 0.01 to 60 s).
SUPEREXEC_TASK_POLL = "FLWR_SUPEREXEC_TASK_POLL_INTERVAL"


def _entry_points():
    """Flower's ``flower-supernode`` and ``flower-superexec`` console entry points (the
    flwr distribution's ``console_scripts``), imported, not yet called."""
    from flwr.supercore.cli import flower_superexec
    from flwr.supernode.cli import flower_supernode

    return flower_supernode, flower_superexec


def _runtime_address(host: str, port: int) -> str:
    """Where an executor on this machine reaches a Runtime API bound to ``host:port``."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _superexec_args(opts, supernode: int) -> list[str]:
    """The ``flower-superexec`` arguments for the SuperNode whose options are ``opts``."""
    tls = (["--root-certificates", opts.ssl_ca_certfile] if opts.ssl_ca_certfile
           else ["--insecure"])
    return ["--runtime-api-address", _runtime_address(opts.host, opts.port), *tls,
            "--superexec-auth-secret-file", opts.superexec_auth_secret_file,
            "--parent-pid", str(supernode)]


def _start_superexec(flower_superexec, args: list[str], task_poll: float | None) -> int:
    """Fork Flower's SuperExec (``flower-superexec args``) as a child of this process,
    the SuperNode's; returns its pid."""
    supernode = os.getpid()
    pid = os.fork()
    if pid == 0:
        finish_child(_superexec_child, flower_superexec, args, task_poll, supernode)
    return pid


def _superexec_child(flower_superexec, args: list[str], task_poll: float | None,
                     supernode: int) -> None:
    """In the SuperExec's child: run ``flower-superexec args`` unless the SuperNode has
    already gone."""
    _die_with_parent(signal.SIGTERM)
    if os.getppid() != supernode:  # the SuperNode was gone before the line above
        return
    if task_poll is not None:
        os.environ[SUPEREXEC_TASK_POLL] = repr(task_poll)
    # it starts each task as `flwr-clientapp`: the one of this interpreter's environment first
    os.environ["PATH"] = os.pathsep.join(
        p for p in (os.path.dirname(sys.executable), os.environ.get("PATH")) if p)
    sys.argv = ["flower-superexec", *args]
    flower_superexec()


def _parse(argv):
    from .._validation import OneLineArgumentParser

    parser = OneLineArgumentParser(prog="python -m topofl_lib.flower.node",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("--fast-waits", action="store_true",
                        help="opt in to the adapter topofl_lib.flower.fast_waits: shorter "
                             "waits in this SuperNode and a long-lived ClientApp executor in "
                             "place of Flower's SuperExec (only on the flwr version it was "
                             "verified with; Flower's own otherwise)")
    parser.add_argument("--task-poll", type=float, default=None,
                        help="seconds between two asks of Flower's SuperExec for ClientApp "
                             f"tasks (sets {SUPEREXEC_TASK_POLL} for it; default: Flower's, "
                             "1 s)")
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
    known.add_argument("--host", default="127.0.0.1")  # flower-supernode's defaults
    known.add_argument("--port", type=int)
    known.add_argument("--superexec-auth-secret-file")
    known.add_argument("--ssl-certfile")
    known.add_argument("--ssl-ca-certfile")
    opts, _ = known.parse_known_args(sn)
    if opts.isolation != "process" or opts.port is None or not opts.superexec_auth_secret_file:
        parser.error("the flower-supernode arguments need --isolation process, --port and "
                     "--superexec-auth-secret-file")
    if args.task_poll is not None and not 0.01 <= args.task_poll <= 60:
        parser.error(f"need 0.01 <= --task-poll <= 60 (Flower's range), got {args.task_poll}")
    if not 0 < args.idle_min <= args.idle_max:
        parser.error(f"need 0 < --idle-min <= --idle-max, got {args.idle_min}, {args.idle_max}")
    if args.fast_waits and opts.ssl_certfile:
        parser.error("--fast-waits runs an executor that reaches the Runtime API without "
                     "TLS: leave out --ssl-certfile, or --fast-waits")
    return args, sn, opts


def main(argv=None) -> None:
    """Run one node in this process (see the module docstring)."""
    args, sn_args, opts = _parse(argv)
    flower_supernode, flower_superexec = _entry_points()
    wake = None
    if args.fast_waits:
        from . import fast_waits

        # checks the version (one line on another, then None) and forks its executor
        wake = fast_waits.start_executor(_runtime_address(opts.host, opts.port),
                                         opts.superexec_auth_secret_file)
        if wake is not None:
            fast_waits.adjust_supernode(args.idle_min, args.idle_max, on_message=wake)
    if wake is None:  # Flower's own executor
        _start_superexec(flower_superexec, _superexec_args(opts, os.getpid()), args.task_poll)
    sys.argv = ["flower-supernode", *sn_args]
    flower_supernode()


def _die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask Linux to send this process ``sig`` when its parent dies (PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, sig)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _node_child(request: dict) -> None:
    """In a child of the zygote: become node ``request`` (own session, own log)."""
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


def serve(preload: bool = True) -> None:
    """The zygote (``--zygote``): start nodes on request, already holding the imports.

    With ``preload`` (``--zygote --fast-waits``) it also imports what the adapter's
    executor and its tasks run (:func:`~topofl_lib.flower.fast_waits.preload`); without,
    only the two entry points: the nodes of a federation without the adapter run
    Flower's SuperExec, whose ``flwr-clientapp`` interpreters import the ClientApp
    themselves (the preload was 1.2 s of CPU per federation for nothing).

    Each line on stdin is a JSON object: ``{"argv": [...], "log": path, "env": {...},
    "cwd": path}`` forks a node (a new session; :func:`main` with ``argv``) and answers
    its pid; ``{"reap": pid}`` waits for that node to end and answers its exit status.
    A node is reaped only on request, so its pid (its process group's id) stays reserved
    until its owner has stopped signalling it. At the end of stdin every node still
    running is killed with its group and reaped. Nodes die with the zygote.
    """
    from . import fast_waits

    _entry_points()
    if preload:
        fast_waits.preload()  # what its executor runs; nothing on another flwr version
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
                finish_child(_node_child, request)
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
    if sys.argv[1:2] == ["--zygote"] and sys.argv[2:] in ([], ["--fast-waits"]):
        serve(preload=sys.argv[2:] == ["--fast-waits"])
    else:
        main()
