"""Every notebook's parameters: what each may be, and its value in each profile.

This module is the one source of the parameters: a parameter is declared once, in
:data:`NOTEBOOKS` (its value spec, its one-line help, its value in each profile), and the
rest follows from that declaration. A notebook's ``parameters`` cell is rendered from it
(:func:`parameters_cell_source`: ``profile = "quick"``, every other parameter ``= None``,
the profile's value, with its help as a comment, and ``output_dir = None``);
``scripts/sync_parameters_cells.py`` rewrites the cells after a change to
:data:`NOTEBOOKS`, and ``tests/test_notebook_params.py`` fails while a cell differs. The
notebook's first code cell hands its namespace to :func:`notebook_parameters`, which
fills the Nones from the profile, validates every value (lists element by element) and
writes the validated values back, before anything runs or is written::

    cfg = notebook_parameters("robustness", globals())
    # n_seeds, rates, ... now hold the validated values; cfg.figures_dir, cfg.profile ...

Adding a parameter is one entry in ``spec`` (and its values in the profiles), then
``python scripts/sync_parameters_cells.py``.

``python -m topofl_lib reproduce`` passes only ``profile`` and ``output_dir`` (and
``n_workers`` where the notebook takes it).

Run through papermill (``papermill NB OUT -p NAME VALUE``), the check also covers what
papermill injected: papermill puts its values in a cell of its own (first line
``# Parameters``) right after the cell tagged ``parameters``, and warns only, then runs
on, when a name is unknown or the tag is missing. :func:`notebook_parameters` reads
that cell back from the kernel's input history and refuses a name the notebook does not
have (a misspelt ``-p n_seed 1`` would otherwise run the profile's ``n_seeds``), and a
name that a later cell set again before the check: that is the notebook's own
parameters cell, run after papermill's because it lost its ``parameters`` tag, so that
every value passed to papermill is silently replaced by None (the profile's value) and
``output_dir`` by the default folder. :func:`parameters_cell` checks a notebook file for
the same fault before it runs (``reproduce`` asks it first).

Profiles, ranked: ``quick`` (CI, minutes) < ``cpu`` < ``paper`` (the papers' protocols).
``cpu`` is the paper protocol for every notebook but the two deep ones (FedTopo, pTopoFL
deep), where it is a reduced protocol that runs in about an hour on 2 cores.

The ranges are those the library accepts (see the function each parameter feeds), plus
what a notebook needs (e.g. the robustness notebook plots the label-flip attack, so
``attacks`` must contain it).
"""

from __future__ import annotations

import ast
import copy
import sys
import textwrap
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._validation import check_bool, check_choice, check_int, check_real
from .clustering.evaluation import CLUSTERING_DATASETS, PAPER_DATASETS
from .data.records import CATEGORICAL, MEDICALDATA, MISSING, SMALL_SITES
from .data.scenarios import ATTACKS
from .data.scenarios import PROTOCOLS as DATA_PROTOCOLS
from .deep.datasets import OFFLINE_DATASETS as IMAGE_DATASETS  # what ptopofl_deep runs
from .deep.experiments import DEEP_LABELS
from .deep.partitions import PARTITIONS
from .fedtopo.schedules import SCHEDULES
from .outputs import output_dirs
from .studies.dp_tradeoff import DP_LEVELS
from .studies.fedtopo import TABLE1_METHODS
from .studies.own_data import OWN_DATA_SOURCE, OWN_DATA_TABLE
from .studies.paper_data import settings_of_paper
from .studies.table1 import TABLE1_VARIANTS

__all__ = [
    "EXECUTION",
    "NOTEBOOKS",
    "PROFILES",
    "Either",
    "Flag",
    "Folder",
    "Int",
    "ListOf",
    "Notebook",
    "NotebookParameters",
    "OneOf",
    "Real",
    "Record",
    "Text",
    "notebook_parameters",
    "parameters_cell",
    "parameters_cell_source",
    "write_parameters_cell",
]

#: Profile names, from the shortest to the longest protocol.
PROFILES = ("quick", "cpu", "paper")
#: Parameters every notebook's parameters cell sets besides those of its spec.
COMMON = ("profile", "output_dir")
#: The first line of the cell papermill injects (its Python translator's comment).
PAPERMILL_HEADER = "# Parameters"
#: papermill's own optional parameters (``--inject-paths``), never the notebook's.
PAPERMILL_PREFIX = "PAPERMILL_"
#: The parameters cell's header comment (:func:`parameters_cell_source`), wrapped at
#: ``HEADER_WIDTH`` columns; ``{profiles}``: the notebook's ``profile_notes``.
HEADER = ("Parameters (papermill injects new values here). None: the profile's value, from "
          "topofl_lib.notebook_params.NOTEBOOKS; profiles: {profiles}.")
HEADER_WIDTH = 100
#: The help of ``output_dir`` in every parameters cell (:func:`topofl_lib.outputs.output_dirs`).
OUTPUT_DIR_HELP = ("None: $TOPOFL_OUTPUT_DIR, else build/interactive/ (never figures/, "
                   "results/)")


# --------------------------------------------------------------------------- value specs
def _check_bounds(spec) -> None:
    """A spec's ``low`` is at most its ``high`` (a spec no value passes is a typo)."""
    if spec.low is not None and spec.high is not None and spec.low > spec.high:
        raise ValueError(f"{type(spec).__name__}(low={spec.low!r}, high={spec.high!r}): low "
                         "must be at most high")


@dataclass(frozen=True)
class Int:
    """An int in ``[low, high]``.

    Attributes
    ----------
    low, high : int or None
        Inclusive bounds (``None``: unbounded).
    """

    low: int | None = None
    high: int | None = None

    def __post_init__(self):
        for bound in ("low", "high"):
            if getattr(self, bound) is not None:
                check_int(getattr(self, bound), f"Int.{bound}")
        _check_bounds(self)

    def check(self, value: Any, name: str) -> int:
        """``value`` as an int; a ``TypeError`` or ``ValueError`` names ``name``.

        Parameters
        ----------
        value : object
            The value to check.
        name : str
            The parameter's name, used in error messages.

        Returns
        -------
        int
            The checked value.
        """
        return check_int(value, name, low=self.low, high=self.high)


