"""pTopoFL on real Flower clients: the shared server code, parity with the in-process
engine, and a SuperNode killed mid-training.

The two federation tests start a SuperLink and eight SuperNodes as processes on
127.0.0.1 (``LocalFederation``); every process is stopped when the test ends, also on
failure. They are skipped, saying why, where Flower is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import time

import numpy as np
import pytest

import topofl_lib as tf
from topofl_lib.federated import PTopoFL
from topofl_lib.federated.aggregation import (
    aggregate_round,
    blend_clusters,
    cluster_models,
    server_state,
)
from topofl_lib.federated.base import client_streams
from topofl_lib.federated.ptopofl import signature_drift

needs_flower = pytest.mark.skipif(importlib.util.find_spec("flwr") is None,
                                  reason="Flower is not installed: pip install -e .[flower]")


# -- the server code both engines share -------------------------------------------------
def test_aggregate_round_all_responding_is_eq6_then_eq7():
    rng = np.random.default_rng(0)
    local, labels = rng.normal(size=(6, 4)), np.array([0, 1, 0, 1, 1, 0])
    weights = np.array([0.5, 0.2, 0.3, 0.3, 0.5, 0.2])
    sizes = np.bincount(labels)
    expected = blend_clusters(cluster_models(local, labels, weights), sizes, 0.3)
    np.testing.assert_array_equal(aggregate_round(local, labels, weights, sizes, 0.3), expected)
    everyone = aggregate_round(local, labels, weights, sizes, 0.3, previous=expected * 0,
                               responded=np.ones(6, bool))
    np.testing.assert_allclose(everyone, expected)


def test_aggregate_round_drops_missing_clients():
    rng = np.random.default_rng(1)
    local, labels = rng.normal(size=(5, 3)), np.array([0, 0, 0, 1, 1])
    weights = np.array([0.2, 0.3, 0.5, 0.4, 0.6])
    previous = rng.normal(size=(2, 3))
    responded = np.array([True, False, True, False, False])
    local[1] = np.nan  # whatever a dead client "sent" must not be read
    out = aggregate_round(local, labels, weights, [3, 2], 0.0, previous, responded)
    np.testing.assert_allclose(out[0], (0.2 * local[0] + 0.5 * local[2]) / 0.7)
    np.testing.assert_array_equal(out[1], previous[1])  # nobody replied: keep the model
    with pytest.raises(ValueError, match="no responding client and no previous model"):
        aggregate_round(local, labels, weights, [3, 2], 0.0, None, responded)


def test_server_state_is_what_ptopofl_uses():
    sc = tf.make_healthcare(random_state=0)
    est = PTopoFL(n_rounds=1, random_state=0).fit(sc)
    st = server_state(est.descriptors_, [c.n_train for c in sc.clients], 2, 2.0)
    np.testing.assert_array_equal(st["labels"], est.labels_)
    np.testing.assert_allclose(st["weights"], est.weights_)
    np.testing.assert_allclose(st["trust"], est.trust_)


def test_signature_drift_known_value():
    sig = np.array([[[2.0, 0.0], [1.0, 0.0]], [[2.0, 0.0], [0.0, 3.0]], [[2.0, 0.0], [5.0, 0.0]]])
    np.testing.assert_allclose(signature_drift(sig), [0.0, np.sqrt(2) / 3])
    with pytest.raises(ValueError, match="n_rounds, K, dim"):
        signature_drift(np.zeros((3, 4)))


def test_client_streams_and_per_client_mode():
    a, sa = client_streams(7, 3)
    b, sb = client_streams(7, 3)
    assert sa == sb and np.array_equal(a.permutation(50), b.permutation(50))
    assert client_streams(7, 4)[1] != sa
    sc = tf.make_healthcare(random_state=0)
    one = PTopoFL(n_rounds=3, random_state=5, rng_streams="per_client").fit(sc)
    two = PTopoFL(n_rounds=3, random_state=5, rng_streams="per_client").fit(sc)
    shared = PTopoFL(n_rounds=3, random_state=5).fit(sc)
    np.testing.assert_array_equal(one.cluster_models_, two.cluster_models_)
    assert not np.array_equal(one.cluster_models_, shared.cluster_models_)
    with pytest.raises(ValueError, match="rng_streams='per_client' needs an int"):
        PTopoFL(rng_streams="per_client").fit(sc)
    with pytest.raises(ValueError, match="unknown rng_streams"):
        PTopoFL(rng_streams="global", random_state=0).fit(sc)


# -- a real federation ------------------------------------------------------------------
@pytest.fixture(scope="module")
def healthcare_files(tmp_path_factory):
    from topofl_lib.flower import write_partitions

    sc = tf.make_healthcare(random_state=0)
    return sc, write_partitions(sc, tmp_path_factory.mktemp("clients"))


@needs_flower
@pytest.mark.parametrize("method", ["pTopoFL", "FedProx"])
def test_flower_run_matches_in_process_engine(healthcare_files, tmp_path, method):
    """Same seed, same data: the final per-client AUCs agree to 1e-9."""
    from topofl_lib.flower import LocalFederation, in_process_reference

    sc, paths = healthcare_files
    rounds = 3 if method == "pTopoFL" else 2  # FedProx: the same app, a shorter check
    cfg = {"num-rounds": rounds, "seed": 11, "eval-every": rounds, "round-timeout": 120.0}
    ref = in_process_reference(sc, method, **cfg)
    with LocalFederation(paths, tmp_path) as fed:
        res = fed.run(method, timeout=600, method=method, **cfg)
    scores = res["rounds"][-1]["scores"]
    assert sorted(int(k) for k in scores) == list(range(8))
    flower_auc = np.array([scores[str(k)][0] for k in range(8)])
    np.testing.assert_allclose(flower_auc, ref.history_["client_auc"][-1], rtol=0, atol=1e-9)
    if method == "pTopoFL":
        assert res["labels"] == ref.labels_.tolist()
        np.testing.assert_allclose(res["drift"], ref.drift_, atol=1e-12)  # Eq. 9, tracked
        assert res["descriptor_bytes"] == 48 * 8           # float64, sent once
        assert res["model_bytes"] == (20 + 4 + 1) * 8      # 20 features + 4 augmented + bias
    else:
        assert res["descriptor_bytes"] == 0 and res["model_bytes"] == (20 + 1) * 8


@needs_flower
def test_killed_supernode_round_completes_and_node_rejoins(healthcare_files, tmp_path):
    from topofl_lib.flower import LocalFederation

    _, paths = healthcare_files
    with LocalFederation(paths, tmp_path) as fed:
        proc, path = fed.submit("fault", **{"num-rounds": 4, "round-timeout": 40.0,
                                            "eval-every": 4})
        log = tmp_path / "fault.log"

        def wait_for(text, timeout=300.0):
            deadline = time.monotonic() + timeout
            while text not in log.read_text(errors="ignore"):
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise TimeoutError(f"{text!r} not in the run log")
                time.sleep(0.3)

        wait_for("[ROUND 2/4]")
        time.sleep(1.0)
        fed.kill_node(5)       # dies in the middle of round 2
        wait_for("[ROUND 3/4]")
        fed.start_node(5)      # comes back
        assert proc.wait(timeout=600) == 0
    res = json.loads(path.read_text())
    rounds = {r["round"]: r for r in res["rounds"]}
    assert len(rounds) == 4
    assert 5 in rounds[2]["missing"] and rounds[2]["replied"] == [0, 1, 2, 3, 4, 6, 7]
    assert rounds[4]["missing"] == []                      # it rejoined
    assert sorted(rounds[4]["scores"]) == [str(k) for k in range(8)]
    assert "no valid reply from clients [5]" in log.read_text(errors="ignore")
