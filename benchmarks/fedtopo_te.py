"""Cost of FedTopo's topological alignment: TE forward + backward per batch of 32.

Run: ``make benchmark`` (or ``.venv/bin/python benchmarks/fedtopo_te.py``). Everything
is timed in this process, on one thread (but the last lines), and printed beside a
baseline timed here too: the plain cross-entropy forward + backward of the whole
Fashion-MNIST CNN on the same batch (one ordinary SGD step without TAL). For each CNN
block (conv1: 6 maps of 24x24 per image; conv2: 16 maps of 8x8) and each persistence
backend installed (numba, torch, cripser, gudhi) it prints the median over repeats of

* the cubical persistence of all maps of the batch (``batch_pairs``), and its speed-up
  over cripser (the fastest library before the numba backend),
* the whole TE forward + backward (persistence, gather, persistence images, autograd)
  and its ratio to the baseline, both timed side by side (called in turn within each
  repeat: the machine's speed drifts by a quarter between minutes), with the torch
  persistence images and, for the default backend, with the compiled ones too
  (``image_backend="numba"``),

then, for the default backend, a breakdown of the TE step: the block's own forward +
backward (the convolution, which any TAL step pays), sorting the pixels, the
union-find, gathering the pairs' values, the persistence images (forward) and the
autograd backward through them, then the compiled images with the channel mean
(``compiled_embedding`` with the pairs handed in), forward and backward. All
timings are of warm calls: numba compiles its kernel once per machine (cached on
disk), and the first call of a fresh process only loads it; both costs are printed
first. The last lines time the union-find kernel
on a conv1 batch with one thread and with one per core (the batch split into runs of
maps, the pairs identical), with the machine's load average, and the TE step of both
blocks with the persistence on every core, with either images (the compiled ones:
each thread computes its samples' pairs, images and channel mean), each line over 101
turns. Images come from
Fashion-MNIST when the Debian package is installed, else from scikit-learn's digits
upscaled to 28x28 (same shapes).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

from topofl_lib.deep import load_image_dataset, make_model
from topofl_lib.fedtopo import TopologicalEmbedding
from topofl_lib.fedtopo.embedding import IMAGE_BACKENDS
from topofl_lib.fedtopo.image_kernel import compiled_embedding
from topofl_lib.topology.cubical import batch_pairs, gather_values, resolve_backend
from topofl_lib.topology.cubical_unionfind import (
    pairs_batch,
    set_persistence_threads,
    sorted_keys,
)

torch.set_num_threads(1)
set_persistence_threads(1)  # every timing above the last section is of one thread
REPEATS = 21
# the last lines' timings in turn: more of them, as their ratios are the goals' (a TE step
# and a plain step take about 8 ms together; 21 pairs fell into one slow second of the
# machine's at times)
FINAL_REPEATS = 101

FIRST_CALL = """
import time, numpy as np
t0 = time.perf_counter()
from topofl_lib.topology.cubical import batch_pairs
batch_pairs(np.random.default_rng(0).normal(size=(2, 5, 5)).astype(np.float32))
print(time.perf_counter() - t0)
"""


def side_by_side(*fns, repeats: int = REPEATS) -> list[float]:
    """Median seconds of each of ``fns``, called in turn within each repeat, so that a
    ratio of two medians is not a ratio of two moments of a machine whose speed drifts."""
    for fn in fns:
        fn()  # warm-up
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [float(np.median(t)) for t in times]


def median_time(fn, repeats: int = REPEATS) -> float:
    """Median seconds of ``fn`` over ``repeats`` warm calls."""
    return side_by_side(fn, repeats=repeats)[0]


def batch_of_32() -> torch.Tensor:
    try:
        data = load_image_dataset("fashion_mnist", n_train=100, n_test=32, random_state=0)
        return torch.as_tensor(data.X_test[:32]).reshape(32, 1, 28, 28)
    except FileNotFoundError:
        data = load_image_dataset("digits")
        x = torch.as_tensor(data.X_test[:32]).reshape(32, 1, 8, 8)
        return torch.nn.functional.interpolate(x, size=(28, 28), mode="bilinear")


def first_call_seconds(compile_: bool) -> float:
    """Import + first call of the numba backend in a fresh process: with an empty numba
    cache (``compile_``: the kernel is compiled) or with the cache on disk (loaded)."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as empty:
        if compile_:
            env["NUMBA_CACHE_DIR"] = empty
        out = subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True,
                             text=True, check=True, env=env)
    return float(out.stdout.split()[-1])


def breakdown(net, x, block: str, te: TopologicalEmbedding, target) -> dict[str, float]:
    """Median seconds of each stage of one TE forward + backward (default backend)."""
    with torch.no_grad():
        acts = net.block_output(x, block)
    n, C, H, W = acts.shape
    maps = acts.reshape(n * C, H, W).numpy()
    keys = sorted_keys(maps.reshape(n * C, H * W))
    map_index, pairs = pairs_batch(maps, keys=keys)
    leaf = acts.clone().requires_grad_(True)
    flat = leaf.reshape(n * C, H * W)
    mi = torch.from_numpy(map_index)

    def block_step():
        net.zero_grad()
        net.block_output(x, block).sum().backward()

    def images():
        birth, death = gather_values(flat, map_index, pairs)
        return ((te._images(mi, birth, death - birth, n, C) - target) ** 2).sum(1).mean()

    def images_and_backward():
        leaf.grad = None
        images().backward()

    def compiled(backward: bool):  # the pairs handed in: the images and channel mean only
        leaf.grad = None
        loss = ((compiled_embedding(leaf, te.birth_grid_, te.pers_grid_, te.sigma_,
                                    points=(map_index, pairs)) - target) ** 2).sum(1).mean()
        if backward:
            loss.backward()

    fwd = median_time(images)
    compiled_fwd = median_time(lambda: compiled(False))
    return {
        "block forward + backward (conv)": median_time(block_step),
        "sort pixels (sorted_keys)": median_time(
            lambda: sorted_keys(maps.reshape(n * C, H * W))),
        "union-find (H0 + H1)": median_time(lambda: pairs_batch(maps, keys=keys)),
        "gather values": median_time(lambda: gather_values(flat, map_index, pairs)),
        "persistence images + loss (forward)": fwd,
        "autograd backward (TE part)": median_time(images_and_backward) - fwd,
        "compiled images, channel mean + loss": compiled_fwd,
        "compiled images, channel mean backward": median_time(lambda: compiled(True))
        - compiled_fwd,
    }


