"""The papers' claims, our measurements of them, and the comparison table.

The package carries its own copy of the claims table (``paper_claims.csv``: id,
paper, experiment, setting, method, metric, value, source). Rows whose ``paper`` is
``topofl`` are measurements that go beyond the papers (no paper value). A notebook turns its
per-seed measurements into rows ``id, measured_mean, measured_std, n_seeds, profile``
with :func:`claim_rows` and writes them with :func:`write_claims`; the reproduce
command merges every notebook's rows (:func:`collect_claims`) into
``results/claims.csv`` and renders ``results/comparison.md``
(:func:`comparison_document`).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from .environment import ENVIRONMENT_FILE
from .outputs import atomic_path

__all__ = [
    "CLAIM_COLUMNS",
    "ablation_claim_values",
    "continual_claim_values",
    "deep_claim_values",
    "fedtopo_claim_values",
    "gfc_claim_values",
    "label_aware_claim_values",
    "robustness_claim_values",
    "claim_rows",
    "collect_claims",
    "compare_with_paper",
    "comparison_document",
    "comparison_markdown",
    "load_paper_claims",
    "table1_claim_values",
    "write_claims",
]

CLAIM_COLUMNS = ["id", "measured_mean", "measured_std", "n_seeds", "profile", "note"]

#: Claim-id spelling of each method name.
METHOD_KEYS = {"pTopoFL": "ptopofl", "FedAvg": "fedavg", "FedProx": "fedprox",
               "SCAFFOLD": "scaffold", "pFedMe": "pfedme"}
SCENARIO_KEYS = {"healthcare": "hc", "benchmark": "bm"}
METRIC_KEYS = {"auc": "auc", "accuracy": "acc", "convergence_round": "conv"}


def load_paper_claims() -> pd.DataFrame:
    """The papers' numbers, indexed by claim id."""
    with resources.files("topofl_lib").joinpath("paper_claims.csv").open() as fh:
        return pd.read_csv(fh).set_index("id")