@dataclass(frozen=True)
class Real:
    """A finite real in ``[low, high]`` (``(low, high]`` with ``low_open``).

    Attributes
    ----------
    low, high : float or None
        Bounds (``None``: unbounded); ``high`` is inclusive.
    low_open : bool
        Exclude ``low`` itself.
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False

    def __post_init__(self):
        for bound in ("low", "high"):
            if getattr(self, bound) is not None:
                check_real(getattr(self, bound), f"Real.{bound}")
        check_bool(self.low_open, "Real.low_open")
        _check_bounds(self)

    def check(self, value: Any, name: str) -> float:
        """``value`` as a float; a ``TypeError`` or ``ValueError`` names ``name``.

        Parameters
        ----------
        value : object
            The value to check.
        name : str
            The parameter's name, used in error messages.

        Returns
        -------
        float
            The checked value.
        """
        return check_real(value, name, low=self.low, high=self.high, low_open=self.low_open)


@dataclass(frozen=True)
class OneOf:
    """One of a few strings."""

    choices: tuple[str, ...]

    def __post_init__(self):
        if (isinstance(self.choices, str) or not self.choices
                or not all(isinstance(c, str) for c in self.choices)):
            raise TypeError(f"OneOf.choices must be a non-empty sequence of strings, got "
                            f"{self.choices!r}")

    def check(self, value: Any, name: str) -> str:
        """``value`` if it is one of ``choices``, else a ``ValueError`` naming ``name``.

        Parameters
        ----------
        value : object
            The value to check.
        name : str
            The parameter's name, used in error messages.

        Returns
        -------
        str
            The checked value.
        """
        return check_choice(value, name, self.choices)


@dataclass(frozen=True)
class Text:
    """A non-empty one-line string (a file path, a column name)."""

    def check(self, value: Any, name: str) -> str:
        """``value`` if it is a non-empty one-line string; a ``TypeError`` or ``ValueError``
        names ``name``.

        Parameters
        ----------
        value : object
            The value to check.
        name : str
            The parameter's name, used in error messages.

        Returns
        -------
        str
            The checked value.
        """
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {value!r} ({type(value).__name__})")
        if not value.strip() or "\n" in value:
            raise ValueError(f"{name} must be a non-empty one-line string, got {value!r}")
        return value


@dataclass(frozen=True)
class ListOf:
    """A list (or tuple) of distinct values, each checked by ``item``.

    ``min_len`` / ``length`` bound its size, ``contains`` lists values that must be in
    it, and ``increasing`` asks for strictly increasing values.

    Attributes
    ----------
    item : Int, Real, OneOf or Text
        Checks each entry.
    min_len : int
        Fewest entries.
    length : int or None
        Exact number of entries (``None``: any).
    contains : tuple
        Values the list must hold.
    increasing : bool
        Require strictly increasing entries (else only distinct ones).
    """

    item: Int | Real | OneOf | Text
    min_len: int = 1
    length: int | None = None
    contains: tuple = ()
    increasing: bool = False

    def check(self, value: Any, name: str) -> list:
        """``value`` as a list of checked items; a ``TypeError`` or ``ValueError`` names ``name``.

        Parameters
        ----------
        value : object
            The value to check.
        name : str
            The parameter's name, used in error messages.

        Returns
        -------
        list
            The checked items, in order.
        """
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{name} must be a list, got {value!r} ({type(value).__name__})")
        if self.length is not None and len(value) != self.length:
            raise ValueError(f"{name} must have {self.length} entries, got {len(value)}: "
                             f"{list(value)!r}")
        if len(value) < self.min_len:
            raise ValueError(f"{name} must have at least {self.min_len} entr"
                             f"{'y' if self.min_len == 1 else 'ies'}, got {list(value)!r}")
        out = [self.item.check(v, f"{name}[{i}]") for i, v in enumerate(value)]
        if self.increasing:
            for i in range(1, len(out)):
                if not out[i - 1] < out[i]:
                    raise ValueError(f"{name} must be strictly increasing, got {out!r}")
        elif len(set(out)) < len(out):
            raise ValueError(f"{name} has repeated entries: {out!r}")
        missing = [c for c in self.contains if c not in out]
        if missing:
            raise ValueError(f"{name} must contain {missing} (the notebook needs it), "
                             f"got {out!r}")
        return out


@dataclass(frozen=True)
class Either:
    """The first of ``options`` that accepts the value.

    Attributes
    ----------
    options : tuple
        Value specs, tried in order.
    description : str
        What is accepted, for the error message.
    """

    options: tuple
    description: str

    def check(self, value: Any, name: str):
        """What the first accepting option returns; a ``ValueError`` if none accepts.

        Parameters
        ----------
        value : object
            The value to check.
        name : str
            The parameter's name, used in error messages.

        Returns
        -------
        object
            The value as that option returns it.
        """
        errors = []
        for option in self.options:
            try:
                return option.check(value, name)
            except (TypeError, ValueError) as exc:
                errors.append(str(exc))
        raise ValueError(f"{name} must be {self.description}, got {value!r} "
                         f"({'; '.join(errors)})")


@dataclass(frozen=True)
class Flag:
    """A bool (``True`` or ``False``, not 0 or 1)."""

    def check(self, value: Any, name: str) -> bool:
        """``value`` if it is a bool, else a ``TypeError`` naming ``name``.

        Parameters
        ----------
        value : object
            The value to check.
        name : str
            The parameter's name, used in error messages.

        Returns
        -------
        bool
            The checked value.
        """
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r} "
                            f"({type(value).__name__})")
        return value


@dataclass(frozen=True)
class Folder:
    """A folder's path as a non-empty string, or ``None`` (the default folder)."""

    def check(self, value: Any, name: str) -> str | None:
        """``value`` as a string path, or ``None``; a ``TypeError`` or ``ValueError``
        names ``name``.

        Parameters
        ----------
        value : object
            The value to check.
        name : str
            The parameter's name, used in error messages.

        Returns
        -------
        str or None
            The checked value.
        """
        if value is None:
            return None
        if not isinstance(value, (str, Path)):
            raise TypeError(f"{name} must be a folder's path (a string) or None, got "
                            f"{value!r} ({type(value).__name__})")
        if not str(value).strip():
            raise ValueError(f"{name} must name a folder, got {value!r}")
        return str(value)


