"""FedTopo's study: Table 1's methods and variants, TGBS over seeds (Table 2), the block
table, Table 4's schedule settings, and the claim ids.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .._validation import check_int, check_real
from ..claim_keys import METHOD_KEYS
from ..core.seeds import check_seeds
from ..fedtopo.screening import TopologyGuidedBlockScreening
from ..results import load_paper_claims
from .common import percent

__all__ = ["HYPERPARAMETER_PROBES", "NSKEW_READINGS", "PERSONAL_PARTITIONS", "READINGS",
           "SCHEDULE_KEYS", "TABLE1_METHODS", "TABLE2_BLOCKS", "TABLE4_SETTINGS", "block_table",
           "claim_notes",
           "decoupled_readings", "fedtopo_claim_values", "fedtopo_text_claims",
           "local_test_variants", "nskew_claim_values", "pixel_noise_sd", "table1_variants",
           "table4_claim_values", "tgbs_over_seeds"]

#: FedTopo Table 1's sixteen methods, in the paper's row order.
TABLE1_METHODS = ("FedAvg", "FedAvgM", "FedNova", "FedProx", "SCAFFOLD", "FedDyn", "MOON",
                  "FedFTG", "FedPAC", "FedFM", "FedCCFA", "FedSA", "FedDF", "FedDC", "FedGen",
                  "FedTopo")
#: Table 4's claim-id spelling of each alpha schedule (:data:`~topofl_lib.fedtopo.SCHEDULES`).
SCHEDULE_KEYS = {"warmup": "warmup", "piecewise": "piecewise", "linear": "lineartopo",
                 "smooth": "smoothtopo"}
#: Table 4's two settings on the Fashion-MNIST stand-in: ``{setting: image scenario
#: parameters}`` (:func:`~topofl_lib.deep.make_image_scenario`). Its caption says "two
#: CIFAR-10 non-I.I.D. partitions" and its text points to Sec. 5.2, whose Setting A is
#: Q-skew 0.5 with K-skew 2 on CIFAR-10 and Setting B L-skew 0.1 on Fashion-MNIST; both
#: run here on Fashion-MNIST with the CNN (a stand-in for CIFAR-10). Setting B leaves
#: ``param`` to its default, Table 1's 0.1, so that its Smooth-Topo runs are Table 1's.
TABLE4_SETTINGS = {"a": {"partition": "Q+K", "param": (0.5, 2)}, "b": {"partition": "L"}}
#: Readings of N-skew beside Table 1's (noise drawn once, clean test images, Table C.3's 5
#: rounds), run with FedAvg and FedTopo: ``{reading: (image scenario options, rounds)}``
#: (rounds ``None``: the notebook's ``n_rounds``). ``perload`` draws the noise afresh
#: every time an image is loaded, as a torchvision transform would; ``noisytest`` noises
#: each client's copy of the test set with its own sd; ``rounds10`` is the main text's
#: 10 rounds (Sec. 5.1; Table C.3 gives 5 for Fashion-MNIST).
NSKEW_READINGS = {"perload": ({"noise": "per_load"}, None),
                  "noisytest": ({"test_noise": True}, None),
                  "rounds10": ({}, 10)}
#: Two Table 1 baselines run again on N-skew with a smaller value of the one parameter
#: FedTopo leaves to them: ``{label: (parameter, values)}`` for
#: :func:`~topofl_lib.deep.sweep_variants`. FedFM's matching weight ``lam`` is 50 in Table 1
#: (its authors' code, for CIFAR and ResNet-18) and FedAvgM's server momentum 0.9 (Hsu et
#: al.); 0 makes either method FedAvg (tested), so Table 1's FedAvg is the probe's zero.
HYPERPARAMETER_PROBES = {"FedFM": ("lam", (0.5, 5.0)), "FedAvgM": ("server_momentum", (0.5,))}
#: The partitions where FedPAC and FedCCFA also run scored with each client's own model
#: (Table 1 scores the global model): the label skews, where a client's classifier differs
#: most from the others'.
PERSONAL_PARTITIONS = ("L", "K")
#: The CNN's blocks of Table 2's Fashion-MNIST rows: FedTopo aligns each in turn
#: (labels ``FedTopo@<block>`` of :func:`~topofl_lib.deep.deep_variants`).
TABLE2_BLOCKS = ("conv1", "conv2")


def pixel_noise_sd(dataset, sd: float = 0.5) -> float:
    """A noise sd on [0, 1] pixels in ``dataset``'s standardised units (N-skew's other
    reading of the noise's units), rounded to 3 decimals as the run's parameter.

    Parameters
    ----------
    dataset : ImageDataset
        Standardised images (:func:`~topofl_lib.deep.load_image_dataset`); its
        ``pixel_std`` is the standard deviation it divided the pixels by.
    sd : float, default=0.5
        The sd on [0, 1] pixels (Appendix C.1's largest N-skew noise).

    Returns
    -------
    float
        ``sd / dataset.pixel_std``, rounded to 3 decimals.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> pixel_noise_sd(SimpleNamespace(pixel_std=0.353))
    1.416
    """
    sd = check_real(sd, "sd", low=0.0, low_open=True)
    return round(sd / float(dataset.pixel_std), 3)

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

    from ..deep.datasets import ImageDataset
    from ..deep.models import make_model

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


def table1_variants(partition: str, methods, local_epochs: int, fedtopo: dict,
                    schedule: dict) -> dict:
    """The runs of one Table 1 partition: ``methods``, on L-skew also FedTopo without
    TAL (Table 3's Setting B) and FedTopo with ``alpha_max = 100``, and on the label
    skews (:data:`PERSONAL_PARTITIONS`) the decoupled methods among ``methods`` scored
    with each client's own model too (``"FedPAC (personal models)"``...).

    Parameters
    ----------
    partition : str
        The partition's letter (``"N"``, ``"L"``, ``"K"``, ``"Q"``).
    methods : sequence of str
        Labels of :func:`~topofl_lib.deep.deep_variants`.
    local_epochs : int
        Local epochs per round.
    fedtopo, schedule : dict
        FedTopo's and its alpha schedule's extra parameters.

    Returns
    -------
    dict
        ``{label: (method name, params)}`` for :func:`~topofl_lib.runner.run_comparison`.
    """
    from ..deep.experiments import DECOUPLED_LABELS, PERSONAL, deep_variants

    labels = list(methods) + (["FedTopo w/o TAL"] if partition == "L" else [])
    if partition in PERSONAL_PARTITIONS:
        labels += [f"{m}{PERSONAL}" for m in DECOUPLED_LABELS if m in methods]
    variants = deep_variants(labels, local_epochs=local_epochs, fedtopo=fedtopo,
                             schedule=schedule)
    if partition == "L" and "FedTopo" in methods:
        variants["FedTopo (alpha_max=100)"] = deep_variants(
            ["FedTopo"], local_epochs=local_epochs, fedtopo=fedtopo,
            schedule={**schedule, "alpha_max": 100.0})["FedTopo"]
    return variants


def local_test_variants(local_epochs: int) -> dict:
    """FedPAC and FedCCFA scored as their authors score them: each client's own model.

    Run on a scenario built with ``test="local"`` (each client's test images drawn with
    its own training label proportions, :func:`~topofl_lib.deep.make_image_scenario`),
    these are the reading of their reference code, beside Table 1's global model.

    Parameters
    ----------
    local_epochs : int
        Local epochs per round.

    Returns
    -------
    dict
        ``{label: (method name, params)}`` of the two ``"(personal models)"`` labels.
    """
    from ..deep.experiments import DECOUPLED_LABELS, PERSONAL, deep_variants

    return deep_variants([f"{m}{PERSONAL}" for m in DECOUPLED_LABELS],
                         local_epochs=local_epochs)


#: The three readings of a decoupled method (FedPAC, FedCCFA) in
#: :func:`decoupled_readings`, in the order they are shown.
READINGS = ("global model, global test set (Table 1's caption)",
            "own models, global test set",
            "own models, own label distribution (the authors' code)")


def decoupled_readings(final: pd.DataFrame, local_final: pd.DataFrame) -> pd.DataFrame:
    """FedPAC's and FedCCFA's accuracy under three readings, beside the paper's Table 1.

    Parameters
    ----------
    final : pandas.DataFrame
        Table 1's ``final`` table (labels ``"FedPAC"`` and ``"FedPAC (personal models)"``
        ...), ``accuracy`` as a fraction, with ``partition``.
    local_final : pandas.DataFrame
        The ``final`` table of :func:`local_test_variants` on ``test="local"`` scenarios.

    Returns
    -------
    pandas.DataFrame
        One row per partition, method and reading (:data:`READINGS`): ``mean`` and ``std``
        in percent over ``n_seeds``, the paper's Table 1 value (``paper``) and the
        difference; ``closest`` marks, per partition and method, the reading nearest the
        paper's value.
    """
    from ..deep.experiments import DECOUPLED_LABELS, PERSONAL

    paper = load_paper_claims()["value"]
    rows = []
    for method in DECOUPLED_LABELS:
        sources = ((final, method, READINGS[0]), (final, method + PERSONAL, READINGS[1]),
                   (local_final, method + PERSONAL, READINGS[2]))
        for table, label, reading in sources:
            for letter, g in table[table["method"] == label].groupby("partition"):
                acc = percent(g)
                cid = f"fedtopo.t1.fmnist.{letter}.{METHOD_KEYS[method]}"
                rows.append({"partition": letter, "method": method, "reading": reading,
                             "mean": float(np.nanmean(acc)),
                             "std": float(np.nanstd(acc, ddof=1)) if acc.size > 1 else np.nan,
                             "n_seeds": int(np.isfinite(acc).sum()),
                             "paper": float(paper.get(cid, np.nan))})
    out = pd.DataFrame(rows, columns=["partition", "method", "reading", "mean", "std",
                                      "n_seeds", "paper"])
    out["difference"] = out["mean"] - out["paper"]
    gap = out["difference"].abs()
    nearest = gap.groupby([out["partition"], out["method"]]).transform("min")
    out["closest"] = gap.eq(nearest) & gap.notna()
    return out.sort_values(["method", "partition"], kind="stable").reset_index(drop=True)


def claim_notes(ids, dataset, n_rounds: int, local_epochs: int, tal_every: int
                ) -> dict[str, str]:
    """The protocol of each claim row in one line: data, rounds, local epochs, TAL.

    An N-skew reading with rounds of its own (:data:`NSKEW_READINGS`) says its rounds.

    Parameters
    ----------
    ids : iterable of str
        Claim ids of the notebook's measurements.
    dataset : ImageDataset
        The data the runs used (its training and test sizes are stated).
    n_rounds, local_epochs, tal_every : int
        The notebook's protocol.

    Returns
    -------
    dict of str to str
        ``{claim id: note}``.
    """
    tal = "TAL on every step" if tal_every == 1 else f"TAL on every {tal_every}-th step"
    head = f"Fashion-MNIST {dataset.y_train.size} train / {dataset.y_test.size} test, "
    notes = {}
    for cid in ids:
        rounds = n_rounds
        if cid.startswith("topofl.fedtopo.nskew."):
            rounds = NSKEW_READINGS[cid.split(".")[3]][1] or n_rounds
        notes[cid] = f"{head}{rounds} rounds x {local_epochs} epochs, {tal}"
    return notes


def nskew_claim_values(finals: dict) -> dict[str, np.ndarray]:
    """The ``topofl.fedtopo.nskew.*`` ids (percent) of FedAvg and FedTopo per reading.

    Parameters
    ----------
    finals : dict
        ``{reading: final}`` for readings of :data:`NSKEW_READINGS`, each a comparison's
        ``final`` table (``method``, ``seed``, ``accuracy`` as a fraction).

    Returns
    -------
    dict of str to ndarray
        ``topofl.fedtopo.nskew.<reading>.<method>`` -> per-seed values, sorted by seed.
    """
    unknown = sorted(set(finals) - set(NSKEW_READINGS))
    if unknown:
        raise ValueError(f"finals holds readings {unknown}; expected some of "
                         f"{list(NSKEW_READINGS)}")
    return {f"topofl.fedtopo.nskew.{reading}.{METHOD_KEYS[method]}": percent(g)
            for reading, final in finals.items()
            for method, g in final.groupby("method") if method in ("FedAvg", "FedTopo")}


def table4_claim_values(curves: dict) -> dict[str, np.ndarray]:
    """Table 4's ids (percent): each schedule's accuracy after round 1 and after the last
    round (the paper's round 10; Fashion-MNIST runs Table C.3's 5 rounds).

    Parameters
    ----------
    curves : dict
        ``{setting: curves}`` for settings of :data:`TABLE4_SETTINGS`, each the
        ``curves`` table of a comparison of ``"FedTopo[<schedule>]"`` labels (columns
        ``method``, ``seed``, ``round``, ``accuracy`` as a fraction).

    Returns
    -------
    dict of str to ndarray
        ``fedtopo.t4.<setting>.<schedule>.r1`` and ``.r10`` -> per-seed values, sorted by
        seed.
    """
    unknown = sorted(set(curves) - set(TABLE4_SETTINGS))
    if unknown:
        raise ValueError(f"curves holds settings {unknown}; expected some of "
                         f"{list(TABLE4_SETTINGS)}")
    out = {}
    for setting, table in curves.items():
        last = table["round"].max()
        for label, g in table.groupby("method"):
            name = label.removeprefix("FedTopo[").removesuffix("]")
            if name not in SCHEDULE_KEYS:
                raise ValueError(f"curves[{setting!r}] holds {label!r}; expected "
                                 f"FedTopo[<schedule>] with a schedule of {list(SCHEDULE_KEYS)}")
            for tag, r in (("r1", 1), ("r10", last)):
                out[f"fedtopo.t4.{setting}.{SCHEDULE_KEYS[name]}.{tag}"] = percent(
                    g[g["round"] == r])
    return out


def fedtopo_claim_values(final: pd.DataFrame, tgbs: pd.DataFrame | None = None
                         ) -> dict[str, np.ndarray]:
    """FedTopo Table 1-3 ids (percent) from a comparison's ``final`` table.

    ``final`` rows carry their ``dataset`` and ``partition`` (setting columns); methods ``FedTopo``,
    ``FedAvg`` give Table 1, ``FedTopo`` and ``FedTopo w/o TAL`` on the L partition give
    Table 3's Setting B; ``FedTopo@<block>`` on L gives Table 2's accuracies and ``tgbs``
    (columns ``block, seed, auc``) its AUCs.

    Parameters
    ----------
    final : pandas.DataFrame
        The comparison's ``final`` table (``accuracy`` as a fraction).
    tgbs : pandas.DataFrame, optional
        TGBS scores per block and seed.

    Returns
    -------
    dict of str to ndarray
        Claim id -> per-seed values in percent, sorted by seed (only known ids).
    """
    known = set(load_paper_claims().index)
    out = {}
    for (dataset, letter, method), g in final.groupby(["dataset", "partition", "method"]):
        if dataset != "fashion_mnist":
            continue
        key = METHOD_KEYS[method] if method in TABLE1_METHODS else None
        if key and f"fedtopo.t1.fmnist.{letter}.{key}" in known:
            out[f"fedtopo.t1.fmnist.{letter}.{key}"] = percent(g)
        if letter == "L" and method in ("FedTopo", "FedTopo w/o TAL"):
            out[f"fedtopo.t3.b.{'with' if method == 'FedTopo' else 'without'}"] = percent(g)
        if method.startswith("FedTopo@") and letter == "L":
            cid = f"fedtopo.t2.cnn.{method.removeprefix('FedTopo@')}.acc"
            if cid in known:
                out[cid] = percent(g)
    if tgbs is not None:
        for block, g in tgbs.groupby("block"):
            cid = f"fedtopo.t2.cnn.{block}.auc"
            if cid in known:
                out[cid] = 100.0 * g.sort_values("seed")["auc"].to_numpy(dtype=np.float64)
    return out


#: FedTopo's text numbers derived from rows that need CIFAR and ResNet-18 (Table 1's
#: CIFAR columns, Table 2's ResNet-18 block, Table 3's Settings A and C): not derived here.
_CIFAR_TEXT = {
    "fedtopo.text.tgbs_layer2_auc": "Table 2's ResNet-18 on CIFAR-10",
    "fedtopo.text.gain_second_best_cifar10": "Table 1's CIFAR-10 columns",
    "fedtopo.text.gain_second_best_cifar100": "Table 1's CIFAR-100 columns",
    "fedtopo.text.tal_gain_a": "Table 3's Setting A (CIFAR-10, ResNet-18)",
    "fedtopo.text.tal_gain_c": "Table 3's Setting C (CIFAR-100, ResNet-18)",
    "fedtopo.text.tal_gain_avg": "Table 3's Settings A and C (CIFAR, ResNet-18)",
}


def fedtopo_text_claims(values: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray],
                                                                 dict[str, str]]:
    """FedTopo's text numbers (``fedtopo.text.*``), derived from the rows they come from.

    * ``gain_second_best_fmnist``: the largest, over the N/L/K/Q partitions, of FedTopo's
      mean accuracy minus the best other method's (Table 1's Fashion-MNIST rows; one
      value);
    * ``tal_gain_b``: Setting B with TAL minus without, seed by seed (Table 3);
    * ``linear_a_r1``, ``warm_a_r1``, ``smooth_final_a``, ``smooth_final_b``: Table 4's
      rows of those schedules (our Setting A is the Fashion-MNIST stand-in), and
      ``linear_vs_warm_gain_a_r1`` their difference seed by seed;
    * the CIFAR ones get a row without a value that says which rows they need.

    Parameters
    ----------
    values : dict of str to ndarray
        The notebook's per-seed values (:func:`fedtopo_claim_values`,
        :func:`table4_claim_values`).

    Returns
    -------
    values : dict of str to ndarray
        The derived ids that could be computed.
    not_run : dict of str to str
        The others, with why (``not run: ...``).
    """
    out, missing = {}, {}
    gains = []
    for letter in "NLKQ":
        means = {k.rsplit(".", 1)[1]: float(np.mean(v)) for k, v in values.items()
                 if k.startswith(f"fedtopo.t1.fmnist.{letter}.")}
        if "fedtopo" in means and len(means) > 1:
            gains.append(means["fedtopo"] - max(v for k, v in means.items() if k != "fedtopo"))
    derived = {
        "fedtopo.text.gain_second_best_fmnist": (lambda: [max(gains)]) if gains else None,
        "fedtopo.text.tal_gain_b": ("fedtopo.t3.b.with", "fedtopo.t3.b.without"),
        "fedtopo.text.linear_vs_warm_gain_a_r1": ("fedtopo.t4.a.lineartopo.r1",
                                                  "fedtopo.t4.a.warmup.r1"),
        "fedtopo.text.linear_a_r1": ("fedtopo.t4.a.lineartopo.r1",),
        "fedtopo.text.warm_a_r1": ("fedtopo.t4.a.warmup.r1",),
        "fedtopo.text.smooth_final_a": ("fedtopo.t4.a.smoothtopo.r10",),
        "fedtopo.text.smooth_final_b": ("fedtopo.t4.b.smoothtopo.r10",),
    }
    for cid, source in derived.items():
        if callable(source):
            out[cid] = np.asarray(source(), dtype=np.float64)
        elif source is not None and all(k in values for k in source):
            a = np.asarray(values[source[0]], dtype=np.float64)
            out[cid] = a - np.asarray(values[source[1]], dtype=np.float64) if len(
                source) == 2 else a
        else:
            missing[cid] = (f"not run: the rows it is derived from ({source or 'Table 1'}) "
                            "did not run")
    for cid, rows in _CIFAR_TEXT.items():
        missing[cid] = (f"not run: derived from {rows}, which run only where CIFAR and a CUDA "
                        "GPU are (the paper-data settings)")
    return out, missing
