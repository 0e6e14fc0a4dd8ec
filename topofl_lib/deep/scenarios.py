"""Federated image scenarios: a dataset split by one of FedTopo's partitions.

The result is an ordinary :class:`~topofl_lib.data.FederatedScenario` (flattened
images, the dataset's ``n_classes``), so every algorithm of the engine runs on it.

Test sets (``test=``):

* ``"global"`` (FedTopo's protocol, "test accuracy of the global model"): every client
  is scored on the whole test set. Clients that deploy the same model are scored once.
* ``"local"`` (personalised evaluation, for pTopoFL and pFedMe): each client gets
  ``len(test) // n_clients`` test images drawn from the shared test set with the
  client's own training label proportions (clients may share test images).

N-skew adds Gaussian noise of standard deviation ``noise_levels(n_clients, param)[j]``
(in standardised pixel units) to client ``j``'s training images. A combined partition
(``"L+N"``, ``"Q+K"``..., :data:`~topofl_lib.deep.partitions.COMBINED`) takes a pair
``param``; with ``N`` in it, the noise is the second value's. FedTopo (Appendix C) does
not say when the noise is drawn, nor whether test images get it; three readings
(:data:`NOISE_MODES` and ``test_noise``), each a scenario of its own name:

* ``noise="fixed"`` (the default): drawn once, seeded, when the scenario is built;
  ``X_train`` holds the noisy images. Name ``"fashion_mnist-N0.5"``.
* ``noise="per_load"``: drawn afresh every time an image is put in a mini-batch, as a
  torchvision-style transform would. ``X_train`` stays clean and each client carries its
  sd (:attr:`~topofl_lib.core.Client.load_noise_sd`); the network's learner adds the
  noise to every training batch (:meth:`~topofl_lib.deep.TorchLearner.batch`), from a
  generator seeded by the run's seed and the client's index, so a run's seed fixes it.
  Only methods that train on those batches alone accept such clients (FedAvg, FedTopo,
  the other aggregation baselines; see ``load_noise`` of
  :class:`~topofl_lib.federated.FederatedAlgorithm`); the others, and the logistic model,
  refuse them. The fixed draw is still made (and discarded), so the partition, the test
  sets and the test noise are those of ``"fixed"``. Name suffix ``"-perload"``.
* ``test_noise=True``: client ``j``'s test images get noise of the same sd
  ``sigma_j`` too, drawn once, seeded, after everything else the scenario draws (so the
  training data are those of ``test_noise=False``, bit for bit); the first client
  (``sigma_1 = 0``) keeps the clean test set. With ``test="global"`` every client is then
  scored on its own noisy copy of the test set, the engine scores each client's copy
  separately (its cache is per test array), and the reported accuracy is the mean over
  the clients of their noisy-test accuracies. Name suffix ``"-noisytest"`` (after
  ``"-perload"`` when both are set).

Both need N-skew (``"N"`` or a combined partition ending in ``"+N"``); without it there
is no noise to draw later or to put on the test images, and they are refused.

``partition="writers"`` splits by writer (FEMNIST, pTopoFL Scenario D:
:func:`~topofl_lib.deep.partitions.writer_partition` of ``dataset.writers_train``); its
``"local"`` test set is the test images of the client's own writers
(``dataset.writers_test``) when the dataset has them and they wrote some, else drawn
with the client's label proportions as above.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .._validation import check_bool, check_choice, check_random_state
from ..core.containers import Client, FederatedScenario
from ..core.registry import register_scenario
from .datasets import ImageDataset, load_image_dataset
from .partitions import (
    COMBINED,
    DEFAULT_PARAMS,
    label_distribution,
    noise_levels,
    partition_indices,
    split_kind,
    writer_partition,
)

__all__ = ["NOISE_MODES", "TEST_PROTOCOLS", "WRITERS", "make_image_scenario"]

TEST_PROTOCOLS = ("global", "local")
#: When N-skew's noise is drawn: once when the scenario is built, or at every load.
NOISE_MODES = ("fixed", "per_load")
#: The partition by writer (FEMNIST's natural federation).
WRITERS = "writers"


def _writer_parts(data: ImageDataset, n_clients: int, rng) -> list[np.ndarray]:
    writers = getattr(data, "writers_train", None)
    if writers is None:
        raise ValueError(f"partition={WRITERS!r} needs a dataset with writers_train (the "
                         f"writer of each training image); {data.name!r} has none")
    return writer_partition(writers, n_clients, random_state=rng)


def _has_noise(partition: str) -> bool:
    return partition == "N" or (partition in COMBINED and partition.endswith("+N"))


def _check_noise_options(partition: str, noise: str, test_noise) -> None:
    check_choice(noise, "noise", NOISE_MODES)
    check_bool(test_noise, "test_noise")
    if (noise != "fixed" or test_noise) and not _has_noise(partition):
        raise ValueError(
            f"noise={noise!r}, test_noise={test_noise!r} need N-skew (partition 'N' or a "
            f"combined one ending in '+N'), but partition={partition!r} adds no noise; "
            "leave noise='fixed' and test_noise=False")


def _suffix(noise: str, test_noise: bool) -> str:
    return ("-perload" if noise == "per_load" else "") + ("-noisytest" if test_noise else "")


def _noisy_tests(clients: list[Client], sigmas: np.ndarray, rng) -> list[Client]:
    """The clients with noise of their own sd on their test images (drawn in order)."""
    out = []
    for c, s in zip(clients, sigmas, strict=True):
        if s > 0:
            X = (c.X_test + rng.normal(0.0, s, size=c.X_test.shape)).astype(np.float32)
            c = replace(c, X_test=X)
        out.append(c)
    return out


def _noise(partition: str, param, n_clients: int) -> np.ndarray:
    """Each client's N-skew noise scale (zeros without N-skew)."""
    if partition in COMBINED and partition.endswith("+N"):
        return noise_levels(n_clients, split_kind(partition, param)[1][1])
    if partition == "N":
        return noise_levels(n_clients, DEFAULT_PARAMS["N"] if param is None else param)
    return np.zeros(n_clients)


