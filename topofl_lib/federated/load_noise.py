"""Per-load noise in a fit: which methods may apply it, and the seed it is drawn from.

A client's :attr:`~topofl_lib.core.Client.load_noise_sd` (FedTopo's N-skew read as a
data-loading transform) is the client's own: :meth:`~topofl_lib.core.Client.learner_data`
hands its sd and a seed to the learner, which adds a fresh draw to every mini-batch its
``gradient`` loads. The seed is :func:`~topofl_lib.federated.local.load_noise_seed` of the
run's seed, the client's index and the round whose data are loaded (a run without an int
seed draws the base once from its generator), so the same seed gives the same noise.

An algorithm that reads the clients' training inputs anywhere else (descriptors, feature
means, a second forward pass, repeated steps on one batch) would see them clean, so only a
class that declares ``load_noise = True`` *in its own body* accepts such clients (the
flag is not inherited: a subclass is refused until it is checked); the others raise
naming the method.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from ..core.containers import FederatedScenario
from ..core.seeds import draw_seed

__all__ = ["applies_load_noise", "noise_entropy"]


def applies_load_noise(cls: type) -> bool:
    """Whether the algorithm class ``cls`` accepts clients with per-load noise:
    ``load_noise = True`` in its own body (an inherited flag does not count).

    Parameters
    ----------
    cls : type
        A :class:`~topofl_lib.federated.FederatedAlgorithm` subclass.

    Returns
    -------
    bool
    """
    return vars(cls).get("load_noise", False) is True


def noise_entropy(method, scenario: FederatedScenario, standardise: bool,
                  rng: np.random.Generator) -> int | None:
    """The base of the per-load noise seeds of a fit; None if no client has such noise.

    Refuses a method that cannot apply the noise to everything it trains on, and
    standardised inputs (the noise is in the scenario's units).

    Parameters
    ----------
    method : FederatedAlgorithm
        The method being fitted (its class and ``random_state``).
    scenario : FederatedScenario
        The scenario it is fitted on.
    standardise : bool
        Whether the fit standardises each client.
    rng : numpy.random.Generator
        The fit's generator: one seed is drawn from it when ``random_state`` is not an
        int, and only if a client has per-load noise.

    Returns
    -------
    int or None
    """
    levels = scenario.load_noise_levels
    if not levels:
        return None
    name = type(method).__name__
    if not applies_load_noise(type(method)):
        raise ValueError(
            f"{name} ({method.name}) cannot apply per-load noise, and the scenario has "
            f"clients with load_noise_sd in {levels}: the method does not train on the "
            "learner's mini-batches alone (it reads the training inputs elsewhere, or "
            "steps more than once on one batch), or has not been checked for it; use a "
            "method that applies it (FedAvg, FedTopo...) or the scenario's noise='fixed'")
    if standardise:
        raise ValueError("per-load noise (load_noise_sd) is in the scenario's units, but "
                         "standardise=True rescales the inputs; use standardise=False")
    seed = method.random_state
    return (int(seed) if isinstance(seed, Integral) and not isinstance(seed, bool)
            else draw_seed(rng))
