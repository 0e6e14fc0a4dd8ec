"""The papers' deep settings on their own data (issue 26): the run decision, the writer
partition, the combined skews, one claim row per id, and a tiny CIFAR-shaped run."""

from __future__ import annotations

from dataclasses import replace
from fnmatch import fnmatchcase
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")

from topofl_lib.data.locations import DatasetNotFoundError  # noqa: E402
from topofl_lib.deep import ImageDataset, make_image_scenario, partition_indices  # noqa: E402
from topofl_lib.deep.partitions import noise_levels, writer_partition  # noqa: E402
from topofl_lib.results import load_paper_claims, read_claim_file, write_claims  # noqa: E402
from topofl_lib.studies.paper_data import (  # noqa: E402
    CPU_SECONDS_PER_IMAGE,
    NOT_RUN,
    PAPER_DATA,
    PAPER_SETTINGS,
    merge_claim_rows,
    paper_claim_rows,
    paper_statuses,
    run_setting,
    setting_claim_rows,
    setting_status,
    settings_of_paper,
)

CIFAR_NOTE = "not run: CIFAR-10 not found in ~/topofl_data/cifar-10-batches-bin"


def _images(n_train: int, n_test: int, shape=(3, 32, 32), n_classes: int = 10, seed: int = 0,
            **extra) -> ImageDataset:
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    return ImageDataset("synthetic", rng.normal(size=(n_train, size)).astype(np.float32),
                        np.arange(n_train) % n_classes,
                        rng.normal(size=(n_test, size)).astype(np.float32),
                        np.arange(n_test) % n_classes, shape, n_classes, **extra)


def _missing(name, folder):
    raise DatasetNotFoundError("CIFAR-10", Path.home() / "topofl_data" / "cifar-10-batches-bin",
                               ["data_batch_1.bin"], "https://www.cs.toronto.edu/~kriz/cifar.html")


# -- the decision ---------------------------------------------------------------------
def test_missing_data_gives_the_loaders_note():
    """A data set that is not there: the row's note is the error's not_run_note, exactly."""
    status = setting_status(PAPER_SETTINGS["fedtopo_t3_a"], loader=_missing, cuda=True)
    assert not status.runs and status.note == CIFAR_NOTE


def test_no_cuda_gives_the_cpu_estimate_and_allow_cpu_runs():
    """Data but no GPU: `not run: no CUDA GPU (...)` with the CPU hours of the setting;
    allowed, it runs on the CPU; with a GPU on CUDA; a check-only profile gets its note."""
    setting = PAPER_SETTINGS["ptopofl_cifar01"]
    data = _images(20, 10)
    status = setting_status(setting, loader=lambda n, f: data, cuda=False, n_seeds=2)
    hours = (CPU_SECONDS_PER_IMAGE["resnet18_cifar"] * 20 * setting.local_epochs
             * setting.n_rounds / 3600)
    assert not status.runs and status.note.startswith("not run: no CUDA GPU (")
    assert f"about {hours:,.0f} hours per run" in status.note
    assert f"its {2 * len(setting.methods)} runs" in status.note
    assert "paper_data_cpu=True" in status.note
    ok = setting_status(setting, loader=lambda n, f: data, cuda=False, allow_cpu=True)
    assert (ok.runs, ok.device, ok.note, ok.data) == (True, "cpu", "", data)
    assert setting_status(setting, loader=lambda n, f: data, cuda=True).device == "cuda"
    checked = setting_status(setting, loader=lambda n, f: data, cuda=True, skip_note="not run: x")
    assert (checked.runs, checked.note) == (False, "not run: x")
    with pytest.raises(TypeError, match="setting must be a PaperSetting, got str"):
        setting_status("ptopofl_cifar01")


def test_the_installed_loader_never_runs_without_the_data(tmp_path):
    """With the installed loaders and an empty data folder every setting is not run, and
    says so."""
    for setting in PAPER_SETTINGS.values():
        status = setting_status(setting, folder=tmp_path, allow_cpu=True)
        assert not status.runs and status.note.startswith("not run: ")


# -- the partitions -------------------------------------------------------------------
def test_writer_partition_keeps_writers_whole_and_assigns_every_sample_once():
    """Clients are writers (in id order) or groups of whole writers; every sample once."""
    writers = np.repeat([7, 3, 5, 9, 1], [4, 2, 3, 5, 1])
    parts = writer_partition(writers, 5)
    assert [sorted(set(writers[p])) for p in parts] == [[1], [3], [5], [7], [9]]
    for n_clients in (1, 2, 3):
        parts = writer_partition(writers, n_clients, random_state=0)
        assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(writers.size))
        owners = [set(writers[p]) for p in parts]
        assert sum(len(o) for o in owners) == 5 and all(owners)  # no writer split
        counts = sorted(len(o) for o in owners)
        assert counts[-1] - counts[0] <= 1
    with pytest.raises(ValueError, match="n_clients=6 exceeds the 5 writers"):
        writer_partition(writers, 6)
    with pytest.raises(ValueError, match="writers must be a non-empty 1-D array"):
        writer_partition(np.array([0.5, 1.5]), 1)


