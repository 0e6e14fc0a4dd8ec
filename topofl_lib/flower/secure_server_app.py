"""The Flower ServerApp of DP-FedAvg under secure aggregation (the ``secure-dp`` app).

Client-level DP-FedAvg with distributed noise
(:class:`~topofl_lib.privacy.ClientLevelDP`, ``noise="distributed"``) on Flower's SecAgg+
(:class:`flwr.server.workflow.SecAggPlusWorkflow`, Bell et al. 2020): each client sends
its clipped update plus its share of the noise, masked, and the server learns only their
sum. So the server never holds an un-noised update, nor any single client's noised one,
and the epsilon against the server equals the epsilon of the released models; both are
accounted each round and written with the results.

Each round, :class:`SecureDPFedAvg` (a Flower ``Strategy``) asks every client of the
federation (``num-clients``; no client sampling, as distributed noise needs the round's
size known in advance), SecAgg+ hands it the mean of the messages that arrived, and the
new global model is :math:`\\theta + \\sum_k m_k / K`: the fixed-denominator estimator
of the in-process engine (:class:`~topofl_lib.federated.FedAvg` with that ``model_dp``
and every client weighing 1). A client that drops out after the round began (SecAgg+
removes its masks with the other clients' shares of its key, if at least the
reconstruction threshold of them remain) leaves its share of the noise out of the sum:
the round is accounted with the noise the sum carries,
:meth:`~topofl_lib.privacy.ClientLevelDP.release_event`.

SecAgg+ quantises each message within ``[-r, r]``, :math:`r = C + 8 z C / \\sqrt{K}`
(the clipped update's bound plus eight standard deviations of the noise share), on
:math:`2^{22}` levels: the sum is exact to about :math:`2r / 2^{22}` per client and
coordinate.

Results (per round: who was aggregated, the epsilons, every client's AUC and accuracy
of the global model; the final model) are written as JSON to ``results-path`` after
every round, with ``"finished": true`` at the end.
"""

from __future__ import annotations

import json
import time
from logging import INFO

