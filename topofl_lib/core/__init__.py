"""The bottom layer: containers every layer shares, the learner protocol, the
registries that higher layers plug scenarios and methods into, and seed helpers.

Nothing here imports another part of :mod:`topofl_lib` (except input validation), and
nothing heavier than NumPy.
"""

from .containers import ATTACKS, Client, FederatedScenario
from .learner import Learner, ModelClass, PrivateGradients, Workspace
from .optional import require
from .privacy import ModelPrivacy
from .registry import (
    ScenarioSpec,
    get_method,
    get_scenario,
    method_names,
    register_method,
    register_scenario,
    scenario_names,
)
from .seeds import SEED_BOUND, check_seeds, draw_seed

__all__ = [
    "ATTACKS",
    "SEED_BOUND",
    "Client",
    "FederatedScenario",
    "Learner",
    "ModelClass",
    "ModelPrivacy",
    "PrivateGradients",
    "ScenarioSpec",
    "Workspace",
    "check_seeds",
    "draw_seed",
    "get_method",
    "get_scenario",
    "method_names",
    "register_method",
    "register_scenario",
    "require",
    "scenario_names",
]