@dataclass(frozen=True)
class Record:
    """A dict of named fields, each checked by its own value spec.

    A notebook passes one such dict where several settings belong together (the deep
    runs' protocol, say). :func:`notebook_parameters` lays a given dict over the
    profile's, so that a dict naming some fields keeps the profile's value of the others
    (``{"n_seeds": 2}`` changes the seeds only); :meth:`check` itself asks for every field.
    Through papermill, pass it as YAML: ``papermill NB OUT -y "deep: {n_seeds: 2}"``.

    Attributes
    ----------
    fields : Mapping
        Field name -> its value spec, in the order of the checked dict.
    """

    fields: Mapping[str, Any]

    def check(self, value: Any, name: str) -> dict:
        """``value`` as a dict of checked fields; a ``TypeError`` or ``ValueError`` names
        ``name`` (and the field, as ``name['field']``).

        Parameters
        ----------
        value : object
            The value to check: a mapping with exactly the keys of ``fields``.
        name : str
            The parameter's name, used in error messages.

        Returns
        -------
        dict
            The checked fields, in the order of ``fields``.
        """
        if not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a dict with keys {list(self.fields)}, got "
                            f"{value!r} ({type(value).__name__})")
        unknown = [k for k in value if k not in self.fields]
        missing = [k for k in self.fields if k not in value]
        if unknown or missing:
            raise ValueError(f"{name} must have the keys {list(self.fields)}, got "
                             f"{list(value)!r} (unknown: {unknown}, missing: {missing})")
        return {k: spec.check(value[k], f"{name}[{k!r}]") for k, spec in self.fields.items()}


# --------------------------------------------------------------------------- notebooks
@dataclass(frozen=True)
class Notebook:
    """A notebook that ``reproduce`` runs: its parameters and their profile values.

    This is the parameters' one declaration: the notebook's ``parameters`` cell is
    rendered from it (:func:`parameters_cell_source`) and :func:`notebook_parameters`
    validates against it.

    Parameters
    ----------
    claims : str
        The notebook writes its claim rows to ``results/claims/<claims>.csv``.
    spec : dict
        Parameter name -> ``(value spec, help)``: a value spec (:class:`Int`,
        :class:`Real`, :class:`OneOf`, :class:`Text`, :class:`ListOf`, :class:`Either`,
        :class:`Record`) and the one-line
        help that the parameter's line in the parameters cell carries as its comment. The
        cell lists the parameters in this order.
    shared : dict
        Values common to every profile.
    quick, paper : dict
        Each profile's own values.
    cpu : dict or None
        The cpu profile's values; None: the paper profile's.
    execution : dict
        Name of an :data:`EXECUTION` parameter the notebook also takes -> its help (how
        it runs, not what it measures: they never make a run ``custom``); the cell lists
        them after ``spec``'s.
    profile_notes : str
        What each profile is to this notebook, for the cell's header comment (it names
        every profile).
    """

    claims: str
    spec: Mapping[str, tuple[Any, str]]
    shared: Mapping[str, Any]
    quick: Mapping[str, Any]
    paper: Mapping[str, Any]
    cpu: Mapping[str, Any] | None = None
    execution: Mapping[str, str] = field(default_factory=dict)
    profile_notes: str = "quick (CI), cpu (committed), paper"
    _values: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        for name, entry in self.spec.items():
            if not (isinstance(entry, tuple) and len(entry) == 2 and _one_line(entry[1])):
                raise ValueError(f"spec[{name!r}] must be (value spec, one-line help), the "
                                 f"help without '=' ({_NO_EQUALS}), got {entry!r}")
        for name, text in self.execution.items():
            if name not in EXECUTION or not _one_line(text):
                raise ValueError(f"execution[{name!r}] must be a one-line help of an "
                                 f"EXECUTION parameter {sorted(EXECUTION)}, without '=' "
                                 f"({_NO_EQUALS}), got {text!r}")
        for profile in PROFILES:
            own = getattr(self, profile) if profile != "cpu" or self.cpu else self.paper
            given = {**self.shared, **own}
            if set(given) != set(self.spec):
                raise ValueError(f"profile {profile!r} gives {sorted(given)}, but the "
                                 f"parameters are {sorted(self.spec)}")
            self._values[profile] = _check_values(self.checks(), given, f"profile {profile!r}: ")

    def checks(self) -> dict[str, Any]:
        """Parameter name -> its value spec (``spec`` without the help)."""
        return {name: check for name, (check, _) in self.spec.items()}

    def values(self, profile: str) -> dict[str, Any]:
        """The validated parameter values of ``profile``."""
        check_choice(profile, "profile", PROFILES)
        return copy.deepcopy(self._values[profile])  # a notebook may change its lists


#: Why a help may not contain "=": it is the comment of the parameter's line.
_NO_EQUALS = "papermill's parser cannot read a parameter line with a second '=' and warns"


def _one_line(text: Any) -> bool:
    """A help: one non-empty line without ``=`` (see :data:`_NO_EQUALS`)."""
    return isinstance(text, str) and bool(text.strip()) and "\n" not in text \
        and "=" not in text


def _check_values(checks: Mapping[str, Any], values: Mapping[str, Any], context: str = ""):
    out = {}
    for name, value in values.items():
        try:
            out[name] = checks[name].check(value, name)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{context}{exc}") from None
    return out


POSITIVE = Int(low=1)
#: Parameters that choose how a notebook runs, not what it measures: name -> (spec,
#: default). ``n_workers``: runs executed at once, each in its own process with one torch
#: thread (:func:`topofl_lib.runner.run_comparison`; results are identical for any
#: value).
#: ``data_dir``: where the paper's own data sets are (None:
#: :func:`topofl_lib.data.locations.data_dir`'s default); ``paper_data_cpu``: run the
#: paper-data settings on the CPU when there is no CUDA GPU (the same protocol, far
#: slower; :func:`topofl_lib.studies.paper_data.setting_status`).
EXECUTION: dict[str, tuple[Any, Any]] = {"n_workers": (POSITIVE, 1), "data_dir": (Folder(), None),
                                         "paper_data_cpu": (Flag(), False)}
_RUNS_AT_ONCE = "runs at once (processes, one torch thread each); no number depends on it"
_EPSILON = Real(low=0.0, low_open=True)
#: Labels of the deep methods that name one method (not a pattern such as FedTopo@<block>).
_DEEP_METHODS = tuple(label for label in DEEP_LABELS if "<" not in label)
_PAPER_DATA = ("paper-data settings: check their data and device only, or run those that "
               "can")
_DATA_DIR = "folder of the papers' data sets (None: $TOPOFL_DATA_DIR, else ~/topofl_data)"
_PAPER_DATA_CPU = "run the paper-data settings on the CPU when there is no CUDA GPU (slow)"


