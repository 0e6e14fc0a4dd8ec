"""FedTopo: differentiable cubical persistence and TE, TGBS, alpha schedules, TAL."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import gudhi
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from topofl_lib.deep import BlockNet, TorchModel, deep_variants, make_image_scenario
from topofl_lib.federated import FedAvg
from topofl_lib.fedtopo import (
    AlphaSchedule,
    FedTopo,
    TopologicalEmbedding,
    TopologyGuidedBlockScreening,
    calibrate_loss_range,
    imbalance_floor,
    persistence_image,
)
from topofl_lib.studies.fedtopo import block_table, pixel_noise_sd
from topofl_lib.topology.cubical import cubical_pairs, gather_diagrams

BACKENDS = ["numba", "gudhi"] + (["cripser"] if importlib.util.find_spec("cripser") else [])


def _values(m, pairs):
    flat = m.ravel()
    return sorted((int(d), flat[b], flat[e]) for d, b, e in pairs)


# -- cubical persistence ----------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_known_diagrams(backend):
    four_minima = np.array([[0, 5, 1], [5, 5, 5], [2, 5, 3]], float)
    assert _values(four_minima, cubical_pairs(four_minima[None], backend)[0]) == [
        (0, 1.0, 5.0), (0, 2.0, 5.0), (0, 3.0, 5.0)]
    ring = np.full((5, 5), 9.0)
    ring[1:4, 1:4] = 0.0
    ring[2, 2] = 7.0
    assert _values(ring, cubical_pairs(ring[None], backend)[0]) == [(1, 0.0, 7.0)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_gathered_diagram_equals_library_diagram(backend):
    rng = np.random.default_rng(0)
    maps = rng.normal(size=(4, 9, 11))
    pairs = cubical_pairs(maps, backend)
    flat = torch.as_tensor(maps.reshape(4, -1))
    map_index, dim, birth, death = gather_diagrams(flat, pairs)
    for i, m in enumerate(maps):
        cc = gudhi.CubicalComplex(vertices=m)
        ref = sorted((d, b, e) for d, (b, e) in cc.persistence(homology_coeff_field=2)
                     if np.isfinite(e) and e > b)
        sel = (map_index == i).numpy()
        ours = sorted(zip(dim[sel].tolist(), birth[sel].tolist(), death[sel].tolist(),
                          strict=True))
        assert len(ours) == len(ref)
        np.testing.assert_allclose(np.array(ours), np.array(ref), rtol=0, atol=1e-12)


@pytest.mark.skipif(len(BACKENDS) < 2, reason="cripser is not installed")
def test_backends_agree():
    maps = np.maximum(np.random.default_rng(1).normal(size=(6, 12, 12)), 0)  # ReLU ties
    for m, a, b in zip(maps, cubical_pairs(maps, "gudhi"), cubical_pairs(maps, "cripser"),
                       strict=True):
        assert _values(m, a) == _values(m, b)


def test_cubical_errors():
    with pytest.raises(ValueError, match="shape \\(n_maps, H, W\\)"):
        cubical_pairs(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="NaN"):
        cubical_pairs(np.full((1, 3, 3), np.nan))
    with pytest.raises(ValueError, match="unknown backend"):
        cubical_pairs(np.zeros((1, 3, 3)), backend="dionysus")


# -- topological embedding --------------------------------------------------------------
@pytest.mark.parametrize("backend", ["numba", "gudhi"])
@pytest.mark.parametrize("normalize", ["none", "mass"])
def test_te_gradient_matches_finite_differences(normalize, backend):
    a = torch.as_tensor(np.random.default_rng(2).normal(size=(2, 3, 6, 6)))
    te = TopologicalEmbedding(resolution=4, normalize=normalize, backend=backend).fit(a)
    a.requires_grad_(True)
    assert torch.autograd.gradcheck(te.embed, (a,), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("weighting", ["none", "persistence"])
def test_te_is_the_same_with_every_backend(weighting):
    """The numba backend's TE equals the library backends' on float32 ReLU activations
    (ties at zero: equal-valued pixels may differ, values may not), and so does its
    gradient where no two pixels tie (at a tie it picks another, equally valid pixel)."""
    rng = np.random.default_rng(5)
    normal = rng.normal(size=(4, 3, 12, 12))
    for maps, compare_grad in ((np.maximum(normal, 0), False), (normal, True)):
        acts = torch.as_tensor(maps, dtype=torch.float32)
        out = {}
        for backend in BACKENDS:
            te = TopologicalEmbedding(weighting=weighting, backend=backend).fit(acts)
            a = acts.clone().requires_grad_(True)
            t = te.embed(a)
            (t * torch.arange(64.0)).sum().backward()
            out[backend] = [te.birth_grid_, te.pers_grid_, t.detach().numpy()] + (
                [a.grad.numpy()] if compare_grad else [])
        for backend in BACKENDS[1:]:
            for x, y in zip(out["numba"], out[backend], strict=True):
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("weighting", ["none", "persistence"])
def test_persistence_image_is_eq2(weighting, grouped):
    """All images of a batch at once equal Eq. 2 summed point by point (maps may have no
    points, and points need not be grouped by map: both layouts are checked)."""
    rng = np.random.default_rng(6)
    mi = rng.permutation(np.repeat([0, 2, 3], [5, 1, 7]))
    mi = np.sort(mi) if grouped else mi
    birth, pers = rng.normal(size=mi.size), rng.uniform(0.1, 2.0, size=mi.size)
    gb, gp, sigma = np.linspace(-2, 2, 4), np.linspace(0, 2.5, 4), 0.7
    got = persistence_image(torch.as_tensor(mi), torch.as_tensor(birth), torch.as_tensor(pers),
                            4, torch.as_tensor(gb), torch.as_tensor(gp), sigma, weighting,
                            pers_scale=2.0).numpy()
    want = np.zeros((4, 4, 4))
    for m, b, p in zip(mi, birth, pers, strict=True):
        w = p / 2.0 if weighting == "persistence" else 1.0
        for i in range(4):
            for j in range(4):
                want[m, i, j] += w * np.exp(-((gb[j] - b) ** 2 + (gp[i] - p) ** 2) / (2 * sigma**2))
    np.testing.assert_allclose(got, want.reshape(4, 16), rtol=1e-12, atol=0)


def test_tal_step_time_takes_arrays_and_tensors_on_the_networks_device():
    """Both steps are timed (positive medians) for an array batch and for a tensor one
    (moved to the network's device, here the CPU), and the backend is the resolved one."""
    from topofl_lib.deep import make_model
    from topofl_lib.fedtopo import tal_step_time

    torch.manual_seed(0)
    net = make_model("fmnist_cnn")
    X = np.random.default_rng(0).uniform(size=(4, 1, 28, 28)).astype(np.float32)
    for batch in (X, torch.from_numpy(X)):
        cost = tal_step_time(net, batch, "conv1", repeats=2)
        assert cost["tal_seconds"] > 0 and cost["ce_seconds"] > 0
        assert (cost["batch"], cost["block"], cost["backend"]) == (4, "conv1", "numba")


def test_te_shape_and_invariances():
    a = torch.as_tensor(np.random.default_rng(3).normal(size=(5, 4, 10, 10)))
    te = TopologicalEmbedding().fit(a)
    t = te.transform(a)
    assert t.shape == (5, 64)
    np.testing.assert_allclose(t.sum(axis=1), 1.0)  # mass-normalised channel mean
    np.testing.assert_allclose(te.transform(a[:, [2, 0, 3, 1]]), t)  # channel order
    np.testing.assert_allclose(te.transform(a.transpose(2, 3)), t, atol=1e-12)  # transpose
    np.testing.assert_allclose(te.transform(a[1:3]), t[1:3])  # per sample


def test_te_flows_gradient_to_network_weights():
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU())
    x = torch.randn(3, 1, 10, 10, generator=torch.Generator().manual_seed(0))
    te = TopologicalEmbedding(resolution=4).fit(net(x).detach())
    (te.embed(net(x)) ** 2).sum().backward()
    assert net[0].weight.grad is not None and net[0].weight.grad.abs().sum() > 0


