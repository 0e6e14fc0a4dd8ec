"""Cost of FedTopo's topological alignment: TE forward + backward per batch of 32.

Run: ``make benchmark`` (or ``.venv/bin/python benchmarks/fedtopo_te.py``). Everything
is timed in this process and printed beside a baseline timed here too: the plain
cross-entropy forward + backward of the whole Fashion-MNIST CNN on the same batch
(one ordinary SGD step without TAL). For each persistence backend installed
(cripser, gudhi) and each CNN block (conv1: 6 maps of 24x24 per image; conv2: 16 maps
of 8x8), it prints the median over repeats of

* the cubical persistence of all maps of the batch (the library calls),
* the whole TE forward + backward (persistence, gather, persistence images, autograd),

and the ratio to the baseline. Images come from Fashion-MNIST when the Debian package
is installed, else from scikit-learn's digits upscaled to 28x28 (same shapes).
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import torch

from topofl_lib.deep import load_image_dataset, make_model
from topofl_lib.fedtopo import TopologicalEmbedding
from topofl_lib.topology.cubical import cubical_pairs

torch.set_num_threads(1)
REPEATS = 7


def median_time(fn, repeats: int = REPEATS) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def batch_of_32() -> torch.Tensor:
    try:
        data = load_image_dataset("fashion_mnist", n_train=100, n_test=32, random_state=0)
        return torch.as_tensor(data.X_test[:32]).reshape(32, 1, 28, 28)
    except FileNotFoundError:
        data = load_image_dataset("digits")
        x = torch.as_tensor(data.X_test[:32]).reshape(32, 1, 8, 8)
        return torch.nn.functional.interpolate(x, size=(28, 28), mode="bilinear")


def main() -> None:
    torch.manual_seed(0)
    net = make_model("fmnist_cnn")
    x = batch_of_32()
    y = torch.zeros(32, dtype=torch.long)

    def ce_step():
        net.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()

    base = median_time(ce_step)
    print(f"baseline: CE forward+backward of the CNN, batch 32: {1e3 * base:.2f} ms")
    backends = [b for b in ("cripser", "gudhi") if importlib.util.find_spec(b)]
    print(f"{'block':6} {'backend':8} {'maps':>5} {'PH only':>10} {'TE fwd+bwd':>11} "
          f"{'ratio':>7}")
    for block in ("conv1", "conv2"):
        with torch.no_grad():
            acts = net.block_output(x, block)
        maps = acts.reshape(-1, *acts.shape[2:]).double().numpy()
        for backend in backends:
            te = TopologicalEmbedding(backend=backend).fit(acts)
            target = te.embed(acts)

            def te_step(te=te, target=target, block=block):
                net.zero_grad()
                t = te.embed(net.block_output(x, block))
                ((t - target) ** 2).sum(1).mean().backward()

            ph = median_time(lambda b=backend, m=maps: cubical_pairs(m, b))
            full = median_time(te_step)
            print(f"{block:6} {backend:8} {maps.shape[0]:5d} {1e3 * ph:8.1f} ms "
                  f"{1e3 * full:8.1f} ms {full / base:6.1f}x")


if __name__ == "__main__":
    main()
