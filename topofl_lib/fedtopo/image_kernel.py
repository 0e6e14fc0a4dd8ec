r"""Persistence images of a batch of maps as one compiled call, forward and backward.

The same images as :func:`~topofl_lib.fedtopo.embedding.persistence_image` (Eq. 2),
computed from the activations and the pairs' pixels directly: for each point, its birth
:math:`b` and death :math:`d` are read from the map, :math:`p = d - b`, and its
weighted Gaussians along both axes, :math:`k^b_j = e^{-(b - g^b_j)^2 / 2\sigma^2}` and
:math:`k^p_i = w(p)\,e^{-(p - g^p_i)^2 / 2\sigma^2}`, are added as the outer product
:math:`k^p \otimes k^b` to its map's image. The backward pass is the chain rule of
that sum, point by point: with :math:`G` the gradient of the images,

.. math:: \frac{\partial L}{\partial b} = \sum_j \Big(\sum_i G_{ij} k^p_i\Big)
          k^b_j\,\frac{g^b_j - b}{\sigma^2}, \qquad
          \frac{\partial L}{\partial p} = \sum_i \Big(\sum_j G_{ij} k^b_j\Big)
          \frac{\partial k^p_i}{\partial p},

and :math:`\partial L / \partial b` goes to the birth pixel less :math:`\partial L /
\partial p`, which goes to the death pixel.

Why a kernel of its own: for the small images of FedTopo (8x8 grid, tens of points a
map) the torch version is some twenty small operations forward and as many backward,
each a dispatch through autograd, and they cost more than their arithmetic (on
Fashion-MNIST's conv1, 192 maps and about 6,400 points a batch, the images with their
loss, forward and backward, took 1.46 ms with torch and 0.94 ms here, on one core:
``benchmarks/fedtopo_te.py``, ``docs/guide/speed.md``). The samples are split over the
persistence threads (:func:`~topofl_lib.topology.cubical_unionfind.over_map_runs`);
each map's image and gradient are computed by one thread, so the result is the same for
any thread count.

:func:`compiled_embedding` is FedTopo's whole TE in one call each way: each thread
computes its samples' pairs (the numba union-find, unless the pairs are given), their
images, and each sample's mean over its channels of the images divided by their totals
(Eq. 3 with ``normalize="mass"``), and the backward pass runs the same split. On the
host that leaves out the hand-offs between threads, the checks of the pairs and the
small torch operations of the channel mean, which cost as much as the images' own
arithmetic at conv1 (``docs/guide/speed.md``).
It runs on the host only (``image_backend="numba"`` of
:class:`~topofl_lib.fedtopo.TopologicalEmbedding`); the torch version runs on any
device. The two agree to float rounding, not bit for bit (another order of the sums,
another ``exp``): ``tests/test_fedtopo_image_kernel.py``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._validation import check_choice
from ..topology.cubical_unionfind import over_map_runs, pairs_batch

__all__ = ["WEIGHTINGS", "check_on_host", "compiled_embedding", "compiled_images"]

#: The persistence images' point weights: none (Eq. 2 as printed) or ``p / max p``.
WEIGHTINGS = ("none", "persistence")


@numba.njit(cache=True, nogil=True, inline="always")
def _point(values, map_index, birth_px, death_px, k, weighted, scale):  # pragma: no cover
    # point k's map, birth, persistence and weight
    m = map_index[k]
    b = values[m, birth_px[k]]
    p = values[m, death_px[k]] - b
    return m, b, p, (p / scale if weighted else 1.0)


@numba.njit(cache=True, nogil=True)
def _forward(values, map_index, birth_px, death_px, grid_b, grid_p, inv, weighted, scale,
             out, kb, ep):  # pragma: no cover - compiled
    # kb[k, j]: point k's Gaussian at birth column j; ep[k, i]: at persistence row i,
    # unweighted (both kept for the backward pass).
    R = grid_b.size
    for k in range(map_index.size):
        m, b, p, w = _point(values, map_index, birth_px, death_px, k, weighted, scale)
        for j in range(R):
            t = b - grid_b[j]
            kb[k, j] = math.exp(-t * t * inv)
        for i in range(R):
            t = p - grid_p[i]
            ep[k, i] = math.exp(-t * t * inv)
        for i in range(R):
            a = w * ep[k, i]
            for j in range(R):
                out[m, i * R + j] += a * kb[k, j]


@numba.njit(cache=True, nogil=True)
def _backward(values, map_index, birth_px, death_px, grid_b, grid_p, inv, weighted, scale,
              grad_out, grad, kb, ep):  # pragma: no cover - compiled
    R = grid_b.size
    for k in range(map_index.size):
        m, b, p, w = _point(values, map_index, birth_px, death_px, k, weighted, scale)
        dw = 1.0 / scale if weighted else 0.0
        d_b = 0.0
        d_p = 0.0
        for i in range(R):  # d/dp of w(p) * ep[i]
            s = 0.0
            for j in range(R):
                s += grad_out[m, i * R + j] * kb[k, j]
            d_p += s * ep[k, i] * (dw + w * (grid_p[i] - p) * 2.0 * inv)
        for j in range(R):  # d/db of kb[j]
            s = 0.0
            for i in range(R):
                s += grad_out[m, i * R + j] * ep[k, i]
            d_b += w * s * kb[k, j] * (grid_b[j] - b) * 2.0 * inv
        grad[m, birth_px[k]] += d_b - d_p
        grad[m, death_px[k]] += d_p


@numba.njit(cache=True, nogil=True)
def _mean_forward(images, n_channels, normalize, te, sums):  # pragma: no cover - compiled
    # te[s]: the mean of sample s's n_channels images (rows s * n_channels + c), each
    # divided by its total (floored at 1e-12, as torch's clamp_min) if ``normalize``;
    # ``sums`` keeps the totals for the backward pass. Accumulated in float64.
    M = te.shape[1]
    acc = np.empty(M, np.float64)
    for s in range(te.shape[0]):
        acc[:] = 0.0
        for c in range(n_channels):
            m = s * n_channels + c
            d = 1.0
            if normalize:
                total = 0.0
                for j in range(M):
                    total += images[m, j]
                sums[m] = total
                d = max(total, 1e-12)
            for j in range(M):
                acc[j] += images[m, j] / d
        for j in range(M):
            te[s, j] = acc[j] / n_channels


@numba.njit(cache=True, nogil=True)
def _mean_backward(grad_te, images, sums, n_channels, normalize,
                   grad_images):  # pragma: no cover - compiled
    # The chain rule of _mean_forward: with d = max(S, 1e-12), the gradient of image
    # pixel j is (G_j - [S >= 1e-12] sum_l G_l x_l / d) / (d * n_channels).
    M = grad_te.shape[1]
    for s in range(grad_te.shape[0]):
        for c in range(n_channels):
            m = s * n_channels + c
            d = 1.0
            shift = 0.0
            if normalize:
                d = max(sums[m], 1e-12)
                if sums[m] >= 1e-12:
                    for j in range(M):
                        shift += grad_te[s, j] * images[m, j]
                    shift /= d
            for j in range(M):
                grad_images[m, j] = (grad_te[s, j] - shift) / (d * n_channels)


def _run_points(values, points, lo: int, hi: int, shape, dims):
    """The points of maps ``lo`` to ``hi - 1``: sliced from ``points`` (grouped by map)
    or, when it is ``None``, computed here, in this thread, by the union-find."""
    if points is None:
        map_index, pairs = pairs_batch(values[lo:hi].reshape(hi - lo, *shape), dims,
                                       n_threads=1)
        map_index = map_index + lo
    else:
        a, b = np.searchsorted(points[0], (lo, hi))
        map_index, pairs = points[0][a:b], points[1][a:b]
    return map_index, np.ascontiguousarray(pairs[:, 1]), np.ascontiguousarray(pairs[:, 2])


def _function():
    """The autograd Function (made on first use: torch is imported lazily).

    Its forward pass splits the samples into runs, one a thread
    (:func:`~topofl_lib.topology.cubical_unionfind.over_map_runs`); each thread computes
    its samples' pairs (unless given), images and channel means, and keeps what its
    backward pass, the same run in the same thread count, needs. No two threads write
    the same value, so the result is the same for any thread count."""
    import torch
    from torch.autograd.function import once_differentiable

    class CompiledEmbedding(torch.autograd.Function):
        @staticmethod
        def forward(ctx, flat, n_channels, shape, dims, points, grid_b, grid_p, inv,
                    weighted, scale, normalize):
            values = flat.detach().numpy()
            R, n_maps = grid_b.size, values.shape[0]
            images = np.zeros((n_maps, R * R), values.dtype)
            plain = n_channels == 1 and not normalize  # the images are the output
            te = images if plain else np.empty((n_maps // n_channels, R * R), values.dtype)
            sums = np.zeros(n_maps, np.float64)
            kernel_args = (grid_b, grid_p, inv, weighted, scale)

            def run(a, b):
                lo, hi = a * n_channels, b * n_channels
                map_index, birth_px, death_px = _run_points(values, points, lo, hi, shape,
                                                            dims)
                kb = np.empty((map_index.size, R), values.dtype)
                ep = np.empty((map_index.size, R), values.dtype)
                _forward(values, map_index, birth_px, death_px, *kernel_args, images, kb, ep)
                if not plain:
                    _mean_forward(images[lo:hi], n_channels, normalize, te[a:b],
                                  sums[lo:hi])
                return a, b, (map_index, birth_px, death_px), kb, ep

            ctx.runs = over_map_runs(run, n_maps // n_channels)
            # the maps are read again by the backward pass: saved, so that torch refuses
            # a backward after they were changed in place
            ctx.save_for_backward(flat)
            ctx.state = (n_channels, normalize, plain, images, sums, kernel_args)
            return torch.from_numpy(te)

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_te):
            (flat,) = ctx.saved_tensors
            values = flat.detach().numpy()
            n_channels, normalize, plain, images, sums, kernel_args = ctx.state
            g = np.ascontiguousarray(grad_te.numpy(), dtype=values.dtype)
            grad_images = g if plain else np.empty_like(images)
            grad = np.zeros_like(values)

            def run(first, last):
                for a, b, points, kb, ep in ctx.runs[first:last]:
                    lo, hi = a * n_channels, b * n_channels
                    if not plain:
                        _mean_backward(g[a:b], images[lo:hi], sums[lo:hi], n_channels,
                                       normalize, grad_images[lo:hi])
                    _backward(values, *points, *kernel_args, grad_images, grad, kb, ep)

            over_map_runs(run, len(ctx.runs), len(ctx.runs))
            return (torch.from_numpy(grad),) + (None,) * 10

    return CompiledEmbedding


_FUNCTION: list = []


def check_on_host(tensor) -> None:
    """Raise ``ValueError`` unless ``tensor`` is on the CPU (this kernel's device).

    Parameters
    ----------
    tensor : torch.Tensor
    """
    if tensor.device.type != "cpu":
        raise ValueError("image_backend='numba' computes on the host, but the activations "
                         f"are on {tensor.device}: use image_backend='torch'")


def _dtype(maps, name: str, ndim: int) -> np.dtype:
    """The NumPy dtype of ``maps``, a tensor on the host with ``ndim`` dimensions and
    float32 or float64 values (else a ``ValueError``)."""
    check_on_host(maps)
    dtype = np.dtype(str(maps.dtype).removeprefix("torch."))
    if maps.ndim != ndim or dtype not in (np.float32, np.float64):
        raise ValueError(f"{name} must be a {ndim}-D float32 or float64 tensor, got shape "
                         f"{tuple(maps.shape)} and {maps.dtype}")
    return dtype


def _apply(flat_maps, dtype, n_channels: int, shape, dims, points, grid_b, grid_p,
           sigma: float, weighting: str, pers_scale: float, normalize: bool):
    """Run :func:`_function`'s Function on checked maps and points."""
    check_choice(weighting, "weighting", WEIGHTINGS)
    if not _FUNCTION:
        _FUNCTION.append(_function())
    return _FUNCTION[0].apply(
        flat_maps, n_channels, shape, dims, points, np.asarray(grid_b, dtype=dtype),
        np.asarray(grid_p, dtype=dtype), dtype.type(1.0 / (2.0 * sigma**2)),
        weighting == "persistence", dtype.type(pers_scale), normalize)


def compiled_images(flat_maps, map_index: np.ndarray, pairs: np.ndarray, grid_b: np.ndarray,
                    grid_p: np.ndarray, sigma: float, weighting: str = "none",
                    pers_scale: float = 1.0):
    """Persistence images of every map, differentiable with respect to ``flat_maps``.

    Parameters
    ----------
    flat_maps : torch.Tensor of shape (n_maps, H * W), float32 or float64, on the CPU
        The maps the pairs were computed on (may require grad).
    map_index, pairs : ndarray of int64
        :func:`~topofl_lib.topology.cubical.batch_pairs` of those maps.
    grid_b, grid_p, sigma, weighting, pers_scale
        As in :func:`compiled_embedding`.

    Returns
    -------
    torch.Tensor of shape (n_maps, R * R)
        The images of :func:`~topofl_lib.fedtopo.embedding.persistence_image`, in its
        layout: :func:`compiled_embedding` of one channel a sample, not normalised.
    """
    dtype = _dtype(flat_maps, "flat_maps", 2)
    points = _checked_points(map_index, pairs, *flat_maps.shape)
    return _apply(flat_maps, dtype, 1, None, (0, 1), points, grid_b, grid_p, sigma,
                  weighting, pers_scale, False)


def compiled_embedding(maps, grid_b: np.ndarray, grid_p: np.ndarray, sigma: float,
                       weighting: str = "none", pers_scale: float = 1.0,
                       normalize: bool = True, dims=(0, 1), points=None):
    """Each sample's mean over its channels of their persistence images (FedTopo's TE,
    Eq. 3), differentiable with respect to ``maps``, with the pairs computed in the same
    threads unless given.

    Parameters
    ----------
    maps : torch.Tensor of shape (n, C, H, W), float32 or float64, finite, on the CPU
        Activations (may require grad).
    grid_b, grid_p : ndarray (R,)
        Pixel centres along each axis.
    sigma : float
    weighting : {"none", "persistence"}
    pers_scale : float
        As in :func:`~topofl_lib.fedtopo.embedding.persistence_image`.
    normalize : bool, default=True
        Divide each image by its total first (a total below 1e-12 counts as 1e-12).
    dims : tuple of int, default=(0, 1)
        Homology degrees, when the pairs are computed here (the numba union-find,
        :func:`~topofl_lib.topology.cubical_unionfind.pairs_batch`'s pairs).
    points : tuple of ndarray, optional
        ``(map_index, pairs)`` of the ``n * C`` maps, from
        :func:`~topofl_lib.topology.cubical.batch_pairs` (another backend's).

    Returns
    -------
    torch.Tensor of shape (n, R * R)
    """
    dtype = _dtype(maps, "maps", 4)
    if not np.isfinite(maps.detach().numpy()).all():
        raise ValueError("maps contain NaN or infinite values")
    n, C, H, W = maps.shape
    if points is not None:
        points = _checked_points(*points, n * C, H * W)
    return _apply(maps.reshape(n * C, H * W), dtype, C, (H, W), tuple(dims), points, grid_b,
                  grid_p, sigma, weighting, pers_scale, bool(normalize))


def _checked_points(map_index, pairs, n_maps: int, n_pixels: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``map_index`` and ``pairs`` as int64 arrays, checked to name maps and pixels of the
    ``(n_maps, n_pixels)`` maps (the kernels do not check their indices)."""
    map_index = np.asarray(map_index, dtype=np.int64)
    pairs = np.asarray(pairs, dtype=np.int64)
    if map_index.ndim != 1 or pairs.shape != (map_index.size, 3):
        raise ValueError("map_index and pairs must have shapes (n,) and (n, 3), got "
                         f"{map_index.shape} and {pairs.shape}")
    if map_index.size > 1 and (map_index[1:] < map_index[:-1]).any():
        raise ValueError("map_index must be grouped by map (non-decreasing), as "
                         "batch_pairs returns it")
    if map_index.size and (map_index.min() < 0 or map_index.max() >= n_maps
                           or pairs[:, 1:].min() < 0 or pairs[:, 1:].max() >= n_pixels):
        raise ValueError(f"map_index and pairs must name maps below {n_maps} and pixels "
                         f"below {n_pixels}")
    return map_index, pairs
