"""Federated scenario generators (tabular), non-IID partitions, offline datasets, and
readers of the dataset files in the data folder (CIFAR, MNIST, FEMNIST), and GFC's
datasets read out of registry packages (``topofl data``).

Importing :mod:`topofl_lib.data.scenarios` registers the tabular scenarios
(:func:`topofl_lib.core.register_scenario`). ``Client`` and ``FederatedScenario`` live
in :mod:`topofl_lib.core` and are re-exported here. Attributes load on first use.
"""

from .._lazy import attach

__all__ = [
    "ATTACKS",
    "AUTHORS_FILES",
    "DatasetNotFoundError",
    "FILE_DATASETS",
    "FederatedRecords",
    "MEDICALDATA",
    "PACKAGED_DATASETS",
    "PAPER_EVALUATION",
    "PROTOCOLS",
    "Client",
    "FederatedScenario",
    "ImageFiles",
    "kmeans_noniid_partition",
    "load_authors_federation",
    "fetch_packaged_datasets",
    "load_file_dataset",
    "from_dataframe",
    "from_file",
    "load_medicaldata",
    "load_mnist5k",
    "make_benchmark",
    "make_continual",
    "make_healthcare",
    "make_scenario",
    "make_waveform",
    "client_scaler",
    "data_dir",
    "read_cifar10",
    "read_cifar100",
    "read_femnist",
    "read_idx",
    "read_mnist",
    "restricted_unpickle",
    "paper_benchmark",
    "prepare_records",
    "read_records",
    "paper_healthcare",
    "standardise_clients",
]

__getattr__, __dir__ = attach(__name__, {
    "..core.containers": ["ATTACKS", "Client", "FederatedScenario"],
    ".authors_files": ["AUTHORS_FILES", "load_authors_federation"],
    ".datasets": ["load_mnist5k"],
    ".file_datasets": ["FILE_DATASETS", "load_file_dataset"],
    ".generators": ["make_waveform"],
    ".packaged": ["PACKAGED_DATASETS", "fetch_packaged_datasets"],
    ".file_formats": ["read_idx", "restricted_unpickle"],
    ".image_files": ["ImageFiles", "read_cifar10", "read_cifar100", "read_femnist", "read_mnist"],
    ".locations": ["DatasetNotFoundError", "data_dir"],
    ".paper_protocol": ["PAPER_EVALUATION", "paper_benchmark", "paper_healthcare"],
    ".partitions": ["kmeans_noniid_partition"],
    ".preprocessing": ["client_scaler", "standardise_clients"],
    ".records": ["FederatedRecords", "MEDICALDATA", "from_dataframe", "from_file",
                 "load_medicaldata", "prepare_records", "read_records"],
    ".scenarios": ["PROTOCOLS", "make_benchmark", "make_continual", "make_healthcare",
                   "make_scenario"],
})
