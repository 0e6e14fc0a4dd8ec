r"""Topology-Guided Block Screening (TGBS, Algorithm 1 and Appendix B.1 of FedTopo).

For each candidate block of a network, on a labelled validation set:

1. extract the block's activations :math:`(n, C, H, W)`;
2. reduce the channels with PCA (fitted on all pixels' channel vectors of the
   validation set) to ``n_components`` maps per sample ("DIMREDUCE");
3. compute each reduced map's cubical persistence (:math:`H_0`, :math:`H_1`) and its
   persistence image (the same :class:`TopologicalEmbedding` FedTopo aligns);
4. draw ``n_pairs`` same-class and ``n_pairs`` different-class sample pairs, score each
   pair by the similarity :math:`s = -d` under every metric, and compute the ROC-AUC of
   same-class (positive) against different-class (negative) pairs;
5. the block's AUC is the mean over metrics; the selected block maximises it.

Metrics: ``"pi_euclidean"`` and ``"pi_cosine"`` on the persistence images, and
``"bottleneck"`` and ``"wasserstein"`` (persim's bottleneck distance, L-infinity ground
metric, and its 1-Wasserstein distance, Euclidean ground metric: see
:mod:`topofl_lib.topology.distances`) on the diagrams, summed over
:math:`H_0` and :math:`H_1` and over the reduced components. With several components
the persistence images are concatenated. The same pairs are used for every block,
so the blocks' AUCs are paired.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.decomposition import PCA

from .._validation import (
    as_float_array,
    check_choice,
    check_class_labels,
    check_int,
    check_random_state,
)
from ..core.seeds import draw_seed
from ..federated.metrics import roc_auc
from ..topology.cubical import CUBICAL_BACKENDS
from .embedding import TopologicalEmbedding

__all__ = ["TGBS_METRICS", "TopologyGuidedBlockScreening", "sample_pairs"]

#: Distances TGBS can average over.
TGBS_METRICS = ("pi_euclidean", "pi_cosine", "bottleneck", "wasserstein")


#: Below this fraction of the ordered index pairs, a kind of pair (same-class or
#: different-class) is drawn directly instead of by rejection (see :func:`sample_pairs`).
MIN_REJECTION_RATE = 0.01


def sample_pairs(y, n_pairs: int, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` random same-class and ``n_pairs`` different-class index pairs.

    Returns ``(pairs, same)``: an (2 n_pairs, 2) array and a boolean label per pair.
    Each kind is uniform over the ordered index pairs ``i != j`` of that kind. Index
    pairs are drawn uniformly and kept while their kind is still short; a kind that
    makes up less than :data:`MIN_REJECTION_RATE` of the ordered pairs (one rare class
    pair among many samples) is drawn directly, class by class, so the draw always
    ends quickly.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (at least two classes, one with two samples; no NaN).
    n_pairs : int
        Pairs of each kind.
    random_state : None, int or Generator
        Seeds the draw.

    Returns
    -------
    pairs : ndarray of shape (2 * n_pairs, 2)
        Index pairs.
    same : ndarray of shape (2 * n_pairs,), dtype bool
        Whether each pair shares its class.
    """
    y = check_class_labels(y)
    check_int(n_pairs, "n_pairs", low=1)
    rng = check_random_state(random_state)
    classes, label, counts = np.unique(y, return_inverse=True, return_counts=True)
    if classes.size < 2:
        raise ValueError("TGBS needs at least two classes in the validation labels")
    if counts.max() < 2:
        raise ValueError("TGBS needs a class with at least two samples for same-class pairs")
    n = y.size
    same_rate = float((counts * (counts - 1)).sum()) / (n * (n - 1))
    if min(same_rate, 1.0 - same_rate) < MIN_REJECTION_RATE:
        same, diff = _direct_pairs(label, counts, n_pairs, rng)
    else:
        same, diff = [], []
        while len(same) < n_pairs or len(diff) < n_pairs:
            i, j = rng.integers(y.size, size=2)
            if i == j:
                continue
            if y[i] == y[j] and len(same) < n_pairs:
                same.append((i, j))
            elif y[i] != y[j] and len(diff) < n_pairs:
                diff.append((i, j))
    pairs = np.array(same + diff)
    return pairs, np.r_[np.ones(n_pairs, bool), np.zeros(n_pairs, bool)]


def _direct_pairs(label: np.ndarray, counts: np.ndarray, n_pairs: int,
                  rng: np.random.Generator) -> tuple[list, list]:
    """Same- and different-class pairs drawn class by class (:func:`sample_pairs`):
    a class with probability proportional to its ordered same-class pairs, then two
    of its members; a first index with probability proportional to the samples of
    other classes, then one of those."""
    order = np.argsort(label, kind="stable")  # the samples grouped by class
    start = np.r_[0, np.cumsum(counts)[:-1]]  # where each class's group begins
    within = counts * (counts - 1.0)
    same = []
    for c in rng.choice(counts.size, size=n_pairs, p=within / within.sum()):
        i, j = rng.choice(counts[c], size=2, replace=False)
        same.append((int(order[start[c] + i]), int(order[start[c] + j])))
    others = label.size - counts[label].astype(np.float64)
    diff = []
    for i in rng.choice(label.size, size=n_pairs, p=others / others.sum()):
        c = label[i]
        r = int(rng.integers(label.size - counts[c]))  # skip class c's group
        diff.append((int(i), int(order[r if r < start[c] else r + counts[c]])))
    return same, diff


