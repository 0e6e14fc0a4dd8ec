"""The Flower ClientApp: one hospital of the federation.

Each SuperNode is started with ``--node-config "partition-id=<k> data-path=<file.npz>"``
and holds only that client's data (``X_train, y_train, X_test, y_test``, written by
:func:`topofl_lib.flower.write_partitions`). Everything the client computes is
``topofl_lib``'s client code:

* ``query``: its partition id, size, number of features and model width (the learner's
  parameter count on its features, after pTopoFL's augmentation when on), and for
  pTopoFL its descriptor (:func:`~topofl_lib.topology.client_topology` on an ``n-sub``
  subsample drawn with its own seed), sent as a MetricRecord;
* ``train``: local SGD (:func:`~topofl_lib.federated.local.local_sgd` on the logistic
  learner, FedProx's proximal term when ``proximal-mu`` > 0) from the model the server
  sent, on its features (with pTopoFL's Sec. 3.2 augmentation when ``augment``); with
  signature tracking it also sends its current descriptor (Sec. 3.5);
* ``evaluate``: AUC and accuracy of the model it deploys on its own test data.

Random numbers: the client's generator is :func:`~topofl_lib.federated.client_streams`
of ``(seed, partition-id)``, advanced by replaying the draws of earlier rounds, so the
client is stateless across messages (a restarted node continues the same stream) and
draws exactly what the in-process engine with ``rng_streams="per_client"`` draws.

Imports: only what the learner needs (numpy, scipy, ripser and Flower); no
scikit-learn, pandas, plotly or torch.

Timing (``timing`` run config): a training reply also carries when the message reached
the SuperNode, when this process started, when this module was imported, and when the
local work began and ended (wall-clock seconds), for the per-phase breakdown of a round.

Fault injection, for testing the server's checks: the node-config entry ``fault`` makes
training replies malformed: ``"nan"`` (NaN in the model), ``"length"`` (one parameter
too many) or ``"descriptor"`` (a descriptor one entry short); ``fault-round`` (default:
every round) limits it to one round.
"""

from __future__ import annotations

import os
import time

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from ..federated.augmentation import augment_features, augmentation_stats
from ..federated.local import LogisticLearner, client_streams, local_sgd
from ..topology.descriptor import client_topology
from .polling import RECEIVED_AT

app = ClientApp()

#: Values of the ``fault`` node-config entry.
FAULTS = ("nan", "length", "descriptor")


def load_partition(context: Context) -> tuple[int, dict]:
    """The node's partition id and data (its ``node_config``'s ``partition-id`` and
    ``data-path``, an ``.npz`` written by :func:`~topofl_lib.flower.write_partitions`,
    read without pickle).

    Parameters
    ----------
    context : flwr.app.Context
        The node's context.

    Returns
    -------
    pid : int
    data : dict of str to ndarray
        ``X_train``, ``y_train``, ``X_test``, ``y_test``.
    """
    pid = int(context.node_config["partition-id"])
    with np.load(str(context.node_config["data-path"]), allow_pickle=False) as f:
        data = {k: f[k] for k in f.files}
    return pid, data


def _topology(data: dict, seed: int, pid: int, n_sub: int):
    return client_topology(data["X_train"], n_sub, strict=False,
                           random_state=client_streams(seed, pid)[1])


def _features(data: dict, X: np.ndarray, cfg, seed: int, pid: int, topology=None):
    if not bool(cfg["augment"]):
        return X
    topology = _topology(data, seed, pid, int(cfg["n-sub"])) if topology is None else topology
    return augment_features(X, augmentation_stats(data["X_train"], topology))


def _process_start() -> float:
    """Wall-clock time this process started (Linux ``/proc``; NaN elsewhere)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = float(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, IndexError, ValueError):  # pragma: no cover - not Linux
        return float("nan")
    return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))


def _timing(t_start: float) -> dict:
    """Per-phase timestamps of this message (``timing`` run config).

    ``t-delivered`` is when the node had the message: when the SuperNode stored it, set
    by the fast-waits adapter's executor
    (:func:`~topofl_lib.flower.fast_waits.start_executor`); NaN under Flower's own
    executor, which does not say.
    """
    return {"t-delivered": float(os.environ.get(RECEIVED_AT, "nan")),
            "t-process": _process_start(), "t-imported": _IMPORTED_AT, "t-start": t_start,
            "t-end": time.time()}


def _inject_fault(context: Context, rnd: int, w: np.ndarray, metrics: MetricRecord):
    """Corrupt this reply as the node-config's ``fault`` says (testing only)."""
    fault = context.node_config.get("fault")
    if fault is None or int(context.node_config.get("fault-round", rnd)) != rnd:
        return w
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; expected one of {list(FAULTS)}")
    if fault == "nan":
        w = w.copy()
        w[0] = np.nan
    elif fault == "length":
        w = np.append(w, 0.0)
    elif "descriptor" in metrics:
        metrics["descriptor"] = list(metrics["descriptor"])[:-1]
    return w


