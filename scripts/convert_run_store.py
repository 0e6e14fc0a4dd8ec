"""Convert a run store of pickles (``<key>.pkl``) into data-only files (``<key>.npz``).

Before ``topofl-data/1`` the run store (:mod:`topofl_lib.run_cache`) kept each finished
run as a Python pickle. The library no longer opens pickles: loading one can run any
code its author put in it. This script converts a store **you trust** (one your own
machine wrote) once::

    .venv/bin/python scripts/convert_run_store.py --i-trust-these-pickles build/runs/fedtopo/cpu

For each ``<key>.pkl`` it unpickles the record, writes ``<key>.npz`` with
:func:`topofl_lib.storage.dump`, reads it back through :class:`~topofl_lib.run_cache.RunCache`,
checks that every value is identical (curves and metrics bit for bit, every model
attribute, the network's weights), and only then deletes the pickle. A record that does
not survive the check is left as it was and reported. Keys do not change, so the runs are
found where they were.

Never run it on pickles from anyone else (a pull request, a download): delete those.
"""

from __future__ import annotations

import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from topofl_lib._validation import OneLineArgumentParser


def _same(a, b, where: str) -> list[str]:
    """Where ``a`` and ``b`` differ (an empty list when identical)."""
    if isinstance(a, pd.DataFrame):
        try:
            pd.testing.assert_frame_equal(a, b, check_exact=True)
            return []
        except AssertionError as exc:
            return [f"{where}: {exc}"]
    if isinstance(a, np.ndarray):
        ok = (isinstance(b, np.ndarray) and a.dtype == b.dtype
              and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        return [] if ok else [f"{where}: arrays differ"]
    if isinstance(a, dict):
        if not isinstance(b, dict) or list(a) != list(b):
            return [f"{where}: keys differ"]
        return [d for k in a for d in _same(a[k], b[k], f"{where}[{k!r}]")]
    if isinstance(a, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return [f"{where}: {type(a).__name__} differs"]
        pairs = enumerate(zip(a, b, strict=True))
        return [d for i, (x, y) in pairs for d in _same(x, y, f"{where}[{i}]")]
    if hasattr(a, "to_data"):
        return _same(a.to_data(), b.to_data(), f"{where}.state")
    if hasattr(a, "__dict__") and not isinstance(a, type):
        if type(a) is not type(b):
            return [f"{where}: {type(a).__name__} became {type(b).__name__}"]
        return _same(vars(a), vars(b), where)
    if isinstance(a, float) and np.isnan(a):
        return [] if isinstance(b, float) and np.isnan(b) else [f"{where}: NaN lost"]
    return [] if (type(a) is type(b) and a == b) else [f"{where}: {a!r} != {b!r}"]


def _name_network(record: dict) -> None:
    """Pickles written before networks recorded their architecture: find it by shape."""
    learner = getattr(record.get("model"), "learner_", None)
    net = getattr(learner, "net", None)
    if net is None or hasattr(net, "architecture"):
        return
    from topofl_lib.deep.models import MODELS, make_model

    shapes = {k: tuple(v.shape) for k, v in net.state_dict().items()}
    for name in MODELS:
        other = make_model(name, in_channels=learner.image_shape[0],
                           n_classes=learner.n_classes).state_dict()
        if {k: tuple(v.shape) for k, v in other.items()} == shapes:
            net.architecture = name
            return


def convert(folder: Path) -> tuple[int, list[str]]:
    """Convert every ``*.pkl`` in ``folder``; the number converted and the failures."""
    from topofl_lib.run_cache import RunCache

    with warnings.catch_warnings():  # it warns about the pickles this converts
        warnings.simplefilter("ignore", UserWarning)
        cache = RunCache(folder)
    done, failed = 0, []
    for path in sorted(folder.glob("*.pkl")):
        with open(path, "rb") as fh:
            record = pickle.load(fh)  # noqa: S301 -- the user vouched for these files
        key = record.get("key") if isinstance(record, dict) else None
        if key != path.stem:
            failed.append(f"{path.name}: holds run {key!r}, not its own; left as is")
            continue
        _name_network(record)
        cache.store(key, record)
        diffs = _same(record, cache.load(key), "record")
        if diffs:
            cache.path(key).unlink()
            failed.append(f"{path.name}: " + "; ".join(diffs[:3]))
            continue
        path.unlink()
        done += 1
    return done, failed


def main(argv=None) -> int:
    parser = OneLineArgumentParser(prog="scripts/convert_run_store.py",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="run-store folders")
    parser.add_argument("--i-trust-these-pickles", action="store_true", required=True,
                        help="required: unpickling runs whatever code the files hold")
    args = parser.parse_args(argv)
    for folder in args.folders:
        if not folder.is_dir():
            parser.error(f"not a folder: {folder}")
    status = 0
    for folder in args.folders:
        done, failed = convert(folder.resolve())
        print(f"{folder}: {done} run(s) converted, {len(failed)} left as pickles")
        for line in failed:
            print(f"  {line}", file=sys.stderr)
        status |= bool(failed)
    return status


if __name__ == "__main__":
    sys.exit(main())
