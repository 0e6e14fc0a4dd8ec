"""The Flower ServerApp: pTopoFL's server (or FedAvg / FedProx) as a Flower strategy.

Round 0: the server sends every SuperNode a ``query`` and receives its descriptor,
partition id and size (MetricRecord). pTopoFL then runs its round-0 server step with
:func:`topofl_lib.federated.aggregation.server_state`: clusters (average linkage on the
l2 distance of normalised descriptors), Eq. 8 trust, Eq. 6 weights.

Each round, :class:`TopoflStrategy` sends *one message per node* carrying that node's
cluster model (``configure_train``), aggregates the replies with
:func:`~topofl_lib.federated.aggregation.aggregate_round` (Eq. 6 within clusters, Eq. 7
blending), and sends each node the model it deploys for evaluation. All cluster
models travel between the strategy's steps as one ArrayRecord. FedAvg and FedProx use
the same strategy with one cluster and data-volume weights (FedProx adds
``proximal-mu`` to the clients' config).

Signature tracking (Sec. 3.5, ``track-signatures``): with every training reply a
pTopoFL client also sends its current descriptor; the strategy records them and the
Eq. 9 drift of each client (:func:`~topofl_lib.federated.ptopofl.signature_drift`, the
in-process engine's code), carrying a client's last signature through rounds it
missed. It does not re-cluster (the in-process ``drift_threshold`` does).

Minimum clients: a round waits until ``min-nodes`` SuperNodes are connected, and if
fewer than ``min-nodes`` valid replies arrive it keeps the models unchanged (logged).

Faults: replies that carry an error, or that do not arrive within ``round-timeout``,
are dropped and logged; the round aggregates the clients that replied (Eq. 6 weights
renormalised within their clusters; a cluster with no reply keeps its model), so no
stale or partial model is used. A node that (re)joins later is asked for its partition
id and gets its cluster's model from the next round on.

Results (per-round, per-client AUC and accuracy, who replied, round times, message
sizes) are written as JSON to the run config's ``results-path``.
"""

from __future__ import annotations

import json
import time
from logging import INFO, WARNING

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.common.logger import log
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from ..federated.aggregation import aggregate_round, server_state
from ..federated.ptopofl import signature_drift

app = ServerApp()

#: Run-config keys forwarded to the clients.
CLIENT_KEYS = ("seed", "lr", "local-epochs", "batch-size", "C", "augment", "n-sub",
               "track-signatures")


