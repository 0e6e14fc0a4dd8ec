"""What each notebook parameter may be: one pydantic model per notebook.

A field is a parameter of the notebook: its type (ranges, choices, list rules) and its
one-line help, the comment of its line in the notebook's ``parameters`` cell. The values
of each profile are data, in ``topofl_lib/profiles.toml``;
:mod:`topofl_lib.notebook_params` checks them, and every value a notebook gets, against
these models. Ranges are those the library accepts (the function each parameter feeds)
plus what a notebook needs (the robustness notebook plots the label-flip attack, so
``attacks`` must contain it). The models are strict (no ``"3"`` for 3, no ``True`` for 1),
refuse unknown names, NaN and infinity; a list holds distinct entries unless it must be
strictly increasing. :func:`validate` checks values against a model and turns pydantic's
errors into one message that names each parameter and its value.
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)

from .clustering.evaluation import CLUSTERING_DATASETS, PAPER_DATASETS
from .data.records import CATEGORICAL, MISSING, SMALL_SITES
from .data.scenarios import ATTACKS
from .data.scenarios import PROTOCOLS as DATA_PROTOCOLS
from .deep.datasets import OFFLINE_DATASETS as IMAGE_DATASETS  # what ptopofl_deep runs
from .deep.labels import DEEP_LABELS
from .deep.partitions import PARTITIONS
from .fedtopo.schedules import SCHEDULES
from .privacy.model_channel import DP_LEVELS
from .studies.paper_data import settings_of_paper
from .studies.table1 import TABLE1_VARIANTS

__all__ = ["EXECUTION", "MODELS", "Parameters", "validate"]

#: Parameters that choose how a notebook runs, not what it measures, with their defaults:
#: they never make a run ``custom``. ``n_workers``: runs at once, each in its own process
#: with one torch thread (results are identical for any value); ``data_dir``: the papers'
#: own data sets (None: :func:`topofl_lib.data.locations.data_dir`); ``paper_data_cpu``:
#: run the paper-data settings on the CPU when there is no CUDA GPU (far slower).
EXECUTION = {"n_workers": 1, "data_dir": None, "paper_data_cpu": False}


def _distinct(values: list) -> list:
    if len(set(map(json.dumps, values))) < len(values):
        raise ValueError(f"has repeated entries: {values!r}")
    return values


def _increasing(values: list) -> list:
    if any(not a < b for a, b in zip(values, values[1:], strict=False)):
        raise ValueError(f"must be strictly increasing, got {values!r}")
    return values


def _containing(*needed):
    def check(values: list) -> list:
        missing = [v for v in needed if v not in values]
        if missing:
            raise ValueError(f"must contain {missing} (the notebook needs it), got {values!r}")
        return values
    return check


def _one_line(value: str) -> str:
    if not value.strip() or "\n" in value:
        raise ValueError(f"must be a non-empty one-line string, got {value!r}")
    return value


def _folder(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value


def Ints(low: int = 1, high: int | None = None) -> Any:  # noqa: N802 (a type)
    """An int in ``[low, high]``."""
    return Annotated[int, Field(ge=low, le=high)]


def Reals(low: float | None = None, high: float | None = None, *, open_low=False) -> Any:  # noqa: N802
    """A finite real in ``[low, high]`` (``(low, high]`` with ``open_low``)."""
    return Annotated[float, Field(gt=low, le=high) if open_low else Field(ge=low, le=high)]


def OneOf(choices) -> Any:  # noqa: N802 (a type)
    """One of the strings ``choices``."""
    return Literal[tuple(choices)]


def ListOf(item, *, contains=(), increasing=False, min_len=1, length=None) -> Any:  # noqa: N802
    """A list of distinct (or strictly increasing) ``item``\\ s holding ``contains``."""
    checks = [AfterValidator(_increasing if increasing else _distinct)]
    if contains:
        checks.append(AfterValidator(_containing(*contains)))
    return Annotated[list[item], Field(min_length=length or min_len, max_length=length),
                     *checks]


POSITIVE = Ints(1)
EPSILON = Reals(0.0, open_low=True)
LINE = Annotated[str, AfterValidator(_one_line)]
FOLDER = Annotated[LINE | None, BeforeValidator(_folder)]
DEEP_METHODS = OneOf(label for label in DEEP_LABELS if "<" not in label)
RUNS_AT_ONCE = "runs at once (processes, one torch thread each); no number depends on it"
PAPER_DATA = "paper-data settings: check their data and device only, or run those that can"
DATA_DIR = "folder of the papers' data sets (None: $TOPOFL_DATA_DIR, else ~/topofl_data)"
PAPER_DATA_CPU = "run the paper-data settings on the CPU when there is no CUDA GPU (slow)"


def about(help_: str, default: Any = ...) -> Any:
    """A field with its one-line help (the parameters cell's comment)."""
    return Field(default, description=help_)


class Parameters(BaseModel):
    """A notebook's parameters: strict types, finite reals, no unknown names."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Table1(Parameters):
    n_seeds: POSITIVE = about("independent scenario realisations per protocol")
    n_rounds: POSITIVE = about("communication rounds (paper: 15)")
    single_seed: Ints(0) = about("shown on its own as the paper's single run (its code's "
                                 "seed: 42)")


class Robustness(Parameters):
    n_seeds: POSITIVE = about("scenario realisations per attack rate")
    n_rounds: POSITIVE = about("paper Sec. 4.4 / Table 3")
    rates: ListOf(Reals(0.0, 0.5)) = about("fractions of adversarial hospitals, each in [0, 0.5]")
    attacks: ListOf(OneOf(ATTACKS), contains=("label_flip",)) = about(
        "label_flip (needed), noisy_label_flip, sign_flip")


class Continual(Parameters):
    n_seeds: POSITIVE = about("scenario realisations")
    # make_continual shifts at round 10 and needs shift_round <= n_rounds - 1
    n_rounds: Ints(11) = about("rounds (at least 11: clients switch task at round 10)")
    drift_threshold: EPSILON = about("Eq. 9 drift that triggers re-clustering")


class Ablation(Parameters):
    n_seeds: POSITIVE = about("scenario realisations")
    n_rounds: POSITIVE = about("rounds")
    betas: ListOf(Reals(0.0, 1.0)) = about("beta sweep, each in [0, 1]")
    cluster_counts: ListOf(Ints(1, 8)) = about("M sweep, each in 1..8 (the 8 hospitals)")
    etas: ListOf(Reals(0.0)) = about("Theorem 3 perturbation norms")


class GFC(Parameters):
    n_seeds: POSITIVE = about("seeds")
    epsilons: ListOf(EPSILON) = about("LDP budgets, each > 0")
    datasets: ListOf(OneOf(CLUSTERING_DATASETS)) = about(
        "topofl_lib.clustering.evaluation.CLUSTERING_DATASETS")
    local_counts: ListOf(POSITIVE) = about("Tables 4-5: local centroids per client")
    client_counts: ListOf(POSITIVE) = about("Table 6: scalability (paper: 100 and 1000)")
    scalability_seeds: POSITIVE = about("seeds for Table 6 (1000 clients is the slow part)")
    table1_datasets: ListOf(OneOf(PAPER_DATASETS)) = about(
        "Table 1's datasets (files from data_dir; Waveform generated)")
    table1_epsilons: ListOf(EPSILON) = about("LDP budgets of Table 1's own datasets")
    table1_seeds: POSITIVE = about("seeds of Table 1's own datasets and of Table 4 (Abalone)")
    scaling_epsilons: ListOf(EPSILON) = about(
        "budgets of Waveform with bounded and with z-scored records (table1_seeds)")
    data_dir: FOLDER = about(DATA_DIR, None)


class DeepDP(Parameters):
    """The privacy notebook's deep DP runs: their DP, then the deep notebook's protocol."""

    epsilons: ListOf(EPSILON, increasing=True)
    level: OneOf(DP_LEVELS)
    n_seeds: POSITIVE
    n_rounds: POSITIVE
    local_epochs: POSITIVE
    n_train: Ints(10)
    n_test: Ints(10)


class Privacy(Parameters):
    n_seeds: POSITIVE = about("scenario realisations for the proxies and the DP utility curve")
    attack_seeds: POSITIVE = about("scenario realisations attacked")
    attack_clients: POSITIVE = about("honest clients attacked per realisation")
    batch_sizes: ListOf(POSITIVE) = about("gradient-inversion batch sizes")
    gradient_iters: POSITIVE = about("Adam steps of the gradient-matching attack")
    descriptor_iters: POSITIVE = about("evolution-strategy steps of the descriptor inversion")
    mia_sizes: ListOf(Ints(2)) = about(
        "client sizes n for membership inference (5: a positive control)")
    mia_targets: Ints(2) = about("membership-inference trials per realisation and size")
    mia_shadows: Ints(2) = about("shadow datasets per trial and hypothesis")
    epsilons: ListOf(EPSILON) = about("DP budgets per client")
    dp_seeds: POSITIVE = about("seeds of the Table 1 runs under end-to-end DP (per scenario)")
    dp_epsilons: ListOf(EPSILON, increasing=True) = about(
        "target total epsilons per client of a whole run")
    dp_clip: EPSILON = about(
        "L2 bound of a client update (DP-FedAvg) and of an example gradient (DP-SGD)")
    descriptor_share: Reals(0.0, 0.99) = about(
        "share of the target that calibrates pTopoFL's descriptor release alone")
    detect_seeds: POSITIVE = about("seeds of the adversaries under DP")
    audit_n: Ints(2) = about("records per client in the audited membership game")
    canary_trials: Ints(8) = about("releases per worst-case canary audit")
    deep: DeepDP = about("deep DP runs: epsilons, level, the deep notebook's protocol (a dict)")
    n_workers: POSITIVE = about(RUNS_AT_ONCE, 1)


class PaperData(Parameters):
    """A deep notebook's settings on the paper's own data, and how it runs (listed last:
    a model ``class M(PaperData, Settings)`` has ``Settings``' fields first)."""

    paper_data: OneOf(("check", "run")) = about(PAPER_DATA)
    n_workers: POSITIVE = about(RUNS_AT_ONCE, 1)
    data_dir: FOLDER = about(DATA_DIR, None)
    paper_data_cpu: bool = about(PAPER_DATA_CPU, False)


class FedTopoSettings(Parameters):
    n_seeds: POSITIVE = about("seeds (the paper: 5 runs)")
    n_rounds: POSITIVE = about("communication rounds (paper, Table C.3: 5 for FMNIST)")
    local_epochs: POSITIVE = about("local epochs per round (paper: 5)")
    n_train: Ints(10) = about("Fashion-MNIST training images used (paper: 60000)")
    n_test: Ints(10) = about("test images (paper: 10000)")
    tal_every: POSITIVE = about("TAL on every k-th local step (paper: every step)")
    tal_samples: POSITIVE = about("images per client per round for the TE (Table C.3: 64)")
    n_val: Ints(10) = about("TGBS validation images (drawn from the training set)")
    tgbs_pairs: POSITIVE = about("TGBS pairs of each kind (same-class, different-class)")
    partitions: ListOf(OneOf(PARTITIONS)) = about("FedTopo's skews N, L, K, Q")
    methods: ListOf(DEEP_METHODS, contains=("FedTopo",)) = about(
        "Table 1 methods (FedTopo needed)")
    schedules: ListOf(OneOf(SCHEDULES)) = about("alpha schedules of Appendix B.2")
    loss_range: OneOf(("calibrate",)) | ListOf(Reals(), increasing=True, length=2) = about(
        '[l_min, l_max] of the adaptive schedules, or "calibrate"')
    local_test_seeds: Ints(0) = about(
        "seeds of FedPAC, FedCCFA scored on clients' own label mix (0: none)")
    paper_settings: ListOf(OneOf(settings_of_paper("FedTopo")), min_len=0) = about(
        "FedTopo's settings on its own data to attempt (CIFAR-10/100, Tables 1-3)")


class DeepPTopoFLSettings(Parameters):
    n_seeds: POSITIVE = about("seeds")
    n_rounds: POSITIVE = about("communication rounds (paper: 100 CIFAR-10, 200 FEMNIST)")
    local_epochs: POSITIVE = about("local epochs per round (paper: 5 CIFAR-10, 3 FEMNIST)")
    n_train: Ints(10) = about("training images per dataset (MNIST-5k has 4000 at most)")
    n_test: Ints(10) = about("test images per dataset (MNIST-5k has 1000 at most)")
    n_clients: Ints(3) = about("clients (at least 3: pTopoFL forms 3 clusters)")
    alphas: ListOf(EPSILON) = about("Dirichlet concentrations")
    datasets: ListOf(OneOf(IMAGE_DATASETS)) = about("fashion_mnist, mnist5k, digits")
    methods: ListOf(DEEP_METHODS, contains=("pTopoFL",)) = about(
        "methods compared (pTopoFL needed)")
    paper_settings: ListOf(OneOf(settings_of_paper("pTopoFL")), min_len=0) = about(
        "pTopoFL's settings on its own data to attempt (CIFAR-10, FEMNIST: Table 2)")


class FedTopo(PaperData, FedTopoSettings):
    """The FedTopo notebook: its settings, then the paper-data ones."""


class DeepPTopoFL(PaperData, DeepPTopoFLSettings):
    """The deep pTopoFL notebook: its settings, then the paper-data ones."""


class LabelAware(Parameters):
    # seeds seed_start .. seed_start + n_seeds - 1: the report seeds 100-119 (the
    # configuration was fixed on the development seeds 0-19 beforehand)
    n_seeds: POSITIVE = about("seeds per setting (20: the report seeds 100-119)")
    seed_start: Ints(0) = about("first seed (100: report seeds; 0: the development seeds)")
    n_rounds: POSITIVE = about("rounds of every federated run")
    detect_rates: ListOf(Reals(0.0, 0.5, open_low=True)) = about(
        "fractions of label-flipping hospitals of the detection report")
    rates: ListOf(Reals(0.0, 0.5)) = about("fractions of the AUC comparison, each in [0, 0.5]")
    protocols: ListOf(OneOf(("ours", "paper"))) = about(
        "data protocols of make_healthcare: ours, paper")
    attacks: ListOf(OneOf(ATTACKS), contains=("label_flip",)) = about(
        "attacks of detection and AUC comparison: label_flip (needed), noisy_label_flip")
    attack_seeds: POSITIVE = about("first seeds used by the inversion and membership attacks")
    attack_clients: POSITIVE = about("honest clients attacked per seed (descriptor inversion)")
    descriptor_iters: POSITIVE = about("steps of the descriptor-inversion search")
    mia_targets: Ints(2) = about("membership-inference targets per seed")
    mia_shadows: Ints(2) = about("shadow datasets per target and side")
    epsilons: ListOf(EPSILON, contains=(1.0,)) = about("DP release epsilons (must contain 1.0)")
    deep_seeds: POSITIVE = about(
        "report seeds of the deep Fashion-MNIST Dir(0.1) scenario (from seed_start)")
    deep_rounds: POSITIVE = about("its rounds (1 local epoch each)")
    deep_n_train: Ints(10) = about("its Fashion-MNIST training images")
    deep_n_test: Ints(10) = about("its test images")
    deep_methods: ListOf(DEEP_METHODS, contains=("pTopoFL", "pTopoFL-MA")) = about(
        "its methods (pTopoFL and pTopoFL-MA needed)")
    n_workers: POSITIVE = about("deep " + RUNS_AT_ONCE, 1)


class OwnData(Parameters):
    records_path: LINE = about("CSV or Parquet file of your sites' records, or "
                               "medicaldata:<table> (bundled: opt, indo_rct)")
    site: LINE = about("column naming each record's site (one client per site)")
    label: LINE = about("binary outcome column")
    positive: LINE = about("label value coded 1; auto: the larger value in sorted order")
    features: OneOf(("all",)) | ListOf(LINE) = about(
        "feature columns; all: every column but site and label")
    categorical: OneOf(CATEGORICAL) = about("non-numeric columns: onehot, ordinal, refuse")
    missing: OneOf(MISSING) = about("missing values: refuse, or impute (site-wise training "
                                    "medians; unlabelled records left out)")
    min_records: Ints(4) = about("fewest records a site may have")
    small_sites: OneOf(SMALL_SITES) = about(
        "a site under min_records or with < 2 of a class: refuse or drop")
    drop_sites: ListOf(LINE, min_len=0) = about("sites left out by name")
    test_size: Reals(0.0, 0.9, open_low=True) = about(
        "fraction of each site's records (per class) held out")
    n_seeds: POSITIVE = about("seeds 0..n_seeds-1: each draws the splits and seeds the methods")
    n_rounds: POSITIVE = about("communication rounds")
    protocols: ListOf(OneOf(DATA_PROTOCOLS)) = about(
        "local solvers: ours (one SGD), paper (the paper code's)")
    methods: ListOf(OneOf(TABLE1_VARIANTS["ours"]), contains=("pTopoFL",)) = about(
        "Table 1 methods (pTopoFL needed)")
    n_workers: POSITIVE = about(RUNS_AT_ONCE, 1)


#: notebook name -> the model of its parameters.
MODELS: dict[str, type[Parameters]] = {
    "scenario_a_healthcare": Table1, "scenario_b_benchmark": Table1,
    "robustness": Robustness, "continual_drift": Continual, "ablation_theorems": Ablation,
    "gfc_clustering": GFC, "privacy_analysis": Privacy, "fedtopo": FedTopo,
    "ptopofl_deep": DeepPTopoFL, "label_aware": LabelAware, "own_data": OwnData}


def _path(loc: tuple) -> str:
    """``('deep', 'epsilons', 0)`` -> ``deep['epsilons'][0]``; union branches left out."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f"[{part!r}]" if out else part
    return out


def _fault(error: dict) -> str:
    """One pydantic error as ``what is wrong, got <value>``."""
    if error["type"] == "extra_forbidden":
        return f"unknown parameter, got {error['input']!r}"
    if error["type"] == "missing":
        return "missing"
    if error["type"] == "value_error":  # our own checks: the message names the value
        return error["msg"].removeprefix("Value error, ")
    return f"{error['msg'][0].lower()}{error['msg'][1:]}, got {error['input']!r}"


def validate(model: type[Parameters], values: Mapping[str, Any], context: str = "") -> dict:
    """``values`` (name -> value; a tuple counts as a list) checked by ``model``.

    Parameters
    ----------
    model : type
        A :class:`Parameters` model.
    values : Mapping
        Parameter name -> value.
    context : str
        Put before the error message.

    Returns
    -------
    dict
        The validated values as plain data, in the model's field order. A fault raises,
        naming each parameter and value (``betas[0]: input should be less than or equal
        to 1, got 2.0``): ``TypeError`` when every fault is a value of the wrong type,
        else ``ValueError``.
    """
    plain = {k: (list(v) if isinstance(v, tuple) else v) for k, v in values.items()}
    try:
        return model.model_validate(plain).model_dump()
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        faults = dict.fromkeys(f"{_path(e['loc'])}: {_fault(e)}" for e in errors)
        kind = TypeError if all(e["type"].endswith("_type") for e in errors) else ValueError
        raise kind(f"{context}{'; '.join(faults)}") from None
