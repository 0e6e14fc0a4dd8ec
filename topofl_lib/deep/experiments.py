"""Method configurations and multi-seed runners for the deep experiments.

:func:`deep_variants` turns method labels into ``{label: (method, params)}`` for
:func:`topofl_lib.experiments.run_comparison` (one runner for every experiment), with
the protocol of FedTopo Table C.3 (SGD lr 0.01, momentum 0.9, batch 32) unless
overridden. Labels:

* ``"FedAvg"``, ``"FedProx"`` (mu 0.01), ``"SCAFFOLD"``;
* ``"pFedMe"``: lambda 15, 5 inner steps, outer and personal step 0.05, no momentum
  (with the common lr 0.01 it hardly moves: eta * lambda = 0.15 per step; our choice);
* ``"pTopoFL"``: M = 3 clusters, descriptors of 200 penultimate activations, no
  feature augmentation (pTopoFL Sec. 4.1, Scenario C); ``"pTopoFL-CC"`` and
  ``"pTopoFL-MA"``: the same with the class-conditional or the model-anchored
  descriptor (per-class penultimate activations of the current cluster models);
* ``"Median"``, ``"TrimmedMean"``, ``"Krum"``: the Byzantine-robust aggregators with
  their defaults;
* ``"FedTopo"`` (Smooth-Topo), ``"FedTopo w/o TAL"``, ``"FedTopo[<schedule>]"`` for
  one of :data:`topofl_lib.fedtopo.SCHEDULES`, ``"FedTopo@<block>"`` for another
  block (``"FedTopo@conv1"``, the block plain ``"FedTopo"`` aligns, is the same
  configuration as ``"FedTopo"``, with the same parameters, so the two share their
  stored runs).
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .._validation import check_int
from ..core.seeds import check_seeds
from ..federated.client_descriptors import PTOPOFL_LABELS
from ..fedtopo.algorithm import FedTopo
from ..fedtopo.schedules import SCHEDULES, AlphaSchedule
from ..fedtopo.screening import TopologyGuidedBlockScreening
from .learner import TorchModel

#: The block FedTopo aligns unless told otherwise.
_FEDTOPO_BLOCK = inspect.signature(FedTopo).parameters["block"].default

__all__ = ["DEEP_LABELS", "block_table", "deep_variants", "tgbs_over_seeds"]

DESCRIPTOR_OF = {label: d for d, label in PTOPOFL_LABELS.items()}
DEEP_LABELS = ("FedAvg", "FedProx", "SCAFFOLD", "pFedMe", "pTopoFL", "pTopoFL-CC",
               "pTopoFL-MA", "Median", "TrimmedMean", "Krum", "FedTopo",
               "FedTopo w/o TAL", "FedTopo[<schedule>]", "FedTopo@<block>")


def deep_variants(labels, architecture: str = "fmnist_cnn", lr: float = 0.01,
                  momentum: float = 0.9, local_epochs: int = 5, batch_size: int = 32,
                  fedtopo: dict | None = None, schedule: dict | None = None) -> dict:
    """``{label: (method name, params)}`` for the deep runs.

    Parameters
    ----------
    labels : sequence of str
        See the module docstring.
    architecture, lr, momentum, local_epochs, batch_size
        The shared protocol.
    fedtopo : dict, optional
        Extra :class:`~topofl_lib.fedtopo.FedTopo` parameters (``tal_every``...).
    schedule : dict, optional
        Extra :class:`~topofl_lib.fedtopo.AlphaSchedule` parameters (``loss_range``...).

    Returns
    -------
    dict
        ``{label: (method name, params)}``, ready for :func:`~topofl_lib.federated.make_method`.
    """
    model = TorchModel(architecture, momentum=momentum)
    common = {"lr": lr, "local_epochs": local_epochs, "batch_size": batch_size, "model": model}
    fedtopo = dict(fedtopo or {})
    schedule = dict(schedule or {})
    out = {}
    labels = list(labels)
    if not labels:
        raise ValueError("labels is empty")
    for label in labels:
        if label in ("FedAvg", "SCAFFOLD", "Median", "TrimmedMean", "Krum"):
            out[label] = (label, dict(common))
        elif label == "FedProx":
            out[label] = (label, {**common, "mu": 0.01})
        elif label == "pFedMe":
            out[label] = (label, {**common, "lr": 0.05, "personal_lr": 0.05, "lam": 15.0,
                                  "model": TorchModel(architecture, momentum=0.0)})
        elif label in DESCRIPTOR_OF:
            out[label] = ("pTopoFL", {**common, "augment": False, "n_clusters": 3, "n_sub": 200,
                                      **({} if label == "pTopoFL"  # the default descriptor
                                         else {"descriptor": DESCRIPTOR_OF[label]})})
        elif label == "FedTopo":
            out[label] = ("FedTopo", {**common, **fedtopo,
                                      "schedule": AlphaSchedule("smooth", **schedule)})
        elif label == "FedTopo w/o TAL":
            out[label] = ("FedTopo", {**common, **fedtopo, "tal": False})
        elif m := re.fullmatch(r"FedTopo\[(\w+)\]", label):
            if m.group(1) not in SCHEDULES:
                raise ValueError(f"unknown schedule {m.group(1)!r} in {label!r}; expected "
                                 f"one of {list(SCHEDULES)}")
            out[label] = ("FedTopo", {**common, **fedtopo,
                                      "schedule": AlphaSchedule(m.group(1), **schedule)})
        elif m := re.fullmatch(r"FedTopo@(\w+)", label):
            params = {**common, **fedtopo, "schedule": AlphaSchedule("smooth", **schedule)}
            # the block plain "FedTopo" aligns is not spelled out: the same configuration
            # then has the same parameters, hence the same run-store key (one run, not two)
            if m.group(1) != params.get("block", _FEDTOPO_BLOCK):
                params["block"] = m.group(1)
            out[label] = ("FedTopo", params)
        else:
            raise ValueError(f"unknown method label {label!r}; expected one of "
                             f"{list(DEEP_LABELS)}")
    return out


def tgbs_over_seeds(dataset, seeds, architecture: str = "fmnist_cnn", n_val: int = 1000,
                    progress: bool = True, **tgbs_params) -> pd.DataFrame:
    """TGBS at initialisation for several seeds (Table 2's AUC column).

    For each seed: a freshly initialised network (seeded) is screened on a stratified
    validation subset of ``n_val`` *training* images (the server's validation data;
    the test set stays untouched). Returns one row per (seed, block).

    Parameters
    ----------
    dataset : ImageDataset
        The loaded dataset.
    seeds : iterable of int
        Seeds of the initialisations and validation subsets.
    architecture : str, default="fmnist_cnn"
        A name of :data:`~topofl_lib.deep.models.MODELS`.
    n_val : int, default=1000
        Validation images per seed (at least 10).
    progress : bool, default=True
        Show a tqdm bar.
    **tgbs_params
        Further :class:`~topofl_lib.fedtopo.TopologyGuidedBlockScreening` parameters.

    Returns
    -------
    pandas.DataFrame
        The screenings' ``scores_`` rows, with ``seed`` and the seed's ``selected`` block.
    """
    import torch

    from .datasets import ImageDataset
    from .models import make_model

    if not isinstance(dataset, ImageDataset):
        raise TypeError(f"dataset must be an ImageDataset, got {type(dataset).__name__}")
    check_int(n_val, "n_val", low=10)
    torch.set_num_threads(1)
    rows = []
    for seed in tqdm(check_seeds(seeds), desc="TGBS", disable=not progress):
        rng = np.random.default_rng(seed)
        idx = rng.choice(dataset.y_train.size, size=min(n_val, dataset.y_train.size),
                         replace=False)
        torch.manual_seed(seed)
        net = make_model(architecture, in_channels=dataset.image_shape[0],
                         n_classes=dataset.n_classes)
        X = torch.as_tensor(dataset.X_train[idx]).reshape(-1, *dataset.image_shape)
        tgbs = TopologyGuidedBlockScreening(random_state=seed, **tgbs_params).fit(
            net, X, dataset.y_train[idx])
        rows.append(tgbs.scores_.assign(seed=seed, selected=tgbs.best_block_))
    return pd.concat(rows, ignore_index=True)


def block_table(tgbs: pd.DataFrame, final: pd.DataFrame) -> pd.DataFrame:
    """Table 2 per seed: a block's TGBS AUC (%) beside the final accuracy (%) of FedTopo
    aligning that block (``final`` rows labelled ``"FedTopo@<block>"``).

    Parameters
    ----------
    tgbs : pandas.DataFrame
        :func:`tgbs_over_seeds`' rows (``block``, ``seed``, ``auc``).
    final : pandas.DataFrame
        Final metrics with ``method``, ``seed`` and ``accuracy`` columns.

    Returns
    -------
    pandas.DataFrame
        Columns ``block``, ``seed``, ``auc`` and ``accuracy`` (both in %), sorted by block and seed
        (an outer merge: a missing value is NaN).
    """
    acc = final[final["method"].str.startswith("FedTopo@")].assign(
        block=lambda d: d["method"].str.removeprefix("FedTopo@"),
        accuracy=lambda d: 100 * d["accuracy"])[["block", "seed", "accuracy"]]
    auc = tgbs.assign(auc=100 * tgbs["auc"])[["block", "seed", "auc"]]
    return auc.merge(acc, on=["block", "seed"], how="outer").sort_values(["block", "seed"])
