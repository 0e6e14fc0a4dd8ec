"""What FedTopo's models look like across rounds: feature projections (Figure 4),
barcodes (Figure D.1), and the cost of one TAL step."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA

from .._validation import as_float_array, check_int
from ..topology.cubical import resolve_backend
from .embedding import TopologicalEmbedding

__all__ = ["projection_spread", "snapshot_barcodes", "snapshot_projection", "tal_step_time"]


def _snapshot_models(est, round_: int):
    if round_ not in getattr(est, "snapshots_", {}):
        raise ValueError(f"round {round_} was not recorded; fit with record_rounds "
                         f"containing it (recorded: {sorted(getattr(est, 'snapshots_', {}))})")
    global_w, local = est.snapshots_[round_]
    return [("global", global_w)] + [(f"client {k}", w) for k, w in enumerate(local)]


def snapshot_projection(est, X, rounds, features: str = "block") -> pd.DataFrame:
    """2-D PCA of the features each recorded model gives the probe images ``X``.

    Parameters
    ----------
    est : fitted FedTopo with ``record_rounds``
    X : array (n, n_features)
        Probe images (the same for every model), flattened as in the scenario.
    rounds : sequence of int
    features : {"block", "penultimate"}
        The TGBS block's activations (what TAL aligns) or the penultimate layer.

    Returns
    -------
    DataFrame with columns ``round, model, pc1, pc2`` (PCA fitted per round on all
    models' features together, so positions within a round are comparable). The paper
    uses UMAP; PCA is deterministic and needs no extra package.
    """
    import torch

    learner = est.learner_
    rows = []
    for r in rounds:
        feats, names = [], []
        for name, w in _snapshot_models(est, r):
            if features == "block":
                with torch.no_grad():
                    f = learner.block_output(w, X, est.block).reshape(len(X), -1).numpy()
            elif features == "penultimate":
                f = learner.representation(w, X)
            else:
                raise ValueError(f"unknown features {features!r}; expected 'block' or "
                                 "'penultimate'")
            feats.append(f)
            names += [name] * len(X)
        z = PCA(n_components=2, random_state=0).fit_transform(np.vstack(feats))
        rows.append(pd.DataFrame({"round": r, "model": names, "pc1": z[:, 0], "pc2": z[:, 1]}))
    return pd.concat(rows, ignore_index=True)


def projection_spread(proj: pd.DataFrame) -> pd.DataFrame:
    """Distance of each client's feature centroid to the global model's, per round
    (rows: rounds; columns: clients), from :func:`snapshot_projection`'s output."""
    centres = proj.groupby(["round", "model"])[["pc1", "pc2"]].mean()
    rows = {}
    for r, g in centres.groupby(level="round"):
        g = g.droplevel("round")
        ref = g.loc["global"].to_numpy()
        rows[r] = {m: float(np.hypot(*(g.loc[m].to_numpy() - ref)))
                   for m in g.index if m != "global"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("round")


def snapshot_barcodes(est, x, rounds, channel: int = 0) -> pd.DataFrame:
    """Barcode of one probe image's block activation (one channel) under each model.

    Returns rows ``round, model, dim, birth, death``.

    Parameters
    ----------
    est : FedTopo
        A fitted FedTopo that kept model snapshots.
    x : array-like
        One probe image (flattened or shaped).
    rounds : iterable of int
        Rounds whose snapshots are used.
    channel : int, default=0
        Channel of the block activation.

    Returns
    -------
    pandas.DataFrame
        Columns ``round``, ``model``, ``dim``, ``birth``, ``death``.
    """
    import torch

    learner = est.learner_
    rows = []
    for r in rounds:
        for name, w in _snapshot_models(est, r):
            with torch.no_grad():
                acts = learner.block_output(w, np.asarray(x)[None], est.block)
            check_int(channel, "channel", low=0, high=acts.shape[1] - 1)
            dgm = TopologicalEmbedding(backend=est.backend).diagrams(
                acts[:, channel:channel + 1])[0][0]
            rows += [{"round": r, "model": name, "dim": int(d), "birth": b, "death": e}
                     for d, b, e in dgm]
    return pd.DataFrame(rows, columns=["round", "model", "dim", "birth", "death"])


def tal_step_time(learner_or_net, X, block: str, repeats: int = 5,
                  backend: str = "auto") -> dict:
    """Seconds for one TE forward + backward on the batch ``X`` at ``block``, and for the
    plain cross-entropy forward + backward on it, medians over ``repeats``.

    Parameters
    ----------
    learner_or_net : TorchLearner or BlockNet
        The network (or a learner holding it as ``net``).
    X : array-like or torch.Tensor of shape (n, channels, H, W)
        The batch; moved to the network's device (a CUDA device is synchronised before
        each reading of the clock).
    block : str
        The aligned block.
    repeats : int, default=5
        Timed repetitions.
    backend : str, default="auto"
        The cubical persistence backend.

    Returns
    -------
    dict
        ``tal_seconds``, ``ce_seconds``, ``batch``, ``block`` and the resolved ``backend``.
    """
    import torch
    import torch.nn.functional as F

    net = getattr(learner_or_net, "net", learner_or_net)
    device = next(net.parameters()).device
    if not isinstance(X, torch.Tensor):
        X = torch.as_tensor(as_float_array(X, "X", dtype=np.float32))
    X = X.to(device)
    with torch.no_grad():
        acts = net.block_output(X, block)
        te = TopologicalEmbedding(backend=backend).fit(acts)
        target = te.embed(acts)
    y = torch.zeros(X.shape[0], dtype=torch.long, device=device)

    def clock() -> float:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter()

    tal, ce = [], []
    for _ in range(repeats):
        net.zero_grad()
        t0 = clock()
        ((te.embed(net.block_output(X, block)) - target) ** 2).sum(1).mean().backward()
        tal.append(clock() - t0)
        net.zero_grad()
        t0 = clock()
        F.cross_entropy(net(X), y).backward()
        ce.append(clock() - t0)
    return {"tal_seconds": float(np.median(tal)), "ce_seconds": float(np.median(ce)),
            "batch": int(X.shape[0]), "block": block,
            "backend": resolve_backend(backend, acts.shape[2] * acts.shape[3])}
