r"""FedTopo's topological embedding (TE, Sec. 3.1 and Eq. 3), differentiable in torch.

For one sample with block activations :math:`\phi \in \mathbb{R}^{C\times H\times W}`,
each channel map is filtered by its sublevel sets (cubical, V-construction), its
:math:`H_0` and :math:`H_1` pairs are moved to birth-persistence coordinates
:math:`(b, p = d - b)`, and a persistence image (Eq. 2)

.. math:: \psi_c[i, j] = \sum_{(b, p)} w(p)\,
          \exp\!\Big(-\frac{(g^b_j - b)^2 + (g^p_i - p)^2}{2\sigma^2}\Big)

is evaluated on a fixed ``resolution x resolution`` grid (M = 64 for resolution 8).
The TE is the channel mean :math:`t = \frac1C \sum_c \psi_c` (Eq. 3).

Choices where the paper is silent (documented, and options where cheap):

* :math:`H_0` and :math:`H_1` points go into *one* image (``M = resolution**2``, 64 as
  in Table C.3); ``homology_dims=(0,)`` or ``(1,)`` keeps one degree only.
* The grid is fixed when the embedding is fitted: births span the observed
  ``[min b, max b]``, persistence ``[0, max p]`` (each widened by one grid step so
  edge points are not cut), and :math:`\sigma` defaults to one grid step. In TAL the
  grid is fitted once per round on the *global* model's diagrams, so local and global
  embeddings of a round are on the same grid and the grid carries no gradient.
* ``weighting="none"`` is Eq. 2 as printed; ``"persistence"`` multiplies each point by
  ``p / max p`` (Adams et al.'s linear weight, which makes the image stable).
* ``normalize="mass"`` (default) divides each channel's image by its total, so it is a
  distribution over the grid (a channel without pairs gives zeros); ``"none"`` keeps
  Eq. 2's raw sum. Measured on Fashion-MNIST conv1 activations, the raw TAL (Eq. 5)
  ranged from 0 to 9e3 within one round, because it is dominated by how many pairs a
  map has (a map that ReLU zeroes loses all of them); Table C.3's loss range
  [0.1, 0.85] for the adaptive schedules is only meaningful on a normalised scale.
* Essential classes are dropped (:mod:`topofl_lib.topology.cubical`).

Gradients: the diagram's values are gathered from the activation tensor at the pixels
that create and kill each pair (:func:`~topofl_lib.topology.cubical.gather_values`, one
``index_select``), so ``embed`` is differentiable with respect to the activations and,
through them, the network weights. The pairs themselves carry no gradient: they are
computed once per call, on the detached values, for all maps of the batch at once
(:func:`~topofl_lib.topology.cubical.batch_pairs`; the default numba backend is one
compiled call), and the persistence images of all maps are one batched matrix product.
Where a map has ties the pairs are those of the pixel order (value, then flat index), so
the TE and its gradient are a deterministic function of the activations.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from .._validation import as_float_array, check_choice, check_int, check_real
from ..topology.cubical import CUBICAL_BACKENDS, batch_pairs, gather_values, resolve_backend
from ..topology.cubical_torch import pairs_torch
from .image_kernel import WEIGHTINGS, check_on_host, compiled_embedding

__all__ = ["TopologicalEmbedding", "persistence_image"]

_HOST_THREAD: list[ThreadPoolExecutor] = []


def _host_thread() -> ThreadPoolExecutor:
    """The one background thread of :meth:`TopologicalEmbedding.embed_deferred` (kept:
    a TAL step calls it every local step)."""
    if not _HOST_THREAD:
        _HOST_THREAD.append(ThreadPoolExecutor(1, thread_name_prefix="te-pairs"))
    return _HOST_THREAD[0]

NORMALIZATIONS = ("mass", "none")
#: How the persistence images are computed: ``"torch"``, a batched matrix product on the
#: activations' device (:func:`persistence_image`); ``"numba"``, one compiled call forward
#: and one backward on the host (:mod:`~topofl_lib.fedtopo.image_kernel`).
IMAGE_BACKENDS = ("torch", "numba")


def _slots(map_index, n_maps: int):
    """Each point's row in the zero-padded ``(n_maps * width, R)`` layout (its map times
    ``width``, plus its place among its map's points), and ``width``, computed on
    ``map_index``'s device; points already grouped by map (as every backend returns
    them) skip the sort."""
    import torch

    counts = torch.bincount(map_index, minlength=n_maps)
    width = max(int(counts.max()), 1) if counts.numel() else 1
    start = torch.cumsum(counts, 0) - counts
    grouped = bool((map_index[1:] >= map_index[:-1]).all())
    in_order, order = (map_index, None) if grouped else torch.sort(map_index, stable=True)
    place = torch.arange(map_index.numel(), device=map_index.device) - start.index_select(
        0, in_order)
    pos = place if order is None else torch.empty_like(place).index_copy_(0, order, place)
    return map_index * width + pos, width


def persistence_image(map_index, birth, pers, n_maps: int, birth_grid, pers_grid,
                      sigma: float, weighting: str = "none", pers_scale: float = 1.0):
    r"""Persistence images of many diagrams at once (torch, differentiable).

    Parameters
    ----------
    map_index : LongTensor (n_points,)
        Which image each point belongs to.
    birth, pers : Tensor (n_points,)
        Birth and persistence of each point.
    n_maps : int
    birth_grid, pers_grid : Tensor (R,)
        Pixel centres along each axis.
    sigma : float
    weighting : {"none", "persistence"}
    pers_scale : float
        Divisor of the persistence weight.

    Returns
    -------
    Tensor of shape (n_maps, R * R); pixel ``i * R + j`` is persistence row ``i``,
    birth column ``j``.

    Image ``m`` is :math:`K_p^\top K_b` over its points (``K_p[k, i]``: the weighted
    Gaussian of point ``k`` at persistence row ``i``, ``K_b`` likewise for births), so
    all images are one batched matrix product: the points are laid out in a
    ``(n_maps, max points per map, R)`` array, zero-padded, with no loop over maps.
    """
    import torch

    R = birth_grid.shape[0]
    kb = torch.exp(-((birth[:, None] - birth_grid[None, :]) ** 2) / (2 * sigma**2))
    kp = torch.exp(-((pers[:, None] - pers_grid[None, :]) ** 2) / (2 * sigma**2))
    if weighting == "persistence":
        kp = kp * (pers / pers_scale)[:, None]
    slot, width = _slots(map_index.to(device=kb.device, dtype=torch.int64), n_maps)
    Kb = kb.new_zeros(n_maps * width, R).index_copy(0, slot, kb).reshape(n_maps, width, R)
    Kp = kp.new_zeros(n_maps * width, R).index_copy(0, slot, kp).reshape(n_maps, width, R)
    return torch.bmm(Kp.transpose(1, 2), Kb).reshape(n_maps, R * R)


class TopologicalEmbedding(TransformerMixin, BaseEstimator):
    """Channel-averaged persistence images of activation maps (FedTopo's TE).

    Parameters
    ----------
    resolution : int, default=8
        Image side; the embedding has ``M = resolution**2`` entries (paper: M = 64).
    sigma : float or None, default=None
        Gaussian bandwidth; ``None`` uses one grid step.
    weighting : {"none", "persistence"}, default="none"
    normalize : {"mass", "none"}, default="mass"
    homology_dims : tuple of int, default=(0, 1)
    backend : {"auto", "numba", "torch", "cripser", "gudhi"}, default="auto"
        The persistence pairs' backend.
    image_backend : {"torch", "numba"}, default="torch"
        The persistence images' (:data:`IMAGE_BACKENDS`): ``"numba"`` is the faster on
        the CPU (the images and their gradient to float rounding, not bit for bit) and
        needs the activations on the host; ``"torch"`` runs on any device and is what
        the committed FedTopo runs used.

    Attributes
    ----------
    birth_grid_, pers_grid_ : ndarray (resolution,)
        Pixel centres fixed by ``fit``.
    sigma_ : float
    pers_scale_ : float
        Largest persistence seen by ``fit`` (the weight's divisor).
    """

    def __init__(self, resolution: int = 8, sigma: float | None = None,
                 weighting: str = "none", normalize: str = "mass",
                 homology_dims: tuple = (0, 1), backend: str = "auto",
                 image_backend: str = "torch"):
        self.resolution = resolution
        self.sigma = sigma
        self.weighting = weighting
        self.normalize = normalize
        self.homology_dims = homology_dims
        self.backend = backend
        self.image_backend = image_backend

    # -- helpers -------------------------------------------------------------------
    def _validate(self) -> None:
        check_int(self.resolution, "resolution", low=2)
        if self.sigma is not None:
            check_real(self.sigma, "sigma", low=0.0, low_open=True)
        check_choice(self.weighting, "weighting", WEIGHTINGS)
        check_choice(self.normalize, "normalize", NORMALIZATIONS)
        check_choice(self.backend, "backend", CUBICAL_BACKENDS)
        check_choice(self.image_backend, "image_backend", IMAGE_BACKENDS)
        dims = tuple(self.homology_dims)
        if not dims or any(d not in (0, 1) for d in dims):
            raise ValueError(f"homology_dims must be a non-empty subset of (0, 1), got {dims}")

    @staticmethod
    def _as_tensor(activations):
        import torch

        t = activations if isinstance(activations, torch.Tensor) else torch.as_tensor(
            as_float_array(activations, "activations", dtype=np.float32))
        if t.is_complex():
            raise TypeError("activations must hold real numbers, got a complex tensor")
        if t.ndim != 4:
            raise ValueError(
                f"activations must have shape (n_samples, channels, H, W), got {tuple(t.shape)}")
        return t

    @staticmethod
    def _maps(t) -> np.ndarray:
        """The detached maps of ``t`` as a NumPy array (n * C, H, W), checked finite."""
        n, C, H, W = t.shape
        maps = t.detach().cpu().numpy().reshape(n * C, H, W)
        if not np.isfinite(maps).all():
            raise ValueError("activations contain NaN or infinite values")
        return maps

    def _points(self, t):
        """(map_index, birth, persistence) of the kept pairs of every map of ``t``.

        The pairs are computed once, without gradient, on the detached values (float32
        stays float32: the pixel order is the same as in float64), on the host or, with
        ``backend="torch"``, on ``t``'s device; the values are then gathered from ``t``
        in one differentiable ``index_select``.
        """
        import torch

        n, C, H, W = t.shape
        dims = tuple(self.homology_dims)
        if resolve_backend(self.backend) == "torch":  # on the activations' device
            if not bool(torch.isfinite(t).all()):
                raise ValueError("activations contain NaN or infinite values")
            return self._gathered(t, *pairs_torch(t.detach().reshape(n * C, H, W), dims))
        return self._gathered(t, *batch_pairs(self._maps(t), self.backend, dims))

    @staticmethod
    def _gathered(t, map_index, pairs):
        """(map_index on ``t``'s device, birth, persistence) read from ``t`` at the
        pairs' pixels (differentiable)."""
        import torch

        n, C, H, W = t.shape
        birth, death = gather_values(t.reshape(n * C, H * W), map_index, pairs)
        return torch.as_tensor(map_index, device=t.device), birth, death - birth

    # -- estimator API ---------------------------------------------------------------
    def fit(self, activations, y=None):
        """Fix the image grid from the diagrams of ``activations`` (n, C, H, W).

        Parameters
        ----------
        activations : array-like or torch.Tensor of shape (n, C, H, W)
            Block activations.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        self
        """
        self._validate()
        t = self._as_tensor(activations)
        _, birth, pers = self._points(t.detach())
        R = self.resolution
        if birth.numel():
            b_lo, b_hi = float(birth.min()), float(birth.max())
            p_hi = float(pers.max())
        else:
            b_lo, b_hi, p_hi = 0.0, 1.0, 1.0
        if b_hi - b_lo <= 0:
            b_hi = b_lo + 1.0
        if p_hi <= 0:
            p_hi = 1.0
        step_b, step_p = (b_hi - b_lo) / (R - 1), p_hi / (R - 1)
        self.birth_grid_ = np.linspace(b_lo - step_b / 2, b_hi + step_b / 2, R)
        self.pers_grid_ = np.linspace(0.0, p_hi + step_p, R)
        self.sigma_ = float(self.sigma) if self.sigma is not None else float(
            max(self.birth_grid_[1] - self.birth_grid_[0], self.pers_grid_[1]))
        self.pers_scale_ = p_hi
        return self

    def embed(self, activations):
        """Differentiable TE of ``activations`` (torch, shape (n, C, H, W)) -> (n, M)."""
        if not hasattr(self, "birth_grid_"):
            raise ValueError("this TopologicalEmbedding is not fitted yet; call fit first")
        check_choice(self.image_backend, "image_backend", IMAGE_BACKENDS)
        t = self._as_tensor(activations)
        n, C, H, W = t.shape
        if self.image_backend == "torch":
            return self._images(*self._points(t), n, C)
        check_on_host(t)
        maps, dims = self._maps(t), tuple(self.homology_dims)
        # the numba pairs are computed by the images' threads themselves; another backend's
        # are handed to them
        points = None if resolve_backend(self.backend, H * W) == "numba" else batch_pairs(
            maps, self.backend, dims)
        return compiled_embedding(t, self.birth_grid_, self.pers_grid_, self.sigma_,
                                  self.weighting, self.pers_scale_,
                                  self.normalize == "mass", dims, points)

    def embed_deferred(self, activations) -> Callable:
        """Start :meth:`embed` of ``activations`` and return a function that finishes it.

        With torch images and a host persistence backend (numba by default), the
        detached maps are copied to the host now and their pairs computed in a
        background thread; the returned function waits for them and builds the
        embedding from ``activations`` (differentiable), the same tensor, bit for bit,
        as :meth:`embed`. Meanwhile the caller can queue device work: on a CUDA device
        FedTopo queues the cross-entropy's backward pass
        (:meth:`topofl_lib.deep.learner.TorchLearner.gradient`'s ``deferred_loss``).
        Otherwise (``backend="torch"``, or the compiled images) the embedding is
        computed now.

        Parameters
        ----------
        activations : torch.Tensor of shape (n, C, H, W)

        Returns
        -------
        callable
            ``finish() -> Tensor (n, M)``; it raises what the pairs' computation raised.
        """
        if not hasattr(self, "birth_grid_"):
            raise ValueError("this TopologicalEmbedding is not fitted yet; call fit first")
        check_choice(self.image_backend, "image_backend", IMAGE_BACKENDS)
        t = self._as_tensor(activations)
        n, C, H, W = t.shape
        if self.image_backend != "torch" or resolve_backend(self.backend, H * W) == "torch":
            out = self.embed(t)
            return lambda: out
        pairs = _host_thread().submit(batch_pairs, self._maps(t), self.backend,
                                      tuple(self.homology_dims))
        return lambda: self._images(*self._gathered(t, *pairs.result()), n, C)

    def _images(self, map_index, birth, pers, n: int, C: int):
        """Channel-mean persistence image of each sample from its maps' points."""
        import torch

        grid_b = torch.as_tensor(self.birth_grid_, dtype=birth.dtype, device=birth.device)
        grid_p = torch.as_tensor(self.pers_grid_, dtype=birth.dtype, device=birth.device)
        images = persistence_image(map_index, birth, pers, n * C, grid_b, grid_p,
                                   self.sigma_, self.weighting, self.pers_scale_)
        return self._channel_mean(images, n, C)

    def _channel_mean(self, images, n: int, C: int):
        """Each sample's mean over its ``C`` maps' images (normalised first if asked)."""
        if self.normalize == "mass":
            images = images / images.sum(dim=1, keepdim=True).clamp_min(1e-12)
        return images.reshape(n, C, -1).mean(dim=1)

    def transform(self, activations) -> np.ndarray:
        """TE as a NumPy array (no gradient)."""
        import torch

        with torch.no_grad():
            return self.embed(activations).cpu().double().numpy()

    def diagrams(self, activations) -> list[list[np.ndarray]]:
        """Per sample, per channel, the kept pairs as rows ``(dim, birth, death)``."""
        t = self._as_tensor(activations)
        n, C, H, W = t.shape
        maps = self._maps(t)
        map_index, pairs = batch_pairs(maps, self.backend, tuple(self.homology_dims))
        maps = maps.reshape(n * C, H * W)
        rows = np.column_stack([pairs[:, 0], maps[map_index, pairs[:, 1]],
                                maps[map_index, pairs[:, 2]]]).astype(np.float64)
        out = np.split(rows, np.searchsorted(map_index, np.arange(1, n * C)))
        return [out[s * C:(s + 1) * C] for s in range(n)]
