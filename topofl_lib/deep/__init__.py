"""Deep federated learning in torch: offline image datasets, FedTopo's non-IID
partitions, the models of the papers, and the learner that lets every algorithm of
:mod:`topofl_lib.federated` train a network."""

from .datasets import DATASETS, FASHION_MNIST_DIR, ImageDataset, load_image_dataset
from .experiments import DEEP_LABELS, block_table, deep_variants, tgbs_over_seeds
from .learner import TorchLearner, TorchModel, resolve_device
from .models import MODELS, BlockNet, make_model
from .partitions import PARTITIONS, label_distribution, noise_levels, partition_indices
from .scenarios import TEST_PROTOCOLS, make_image_scenario

__all__ = [
    "DATASETS",
    "DEEP_LABELS",
    "FASHION_MNIST_DIR",
    "MODELS",
    "PARTITIONS",
    "TEST_PROTOCOLS",
    "BlockNet",
    "ImageDataset",
    "TorchLearner",
    "TorchModel",
    "block_table",
    "deep_variants",
    "label_distribution",
    "load_image_dataset",
    "make_image_scenario",
    "make_model",
    "noise_levels",
    "partition_indices",
    "resolve_device",
    "tgbs_over_seeds",
]
