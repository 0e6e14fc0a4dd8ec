"""What a comparison returns: per-round curves and final metrics of every run."""

from __future__ import annotations

import pandas as pd

from ..statistics import paired_differences, summarise

__all__ = ["CURVE_COLUMNS", "FINAL_COLUMNS", "PRIVACY_COLUMNS", "SETTING_COLUMNS",
           "UNRECORDED", "ComparisonResult", "settings_of"]

#: Columns of :attr:`ComparisonResult.curves` (then the setting columns).
CURVE_COLUMNS = ["scenario", "method", "seed", "round", "auc", "accuracy"]
#: Columns of :attr:`ComparisonResult.final` (then the setting columns).
FINAL_COLUMNS = ["scenario", "method", "seed", "auc", "accuracy", "convergence_round"]
#: A run with differential privacy of the model channel (``model_dp``) also has these
#: columns in ``curves`` (after each round) and ``final`` (after the last): the
#: largest epsilon over its clients, both channels together and each alone, and both
#: together against the server itself (its ``history_``); rows of other runs hold NaN
#: there when runs of both kinds are mixed.
PRIVACY_COLUMNS = ("epsilon", "epsilon_descriptor", "epsilon_model", "epsilon_server")
#: Settings a scenario's ``meta`` may hold; each present one becomes a column of
#: ``curves`` and ``final`` (the image scenarios: dataset, partition and its parameter),
#: so tables are selected by setting, never by parsing the scenario's name.
SETTING_COLUMNS = ("dataset", "partition", "param")
#: :attr:`ComparisonResult.machines` of a run whose record does not name its CPU (stored
#: before records did).
UNRECORDED = "unrecorded"


def settings_of(scenario) -> dict:
    """The scenario's settings (:data:`SETTING_COLUMNS` in its
    ``meta``), as columns to add to its rows.

    Parameters
    ----------
    scenario : FederatedScenario
        A realised scenario.

    Returns
    -------
    dict
        ``{setting: value}`` for each setting the scenario's ``meta`` holds.
    """
    meta = getattr(scenario, "meta", None) or {}
    return {k: meta[k] for k in SETTING_COLUMNS if k in meta}


class ComparisonResult:
    """Per-round curves and final metrics of a multi-seed comparison.

    Parameters
    ----------
    curves, final : pandas.DataFrame
        Stored as the attributes below.
    models : dict
        Stored as ``models``.
    diverged : dict, optional
        Stored as ``diverged``.
    schedule : object, optional
        Stored as ``schedule``.
    devices : iterable of str, optional
        Stored as ``devices``.
    machines : iterable of str, optional
        Stored as ``machines``.

    Attributes
    ----------
    curves : pandas.DataFrame
        Columns ``scenario, method, seed, round, auc, accuracy`` (rounds are 1-based),
        then, when a run has ``model_dp``, :data:`PRIVACY_COLUMNS` (the epsilon after
        each round), then the scenario's settings (:data:`SETTING_COLUMNS`) where it
        has them.
    final : pandas.DataFrame
        Columns ``scenario, method, seed, auc, accuracy, convergence_round``: the
        last round's metrics and the first round reaching 95% of the final AUC; then
        :data:`PRIVACY_COLUMNS` (the run's epsilon) when a run has ``model_dp``; then the
        settings.
    models : dict
        ``(method, seed) -> fitted estimator`` (kept only if ``keep_models``; ``None``
        for a diverged run).
    diverged : dict
        ``(method, seed) -> reason`` of the runs that diverged (only with
        ``run_comparison(on_divergence="record")``; their metrics are NaN).
    schedule : topofl_lib.runner.schedule.Schedule or None
        How the runs computed in this call were executed (serial or parallel, the
        batch size, and why); ``None`` when every run came from the run store.
    devices : tuple of str
        The devices the runs were computed on (``"cpu"``, ``"cuda:0 (<model>)"``),
        from their records.
    machines : tuple of str
        The CPUs the runs were computed on
        (:func:`~topofl_lib.environment.cpu_signature`), from their records;
        :data:`UNRECORDED` for a run stored before records named it. The same code and
        data can round differently on another CPU, so more than one entry means the
        runs are not all recomputable bit for bit on one machine.
    """

    def __init__(self, curves: pd.DataFrame, final: pd.DataFrame, models: dict,
                 diverged: dict | None = None, schedule=None, devices=(), machines=()):
        self.curves = curves
        self.final = final
        self.models = models
        self.diverged = dict(diverged or {})
        self.schedule = schedule
        self.devices = tuple(devices)
        self.machines = tuple(machines)

    def summary(self, metric: str = "auc") -> pd.DataFrame:
        """Mean, std and 95% CI per method; see :func:`topofl_lib.statistics.summarise`.

        Parameters
        ----------
        metric : str, default="auc"
            A column of ``final``.

        Returns
        -------
        pandas.DataFrame
            Indexed by method.
        """
        return summarise(self.final, metric)

    def paired(self, reference: str = "pTopoFL", metric: str = "auc") -> pd.DataFrame:
        """Paired differences ``reference - baseline``; see
        :func:`topofl_lib.statistics.paired_differences`.

        Parameters
        ----------
        reference : str, default="pTopoFL"
            The method the others are compared with.
        metric : str, default="auc"
            A column of ``final``.

        Returns
        -------
        pandas.DataFrame
            One row per other method.
        """
        return paired_differences(self.final, reference, metric)
