"""The Flower ServerApp: pTopoFL's server (or FedAvg / FedProx) as a Flower strategy.

Round 0: the server sends every SuperNode a ``query`` and receives its partition id,
size, number of features and model width, and for pTopoFL its descriptor (MetricRecord).
Every client must answer it, within ``query-timeout`` (600 s by default: it includes each
node's first install of the app and its descriptor, all nodes of a machine at once; a
shorter wait could only turn a slow start into a failed run).
pTopoFL then runs its round-0 server step with
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

Minimum clients: if fewer than ``min-nodes`` valid replies arrive in a round it keeps
the models unchanged (logged).

Faults: replies that carry an error, or that do not arrive within ``round-timeout``,
are dropped and logged; the round aggregates the clients that replied (Eq. 6 weights
renormalised within their clusters; a cluster with no reply keeps its model), so no
stale or partial model is used. A reply that is malformed (:meth:`TopoflStrategy.
reply_error`: a model of the wrong length or with NaN/inf, a descriptor of the wrong
size or with NaN/inf, a partition id that is not the node's) is rejected and logged
with the node's id, and never enters the aggregate. A node that (re)joins later with a
new node id is asked for its partition id and gets its cluster's model from the next
round on.

Waiting: replies are collected by :class:`~topofl_lib.flower.polling.PollingGrid`,
which asks the SuperLink for them every ``poll-interval`` s (Flower's
``send_and_receive`` waits 3 s between asks) through Flower's public Grid API. With the
run config ``fast-waits = true`` (opt-in) the adapter
:func:`~topofl_lib.flower.fast_waits.adjust_serverapp` also retries a reply whose arrays
are not uploaded yet after 20 ms instead of 1 s, if the installed flwr is the version it
was verified with (otherwise it changes nothing and logs one line).

Results (per-round, per-client AUC and accuracy, who replied and who was rejected,
round times, message sizes, and with ``timing`` the per-phase times of each reply) are
written as JSON to the run config's ``results-path`` after every round, and with
``"finished": true`` at the end.
"""

from __future__ import annotations

import gc
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
from ..outputs import write_text_atomic
from ..topology.descriptor import DESCRIPTOR_NAMES
from .polling import PollingGrid

app = ServerApp()

#: Run-config keys forwarded to the clients.
CLIENT_KEYS = ("seed", "lr", "local-epochs", "batch-size", "C", "augment", "n-sub",
               "track-signatures", "timing")
#: Length of the descriptor a pTopoFL client sends.
DESCRIPTOR_DIM = len(DESCRIPTOR_NAMES)
#: Timestamps a client adds to its training reply with ``timing`` (see ``client_app``).
TIMESTAMPS = ("t-delivered", "t-process", "t-imported", "t-start", "t-end")