def test_writer_scenario_tests_each_client_on_its_writers():
    """partition="writers": local test images are those of the client's own writers."""
    data = _images(60, 30, shape=(1, 28, 28), n_classes=62,
                   writers_train=np.arange(60) % 6, writers_test=np.arange(30) % 6)
    sc = make_image_scenario(data, "writers", 3, test="local", random_state=0)
    assert sc.name == "synthetic-writers" and sum(c.n_train for c in sc.clients) == 60
    for client in sc.clients:
        mine = {w for w in range(6) if np.isin(data.X_train[data.writers_train == w],
                                               client.X_train).all()}
        expect = data.X_test[np.isin(data.writers_test, list(mine))]
        assert len(mine) == 2 and np.array_equal(np.sort(client.X_test, axis=0),
                                                 np.sort(expect, axis=0))
    with pytest.raises(ValueError, match="needs a dataset with writers_train"):
        make_image_scenario(_images(60, 30), "writers", 3)


def test_q_plus_k_gives_k_labels_and_thins_the_k_parts():
    """Q+K: each client holds exactly k labels; its part is a subset of the K partition's
    (same seed), the largest feasible client keeps all of its part, no sample twice."""
    y = np.repeat(np.arange(10), 60)
    k_parts = partition_indices(y, "K", 5, 2, random_state=3)
    parts = partition_indices(y, "Q+K", 5, (0.5, 2), random_state=3)
    assert [np.unique(y[p]).size for p in parts] == [2] * 5
    assert all(np.isin(p, kp).all() for p, kp in zip(parts, k_parts, strict=True))
    assert any(p.size == kp.size for p, kp in zip(parts, k_parts, strict=True))
    assert np.unique(np.concatenate(parts)).size == sum(p.size for p in parts)
    assert min(p.size for p in parts) >= 10 and len({p.size for p in parts}) > 1
    with pytest.raises(ValueError, match=r"param of the combined partition 'Q\+K' must be "
                                         "a pair"):
        partition_indices(y, "Q+K", 5, 0.5)


def test_l_plus_n_is_the_l_split_with_the_n_noise():
    """L+N: the L split of the first value (every sample once) and the noise levels of
    the second on the training images; test images stay clean."""
    y = np.repeat(np.arange(10), 30)
    parts = partition_indices(y, "L+N", 5, (0.5, 1.0), random_state=1)
    plain = partition_indices(y, "L", 5, 0.5, random_state=1)
    assert all(np.array_equal(a, b) for a, b in zip(parts, plain, strict=True))
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(y.size))
    data = _images(300, 20, shape=(1, 4, 4))
    sc = make_image_scenario(data, "L+N", 5, (0.5, 1.0), random_state=0)
    assert sc.name == "synthetic-L0.5+N1.0"
    assert np.allclose(sc.meta["noise_levels"], noise_levels(5, 1.0))
    assert np.array_equal(sc.clients[0].X_test, data.X_test)


# -- one row per claim id ---------------------------------------------------------------
PATTERNS = ("fedtopo.t1.cifar*", "fedtopo.t2.resnet18.*", "fedtopo.t3.[ac].*", "ptopofl.t2.*")


def test_every_cifar_and_femnist_id_gets_exactly_one_row(tmp_path):
    """Without data, every id of the four groups has one not-run row (the not-implemented
    methods say so), the file passes read_claim_file, and stand-in rows win over not-run
    rows of the same ids."""
    rows = pd.concat([paper_claim_rows(paper_statuses(p, settings_of_paper(p), loader=_missing),
                                       {}) for p in ("FedTopo", "pTopoFL")], ignore_index=True)
    ids = [c for c in load_paper_claims().index if any(fnmatchcase(c, p) for p in PATTERNS)]
    assert len(ids) == 157 and sorted(rows["id"]) == sorted(ids)
    assert (rows["profile"] == NOT_RUN).all() and (rows["n_seeds"] == 0).all()
    notes = rows.set_index("id")["note"]
    assert notes["fedtopo.t3.a.with"] == CIFAR_NOTE
    assert notes["fedtopo.t1.cifar10.L.moon"] == CIFAR_NOTE  # all 16 methods are in the setting
    assert len(read_claim_file(write_claims(rows, tmp_path, "paper"))) == len(ids)
    stand_in = pd.DataFrame({"id": ["ptopofl.t2.cifar01.fedavg"], "measured_mean": [0.5],
                             "measured_std": [0.1], "n_seeds": [3], "profile": ["cpu"],
                             "note": ["stand-in"]})
    merged = merge_claim_rows(stand_in, rows[rows["id"].str.startswith("ptopofl.t2.")])
    assert merged["id"].is_unique and len(merged) == 15
    assert merged.set_index("id").loc["ptopofl.t2.cifar01.fedavg", "profile"] == "cpu"


