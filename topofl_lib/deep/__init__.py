"""Deep federated learning in torch: offline image datasets, FedTopo's non-IID
partitions, the models of the papers, and the learner that lets every algorithm of
:mod:`topofl_lib.federated` train a network.

Needs the ``deep`` extra (``pip install 'topofl[deep]'``: torch and gudhi). Attributes
load on first use, so importing the package imports no torch. The ``"image"`` scenario
(:mod:`topofl_lib.deep.scenarios`) and the methods FedDF, FedSA, FedGen and FedFTG
register themselves when their modules are imported;
:func:`topofl_lib.data.make_scenario` and :func:`topofl_lib.federated.make_method` find
them through their entry points (``pyproject.toml``) before that.
"""

from .._lazy import attach
from ..core.optional import require

require("torch", "topofl_lib.deep")

__all__ = [
    "COMBINED",
    "DATASETS",
    "DEEP_LABELS",
    "FASHION_MNIST_DIR",
    "FILE_DATASETS",
    "MODELS",
    "NOISE_MODES",
    "OFFLINE_DATASETS",
    "PARTITIONS",
    "TEST_PROTOCOLS",
    "BlockNet",
    "ImageDataset",
    "TorchLearner",
    "TorchModel",
    "deep_variants",
    "label_distribution",
    "load_image_dataset",
    "make_image_scenario",
    "make_model",
    "noise_levels",
    "partition_indices",
    "resolve_device",
    "sweep_variants",
    "writer_partition",
]

__getattr__, __dir__ = attach(__name__, {
    ".datasets": ["DATASETS", "FASHION_MNIST_DIR", "FILE_DATASETS", "ImageDataset",
                  "OFFLINE_DATASETS", "load_image_dataset"],
    ".experiments": ["deep_variants", "sweep_variants"],
    ".labels": ["DEEP_LABELS"],
    ".learner": ["TorchLearner", "TorchModel", "resolve_device"],
    ".models": ["MODELS", "BlockNet", "make_model"],
    ".partitions": ["COMBINED", "PARTITIONS", "label_distribution", "noise_levels",
                    "partition_indices", "writer_partition"],
    ".scenarios": ["NOISE_MODES", "TEST_PROTOCOLS", "make_image_scenario"],
})
