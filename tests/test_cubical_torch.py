"""The torch cubical backend (the device path of issue 47): exact against gudhi and pixel
for pixel equal to the numba kernel, on torch's CPU backend (so it is checked without a
GPU), ties included; and FedTopo's embedding on it."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from test_cubical import KINDS, _diagram, _gudhi_diagram, _random_map

from topofl_lib.fedtopo import TopologicalEmbedding
from topofl_lib.topology.cubical import batch_pairs, cubical_pairs
from topofl_lib.topology.cubical_torch import pairs_torch
from topofl_lib.topology.cubical_unionfind import pairs_batch


def _rows(map_index, pairs) -> list[tuple]:
    """Pairs as a sorted list of (map, dim, birth pixel, death pixel)."""
    mi, pr = (np.asarray(a.cpu() if isinstance(a, torch.Tensor) else a)
              for a in (map_index, pairs))
    return sorted(zip(mi.tolist(), *pr.T.tolist(), strict=True))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_diagrams_equal_gudhi_and_pairs_equal_numba_on_random_maps(dtype):
    """900 random maps (nine kinds: ties, plateaus, constant maps, single rows and
    columns, rings): each diagram equals gudhi's as a multiset of values, and the pairs
    are the numba kernel's, the same pixels (both break ties by the flat index)."""
    rng = np.random.default_rng(7)
    counts = Counter()
    for trial in range(900):
        kind = KINDS[trial % len(KINDS)]
        m = _random_map(rng, kind).astype(dtype)
        map_index, pairs = pairs_torch(torch.from_numpy(m[None].copy()))
        assert _diagram(m, pairs.numpy()) == _gudhi_diagram(m), (kind, m)
        assert _rows(map_index, pairs) == _rows(*pairs_batch(m[None])), (kind, m)
        counts[int(pairs[:, 0].max()) if len(pairs) else -1] += 1
    assert counts[1] > 0 and counts[0] > 0  # both degrees occur


def test_a_batch_of_activation_maps_equals_numba_pixel_for_pixel():
    """One batch of many maps at once (the rounds run over all maps together): 192 ReLU
    maps of 24x24 and 64 of 8x8, each degree alone and both."""
    rng = np.random.default_rng(3)
    for shape in ((192, 24, 24), (64, 8, 8)):
        maps = np.maximum(rng.normal(size=shape), 0).astype(np.float32)
        for dims in ((0, 1), (0,), (1,)):
            got = pairs_torch(torch.from_numpy(maps), dims)
            assert _rows(*got) == _rows(*pairs_batch(maps, dims)), (shape, dims)
            assert torch.all(got[0][1:] >= got[0][:-1])  # grouped by map, in order


def test_known_pairs_and_the_backend_name():
    """The docstring example of :func:`cubical_pairs` (three minima die at their ridge
    pixels), through ``backend="torch"``; a hole (H1) born when the ring closes, dying
    when its centre enters."""
    m = np.array([[0.0, 3.0, 1.0], [3.0, 3.0, 3.0], [2.0, 3.0, 0.5]])
    (pairs,) = cubical_pairs(m[None], backend="torch")
    assert sorted(map(tuple, pairs.tolist())) == [(0, 2, 1), (0, 6, 3), (0, 8, 5)]
    ring = np.full((5, 5), 2.0)  # a ring of 1s around a 5, inside a frame of 2s
    ring[1:4, 1:4] = 1.0
    ring[2, 2] = 5.0
    (pairs,) = cubical_pairs(ring[None], backend="torch")
    assert pairs.tolist() == [[1, 18, 12]]  # born at the ring's last pixel, dies at 5


def test_edge_cases_and_determinism():
    """No maps, one pixel, a constant map: no pairs; the same input twice: the same
    tensors; -0.0 and 0.0 are one value."""
    for maps in (np.zeros((0, 4, 4)), np.ones((3, 1, 1)), np.full((2, 4, 5), 2.5)):
        map_index, pairs = pairs_torch(torch.from_numpy(maps))
        assert map_index.shape == (0,) and pairs.shape == (0, 3)
    assert pairs_torch(torch.ones(2, 3, 3), dims=())[1].shape == (0, 3)
    rng = np.random.default_rng(0)
    maps = torch.from_numpy(np.round(rng.normal(size=(20, 9, 7)), 1))
    a, b = pairs_torch(maps), pairs_torch(maps)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    signed = torch.tensor([[[0.0, 1.0, -0.0], [2.0, 1.0, 0.0]]])
    assert _rows(*pairs_torch(signed)) == _rows(*pairs_torch(signed.abs()))