class TopoflStrategy(FedAvg):
    """pTopoFL's server as a Flower strategy (FedAvg/FedProx with ``method``).

    Parameters
    ----------
    method : {"pTopoFL", "FedAvg", "FedProx"}
    n_clusters, beta, tau
        pTopoFL's ``M``, Eq. 7 blending and Eq. 8 threshold.
    client_config : dict
        Run-config entries sent to the clients with every message.
    timeout : float
        Seconds to wait for the replies of a round (``round-timeout``).
    min_nodes : int
        Fewest valid replies a round aggregates.
    eval_every, num_rounds : int
        Clients evaluate every ``eval_every`` rounds and after the last one.
    results_path : str
        Where :meth:`save` writes the results (after every round and at the end).
    query_timeout : float, optional
        Seconds round 0 waits for every client's answer (``query-timeout``); ``None``:
        ``timeout``.

    Attributes
    ----------
    partition_ : dict
        Node id -> partition id (client index).
    sizes_ : dict
        Partition id -> number of training examples.
    n_features_, n_params_ : int
        The clients' number of features, and their model's length (from the learner,
        with pTopoFL's augmentation when on).
    state_ : dict
        The round-0 server state (clusters, trust, Eq. 6 weights).
    cluster_models_ : ndarray of shape (n_clusters, ``n_params_``)
        The current cluster models.
    signatures_ : list of ndarray of shape (K, DESCRIPTOR_DIM)
        The descriptors recorded at round 0 and after each training round.
    history_ : dict
        What the run writes to ``results-path``.
    """

    def __init__(self, method: str, n_clusters: int, beta: float, tau: float,
                 client_config: dict, timeout: float, min_nodes: int, eval_every: int = 1,
                 num_rounds: int = 1, results_path: str = "", query_timeout: float | None = None):
        super().__init__(fraction_train=1.0, fraction_evaluate=1.0,
                         min_train_nodes=min_nodes, min_evaluate_nodes=min_nodes,
                         min_available_nodes=min_nodes)
        self.method, self.n_clusters, self.beta, self.tau = method, n_clusters, beta, tau
        self.client_config = dict(client_config)
        self.timeout = timeout
        self.query_timeout = timeout if query_timeout is None else query_timeout
        self.eval_every, self.num_rounds = eval_every, num_rounds
        self.min_nodes = min_nodes
        self.results_path = str(results_path)
        self._t0, self._wall0, self._grid = time.perf_counter(), time.time(), None
        self.partition_: dict[int, int] = {}
        self.sizes_: dict[int, int] = {}
        self.n_features_: int | None = None
        self.n_params_: int | None = None
        self.state_: dict | None = None
        self.cluster_models_: np.ndarray | None = None
        self.signatures_: list[np.ndarray] = []
        self.history_: dict = {"rounds": [], "descriptor_bytes": 0, "model_bytes": 0,
                               "drift": None, "rejected": []}

    @property
    def uses_descriptors(self) -> bool:
        """Whether the clients send descriptors (pTopoFL)."""
        return bool(self.client_config.get("descriptor"))

    def save(self, **extra) -> None:
        """Write the results so far to ``results_path`` (atomically; no-op if empty)."""
        if not self.results_path:
            return
        out = {"method": self.method, "n_clients": len(self.sizes_),
               "labels": None if self.state_ is None else self.state_["labels"].tolist(),
               **self.history_, **extra}
        write_text_atomic(self.results_path, json.dumps(out))

    # -- checking replies ----------------------------------------------------------------
    @staticmethod
    def _descriptor_error(m) -> str | None:
        if "descriptor" not in m:
            return "no descriptor"
        phi = np.asarray(m["descriptor"], dtype=np.float64)
        if phi.shape != (DESCRIPTOR_DIM,):
            return f"descriptor of length {phi.size}, expected {DESCRIPTOR_DIM}"
        if not np.all(np.isfinite(phi)):
            return "descriptor with NaN or infinite values"
        return None

    def reply_error(self, reply: Message) -> str | None:
        """What is wrong with a training reply, or None if it may be aggregated.

        A valid reply carries the sending node's own partition id, exactly one model of
        length :attr:`n_params_` with finite values, and (pTopoFL with signature
        tracking) a finite descriptor of length :data:`DESCRIPTOR_DIM`.
        """
        node = reply.metadata.src_node_id
        try:
            m = reply.content["metrics"]
            arrays = reply.content["arrays"].to_numpy_ndarrays()
            pid = int(m["partition-id"])
        except (KeyError, TypeError, ValueError) as err:
            return f"incomplete reply ({err!r})"
        if self.partition_.get(node) != pid:
            return f"partition id {pid}, but node {node} is client {self.partition_.get(node)}"
        if len(arrays) != 1 or np.shape(arrays[0]) != (self.n_params_,):
            return (f"model of shape {[np.shape(a) for a in arrays]}, expected one of "
                    f"length {self.n_params_}")
        if not np.all(np.isfinite(arrays[0])):
            return "model with NaN or infinite values"
        if self.uses_descriptors and bool(self.client_config.get("track-signatures")):
            return self._descriptor_error(m)
        return None

    def _query_error(self, reply: Message) -> str | None:
        """What is wrong with a query reply, or None."""
        try:
            m = reply.content["metrics"]
            pid, n, d, p = (int(m[k]) for k in ("partition-id", "num-examples",
                                               "n-features", "n-params"))
        except (KeyError, TypeError, ValueError) as err:
            return f"incomplete reply ({err!r})"
        if pid < 0 or n < 1 or d < 1 or p < d + 1:
            return f"invalid partition id {pid}, size {n}, features {d} or width {p}"
        if self.n_params_ is not None and (d, p) != (self.n_features_, self.n_params_):
            return (f"{d} features and width {p}, but the federation has "
                    f"{self.n_features_} and {self.n_params_}")
        if self.state_ is not None and pid not in self.sizes_:  # joined after round 0
            return f"partition id {pid} is not one of the {len(self.sizes_)} clients of round 0"
        return self._descriptor_error(m) if self.uses_descriptors else None

    def _reject(self, server_round: int, reply: Message, reason: str) -> None:
        node = reply.metadata.src_node_id
        log(WARNING, "round %d: rejected the reply of node %d (client %s): %s", server_round,
            node, self.partition_.get(node, "unknown"), reason)
        self.history_["rejected"].append({"round": server_round, "node": node,
                                          "client": self.partition_.get(node),
                                          "reason": reason})

    # -- round 0 -------------------------------------------------------------------------
    def _config(self, **extra) -> ConfigRecord:
        return ConfigRecord({**self.client_config, **extra})

    def identify(self, grid: Grid, nodes, server_round: int = 0,
                 timeout: float | None = None) -> list[Message]:
        """Ask ``nodes`` for their partition id, size, width and (pTopoFL) descriptor.

        Parameters
        ----------
        grid : flwr.serverapp.Grid
            The grid to query through.
        nodes : iterable of int
            Node ids to ask.
        server_round : int, default=0
            Round recorded with any rejected reply.
        timeout : float, optional
            Seconds to wait for the replies; ``None``: the round timeout.

        Returns
        -------
        list of flwr.app.Message
            The valid replies (their partition ids and sizes are recorded in ``partition_`` and
            ``sizes_``).
        """
        msgs = [Message(RecordDict({"config": self._config()}), message_type=MessageType.QUERY,
                        dst_node_id=n) for n in nodes]
        valid = []
        wait = self.timeout if timeout is None else timeout
        for r in grid.send_and_receive(msgs, timeout=wait):
            if r.has_error():
                continue
            reason = self._query_error(r)
            if reason is not None:
                self._reject(server_round, r, reason)
                continue
            m = r.content["metrics"]
            pid = int(m["partition-id"])
            self.partition_[r.metadata.src_node_id] = pid
            self.sizes_[pid] = int(m["num-examples"])
            self.n_features_, self.n_params_ = int(m["n-features"]), int(m["n-params"])
            valid.append(r)
        return valid

    def round_zero(self, grid: Grid) -> None:
        """Query every node, waiting up to ``query_timeout``; pTopoFL clusters the clients
        on their descriptors."""
        replies = self.identify(grid, list(grid.get_node_ids()), timeout=self.query_timeout)
        K = len(self.sizes_)
        if K == 0 or sorted(self.sizes_) != list(range(K)):
            raise RuntimeError(f"round 0: the clients that answered have partition ids "
                               f"{sorted(self.sizes_)}, not 0..K-1 (a client is missing)")
        sizes = np.array([self.sizes_[k] for k in range(K)], dtype=np.float64)
        if self.method == "pTopoFL":
            descriptors = np.zeros((K, DESCRIPTOR_DIM))
            for r in replies:
                m = r.content["metrics"]
                descriptors[int(m["partition-id"])] = np.asarray(m["descriptor"])
            self.history_["descriptor_bytes"] = int(descriptors[0].nbytes)
            self.signatures_ = [descriptors]
            self.state_ = server_state(descriptors, sizes, self.n_clusters, self.tau)
        else:
            self.state_ = {"labels": np.zeros(K, dtype=int), "weights": sizes / sizes.sum(),
                           "cluster_sizes": np.array([K])}
        self.cluster_models_ = np.zeros((int(self.state_["cluster_sizes"].size),
                                         self.n_params_))
        log(INFO, "round 0: %d clients, clusters %s", K, self.state_["labels"].tolist())

    def _per_node(self, grid: Grid, arrays: ArrayRecord, config: ConfigRecord, kind: str,
                  server_round: int) -> list[Message]:
        nodes = list(grid.get_node_ids())
        unknown = [n for n in nodes if n not in self.partition_]
        if unknown:  # a node that (re)joined: learn which client it is
            self.identify(grid, unknown, server_round)
        clusters = arrays.to_numpy_ndarrays()
        msgs = []
        for n in nodes:
            if n not in self.partition_:
                continue
            model = clusters[int(self.state_["labels"][self.partition_[n]])]
            self.history_["model_bytes"] = int(model.nbytes)
            content = RecordDict({"arrays": ArrayRecord([model]),
                                  "config": ConfigRecord({**dict(config), **self.client_config})})
            msgs.append(Message(content, message_type=kind, dst_node_id=n))
        return msgs

    # -- strategy ------------------------------------------------------------------------
    def configure_train(self, server_round, arrays, config, grid):
        """One train message per connected node, carrying its cluster's model.

        Parameters
        ----------
        server_round : int
            The current round.
        arrays : flwr.app.ArrayRecord
            The cluster models.
        config : flwr.app.ConfigRecord
            Configuration sent with the messages (``server-round`` is added).
        grid : flwr.serverapp.Grid
            The grid (nodes that joined since are identified first).

        Returns
        -------
        list of flwr.app.Message
            The train messages.
        """
        self._t0 = time.perf_counter()
        self._wall0 = time.time()
        self._grid = grid
        config["server-round"] = server_round
        return self._per_node(grid, arrays, config, MessageType.TRAIN, server_round)

    def _phases(self, replies, t_agg: float) -> dict:
        """Per-client phase durations of this round (``timing`` run config)."""
        out = {}
        arrivals = getattr(self._grid, "arrived", {})
        for r in replies:
            m = r.content["metrics"]
            arrived = arrivals.get(r.metadata.reply_to_message_id, t_agg)
            t = {k: float(m[k]) for k in TIMESTAMPS}
            out[int(m["partition-id"])] = {
                "delivery": t["t-delivered"] - self._wall0,
                "launch": t["t-process"] - t["t-delivered"],
                "startup": t["t-start"] - t["t-process"],
                "import": max(0.0, t["t-imported"] - t["t-process"]),
                "work": t["t-end"] - t["t-start"],
                "reply": arrived - t["t-end"],
                "total": arrived - self._wall0}
        return out

    def aggregate_train(self, server_round, replies):
        """Aggregate the valid train replies into the next cluster models (rejecting bad ones).

        Parameters
        ----------
        server_round : int
            The current round.
        replies : iterable of flwr.app.Message
            The clients' train replies.

        Returns
        -------
        arrays : flwr.app.ArrayRecord
            The new cluster models.
        metrics : None
            No aggregated metrics.
        """
        t_agg, t_agg_wall = time.perf_counter(), time.time()
        replies = list(replies)
        ok = []
        for r in replies:
            if r.has_error():
                continue
            reason = self.reply_error(r)
            if reason is None:
                ok.append(r)
            else:
                self._reject(server_round, r, reason)
        K = len(self.sizes_)
        previous = self.cluster_models_
        local = np.zeros((K, previous.shape[1]))
        responded = np.zeros(K, dtype=bool)
        signature = self.signatures_[-1].copy() if self.signatures_ else None
        for r in ok:
            m = r.content["metrics"]
            pid = int(m["partition-id"])
            local[pid] = r.content["arrays"].to_numpy_ndarrays()[0]
            responded[pid] = True
            if signature is not None and "descriptor" in m:
                signature[pid] = np.asarray(m["descriptor"])
        missing = [k for k in range(K) if not responded[k]]
        if missing:
            log(WARNING, "round %d: no valid reply from clients %s (%d errors, %d rejected); "
                "aggregating the %d that replied", server_round, missing,
                sum(r.has_error() for r in replies),
                len(replies) - len(ok) - sum(r.has_error() for r in replies),
                int(responded.sum()))
        st = self.state_
        if 0 < responded.sum() < self.min_nodes:
            log(WARNING, "round %d: %d valid replies < min-nodes = %d; models unchanged",
                server_round, int(responded.sum()), self.min_nodes)
            responded[:] = False
        if signature is not None and bool(self.client_config.get("track-signatures")):
            self.signatures_.append(signature)
            self.history_["drift"] = signature_drift(self.signatures_[1:]).tolist()
        if responded.any():
            models = aggregate_round(local, st["labels"], st["weights"], st["cluster_sizes"],
                                     self.beta if self.method == "pTopoFL" else 0.0,
                                     previous=previous, responded=responded)
        else:
            models = previous
        self.cluster_models_ = models
        entry = {"round": server_round, "started": self._wall0,
                 "replied": np.flatnonzero(responded).tolist(), "missing": missing,
                 "seconds": time.perf_counter() - self._t0}
        if bool(self.client_config.get("timing")):
            entry["phases"] = self._phases(ok, t_agg_wall)
            pushed = getattr(self._grid, "pushed", None)
            entry["push"] = None if pushed is None else pushed - self._wall0
            entry["aggregation"] = time.perf_counter() - t_agg
        self.history_["rounds"].append(entry)
        self.save()
        return ArrayRecord(list(models)), None

    def configure_evaluate(self, server_round, arrays, config, grid):
        """Evaluate messages every ``eval_every`` rounds and after the last one (else none).

        Parameters
        ----------
        server_round : int
            The current round.
        arrays : flwr.app.ArrayRecord
            The cluster models.
        config : flwr.app.ConfigRecord
            Configuration sent with the messages.
        grid : flwr.serverapp.Grid
            The grid.

        Returns
        -------
        list of flwr.app.Message
            The evaluate messages (empty in a round without evaluation).
        """
        if server_round % self.eval_every and server_round != self.num_rounds:
            return []
        return self._per_node(grid, arrays, config, MessageType.EVALUATE, server_round)

    def aggregate_evaluate(self, server_round, replies):
        """Record the clients' (AUC, accuracy) in the round's entry and save the results.

        Parameters
        ----------
        server_round : int
            The current round.
        replies : iterable of flwr.app.Message
            The clients' evaluate replies (one from a node for another client is rejected).

        Returns
        -------
        None
            Scores go into ``history_``, not into Flower's metrics.
        """
        replies = list(replies)
        if not replies:
            return None
        scores = {}
        for r in replies:
            if r.has_error():
                continue
            m = r.content["metrics"]
            pid = int(m["partition-id"])
            if self.partition_.get(r.metadata.src_node_id) != pid:
                self._reject(server_round, r, f"evaluation from node "
                             f"{r.metadata.src_node_id} for client {pid}")
                continue
            scores[pid] = (float(m["auc"]), float(m["accuracy"]))
        self.history_["rounds"][-1]["scores"] = scores
        self.save()
        return None

    def summary(self) -> None:
        log(INFO, "\t├── method %s, M=%d, beta=%.2f, tau=%.2f", self.method, self.n_clusters,
            self.beta, self.tau)


@app.main()
def main(grid: Grid, context: Context) -> None:
    """The ServerApp: build the strategy from the run config, run round 0 and the rounds.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
        The grid Flower provides (wrapped in a :class:`~topofl_lib.flower.polling.PollingGrid`).
    context : flwr.app.Context
        The run's context; ``run_config`` holds the method, hyper-parameters and ``results-path``.
    """
    gc.freeze()  # the imports never become garbage: keep the collector off them
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
                              int(cfg["num-rounds"]), str(cfg["results-path"]),
                              query_timeout=float(cfg["query-timeout"]))
    if bool(cfg["fast-waits"]):  # opt-in: patches Flower's Grid in this process
        from .fast_waits import adjust_serverapp

        adjust_serverapp()
    grid = PollingGrid(grid, float(cfg["poll-interval"]))
    t0 = time.perf_counter()
    strategy.round_zero(grid)
    strategy.start(grid, ArrayRecord(list(strategy.cluster_models_)),
                   num_rounds=int(cfg["num-rounds"]), timeout=float(cfg["round-timeout"]))
    strategy.save(seconds=time.perf_counter() - t0, finished=True)