#: The deep pTopoFL notebook's protocol per profile. The privacy notebook's deep DP runs
#: use the same values, so that its non-private runs are that notebook's (one run store).
_DEEP_PROTOCOL = {
    # quick: a smoke run of the suite (1,000 images train 5 methods in 2 rounds)
    "quick": {"n_seeds": 1, "n_rounds": 2, "local_epochs": 1, "n_train": 1000, "n_test": 500},
    "cpu": {"n_seeds": 3, "n_rounds": 10, "local_epochs": 1, "n_train": 12000, "n_test": 2000},
    "paper": {"n_seeds": 5, "n_rounds": 100, "local_epochs": 5, "n_train": 60000,
              "n_test": 10000},
}
def _deep_dp(profile: str, epsilons: list[float]) -> dict:
    """The privacy notebook's ``deep`` in ``profile``: its DP and the deep notebook's protocol."""
    return {"epsilons": epsilons, "level": "sample", **_DEEP_PROTOCOL[profile]}


#: The privacy notebook's values in the paper profile (cpu: the same, but the deep runs).
_PRIVACY_PAPER = {"n_seeds": 10, "attack_seeds": 3, "attack_clients": 3,
                  "batch_sizes": [1, 2, 4, 8, 16], "gradient_iters": 1500,
                  "descriptor_iters": 1000, "mia_targets": 100, "mia_shadows": 16,
                  "dp_seeds": 20, "dp_epsilons": [1.0, 3.0, 10.0, 30.0, 100.0],
                  "detect_seeds": 10, "canary_trials": 20000}
#: The privacy notebook's ``deep`` fields: its DP settings, then the deep notebook's protocol.
_DEEP_DP = Record({"epsilons": ListOf(_EPSILON, increasing=True), "level": OneOf(DP_LEVELS),
                   "n_seeds": POSITIVE, "n_rounds": POSITIVE, "local_epochs": POSITIVE,
                   "n_train": Int(low=10), "n_test": Int(low=10)})


def _paper_data(paper: str, source: str) -> dict:
    """The spec of a deep notebook's paper-data parameters (paper_settings, paper_data)."""
    return {"paper_settings": (ListOf(OneOf(tuple(settings_of_paper(paper))), min_len=0),
                               f"{paper}'s settings on its own data to attempt ({source})"),
            "paper_data": (OneOf(("check", "run")), _PAPER_DATA)}


def _table1(claims: str) -> Notebook:
    # single_seed: the paper's single run (its code's default scenario seed is 42)
    return Notebook(
        claims,
        spec={"n_seeds": (POSITIVE, "independent scenario realisations per protocol"),
              "n_rounds": (POSITIVE, "communication rounds (paper: 15)"),
              "single_seed": (Int(low=0), "shown on its own as the paper's single run (its "
                                          "code's seed: 42)")},
        shared={"n_rounds": 15, "single_seed": 42},
        quick={"n_seeds": 3}, paper={"n_seeds": 20})


def _own_data() -> Notebook:
    # the bundled demonstration: medicaldata's opt trial (topofl_lib.data.records)
    demo, labels = MEDICALDATA[OWN_DATA_TABLE], list(TABLE1_VARIANTS["ours"])
    return Notebook(
        "own_data",
        spec={"records_path": (Text(), "CSV or Parquet file of your sites' records, or "
                                       "medicaldata:<table> (bundled: opt, indo_rct)"),
              "site": (Text(), "column naming each record's site (one client per site)"),
              "label": (Text(), "binary outcome column"),
              "positive": (Text(), "label value coded 1; auto: the larger value in sorted "
                                   "order"),
              "features": (Either((OneOf(("all",)), ListOf(Text())),
                                  '"all" or a list of column names'),
                           "feature columns; all: every column but site and label"),
              "categorical": (OneOf(CATEGORICAL), "non-numeric columns: onehot, ordinal, "
                                                  "refuse"),
              "missing": (OneOf(MISSING), "missing values: refuse, or impute (site-wise "
                                          "training medians; unlabelled records left out)"),
              "min_records": (Int(low=4), "fewest records a site may have"),
              "small_sites": (OneOf(SMALL_SITES), "a site under min_records or with < 2 of "
                                                  "a class: refuse or drop"),
              "drop_sites": (ListOf(Text(), min_len=0), "sites left out by name"),
              "test_size": (Real(0.0, 0.9, low_open=True),
                            "fraction of each site's records (per class) held out"),
              "n_seeds": (POSITIVE, "seeds 0..n_seeds-1: each draws the splits and seeds "
                                    "the methods"),
              "n_rounds": (POSITIVE, "communication rounds"),
              "protocols": (ListOf(OneOf(DATA_PROTOCOLS)),
                            "local solvers: ours (one SGD), paper (the paper code's)"),
              "methods": (ListOf(OneOf(tuple(labels)), contains=("pTopoFL",)),
                          "Table 1 methods (pTopoFL needed)")},
        shared={"records_path": OWN_DATA_SOURCE, "site": demo.site, "label": demo.label,
                "positive": demo.positive, "features": list(demo.features),
                "categorical": "onehot", "missing": "impute", "min_records": 10,
                "small_sites": "refuse", "drop_sites": [], "test_size": 0.3, "n_rounds": 15,
                "protocols": list(DATA_PROTOCOLS), "methods": labels},
        quick={"n_seeds": 3}, paper={"n_seeds": 20},
        execution={"n_workers": _RUNS_AT_ONCE},
        profile_notes="quick (CI), cpu (committed; the same values as paper), paper")


