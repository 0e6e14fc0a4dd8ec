"""Where a FedTopo training step's time goes at the CIFAR ResNet-18 setting (TAL at
layer2: 32 images, 4,096 maps of 16x16 a step), on a CUDA device or, without one, on
the CPU.

Run (from the repository root; a GPU is used when there is one)::

    PYTHONPATH=$PWD python benchmarks/tal_gpu_profile.py --out-dir benchmarks/results/tal_profile

It writes to ``--out-dir``:

* ``parts.json``: medians over ``--repeats`` (each reading of the clock after a CUDA
  synchronisation) of a plain step (cross-entropy forward + backward of the whole
  network) and of the parts of the TE forward + backward taken one at a time: the
  block's forward, the maps' copy to the host, their finiteness check, the persistence
  pairs on the host (numba) with 1, 2, 4, ... threads up to the host's cores, the pairs
  on the device (torch backend), the pairs' copy to the device and the gather, the
  persistence images, the TE loss's backward; and a training step of the engine
  (``TorchLearner.gradient``) without the TAL term, with it, and with it deferred (the
  TE's pairs computed on the host while the cross-entropy's backward pass runs: what
  FedTopo does on a CUDA device), side by side, with the deferred gradient checked
  equal to the other bit for bit;
* ``host_profile.txt``: cProfile of 20 FedTopo training steps (one epoch of 640 images)
  after a warm-up fit, sorted by cumulative and by own time: on a GPU the host's waits
  for the device show as the time of the call that waits (a copy to the host, ``item``);
* ``device_profile.txt``: torch's profiler over the same fit, operators sorted by their
  device time and by their host time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before torch touches CUDA

import numpy as np  # noqa: E402
import torch  # noqa: E402

from topofl_lib.deep import ImageDataset, TorchModel, deep_variants
from topofl_lib.deep.models import make_model
from topofl_lib.federated import make_method
from topofl_lib.fedtopo import TopologicalEmbedding, persistence_image
from topofl_lib.topology.cubical import batch_pairs, gather_values
from topofl_lib.topology.cubical_torch import pairs_torch
from topofl_lib.topology.cubical_unionfind import pairs_batch, set_persistence_threads

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_deep_gpu import host_cores, median_seconds, one_client, sync  # noqa: E402

BLOCK = "layer2"


def parts(device: str, repeats: int) -> dict:
    """The TE step's parts, one at a time, on one batch of 32 CIFAR-shaped images."""
    torch.manual_seed(0)
    net = make_model("resnet18_cifar", in_channels=3).to(device)
    x = torch.randn(32, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (32,), device=device)
    with torch.no_grad():
        acts = net.block_output(x, BLOCK)
        te = TopologicalEmbedding().fit(acts)
        target = te.embed(acts)
    n, C, H, W = acts.shape
    maps_host = acts.reshape(n * C, H, W).cpu().numpy()
    map_index, pairs = batch_pairs(maps_host, "numba")

    def ce_step():
        net.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(net(x), y).backward()

    def te_step():
        net.zero_grad(set_to_none=True)
        ((te.embed(net.block_output(x, BLOCK)) - target) ** 2).sum(1).mean().backward()

    grids = [torch.as_tensor(g, dtype=acts.dtype, device=device)
             for g in (te.birth_grid_, te.pers_grid_)]

    def images_forward():  # the pairs' values gathered, then the persistence images
        with torch.no_grad():
            birth, death = gather_values(acts.reshape(n * C, H * W), map_index, pairs)
            persistence_image(torch.as_tensor(map_index, device=device), birth,
                              death - birth, n * C, *grids, te.sigma_)

    def te_backward():  # the TE loss's backward alone (its graph rebuilt, untimed, first)
        out = te.embed(net.block_output(x, BLOCK))
        loss = ((out - target) ** 2).sum(1).mean()
        sync(device)
        start = time.perf_counter()
        loss.backward()
        sync(device)
        return time.perf_counter() - start

    out = {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
           "host_cores": host_cores(), "maps": n * C, "map_shape": [H, W],
           "pairs": int(len(pairs)), "repeats": repeats,
           "ce_step_s": median_seconds(ce_step, device, repeats),
           "te_step_s": median_seconds(te_step, device, repeats),
           "block_forward_s": median_seconds(
               lambda: net.block_output(x, BLOCK), device, repeats),
           "maps_to_host_s": median_seconds(
               lambda: acts.reshape(n * C, H, W).cpu().numpy(), device, repeats),
           "finiteness_check_s": median_seconds(
               lambda: np.isfinite(maps_host).all(), device, repeats),
           "batch_pairs_default_threads_s": median_seconds(
               lambda: batch_pairs(maps_host, "numba"), device, repeats),
           "pairs_torch_device_s": median_seconds(lambda: pairs_torch(acts.reshape(
               n * C, H, W)), device, repeats),
           "pairs_to_device_and_gather_s": median_seconds(
               lambda: gather_values(acts.reshape(n * C, H * W), map_index, pairs),
               device, repeats),
           "images_forward_s": median_seconds(images_forward, device, repeats)}
    te_backward()
    out["te_backward_s"] = float(np.median([te_backward() for _ in range(repeats)]))
    out.update(engine_steps(device, repeats))
    threads, t = [], 1
    while t <= host_cores():
        threads.append(t)
        t *= 2
    out["pairs_numba_by_threads_s"] = {
        str(t): median_seconds(lambda t=t: pairs_batch(maps_host, (0, 1), n_threads=t),
                            device, repeats) for t in threads}
    set_persistence_threads(None)
    return out


