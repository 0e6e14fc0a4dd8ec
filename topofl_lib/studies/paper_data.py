"""The papers' deep settings on their own data (CIFAR-10/100, FEMNIST): what each is, and
whether it can run here.

:data:`PAPER_SETTINGS` describes each setting declaratively (:class:`PaperSetting`: data
set, architecture, partitions, clients, rounds, local epochs, methods, the claim ids it
feeds). :func:`setting_status` decides whether one runs: its data set missing gives the
loader's :attr:`~topofl_lib.data.locations.DatasetNotFoundError.not_run_note`; data but
no CUDA GPU gives ``not run: no CUDA GPU (...)`` with what it would take on this CPU,
unless the CPU is allowed; else it runs through :func:`run_setting`
(:func:`~topofl_lib.runner.run_comparison`, the run store, ``device="cuda"``).
:func:`setting_claim_rows` gives every claim id of a setting one row: its measurement, or
no value with profile ``not run`` and the reason. A notebook calls
:func:`paper_statuses` (every setting of its paper), :func:`run_setting` for those that
run and :func:`paper_claim_rows`.

Rows measured on the paper's data carry the profile :data:`PAPER_DATA` (not the
notebook's), so that ``topofl_lib/protocols.csv`` tells them from the stand-in rows of
the same pTopoFL Table 2 ids (Fashion-MNIST / MNIST-5k,
:mod:`topofl_lib.studies.deep_ptopofl`): where the paper's data ran, its row replaces the
stand-in's (:func:`merge_claim_rows`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from .._validation import check_choice
from ..claim_keys import METHOD_KEYS
from ..data.locations import DatasetNotFoundError
from ..results import (
    CLAIM_COLUMNS,
    NOT_RUN_PROFILE,
    PAPER_DATA_PROFILE,
    claim_rows,
)
from ..results import not_run_rows as results_not_run_rows
from .common import percent
from .fedtopo import TABLE1_METHODS

__all__ = [
    "CPU_SECONDS_PER_IMAGE",
    "NOT_RUN",
    "PAPER_DATA",
    "PAPER_SETTINGS",
    "PaperSetting",
    "SettingStatus",
    "merge_claim_rows",
    "not_run_rows",
    "paper_claim_rows",
    "paper_statuses",
    "run_setting",
    "setting_claim_rows",
    "setting_status",
    "settings_of_paper",
    "status_table",
]

#: The profile of a claim row that is not run (no value; its note says why).
NOT_RUN = NOT_RUN_PROFILE
#: The profile of the rows measured on the paper's own data, at the paper's protocol.
PAPER_DATA = PAPER_DATA_PROFILE
#: Seconds of one local training pass per image on one core of the 2-core development
#: machine, batch 32, the basis of the CPU estimate in a ``no CUDA GPU`` note: ResNet-18
#: through the engine (FedAvg's local epoch, ``benchmarks/bench_deep_gpu.py --quick``,
#: ``benchmarks/results/deep_gpu_cpu_quick.json``), ConvNet-2 a plain torch SGD step.
CPU_SECONDS_PER_IMAGE = {"resnet18_cifar": 0.029, "femnist_convnet2": 0.0013}
_TABLE1_LETTERS = (("N", 0.5), ("L", 0.1), ("K", 5), ("Q", 0.5))
_PTOPOFL_METHODS = ("pTopoFL", "FedAvg", "FedProx", "SCAFFOLD", "pFedMe")
_TGBS_BLOCKS = ("conv1", "layer1", "layer2", "layer3", "layer4")


@dataclass(frozen=True)
class PaperSetting:
    """One deep setting of a paper, on the paper's data, and the claim ids it feeds.

    Attributes
    ----------
    name : str
        Its key in :data:`PAPER_SETTINGS`.
    paper : {"FedTopo", "pTopoFL"}
        The paper.
    source : str
        Where the paper reports it.
    dataset : str
        The name :func:`topofl_lib.deep.load_image_dataset` loads.
    architecture : str
        A key of :data:`topofl_lib.deep.MODELS`.
    partitions : tuple of (kind, param)
        The splits, each run with every method.
    n_clients, n_rounds, local_epochs : int
        The federation (batch 32, SGD lr 0.01, momentum 0.9:
        :func:`~topofl_lib.deep.deep_variants`).
    methods : tuple of str
        Method labels of :func:`~topofl_lib.deep.deep_variants`.
    ids : Mapping
        ``{(partition kind, method label): claim id}`` of the final accuracies (percent
        for FedTopo, a fraction for pTopoFL, as the papers print them).
    test : {"global", "local"}
        FedTopo scores the global model on the test set; pTopoFL each client's own model.
    fedtopo : Mapping
        Extra FedTopo parameters (the block TAL aligns: layer2 on ResNet-18, C.4).
    tgbs_ids : Mapping
        ``{block: claim id}`` of TGBS AUCs at initialisation (Table 2), in percent.
    """

    name: str
    paper: str
    source: str
    dataset: str
    architecture: str
    partitions: tuple
    n_clients: int
    n_rounds: int
    local_epochs: int
    methods: tuple
    ids: Mapping = field(default_factory=dict)
    test: str = "global"
    fedtopo: Mapping = field(default_factory=dict)
    tgbs_ids: Mapping = field(default_factory=dict)

    @property
    def claim_ids(self) -> list[str]:
        """Every claim id the setting feeds, accuracies then TGBS AUCs."""
        return [*self.ids.values(), *self.tgbs_ids.values()]

    @property
    def n_classes(self) -> int:
        """Classes of the data set (CIFAR-100: 100, FEMNIST: 62, else 10)."""
        return {"cifar100": 100, "femnist": 62}.get(self.dataset, 10)

    def describe(self) -> str:
        """One line: data, split, network, federation."""
        parts = ", ".join(k if p is None else f"{k} {p}" for k, p in self.partitions)
        return (f"{self.dataset}, {parts}, {self.architecture}, {self.n_clients} clients, "
                f"{self.n_rounds} rounds of {self.local_epochs} local epochs")


def _fedtopo_t1(dataset: str) -> PaperSetting:
    ids = {(k, m): f"fedtopo.t1.{dataset}.{k}.{METHOD_KEYS[m]}"
           for k, _ in _TABLE1_LETTERS for m in TABLE1_METHODS}
    return PaperSetting(f"fedtopo_t1_{dataset}", "FedTopo", "Table 1", dataset,
                        "resnet18_cifar", _TABLE1_LETTERS, 5, 10, 5, TABLE1_METHODS, ids,
                        fedtopo={"block": "layer2"})


def _fedtopo_t3(setting: str, dataset: str, kind: str, param: tuple) -> PaperSetting:
    methods = ("FedTopo", "FedTopo w/o TAL")
    ids = {(kind, m): f"fedtopo.t3.{setting}.{'with' if m == 'FedTopo' else 'without'}"
           for m in methods}
    return PaperSetting(f"fedtopo_t3_{setting}", "FedTopo", "Table 3", dataset,
                        "resnet18_cifar", ((kind, param),), 5, 10, 5, methods, ids,
                        fedtopo={"block": "layer2"})


def _ptopofl(key: str, dataset: str, partition: tuple, architecture: str, n_clients: int,
             n_rounds: int, local_epochs: int) -> PaperSetting:
    ids = {(partition[0], m): f"ptopofl.t2.{key}.{METHOD_KEYS[m]}" for m in _PTOPOFL_METHODS}
    return PaperSetting(f"ptopofl_{key}", "pTopoFL", "Table 2 (full draft)", dataset,
                        architecture, (partition,), n_clients, n_rounds, local_epochs,
                        _PTOPOFL_METHODS, ids, test="local")


def _settings() -> dict[str, PaperSetting]:
    table2 = PaperSetting(
        "fedtopo_t2_resnet18", "FedTopo", "Table 2", "cifar10", "resnet18_cifar",
        (("L", 0.1),), 5, 10, 5, tuple(f"FedTopo@{b}" for b in _TGBS_BLOCKS),
        {("L", f"FedTopo@{b}"): f"fedtopo.t2.resnet18.{b}.acc" for b in _TGBS_BLOCKS},
        tgbs_ids={b: f"fedtopo.t2.resnet18.{b}.auc" for b in _TGBS_BLOCKS})
    out = [_fedtopo_t1("cifar10"), _fedtopo_t1("cifar100"), table2,
           _fedtopo_t3("a", "cifar10", "Q+K", (0.5, 2)),
           _fedtopo_t3("c", "cifar100", "L+N", (0.5, 1.0)),
           _ptopofl("cifar01", "cifar10", ("L", 0.1), "resnet18_cifar", 10, 100, 5),
           _ptopofl("cifar05", "cifar10", ("L", 0.5), "resnet18_cifar", 10, 100, 5),
           _ptopofl("femnist", "femnist", ("writers", None), "femnist_convnet2", 50, 200, 3)]
    return {s.name: s for s in out}


#: The papers' deep settings on their own data, by name.
PAPER_SETTINGS: dict[str, PaperSetting] = _settings()


def settings_of_paper(paper: str) -> list[str]:
    """The names of ``paper``'s settings in :data:`PAPER_SETTINGS`.

    Parameters
    ----------
    paper : {"FedTopo", "pTopoFL"}
        The paper.

    Returns
    -------
    list of str
        Setting names, in :data:`PAPER_SETTINGS` order.
    """
    check_choice(paper, "paper", ("FedTopo", "pTopoFL"))
    return [name for name, s in PAPER_SETTINGS.items() if s.paper == paper]


@dataclass(frozen=True)
class SettingStatus:
    """Whether a setting runs here, and if not, why (:func:`setting_status`).

    Attributes
    ----------
    setting : PaperSetting
        The setting.
    device : {"cuda", "cpu"} or None
        Where it runs; ``None``: it does not.
    note : str
        Why it does not run (a claim row's note, ``"not run: ..."``); empty when it runs.
    data : ImageDataset or None
        The loaded data set, when it was found.
    """

    setting: PaperSetting
    device: str | None
    note: str
    data: object = None

    @property
    def runs(self) -> bool:
        """Whether the setting runs."""
        return self.device is not None


def _cpu_note(setting: PaperSetting, n_images: int, n_seeds: int) -> str:
    per_image = CPU_SECONDS_PER_IMAGE.get(setting.architecture)
    n_runs = len(setting.partitions) * len(setting.methods) * n_seeds
    if per_image is None:
        cost = f"{n_runs} runs"
    else:
        hours = per_image * n_images * setting.local_epochs * setting.n_rounds / 3600
        cost = (f"about {hours:,.0f} hours per run on one CPU core and "
                f"{hours * n_runs:,.0f} for its {n_runs} runs, at {per_image:g} s per image "
                f"and epoch for {setting.architecture}, timed on a 2-core development machine")
    return f"not run: no CUDA GPU ({cost}; paper_data_cpu=True runs it on the CPU)"


def _known_loader(name: str, folder):
    from ..data.locations import data_dir

    return _load(name, str(data_dir(folder)))


@functools.lru_cache(maxsize=2)  # a notebook's settings share two data sets at most
def _load(name: str, folder: str):
    from ..deep.datasets import load_image_dataset

    return load_image_dataset(name, folder=folder)


def setting_status(setting: PaperSetting, folder=None, allow_cpu: bool = False,
                   n_seeds: int = 1, skip_note: str | None = None,
                   loader: Callable | None = None, cuda: bool | None = None) -> SettingStatus:
    """Decide whether ``setting`` runs here: its data, then the device.

    Parameters
    ----------
    setting : PaperSetting
        A setting of :data:`PAPER_SETTINGS`.
    folder : str or path-like, optional
        The data folder (:func:`topofl_lib.data.locations.data_dir`: None reads
        ``$TOPOFL_DATA_DIR``, else ``~/topofl_data``).
    allow_cpu : bool, default=False
        Run on the CPU when there is no CUDA GPU.
    n_seeds : int, default=1
        Seeds it would run (for the CPU estimate of the note).
    skip_note : str, optional
        Found data and a device, but do not run: this is the note (a profile that only
        checks).
    loader : callable, optional
        ``loader(name, folder) -> ImageDataset``, raising
        :class:`~topofl_lib.data.locations.DatasetNotFoundError` when files are missing
        (default: :func:`topofl_lib.deep.load_image_dataset`, all images).
    cuda : bool, optional
        Whether a CUDA GPU is present (default: ``torch.cuda.is_available()``).

    Returns
    -------
    SettingStatus
        The device it runs on, or the note of its not-run rows: the loader's
        ``not_run_note`` when the data are missing, ``"not run: no CUDA GPU (...)"``
        without a GPU unless ``allow_cpu``.
    """
    if not isinstance(setting, PaperSetting):
        raise TypeError(f"setting must be a PaperSetting, got {type(setting).__name__}")
    try:
        data = (loader or _known_loader)(setting.dataset, folder)
    except DatasetNotFoundError as err:
        return SettingStatus(setting, None, err.not_run_note)
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    device = "cuda" if cuda else ("cpu" if allow_cpu else None)
    if device is None:
        return SettingStatus(setting, None, _cpu_note(setting, len(data.y_train), n_seeds),
                             data)
    if skip_note is not None:
        return SettingStatus(setting, None, skip_note, data)
    return SettingStatus(setting, device, "", data)


def status_table(statuses) -> pd.DataFrame:
    """One row per setting: paper, source, what it is, and whether it runs (or why not).

    Parameters
    ----------
    statuses : iterable of SettingStatus
        From :func:`setting_status`.

    Returns
    -------
    pandas.DataFrame
        Columns setting, paper, source, protocol, claim ids, runs on, note.
    """
    return pd.DataFrame([{"setting": s.setting.name, "paper": s.setting.paper,
                          "source": s.setting.source, "protocol": s.setting.describe(),
                          "claim ids": len(s.setting.claim_ids), "runs on": s.device or "-",
                          "note": s.note} for s in statuses])


def run_setting(status: SettingStatus, seeds, cache_dir=None, n_workers: int = 1,
                progress: bool = True, schedule: Mapping | None = None,
                tgbs: Mapping | None = None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Run a setting that :func:`setting_status` let run: every partition, method and seed
    through :func:`~topofl_lib.runner.run_comparison` on the status's device.

    Parameters
    ----------
    status : SettingStatus
        A status whose ``runs`` is true.
    seeds : iterable of int
        The seeds.
    cache_dir : str or Path, optional
        The run store (finished runs are reused).
    n_workers : int, default=1
        Runs at once (one per device on a GPU machine is the usual choice).
    progress : bool, default=True
        Show progress bars.
    schedule : Mapping, optional
        Extra :class:`~topofl_lib.fedtopo.AlphaSchedule` parameters of FedTopo.
    tgbs : Mapping, optional
        Parameters of :func:`~topofl_lib.studies.fedtopo.tgbs_over_seeds` for a setting
        with TGBS ids (``n_val``, ``n_pairs``, ``metrics``).

    Returns
    -------
    final : pandas.DataFrame
        The comparisons' ``final`` rows with a ``split`` column (the partition kind).
    tgbs : pandas.DataFrame or None
        TGBS scores per block and seed, for a setting with TGBS ids.
    """
    from ..deep.experiments import deep_variants
    from ..runner import run_comparison
    from .fedtopo import tgbs_over_seeds

    if not isinstance(status, SettingStatus) or not status.runs:
        raise ValueError(f"status must be a SettingStatus that runs, got {status!r}")
    s, seeds = status.setting, list(seeds)
    variants = deep_variants(s.methods, architecture=s.architecture,
                             local_epochs=s.local_epochs, fedtopo=dict(s.fedtopo),
                             schedule=dict(schedule or {}), n_classes=s.n_classes)
    finals = []
    for kind, param in s.partitions:
        params = {"dataset": status.data, "partition": kind, "param": param,
                  "n_clients": s.n_clients, "test": s.test}
        result = run_comparison("image", seeds=seeds, n_rounds=s.n_rounds, variants=variants,
                                scenario_params=params, cache_dir=cache_dir,
                                n_workers=n_workers, on_divergence="record",
                                progress=progress, device=status.device)
        finals.append(result.final.assign(split=kind))
    scores = (tgbs_over_seeds(status.data, seeds, architecture=s.architecture,
                              progress=progress, **dict(tgbs or {}))
              if s.tgbs_ids else None)
    return pd.concat(finals, ignore_index=True), scores


def not_run_rows(ids, note: str) -> pd.DataFrame:
    """Claim rows without a value: ``n_seeds`` 0, profile :data:`NOT_RUN`, ``note`` as the
    reason (what :func:`topofl_lib.results.read_claim_file` accepts).

    Parameters
    ----------
    ids : iterable of str
        Claim ids of ``topofl_lib/paper_claims.csv``.
    note : str
        Why they were not run (``"not run: ..."``).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`topofl_lib.results.CLAIM_COLUMNS`, one row per id.
    """
    if not isinstance(note, str) or not note.strip():
        raise ValueError(f"note must say why the rows were not run, got {note!r}")
    return results_not_run_rows(dict.fromkeys(ids, note))


def setting_claim_rows(status: SettingStatus, final: pd.DataFrame | None = None,
                       tgbs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One claim row per id of the setting: its measurement (profile :data:`PAPER_DATA`),
    or, for a setting that did not run, no value and the status's note.

    Parameters
    ----------
    status : SettingStatus
        The setting's status.
    final : pandas.DataFrame, optional
        :func:`run_setting`'s ``final`` (needed when the setting ran).
    tgbs : pandas.DataFrame, optional
        :func:`run_setting`'s TGBS scores.

    Returns
    -------
    pandas.DataFrame
        Claim rows, one per id of ``status.setting.claim_ids``.
    """
    s = status.setting
    if not status.runs:
        return not_run_rows(s.claim_ids, status.note)
    if final is None:
        raise ValueError(f"setting {s.name!r} ran on {status.device}: give its final table")
    values = {}
    for (kind, label), cid in s.ids.items():
        g = final[(final["split"] == kind) & (final["method"] == label)]
        # FedTopo prints percent, pTopoFL fractions
        values[cid] = percent(g) if s.paper == "FedTopo" else percent(g) / 100.0
    for block, cid in s.tgbs_ids.items():
        if tgbs is None:
            raise ValueError(f"setting {s.name!r} has TGBS ids: give its TGBS scores")
        g = tgbs[tgbs["block"] == block].sort_values("seed")
        values[cid] = 100.0 * g["auc"].to_numpy(dtype=float)
    note = f"the paper's data and protocol ({s.describe()}), on {status.device}"
    return claim_rows(values, PAPER_DATA, dict.fromkeys(values, note))


def merge_claim_rows(stand_in: pd.DataFrame, paper_data: pd.DataFrame) -> pd.DataFrame:
    """Stand-in rows and paper-data rows of the same ids, one row per id: a paper-data row
    with a value replaces the stand-in's; a not-run paper-data row gives way to a stand-in
    row of its id and stays where there is none.

    Parameters
    ----------
    stand_in : pandas.DataFrame
        Claim rows measured on stand-ins.
    paper_data : pandas.DataFrame
        Claim rows of the paper-data settings (:func:`setting_claim_rows`).

    Returns
    -------
    pandas.DataFrame
        Claim rows, stand-in order first, then the paper-data ids without a stand-in.
    """
    ran = paper_data["profile"] != NOT_RUN
    keep = stand_in[~stand_in["id"].isin(paper_data.loc[ran, "id"])]
    missing = paper_data[~ran & ~paper_data["id"].isin(stand_in["id"])]
    return pd.concat([keep, paper_data[ran], missing], ignore_index=True)[CLAIM_COLUMNS]


def paper_statuses(paper: str, attempt, folder=None, allow_cpu: bool = False,
                   n_seeds: int = 1, run: bool = True, profile: str = "paper",
                   loader: Callable | None = None, cuda: bool | None = None
                   ) -> list[SettingStatus]:
    """The status of every setting of ``paper``: those in ``attempt`` checked by
    :func:`setting_status`, the others not run.

    Parameters
    ----------
    paper : {"FedTopo", "pTopoFL"}
        The paper.
    attempt : iterable of str
        Names of the settings to attempt (the notebook's ``paper_settings``).
    folder, allow_cpu, n_seeds, loader, cuda
        As in :func:`setting_status`.
    run : bool, default=True
        Run those that can (``paper_data="run"``); ``False`` only checks them.
    profile : str, default="paper"
        The notebook's profile, named in the note of a setting only checked.

    Returns
    -------
    list of SettingStatus
        One per setting of the paper, in :data:`PAPER_SETTINGS` order.
    """
    names, attempt = settings_of_paper(paper), list(attempt)
    unknown = sorted(set(attempt) - set(names))
    if unknown:
        raise ValueError(f"attempt holds {unknown}, which are not settings of {paper}; "
                         f"expected some of {names}")
    skip = None if run else (f"not run: the {profile} profile only checks the paper's data "
                             "(paper_data='check'); the paper profile runs it")
    return [setting_status(PAPER_SETTINGS[n], folder, allow_cpu, n_seeds, skip, loader, cuda)
            if n in attempt else
            SettingStatus(PAPER_SETTINGS[n], None, "not run: not attempted (the notebook's "
                                                   "paper_settings leaves it out)")
            for n in names]


def paper_claim_rows(statuses, runs: Mapping) -> pd.DataFrame:
    """Claim rows of every setting in ``statuses``: one row per claim id.

    Parameters
    ----------
    statuses : iterable of SettingStatus
        From :func:`paper_statuses`.
    runs : Mapping
        ``{setting name: (final, tgbs)}`` of the settings that ran (:func:`run_setting`).

    Returns
    -------
    pandas.DataFrame
        Claim rows (columns :data:`topofl_lib.results.CLAIM_COLUMNS`).
    """
    statuses = list(statuses)
    parts = [setting_claim_rows(s, *runs.get(s.setting.name, (None, None))) for s in statuses]
    return pd.concat(parts, ignore_index=True)