from flwr.app import Context
from flwr.common import (
    EvaluateIns,
    FitIns,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.common.logger import log
from flwr.server import LegacyContext, ServerConfig
from flwr.server.strategy import Strategy
from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
from flwr.serverapp import Grid, ServerApp

from ..outputs import write_text_atomic
from ..privacy.model_channel import ClientLevelDP
from .polling import PollingGrid

app = ServerApp()

#: Run-config keys forwarded to the clients.
CLIENT_KEYS = ("seed", "lr", "local-epochs", "batch-size", "C")


class SecureDPFedAvg(Strategy):
    """DP-FedAvg's server on the sums SecAgg+ reveals (a Flower ``Strategy``).

    Parameters
    ----------
    dp : ClientLevelDP
        The option (``noise="distributed"``, ``sample_rate=1``).
    n_clients : int
        The federation's clients, every one asked each round (K).
    client_config : dict
        Run-config entries sent to the clients.
    results_path : str
        Where :meth:`save` writes the results ("" for nowhere).
    wait : float
        Seconds to wait for the ``n_clients`` nodes to be connected before a round.

    Attributes
    ----------
    accountant_ : PrivacyAccountant
        Every client's releases (each round releases the same sum for all of them).
    history_ : dict
        What the run writes to ``results-path``.
    """

    def __init__(self, dp: ClientLevelDP, n_clients: int, client_config: dict,
                 results_path: str = "", wait: float = 600.0):
        super().__init__()
        if dp.noise != "distributed" or dp.sample_rate != 1:
            raise ValueError(f"dp={dp!r}: secure aggregation runs noise='distributed' "
                             "with sample_rate=1")
        self.dp, self.n_clients = dp, int(n_clients)
        self.client_config, self.results_path, self.wait = dict(client_config), results_path, wait
        self.accountant_ = dp.accountant()
        self._global = None
        self.history_: dict = {"method": "DP-FedAvg", "secure_aggregation": "SecAgg+",
                               "noise": dp.noise, "noise_multiplier": dp.noise_multiplier,
                               "clip": dp.clip, "delta": dp.delta, "relation": dp.relation,
                               "n_clients": self.n_clients, "rounds": []}
        self._t0 = time.perf_counter()

    def __repr__(self) -> str:
        return f"SecureDPFedAvg(dp={self.dp!r}, n_clients={self.n_clients})"

    def save(self, **extra) -> None:
        """Write the results so far to ``results_path`` (atomically; no-op if empty)."""
        if not self.results_path:
            return
        out = {**self.history_, "model": None if self._global is None
               else self._global.tolist(), **extra}
        write_text_atomic(self.results_path, json.dumps(out))

    def _clients(self, client_manager):
        deadline = time.monotonic() + self.wait
        while client_manager.num_available() < self.n_clients:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{client_manager.num_available()} of the "
                                   f"{self.n_clients} clients connected in {self.wait} s")
            time.sleep(0.05)
        return client_manager.all().values()

    def initialize_parameters(self, client_manager):
        """None: Flower asks one client for the learner's initial model."""
        return None

    def configure_fit(self, server_round, parameters, client_manager):
        """Every client, with the global model and what its message needs: the round,
        the round's size (its noise share is 1/K of the variance), ``z`` and ``C``.

        Parameters
        ----------
        server_round : int
            The round.
        parameters : flwr.common.Parameters
            The global model.
        client_manager : flwr.server.ClientManager
            The connected clients (waited for until all ``n_clients`` are there).

        Returns
        -------
        list of (ClientProxy, FitIns)
        """
        self._global = parameters_to_ndarrays(parameters)[0].astype(float)
        config = {**self.client_config, "server-round": int(server_round),
                  "group-size": self.n_clients,
                  "noise-multiplier": float(self.dp.noise_multiplier),
                  "clip": float(self.dp.clip)}
        return [(c, FitIns(parameters, config)) for c in self._clients(client_manager)]

    def aggregate_fit(self, server_round, results, failures):
        """The new global model from the mean SecAgg+ revealed, and the round's epsilons.

        Every result carries the same parameters: the mean of the messages that reached
        the sum (each weighs 1); times their number, their sum.

        Parameters
        ----------
        server_round : int
            The round.
        results : list of (ClientProxy, FitRes)
            The clients whose messages are in the sum.
        failures : list
            Those that failed after the round began (dropped out).

        Returns
        -------
        parameters : flwr.common.Parameters or None
            The new global model (None when no message arrived: the model is kept).
        metrics : dict
            Empty.
        """
        entry = {"round": int(server_round), "failures": len(failures)}
        if not results:
            entry.update(received=[], epsilon=None, epsilon_server=None)
            self.history_["rounds"].append(entry)
            return None, {}
        mean = parameters_to_ndarrays(results[0][1].parameters)[0].astype(float)
        total = len(results) * mean
        self._global = self._global + total / (self.dp.sample_rate * self.n_clients)
        self.accountant_.record({**self.dp.release_event(len(results), self.n_clients),
                                 "round": int(server_round)})
        epsilon = float(self.accountant_.epsilon(self.dp.delta))
        entry.update(received=sorted(int(r.metrics["partition-id"]) for _, r in results),
                     epsilon=epsilon, epsilon_server=epsilon,
                     seconds=time.perf_counter() - self._t0)
        self.history_["rounds"].append(entry)
        log(INFO, "round %d: %d of %d messages in the sum; epsilon %.4g (against the server "
            "too: it sees only the sum) at delta %.3g, %s neighbours", server_round,
            len(results), self.n_clients, epsilon, self.dp.delta, self.dp.relation)
        self.save()
        return ndarrays_to_parameters([self._global]), {}

    def configure_evaluate(self, server_round, parameters, client_manager):
        """Every client scores the global model on its test split.

        Parameters
        ----------
        server_round : int
            The round.
        parameters : flwr.common.Parameters
            The global model.
        client_manager : flwr.server.ClientManager
            The connected clients.

        Returns
        -------
        list of (ClientProxy, EvaluateIns)
        """
        ins = EvaluateIns(parameters, dict(self.client_config))
        return [(c, ins) for c in self._clients(client_manager)]

    def aggregate_evaluate(self, server_round, results, failures):
        """Record every client's (AUC, accuracy) in the round's entry.

        Parameters
        ----------
        server_round : int
            The round.
        results : list of (ClientProxy, EvaluateRes)
            The clients' scores.
        failures : list
            Clients that did not answer.

        Returns
        -------
        tuple
            ``(None, {})``: the scores go into ``history_``.
        """
        scores = {int(r.metrics["partition-id"]): (float(r.metrics["auc"]),
                                                   float(r.metrics["accuracy"]))
                  for _, r in results}
        if self.history_["rounds"]:
            self.history_["rounds"][-1]["scores"] = scores
        self.save()
        return None, {}

    def evaluate(self, server_round, parameters):
        """No evaluation on the server (it holds no data).

        Parameters
        ----------
        server_round : int
            The round.
        parameters : flwr.common.Parameters
            The global model.

        Returns
        -------
        None
        """
        return None