def _test_of(data: ImageDataset, test: str, dist_j, n_clients: int, rng, writers_j=None):
    if test == "global":
        return data.X_test, data.y_test
    writers_test = getattr(data, "writers_test", None)
    t = (np.flatnonzero(np.isin(writers_test, writers_j))
         if writers_j is not None and writers_test is not None else np.empty(0, np.int64))
    if t.size == 0:  # no writers, or none of this client's wrote a test image
        t = _local_test(data.y_test, dist_j, data.y_test.size // n_clients, rng)
    return data.X_test[t], data.y_test[t]


def _label(partition: str, param) -> str:
    if partition in ("iid", WRITERS):
        return partition
    if partition in COMBINED:
        (a, pa), (b, pb) = split_kind(partition, param)
        return f"{a}{pa}+{b}{pb}"
    return f"{partition}{DEFAULT_PARAMS[partition] if param is None else param}"


def _local_test(y_test: np.ndarray, proportions: np.ndarray, size: int, rng) -> np.ndarray:
    counts = rng.multinomial(size, proportions)
    picks = []
    for c, m in enumerate(counts):
        pool = np.flatnonzero(y_test == c)
        if m and pool.size:
            picks.append(rng.choice(pool, size=min(m, pool.size), replace=False))
    return np.sort(np.concatenate(picks)) if picks else np.arange(min(size, y_test.size))


@register_scenario("image")
def make_image_scenario(dataset="fashion_mnist", partition: str = "L", n_clients: int = 5,
                        param=None, n_train: int | None = None, n_test: int | None = None,
                        test: str = "global", min_size: int = 10, random_state=0,
                        noise: str = "fixed", test_noise: bool = False
                        ) -> FederatedScenario:
    """Split an image dataset among clients.

    The scenario is named ``"<dataset>-<partition><param>"``, e.g.
    ``"fashion_mnist-L0.1"``, with ``"-perload"`` and/or ``"-noisytest"`` appended for
    the N-skew readings (module docstring), e.g. ``"fashion_mnist-N0.5-perload"``.

    Parameters
    ----------
    dataset : str or ImageDataset
        A name of :data:`topofl_lib.deep.DATASETS` or a loaded dataset.
    partition : {"iid", "N", "L", "K", "Q", "writers"} or a combined kind
        See :func:`topofl_lib.deep.partition_indices` (``"writers"``: see above).
    n_clients : int
    param : float or int or None, or a pair
        The partition's parameter (``None``: FedTopo Table 1's value); a pair for a
        combined partition.
    n_train, n_test : int or None
        Stratified subsets of the dataset (quick runs); ``None`` keeps all.
    test : {"global", "local"}
    min_size : int
        Minimum training images per client.
    random_state : None, int or Generator
        Seeds the subset, the partition and the noise.
    noise : {"fixed", "per_load"}, default="fixed"
        When N-skew's training noise is drawn (module docstring); N-skew only.
    test_noise : bool, default=False
        Put each client's N-skew noise on its test images too; N-skew only.

    Returns
    -------
    FederatedScenario
        One client per part; ``meta`` records the partition, its parameter (a combined
        partition's pair as ``"0.5+2"``), the noise levels and the label distribution,
        and ``"noise"`` / ``"test_noise"`` when they are not the defaults (the default's
        ``meta`` is what it was before they existed, so its runs keep their keys).
    """
    check_choice(test, "test", TEST_PROTOCOLS)
    _check_noise_options(partition, noise, test_noise)
    rng = check_random_state(random_state)
    data = dataset if isinstance(dataset, ImageDataset) else load_image_dataset(
        dataset, n_train=n_train, n_test=n_test, random_state=rng)
    if partition == WRITERS:
        parts = _writer_parts(data, n_clients, rng)
    else:
        parts = partition_indices(data.y_train, partition, n_clients, param,
                                  min_size=min_size, random_state=rng)
    sigmas = _noise(partition, param, n_clients)
    dist = label_distribution(data.y_train, parts, data.n_classes)
    writers = getattr(data, "writers_train", None) if partition == WRITERS else None
    clients = []
    for j, idx in enumerate(parts):
        X = data.X_train[idx]
        if sigmas[j] > 0:
            noisy = (X + rng.normal(0.0, sigmas[j], size=X.shape)).astype(np.float32)
            X = noisy if noise == "fixed" else X  # per_load: drawn to keep the stream
        X_test, y_test = _test_of(data, test, dist[j], n_clients, rng,
                                  None if writers is None else np.unique(writers[idx]))
        extra = {"load_noise_sd": float(sigmas[j])} if noise == "per_load" else {}
        clients.append(Client(X, data.y_train[idx], X_test, y_test, n_classes=data.n_classes,
                              **extra))
    if test_noise:
        clients = _noisy_tests(clients, sigmas, rng)
    name = f"{data.name}-{_label(partition, param)}{_suffix(noise, test_noise)}"
    if partition in COMBINED:  # one value per row of a results table: "0.5+2"
        param = "+".join(str(v) for _, v in split_kind(partition, param))
    meta = {"dataset": data.name, "partition": partition, "param": param,
            "image_shape": data.image_shape, "n_classes": data.n_classes,
            "noise_levels": sigmas, "label_distribution": dist, "test": test}
    if noise != "fixed":
        meta["noise"] = noise
    if test_noise:
        meta["test_noise"] = True
    return FederatedScenario(name, clients, meta)