def test_te_errors():
    with pytest.raises(ValueError, match="not fitted"):
        TopologicalEmbedding().embed(torch.zeros(1, 1, 4, 4))
    with pytest.raises(ValueError, match="shape \\(n_samples, channels, H, W\\)"):
        TopologicalEmbedding().fit(np.zeros((4, 4)))
    with pytest.raises(ValueError, match="unknown weighting"):
        TopologicalEmbedding(weighting="gauss").fit(np.zeros((1, 1, 4, 4)))
    with pytest.raises(ValueError, match="homology_dims"):
        TopologicalEmbedding(homology_dims=(2,)).fit(np.zeros((1, 1, 4, 4)))


# -- TGBS -------------------------------------------------------------------------------
class _Noise(nn.Module):
    """Ignores its input: class-independent random maps."""

    def forward(self, x):
        g = torch.Generator().manual_seed(0)
        return torch.randn(x.shape, generator=g)


def _rings_and_discs(n_per_class=30, size=16, seed=0):
    """Class 0: a dark ring (one H1 class); class 1: a dark disc (no H1), random places."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:size, :size]
    X, y = [], []
    for c in (0, 1):
        for _ in range(n_per_class):
            cy, cx = rng.uniform(6, size - 6, size=2)
            r = np.hypot(yy - cy, xx - cx)
            radius = rng.uniform(3.0, 4.5)
            img = -np.exp(-((r - radius) ** 2) / 2) if c == 0 else -np.exp(-(r**2) / 8)
            X.append(img[None])
            y.append(c)
    return torch.as_tensor(np.array(X), dtype=torch.float32), np.array(y)


def test_tgbs_picks_the_separable_block():
    net = BlockNet({"signal": nn.Identity(), "noise": _Noise()}, nn.Flatten(), nn.Identity())
    X, y = _rings_and_discs()
    tgbs = TopologyGuidedBlockScreening(n_pairs=200, metrics=("pi_euclidean", "bottleneck"),
                                        random_state=0).fit(net, X, y)
    scores = tgbs.scores_.set_index("block")["auc"]
    assert tgbs.best_block_ == "signal"
    assert scores["signal"] > 0.9
    assert abs(scores["noise"] - 0.5) < 0.1


def test_tgbs_errors():
    net = BlockNet({"a": nn.Identity()}, nn.Flatten(), nn.Identity())
    X, y = _rings_and_discs(5)
    with pytest.raises(ValueError, match="unknown metric"):
        TopologyGuidedBlockScreening(metrics=("l1",)).fit(net, X, y)
    with pytest.raises(ValueError, match="unknown block"):
        TopologyGuidedBlockScreening(blocks=["b"]).fit(net, X, y)
    with pytest.raises(ValueError, match="two classes"):
        TopologyGuidedBlockScreening().fit(net, X, np.zeros(len(y)))


def test_tgbs_over_seeds_checks_seeds_like_every_runner():
    from topofl_lib.deep import load_image_dataset
    from topofl_lib.studies.fedtopo import tgbs_over_seeds

    data = load_image_dataset("digits", n_train=200, n_test=50, random_state=0)
    with pytest.raises(ValueError, match="seeds is empty"):
        tgbs_over_seeds(data, [], architecture="digits_cnn")
    with pytest.raises(TypeError, match="seeds must be an iterable of ints"):
        tgbs_over_seeds(data, 3, architecture="digits_cnn")


# -- schedules --------------------------------------------------------------------------
def _traj(strategy, losses, rounds=2, epochs=3, steps=4, alpha_min=0.1, **kw):
    sched = AlphaSchedule(strategy, **kw)
    return sched.trajectory(np.broadcast_to(losses, rounds * epochs * steps), rounds,
                            epochs, steps, alpha_min).reshape(rounds, epochs, steps)


def _lam(r, e, warm=2, decay=0.05):
    return min(1.0, (e + 1) / warm) * np.exp(-decay * r)


def test_warmup_schedule_is_warmup_times_decay():
    a = _traj("warmup", 0.5)
    for r in range(2):
        for e in range(3):
            np.testing.assert_allclose(a[r, e], 0.7 * _lam(r + 1, e))


@pytest.mark.parametrize("loss", [0.3, 0.6])
def test_linear_and_piecewise_inside_the_range(loss):
    eta = (loss - 0.1) / (0.75 + 1e-8)
    for strategy in ("linear", "piecewise"):
        a = _traj(strategy, loss)
        np.testing.assert_allclose(a[0, 0, 0], 0.2 * _lam(1, 0))  # alpha_init before data
        np.testing.assert_allclose(a[1, 2, 3], (0.1 + 0.6 * eta) * _lam(2, 2))


def test_piecewise_clips_and_linear_extrapolates():
    high_p, high_l = _traj("piecewise", 2.0), _traj("linear", 2.0)
    np.testing.assert_allclose(high_p[1, 2, 3], 0.7 * _lam(2, 2))
    assert high_l[1, 2, 3] > 0.7 * _lam(2, 2)
    np.testing.assert_allclose(_traj("piecewise", 0.0)[1, 2, 3], 0.1 * _lam(2, 2))


def test_smooth_schedule_uses_ewma_and_soft_exponent():
    losses = np.r_[np.full(12, 0.1), np.full(12, 0.85)]  # a jump in round 2
    sched = AlphaSchedule("smooth")
    a = sched.trajectory(losses, 2, 3, 4, alpha_min=0.1)
    smooth = 0.1
    for _ in range(12, 15):
        smooth = 0.2 * 0.85 + 0.8 * smooth
    eta = ((smooth - 0.1) / (0.75 + 1e-8)) ** 0.5
    np.testing.assert_allclose(a[15], (0.1 + 0.6 * eta) * _lam(2, 0))
    linear = AlphaSchedule("linear").trajectory(losses, 2, 3, 4, alpha_min=0.1)
    assert linear[15] > a[15]  # the moving window reacts faster than the EWMA


def test_imbalance_floor():
    assert imbalance_floor([0, 0, 50, 0]) == pytest.approx(0.2)
    assert imbalance_floor([5, 5, 5, 5]) == pytest.approx(0.0)
    assert 0 < imbalance_floor([40, 5, 5, 0]) < 0.2


def test_schedule_errors():
    with pytest.raises(ValueError, match="unknown strategy"):
        AlphaSchedule("cosine").start()
    with pytest.raises(ValueError, match="loss_range"):
        AlphaSchedule(loss_range=(0.9, 0.1)).start()


# -- FedTopo ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits_skew():
    return make_image_scenario("digits", "L", 3, param=0.5, n_train=600, random_state=0)


def _fedtopo(**kw):
    params = {"n_rounds": 2, "lr": 0.05, "local_epochs": 1, "block": "conv1",
              "model": TorchModel("digits_cnn", momentum=0.5), "tal_samples": 16,
              "tal_batch": 8, "tal_every": 2, "random_state": 0}
    params.update(kw)
    return FedTopo(**params)


def test_fedtopo_without_tal_is_fedavg(digits_skew):
    a = _fedtopo(tal=False).fit(digits_skew)
    b = FedAvg(n_rounds=2, lr=0.05, local_epochs=1,
               model=TorchModel("digits_cnn", momentum=0.5), random_state=0).fit(digits_skew)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_fedtopo_tal_changes_training_and_logs_schedule(digits_skew):
    est = _fedtopo(record_rounds=(1, 2)).fit(digits_skew)
    plain = _fedtopo(tal=False).fit(digits_skew)
    assert not np.array_equal(est.coef_, plain.coef_)
    log = est.tal_log_
    # TAL on every 2nd of the ceil(n_k / 32) steps of each client, in each of 2 rounds
    expected = 2 * sum(math.ceil(math.ceil(c.n_train / 32) / 2) for c in digits_skew.clients)
    assert log.shape == (expected, 5)
    assert np.all(log[:, 4] >= 0)
    assert set(est.snapshots_) == {1, 2}
    np.testing.assert_array_equal(est.snapshots_[2][0], est.coef_)
    # replaying each client's logged losses through the schedule gives the logged alphas
    sched = AlphaSchedule()
    for k in range(3):
        state = sched.start(est.alpha_floor_[k])
        for r, _, e, alpha, loss in log[log[:, 1] == k]:
            assert state.alpha(int(r), int(e)) == pytest.approx(alpha)
            state.observe(loss)


def test_fedtopo_is_deterministic(digits_skew):
    a = _fedtopo().fit(digits_skew)
    b = _fedtopo().fit(digits_skew)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.tal_log_, b.tal_log_)


def test_fedtopo_with_the_deferred_te_is_bit_identical(digits_skew, monkeypatch):
    """The GPU's TAL step (the TE's pairs in a thread while the cross-entropy's backward
    runs, then the TAL term's own backward) gives the same model and log, bit for bit,
    as one backward pass of the summed loss; forced here on the CPU."""
    import topofl_lib.fedtopo.algorithm as algorithm

    assert not algorithm._defers_tal(torch.device("cpu"))
    assert algorithm._defers_tal(torch.device("cuda", 0))
    plain = _fedtopo(block="conv2").fit(digits_skew)
    calls = []
    monkeypatch.setattr(algorithm, "_defers_tal", lambda device: calls.append(device) or True)
    deferred = _fedtopo(block="conv2").fit(digits_skew)
    assert len(calls) == len(plain.tal_log_) > 0
    np.testing.assert_array_equal(deferred.coef_, plain.coef_)
    np.testing.assert_array_equal(deferred.tal_log_, plain.tal_log_)


def test_deferred_embedding_equals_embed_and_raises_at_once():
    a = torch.as_tensor(np.random.default_rng(5).normal(size=(4, 3, 9, 9)),
                        dtype=torch.float32).requires_grad_()
    for kw in ({}, {"backend": "torch"}, {"backend": "gudhi"}, {"image_backend": "numba"}):
        te = TopologicalEmbedding(**kw).fit(a.detach())
        now = te.embed(a)
        later = te.embed_deferred(a)()
        assert torch.equal(now, later), kw
        (g_now,) = torch.autograd.grad(now.square().sum(), a)
        (g_later,) = torch.autograd.grad(te.embed_deferred(a)().square().sum(), a)
        assert torch.equal(g_now, g_later), kw
    for kw in ({}, {"image_backend": "numba"}):  # the pairs in a thread, and at once
        with pytest.raises(ValueError, match="NaN or infinite"):
            TopologicalEmbedding(**kw).fit(a.detach()).embed_deferred(a.detach() * float("nan"))
    with pytest.raises(ValueError, match="not fitted"):
        TopologicalEmbedding().embed_deferred(a)


def test_learner_gradient_takes_one_extra_term():
    learner = TorchModel("digits_cnn").make_learner(64, np.random.default_rng(0))
    data = learner.client_data(np.zeros((4, 64), np.float32), np.arange(4) % 2)
    with pytest.raises(ValueError, match="extra_loss or deferred_loss, not both"):
        learner.gradient(learner.init_params(), data, np.arange(4),
                         extra_loss=lambda net: 0, deferred_loss=lambda net: None)


def _fedtopo_digest() -> str:
    """SHA-256 of the models and TAL logs of FedTopo aligning conv1 and aligning conv2."""
    scenario = make_image_scenario("digits", "L", 3, param=0.5, n_train=600, random_state=0)
    h = hashlib.sha256()
    for block in ("conv1", "conv2"):
        est = _fedtopo(block=block).fit(scenario)
        h.update(est.coef_.tobytes())
        h.update(est.tal_log_.tobytes())
        h.update(np.asarray(est.history_["accuracy"]).tobytes())
    return h.hexdigest()


def test_fedtopo_is_bit_identical_across_processes():
    """Issue 15: a seed fixes every bit of a FedTopo run, both blocks, in this process and
    in a fresh one (the default backend's pairing depends on the values only)."""
    code = ("import sys; sys.path.insert(0, 'tests'); import test_fedtopo; "
            "print(test_fedtopo._fedtopo_digest())")
    root = Path(__file__).resolve().parent.parent
    fresh = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                           text=True, check=True).stdout.split()[-1]
    assert _fedtopo_digest() == fresh


