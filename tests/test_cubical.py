"""The numba cubical backend: exact diagrams (against gudhi and cripser), determinism."""

from __future__ import annotations

import importlib.util
from collections import Counter

import gudhi
import numpy as np
import pytest

from topofl_lib.topology.cubical import batch_pairs, cubical_pairs
from topofl_lib.topology.cubical_unionfind import pairs_batch, pixel_order

HAS_CRIPSER = importlib.util.find_spec("cripser") is not None


def _diagram(m: np.ndarray, pairs: np.ndarray) -> Counter:
    """A map's diagram as a multiset of (dim, birth, death) values."""
    flat = m.ravel()
    return Counter((int(d), float(flat[b]), float(flat[e])) for d, b, e in pairs)


def _gudhi_diagram(m: np.ndarray) -> Counter:
    """gudhi's own values (not pixels): finite pairs of positive persistence."""
    cc = gudhi.CubicalComplex(vertices=np.asarray(m, dtype=np.float64))
    return Counter((int(d), float(b), float(e)) for d, (b, e)
                   in cc.persistence(homology_coeff_field=2) if np.isfinite(e) and e > b)


def _random_map(rng: np.random.Generator, kind: str) -> np.ndarray:
    H, W = (int(s) for s in rng.integers(2, 17, size=2))
    if kind == "line":  # 1 x N or N x 1
        H, W = (1, W) if rng.random() < 0.5 else (H, 1)
    m = rng.normal(size=(H, W))
    if kind == "quantised":  # many ties
        m = np.round(m * rng.choice([1.0, 2.0]))
    elif kind == "relu":  # a plateau at zero, as after FedTopo's ReLU
        m = np.maximum(m, 0.0)
    elif kind == "levels":  # two or three values only
        m = rng.integers(0, rng.integers(2, 4), size=(H, W)).astype(float)
    elif kind == "plateaus":  # constant blocks
        bh, bw = (int(s) for s in rng.integers(1, 4, size=2))
        m = np.kron(rng.integers(0, 4, size=(-(-H // bh), -(-W // bw))), np.ones((bh, bw)))
        m = m[:H, :W].astype(float)
    elif kind == "constant":
        m = np.full((H, W), float(rng.normal()))
    elif kind == "single_min":  # one pixel below a flat map
        m = np.full((H, W), 1.0)
        m[rng.integers(H), rng.integers(W)] = 0.0
    elif kind == "ring":  # a low ring around a high centre, plus noise
        yy, xx = np.mgrid[:H, :W]
        r = np.hypot(yy - (H - 1) / 2, xx - (W - 1) / 2)
        m = np.abs(r - min(H, W) / 3) + 0.1 * rng.normal(size=(H, W))
    return m


KINDS = ("normal", "quantised", "relu", "levels", "plateaus", "constant", "single_min",
         "ring", "line")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_diagrams_equal_gudhi_on_random_maps(dtype):
    """On 1,800 random maps (9 kinds, ties included), every diagram equals gudhi's as a
    multiset of (dim, birth, death) values."""
    rng = np.random.default_rng(0)
    counts = Counter()
    for trial in range(1800):
        kind = KINDS[trial % len(KINDS)]
        m = _random_map(rng, kind).astype(dtype)
        (pairs,) = cubical_pairs(m[None], "numba")
        assert _diagram(m, pairs) == _gudhi_diagram(m), (kind, m)
        counts[kind] += len(pairs)
    assert counts["ring"] > 0 and counts["quantised"] > 0 and counts["constant"] == 0


@pytest.mark.skipif(not HAS_CRIPSER, reason="cripser is not installed")
def test_diagrams_equal_cripser_on_random_maps():
    """Same against cripser (which treats a 1 x N map as isolated points: not compared)."""
    rng = np.random.default_rng(1)
    for trial in range(1000):
        kind = KINDS[trial % (len(KINDS) - 1)]
        m = _random_map(rng, kind)
        ours, theirs = cubical_pairs(m[None], "numba")[0], cubical_pairs(m[None], "cripser")[0]
        assert _diagram(m, ours) == _diagram(m, theirs), (kind, m)


def test_known_diagrams_and_connectivity():
    """H0 joins 4-neighbours only (V-construction); H1 holes are 8-connected."""
    # two minima touching diagonally are two components until a 4-path joins them
    diag = np.array([[0.0, 5.0], [5.0, 1.0]])
    assert _diagram(diag, cubical_pairs(diag[None], "numba")[0]) == Counter({(0, 1.0, 5.0): 1})
    # a plus-shaped hole: its cells are 4-connected, one H1 class
    ring = np.zeros((5, 5))
    ring[1:4, 2] = ring[2, 1:4] = 3.0
    assert _diagram(ring, cubical_pairs(ring[None], "numba")[0]) == Counter({(1, 0.0, 3.0): 1})
    # a diagonal hole: two high pixels touching at a corner are one hole (8-connected)
    hole = np.zeros((4, 4))
    hole[1, 1] = hole[2, 2] = 3.0
    assert _diagram(hole, cubical_pairs(hole[None], "numba")[0]) == Counter({(1, 0.0, 3.0): 1})


def test_batch_equals_maps_one_by_one():
    """A map's pairs do not depend on the other maps of its batch; dims filter."""
    rng = np.random.default_rng(2)
    maps = np.maximum(rng.normal(size=(20, 7, 9)), 0).astype(np.float32)
    map_index, pairs = batch_pairs(maps)
    assert np.all(np.diff(map_index) >= 0)
    for i, m in enumerate(maps):
        alone = batch_pairs(m[None])[1]
        np.testing.assert_array_equal(pairs[map_index == i], alone)
    h1 = batch_pairs(maps, dims=(1,))[1]
    np.testing.assert_array_equal(h1, pairs[pairs[:, 0] == 1])


def test_pairing_is_deterministic_and_breaks_ties_by_index():
    """The pixel order is (value, flat index), whatever the dtype and sign of zero, so
    the same values always give the same pixel pairs."""
    rng = np.random.default_rng(3)
    maps = np.round(rng.normal(size=(50, 6, 6)), 1)
    maps[maps == 0] = -0.0  # -0.0 and 0.0 are the same value
    maps[:, 0, 0] = 0.0
    flat = maps.reshape(50, -1)
    stable = np.argsort(flat + 0.0, axis=1, kind="stable")
    np.testing.assert_array_equal(pixel_order(flat), stable)
    np.testing.assert_array_equal(pixel_order(flat.astype(np.float32)), stable)
    first = pairs_batch(maps)
    for _ in range(3):
        again = pairs_batch(maps.astype(np.float32))
        np.testing.assert_array_equal(first[0], again[0])
        np.testing.assert_array_equal(first[1], again[1])


def test_pairs_name_creating_and_killing_pixels():
    """Birth pixels hold the smaller value, death pixels the larger; each H0 birth pixel
    is a local minimum (4-neighbours) and each H1 death pixel a local maximum (8)."""
    rng = np.random.default_rng(4)
    maps = rng.normal(size=(30, 8, 8))
    map_index, pairs = batch_pairs(maps)
    for i, (d, b, e) in zip(map_index, pairs, strict=True):
        m = maps[i]
        assert m.flat[e] > m.flat[b]
        y, x = divmod(int(b if d == 0 else e), 8)
        nb = m[max(y - 1, 0):y + 2, max(x - 1, 0):x + 2]
        if d == 0:
            cross = [m[yy, xx] for yy, xx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1))
                     if 0 <= yy < 8 and 0 <= xx < 8]
            assert m[y, x] < min(cross)
        else:
            assert m[y, x] == nb.max()


def test_errors_and_empty_maps():
    with pytest.raises(ValueError, match="NaN"):
        batch_pairs(np.array([[[0.0, np.inf]]]))
    with pytest.raises(ValueError, match="unknown backend"):
        batch_pairs(np.zeros((1, 2, 2)), backend="ripser")
    with pytest.raises(ValueError, match="shape \\(n_maps, H, W\\)"):
        batch_pairs(np.zeros((2, 2)))
    assert all(p.shape == (0, 3) for p in cubical_pairs(np.zeros((3, 1, 1)), "numba"))


@pytest.mark.skipif(not HAS_CRIPSER, reason="cripser is not installed")
def test_cripser_refuses_lines():
    with pytest.raises(ValueError, match="at least 2x2 for backend 'cripser'"):
        cubical_pairs(np.zeros((1, 1, 5)), "cripser")


@pytest.mark.parametrize("dims", [(0, 1), (0,), (1,)])
def test_any_thread_count_gives_the_serial_pairs_bit_for_bit(dims):
    """Issue 47: the batch is split into contiguous runs of maps, one thread each; every
    map's pairs depend on that map alone, so the result equals the one-thread result
    exactly, ties and empty maps included, for any number of threads (more threads than
    maps too)."""
    rng = np.random.default_rng(5)
    maps = rng.integers(0, 6, size=(37, 9, 11)).astype(np.float32)  # many ties
    maps[4] = 0.0  # a constant map: no finite pair
    serial = pairs_batch(maps, dims, n_threads=1)
    for threads in (2, 3, 4, 64):
        got = pairs_batch(maps, dims, n_threads=threads)
        for a, b in zip(got, serial, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)
    empty = pairs_batch(np.zeros((0, 4, 4), np.float32), dims, n_threads=3)
    assert empty[0].shape == (0,) and empty[1].shape == (0, 3)


def test_the_default_thread_count_is_set_and_checked():
    from topofl_lib.topology.cubical_unionfind import (
        persistence_threads,
        set_persistence_threads,
    )

    try:
        set_persistence_threads(3)
        assert persistence_threads() == 3
        maps = np.random.default_rng(0).random((8, 6, 6))
        assert all(np.array_equal(a, b) for a, b in zip(
            pairs_batch(maps), pairs_batch(maps, n_threads=1), strict=True))
        with pytest.raises(ValueError, match="n_threads must be >= 1, got 0"):
            set_persistence_threads(0)
    finally:
        set_persistence_threads(None)
    import numba

    assert persistence_threads() == numba.config.NUMBA_NUM_THREADS


def test_a_thread_limit_for_a_block_restores_the_setting():
    """persistence_threads_limited: at most n threads inside the block (never more than
    the setting), the setting as it was after it, an error included."""
    from topofl_lib.topology.cubical_unionfind import (
        persistence_threads,
        persistence_threads_limited,
        set_persistence_threads,
    )

    try:
        set_persistence_threads(3)
        with persistence_threads_limited(1):
            assert persistence_threads() == 1
        with persistence_threads_limited(8):
            assert persistence_threads() == 3
        with pytest.raises(KeyError), persistence_threads_limited(2):
            assert persistence_threads() == 2
            raise KeyError("inside")
        assert persistence_threads() == 3
        set_persistence_threads(None)
        with persistence_threads_limited(1):
            assert persistence_threads() == 1
        import numba

        assert persistence_threads() == numba.config.NUMBA_NUM_THREADS
    finally:
        set_persistence_threads(None)
