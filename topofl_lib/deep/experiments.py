"""Method configurations and multi-seed runners for the deep experiments.

:func:`deep_variants` turns method labels into ``{label: (method, params)}`` for
:func:`topofl_lib.runner.run_comparison` (one runner for every experiment), with
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
* FedTopo Table 1's aggregation baselines (their modules say where each value comes
  from):
  ``"FedAvgM"`` (server momentum 0.9, server step 1; Hsu et al. 2019),
  ``"FedNova"`` (no parameter of its own; Wang et al. 2020),
  ``"FedDyn"`` (alpha 0.01; Acar et al. 2021),
  ``"FedDC"`` (alpha 0.01; Gao et al. 2022);
* ``"MOON"``: mu 5 and tau 0.5 (MOON's CIFAR-10 values; mu 1 for 100 classes, its
  CIFAR-100 value); ``"FedFM"``: lambda 50, tau 0.1 (the FedFM authors' code), matching
  from round 2; ``"FedPAC"``: lambda 1, one classifier epoch (FedPAC's defaults);
  ``"FedCCFA"``: gamma 20, tau 0.1, DBSCAN eps 0.1 (the FedCCFA authors' configuration),
  aligning from round 2. These two have a classifier per client and no global one;
  FedTopo's Table 1 scores "the global model", so these labels score every client with
  the global extractor and the clients' classifiers averaged by data volume
  (``deploy="global"``), and ``"FedPAC (personal models)"`` and ``"FedCCFA (personal
  models)"`` score each client with its own model, the methods' own deployment (the
  same training, bit for bit);
* ``"FedTopo"`` (Smooth-Topo), ``"FedTopo w/o TAL"``, ``"FedTopo[<schedule>]"`` for
  one of :data:`topofl_lib.fedtopo.SCHEDULES`, ``"FedTopo@<block>"`` for another
  block (``"FedTopo@conv1"``, the block plain ``"FedTopo"`` aligns, is the same
  configuration as ``"FedTopo"``, with the same parameters, so the two share their
  stored runs).
* ``"FedDF"``: the server distils the clients' ensemble into FedAvg's average
  (:class:`~topofl_lib.deep.feddf.FedDF`; its paper's Adam 1e-3, 500 steps of 64
  held-out unlabelled images per round); ``"FedSA"``: semantic anchors regularise the
  representation and calibrate the classifier (:class:`~topofl_lib.deep.fedsa.FedSA`);
  ``"FedGen"``: a server-trained generator of representations regularises the clients'
  heads (:class:`~topofl_lib.deep.fedgen.FedGen`); ``"FedFTG"``: the server fine-tunes
  the average on a generator's hard samples (:class:`~topofl_lib.deep.fedftg.FedFTG`).
"""

from __future__ import annotations

import inspect
import re

from .._validation import check_int, check_real
from ..federated.client_descriptors import PTOPOFL_LABELS
from ..fedtopo.algorithm import FedTopo
from ..fedtopo.schedules import SCHEDULES, AlphaSchedule
from .labels import (
    BASELINE_PARAMS,
    DECOUPLED_LABELS,
    DEEP_LABELS,
    DISTILLATION_LABELS,
    PERSONAL,
)
from .learner import TorchModel

#: The block FedTopo aligns unless told otherwise.
_FEDTOPO_BLOCK = inspect.signature(FedTopo).parameters["block"].default

__all__ = ["DECOUPLED_LABELS", "DEEP_LABELS", "PERSONAL", "deep_variants", "sweep_variants"]

DESCRIPTOR_OF = {label: d for d, label in PTOPOFL_LABELS.items()}


def _deploy(label: str) -> dict:
    """A decoupled method's scoring: Table 1's global model, unless the label asks for the
    personal models (the methods' default, left unset so that those runs keep the keys
    they were stored under)."""
    return {} if label.endswith(PERSONAL) else {"deploy": "global"}