def test_fedtopo_errors(digits_skew):
    with pytest.raises(ValueError, match="needs a network"):
        FedTopo().fit(digits_skew)
    with pytest.raises(ValueError, match="unknown block"):
        _fedtopo(block="layer2").fit(digits_skew)
    with pytest.raises(TypeError, match="schedule must be an AlphaSchedule"):
        _fedtopo(schedule="smooth").fit(digits_skew)


# -- experiment helpers -----------------------------------------------------------------
def test_deep_variants_labels():
    v = deep_variants(["FedAvg", "pFedMe", "pTopoFL", "FedTopo[linear]", "FedTopo@conv2",
                       "FedTopo w/o TAL"], local_epochs=3)
    assert v["FedAvg"][1]["model"].momentum == 0.9 and v["FedAvg"][1]["local_epochs"] == 3
    assert v["pFedMe"][1]["model"].momentum == 0.0
    assert v["pTopoFL"][1]["n_clusters"] == 3 and v["pTopoFL"][1]["augment"] is False
    assert v["FedTopo[linear]"][1]["schedule"].strategy == "linear"
    assert v["FedTopo@conv2"][1]["block"] == "conv2"
    assert v["FedTopo w/o TAL"][1]["tal"] is False
    with pytest.raises(ValueError, match="unknown schedule 'cosine'"):
        deep_variants(["FedTopo[cosine]"])
    with pytest.raises(ValueError, match="unknown method label"):
        deep_variants(["FedUnknown"])