def claim_rows(values: Mapping[str, np.ndarray], profile: str,
               notes: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Rows of ``claims.csv`` from per-seed measurements ``{claim id: values}``.

    ``notes`` (``{claim id: text}``) marks rows measured in a different setting than the
    paper's, e.g. a stand-in dataset. Raises ``ValueError`` for an id that is not in the
    claims table, so a typo cannot silently drop a measurement.
    """
    notes = dict(notes or {})
    known = load_paper_claims().index
    rows = []
    for cid, v in values.items():
        if cid not in known:
            raise ValueError(f"unknown claim id {cid!r}; see topofl_lib/paper_claims.csv")
        v = np.asarray(v, dtype=np.float64).ravel()
        rows.append({"id": cid, "measured_mean": v.mean(),
                     "measured_std": v.std(ddof=1) if v.size > 1 else 0.0,
                     "n_seeds": v.size, "profile": profile, "note": notes.get(cid, "")})
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def table1_claim_values(final: pd.DataFrame) -> dict[str, np.ndarray]:
    """Map a :class:`~topofl_lib.experiments.ComparisonResult` ``final`` table to Table 1 ids.

    Only ids present in the claims table are returned.
    """
    known = set(load_paper_claims().index)
    out = {}
    for (scenario, method), g in final.groupby(["scenario", "method"]):
        for metric, key in METRIC_KEYS.items():
            cid = f"ptopofl.t1.{SCENARIO_KEYS[scenario]}.{key}.{METHOD_KEYS[method]}"
            if cid in known:
                out[cid] = g.sort_values("seed")[metric].to_numpy(dtype=np.float64)
    return out


PARTITION_NAMES = {"N": "N", "L": "L", "K": "K", "Q": "Q"}


def _percent(g: pd.DataFrame) -> np.ndarray:
    return 100.0 * g.sort_values("seed")["accuracy"].to_numpy(dtype=np.float64)


def fedtopo_claim_values(final: pd.DataFrame, tgbs: pd.DataFrame | None = None
                         ) -> dict[str, np.ndarray]:
    """FedTopo Table 1-3 ids (percent) from a comparison's ``final`` table.

    ``final`` rows have ``scenario`` ``"fashion_mnist-<P><param>"``; methods ``FedTopo``,
    ``FedAvg`` give Table 1, ``FedTopo`` and ``FedTopo w/o TAL`` on the L partition give
    Table 3's Setting B; ``FedTopo@<block>`` on L gives Table 2's accuracies and ``tgbs``
    (columns ``block, seed, auc``) its AUCs.
    """
    known = set(load_paper_claims().index)
    out = {}
    for (scenario, method), g in final.groupby(["scenario", "method"]):
        dataset, _, part = str(scenario).partition("-")
        if dataset != "fashion_mnist" or not part:
            continue
        letter = part[0]
        key = {"FedTopo": "fedtopo", "FedAvg": "fedavg"}.get(method)
        if key and f"fedtopo.t1.fmnist.{letter}.{key}" in known:
            out[f"fedtopo.t1.fmnist.{letter}.{key}"] = _percent(g)
        if letter == "L" and method in ("FedTopo", "FedTopo w/o TAL"):
            out[f"fedtopo.t3.b.{'with' if method == 'FedTopo' else 'without'}"] = _percent(g)
        if method.startswith("FedTopo@") and letter == "L":
            cid = f"fedtopo.t2.cnn.{method.removeprefix('FedTopo@')}.acc"
            if cid in known:
                out[cid] = _percent(g)
    if tgbs is not None:
        for block, g in tgbs.groupby("block"):
            cid = f"fedtopo.t2.cnn.{block}.auc"
            if cid in known:
                out[cid] = 100.0 * g.sort_values("seed")["auc"].to_numpy(dtype=np.float64)
    return out


#: Our stand-in for each of pTopoFL's deep settings (Table 2), which need CIFAR-10 /
#: FEMNIST that cannot be had offline.
DEEP_STAND_INS = {
    "cifar01": ("fashion_mnist-L0.1", "stand-in: Fashion-MNIST, Dir(0.1), 10 clients, CNN"),
    "cifar05": ("fashion_mnist-L0.5", "stand-in: Fashion-MNIST, Dir(0.5), 10 clients, CNN"),
    "femnist": ("mnist5k-L0.5", "stand-in: MNIST-5k, Dir(0.5), 10 clients, CNN"),
}


def deep_claim_values(final: pd.DataFrame) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """pTopoFL Table 2 ids from the stand-in runs, and the note marking each."""
    values, notes = {}, {}
    known = set(load_paper_claims().index)
    for key, (scenario, note) in DEEP_STAND_INS.items():
        for method, g in final[final["scenario"] == scenario].groupby("method"):
            cid = f"ptopofl.t2.{key}.{METHOD_KEYS.get(method, '')}"
            if cid in known:
                values[cid] = g.sort_values("seed")["accuracy"].to_numpy(dtype=np.float64)
                notes[cid] = note
    return values, notes


def write_claims(rows: pd.DataFrame, results_dir, name: str) -> Path:
    """Write one notebook's claim rows to ``results_dir/claims/<name>.csv`` (atomically)."""
    path = Path(results_dir) / "claims" / f"{name}.csv"
    with atomic_path(path) as tmp:
        rows.to_csv(tmp, index=False, float_format="%.6g")
    return path


def _read_claims(results_dir) -> pd.DataFrame:
    """Every ``claims/*.csv`` merged, with a ``source`` column (the file's stem)."""
    files = sorted((Path(results_dir) / "claims").glob("*.csv"))
    if not files:
        return pd.DataFrame(columns=[*CLAIM_COLUMNS, "source"])
    merged = pd.concat([pd.read_csv(f).assign(source=f.stem) for f in files], ignore_index=True)
    notes = merged["note"] if "note" in merged else pd.Series("", index=merged.index)
    merged["note"] = notes.astype(object).where(notes.notna(), "")
    order = {cid: i for i, cid in enumerate(load_paper_claims().index)}
    merged = merged.drop_duplicates("id", keep="last")
    return merged.sort_values("id", key=lambda s: s.map(order)).reset_index(drop=True)


def collect_claims(results_dir) -> pd.DataFrame:
    """Merge every ``results_dir/claims/*.csv`` (sorted by claim-table order)."""
    return _read_claims(results_dir)[CLAIM_COLUMNS]


def comparison_document(results_dir) -> tuple[pd.DataFrame, str]:
    """The merged claims table and the text of ``comparison.md``.

    The header lists each profile present with its row count and the claim files
    (one per notebook) measured under it, so it never names one profile for rows of
    another.
    """
    merged = _read_claims(results_dir)
    claims = merged[CLAIM_COLUMNS]
    lines = [f"- `{profile}`: {len(g)} rows ({', '.join(sorted(g['source'].unique()))})"
             for profile, g in merged.groupby("profile", sort=True)]
    header = (
        "# Results versus the papers\n\nEach row carries the profile it was measured under "
        "(`python -m topofl_lib reproduce --profile NAME`; see the README). Rows by "
        "profile, with the claim files (`results/claims/`) they come from:\n\n"
        + ("\n".join(lines) or "- none") + "\n\n"
        + (f"The environment each notebook ran in (Python, package versions, CPU, torch "
           f"threads, git commit): [`{ENVIRONMENT_FILE}`]({ENVIRONMENT_FILE}).\n\n"
           if (Path(results_dir) / ENVIRONMENT_FILE).exists() else "")
        + "Ours: mean ± sample standard deviation over seeds (the "
        "spread of single runs, not the error of the mean). The papers report single "
        "runs, so 'paper within ±2 sd' asks whether the paper's number is a plausible "
        "single run of our setting; it is a coarse check, not a test. Paired tests "
        "between methods are in the notebooks.\n\n"
    )
    return claims, header + comparison_markdown(claims)


def compare_with_paper(measured: pd.DataFrame) -> pd.DataFrame:
    """Join measurements with the paper's values.

    ``within_2sd`` says whether the paper's value lies within ``mean +- 2 std`` of our
    seeds (a coarse consistency check, not a test).
    """
    paper = load_paper_claims()
    df = measured.set_index("id").join(paper[["paper", "setting", "method", "metric",
                                              "value", "source"]], how="left")
    df = df.rename(columns={"value": "paper_value"})
    df["difference"] = df["measured_mean"] - df["paper_value"]
    df["within_2sd"] = (df["difference"].abs() <= 2 * df["measured_std"]).where(
        (df["n_seeds"] > 1) & df["paper_value"].notna())
    return df


def _fmt(value: float, spec: str) -> str:
    return "—" if pd.isna(value) else format(value, spec)


def comparison_markdown(measured: pd.DataFrame) -> str:
    """A Markdown table: claim, paper value, ours (mean +- std over seeds), difference."""
    df = compare_with_paper(measured)
    lines = [
        "| claim id | setting | method | metric | paper | ours (mean ± std) | seeds | "
        "ours − paper | paper within ±2 sd | profile | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cid, r in df.iterrows():
        within = {True: "yes", False: "**no**"}.get(r["within_2sd"], "n/a")
        lines.append(
            f"| `{cid}` | {r['setting']} | {r['method']} | {r['metric']} | "
            f"{_fmt(r['paper_value'], '.4g')} | {r['measured_mean']:.4g} ± "
            f"{r['measured_std']:.2g} | {int(r['n_seeds'])} | {_fmt(r['difference'], '+.3g')} | "
            f"{within} | {r['profile']} | {r.get('note', '') if pd.notna(r.get('note')) else ''} |"
        )
    return "\n".join(lines) + "\n"


def _per_seed(df: pd.DataFrame, column: str, **where) -> np.ndarray:
    m = np.ones(len(df), dtype=bool)
    for key, value in where.items():
        m &= (df[key] == value).to_numpy()
    return df[m].sort_values("seed")[column].to_numpy(dtype=np.float64)


def robustness_claim_values(final: pd.DataFrame, rate: float = 0.5) -> dict[str, np.ndarray]:
    """``ptopofl.robust.50.*`` and ``topofl.robust.50.*`` from a robustness sweep."""
    keys = {"pTopoFL": "ptopofl.robust.50.ptopofl", "FedAvg": "ptopofl.robust.50.fedavg",
            "Median": "topofl.robust.50.median", "TrimmedMean": "topofl.robust.50.trimmedmean",
            "Krum": "topofl.robust.50.krum"}
    out = {cid: _per_seed(final, "auc", rate=rate, method=m) for m, cid in keys.items()}
    return {k: v for k, v in out.items() if v.size}


def ablation_claim_values(final: pd.DataFrame) -> dict[str, np.ndarray]:
    """Ablation ids from a variants run labelled ``full``, ``M=1``, ``beta=0``, ..."""
    keys = {"full": "ptopofl.ablation.full", "M=1": "ptopofl.ablation.m1",
            "beta=0": "ptopofl.ablation.beta0", "no trust": "topofl.ablation.no_trust",
            "no augmentation": "topofl.ablation.no_augmentation",
            "Wasserstein": "topofl.ablation.wasserstein"}
    out = {cid: _per_seed(final, "auc", method=label) for label, cid in keys.items()}
    return {k: v for k, v in out.items() if v.size}


def continual_claim_values(per_seed: pd.DataFrame) -> dict[str, np.ndarray]:
    """``ptopofl.continual.drift`` and the drift-trigger detection rates."""
    ordered = per_seed.sort_values("seed")
    return {"ptopofl.continual.drift": ordered["mean_drift"].to_numpy(dtype=np.float64),
            "topofl.continual.detected": ordered["detected"].dropna().to_numpy(dtype=np.float64),
            "topofl.continual.false_alarms": ordered["false_alarms"].to_numpy(dtype=np.float64)}


def gfc_claim_values(main: pd.DataFrame, multiplier: pd.DataFrame | None = None,
                     scalability: pd.DataFrame | None = None) -> dict[str, np.ndarray]:
    """``gfc.*`` ids (MNIST rows measured on MNIST-5k in 2-D; Table 1 is in percent)."""
    keys = {"GFC": "gfc", "k-FED": "kfed", "MUFC": "mufc", "NN-FC": "nnfc"}
    known = set(load_paper_claims().index)
    out = {}
    for (dataset, eps, method), g in main.groupby(["dataset", "epsilon", "method"]):
        for metric in ("ari", "nmi"):
            v = g.sort_values("seed")[metric].to_numpy(dtype=np.float64)
            if dataset == "mnist5k":
                cid = f"gfc.t1.mnist.eps{eps:g}.{metric}.{keys[method]}"
                v = 100 * v
            else:
                cid = f"topofl.gfc.{dataset}.eps{eps:g}.{metric}.{keys[method]}"
            if cid in known:
                out[cid] = v
    if multiplier is not None:
        for (alpha, eps), g in multiplier.groupby(["alpha", "epsilon"]):
            cid = f"gfc.t3.eps{eps:g}.alpha{alpha:g}.ari"
            if cid in known:
                out[cid] = g.sort_values("seed")["ari"].to_numpy(dtype=np.float64)
    if scalability is not None:
        g = scalability[(scalability["n_clients"] == 1000) & (scalability["method"] == "GFC")
                        & (scalability["epsilon"] == 0.01)]
        if len(g):
            out["gfc.t6.mnist1000.ari"] = g.sort_values("seed")["ari"].to_numpy(dtype=np.float64)
            out["gfc.t6.mnist1000.nmi"] = g.sort_values("seed")["nmi"].to_numpy(dtype=np.float64)
    return out


#: Claim-id spelling of the descriptor options (``topofl.cc.*``).
DESCRIPTOR_KEYS = {"paper": "paper", "class_conditional": "cc", "model_anchored": "ma"}
#: Claim-id spelling of the methods of :func:`topofl_lib.detection.label_aware_comparison`.
LABEL_AWARE_METHOD_KEYS = {"pTopoFL": "ptopofl", "pTopoFL-CC": "ptopofl_cc",
                           "pTopoFL-MA": "ptopofl_ma", "FedAvg": "fedavg", "Median": "median",
                           "TrimmedMean": "trimmedmean", "Krum": "krum"}


def _rate_key(rate: float) -> str:
    return f"{round(100 * float(rate)):d}"


def label_aware_claim_values(detection: pd.DataFrame | None = None,
                             recovery: pd.DataFrame | None = None,
                             final: pd.DataFrame | None = None,
                             drift: pd.DataFrame | None = None,
                             descinv: pd.DataFrame | None = None,
                             mia: pd.DataFrame | None = None,
                             dp: pd.DataFrame | None = None) -> dict[str, np.ndarray]:
    """``topofl.cc.*`` ids from the label-aware notebook's tables (per-seed values).

    Parameters
    ----------
    detection : DataFrame, optional
        :func:`~topofl_lib.detection.per_seed_detection` of label-flip detection runs
        (scenarios ``"label_flip <rate>"``): ``topofl.cc.detect.<rate%>.<desc>.tpr`` /
        ``.fpr`` (tau 1.8), ``.tpr.tau1`` / ``.fpr.tau1`` (tau 1.0), ``.rocauc``.
    recovery : DataFrame, optional
        :func:`~topofl_lib.detection.cluster_recovery` of the same runs:
        ``topofl.cc.ari.<rate%>.<desc>`` (ARI) and ``.ari90`` (ARI >= 0.9, 0/1).
    final : DataFrame, optional
        :func:`~topofl_lib.detection.label_aware_comparison`:
        ``topofl.cc.auc.<protocol>.<rate%>.<method>``.
    drift : DataFrame, optional
        ``per_seed_detection(drift_runs(...), (), "drift", "shifted")``:
        ``topofl.cc.drift.<desc>.rocauc``.
    descinv, mia, dp : DataFrame, optional
        The privacy runners' tables (healthcare, with a ``descriptor`` column):
        ``topofl.cc.privacy.<desc>.descinv.recovered`` / ``.descinv.relerr``,
        ``.mia.auc`` (descriptor channel), ``.dp.eps1.auc`` / ``.dp.nodp.auc``.

    Values are averaged within a seed (over clients), one per seed in seed order; NaN
    seeds (no ARI with one latent type) are left out. Only ids present in the claims
    table are returned; an empty selection is dropped.
    """
    known = set(load_paper_claims().index)
    out: dict[str, np.ndarray] = {}

    def put(cid, df, column, **where):  # mean within each seed (clients), seeds in order
        if cid not in known:
            return
        m = np.ones(len(df), dtype=bool)
        for key, value in where.items():
            m &= (df[key] == value).to_numpy()
        v = df[m].groupby("seed", sort=True)[column].mean().to_numpy(dtype=np.float64)
        v = v[~np.isnan(v)]
        if v.size:
            out[cid] = v

    for desc, dkey in DESCRIPTOR_KEYS.items():
        if detection is not None:
            for scen in detection["scenario"].unique():
                attack, _, rate = str(scen).rpartition(" ")
                if attack != "label_flip":
                    continue
                base = f"topofl.cc.detect.{_rate_key(rate)}.{dkey}"
                for column, suffix in (("tpr@1.8", "tpr"), ("fpr@1.8", "fpr"),
                                       ("tpr@1", "tpr.tau1"), ("fpr@1", "fpr.tau1"),
                                       ("auc", "rocauc")):
                    if column in detection:
                        put(f"{base}.{suffix}", detection, column, scenario=scen,
                            descriptor=desc)
        if recovery is not None:
            for scen in recovery["scenario"].unique():
                attack, _, rate = str(scen).rpartition(" ")
                if attack != "label_flip":
                    continue
                base = f"topofl.cc.ari.{_rate_key(rate)}.{dkey}"
                put(base, recovery, "ari", scenario=scen, descriptor=desc)
                put(f"{base}.ari90", recovery.assign(
                    ari90=(recovery["ari"] >= 0.9).astype(float).where(
                        recovery["ari"].notna())), "ari90", scenario=scen, descriptor=desc)
        if drift is not None:
            put(f"topofl.cc.drift.{dkey}.rocauc", drift, "auc", descriptor=desc)
        base = f"topofl.cc.privacy.{dkey}"
        if descinv is not None:
            put(f"{base}.descinv.recovered", descinv, "recovered", scenario="healthcare",
                descriptor=desc, attack="descriptor_inversion")
            put(f"{base}.descinv.relerr", descinv, "relative_error", scenario="healthcare",
                descriptor=desc, attack="descriptor_inversion")
        if mia is not None:
            put(f"{base}.mia.auc", mia, "auc", scenario="healthcare", descriptor=desc,
                channel="descriptor", n=100)
        if dp is not None:
            put(f"{base}.dp.eps1.auc", dp, "auc", scenario="healthcare", descriptor=desc,
                method="pTopoFL", epsilon=1.0)
            put(f"{base}.dp.nodp.auc", dp, "auc", scenario="healthcare", descriptor=desc,
                method="pTopoFL", epsilon=np.inf)
    if final is not None:
        for (protocol, rate, method), _ in final.groupby(["protocol", "rate", "method"]):
            key = LABEL_AWARE_METHOD_KEYS.get(method)
            if key:
                put(f"topofl.cc.auc.{protocol}.{_rate_key(rate)}.{key}", final, "auc",
                    protocol=protocol, rate=rate, method=method)
    return out
