"""How long ``import topofl_lib`` takes, against importing NumPy alone.

Run: ``.venv/bin/python benchmarks/import_time.py [--repeat 7]``. Each repeat is a fresh
interpreter (``python -X importtime``) that imports NumPy first (the baseline: every
user of the library has it), then ``topofl_lib``, then touches ``topofl_lib.PTopoFL``
(what the README's first line of work loads). Printed: the median wall time of each
step, the ratio of ``import topofl_lib`` to ``import numpy``, the slowest modules of
the last run by their own import time, and which heavy packages ``import topofl_lib``
pulled in (there should be none: the package's attributes load lazily, PEP 562).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

HEAVY = ("torch", "plotly", "flwr", "gudhi", "sklearn", "pandas", "scipy", "ripser",
         "persim", "mlxtend")
PROBE = f"""
import json, sys, time
t0 = time.perf_counter(); import numpy
t1 = time.perf_counter(); import topofl_lib
t2 = time.perf_counter()
heavy = [m for m in {HEAVY!r} if m in sys.modules]
topofl_lib.PTopoFL
t3 = time.perf_counter()
print(json.dumps({{"numpy": t1 - t0, "topofl_lib": t2 - t1, "PTopoFL": t3 - t2,
                  "heavy": heavy, "file": topofl_lib.__file__}}))
"""


def _run() -> tuple[dict, list[tuple[int, str]]]:
    # -P: the working directory is not put on sys.path, so the topofl_lib measured is the
    # one the environment (or PYTHONPATH) provides
    res = subprocess.run([sys.executable, "-P", "-X", "importtime", "-c", PROBE],
                         capture_output=True, text=True, check=True)
    rows = []
    for line in res.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self" not in line:
            self_us, _, name = (part.strip() for part in line[12:].split("|"))
            rows.append((int(self_us), name.strip()))
    return json.loads(res.stdout.strip().splitlines()[-1]), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeat):
        timings, rows = _run()
        runs.append(timings)
    med = {k: statistics.median(r[k] for r in runs) for k in ("numpy", "topofl_lib", "PTopoFL")}
    print(f"{runs[-1]['file']}: median of {args.repeat} fresh interpreters:")
    print(f"  import numpy          {med['numpy']:.3f} s  (baseline)")
    print(f"  import topofl_lib     {med['topofl_lib']:.3f} s  "
          f"({med['topofl_lib'] / med['numpy']:.2f} x numpy)")
    print(f"  topofl_lib.PTopoFL    {med['PTopoFL']:.3f} s  "
          f"({med['PTopoFL'] / med['numpy']:.2f} x numpy; loads scikit-learn, ripser, ...)")
    print(f"  heavy packages after import topofl_lib: {runs[-1]['heavy'] or 'none'}")
    # -X importtime lists a module when its import ends (children first), so the rows
    # between numpy's and topofl_lib's are what `import topofl_lib` imported
    start = next(i for i, (_, name) in enumerate(rows) if name == "topofl_lib")
    numpy_at = next(i for i, (_, name) in enumerate(rows) if name == "numpy")
    own = sorted(rows[numpy_at + 1:start + 1], reverse=True)[:args.top]
    print("slowest modules imported by `import topofl_lib` (self time, last run):")
    for us, name in own:
        print(f"  {us / 1000:8.2f} ms  {name}")


if __name__ == "__main__":
    main()