def test_batch_pairs_refuses_bad_maps_for_the_torch_backend():
    with pytest.raises(ValueError, match="NaN or infinite"):
        batch_pairs(np.array([[[0.0, np.nan]]]), backend="torch")
    with pytest.raises(ValueError, match=r"shape \(n_maps, H, W\)"):
        batch_pairs(np.zeros((3, 3)), backend="torch")


def test_pairs_torch_refuses_bad_maps_naming_what_is_wrong(monkeypatch):
    """Its own checks, before anything is computed: the embedding calls it directly."""
    import topofl_lib.topology.cubical_torch as ct

    cases = [(np.zeros((2, 2, 2)), TypeError, "must be a torch.Tensor, got ndarray"),
             (torch.zeros(2, 2, 2, dtype=torch.complex64), TypeError, "real numbers"),
             (torch.zeros(3, 3), ValueError, r"shape \(n_maps, H, W\), got shape \(3, 3\)"),
             (torch.zeros(2, 0, 3), ValueError, r"at least 1x1, got \(0, 3\)"),
             (torch.tensor([[[0.0, float("inf")]]]), ValueError, "NaN or infinite")]
    for maps, error, message in cases:
        with pytest.raises(error, match=message):
            pairs_torch(maps)
    with pytest.raises(ValueError, match=r"dims must be a subset of \(0, 1\), got \(2,\)"):
        pairs_torch(torch.zeros(1, 2, 2), dims=(2,))
    assert ct.MAX_NODES**2 <= 2**63 - 1 < (ct.MAX_NODES + 1) ** 2  # keys: ranks squared
    monkeypatch.setattr(ct, "MAX_NODES", 100)
    with pytest.raises(ValueError, match="split the batch"):
        pairs_torch(torch.zeros(10, 3, 3))  # 10 * (9 + 2) = 110 nodes > 100


def test_integer_maps_are_filtered_as_float64_like_numba():
    """Integers above 2**24 that float32 would merge keep their order (numba's path
    casts them to float64 too)."""
    base = 2**25
    maps = torch.tensor([[[base, base + 1, base], [base + 3, base + 2, base + 1]]])
    assert _rows(*pairs_torch(maps)) == _rows(*batch_pairs(maps.numpy(), "numba"))
    assert len(_rows(*pairs_torch(maps))) > 0


def test_embedding_on_the_torch_backend_equals_numba():
    """FedTopo's TE and its gradient with the pairs computed in torch: the same points
    as with numba (in another order within a map, so the sums agree to rounding)."""
    torch.manual_seed(0)
    acts = torch.relu(torch.randn(6, 3, 12, 12, dtype=torch.float64))
    grads = {}
    for backend in ("numba", "torch"):
        te = TopologicalEmbedding(backend=backend).fit(acts)
        leaf = acts.clone().requires_grad_(True)
        out = te.embed(leaf)
        (out ** 2).sum().backward()
        grads[backend] = (te.birth_grid_, out.detach(), leaf.grad)
    (gb, t0, g0), (gb1, t1, g1) = grads["numba"], grads["torch"]
    np.testing.assert_array_equal(gb, gb1)
    torch.testing.assert_close(t1, t0, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g1, g0, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="NaN or infinite"):
        TopologicalEmbedding(backend="torch").fit(acts).embed(acts * float("nan"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_pairs_on_a_cuda_device_equal_the_cpu():  # pragma: no cover - needs a GPU
    maps = torch.relu(torch.randn(64, 16, 16))
    cpu = pairs_torch(maps)
    gpu = pairs_torch(maps.cuda())
    assert gpu[1].device.type == "cuda"
    assert _rows(*cpu) == _rows(*gpu)