#: notebook name -> its parameters and their values in each profile.
NOTEBOOKS: dict[str, Notebook] = {
    "scenario_a_healthcare": _table1("table1_hc"),
    "scenario_b_benchmark": _table1("table1_bm"),
    "robustness": Notebook(
        "robustness",
        spec={"n_seeds": (POSITIVE, "scenario realisations per attack rate"),
              "n_rounds": (POSITIVE, "paper Sec. 4.4 / Table 3"),
              # robustness_sweep: rate in [0, 0.5]
              "rates": (ListOf(Real(0.0, 0.5)),
                        "fractions of adversarial hospitals, each in [0, 0.5]"),
              "attacks": (ListOf(OneOf(ATTACKS), contains=("label_flip",)),
                          "label_flip (needed), noisy_label_flip, sign_flip")},
        shared={"n_rounds": 10, "attacks": list(ATTACKS)},
        quick={"n_seeds": 3, "rates": [0.0, 0.3, 0.5]},
        paper={"n_seeds": 10, "rates": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]}),
    "continual_drift": Notebook(
        "continual",
        # make_continual shifts at round 10 and needs shift_round <= n_rounds - 1
        spec={"n_seeds": (POSITIVE, "scenario realisations"),
              "n_rounds": (Int(low=11), "rounds (at least 11: clients switch task at round 10)"),
              "drift_threshold": (Real(low=0.0, low_open=True),
                                  "Eq. 9 drift that triggers re-clustering")},
        shared={"n_rounds": 20, "drift_threshold": 0.12},
        quick={"n_seeds": 3}, paper={"n_seeds": 20}),
    "ablation_theorems": Notebook(
        "ablation",
        spec={"n_seeds": (POSITIVE, "scenario realisations"),
              "n_rounds": (POSITIVE, "rounds"),
              "betas": (ListOf(Real(0.0, 1.0)), "beta sweep, each in [0, 1]"),
              # the healthcare scenario's 8 clients
              "cluster_counts": (ListOf(Int(1, 8)), "M sweep, each in 1..8"),
              "etas": (ListOf(Real(low=0.0)), "Theorem 3 perturbation norms")},
        shared={"n_rounds": 15, "etas": [0.01, 0.05, 0.1, 0.2, 0.4]},
        quick={"n_seeds": 3, "betas": [0.0, 0.3, 0.6, 1.0], "cluster_counts": [1, 2, 3, 4]},
        paper={"n_seeds": 20, "betas": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0],
               "cluster_counts": [1, 2, 3, 4, 5, 6]}),
    "gfc_clustering": Notebook(
        "gfc",
        spec={"n_seeds": (POSITIVE, "seeds"),
              "epsilons": (ListOf(_EPSILON), "LDP budgets, each > 0"),
              "datasets": (ListOf(OneOf(CLUSTERING_DATASETS)),
                           "topofl_lib.clustering.evaluation.CLUSTERING_DATASETS"),
              "local_counts": (ListOf(POSITIVE), "Tables 4-5: local centroids per client"),
              "client_counts": (ListOf(POSITIVE), "Table 6: scalability (paper: 100 and 1000)"),
              "scalability_seeds": (POSITIVE,
                                    "seeds for Table 6 (1000 clients is the slow part)"),
              "table1_datasets": (ListOf(OneOf(PAPER_DATASETS)),
                                  "Table 1's datasets (files from data_dir; "
                                  "Waveform generated)"),
              "table1_epsilons": (ListOf(_EPSILON), "LDP budgets of Table 1's own datasets"),
              "table1_seeds": (POSITIVE, "seeds of Table 1's own datasets and of Table 4 "
                                         "(Abalone)"),
              "scaling_epsilons": (ListOf(_EPSILON), "budgets of Waveform with bounded and "
                                                     "with z-scored records (table1_seeds)")},
        shared={"table1_datasets": list(PAPER_DATASETS),
                "table1_epsilons": [0.1, 0.05, 0.01]},
        quick={"n_seeds": 2, "epsilons": [1000.0, 10.0, 1.0, 0.1],
               "datasets": ["iris", "blobs2d", "mnist5k"], "local_counts": [5, 15, 30],
               "client_counts": [100], "scalability_seeds": 1, "table1_seeds": 2,
               "scaling_epsilons": [1000.0, 0.1]},
        paper={"n_seeds": 20, "epsilons": [1000.0, 100.0, 10.0, 1.0, 0.1, 0.05, 0.01],
               "datasets": [d for d in CLUSTERING_DATASETS if d != "waveform"],
               "local_counts": [5, 15, 30, 60], "client_counts": [100, 1000],
               "scalability_seeds": 20, "table1_seeds": 20,
               "scaling_epsilons": [1000.0, 1.0, 0.1, 0.05, 0.01]},
        execution={"data_dir": _DATA_DIR}),
    "privacy_analysis": Notebook(
        "privacy",
        spec={"n_seeds": (POSITIVE, "scenario realisations for the proxies and the DP "
                                    "utility curve"),
              "attack_seeds": (POSITIVE, "scenario realisations attacked"),
              "attack_clients": (POSITIVE, "honest clients attacked per realisation"),
              "batch_sizes": (ListOf(POSITIVE), "gradient-inversion batch sizes"),
              "gradient_iters": (POSITIVE, "Adam steps of the gradient-matching attack"),
              "descriptor_iters": (POSITIVE,
                                   "evolution-strategy steps of the descriptor inversion"),
              # membership_inference: n, n_targets, n_shadow >= 2
              "mia_sizes": (ListOf(Int(low=2)), "client sizes n for membership inference "
                                                "(5: a positive control)"),
              "mia_targets": (Int(low=2),
                              "membership-inference trials per realisation and size"),
              "mia_shadows": (Int(low=2), "shadow datasets per trial and hypothesis"),
              "epsilons": (ListOf(_EPSILON), "DP budgets per client"),
              # section 6: end-to-end DP (models and descriptors), issue 29
              "dp_seeds": (POSITIVE, "seeds of the Table 1 runs under end-to-end DP (per "
                                     "scenario)"),
              "dp_epsilons": (ListOf(_EPSILON, increasing=True),
                              "target total epsilons per client of a whole run"),
              "dp_clip": (_EPSILON, "L2 bound of a client update (DP-FedAvg) and of an "
                                    "example gradient (DP-SGD)"),
              "descriptor_share": (Real(0.0, 0.99), "share of the target that calibrates "
                                                    "pTopoFL's descriptor release alone"),
              "detect_seeds": (POSITIVE, "seeds of the adversaries under DP"),
              "audit_n": (Int(low=2), "records per client in the audited membership game"),
              "canary_trials": (Int(low=8), "releases per worst-case canary audit"),
              "deep": (_DEEP_DP, "deep DP runs: epsilons, level, the deep notebook's protocol "
                                 "(a dict)")},
        shared={"mia_sizes": [5, 100], "epsilons": [0.1, 1.0, 10.0, 100.0, 1000.0],
                "dp_clip": 1.0, "descriptor_share": 0.1, "audit_n": 5},
        quick={"n_seeds": 3, "attack_seeds": 1, "attack_clients": 2, "batch_sizes": [1, 2, 4],
               "gradient_iters": 300, "descriptor_iters": 150, "mia_targets": 16,
               "mia_shadows": 8, "dp_seeds": 2, "dp_epsilons": [3.0, 30.0], "detect_seeds": 2,
               "canary_trials": 2000, "deep": _deep_dp("quick", [3.0])},
        cpu={**_PRIVACY_PAPER, "deep": _deep_dp("cpu", [3.0, 10.0, 30.0])},
        paper={**_PRIVACY_PAPER, "deep": _deep_dp("paper", [3.0, 10.0, 30.0])},
        execution={"n_workers": _RUNS_AT_ONCE},
        profile_notes="quick (CI), cpu (committed; the paper values but the deep runs', "
                      "as the deep notebook's), paper"),
    "fedtopo": Notebook(
        "fedtopo",
        spec={"n_seeds": (POSITIVE, "seeds (the paper: 5 runs)"),
              "n_rounds": (POSITIVE, "communication rounds (paper, Table C.3: 5 for FMNIST)"),
              "local_epochs": (POSITIVE, "local epochs per round (paper: 5)"),
              # load_image_dataset
              "n_train": (Int(low=10), "Fashion-MNIST training images used (paper: 60000)"),
              "n_test": (Int(low=10), "test images (paper: 10000)"),
              "tal_every": (POSITIVE, "TAL on every k-th local step (paper: every step)"),
              "tal_samples": (POSITIVE,
                              "images per client per round for the TE (Table C.3: 64)"),
              "n_val": (Int(low=10), "TGBS validation images (drawn from the training set)"),
              "tgbs_pairs": (POSITIVE,
                             "TGBS pairs of each kind (same-class, different-class)"),
              "partitions": (ListOf(OneOf(PARTITIONS)), "FedTopo's skews N, L, K, Q"),
              "methods": (ListOf(OneOf(_DEEP_METHODS), contains=("FedTopo",)),
                          "Table 1 methods (FedTopo needed)"),
              "schedules": (ListOf(OneOf(SCHEDULES)), "alpha schedules of Appendix B.2"),
              "loss_range": (Either((OneOf(("calibrate",)),
                                     ListOf(Real(), length=2, increasing=True)),
                                    '"calibrate" or [l_min, l_max] with l_min < l_max'),
                             '[l_min, l_max] of the adaptive schedules, or "calibrate"'),
              "local_test_seeds": (Int(low=0),
                                   "seeds of FedPAC, FedCCFA scored on clients' own label "
                                   "mix (0: none)"),
              **_paper_data("FedTopo", "CIFAR-10/100, Tables 1-3")},
        shared={"tal_samples": 64, "partitions": ["N", "L", "K", "Q"],
                "paper_settings": settings_of_paper("FedTopo"),
                "schedules": list(SCHEDULES), "loss_range": "calibrate"},
        # quick (CI): four of Table 1's sixteen methods; cpu and paper: all sixteen
        quick={"methods": ["FedAvg", "FedProx", "SCAFFOLD", "FedTopo"],
               "n_seeds": 1, "n_rounds": 2, "local_epochs": 1, "n_train": 1500,
               "n_test": 500, "tal_every": 4, "n_val": 300, "tgbs_pairs": 200,
               "local_test_seeds": 1, "paper_data": "check"},
        cpu={"methods": list(TABLE1_METHODS), "n_seeds": 3, "n_rounds": 5, "local_epochs": 2,
             "n_train": 12000, "n_test": 2000, "tal_every": 4, "n_val": 1000,
             "tgbs_pairs": 500, "local_test_seeds": 3, "paper_data": "check"},
        # Table C.3's protocol with the paper's 5 seeds: the committed run store holds them for
        # every cell (about 58 core-hours, the runs' recorded seconds; runs/README.md).
        # the paper-data settings (CIFAR, ResNet-18) run where the data and a CUDA GPU are
        paper={"methods": list(TABLE1_METHODS), "n_seeds": 5, "n_rounds": 5,
               "local_epochs": 5, "n_train": 60000,
               "n_test": 10000, "tal_every": 1, "n_val": 1000, "tgbs_pairs": 500,
               # the authors' reading of FedPAC and FedCCFA: 3 of the paper's 5 seeds
               "local_test_seeds": 3, "paper_data": "run"},
        execution={"n_workers": _RUNS_AT_ONCE, "data_dir": _DATA_DIR,
                   "paper_data_cpu": _PAPER_DATA_CPU},
        profile_notes="quick (CI), cpu (a quick look), paper (committed)"),
    "ptopofl_deep": Notebook(
        "ptopofl_deep",
        spec={"n_seeds": (POSITIVE, "seeds"),
              "n_rounds": (POSITIVE, "communication rounds (paper: 100 CIFAR-10, 200 FEMNIST)"),
              "local_epochs": (POSITIVE,
                               "local epochs per round (paper: 5 CIFAR-10, 3 FEMNIST)"),
              "n_train": (Int(low=10),
                          "training images per dataset (MNIST-5k has 4000 at most)"),
              "n_test": (Int(low=10), "test images per dataset (MNIST-5k has 1000 at most)"),
              "n_clients": (Int(low=3), "clients (at least 3: pTopoFL forms 3 clusters)"),
              "alphas": (ListOf(Real(low=0.0, low_open=True)), "Dirichlet concentrations"),
              "datasets": (ListOf(OneOf(IMAGE_DATASETS)), "fashion_mnist, mnist5k, digits"),
              "methods": (ListOf(OneOf(_DEEP_METHODS), contains=("pTopoFL",)),
                          "methods compared (pTopoFL needed)"),
              **_paper_data("pTopoFL", "CIFAR-10, FEMNIST: Table 2")},
        shared={"n_clients": 10, "alphas": [0.1, 0.5], "datasets": ["fashion_mnist", "mnist5k"],
                "methods": ["pTopoFL", "FedAvg", "FedProx", "SCAFFOLD", "pFedMe"],
                "paper_settings": settings_of_paper("pTopoFL")},
        quick={**_DEEP_PROTOCOL["quick"], "paper_data": "check"},
        cpu={**_DEEP_PROTOCOL["cpu"], "paper_data": "check"},
        paper={**_DEEP_PROTOCOL["paper"], "paper_data": "run"},
        execution={"n_workers": _RUNS_AT_ONCE, "data_dir": _DATA_DIR,
                   "paper_data_cpu": _PAPER_DATA_CPU}),
    "label_aware": Notebook(
        "label_aware",
        # seeds seed_start .. seed_start + n_seeds - 1: the report seeds 100-119 (the
        # configuration was fixed on the development seeds 0-19 beforehand)
        spec={"n_seeds": (POSITIVE, "seeds per setting (20: the report seeds 100-119)"),
              "seed_start": (Int(low=0),
                             "first seed (100: report seeds; 0: the development seeds)"),
              "n_rounds": (POSITIVE, "rounds of every federated run"),
              "detect_rates": (ListOf(Real(0.0, 0.5, low_open=True)),
                               "fractions of label-flipping hospitals of the detection "
                               "report"),
              # label_aware_comparison: rate in [0, 0.5]
              "rates": (ListOf(Real(0.0, 0.5)),
                        "fractions of the AUC comparison, each in [0, 0.5]"),
              "protocols": (ListOf(OneOf(("ours", "paper"))),
                            "data protocols of make_healthcare: ours, paper"),
              # detection and AUC comparison; the claim rows need the label flip
              "attacks": (ListOf(OneOf(ATTACKS), contains=("label_flip",)),
                          "attacks of detection and AUC comparison: label_flip (needed), "
                          "noisy_label_flip"),
              "attack_seeds": (POSITIVE,
                               "first seeds used by the inversion and membership attacks"),
              "attack_clients": (POSITIVE,
                                 "honest clients attacked per seed (descriptor inversion)"),
              "descriptor_iters": (POSITIVE, "steps of the descriptor-inversion search"),
              # membership_inference: n_targets, n_shadow >= 2
              "mia_targets": (Int(low=2), "membership-inference targets per seed"),
              "mia_shadows": (Int(low=2), "shadow datasets per target and side"),
              "epsilons": (ListOf(_EPSILON, contains=(1.0,)),
                           "DP release epsilons (must contain 1.0)"),
              # the deep Fashion-MNIST Dir(0.1) scenario, on the first deep_seeds report seeds
              "deep_seeds": (POSITIVE, "report seeds of the deep Fashion-MNIST Dir(0.1) "
                                       "scenario (from seed_start)"),
              "deep_rounds": (POSITIVE, "its rounds (1 local epoch each)"),
              # load_image_dataset
              "deep_n_train": (Int(low=10), "its Fashion-MNIST training images"),
              "deep_n_test": (Int(low=10), "its test images"),
              "deep_methods": (ListOf(OneOf(_DEEP_METHODS), contains=("pTopoFL", "pTopoFL-MA")),
                               "its methods (pTopoFL and pTopoFL-MA needed)")},
        shared={"seed_start": 100, "n_rounds": 10, "detect_rates": [0.2, 0.3],
                "rates": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5], "protocols": ["ours", "paper"],
                "attacks": ["label_flip", "noisy_label_flip"],
                "epsilons": [0.1, 1.0, 10.0, 100.0, 1000.0],
                "deep_methods": ["pTopoFL", "pTopoFL-MA", "FedAvg", "Median", "TrimmedMean",
                                 "Krum"]},
        # quick: 5 rounds of the 10 and the label flip alone (the suite's time)
        quick={"n_seeds": 2, "n_rounds": 5, "rates": [0.0, 0.3, 0.5], "epsilons": [1.0, 100.0],
               "attacks": ["label_flip"],
               "attack_seeds": 1, "attack_clients": 1, "descriptor_iters": 20,
               "mia_targets": 4, "mia_shadows": 3, "deep_seeds": 1, "deep_rounds": 2,
               "deep_n_train": 1000, "deep_n_test": 500},
        # the deep runs: ptopofl_deep's cpu protocol (10 rounds of 1 local epoch)
        paper={"n_seeds": 20, "attack_seeds": 5, "attack_clients": 2, "descriptor_iters": 300,
               "mia_targets": 40, "mia_shadows": 8, "deep_seeds": 20, "deep_rounds": 10,
               "deep_n_train": 12000, "deep_n_test": 2000},
        execution={"n_workers": "deep " + _RUNS_AT_ONCE},
        profile_notes="quick (CI), cpu (committed; the same values as paper), paper"),
    "own_data": _own_data(),
}


