"""Progress of the multi-seed runs, shown where they run and in ``reproduce``'s terminal.

A notebook that ``python -m topofl_lib reproduce`` executes runs in a papermill kernel, a
process of its own whose output goes into the executed notebook, not to the terminal.
Three pieces carry its runs' progress out:

* :class:`RunProgress`, what the runner
  (:func:`topofl_lib.runner.run_comparison`) counts its runs with: a tqdm bar in
  the calling process (the notebook's output) and, when the environment variable
  :data:`ENV_PROGRESS` (``TOPOFL_PROGRESS_FILE``) names a file, a small JSON status
  record there (:func:`write_progress`: a temporary file renamed over it, so a reader
  never sees half of one), rewritten at most once a second and on the last run;
* :func:`read_progress`, which reads such a record back (``None`` for a missing, partial
  or foreign file; JSON only, nothing is executed);
* :class:`ProgressWatcher`, which ``reproduce`` runs while a notebook executes: a
  background thread polls the file and shows a second bar below the notebooks' bar,
  formatted by :func:`describe`, e.g. ``FedTopo (call 3): 37/100 runs, 63 left,
  ~4 min left, run store build/runs/fedtopo/cpu``.

The time left is estimated from the runs computed in the current runner call (runs
reused from the run store take no time): elapsed / computed x left. A notebook calls
the runner several times; each call overwrites the record and ``calls`` counts them.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from tqdm.auto import tqdm

__all__ = ["ENV_PROGRESS", "ProgressWatcher", "RunProgress", "describe", "read_progress",
           "write_progress"]

#: Environment variable naming the file a :class:`RunProgress` writes its record to.
ENV_PROGRESS = "TOPOFL_PROGRESS_FILE"
#: A record file larger than this is not a record (:func:`read_progress` returns None).
MAX_RECORD_BYTES = 64 * 1024
#: Field -> accepted types of a status record (``float`` fields also accept ints).
FIELDS: dict[str, tuple[type, ...]] = {
    "label": (str,), "done": (int,), "total": (int,), "reused": (int,), "left": (int,),
    "computed": (int,), "elapsed": (int, float), "eta": (int, float, type(None)),
    "store": (str, type(None)), "pid": (int,), "calls": (int,), "updated": (int, float),
    "finished": (bool,),
}

_CALLS = itertools.count(1)  # RunProgress objects made in this process


def _count(value: Any, name: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return value


class RunProgress:
    """Count a runner call's runs: a tqdm bar here, a status record for ``reproduce``.

    The bar is tqdm's (``desc=label``, unit ``run``, starting at ``reused``, postfix
    ``left=..., reused=...``). When ``$TOPOFL_PROGRESS_FILE`` names a file, the record
    (:data:`FIELDS`) is written there on creation, after an update at most once per
    ``interval`` seconds, and always on the last run and on :meth:`close`; a file that
    cannot be written gives one warning and is then left alone (progress never stops a
    run). The record is written whether or not the bar is ``enabled``.

    Parameters
    ----------
    total : int
        Runs of the call, reused ones included.
    reused : int, default=0
        Runs read back from the run store (already done; they count in ``done``).
    label : str, default=""
        What runs (the bar's description).
    store : str or Path, optional
        The run store the runs are kept in, or None.
    enabled : bool, default=True
        Show the tqdm bar.
    clock : callable, default=time.monotonic
        Seconds, for the elapsed time, the estimate and the write interval.
    interval : float, default=1.0
        Fewest seconds between two writes of the record (but the last).

    Examples
    --------
    >>> with RunProgress(4, reused=1, label="demo", enabled=False) as progress:
    ...     progress.update()
    >>> progress.done, progress.left
    (2, 2)
    """

    def __init__(self, total: int, reused: int = 0, label: str = "",
                 store: str | Path | None = None, enabled: bool = True, *,
                 clock: Callable[[], float] = time.monotonic, interval: float = 1.0):
        self.total = _count(total, "total")
        self.reused = _count(reused, "reused")
        if reused > total:
            raise ValueError(f"reused ({reused}) exceeds total ({total})")
        self.label = str(label)
        self.store = None if store is None else str(store)
        self.done = self.reused
        self.call = next(_CALLS)
        self.path = Path(os.environ[ENV_PROGRESS]) if os.environ.get(ENV_PROGRESS) else None
        self._clock, self._interval = clock, float(interval)
        self._start = clock()
        self._written: float | None = None
        self._closed = False
        self._bar = tqdm(total=total, initial=reused, desc=self.label, unit="run",
                         disable=not enabled)
        self._bar.set_postfix(left=self.left, reused=self.reused)
        self._write(force=True)

    @property
    def left(self) -> int:
        """Runs not done yet."""
        return max(self.total - self.done, 0)

    @property
    def computed(self) -> int:
        """Runs computed (not reused) so far in this call."""
        return self.done - self.reused

    def record(self) -> dict[str, Any]:
        """The status record now (what the file holds after a write).

        Returns
        -------
        dict
            The :data:`FIELDS`: counts, ``elapsed`` and ``eta`` in seconds (``eta`` None
            before the first computed run), ``store``, ``pid``, ``calls`` (runner calls in
            this process so far), ``updated`` (Unix time) and ``finished``.
        """
        elapsed = self._clock() - self._start
        eta = (0.0 if self.left == 0 else None if self.computed <= 0
               else elapsed / self.computed * self.left)
        return {"label": self.label, "done": self.done, "total": self.total,
                "reused": self.reused, "left": self.left, "computed": self.computed,
                "elapsed": elapsed, "eta": eta, "store": self.store, "pid": os.getpid(),
                "calls": self.call, "updated": time.time(), "finished": self._closed}

    def update(self, n: int = 1) -> None:
        """Count ``n`` more computed runs.

        Parameters
        ----------
        n : int, default=1
            Runs just finished.
        """
        self.done += _count(n, "n")
        # the postfix first, without a redraw of its own: the bar is then drawn at most
        # once per tqdm's ``mininterval`` (in a notebook every redraw is a few widget
        # messages, and a runner call of many short runs sent hundreds a second)
        self._bar.set_postfix(left=self.left, reused=self.reused, refresh=False)
        self._bar.update(n)
        self._write(force=self.left == 0)

    def close(self) -> None:
        """Close the bar and write the final record (``finished``); a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        self._bar.close()
        self._write(force=True)

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _write(self, force: bool = False) -> None:
        if self.path is None:
            return
        now = self._clock()
        if not force and self._written is not None and now - self._written < self._interval:
            return
        self._written = now
        try:
            write_progress(self.path, self.record())
        except OSError as exc:
            warnings.warn(f"cannot write the progress record {self.path} ({exc}); the "
                          "runs go on without it", stacklevel=3)
            self.path = None


def write_progress(path: str | Path, record: dict[str, Any]) -> None:
    """Write ``record`` as JSON to ``path`` atomically (a temporary file, then renamed).

    Parameters
    ----------
    path : str or Path
        The record file (its folder must exist).
    record : dict
        JSON-serialisable values.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(json.dumps(record, allow_nan=False), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a record value")


def read_progress(path: str | Path) -> dict[str, Any] | None:
    """The status record in ``path``, or None (missing, unreadable, partial or foreign).

    Never raises for the file's content and never executes it: the file is parsed as
    JSON (without ``NaN``/``Infinity``) and must hold every field of :data:`FIELDS` with
    its type, non-negative counts and times.

    Parameters
    ----------
    path : str or Path
        The record file.

    Returns
    -------
    dict or None
        The record's fields.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_RECORD_BYTES + 1)
        if len(data) > MAX_RECORD_BYTES:
            return None
        record = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError included
        return None
    if not isinstance(record, dict):
        return None
    for name, types in FIELDS.items():
        value = record.get(name, ...)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return None
    return {name: record[name] for name in FIELDS}


def _duration(seconds: float) -> str:
    """``~40 s``, ``~4 min``, ``~2 h 05 min``."""
    if seconds < 60:
        return f"~{max(round(seconds), 1)} s"
    minutes = round(seconds / 60)
    return f"~{minutes} min" if minutes < 60 else f"~{minutes // 60} h {minutes % 60:02d} min"


def _short_path(path: str, root: str | Path | None) -> str:
    """``path`` relative to ``root`` when it lies below it, else as given."""
    if root is not None:
        try:
            return str(Path(path).relative_to(root))
        except ValueError:
            pass
    return path


def describe(record: dict[str, Any], root: str | Path | None = None) -> str:
    """One line for a status record, e.g. ``FedTopo (call 3): 37/100 runs, 63 left, ...``.

    Parameters
    ----------
    record : dict
        A record of :func:`read_progress` (or :meth:`RunProgress.record`).
    root : str or Path, optional
        A run store below this folder is shown relative to it.

    Returns
    -------
    str
        ``<label> (call <calls>): <done>/<total> runs, <left> left, ~<eta> left[,
        <reused> reused][, run store <store>]``; ``finished`` instead of the counts of
        what is left once the call is over, ``time left not known yet`` before its first
        computed run.
    """
    head = f"{record['label'] or 'runs'} (call {record['calls']})"
    parts = [f"{record['done']}/{record['total']} runs"]
    if record["finished"] or record["left"] == 0:
        parts.append("finished")
    else:
        eta = record["eta"]
        parts += [f"{record['left']} left",
                  "time left not known yet" if eta is None or not math.isfinite(eta)
                  else f"{_duration(eta)} left"]
    if record["reused"]:
        parts.append(f"{record['reused']} reused")
    if record["store"]:
        parts.append(f"run store {_short_path(record['store'], root)}")
    return f"{head}: {', '.join(parts)}"


class ProgressWatcher:
    """Show the record of ``path`` as a tqdm bar while a notebook runs (a context manager).

    On entering, a bar (at ``position``, below the notebooks' bar) and a background
    thread start; the thread calls :meth:`poll` every ``interval`` seconds. On exit the
    thread stops, the bar is cleared and the record file is removed.

    Parameters
    ----------
    path : str or Path
        The record file (``$TOPOFL_PROGRESS_FILE`` of the notebook's kernel).
    name : str, default=""
        The notebook's name, leading the line.
    interval : float, default=0.5
        Seconds between two reads of the file.
    position : int, default=1
        The bar's line (tqdm's ``position``).
    root : str or Path, optional
        Run stores below this folder are shown relative to it.
    enabled : bool, default=True
        Show the bar (else the thread does not start either).
    """

    def __init__(self, path: str | Path, name: str = "", *, interval: float = 0.5,
                 position: int = 1, root: str | Path | None = None, enabled: bool = True):
        self.path = Path(path)
        self.name = name
        self.interval = float(interval)
        self.position = position
        self.root = root
        self.enabled = enabled
        self.text = ""
        self._bar: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self, record: dict[str, Any] | None) -> str:
        """The text shown for ``record`` (None: no record yet).

        Parameters
        ----------
        record : dict or None
            A record of :func:`read_progress`.

        Returns
        -------
        str
            ``<name>: <describe(record)>``, or ``<name>: running, no run counted yet``.
        """
        body = "running, no run counted yet" if record is None else describe(record, self.root)
        return f"{self.name}: {body}" if self.name else body

    def poll(self) -> dict[str, Any] | None:
        """Read the file once and show it (the thread's step; callable directly).

        Returns
        -------
        dict or None
            The record read, or None.
        """
        record = read_progress(self.path)
        self.text = self.line(record)
        bar = self._bar
        if bar is not None:
            bar.set_description_str(self.text, refresh=False)
            if record is not None:
                if bar.total != record["total"]:
                    bar.reset(total=record["total"])
                bar.n = record["done"]
            bar.refresh()
        return record

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def __enter__(self) -> ProgressWatcher:
        if self.enabled:
            self._bar = tqdm(total=None, position=self.position, leave=False,
                             dynamic_ncols=True, bar_format="  {bar:10}| {desc}")
            self.poll()
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="topofl-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self.path.unlink(missing_ok=True)