def _reduce_channels(acts: np.ndarray, n_components: int, rng) -> np.ndarray:
    n, C, H, W = acts.shape
    if C <= n_components:
        return acts
    pixels = acts.transpose(0, 2, 3, 1).reshape(-1, C)
    pca = PCA(n_components=n_components, random_state=draw_seed(rng))
    z = pca.fit_transform(pixels)
    return z.reshape(n, H, W, n_components).transpose(0, 3, 1, 2)


class TopologyGuidedBlockScreening(BaseEstimator):
    """Score every candidate block by topological class separability; pick the best.

    Parameters
    ----------
    blocks : sequence of str or None
        Candidates (default: all blocks of the network).
    n_components : int, default=1
        Channels kept by the PCA reduction (Figure B.1's best was "dim 0").
    n_pairs : int, default=500
        Pairs of each kind.
    metrics : sequence of str, default=("pi_euclidean",)
        See :data:`TGBS_METRICS`.
    resolution, backend
        Of the :class:`TopologicalEmbedding`.
    random_state : None or int

    Attributes
    ----------
    scores_ : pandas.DataFrame
        One row per block: ``auc`` (the mean over metrics) and ``auc_<metric>``.
    best_block_ : str
    """

    def __init__(self, blocks=None, n_components: int = 1, n_pairs: int = 500,
                 metrics=("pi_euclidean",), resolution: int = 8, backend: str = "auto",
                 random_state=None):
        self.blocks = blocks
        self.n_components = n_components
        self.n_pairs = n_pairs
        self.metrics = metrics
        self.resolution = resolution
        self.backend = backend
        self.random_state = random_state

    def _distances(self, metric, images, diagrams, pairs) -> np.ndarray:
        if metric == "pi_euclidean":
            return np.linalg.norm(images[pairs[:, 0]] - images[pairs[:, 1]], axis=1)
        if metric == "pi_cosine":
            a, b = images[pairs[:, 0]], images[pairs[:, 1]]
            den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
            return 1.0 - (a * b).sum(axis=1) / np.maximum(den, 1e-12)
        import persim

        fn = persim.bottleneck if metric == "bottleneck" else persim.wasserstein
        out = np.zeros(len(pairs))
        for p, (i, j) in enumerate(pairs):
            for ci, cj in zip(diagrams[i], diagrams[j], strict=True):
                for d in (0, 1):
                    a, b = ci[ci[:, 0] == d, 1:], cj[cj[:, 0] == d, 1:]
                    if len(a) or len(b):
                        out[p] += fn(a if len(a) else np.empty((0, 2)),
                                     b if len(b) else np.empty((0, 2)))
        return out

    def fit(self, net, X, y):
        """Screen the blocks of ``net`` (a :class:`~topofl_lib.deep.BlockNet`) on images
        ``X`` (tensor or array of shape (n, channels, H, W)) with labels ``y``.

        Parameters
        ----------
        net : BlockNet
            The network whose blocks are screened.
        X : array-like or torch.Tensor of shape (n, channels, H, W)
            Validation images.
        y : array-like of shape (n,)
            Their labels.

        Returns
        -------
        self
        """
        import torch

        check_int(self.n_components, "n_components", low=1)
        check_int(self.n_pairs, "n_pairs", low=1)
        check_choice(self.backend, "backend", CUBICAL_BACKENDS)
        metrics = list(self.metrics)
        if not metrics:
            raise ValueError("metrics is empty")
        for m in metrics:
            check_choice(m, "metric", TGBS_METRICS)
        blocks = list(net.block_names if self.blocks is None else self.blocks)
        for b in blocks:
            if b not in net.block_names:
                raise ValueError(f"unknown block {b!r}; this model has {net.block_names}")
        X = torch.as_tensor(as_float_array(X, "X", dtype=np.float32)) if not isinstance(
            X, torch.Tensor) else X
        if X.is_complex() or not bool(torch.isfinite(X).all()):
            raise ValueError("X must hold finite real pixel values (no NaN, inf or complex)")
        y = check_class_labels(y)
        if X.ndim != 4 or y.shape != (X.shape[0],):
            raise ValueError(f"X must be (n, channels, H, W) with y of length n; got X "
                             f"{tuple(X.shape)} and y {y.shape}")
        rng = check_random_state(self.random_state)
        pairs, same = sample_pairs(y, self.n_pairs, rng)
        rows = []
        was_training = net.training
        net.eval()
        for b in blocks:
            with torch.no_grad():
                acts = net.block_output(X, b).cpu().double().numpy()
            reduced = _reduce_channels(acts, self.n_components, rng)
            d = reduced.shape[1]
            te = TopologicalEmbedding(self.resolution, backend=self.backend)
            images = np.concatenate(
                [te.fit(reduced[:, c:c + 1]).transform(reduced[:, c:c + 1]) for c in range(d)],
                axis=1)
            diagrams = te.diagrams(reduced) if any(
                m in ("bottleneck", "wasserstein") for m in metrics) else None
            row = {"block": b, "channels": acts.shape[1], "size": f"{acts.shape[2]}x"
                   f"{acts.shape[3]}"}
            for m in metrics:
                row[f"auc_{m}"] = roc_auc(same, -self._distances(m, images, diagrams, pairs))
            row["auc"] = float(np.mean([row[f"auc_{m}"] for m in metrics]))
            rows.append(row)
        net.train(was_training)
        self.scores_ = pd.DataFrame(rows)
        self.best_block_ = str(self.scores_.loc[self.scores_["auc"].idxmax(), "block"])
        return self
