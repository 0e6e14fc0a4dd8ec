"""The explorer's computations and widget wiring (no browser; see test_explorer_browser)."""

from __future__ import annotations

import numpy as np
import persim
import pytest

from topofl_lib.explorer import ExplorerData, PersistenceExplorer, gfc_field


@pytest.fixture(scope="module")
def hc():
    return ExplorerData("healthcare", random_state=0)


def test_explorer_data_shapes(hc):
    assert hc.n_clients == 8
    assert hc.descriptors.shape == (8, 48)
    np.testing.assert_allclose(hc.distances, hc.distances.T)
    assert sorted(hc.dendrogram["leaves"]) == list(range(8))
    assert sum(c.adversarial for c in hc.clients) == 2
    assert all(c.betti.shape == (2, hc.grid.size) for c in hc.clients)


@pytest.mark.parametrize("M,beta,tau", [(1, 0.0, 2.0), (2, 0.3, 2.0), (3, 1.0, 0.5)])
def test_server_rules(hc, M, beta, tau):
    s = hc.server(M, beta, tau)
    assert s["cluster"].nunique() == M
    np.testing.assert_allclose(s.groupby("cluster")["weight"].sum(), 1.0)
    np.testing.assert_allclose(s["consensus"].sum(), 1.0)
    np.testing.assert_allclose(s["own_model"], (1 - beta) * s["weight"] + beta * s["consensus"])
    assert ((s["trust"] < 1) == (s["z"] > tau)).all()


def test_matching_is_persims_optimum(hc):
    m = hc.matching(0, 1, dim=1)
    assert m["wasserstein"] == pytest.approx(persim.wasserstein(m["a"], m["b"]))
    assert len(m["segments"]) >= max(len(m["a"]), len(m["b"]))
    assert m["descriptor_distance"] == pytest.approx(hc.distances[0, 1])
    assert hc.matching(2, 2, dim=0)["wasserstein"] == pytest.approx(0.0)


def test_gfc_field():
    d = ExplorerData("gfc:blobs10d", n_clients=5, random_state=0)
    f = gfc_field(d.gfc_clients, d.gfc_k, epsilon=10.0, resolution=20)
    assert f["projected"] and f["log_energy"].shape == (20, 20)
    assert np.all(np.isfinite(f["log_energy"]))
    assert len(f["peaks"]) == len(f["persistence"]) >= 1
    assert f["centers"].shape == (4, 2)


def test_explorer_errors(hc):
    with pytest.raises(ValueError, match="unknown scenario"):
        ExplorerData("cifar10")
    with pytest.raises(ValueError, match="n_clusters must be <= 8"):
        hc.server(9, 0.3, 2.0)
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        gfc_field([np.zeros((20, 2))] * 2, 2, epsilon=0.0)


def test_widgets_update_figures_in_place():
    app = PersistenceExplorer("healthcare", random_state=0)
    client, server = app.figures["client"], app.figures["server"]
    h1 = np.array(client.data[1].y)
    weights = np.array(server.data[0].y)
    app.controls["client"].value = 4
    app.controls["n_clusters"].value = 3
    assert app.figures["client"] is client  # the same widget, new data
    assert not np.array_equal(client.data[1].y, h1)
    assert not np.array_equal(server.data[0].y, weights)
    assert "cluster 2" in app.status["server"].value
    app.controls["dim"].value = 0
    assert "H0" in app.status["pair"].value
    # the label names the distance persim computes (tests/test_descriptor.py pins it)
    assert "1-Wasserstein distance (Euclidean ground metric) of the H0 diagrams" in \
        app.status["pair"].value
    app.controls["scenario"].value = "gfc:blobs2d"
    assert app.data.n_clients == 10 and app.controls["n_clusters"].max == 10
    assert len(app.controls["client"].options) == 10
    z = np.array(app.figures["gfc"].data[0].z)
    app.controls["epsilon"].value = 100.0
    assert not np.array_equal(app.figures["gfc"].data[0].z, z)
    assert "peaks" in app.status["gfc"].value