# --------------------------------------------------------------------------- the notebook call
@dataclass(frozen=True)
class NotebookParameters:
    """A notebook's validated parameters (``p.n_seeds``...) and output folders.

    ``profile`` is what the notebook's claim rows carry: the profile's name when every
    value is the profile's, else ``"custom"`` (a row never claims a protocol it did not
    run).

    Attributes
    ----------
    notebook : str
        The notebook's name.
    profile : str
        The profile's name, or ``"custom"``.
    values : Mapping
        The validated parameters, also readable as attributes.
    figures_dir, results_dir : Path
        Where the notebook writes its figures and results.
    claims : str
        The stem of its claim file (``results/claims/<claims>.csv``).
    """

    notebook: str
    profile: str
    values: Mapping[str, Any]
    figures_dir: Path
    results_dir: Path
    claims: str

    def __getattr__(self, name: str):
        if name != "values" and name in self.values:
            return self.values[name]
        raise AttributeError(f"{self.notebook!r} has no parameter {name!r}")


def _assigned(source: str) -> set[str]:
    """Names a cell's top-level statements assign (an unparsable cell assigns none)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return set()
    targets = [t for n in body if isinstance(n, (ast.Assign, ast.AnnAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    return {n.id for t in targets for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _cells_run_before() -> list[str]:
    """Sources of the cells this IPython kernel ran before the running one (oldest first).

    Empty outside IPython. The input history holds each cell as IPython ran it (magics
    turned into calls), the running cell last.
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    history = getattr(getattr(shell, "history_manager", None), "input_hist_parsed", None)
    return [str(cell) for cell in history[1:-1]] if history else []