def _options(value, name: str) -> dict:
    """A copy of the options dict ``value`` (``None``: none)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise TypeError(f"{name} must be None or a dict of parameters, got {value!r}")
    return dict(value)


def deep_variants(labels, architecture: str = "fmnist_cnn", lr: float = 0.01,
                  momentum: float = 0.9, local_epochs: int = 5, batch_size: int = 32,
                  fedtopo: dict | None = None, schedule: dict | None = None,
                  n_classes: int = 10) -> dict:
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
    n_classes : int, default=10
        Classes of the network's output (CIFAR-100: 100, FEMNIST: 62).

    Returns
    -------
    dict
        ``{label: (method name, params)}``, ready for :func:`~topofl_lib.federated.make_method`.
    """
    model = TorchModel(architecture, n_classes=n_classes, momentum=momentum).check_params()
    check_real(lr, "lr", low=0.0, low_open=True)
    check_int(local_epochs, "local_epochs", low=1)
    check_int(batch_size, "batch_size", low=1)
    # the values as given (not the checks' conversions): they are part of the runs' keys
    common = {"lr": lr, "local_epochs": local_epochs, "batch_size": batch_size, "model": model}
    fedtopo, schedule = _options(fedtopo, "fedtopo"), _options(schedule, "schedule")
    out = {}
    labels = [labels] if isinstance(labels, str) else list(labels)
    if not labels or len(set(labels)) != len(labels):
        raise ValueError(f"labels must be non-empty and distinct, got {labels!r}")
    for label in labels:
        if label in ("FedAvg", "SCAFFOLD", "Median", "TrimmedMean", "Krum",
                     *DISTILLATION_LABELS):
            out[label] = (label, dict(common))
        elif label in BASELINE_PARAMS:
            out[label] = (label, {**common, **BASELINE_PARAMS[label]})
        elif label == "FedProx":
            out[label] = (label, {**common, "mu": 0.01})
        elif label == "pFedMe":
            out[label] = (label, {**common, "lr": 0.05, "personal_lr": 0.05, "lam": 15.0,
                                  "model": TorchModel(architecture, n_classes=n_classes,
                                                      momentum=0.0)})
        elif label == "MOON":
            out[label] = (label, {**common, "mu": 5.0 if n_classes <= 10 else 1.0,
                                  "tau": 0.5})
        elif label == "FedFM":
            out[label] = (label, {**common, "lam": 50.0, "tau": 0.1, "start_round": 2})
        elif label.removesuffix(PERSONAL) == "FedPAC":
            out[label] = ("FedPAC", {**common, "lam": 1.0, "head_epochs": 1,
                                     **_deploy(label)})
        elif label.removesuffix(PERSONAL) == "FedCCFA":
            out[label] = ("FedCCFA", {**common, "gamma": 20.0, "tau": 0.1, "eps": 0.1,
                                      "start_round": 2, **_deploy(label)})
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


def sweep_variants(label: str, param: str, values, **protocol) -> dict:
    """One method of :func:`deep_variants` with one of its parameters set to each value.

    Parameters
    ----------
    label : str
        A label of :func:`deep_variants` (``"FedFM"``).
    param : str
        A parameter of that label's method (``"lam"``).
    values : sequence
        The values to run, in order; none may repeat.
    **protocol
        Passed to :func:`deep_variants` (``local_epochs``...).

    Returns
    -------
    dict
        ``{"<label>[<param>=<value>]": (method name, params)}``; the other parameters are
        the label's own.

    Examples
    --------
    >>> list(sweep_variants("FedFM", "lam", [5.0, 50.0], local_epochs=1))
    ['FedFM[lam=5.0]', 'FedFM[lam=50.0]']
    """
    from ..federated.methods import get_method  # registers the built-in methods

    method, params = deep_variants([label], **protocol)[label]
    if param not in inspect.signature(get_method(method)).parameters:
        raise ValueError(f"param={param!r} is not a parameter of {method} (label {label!r})")
    if isinstance(values, (str, bytes, dict)):
        raise TypeError(f"values must be a sequence of {param} values, got {values!r}")
    values = list(values)
    if not values or len(set(map(repr, values))) != len(values):
        raise ValueError(f"values must be non-empty and distinct, got {values!r}")
    return {f"{label}[{param}={v!r}]": (method, {**params, param: v}) for v in values}
