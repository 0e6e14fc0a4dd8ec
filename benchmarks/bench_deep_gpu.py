"""The deep engine on a CUDA GPU: determinism, CPU/GPU agreement, and the cost of a
round of the papers' CIFAR ResNet-18 settings.

Run (on a machine with a CUDA GPU, from the repository root)::

    PYTHONPATH=$PWD python benchmarks/bench_deep_gpu.py --out benchmarks/results/deep_gpu.json

and, without a GPU, the reduced CPU mode (a minute or two: parts (a) and (b) run their
code path on the CPU, against itself; part (c) times a few batches and extrapolates)::

    PYTHONPATH=$PWD python benchmarks/bench_deep_gpu.py --quick

Parts (``--parts a,b,c``, run in the order given; each is written to the JSON file as soon
as it finishes, part (c) after each method it times, so a run cut short keeps what it did):

(a) **Determinism on CUDA.** FedAvg and FedTopo (TAL at conv1 on every 4th step) on
    FedTopo's CNN, 5 clients (L-skew 0.5), 2 rounds of 1 local epoch, on 2 000 synthetic
    28x28 images of 10 classes, twice with the same seed, with
    ``torch.use_deterministic_algorithms(True)``, ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` and
    cuDNN deterministic: the final global
    parameters and the accuracy curves are compared bit for bit. Should torch refuse an
    operation in deterministic mode, the refusal is recorded and the runs are repeated
    with ``warn_only=True``.
(b) **CPU against GPU.** The same configuration, 5 rounds (accuracies well above
    chance, so that seeds spread), over ``--seeds`` seeds on each device:
    final accuracies per seed, their means and standard deviations, the difference of
    the means, whether it lies within the seed spread (the larger sd), and Welch's
    t-test.
(c) **Cost of a round of the CIFAR ResNet-18 setting** (pTopoFL Scenario C / FedTopo
    Table 1: 10 clients of 5 000 images, batch 32, 5 local epochs). One client's local
    training is timed through the engine (``make_method(...).fit`` on a one-client
    scenario of synthetic 3x32x32 images) with 1 and with 2 local epochs, after a
    warm-up fit, with ``torch.cuda.synchronize()`` before each clock reading: the
    difference is the time of one local epoch, the rest the per-round overhead of a
    client (model upload, FedTopo's global embedding, evaluation). A plain torch loop
    (``torch.optim.SGD`` on the network itself) over the same batches shows what the
    engine's flat parameter vectors cost. The per-round figure of FedAvg and of FedTopo
    (TAL at layer2 on every step) is ``10 * (5 * epoch + overhead)``, clients trained
    one after another as the engine does. FedTopo is timed with each backend of
    ``--persistence``: by default with its default persistence (``auto``: numba on every
    host core) and with ``backend="torch"`` (on the device);
    ``persistence_of_one_batch`` times both on one batch of 32 layer2 activations (4,096
    maps of 16x16), checks that the device's pairs equal the host's, and times a TE
    forward + backward and a plain SGD step beside them; the pairs' share of a FedTopo
    local epoch is (batches per epoch) x (pairs of one batch) / (epoch).
    ``--quick`` times ``--quick-images`` images per client on the CPU and extrapolates
    linearly to 5 000.

Needs numpy, scipy, pandas, scikit-learn, numba, tqdm and torch (the JSON lists every
third-party module that was imported); not ripser, persim, gudhi, cripser or plotly.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before torch touches CUDA

import numpy as np  # noqa: E402
import torch  # noqa: E402

from topofl_lib.core.containers import Client, FederatedScenario  # noqa: E402
from topofl_lib.deep import ImageDataset, deep_variants, make_image_scenario  # noqa: E402
from topofl_lib.federated import make_method  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "deep_gpu.json"
#: The CIFAR setting timed in part (c).
CIFAR = {"n_clients": 10, "images_per_client": 5000, "local_epochs": 5, "batch_size": 32,
         "rounds": {"pTopoFL Scenario C": 100, "FedTopo Table 1": 10}}


# ----------------------------------------------------------------------------- helpers
def synthetic(n_train: int, n_test: int, shape: tuple, n_classes: int = 10,
              seed: int = 0) -> ImageDataset:
    """Images of ``n_classes`` blocky class templates (7x7 blocks) plus as much noise, unit
    variance: learnable within a few rounds, not trivially."""
    rng = np.random.default_rng(seed)
    c, h, w = shape
    coarse = rng.normal(size=(n_classes, c, 7, 7)).astype(np.float32)
    templates = np.repeat(np.repeat(coarse, -(-h // 7), axis=2), -(-w // 7), axis=3)
    templates = templates[:, :, :h, :w].reshape(n_classes, -1)

    def draw(n):
        y = np.arange(n) % n_classes
        X = (templates[y] + rng.normal(size=(n, c * h * w))) / np.sqrt(2.0)
        return X.astype(np.float32), y.astype(np.int64)

    Xtr, ytr = draw(n_train)
    Xte, yte = draw(n_test)
    return ImageDataset("synthetic", Xtr, ytr, Xte, yte, tuple(shape), n_classes)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def median_seconds(fn, device: str, repeats: int) -> float:
    """Median seconds of ``repeats`` calls of ``fn`` after one untimed call, the device
    synchronised before each reading of the clock."""
    fn()
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def host_cores() -> int:
    """The cores this process may run on."""
    return (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count())


def set_deterministic(on: bool, warn_only: bool = False) -> None:
    torch.use_deterministic_algorithms(on, warn_only=warn_only)
    torch.backends.cudnn.deterministic = on
    torch.backends.cudnn.benchmark = False


def environment() -> dict:
    cuda = torch.cuda.is_available()
    return {"python": platform.python_version(), "torch": torch.__version__,
            "torch_cuda": torch.version.cuda, "numpy": np.__version__,
            "cudnn": torch.backends.cudnn.version() if cuda else None,
            "device": torch.cuda.get_device_name(0) if cuda else "cpu only",
            "cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads()}


def third_party_modules() -> list[str]:
    std = set(getattr(sys, "stdlib_module_names", ()))
    top = {name.split(".")[0] for name in list(sys.modules)}
    return sorted(m for m in top if m not in std and not m.startswith("_")
                  and m not in ("topofl_lib", "__main__"))


# ----------------------------------------------------------------------------- (a), (b)
def small_fit(label: str, seed: int, device: str, data: ImageDataset, rounds: int = 2):
    """FedAvg or FedTopo on the small configuration; (final weights, accuracy curve)."""
    method, params = deep_variants([label], local_epochs=1, fedtopo={"tal_every": 4})[label]
    params["model"] = params["model"].set_params(device=device)
    sc = make_image_scenario(data, "L", 5, 0.5, random_state=seed)
    est = make_method(method, n_rounds=rounds, random_state=seed, **params).fit(sc)
    return np.asarray(est.coef_), np.asarray(est.history_["accuracy"])


def part_a(data: ImageDataset, device: str) -> dict:
    out = {"device": device}
    for label in ("FedAvg", "FedTopo"):
        refused = None
        try:
            set_deterministic(True)
            runs = [small_fit(label, 0, device, data) for _ in range(2)]
        except RuntimeError as exc:  # an operation without a deterministic CUDA kernel
            refused = " ".join(str(exc).split())[:500]
            set_deterministic(True, warn_only=True)
            runs = [small_fit(label, 0, device, data) for _ in range(2)]
        (w1, a1), (w2, a2) = runs
        out[label] = {"weights_identical": bool(np.array_equal(w1, w2)),
                      "accuracy_identical": bool(np.array_equal(a1, a2)),
                      "max_abs_weight_difference": float(np.max(np.abs(w1 - w2))),
                      "accuracy": a1.tolist(), "n_params": int(w1.size),
                      "deterministic_refusal": refused}
    set_deterministic(False)
    return out


def part_b(data: ImageDataset, seeds: list[int], device: str) -> dict:
    from scipy import stats

    set_deterministic(True, warn_only=True)
    out = {"compared": ["cpu", device]}
    for label in ("FedAvg", "FedTopo"):
        acc = {d: np.array([small_fit(label, s, d.removesuffix("_again"), data,
                                      rounds=5)[1][-1] for s in seeds])
               for d in ("cpu", "cuda" if device == "cuda" else "cpu_again")}
        if "cpu_again" in acc:  # no GPU (--quick): the code path, CPU against itself
            acc["cuda"] = acc.pop("cpu_again")
        sd = {d: float(a.std(ddof=1)) if a.size > 1 else 0.0 for d, a in acc.items()}
        diff = float(acc["cuda"].mean() - acc["cpu"].mean())
        p = (float(stats.ttest_ind(acc["cuda"], acc["cpu"], equal_var=False).pvalue)
             if len(seeds) > 1 and max(sd.values()) > 0 else None)
        out[label] = {"seeds": seeds, **{f"accuracy_{d}": a.tolist() for d, a in acc.items()},
                      **{f"mean_{d}": float(a.mean()) for d, a in acc.items()},
                      **{f"sd_{d}": sd[d] for d in acc}, "difference_of_means": diff,
                      "per_seed_abs_difference": np.abs(acc["cuda"] - acc["cpu"]).tolist(),
                      "within_seed_spread": abs(diff) <= max(sd.values()),
                      "welch_p": p}
    set_deterministic(False)
    return out


# ----------------------------------------------------------------------------- (c)
def one_client(data: ImageDataset) -> FederatedScenario:
    return FederatedScenario("one-client", [Client(data.X_train, data.y_train, data.X_test,
                                                   data.y_test, n_classes=data.n_classes)],
                             {"image_shape": data.image_shape})


def timed_fit(label: str, data: ImageDataset, device: str, epochs: int,
              backend: str | None = None) -> float:
    fedtopo = {"block": "layer2", **({"backend": backend} if backend else {})}
    method, params = deep_variants([label], architecture="resnet18_cifar",
                                   local_epochs=epochs, fedtopo=fedtopo)[label]
    params["model"] = params["model"].set_params(device=device)
    est = make_method(method, n_rounds=1, random_state=0, **params)
    sc = one_client(data)
    sync(device)
    start = time.perf_counter()
    est.fit(sc)
    sync(device)
    return time.perf_counter() - start


def plain_torch_epoch(data: ImageDataset, device: str) -> float:
    """One epoch of torch.optim.SGD on the network itself (no flat vectors)."""
    from topofl_lib.deep.models import make_model

    if device == "cpu":
        torch.set_num_threads(1)  # as the engine's TorchModel (n_threads=1)
    torch.manual_seed(0)
    net = make_model("resnet18_cifar", in_channels=3).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    X = torch.as_tensor(data.X_train, device=device).reshape(-1, *data.image_shape)
    y = torch.as_tensor(data.y_train, device=device)

    def epoch():
        for s in range(0, X.shape[0], 32):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(net(X[s:s + 32]), y[s:s + 32]).backward()
            opt.step()

    epoch()  # warm-up
    sync(device)
    start = time.perf_counter()
    epoch()
    sync(device)
    return time.perf_counter() - start


def part_c(device: str, n_images: int, backends: tuple[str, ...] = ("auto", "torch"),
           progress=lambda out: None) -> dict:
    """Part (c); ``progress(out)`` is called with the results so far after each method,
    so that a run cut short keeps the methods it timed."""
    data = synthetic(n_images, 64, (3, 32, 32), seed=1)
    scale = CIFAR["images_per_client"] / n_images
    timed_fit("FedAvg", synthetic(64, 16, (3, 32, 32)), device, 1)  # warm-up (CUDA, numba)
    timed_fit("FedTopo", synthetic(64, 16, (3, 32, 32)), device, 1)
    out = {"device": device, "images_timed_per_client": n_images,
           "extrapolated": n_images != CIFAR["images_per_client"], "setting": CIFAR,
           "plain_torch_epoch_s": plain_torch_epoch(data, device) * scale}
    progress(out)
    labels = {}
    for label, backend in (("FedAvg", None), *(("FedTopo", b) for b in backends)):
        t1, t2 = (timed_fit(label, data, device, e, backend) for e in (1, 2))
        label = label if backend in (None, "auto") else f"{label} ({backend} persistence)"
        epoch = (t2 - t1) * scale
        overhead = max(t1 - (t2 - t1), 0.0)
        per_round = CIFAR["n_clients"] * (CIFAR["local_epochs"] * epoch + overhead)
        out[label] = {"fit_1_epoch_s": t1, "fit_2_epochs_s": t2,
                      "local_epoch_per_client_s": epoch, "client_round_overhead_s": overhead,
                      "round_s": per_round,
                      "run_hours": {k: per_round * r / 3600
                                    for k, r in CIFAR["rounds"].items()}}
        if backend is not None:
            labels[backend] = label
            out[label]["tal_cost_ratio"] = epoch / out["FedAvg"]["local_epoch_per_client_s"]
            out[label]["round_ratio"] = per_round / out["FedAvg"]["round_s"]
        progress(out)
    share = out["persistence_of_one_batch"] = persistence_share(device)
    batches = -(-CIFAR["images_per_client"] // CIFAR["batch_size"])
    for backend, key in (("auto", "pairs_numba_host_s"), ("numba", "pairs_numba_host_s"),
                         ("torch", "pairs_torch_device_s")):
        if backend in labels:  # the pairs' share of a FedTopo local epoch (TAL every step)
            out[labels[backend]]["persistence_share_of_epoch"] = (
                batches * share[key] / out[labels[backend]]["local_epoch_per_client_s"])
    return out


def persistence_share(device: str, repeats: int = 5) -> dict:
    """FedTopo's persistence for one batch of 32 layer2 activations of ResNet-18 (128
    maps of 16x16 per image): on the host with numba (every core; the maps copied off
    the device first), on the device with the torch backend, and a TE forward +
    backward with each, against one plain SGD step of the network (median seconds; the
    steps timed by :func:`topofl_lib.fedtopo.tal_step_time`)."""
    from topofl_lib.deep.models import make_model
    from topofl_lib.fedtopo import tal_step_time
    from topofl_lib.topology.cubical import batch_pairs
    from topofl_lib.topology.cubical_torch import pairs_torch
    from topofl_lib.topology.cubical_unionfind import set_persistence_threads

    torch.manual_seed(0)
    net = make_model("resnet18_cifar", in_channels=3).to(device)
    x = torch.randn(32, 3, 32, 32, device=device)
    with torch.no_grad():
        maps = net.block_output(x, "layer2").flatten(0, 1)

    set_persistence_threads(None)  # every host core (numba's thread count, the default)
    steps = {b: tal_step_time(net, x, "layer2", repeats, backend=b) for b in ("numba", "torch")}
    rows = [np.column_stack(batch_pairs(maps.cpu().numpy(), "numba")),
            np.column_stack([a.cpu().numpy() for a in pairs_torch(maps)])]
    host, on_device = (r[np.lexsort(r.T[::-1])] for r in rows)  # (map, dim, birth, death)
    return {"maps": int(maps.shape[0]), "map_shape": list(maps.shape[1:]),
            # the device's pairs equal the host's, pixel for pixel (the same map order)
            "pairs_torch_device_equal_numba_host": bool(np.array_equal(host, on_device)),
            "host_cores": host_cores(),
            "sgd_step_s": steps["numba"]["ce_seconds"],
            # both with their input checks: batch_pairs's on the host, pairs_torch's on
            # the device
            "pairs_numba_host_s": median_seconds(
                lambda: batch_pairs(maps.cpu().numpy(), "numba"), device, repeats),
            "pairs_torch_device_s": median_seconds(lambda: pairs_torch(maps), device,
                                                   repeats),
            "te_step_numba_s": steps["numba"]["tal_seconds"],
            "te_step_torch_s": steps["torch"]["tal_seconds"]}


# ----------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file written")
    ap.add_argument("--quick", action="store_true",
                    help="reduced CPU mode: small data, few images timed")
    ap.add_argument("--parts", default="a,b,c", help="parts to run, e.g. a,b or c")
    ap.add_argument("--seeds", type=int, default=5, help="seeds of part (b)")
    ap.add_argument("--n-train", type=int, default=2000, help="training images of (a), (b)")
    ap.add_argument("--quick-images", type=int, default=64,
                    help="images per client timed in --quick mode (then extrapolated)")
    ap.add_argument("--persistence", default="auto,torch",
                    help="FedTopo's persistence backends timed in part (c), in this order")
    args = ap.parse_args(argv)
    parts = list(dict.fromkeys(p.strip() for p in args.parts.split(",") if p.strip()))
    if not set(parts) <= {"a", "b", "c"}:
        ap.error(f"--parts takes a, b and c, got {args.parts!r}")
    backends = tuple(dict.fromkeys(b.strip() for b in args.persistence.split(",")
                                   if b.strip()))
    if not backends or not set(backends) <= {"auto", "numba", "torch"}:
        ap.error(f"--persistence takes auto, numba and torch, got {args.persistence!r}")
    cuda = torch.cuda.is_available()
    report = {"environment": environment(), "quick": args.quick, "parts": {}}
    data = synthetic(400 if args.quick else args.n_train, 200 if args.quick else 1000,
                     (1, 28, 28))

    def save():
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report["third_party_modules"] = third_party_modules()
        args.out.write_text(json.dumps(report, indent=2) + "\n")

    seeds = list(range(2 if args.quick else args.seeds))
    gpu = "cuda" if cuda else "cpu"  # without CUDA (a) and (b) run on the CPU: the code path
    jobs = {"a": lambda: part_a(data, gpu), "b": lambda: part_b(data, seeds, gpu),
            "c": lambda: part_c("cuda" if cuda and not args.quick else "cpu",
                                args.quick_images if args.quick or not cuda
                                else CIFAR["images_per_client"], backends,
                                progress=lambda out: (report["parts"].update(c=out),
                                                      save()))}
    for part in parts:  # in the order given
        start = time.perf_counter()
        try:
            report["parts"][part] = jobs[part]()
        except Exception:  # keep the other parts; the traceback says what failed
            report["parts"][part] = {"error": traceback.format_exc()}
        report["parts"][part]["seconds"] = time.perf_counter() - start
        save()
        print(f"part {part}: {json.dumps(report['parts'][part])[:400]}", flush=True)
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