def local_model(data: dict, cfg, pid: int, w0: np.ndarray, topology=None) -> np.ndarray:
    """One round of local SGD from ``w0`` (FedProx's proximal term when ``proximal-mu``
    > 0), exactly as the in-process engine trains client ``pid``.

    The client's mini-batch generator is :func:`~topofl_lib.federated.client_streams` of
    ``(seed, pid)``, advanced by replaying the draws of the rounds before
    ``server-round``.

    Parameters
    ----------
    data : dict
        The client's arrays (``X_train``, ``y_train``, ...).
    cfg : mapping
        The run configuration sent with the message (``seed``, ``server-round``, ``lr``,
        ``local-epochs``, ``batch-size``, ``C``, ``augment``, ``n-sub``; ``proximal-mu``
        optional).
    pid : int
        The client's partition id.
    w0 : ndarray
        The model the server sent.
    topology : tuple, optional
        The client's :func:`~topofl_lib.topology.client_topology` when already computed
        (pTopoFL's augmentation).

    Returns
    -------
    ndarray
        The trained model.
    """
    seed, rnd = int(cfg["seed"]), int(cfg["server-round"])
    epochs, n = int(cfg["local-epochs"]), int(data["y_train"].size)
    rng = client_streams(seed, pid)[0]
    for _ in range((rnd - 1) * epochs):  # replay earlier rounds' mini-batch orders
        rng.permutation(n)
    learner = LogisticLearner(float(cfg["C"]))
    xy = learner.client_data(_features(data, data["X_train"], cfg, seed, pid, topology),
                             data["y_train"])
    mu = float(cfg.get("proximal-mu", 0.0))
    extra = (lambda w: mu * (w - w0)) if mu > 0 else None
    w, _ = local_sgd(w0, lambda w, idx: learner.gradient(w, xy, idx), n, lr=float(cfg["lr"]),
                     epochs=epochs, batch_size=int(cfg["batch-size"]), rng=rng, extra=extra)
    return w


@app.query()
def query(msg: Message, context: Context) -> Message:
    """Report the client's sizes and, for pTopoFL, its topological descriptor (round 0).

    Parameters
    ----------
    msg : flwr.app.Message
        The server's query; its ``"config"`` record carries the client run configuration.
    context : flwr.app.Context
        The node's context; ``node_config`` holds ``partition-id`` and ``data-path``.

    Returns
    -------
    flwr.app.Message
        The reply: a ``"metrics"`` record with the partition id and the numbers of training
        examples, features and model parameters, plus ``"descriptor"`` when the config asks for it.
    """
    pid, data = load_partition(context)
    cfg = msg.content["config"]
    seed = int(cfg["seed"])
    topology = _topology(data, seed, pid, int(cfg["n-sub"])) if bool(cfg["descriptor"]) else None
    X = _features(data, data["X_train"][:1], cfg, seed, pid, topology)
    learner = LogisticLearner(float(cfg["C"]))
    width = learner.init_params(learner.client_data(X, data["y_train"][:1])).size
    metrics = MetricRecord({"partition-id": pid, "num-examples": int(data["y_train"].size),
                            "n-features": int(data["X_train"].shape[1]), "n-params": int(width)})
    if topology is not None:  # only pTopoFL's server asks for it
        metrics["descriptor"] = [float(v) for v in topology[0]]
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)


@app.train()
def train(msg: Message, context: Context) -> Message:
    """Run one round of local SGD (FedProx's proximal term when ``proximal-mu`` > 0).

    Parameters
    ----------
    msg : flwr.app.Message
        The server's train message: the model in ``"arrays"``, the run configuration and
        ``server-round`` in ``"config"``.
    context : flwr.app.Context
        The node's context; ``node_config`` holds ``partition-id``, ``data-path`` and an optional
        injected fault.

    Returns
    -------
    flwr.app.Message
        The reply: the trained weights in ``"arrays"`` and a ``"metrics"`` record (number of
        examples, partition id, and the descriptor or phase timestamps when the config asks for
        them).
    """
    t_start = time.time()
    pid, data = load_partition(context)
    cfg = msg.content["config"]
    rnd = int(cfg["server-round"])
    track = bool(cfg["descriptor"]) and bool(cfg["track-signatures"])  # Sec. 3.5 signature
    topology = (_topology(data, int(cfg["seed"]), pid, int(cfg["n-sub"]))
                if track or bool(cfg["augment"]) else None)  # computed once per message
    w = local_model(data, cfg, pid, msg.content["arrays"].to_numpy_ndarrays()[0], topology)
    metrics = MetricRecord({"num-examples": int(data["y_train"].size), "partition-id": pid})
    if track:
        metrics["descriptor"] = [float(v) for v in topology[0]]
    w = _inject_fault(context, rnd, w, metrics)
    if bool(cfg.get("timing", False)):
        metrics.update(_timing(t_start))
    return Message(RecordDict({"arrays": ArrayRecord([w]), "metrics": metrics}), reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    """Score the server's model on the client's test split.

    Parameters
    ----------
    msg : flwr.app.Message
        The server's evaluate message: the model in ``"arrays"``, the run configuration in
        ``"config"``.
    context : flwr.app.Context
        The node's context; ``node_config`` holds ``partition-id`` and ``data-path``.

    Returns
    -------
    flwr.app.Message
        The reply: a ``"metrics"`` record with the test AUC and accuracy, the partition id and the
        number of test examples.
    """
    pid, data = load_partition(context)
    cfg = msg.content["config"]
    w = msg.content["arrays"].to_numpy_ndarrays()[0]
    X = _features(data, data["X_test"], cfg, int(cfg["seed"]), pid)
    auc, acc = LogisticLearner(float(cfg["C"])).evaluate(w, X, data["y_test"])
    metrics = MetricRecord({"auc": float(auc), "accuracy": float(acc), "partition-id": pid,
                            "num-examples": int(data["y_test"].size)})
    return Message(RecordDict({"metrics": metrics}), reply_to=msg)


_IMPORTED_AT = time.time()