def te_step(net, x, block: str, te: TopologicalEmbedding):
    """One TE forward + backward of ``block`` on ``x``, against ``te``'s embedding of the
    same activations (the global embedding of a TAL step)."""
    with torch.no_grad():
        target = te.embed(net.block_output(x, block))

    def step():
        net.zero_grad()
        ((te.embed(net.block_output(x, block)) - target) ** 2).sum(1).mean().backward()

    return step


def main() -> None:
    torch.manual_seed(0)
    net = make_model("fmnist_cnn")
    x = batch_of_32()
    y = torch.zeros(32, dtype=torch.long)
    if importlib.util.find_spec("numba"):
        first_call_seconds(False)  # make sure the cache on disk is current
        print(f"numba backend, import + first call in a fresh process: "
              f"{first_call_seconds(True):.1f} s compiling (once per machine and version), "
              f"{first_call_seconds(False):.1f} s loading the compiled kernel from its cache")

    def ce_step():
        net.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()

    base = median_time(ce_step)
    print(f"baseline: CE forward+backward of the CNN, batch 32: {1e3 * base:.2f} ms")
    backends = [b for b in ("numba", "torch", "cripser", "gudhi") if importlib.util.find_spec(b)]
    # (pairs' backend, images' backend): every pairs backend with the torch images, and
    # the default pairs backend with the compiled images too
    combos = [(b, "torch") for b in backends] + [(backends[0], "numba")]
    print(f"{'block':6} {'pairs':8} {'images':7} {'maps':>5} {'PH only':>10} {'vs cripser':>11} "
          f"{'TE fwd+bwd':>11} {'/ SGD step':>11}")
    for block in ("conv1", "conv2"):
        with torch.no_grad():
            acts = net.block_output(x, block)
        maps = acts.reshape(-1, *acts.shape[2:]).numpy()
        rows = {}
        for backend, images in combos:
            te = TopologicalEmbedding(backend=backend, image_backend=images).fit(acts)
            rows[backend, images] = (median_time(lambda b=backend, m=maps: batch_pairs(m, b)),
                                     *side_by_side(te_step(net, x, block, te), ce_step))
        for (backend, images), (ph, full, plain) in rows.items():
            speedup = (f"{rows['cripser', 'torch'][0] / ph:10.1f}x"
                       if ("cripser", "torch") in rows else f"{'':11}")
            print(f"{block:6} {backend:8} {images:7} {maps.shape[0]:5d} {1e3 * ph:7.2f} ms "
                  f"{speedup} {1e3 * full:8.2f} ms {full / plain:10.2f}x")
        te = TopologicalEmbedding().fit(acts)
        parts = breakdown(net, x, block, te, te.embed(acts))
        print(f"  breakdown of the {block} TE step, default backends "
              f"({resolve_backend('auto')} pairs, torch images; then the compiled images):")
        for name, sec in parts.items():
            print(f"    {name:38} {1e3 * sec:7.2f} ms {sec / base:6.2f}x")
        torch_parts = sum(v for k, v in parts.items() if "compiled" not in k)
        print(f"    {'sum (torch images)':38} {1e3 * torch_parts:7.2f} ms "
              f"{torch_parts / base:6.2f}x")
    multi_core(net, x, ce_step)


def multi_core(net, x, ce_step) -> None:
    """The numba kernel on one core against every core, for a conv1 batch (same pairs),
    and the TE step of each block with the persistence on every core against the plain
    step."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with torch.no_grad():
        acts = net.block_output(x, "conv1")
    maps = acts.reshape(-1, *acts.shape[2:]).numpy()
    one, every = side_by_side(lambda: pairs_batch(maps, n_threads=1),
                              lambda: pairs_batch(maps, n_threads=cores), repeats=FINAL_REPEATS)
    same = all(np.array_equal(a, b) for a, b in zip(
        pairs_batch(maps, n_threads=1), pairs_batch(maps, n_threads=cores), strict=True))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"persistence of the conv1 batch ({maps.shape[0]} maps, sort + union-find): "
          f"{1e3 * one:.2f} ms on 1 core, {1e3 * every:.2f} ms on {cores} "
          f"({one / every:.2f}x; the same pairs: {same}); load average {load:.2f}")
    for block in ("conv1", "conv2"):
        with torch.no_grad():
            acts = net.block_output(x, block)
        for images in IMAGE_BACKENDS:
            step_fn = te_step(net, x, block,
                              TopologicalEmbedding(image_backend=images).fit(acts))
            set_persistence_threads(cores)
            try:
                step, plain = side_by_side(step_fn, ce_step, repeats=FINAL_REPEATS)
            finally:
                set_persistence_threads(1)
            print(f"{block} TE fwd+bwd, {images} images, persistence on {cores} cores: "
                  f"{1e3 * step:.2f} ms, {step / plain:.2f}x the plain step beside it "
                  f"({1e3 * plain:.2f} ms; torch on one thread; load average "
                  f"{os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
