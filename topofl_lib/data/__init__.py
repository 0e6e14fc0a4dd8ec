"""Federated scenario generators and client containers."""

from .scenarios import Client, FederatedScenario, make_benchmark, make_healthcare, make_scenario

__all__ = ["Client", "FederatedScenario", "make_benchmark", "make_healthcare", "make_scenario"]
