"""A device check of the deep path: every FedTopo Table 1 method, 2 rounds on tiny
synthetic images (900 of 28x28, 3 clients, L-skew), on the device given.

    PYTHONPATH=$PWD python scripts/cuda_check.py cuda   # then: ... cpu, to compare

Prints each method's final accuracy, the device its record names and the seconds it took,
then everything as one JSON line. It needs no data set and none of the topology
libraries, so it runs on a GPU machine with only torch, numpy, scipy, scikit-learn and
pandas installed.
"""
import json
import sys
import time

import numpy as np
import torch

torch.set_num_threads(1)
from topofl_lib.deep import ImageDataset, deep_variants  # noqa: E402
from topofl_lib.runner import run_comparison  # noqa: E402
from topofl_lib.studies.fedtopo import TABLE1_METHODS  # noqa: E402

dev = sys.argv[1] if len(sys.argv) > 1 else "cpu"
rng = np.random.default_rng(0)
n = 900
X = rng.normal(size=(n, 784)).astype(np.float32)
y = rng.integers(0, 10, n)
for k in range(28):  # each class lights its own rows of pixels
    X[np.arange(n), y * 70 + k] += 3.0
data = ImageDataset("tiny", X, y, X[:300].copy(), y[:300].copy(), (1, 28, 28), 10)
out = {"torch": torch.__version__, "cuda": torch.cuda.is_available()}
for label in TABLE1_METHODS:
    t = time.perf_counter()
    try:
        res = run_comparison("image", seeds=[0], n_rounds=2, device=dev, progress=False,
                             variants=deep_variants([label], local_epochs=2),
                             scenario_params={"dataset": data, "partition": "L",
                                              "n_clients": 3})
        out[label] = {"acc": res.final["accuracy"].round(4).tolist(),
                      "devices": list(res.devices), "s": round(time.perf_counter() - t, 2)}
    except Exception as exc:  # report every method, then go on
        out[label] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
    print(label, out[label], flush=True)
print("JSON", json.dumps(out))