def test_fedtopo_at_its_default_block_is_plain_fedtopo():
    """FedTopo@conv1 names the configuration plain FedTopo runs (block conv1 is the
    default): the same parameters, hence the same run-store key; another block differs,
    and a block given for every FedTopo run moves what counts as the default."""
    from topofl_lib.run_cache import fingerprint

    opts = {"fedtopo": {"tal_every": 2}, "schedule": {"loss_range": (0.1, 0.2)}}
    v = deep_variants(["FedTopo", "FedTopo@conv1", "FedTopo@conv2"], **opts)
    assert fingerprint(v["FedTopo@conv1"]) == fingerprint(v["FedTopo"])
    assert fingerprint(v["FedTopo@conv2"]) != fingerprint(v["FedTopo"])
    assert v["FedTopo@conv2"][1]["block"] == "conv2"
    moved = deep_variants(["FedTopo", "FedTopo@conv1"], fedtopo={"block": "conv2"})
    assert moved["FedTopo"][1]["block"] == "conv2" and moved["FedTopo@conv1"][1]["block"] == "conv1"


def test_calibrate_loss_range():
    log = np.zeros((101, 5))
    log[1:, 4] = np.linspace(0.01, 1.0, 100)
    lo, hi = calibrate_loss_range(log)
    assert lo == pytest.approx(np.percentile(log[1:, 4], 10))
    assert hi == pytest.approx(np.percentile(log[1:, 4], 90))
    with pytest.raises(ValueError, match="two positive TAL values"):
        calibrate_loss_range(np.zeros((5, 5)))