def _check_injected(notebook: str, known: set[str]) -> None:
    """Refuse what papermill injected but the notebook does not get (see the module doc)."""
    cells = _cells_run_before()
    injected = [i for i, cell in enumerate(cells)
                if cell.lstrip().splitlines()[:1] == [PAPERMILL_HEADER]]
    if not injected:
        return
    names = _assigned(cells[injected[-1]])
    unknown = sorted(n for n in names - known if not n.startswith(PAPERMILL_PREFIX))
    if unknown:
        raise TypeError(f"papermill passed parameter(s) {unknown}, which {notebook!r} does "
                        f"not have (misspelt?); its parameters are {sorted(known)}")
    start = injected[-1] + 1  # up to the first check after it (a later run of a cell is fine)
    end = next((i for i in range(start, len(cells)) if "notebook_parameters(" in cells[i]),
               len(cells))
    again = sorted(names & set().union(*map(_assigned, cells[start:end])))
    if again:
        raise ValueError(
            f"{again} passed to papermill were set again by a later cell before this check, "
            f"so {notebook!r} would ignore them: its parameters cell has lost its "
            "'parameters' tag (papermill then injects its values above it). Tag that cell "
            "'parameters' (View > Cell Toolbar > Tags, or the cell's metadata)")


def _tagged_cell(nb, path: Path):
    """The one code cell of notebook ``nb`` (read from ``path``) tagged ``parameters``."""
    cells = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    stale = [c for c in cells if "injected-parameters" in c.metadata.get("tags", [])]
    if len(tagged) != 1 or stale:
        fault = ("holds a stale 'injected-parameters' cell" if stale else
                 f"has {len(tagged)} code cells tagged 'parameters'")
        raise ValueError(f"notebook {path} {fault}; papermill needs exactly one, the cell "
                         "that sets the parameters, so that its values come after it "
                         "(tag that cell 'parameters' and no other)")
    return tagged[0]


