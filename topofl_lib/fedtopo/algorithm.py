r"""FedTopo (Algorithm 2): FedAvg whose clients add the topological alignment loss.

Client :math:`i` minimises (Eq. 5)

.. math:: \mathrm{CE}(f(x; w_i), y) + \alpha_i\,
          \mathbb{E}_x \|t(x; w_i) - t(x; \bar w)\|^2,

where :math:`t` is the topological embedding (:class:`TopologicalEmbedding`) of the
activations of the TGBS-selected ``block`` and :math:`\bar w` the global model the
round started from. The server is FedAvg's.

How the TAL term is computed (the paper leaves the sampling open; these are our
choices, each a parameter):

* At the start of a round each client draws ``tal_samples`` of its images (Table C.3:
  "64 per round"; ``None`` uses all of them), computes their global embeddings
  :math:`t(x; \bar w)` *once*, without gradient, and fixes the persistence-image grid
  from those global diagrams, so local and global embeddings share a grid.
* Every ``tal_every``-th local step, the TAL of a batch of ``tal_batch`` of those
  images (taken in turn) is added to that step's cross-entropy, weighted by the
  schedule's current alpha (:class:`AlphaSchedule`); the TAL is *not* rescaled by
  ``tal_every``. TAL dominates the cost (cubical persistence of ``tal_batch x
  channels`` maps per step), so ``tal_every`` trades fidelity for speed.
* ``tal=False`` gives the ablation "w/o TAL", which is exactly FedAvg.

Per-load noise (:attr:`~topofl_lib.core.Client.load_noise_sd`, the image scenario's
``noise="per_load"``): the cross-entropy's mini-batches get a fresh noise draw every
time they are loaded (the learner's ``gradient``); the TAL images (the round's
``tal_samples``) are taken from the client's training images *clean*, once per round,
since TAL compares the local and the global model on the same images and the paper
puts no noise there.

The loss is Eq. 5's squared Euclidean distance per sample, averaged over the batch.
Its scale depends on the embedding (number of pairs, grid): ``tal_log_`` records
every observed value, which is what the adaptive schedules' ``loss_range`` must be
compared with.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_bool, check_choice, check_int
from ..core.registry import register_method
from ..federated.fedavg import FedAvg
from ..topology.cubical import CUBICAL_BACKENDS
from .embedding import IMAGE_BACKENDS, TopologicalEmbedding
from .schedules import AlphaSchedule, imbalance_floor

__all__ = ["FedTopo"]


def _defers_tal(device) -> bool:
    """Whether a TAL step on ``device`` overlaps the TE's host work with the device's:
    on a CUDA device the TE's pairs are computed on the host while the cross-entropy's
    backward pass runs (:meth:`TopologicalEmbedding.embed_deferred`; the gradient is the
    same bit for bit). On the CPU, with the persistence on every core, the hand-off
    costs more than the backward it hides (measured: ``docs/guide/speed.md``).

    Parameters
    ----------
    device : torch.device

    Returns
    -------
    bool
    """
    return device.type == "cuda"


@register_method
class FedTopo(FedAvg):
    """Topology-aware federated learning (FedTopo).

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm` (FedTopo's protocol:
        lr 0.01, 5 local epochs, batch 32, SGD momentum 0.9 set on the model).
    model : TorchModel
        Required: the network (its ``block_output`` gives the block's activations).
    block : str, default="conv1"
        The block TGBS selected (:class:`TopologyGuidedBlockScreening`).
    tal : bool, default=True
    schedule : AlphaSchedule or None
        ``None``: Smooth-Topo with Table C.3's settings.
    tal_samples : int or None, default=64
    tal_batch : int, default=32
    tal_every : int, default=1
    resolution : int, default=8
        Persistence-image side (M = 64).
    backend : {"auto", "numba", "torch", "cripser", "gudhi"}, default="auto"
    image_backend : {"torch", "numba"}, default="torch"
        How the persistence images are computed
        (:class:`~topofl_lib.fedtopo.TopologicalEmbedding`): ``"numba"`` makes a TAL
        step faster on the CPU, with the same images to float rounding (so a run is not
        bit for bit the ``"torch"`` one); ``"torch"`` runs on any device and is what the
        committed runs used. Left out of the run store's key at its default
        (``unkeyed_at_default``, :mod:`topofl_lib.run_cache`), so the runs stored
        before it existed keep their keys.
    record_rounds : tuple of int, default=()
        Rounds (1-based) after which the global and local models are kept in
        ``snapshots_`` (Figure 4, Figure D.1).

    Attributes
    ----------
    coef_ : ndarray
        The global model.
    local_models_ : ndarray (n_clients, n_params)
        The models the clients returned in the last round.
    tal_log_ : ndarray (n_tal_steps, 5)
        Columns round (1-based), client, local epoch, alpha, TAL value.
    alpha_floor_ : ndarray (n_clients,)
        Each client's :math:`\\alpha_{\\min}` from its label imbalance.
    snapshots_ : dict
        ``round -> (global model, local models)`` for ``record_rounds``.
    """

    name = "FedTopo"
    #: Parameters added later whose default computes what the code computed before them.
    unkeyed_at_default = ("image_backend",)
    load_noise = True  # CE on the learner's mini-batches; TAL images clean (docstring)

    def __init__(self, n_rounds=5, lr=0.01, local_epochs=5, batch_size=32, C=1.0,
                 model=None, block="conv1", tal=True, schedule=None, tal_samples=64,
                 tal_batch=32, tal_every=1, resolution=8, backend="auto",
                 record_rounds=(), random_state=None, rng_streams="shared",
                 image_backend="torch"):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams)
        self.block = block
        self.tal = tal
        self.schedule = schedule
        self.tal_samples = tal_samples
        self.tal_batch = tal_batch
        self.tal_every = tal_every
        self.resolution = resolution
        self.backend = backend
        self.record_rounds = record_rounds
        self.image_backend = image_backend

    def _check_params(self):
        super()._check_params()
        if self.model is None:
            raise ValueError("FedTopo needs a network: pass model=TorchModel(...)")
        check_bool(self.tal, "tal")
        if self.schedule is not None and not isinstance(self.schedule, AlphaSchedule):
            raise TypeError(f"schedule must be an AlphaSchedule or None, got "
                            f"{type(self.schedule).__name__}")
        if self.tal_samples is not None:
            check_int(self.tal_samples, "tal_samples", low=1)
        check_int(self.tal_batch, "tal_batch", low=1)
        check_int(self.tal_every, "tal_every", low=1)
        check_int(self.resolution, "resolution", low=2)
        check_choice(self.backend, "backend", CUBICAL_BACKENDS)
        check_choice(self.image_backend, "image_backend", IMAGE_BACKENDS)
        for r in self.record_rounds:
            check_int(r, "record_rounds entry", low=1, high=self.n_rounds)

    def _prepare(self, scenario):
        net = self.learner_.net
        if self.block not in net.block_names:
            raise ValueError(f"unknown block {self.block!r}; this model has {net.block_names}")
        schedule = (self.schedule if self.schedule is not None else AlphaSchedule()).validate()
        C = self.learner_.n_classes
        self.alpha_floor_ = np.array([
            imbalance_floor(np.bincount(c.y_train, minlength=C), schedule.alpha_init)
            for c in scenario.clients])
        self._states = [schedule.start(a) for a in self.alpha_floor_]
        self._log = []
        self.snapshots_ = {}
        self._r = 0

    def _round(self, r):
        self._r = r
        super()._round(r)
        if r + 1 in self.record_rounds:
            self.snapshots_[r + 1] = (self.coef_.copy(), self.local_models_.copy())
        self.tal_log_ = np.array(self._log).reshape(-1, 5)

    def _train(self, k, w0, extra=None):
        if self.tal:
            self._begin_tal(k, w0)
        return super()._train(k, w0, extra)

    def _begin_tal(self, k, w0):
        import torch

        n = int(self._n[k])
        m = n if self.tal_samples is None else min(self.tal_samples, n)
        idx = np.sort(self._rng.choice(n, size=m, replace=False))
        X = self._data[k][0][torch.as_tensor(idx)]
        with torch.no_grad():
            acts = self.learner_.block_output(w0, X, self.block)
            te = TopologicalEmbedding(self.resolution, backend=self.backend,
                                      image_backend=self.image_backend).fit(acts)
            t_global = te.embed(acts)
        self._tal = {"X": X, "t_global": t_global, "te": te, "pos": 0, "step": 0,
                     "steps_per_epoch": -(-n // self.batch_size)}

    def _gradient(self, k):
        learner, data = self.learner_, self._data[k]
        if not self.tal:
            return lambda w, idx: learner.gradient(w, data, idx)
        state, ctx, r = self._states[k], self._tal, self._r

        def gradient(w, idx):
            step = ctx["step"]
            ctx["step"] += 1
            if step % self.tal_every:
                return learner.gradient(w, data, idx)
            epoch = step // ctx["steps_per_epoch"]
            alpha = state.alpha(r + 1, epoch)
            m = ctx["X"].shape[0]
            sel = (ctx["pos"] + np.arange(min(self.tal_batch, m))) % m
            ctx["pos"] = int(sel[-1] + 1) % m
            seen = {}

            def tal_loss(t_local):
                loss = ((t_local - ctx["t_global"][sel]) ** 2).sum(dim=1).mean()
                seen["loss"] = loss.detach()
                return alpha * loss

            def start_tal(net):  # the TE's pairs computed while the device works
                finish = ctx["te"].embed_deferred(net.block_output(ctx["X"][sel], self.block))
                return lambda: tal_loss(finish())

            if _defers_tal(ctx["X"].device):
                g = learner.gradient(w, data, idx, deferred_loss=start_tal)
            else:
                g = learner.gradient(w, data, idx, extra_loss=lambda net: tal_loss(
                    ctx["te"].embed(net.block_output(ctx["X"][sel], self.block))))
            loss = float(seen["loss"])  # after the backward pass is queued
            state.observe(loss)
            self._log.append((r + 1, k, epoch, alpha, loss))
            return g

        return gradient