def test_block_table_merges_auc_and_accuracy():
    tgbs = pd.DataFrame({"block": ["conv1", "conv2"], "seed": [0, 0], "auc": [0.6, 0.5]})
    final = pd.DataFrame({"method": ["FedTopo@conv1", "FedTopo@conv2", "FedAvg"],
                          "seed": [0, 0, 0], "accuracy": [0.8, 0.7, 0.75]})
    t = block_table(tgbs, final).set_index("block")
    assert t.loc["conv1", "auc"] == pytest.approx(60.0)
    assert t.loc["conv2", "accuracy"] == pytest.approx(70.0)


def test_auto_backend_is_numba_else_by_map_size(monkeypatch):
    from topofl_lib.topology import cubical

    assert cubical.resolve_backend("auto", 8 * 8) == "numba"
    assert cubical.resolve_backend("gudhi", 24 * 24) == "gudhi"
    real = importlib.util.find_spec
    monkeypatch.setattr(cubical.importlib.util, "find_spec",
                        lambda name: None if name == "numba" else real(name))
    assert cubical.resolve_backend("auto", 8 * 8) == "gudhi"
    assert cubical.resolve_backend("auto", 24 * 24) == (
        "cripser" if "cripser" in BACKENDS else "gudhi")
    with pytest.raises(ImportError, match="needs the numba package"):
        cubical.resolve_backend("numba")


def test_imbalance_floor_refuses_negative_counts():
    with pytest.raises(ValueError, match="non-negative counts"):
        imbalance_floor([-1, 3])


def test_pixel_noise_sd_is_the_pixel_sd_in_standardised_units():
    """sd on [0, 1] pixels over the dataset's pixel_std, rounded as the run's parameter;
    a data set built by hand (pixel_std 1) keeps the sd; a bad sd is refused by name."""
    from types import SimpleNamespace

    assert pixel_noise_sd(SimpleNamespace(pixel_std=0.25)) == 2.0
    assert pixel_noise_sd(SimpleNamespace(pixel_std=1.0), 0.3) == 0.3
    assert pixel_noise_sd(SimpleNamespace(pixel_std=0.3), 0.1) == 0.333
    for bad, error in ((0.0, ValueError), (float("nan"), ValueError), ("0.5", TypeError)):
        with pytest.raises(error, match="sd"):
            pixel_noise_sd(SimpleNamespace(pixel_std=0.3), bad)
