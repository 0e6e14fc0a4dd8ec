"""The Flower ClientApp of DP-FedAvg under secure aggregation (the ``secure-dp`` app).

Each SuperNode holds one client's data, as for the ``topofl`` app
(:mod:`~topofl_lib.flower.client_app`). In each round the client

1. trains from the global model exactly as the in-process engine does
   (:func:`~topofl_lib.flower.client_app.local_model`);
2. clips its update and adds its share of the Gaussian noise,
   :meth:`ClientLevelDP.client_message <topofl_lib.privacy.ClientLevelDP.client_message>`
   with ``noise="distributed"``: :math:`{\\rm clip}_C(\\Delta) + N(0, z^2C^2/m)`, m the
   clients of the round, so the sum of the m messages carries the full noise
   :math:`N(0, z^2C^2)`. The noise is drawn from the operating system's entropy, never
   from the run's seed (the server knows the seed and could subtract it);
3. hands that message to Flower's SecAgg+ (:func:`flwr.client.mod.secaggplus_mod`),
   which quantises it, masks it with pairwise and private masks and sends only the
   masked vector: the server learns the sum of the round's messages and nothing else.

Every training message goes through SecAgg+: one that does not carry SecAgg+'s
configuration is answered with an error, so this app never sends an update in the clear.

Fault injection, for testing: the node-config entry ``fault = "drop"`` makes the client
fail at SecAgg+'s masked-vector stage of round ``fault-round`` (every round without it),
after it has shared its keys: a client that drops out mid-round, whose masks SecAgg+
removes with the other clients' shares of its key.
"""

from __future__ import annotations

import numpy as np
from flwr.client import NumPyClient
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp

from ..federated.local import LogisticLearner
from .client_app import load_partition, local_model

#: The node-config fault of this app.
DROP = "drop"


class DPClient(NumPyClient):
    """One client of a ``secure-dp`` run (Flower's NumPyClient).

    Parameters
    ----------
    context : flwr.app.Context
        The node's context: ``node_config`` holds ``partition-id`` and ``data-path``
        (and optionally ``fault`` and ``fault-round``).
    """

    def __init__(self, context):
        self.pid, self.data = load_partition(context)
        self.node_config = context.node_config

    def _learner(self, config) -> LogisticLearner:
        return LogisticLearner(float(config.get("C", 1.0)))

    def get_parameters(self, config) -> list[np.ndarray]:
        """The initial model: the learner's, on this client's number of features.

        Parameters
        ----------
        config : dict
            The server's configuration (``C``, the learner's regularisation).

        Returns
        -------
        list of ndarray
            The one parameter vector.
        """
        learner = self._learner(config)
        data = learner.client_data(self.data["X_train"][:1], self.data["y_train"][:1])
        return [learner.init_params(data)]

    def fit(self, parameters, config):
        """Train one round; return the clipped update plus this client's noise share.

        Parameters
        ----------
        parameters : list of ndarray
            The global model.
        config : dict
            The round's configuration: the learner's and local training's settings,
            ``server-round``, ``group-size`` (m), ``noise-multiplier`` (z), ``clip`` (C).

        Returns
        -------
        tuple
            ``([message], 1, {"partition-id": ...})``: every client weighs 1 (the
            sensitivity bound of DP-FedAvg), so SecAgg+'s weighted mean is the mean of
            the messages.
        """
        fault = self.node_config.get("fault")
        rnd = int(config["server-round"])
        if fault == DROP and int(self.node_config.get("fault-round", rnd)) == rnd:
            raise RuntimeError(f"client {self.pid} drops out of round {rnd} (fault={DROP!r})")
        if fault not in (None, DROP):
            raise ValueError(f"unknown fault {fault!r}; expected {DROP!r}")
        w0 = np.asarray(parameters[0], dtype=float)
        update = local_model(self.data, {**config, "augment": False}, self.pid, w0) - w0
        # imported here: of SecAgg+'s four messages a round only this one needs it (and
        # scikit-learn, 0.7 s of imports on an unpatched Flower's per-message interpreter)
        from ..privacy.model_channel import ClientLevelDP

        dp = ClientLevelDP(float(config["noise-multiplier"]), float(config["clip"]),
                           noise="distributed")
        message = dp.client_message(update, 1.0, int(config["group-size"]),
                                    np.random.default_rng())
        return [message], 1, {"partition-id": self.pid}

    def evaluate(self, parameters, config):
        """AUC and accuracy of the global model on this client's test split.

        Parameters
        ----------
        parameters : list of ndarray
            The global model.
        config : dict
            The server's configuration (``C``).

        Returns
        -------
        tuple
            ``(1 - auc, n_test, {"auc", "accuracy", "partition-id"})``.
        """
        auc, acc = self._learner(config).evaluate(np.asarray(parameters[0], dtype=float),
                                                   self.data["X_test"], self.data["y_test"])
        return (float(1.0 - auc), int(self.data["y_test"].size),
                {"auc": float(auc), "accuracy": float(acc), "partition-id": self.pid})


def client_fn(context):
    """The node's client (Flower's ``client_fn``)."""
    return DPClient(context).to_client()


app = ClientApp(client_fn=client_fn, mods=[secaggplus_mod])
