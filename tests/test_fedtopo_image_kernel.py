"""The compiled persistence images (``image_backend="numba"``) against the torch ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topofl_lib.deep import TorchModel
from topofl_lib.fedtopo import FedTopo, TopologicalEmbedding
from topofl_lib.fedtopo.image_kernel import compiled_embedding, compiled_images
from topofl_lib.run_cache import fingerprint
from topofl_lib.topology.cubical import batch_pairs


def _te_and_grad(acts, image_backend, **params):
    te = TopologicalEmbedding(image_backend=image_backend, **params).fit(acts)
    a = acts.clone().requires_grad_(True)
    t = te.embed(a)
    (t * torch.linspace(-1.0, 2.0, t.shape[1])).sum().backward()
    return t.detach().numpy(), a.grad.numpy()


@pytest.mark.parametrize("dims", [(0, 1), (0,), (1,)])
@pytest.mark.parametrize("normalize", ["mass", "none"])
@pytest.mark.parametrize("weighting", ["none", "persistence"])
def test_compiled_images_equal_torch_images_and_gradients(weighting, normalize, dims):
    """The TE and its gradient with respect to the activations agree with the torch
    images' to float32 rounding, on ReLU activations (ties at zero) and on maps with
    a few constant channels (no points at all)."""
    rng = np.random.default_rng(0)
    maps = np.maximum(rng.normal(size=(6, 4, 12, 12)), 0).astype(np.float32)
    maps[1, 2] = 0.0
    maps[4] = 1.5
    acts = torch.from_numpy(maps)
    params = {"weighting": weighting, "normalize": normalize, "homology_dims": dims}
    want, want_grad = _te_and_grad(acts, "torch", **params)
    got, got_grad = _te_and_grad(acts, "numba", **params)
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6 * scale)
    np.testing.assert_allclose(got_grad, want_grad, rtol=2e-4,
                               atol=2e-5 * np.abs(want_grad).max())


@pytest.mark.parametrize("weighting", ["none", "persistence"])
def test_compiled_images_gradient_is_exact(weighting):
    """Against finite differences in float64 (the pairs fixed, as autograd sees them)."""
    rng = np.random.default_rng(1)
    flat = torch.as_tensor(rng.normal(size=(3, 36)))
    map_index, pairs = batch_pairs(flat.numpy().reshape(3, 6, 6))
    grid_b, grid_p = np.linspace(-2.0, 2.0, 4), np.linspace(0.0, 3.0, 4)

    def images(x):
        return compiled_images(x, map_index, pairs, grid_b, grid_p, 0.8, weighting, 2.5)

    assert torch.autograd.gradcheck(images, (flat.requires_grad_(True),), eps=1e-6,
                                    atol=1e-7)


@pytest.mark.parametrize("normalize", [True, False])
def test_compiled_embedding_gradient_is_exact(normalize):
    """The channel mean of the normalised images, with the pairs computed in the kernel's
    threads, against finite differences in float64 (the values are far enough apart that
    no step of 1e-6 reorders the pixels, so the pairs stay fixed). A channel without
    points is left to the comparison with the torch images: a step of 1e-6 gives it one
    point, and its normalised image jumps."""
    maps = np.random.default_rng(2).normal(size=(2, 3, 5, 5))
    grid_b, grid_p = np.linspace(-2.0, 2.0, 4), np.linspace(0.0, 3.0, 4)

    def embedding(x):
        return compiled_embedding(x, grid_b, grid_p, 0.8, "persistence", 2.5, normalize)

    assert torch.autograd.gradcheck(embedding, (torch.as_tensor(maps).requires_grad_(True),),
                                    eps=1e-6, atol=1e-7)


def test_compiled_embedding_computes_the_pairs_it_would_be_given():
    """Pairs computed in the kernel's threads (the numba union-find) and the same pairs
    handed in from :func:`batch_pairs` give the same embedding and gradient, bit for bit,
    and the embedding is the channel mean of :func:`compiled_images` to rounding."""
    acts = torch.as_tensor(np.maximum(np.random.default_rng(4).normal(size=(4, 3, 9, 9)), 0),
                           dtype=torch.float32)
    grids = (np.linspace(-0.5, 2.5, 6), np.linspace(0.0, 3.0, 6), 0.6)
    points = batch_pairs(acts.numpy().reshape(12, 9, 9))
    out = []
    for given in (None, points):
        a = acts.clone().requires_grad_(True)
        t = compiled_embedding(a, *grids, dims=(0, 1), points=given)
        (t * torch.arange(36.0)).sum().backward()
        out.append((t.detach().numpy(), a.grad.numpy()))
    for got, want in zip(*out, strict=True):
        np.testing.assert_array_equal(got, want)
    images = compiled_images(acts.reshape(12, 81), *points, *grids).reshape(4, 3, 36)
    mean = (images / images.sum(2, keepdim=True)).mean(1)
    np.testing.assert_allclose(out[0][0], mean.numpy(), rtol=1e-5, atol=1e-7)


def test_compiled_embedding_checks_its_inputs():
    grids = (np.linspace(0, 1, 3), np.linspace(0, 1, 3), 0.5)
    with pytest.raises(ValueError, match=r"maps must be a 4-D float32 or float64 tensor, "
                                         r"got shape \(2, 16\)"):
        compiled_embedding(torch.rand(2, 16), *grids)
    with pytest.raises(ValueError, match="pixels below 16"):
        compiled_embedding(torch.rand(2, 1, 4, 4), *grids,
                           points=(np.array([0, 1]), np.array([[0, 1, 2], [1, 3, 16]])))
    with pytest.raises(ValueError, match="unknown weighting"):
        compiled_embedding(torch.rand(2, 1, 4, 4), *grids, weighting="linear")
    for bad in (float("nan"), float("inf")):
        maps = torch.rand(2, 1, 4, 4)
        maps[1, 0, 2, 3] = bad
        with pytest.raises(ValueError, match="maps contain NaN or infinite values"):
            compiled_embedding(maps, *grids)
        te = TopologicalEmbedding(image_backend="numba").fit(torch.rand(2, 1, 4, 4))
        with pytest.raises(ValueError, match="activations contain NaN or infinite values"):
            te.embed(maps)


def test_compiled_embedding_of_no_samples_is_empty():
    out = compiled_embedding(torch.rand(0, 2, 4, 4, requires_grad=True),
                             np.linspace(0, 1, 3), np.linspace(0, 1, 3), 0.5)
    assert out.shape == (0, 9)


def test_compiled_images_of_maps_without_points_are_zero():
    flat = torch.ones(2, 16, requires_grad=True)
    empty = np.zeros(0, np.int64)
    out = compiled_images(flat, empty, np.zeros((0, 3), np.int64), np.linspace(0, 1, 3),
                          np.linspace(0, 1, 3), 0.5)
    assert out.shape == (2, 9) and not out.detach().any()
    out.sum().backward()
    assert not flat.grad.any()


def test_compiled_images_refuse_other_devices_and_names():
    meta = torch.empty(2, 16, device="meta")
    with pytest.raises(ValueError, match="image_backend='numba' computes on the host"):
        compiled_images(meta, np.zeros(0, np.int64), np.zeros((0, 3), np.int64),
                        np.linspace(0, 1, 3), np.linspace(0, 1, 3), 0.5)
    te = TopologicalEmbedding(image_backend="numba").fit(torch.rand(1, 1, 4, 4))
    with pytest.raises(ValueError, match="image_backend='numba' computes on the host"):
        te.embed(torch.empty(1, 1, 4, 4, device="meta"))
    with pytest.raises(ValueError, match="image_backend"):
        TopologicalEmbedding(image_backend="cuda").fit(torch.rand(1, 1, 4, 4))
    with pytest.raises(ValueError, match="image_backend"):
        FedTopo(image_backend="fast", model=TorchModel("digits_cnn"))._check_params()


def test_fedtopo_keeps_its_run_store_keys_at_the_default_image_backend():
    """``image_backend`` came after runs were stored: at its default it is not part of the
    key (the value below is FedTopo()'s key before the parameter existed), and any
    other value is."""
    assert fingerprint(FedTopo()) == (
        "2b4a23b7e5897e1e4dbdd2c02ed39e79adef85c58c9110c640f537b39a67bfe9")
    assert fingerprint(FedTopo(image_backend="torch")) == fingerprint(FedTopo())
    assert fingerprint(FedTopo(image_backend="numba")) != fingerprint(FedTopo())


def test_fedtopo_trains_with_compiled_images():
    """A FedTopo run with ``image_backend="numba"``: its first client's first TAL values
    are the torch images' to float rounding (the runs part only by rounding: the first
    value is 0, the local model being the global one), and a seed fixes every bit."""
    from topofl_lib.deep import make_image_scenario

    scenario = make_image_scenario("digits", "L", 3, param=0.5, n_train=300, random_state=0)

    def fit(image_backend):
        return FedTopo(n_rounds=1, lr=0.05, local_epochs=1, tal_samples=16, tal_batch=8,
                       model=TorchModel("digits_cnn", momentum=0.5), random_state=0,
                       image_backend=image_backend).fit(scenario)

    fast, again, reference = fit("numba"), fit("numba"), fit("torch")
    assert fast.tal_log_[1, 4] > 0
    np.testing.assert_allclose(fast.tal_log_[:4], reference.tal_log_[:4], rtol=1e-4)
    np.testing.assert_array_equal(fast.coef_, again.coef_)
    np.testing.assert_array_equal(fast.tal_log_, again.tal_log_)
    assert np.isfinite(fast.coef_).all()


def test_compiled_images_are_the_same_on_any_number_of_threads():
    """Each thread computes whole maps' images and gradients, so the result is the same
    bit for bit on one thread and on three (the maps split into runs)."""
    from topofl_lib.topology.cubical_unionfind import set_persistence_threads

    acts = torch.as_tensor(np.random.default_rng(3).normal(size=(5, 3, 10, 10)),
                           dtype=torch.float32)
    out = []
    try:
        for n_threads in (1, 3):
            set_persistence_threads(n_threads)
            out.append(_te_and_grad(acts, "numba", weighting="persistence"))
    finally:
        set_persistence_threads(None)
    for a, b in zip(*out, strict=True):
        np.testing.assert_array_equal(a, b)


def test_compiled_images_check_their_inputs():
    flat = torch.rand(2, 16)
    points = (np.array([0, 1]), np.array([[0, 1, 2], [1, 3, 4]]))
    grids = (np.linspace(0, 1, 3), np.linspace(0, 1, 3), 0.5)
    with pytest.raises(ValueError, match="unknown weighting"):
        compiled_images(flat, *points, *grids, weighting="linear")
    with pytest.raises(ValueError, match="flat_maps must be a 2-D float32 or float64 tensor, "
                                         "got shape .* torch.float16"):
        compiled_images(flat.half(), *points, *grids)
    with pytest.raises(ValueError, match="pixels below 16"):
        compiled_images(flat, points[0], np.array([[0, 1, 2], [1, 3, 16]]), *grids)
    with pytest.raises(ValueError, match="maps below 2"):
        compiled_images(flat, np.array([0, 2]), points[1], *grids)
    with pytest.raises(ValueError, match=r"shapes \(n,\) and \(n, 3\)"):
        compiled_images(flat, np.array([0]), points[1], *grids)
    with pytest.raises(ValueError, match="grouped by map"):
        compiled_images(flat, np.array([1, 0]), points[1], *grids)


def test_compiled_images_refuse_a_backward_after_the_maps_changed_in_place():
    """The backward pass reads the maps again: torch's version check guards them."""
    flat = torch.rand(2, 16, requires_grad=True)
    maps = flat * 1.0
    map_index, pairs = batch_pairs(maps.detach().numpy().reshape(2, 4, 4))
    out = compiled_images(maps, map_index, pairs, np.linspace(0, 1, 3),
                          np.linspace(0, 1, 3), 0.5)
    with torch.no_grad():
        maps.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
