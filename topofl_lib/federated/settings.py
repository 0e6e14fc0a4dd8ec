"""The settings every federated algorithm shares: their choices and their checks.

:class:`~topofl_lib.federated.FederatedAlgorithm` runs :func:`check_common_params` first
in ``fit`` (and in ``check_params``), and :func:`check_label_range` once its learner is
made; each raises before any round, naming the parameter and the value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_choice, check_int, check_random_state, check_real
from ..core.containers import FederatedScenario
from ..core.learner import ModelClass
from .solvers import SOLVERS

__all__ = ["EVALUATE_ON", "RNG_STREAMS", "check_common_params", "check_label_range"]

#: How clients draw random numbers: one generator shared in client order (the
#: in-process default, the committed results), or one stream per client seeded from
#: ``(random_state, client)``, which a real federation can reproduce (Flower parity).
RNG_STREAMS = ("shared", "per_client")
#: Which clients the reported mean covers: the honest ones (ours), or all of them,
#: adversaries included (the pTopoFL paper's released code).
EVALUATE_ON = ("honest", "all")


def check_common_params(est: Any, solver: str) -> None:
    """Check the parameters of :class:`~topofl_lib.federated.FederatedAlgorithm`.

    Parameters
    ----------
    est : FederatedAlgorithm
        The estimator whose shared parameters are checked.
    solver : str
        Its local solver (``"sgd"`` where the class has no ``solver`` parameter).

    Raises
    ------
    ValueError, TypeError
        A parameter is out of range or of the wrong type (the message names it).
    """
    check_int(est.n_rounds, "n_rounds", low=1)
    check_real(est.lr, "lr", low=0.0, low_open=True)
    check_int(est.local_epochs, "local_epochs", low=1)
    if est.batch_size is not None:
        check_int(est.batch_size, "batch_size", low=1)
    check_real(est.C, "C", low=0.0, low_open=True)
    check_random_state(est.random_state)
    check_choice(est.rng_streams, "rng_streams", RNG_STREAMS)
    if est.rng_streams == "per_client" and not isinstance(est.random_state, int):
        raise ValueError("rng_streams='per_client' needs an int random_state, got "
                         f"{est.random_state!r}")
    if est.model is not None and not isinstance(est.model, ModelClass):
        raise TypeError(f"model must be None or a TorchModel, got {type(est.model).__name__}")
    if callable(getattr(est.model, "check_params", None)):  # a model class may check its own
        est.model.check_params()
    check_choice(solver, "solver", SOLVERS)
    if solver == "lbfgs" and est.model is not None:
        raise ValueError("solver='lbfgs' fits a logistic regression; use solver='sgd' "
                         "with a TorchModel")
    if est.evaluate_on is not None:
        check_choice(est.evaluate_on, "evaluate_on", EVALUATE_ON)
    if est.standardise is not None and not isinstance(est.standardise, bool):
        raise TypeError(f"standardise must be True, False or None, got {est.standardise!r}")


def check_label_range(scenario: FederatedScenario, learner: Any, model: Any) -> None:
    """Refuse clients with more classes than the model can tell apart.

    Parameters
    ----------
    scenario : FederatedScenario
        The clients (one label set per scenario).
    learner : Learner
        The fit's learner (its ``n_classes``, where it has one).
    model : None or TorchModel
        The estimator's ``model`` parameter, named in the message.

    Raises
    ------
    ValueError
        The clients have more classes than the model.
    """
    n_data = scenario.clients[0].n_classes
    n_model = getattr(learner, "n_classes", n_data)
    if n_data <= n_model:
        return
    labels = np.unique(np.concatenate([np.unique(c.y_train) for cl in (
        scenario.clients, *scenario.schedule.values()) for c in cl]))
    if model is None:
        what = ("the logistic model (model=None) supports binary labels 0/1 only; pass "
                f"model=TorchModel(n_classes={n_data})")
    else:
        what = (f"the model has {n_model} classes, so labels must lie in "
                f"0..{n_model - 1} (model={model!r})")
    raise ValueError(f"the clients have n_classes={n_data} (training labels "
                     f"{labels.tolist()}), but {what}")