def clipping_range(dp: ClientLevelDP, n_clients: int) -> float:
    """SecAgg+'s quantisation range: the clipped update's bound plus eight standard
    deviations of a client's noise share.

    Parameters
    ----------
    dp : ClientLevelDP
        The option.
    n_clients : int
        The clients of a round (m).

    Returns
    -------
    float
    """
    return float(dp.clip + 8.0 * dp.client_share(n_clients))


@app.main()
def main(grid: Grid, context: Context) -> None:
    """The ServerApp: DP-FedAvg's rounds on Flower's SecAgg+ workflow.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
        The grid Flower provides (wrapped in a :class:`~topofl_lib.flower.polling.PollingGrid`).
    context : flwr.app.Context
        The run's context; ``run_config`` holds the DP option, the hyper-parameters and
        ``results-path``.
    """
    cfg = context.run_config
    n_clients = int(cfg["num-clients"])
    if n_clients < 2:
        raise ValueError(f"num-clients must be at least 2 (secure aggregation hides one "
                         f"client's message among the others'), got {n_clients}")
    dp = ClientLevelDP(float(cfg["noise-multiplier"]), float(cfg["clip"]),
                       delta=float(cfg["delta"]), relation=str(cfg["relation"]),
                       noise="distributed")
    strategy = SecureDPFedAvg(dp, n_clients, {k: cfg[k] for k in CLIENT_KEYS},
                              str(cfg["results-path"]), wait=float(cfg["round-timeout"]))
    if bool(cfg["fast-waits"]):  # opt-in: patches Flower's Grid in this process
        from .fast_waits import adjust_serverapp

        adjust_serverapp()
    timeout = float(cfg["round-timeout"])
    legacy = LegacyContext(context, config=ServerConfig(num_rounds=int(cfg["num-rounds"]),
                                                        round_timeout=timeout),
                           strategy=strategy)
    secagg = SecAggPlusWorkflow(num_shares=float(cfg["num-shares"]),
                                reconstruction_threshold=float(cfg["reconstruction-threshold"]),
                                max_weight=1.0, clipping_range=clipping_range(dp, n_clients),
                                timeout=timeout)
    t0 = time.perf_counter()
    DefaultWorkflow(fit_workflow=secagg)(PollingGrid(grid, float(cfg["poll-interval"])), legacy)
    aggregated = [r for r in strategy.history_["rounds"] if r["received"]]
    strategy.save(seconds=time.perf_counter() - t0,
                  finished=len(aggregated) == int(cfg["num-rounds"]))