def engine_steps(device: str, repeats: int) -> dict:
    """The engine's training step (``TorchLearner.gradient`` on a device work vector,
    batch 32) without TAL, with the TAL term added before the one backward pass
    (``extra_loss``) and with it deferred (``deferred_loss``: the TE's pairs computed in
    a host thread while the cross-entropy's backward runs), timed in turn within each
    repeat; the deferred gradient is checked equal to the other, bit for bit."""
    learner = TorchModel("resnet18_cifar", device=device).make_learner(
        3 * 32 * 32, np.random.default_rng(0))
    w = learner.to_work(learner.init_params())
    rng = np.random.default_rng(2)
    data = learner.client_data(rng.normal(size=(64, 3 * 32 * 32)).astype(np.float32),
                               np.arange(64) % 10)
    idx, tal_x = np.arange(32), data[0][32:64]
    with torch.no_grad():
        acts = learner.block_output(w, tal_x, BLOCK)
        te = TopologicalEmbedding().fit(acts)
        target = te.embed(acts)

    def tal(t_local):
        return 0.5 * ((t_local - target) ** 2).sum(1).mean()

    def deferred(net):
        finish = te.embed_deferred(net.block_output(tal_x, BLOCK))
        return lambda: tal(finish())

    steps = {"plain": lambda: learner.gradient(w, data, idx),
             "tal": lambda: learner.gradient(w, data, idx, extra_loss=lambda net: tal(
                 te.embed(net.block_output(tal_x, BLOCK)))),
             "tal_deferred": lambda: learner.gradient(w, data, idx, deferred_loss=deferred)}
    # compared with deterministic kernels (cuDNN's default backward is not bit-stable),
    # each path twice: the control and the claim
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    grads = {k: (steps[k](), steps[k]()) for k in ("tal", "tal_deferred")}
    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.deterministic = False
    repeat_same = bool(torch.equal(*grads["tal"]) and torch.equal(*grads["tal_deferred"]))
    same = bool(torch.equal(grads["tal"][0], grads["tal_deferred"][0]))
    times = {k: [] for k in steps}
    for _ in range(repeats + 1):
        for key, fn in steps.items():
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
            times[key].append(time.perf_counter() - start)
    med = {k: float(np.median(v[1:])) for k, v in times.items()}
    return {"engine_step_s": med, "engine_tal_ratio": med["tal"] / med["plain"],
            "engine_tal_deferred_ratio": med["tal_deferred"] / med["plain"],
            "deterministic_repeat_identical": repeat_same,
            "deferred_gradient_identical": same}


def noise_images(n: int, seed: int = 1) -> ImageDataset:
    """``n`` CIFAR-shaped images of standard normal noise, ten balanced labels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3 * 32 * 32)).astype(np.float32)
    y = (np.arange(n) % 10).astype(np.int64)
    return ImageDataset("synthetic", X, y, X[:64], y[:64], (3, 32, 32), 10)


def one_epoch_fit(label: str, device: str, n_images: int):
    """A closure fitting ``label`` (FedAvg or FedTopo) for one round of one local epoch
    of one client."""
    sc = one_client(noise_images(n_images))
    method, params = deep_variants([label], architecture="resnet18_cifar", local_epochs=1,
                                   fedtopo={"block": BLOCK})[label]
    params["model"] = params["model"].set_params(device=device)
    return lambda: make_method(method, n_rounds=1, random_state=0, **params).fit(sc)


def profiles(device: str, out_dir: Path, n_images: int) -> dict:
    fits = {label: one_epoch_fit(label, device, n_images) for label in ("FedAvg", "FedTopo")}
    seconds = {}
    for label, fit in fits.items():
        fit()  # warm-up: CUDA, cuDNN, numba
        sync(device)
        start = time.perf_counter()
        fit()
        sync(device)
        seconds[f"{label}_fit_s"] = time.perf_counter() - start
    prof = cProfile.Profile()
    prof.enable()
    fits["FedTopo"]()
    sync(device)
    prof.disable()
    text = io.StringIO()
    for key in ("cumulative", "tottime"):
        pstats.Stats(prof, stream=text).sort_stats(key).print_stats(45)
    (out_dir / "host_profile.txt").write_text(text.getvalue())
    acts = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts) as tp:
        fits["FedTopo"]()
        sync(device)
    table = tp.key_averages()
    sorts = (["cuda_time_total"] if device == "cuda" else []) + ["cpu_time_total",
                                                                  "self_cpu_time_total"]
    (out_dir / "device_profile.txt").write_text("\n\n".join(
        f"sorted by {key}\n" + table.table(sort_by=key, row_limit=40) for key in sorts))
    return seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, required=True, help="folder written")
    ap.add_argument("--repeats", type=int, default=21, help="timed repetitions of a part")
    ap.add_argument("--images", type=int, default=640,
                    help="training images of the profiled fits (batches of 32)")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.images < 32:
        ap.error(f"--repeats must be >= 1 and --images >= 32, got {args.repeats}, "
                 f"{args.images}")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    report = {"torch": torch.__version__, "parts": parts(device, args.repeats)}
    (args.out_dir / "parts.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["parts"], indent=1), flush=True)
    report["fits"] = profiles(device, args.out_dir, args.images)
    (args.out_dir / "parts.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["fits"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
