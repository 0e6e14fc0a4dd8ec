"""Deep federated learning in torch: offline image datasets, FedTopo's non-IID
partitions, the models of the papers, and the learner that lets every algorithm of
:mod:`topofl_lib.federated` train a network.

Needs the ``deep`` extra (``pip install 'topofl[deep]'``: torch and gudhi). Importing
:mod:`topofl_lib.deep.scenarios` registers the ``"image"`` scenario, which
:func:`topofl_lib.data.make_scenario` also finds through its entry point. Attributes
load on first use.
"""

from .._lazy import attach
from ..core.optional import require

require("torch", "topofl_lib.deep")

from . import feddf as _feddf  # noqa: E402, F401  registers FedDF
from . import fedftg as _fedftg  # noqa: E402, F401  registers FedFTG
from . import fedgen as _fedgen  # noqa: E402, F401  registers FedGen
from . import fedsa as _fedsa  # noqa: E402, F401  registers FedSA
from . import scenarios as _scenarios  # noqa: E402, F401  registers "image" on import

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
    ".experiments": ["DEEP_LABELS", "deep_variants", "sweep_variants"],
    ".learner": ["TorchLearner", "TorchModel", "resolve_device"],
    ".models": ["MODELS", "BlockNet", "make_model"],
    ".partitions": ["COMBINED", "PARTITIONS", "label_distribution", "noise_levels",
                    "partition_indices", "writer_partition"],
    ".scenarios": ["NOISE_MODES", "TEST_PROTOCOLS", "make_image_scenario"],
})