class TopoflStrategy(FedAvg):
    """pTopoFL's server as a Flower strategy (FedAvg/FedProx with ``method``)."""

    def __init__(self, method: str, n_clusters: int, beta: float, tau: float,
                 client_config: dict, timeout: float, min_nodes: int, eval_every: int = 1,
                 num_rounds: int = 1):
        super().__init__(fraction_train=1.0, fraction_evaluate=1.0,
                         min_train_nodes=min_nodes, min_evaluate_nodes=min_nodes,
                         min_available_nodes=min_nodes)
        self.method, self.n_clusters, self.beta, self.tau = method, n_clusters, beta, tau
        self.client_config = dict(client_config)
        self.timeout = timeout
        self.eval_every, self.num_rounds = eval_every, num_rounds
        self.partition: dict[int, int] = {}   # node id -> partition id
        self.sizes: dict[int, int] = {}       # partition id -> n_train
        self.state: dict | None = None
        self.min_nodes = min_nodes
        self.signatures: list[np.ndarray] = []
        self.log: dict = {"rounds": [], "descriptor_bytes": 0, "model_bytes": 0, "drift": None}

    # -- helpers ---------------------------------------------------------------------
    def _config(self, **extra) -> ConfigRecord:
        return ConfigRecord({**self.client_config, **extra})

    def identify(self, grid: Grid, nodes) -> list[Message]:
        """Ask ``nodes`` for their partition id, size and (pTopoFL) descriptor."""
        msgs = [Message(RecordDict({"config": self._config()}), message_type=MessageType.QUERY,
                        dst_node_id=n) for n in nodes]
        replies = [r for r in grid.send_and_receive(msgs, timeout=self.timeout)
                   if not r.has_error()]
        for r in replies:
            m = r.content["metrics"]
            pid = int(m["partition-id"])
            self.partition[r.metadata.src_node_id] = pid
            self.sizes[pid] = int(m["num-examples"])
            self.n_features = int(m["n-features"])
        return replies

    def round_zero(self, grid: Grid) -> None:
        """Query every node; pTopoFL clusters the clients on their descriptors."""
        replies = self.identify(grid, list(grid.get_node_ids()))
        K = len(self.sizes)
        descriptors = np.zeros((K, 48))
        if self.method == "pTopoFL":
            for r in replies:
                m = r.content["metrics"]
                descriptors[int(m["partition-id"])] = np.asarray(m["descriptor"])
            self.log["descriptor_bytes"] = int(descriptors[0].nbytes)
            self.signatures = [descriptors]
        sizes = np.array([self.sizes[k] for k in range(K)], dtype=np.float64)
        if self.method == "pTopoFL":
            self.state = server_state(descriptors, sizes, self.n_clusters, self.tau)
        else:
            self.state = {"labels": np.zeros(K, dtype=int), "weights": sizes / sizes.sum(),
                          "cluster_sizes": np.array([K])}
        log(INFO, "round 0: %d clients, clusters %s", K, self.state["labels"].tolist())

    def _per_node(self, grid: Grid, arrays: ArrayRecord, config: ConfigRecord,
                  kind: str) -> list[Message]:
        nodes = list(grid.get_node_ids())
        unknown = [n for n in nodes if n not in self.partition]
        if unknown:  # a node that (re)joined: learn which client it is
            self.identify(grid, unknown)
        clusters = arrays.to_numpy_ndarrays()
        msgs = []
        for n in nodes:
            if n not in self.partition:
                continue
            model = clusters[int(self.state["labels"][self.partition[n]])]
            self.log["model_bytes"] = int(model.nbytes)
            content = RecordDict({"arrays": ArrayRecord([model]),
                                  "config": ConfigRecord({**dict(config), **self.client_config})})
            msgs.append(Message(content, message_type=kind, dst_node_id=n))
        return msgs

    # -- strategy ------------------------------------------------------------------------
    def configure_train(self, server_round, arrays, config, grid):
        self._t0 = time.perf_counter()
        config["server-round"] = server_round
        return self._per_node(grid, arrays, config, MessageType.TRAIN)

    def aggregate_train(self, server_round, replies):
        replies = list(replies)
        ok = [r for r in replies if not r.has_error()]
        K = len(self.sizes)
        previous = self._arrays
        local = np.zeros_like(np.tile(previous[0], (K, 1)))
        responded = np.zeros(K, dtype=bool)
        signature = self.signatures[-1].copy() if self.signatures else None
        for r in ok:
            m = r.content["metrics"]
            pid = int(m["partition-id"])
            local[pid] = r.content["arrays"].to_numpy_ndarrays()[0]
            responded[pid] = True
            if signature is not None and "descriptor" in m:
                signature[pid] = np.asarray(m["descriptor"])
        missing = [k for k in range(K) if not responded[k]]
        if missing:
            log(WARNING, "round %d: no valid reply from clients %s (%d errors); aggregating "
                "the %d that replied", server_round, missing, len(replies) - len(ok),
                int(responded.sum()))
        st = self.state
        if 0 < responded.sum() < self.min_nodes:
            log(WARNING, "round %d: %d valid replies < min-nodes = %d; models unchanged",
                server_round, int(responded.sum()), self.min_nodes)
            responded[:] = False
        if signature is not None and bool(self.client_config.get("track-signatures")):
            self.signatures.append(signature)
            self.log["drift"] = signature_drift(self.signatures[1:]).tolist()
        if responded.any():
            models = aggregate_round(local, st["labels"], st["weights"], st["cluster_sizes"],
                                     self.beta if self.method == "pTopoFL" else 0.0,
                                     previous=previous, responded=responded)
        else:
            models = previous
        self._arrays = models
        self.log["rounds"].append({"round": server_round, "replied": np.flatnonzero(
            responded).tolist(), "missing": missing,
            "seconds": time.perf_counter() - self._t0})
        return ArrayRecord(list(models)), None

    def configure_evaluate(self, server_round, arrays, config, grid):
        if server_round % self.eval_every and server_round != self.num_rounds:
            return []
        return self._per_node(grid, arrays, config, MessageType.EVALUATE)

    def aggregate_evaluate(self, server_round, replies):
        replies = list(replies)
        if not replies:
            return None
        scores = {}
        for r in replies:
            if not r.has_error():
                m = r.content["metrics"]
                scores[int(m["partition-id"])] = (float(m["auc"]), float(m["accuracy"]))
        self.log["rounds"][-1]["scores"] = scores
        return None

    def summary(self) -> None:
        log(INFO, "\t├── method %s, M=%d, beta=%.2f, tau=%.2f", self.method, self.n_clusters,
            self.beta, self.tau)


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    method = str(cfg["method"])
    if method not in ("pTopoFL", "FedAvg", "FedProx"):
        raise ValueError(f"unknown method {method!r}; expected pTopoFL, FedAvg or FedProx")
    client_config = {k: cfg[k] for k in CLIENT_KEYS}
    client_config["augment"] = bool(cfg["augment"]) and method == "pTopoFL"
    client_config["proximal-mu"] = float(cfg["mu"]) if method == "FedProx" else 0.0
    client_config["descriptor"] = method == "pTopoFL"
    client_config["track-signatures"] = bool(cfg["track-signatures"]) and method == "pTopoFL"
    strategy = TopoflStrategy(method, int(cfg["n-clusters"]), float(cfg["beta"]),
                              float(cfg["tau"]), client_config, float(cfg["round-timeout"]),
                              int(cfg["min-nodes"]), int(cfg["eval-every"]),
                              int(cfg["num-rounds"]))
    t0 = time.perf_counter()
    strategy.round_zero(grid)
    K = len(strategy.sizes)
    M = int(strategy.state["cluster_sizes"].size)
    dim = strategy.n_features + (4 if client_config["augment"] else 0) + 1
    strategy._arrays = np.zeros((M, dim))
    strategy.start(grid, ArrayRecord(list(strategy._arrays)), num_rounds=int(cfg["num-rounds"]),
                   timeout=float(cfg["round-timeout"]))
    out = {"method": method, "n_clients": K, "labels": strategy.state["labels"].tolist(),
           "seconds": time.perf_counter() - t0, **strategy.log}
    with open(str(cfg["results-path"]), "w") as fh:
        json.dump(out, fh)
