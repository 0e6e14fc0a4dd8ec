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
``benchmarks/fedtopo_te.py``, ``docs/guide/speed.md``). The maps are split over the
persistence threads (:func:`~topofl_lib.topology.cubical_unionfind.over_map_runs`;
each map's image and gradient are computed by one thread, so the result is the same for
any thread count).
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
from ..topology.cubical_unionfind import over_map_runs

__all__ = ["WEIGHTINGS", "check_on_host", "compiled_images"]

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


def _by_maps(kernel, args: tuple, arrays: tuple, n_maps: int) -> None:
    """``kernel(*args, *arrays)`` over the maps split into runs, one a thread
    (:func:`~topofl_lib.topology.cubical_unionfind.over_map_runs`): each run gets the
    slices of the point arrays (``args[1:4]``; points grouped by map, as
    :func:`~topofl_lib.topology.cubical.batch_pairs` returns them and
    :func:`_checked_points` checks) and of ``kb`` and
    ``ep`` (the last two of ``arrays``) for its maps' points, and writes only its maps'
    rows of the images or of their gradient, so no two threads touch the same value."""
    values, map_index, birth_px, death_px, *rest = args
    *whole, kb, ep = arrays

    def run(a, b):
        lo, hi = np.searchsorted(map_index, (a, b))
        kernel(values, map_index[lo:hi], birth_px[lo:hi], death_px[lo:hi], *rest, *whole,
               kb[lo:hi], ep[lo:hi])

    over_map_runs(run, n_maps)


def _function():
    """The autograd Function (made on first use: torch is imported lazily)."""
    import torch
    from torch.autograd.function import once_differentiable

    class CompiledImages(torch.autograd.Function):
        @staticmethod
        def forward(ctx, flat, map_index, birth_px, death_px, n_maps, grid_b, grid_p, inv,
                    weighted, scale):
            values = flat.detach().numpy()
            R, n_points = grid_b.size, map_index.size
            out = np.zeros((n_maps, R * R), values.dtype)
            kb = np.empty((n_points, R), values.dtype)
            ep = np.empty((n_points, R), values.dtype)
            args = (map_index, birth_px, death_px, grid_b, grid_p, inv, weighted, scale)
            _by_maps(_forward, (values, *args), (out, kb, ep), n_maps)
            # the maps are read again by the backward pass: saved, so that torch refuses
            # a backward after they were changed in place
            ctx.save_for_backward(flat)
            ctx.kernel_args = (*args, kb, ep)
            return torch.from_numpy(out)

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_images):
            (flat,) = ctx.saved_tensors
            values = flat.detach().numpy()
            grad = np.zeros_like(values)
            *args, kb, ep = ctx.kernel_args
            g = np.ascontiguousarray(grad_images.numpy(), dtype=values.dtype)
            _by_maps(_backward, (values, *args), (g, grad, kb, ep), values.shape[0])
            return (torch.from_numpy(grad),) + (None,) * 9

    return CompiledImages


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
    grid_b, grid_p : ndarray (R,)
        Pixel centres along each axis.
    sigma : float
    weighting : {"none", "persistence"}
    pers_scale : float
        As in :func:`~topofl_lib.fedtopo.embedding.persistence_image`.

    Returns
    -------
    torch.Tensor of shape (n_maps, R * R)
        The images of :func:`~topofl_lib.fedtopo.embedding.persistence_image`, in its
        layout.
    """
    check_on_host(flat_maps)
    check_choice(weighting, "weighting", WEIGHTINGS)
    dtype = np.dtype(str(flat_maps.dtype).removeprefix("torch."))
    if flat_maps.ndim != 2 or dtype not in (np.float32, np.float64):
        raise ValueError("flat_maps must be a 2-D float32 or float64 tensor, got shape "
                         f"{tuple(flat_maps.shape)} and {flat_maps.dtype}")
    map_index, pairs = _checked_points(map_index, pairs, *flat_maps.shape)
    if not _FUNCTION:
        _FUNCTION.append(_function())
    return _FUNCTION[0].apply(
        flat_maps, map_index, np.ascontiguousarray(pairs[:, 1]),
        np.ascontiguousarray(pairs[:, 2]), flat_maps.shape[0],
        np.asarray(grid_b, dtype=dtype), np.asarray(grid_p, dtype=dtype),
        dtype.type(1.0 / (2.0 * sigma**2)), weighting == "persistence",
        dtype.type(pers_scale))


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