def parameters_cell(path, passed=()) -> set[str]:
    """Check that the notebook at ``path`` takes papermill parameters; return their names.

    Parameters
    ----------
    path : str or Path
        A notebook (``.ipynb``).
    passed : iterable of str
        The names a caller will pass to papermill; each must be set in the cell.

    Returns
    -------
    set of str
        The names the notebook's ``parameters`` cell sets.

    Raises
    ------
    ValueError
        The notebook has no code cell tagged ``parameters`` or several (papermill would
        put the values above the cell that then overwrites them, or after the first
        only), holds a stale ``injected-parameters`` cell (papermill replaces it where it
        stands), or its parameters cell sets none of some ``passed`` name.
    """
    import nbformat

    path = Path(path)
    names = _assigned(_tagged_cell(nbformat.read(path, as_version=4), path).source)
    missing = sorted(set(passed) - names)
    if missing:
        raise ValueError(f"notebook {path}: its parameters cell does not set {missing}, which "
                         f"will be passed to it; it sets {sorted(names)}")
    return names


def parameters_cell_source(notebook: str) -> str:
    """The source of ``notebook``'s parameters cell, rendered from :data:`NOTEBOOKS`.

    A header comment (papermill's place, the profiles), ``profile = "quick"``, each
    parameter of the spec then of ``execution`` ``= None`` with its help as an aligned
    comment, and ``output_dir = None``.

    Parameters
    ----------
    notebook : str
        A key of :data:`NOTEBOOKS`.

    Returns
    -------
    str
        The cell's source (no trailing newline, as Jupyter stores it).
    """
    check_choice(notebook, "notebook", NOTEBOOKS)
    declared = NOTEBOOKS[notebook]
    helps = {**{name: text for name, (_, text) in declared.spec.items()},
             **declared.execution, "output_dir": OUTPUT_DIR_HELP}
    width = max(map(len, helps)) + len(" = None")
    header = textwrap.wrap(HEADER.format(profiles=declared.profile_notes), HEADER_WIDTH,
                           initial_indent="# ", subsequent_indent="# ",
                           break_long_words=False, break_on_hyphens=False)
    return "\n".join([*header, 'profile = "quick"',
                      *(f"{f'{name} = None':<{width}}  # {text}" for name, text in helps.items())])


def write_parameters_cell(path, notebook: str) -> bool:
    """Rewrite the parameters cell of the notebook file ``path`` from its declaration.

    Only the cell's source changes (its id, tags and the other cells stay as they are);
    ``scripts/sync_parameters_cells.py`` runs it on every notebook of :data:`NOTEBOOKS`.

    Parameters
    ----------
    path : str or Path
        A notebook (``.ipynb``) with one cell tagged ``parameters``.
    notebook : str
        Its key in :data:`NOTEBOOKS`.

    Returns
    -------
    bool
        Whether the file changed.
    """
    import nbformat

    source = parameters_cell_source(notebook)  # an unknown notebook before any file read
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    cell = _tagged_cell(nb, path)
    if cell.source == source:
        return False
    cell.source = source
    nbformat.write(nb, path)
    return True


def _overlay(check: Any, default: Any, value: Any) -> Any:
    """A given dict laid over the profile's where the parameter is a :class:`Record`."""
    if isinstance(check, Record) and isinstance(value, Mapping):
        return {**default, **value}
    return value


def notebook_parameters(notebook: str, namespace: MutableMapping[str, Any]) -> NotebookParameters:
    """Fill a notebook's ``None`` parameters from its profile, validate them all and write
    the validated values back into ``namespace``.

    A notebook calls ``cfg = notebook_parameters("<name>", globals())`` right after its
    parameters cell. It reads ``profile``, ``output_dir`` and each declared parameter
    (``spec`` and ``execution`` of ``NOTEBOOKS[notebook]``) from ``namespace``: a name
    missing there counts as None, ``profile`` as ``"quick"``. Once everything is valid
    (and only then), each declared parameter's variable in ``namespace`` holds its
    validated value (the profile's value for a None, a list for a tuple, a float for an
    int where a real is declared); ``profile`` and ``output_dir`` stay as they are (the
    label and the folders are ``cfg.profile``, ``cfg.figures_dir``, ``cfg.results_dir``).

    Other names in ``namespace`` are ignored: a notebook's namespace holds everything, so
    a misspelt name cannot be told from any other variable there. Where one can come in
    from outside, papermill, it is refused: run under papermill, this also checks what
    papermill injected (see the module doc).

    Parameters
    ----------
    notebook : str
        A key of :data:`NOTEBOOKS`.
    namespace : mutable mapping
        The notebook's variables (``globals()``), or a dict such as
        ``{"profile": "cpu", "n_seeds": 5, "output_dir": path}``.

    Returns
    -------
    NotebookParameters

    Raises
    ------
    TypeError, ValueError
        Naming the parameter and the value, e.g. ``betas[0] must be <= 1.0, got 2.0``;
        also for a name passed to papermill that the notebook does not have, and for
        papermill values that a later cell replaced (a parameters cell without its tag).
        Nothing has been written then, ``namespace`` included.
    """
    check_choice(notebook, "notebook", NOTEBOOKS)
    if not isinstance(namespace, MutableMapping):
        raise TypeError(f"namespace must be a mutable mapping such as globals(), got "
                        f"{namespace!r}")
    declared = NOTEBOOKS[notebook]
    profile = namespace.get("profile", "quick")
    if not isinstance(profile, str):
        raise TypeError(f"profile must be a string, got {profile!r}")
    defaults = declared.values(profile)
    _check_injected(notebook, {*COMMON, *defaults, *declared.execution})
    checks = declared.checks()
    given = {k: _overlay(checks[k], defaults[k], namespace[k])
             for k in defaults if namespace.get(k) is not None}
    checked = {**defaults, **_check_values(checks, given)}
    label = profile if checked == defaults else "custom"
    for name in declared.execution:  # how it runs: never changes the label
        check, default = EXECUTION[name]
        value = namespace.get(name)
        checked[name] = default if value is None else check.check(value, name)
    figures_dir, results_dir = output_dirs(namespace.get("output_dir"))
    namespace.update(checked)
    return NotebookParameters(notebook, label, checked, figures_dir, results_dir,
                              declared.claims)