def test_a_check_only_profile_and_a_left_out_setting_say_so():
    """paper_data='check' and a setting left out of paper_settings give their notes."""
    data = _images(20, 10)
    statuses = paper_statuses("pTopoFL", ["ptopofl_cifar01"], loader=lambda n, f: data,
                              cuda=True, run=False, profile="quick")
    notes = {s.setting.name: s.note for s in statuses}
    assert notes["ptopofl_cifar01"].startswith("not run: the quick profile only checks")
    assert "paper_settings leaves it out" in notes["ptopofl_femnist"]
    with pytest.raises(ValueError, match="not settings of pTopoFL"):
        paper_statuses("pTopoFL", ["fedtopo_t3_a"])


# -- a tiny CIFAR-shaped run ------------------------------------------------------------
def test_a_cifar_shaped_setting_runs_end_to_end_on_the_cpu(tmp_path):
    """FedTopo Table 1's CIFAR-10 setting, cut to 2 clients, 1 round, 1 epoch, FedAvg on
    L-skew, on 40 synthetic 3x32x32 images: the same path as on a GPU (ResNet-18, the run
    store); its row has profile paper-data, and a second call reads the stored run."""
    full = PAPER_SETTINGS["fedtopo_t1_cifar10"]
    setting = replace(full, partitions=(("L", 0.5),), methods=("FedAvg",), n_clients=2,
                      n_rounds=1, local_epochs=1,
                      ids={("L", "FedAvg"): "fedtopo.t1.cifar10.L.fedavg"})
    data = _images(40, 10)
    status = setting_status(setting, loader=lambda n, f: data, cuda=False, allow_cpu=True)
    final, tgbs = run_setting(status, [0], cache_dir=tmp_path, progress=False)
    assert tgbs is None and list(final["split"]) == ["L"]
    rows = setting_claim_rows(status, final)
    row = rows.iloc[0]
    assert (row["id"], row["profile"], row["n_seeds"]) == ("fedtopo.t1.cifar10.L.fedavg",
                                                           PAPER_DATA, 1)
    assert 0.0 <= row["measured_mean"] <= 100.0 and "on cpu" in row["note"]
    again, _ = run_setting(status, [0], cache_dir=tmp_path, progress=False)
    assert again["accuracy"].tolist() == final["accuracy"].tolist()


def test_convnet2_is_leafs_femnist_cnn_and_variants_carry_the_classes():
    """ConvNet-2 (LEAF's FEMNIST CNN): 62 classes, a 2048-unit penultimate layer, 6 603 710
    parameters; deep_variants builds every method's network with n_classes."""
    import torch

    from topofl_lib.deep import deep_variants, make_model

    net = make_model("femnist_convnet2", n_classes=62)
    x = torch.zeros(2, 1, 28, 28)
    assert net(x).shape == (2, 62) and net.penultimate(x).shape == (2, 2048)
    assert net.block_output(x, "conv2").shape == (2, 64, 7, 7)
    assert sum(p.numel() for p in net.parameters()) == 6_603_710
    variants = deep_variants(["FedAvg", "pFedMe", "pTopoFL"], "femnist_convnet2", n_classes=62)
    assert {v[1]["model"].n_classes for v in variants.values()} == {62}


def test_a_client_whose_writers_wrote_no_test_image_gets_a_label_matched_test_set():
    """Writers without test images: the client's local test set is drawn by its label
    proportions instead of being empty."""
    data = _images(60, 30, shape=(1, 28, 28), n_classes=62,
                   writers_train=np.arange(60) % 6, writers_test=np.full(30, 99))
    sc = make_image_scenario(data, "writers", 3, test="local", random_state=0)
    assert all(c.X_test.shape[0] > 0 for c in sc.clients)


def test_a_combined_partition_runs_through_the_runner():
    """A combined partition's pair is one value in the results tables ("0.5+2")."""
    from topofl_lib.deep import deep_variants
    from topofl_lib.runner import run_comparison

    data = _images(600, 40, shape=(1, 8, 8))
    result = run_comparison("image", seeds=[0], n_rounds=1, progress=False,
                            variants=deep_variants(["FedAvg"], "digits_cnn", local_epochs=1),
                            scenario_params={"dataset": data, "partition": "Q+K",
                                             "param": (0.5, 2), "n_clients": 5})
    row = result.final.iloc[0]
    assert (row["scenario"], row["partition"], row["param"]) == (
        "synthetic-Q0.5+K2", "Q+K", "0.5+2")
