"""The Flower ClientApp: one hospital of the federation.

Each SuperNode is started with ``--node-config "partition-id=<k> data-path=<file.npz>"``
and holds only that client's data (``X_train, y_train, X_test, y_test``, written by
:func:`topofl_lib.flower.write_partitions`). Everything the client computes is
``topofl_lib``'s client code:

* ``query``: its partition id, size and number of features, and for pTopoFL its 48-dim
  descriptor (:func:`~topofl_lib.topology.client_topology` on an ``n-sub`` subsample
  drawn with its own seed), sent as a MetricRecord;
* ``train``: local SGD (:func:`~topofl_lib.federated.local.local_sgd` on the logistic
  learner, FedProx's proximal term when ``proximal-mu`` > 0) from the model the server
  sent, on its features (with pTopoFL's Sec. 3.2 augmentation when ``augment``); with
  signature tracking it also sends its current descriptor (Sec. 3.5);
* ``evaluate``: AUC and accuracy of the model it deploys on its own test data.

Random numbers: the client's generator is :func:`~topofl_lib.federated.client_streams`
of ``(seed, partition-id)``, advanced by replaying the draws of earlier rounds, so the
client is stateless across messages (a restarted node continues the same stream) and
draws exactly what the in-process engine with ``rng_streams="per_client"`` draws.
"""

from __future__ import annotations

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from ..federated.base import client_streams
from ..federated.local import LogisticLearner, local_sgd
from ..federated.ptopofl import augment_features, augmentation_stats
from ..topology.descriptor import client_topology

app = ClientApp()


def _load(context: Context) -> tuple[int, dict]:
    pid = int(context.node_config["partition-id"])
    with np.load(str(context.node_config["data-path"])) as f:
        data = {k: f[k] for k in f.files}
    return pid, data


def _topology(data: dict, seed: int, pid: int, n_sub: int):
    return client_topology(data["X_train"], n_sub, strict=False,
                           random_state=client_streams(seed, pid)[1])


def _features(data: dict, X: np.ndarray, cfg, seed: int, pid: int) -> np.ndarray:
    if not bool(cfg["augment"]):
        return X
    stats = augmentation_stats(data["X_train"], _topology(data, seed, pid, int(cfg["n-sub"])))
    return augment_features(X, stats)


@app.query()
def query(msg: Message, context: Context) -> Message:
    pid, data = _load(context)
    cfg = msg.content["config"]
    metrics = MetricRecord({"partition-id": pid, "num-examples": int(data["y_train"].size),
                            "n-features": int(data["X_train"].shape[1])})
    if bool(cfg["descriptor"]):  # only pTopoFL's server asks for it
        phi = _topology(data, int(cfg["seed"]), pid, int(cfg["n-sub"]))[0]
        metrics["descriptor"] = [float(v) for v in phi]
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)


@app.train()
def train(msg: Message, context: Context) -> Message:
    pid, data = _load(context)
    cfg = msg.content["config"]
    seed, rnd = int(cfg["seed"]), int(cfg["server-round"])
    epochs, n = int(cfg["local-epochs"]), int(data["y_train"].size)
    rng = client_streams(seed, pid)[0]
    for _ in range((rnd - 1) * epochs):  # replay earlier rounds' mini-batch orders
        rng.permutation(n)
    learner = LogisticLearner(float(cfg["C"]))
    xy = learner.client_data(_features(data, data["X_train"], cfg, seed, pid), data["y_train"])
    w0 = msg.content["arrays"].to_numpy_ndarrays()[0]
    mu = float(cfg["proximal-mu"])
    extra = (lambda w: mu * (w - w0)) if mu > 0 else None
    w, _ = local_sgd(w0, lambda w, idx: learner.gradient(w, xy, idx), n, lr=float(cfg["lr"]),
                     epochs=epochs, batch_size=int(cfg["batch-size"]), rng=rng, extra=extra)
    metrics = MetricRecord({"num-examples": n, "partition-id": pid})
    if bool(cfg["descriptor"]) and bool(cfg["track-signatures"]):  # Sec. 3.5 signature
        phi = _topology(data, seed, pid, int(cfg["n-sub"]))[0]
        metrics["descriptor"] = [float(v) for v in phi]
    return Message(RecordDict({"arrays": ArrayRecord([w]), "metrics": metrics}), reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    pid, data = _load(context)
    cfg = msg.content["config"]
    w = msg.content["arrays"].to_numpy_ndarrays()[0]
    X = _features(data, data["X_test"], cfg, int(cfg["seed"]), pid)
    auc, acc = LogisticLearner(float(cfg["C"])).evaluate(w, X, data["y_test"])
    metrics = MetricRecord({"auc": float(auc), "accuracy": float(acc), "partition-id": pid,
                            "num-examples": int(data["y_test"].size)})
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)
