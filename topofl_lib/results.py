"""The papers' claims and our measurements of them, one claim file per notebook.

The package carries its own copy of the claims table (``paper_claims.csv``: id, paper,
experiment, setting, method, metric, value, paper_std, source): every number the three
papers print, and rows whose ``paper`` is ``topofl``, measurements that go beyond the
papers (no paper value). A notebook turns its per-seed measurements into rows ``id,
measured_mean, measured_std, n_seeds, profile`` with :func:`claim_rows` and writes them
with :func:`write_claims`; the reproduce command merges every notebook's rows
(:func:`collect_claims`) and :mod:`topofl_lib.claims_summary` turns them into
``results/claims.csv`` and ``results/comparison.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from .outputs import atomic_path, check_unpublished

__all__ = [
    "CLAIM_COLUMNS",
    "NOT_RUN",
    "NOT_RUN_SOURCE",
    "REQUIRED_CLAIM_COLUMNS",
    "ClaimFileError",
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
    "load_paper_claims",
    "read_claim_file",
    "table1_claim_values",
    "write_claims",
]

CLAIM_COLUMNS = ["id", "measured_mean", "measured_std", "n_seeds", "profile", "note"]

#: Claim-id spelling of each method label (the paper's five methods, and the two
#: labels of :data:`topofl_lib.experiments.TABLE1_VARIANTS` that explain paper rows).
METHOD_KEYS = {"pTopoFL": "ptopofl", "FedAvg": "fedavg", "FedProx": "fedprox",
               "SCAFFOLD": "scaffold", "pFedMe": "pfedme", "Local-only": "localonly",
               "SCAFFOLD (v1.0.0 rule)": "scaffold_v1"}
#: The methods of the paper's Table 1.
METHODS_OF_TABLE1 = ("pTopoFL", "FedAvg", "FedProx", "SCAFFOLD", "pFedMe")
SCENARIO_KEYS = {"healthcare": "hc", "benchmark": "bm"}
METRIC_KEYS = {"auc": "auc", "accuracy": "acc", "convergence_round": "conv"}
#: Protocols of :func:`topofl_lib.experiments.table1_comparison` and the prefix of their
#: Table 1 claim ids that are not the paper's methods' (the paper's own protocol
#: measures the ``ptopofl.t1.*`` rows; see :func:`table1_claim_values`).
PROTOCOL_PREFIXES = {"paper": "topofl.t1", "ours": "topofl.t1.own"}


#: Claims whose setting cannot run on this machine, with the reason. The comparison
#: shows each as a row without a value (``n_seeds`` 0, profile ``not run``) instead of
#: omitting it.
NOT_RUN: dict[str, str] = dict.fromkeys(
    ["fedtopo.t3.a.without", "fedtopo.t3.a.with"],
    "not run here: Setting A trains ResNet-18 on CIFAR-10, which cannot be had offline "
    "(nothing is downloaded at run time) and is beyond a 2-core CPU; Setting B is the "
    "FMNIST row")


#: The ``source`` of the rows :func:`collect_claims` adds for :data:`NOT_RUN`.
NOT_RUN_SOURCE = "not run here"


def load_paper_claims() -> pd.DataFrame:
    """The papers' numbers, indexed by claim id.

    ``value`` is the paper's number as a float (NaN where the paper prints none, or prints
    a formula such as ``O(p)``), ``value_text`` the same as the paper prints it (``"0.790"``,
    ``"O(p)"``; empty where it prints none), so that its precision can be read, and
    ``paper_std`` the spread the paper prints beside it (NaN where it prints none).

    Returns
    -------
    pandas.DataFrame
        Columns paper, experiment, setting, method, metric, value, paper_std, source and
        value_text, indexed by claim id, in the order of ``paper_claims.csv``.

    Examples
    --------
    >>> claims = load_paper_claims()
    >>> row = claims.loc["ptopofl.t1.hc.auc.fedavg"]
    >>> float(row["value"]), row["value_text"]
    (0.79, '0.790')
    """
    with resources.files("topofl_lib").joinpath("paper_claims.csv").open() as fh:
        claims = pd.read_csv(fh, dtype={"value": str, "paper_std": str}).set_index("id")
    text = claims["value"].fillna("").str.strip()
    return claims.assign(value=pd.to_numeric(text, errors="coerce"),
                         paper_std=pd.to_numeric(claims["paper_std"], errors="coerce"),
                         value_text=text)


def claim_rows(values: Mapping[str, np.ndarray], profile: str,
               notes: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Rows of ``claims.csv`` from per-seed measurements ``{claim id: values}``.

    ``notes`` (``{claim id: text}``) marks rows measured in a different setting than the
    paper's, e.g. a stand-in dataset. Raises ``ValueError`` for an id that is not in the
    claims table, so a typo cannot silently drop a measurement. A NaN value is a seed whose
    run diverged (:func:`~topofl_lib.experiments.run_comparison` with
    ``on_divergence="record"``): the mean and std are over the finite values, ``n_seeds``
    counts them, and the note says how many seeds diverged; an id whose every value is NaN
    gets a NaN mean and ``n_seeds`` 0. An infinite value raises ``ValueError``.

    Parameters
    ----------
    values : Mapping of str to array-like
        Claim id -> per-seed measurements.
    profile : str
        The run profile recorded in every row.
    notes : Mapping of str to str, optional
        Claim id -> note.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CLAIM_COLUMNS`: the mean, the standard deviation (ddof=1) and the number of
        seeds per id.

    Examples
    --------
    >>> row = claim_rows({"fedtopo.t1.fmnist.Q.fedavg": [89.0, float("nan"), 91.0]}, "cpu")
    >>> float(row.loc[0, "measured_mean"]), int(row.loc[0, "n_seeds"]), row.loc[0, "note"]
    (90.0, 2, '1 of 3 seeds diverged (NaN), left out')
    """
    notes = dict(notes or {})
    known = load_paper_claims().index
    rows = []
    for cid, v in values.items():
        if cid not in known:
            raise ValueError(f"unknown claim id {cid!r}; see topofl_lib/paper_claims.csv")
        v = np.asarray(v, dtype=np.float64).ravel()
        if np.isinf(v).any():
            raise ValueError(f"values of claim {cid!r} contain an infinite value: {v.tolist()}")
        finite = v[~np.isnan(v)]
        note = notes.get(cid, "")
        if finite.size < v.size:
            lost = f"{v.size - finite.size} of {v.size} seeds diverged (NaN), left out"
            note = f"{note}; {lost}" if note else lost
        rows.append({"id": cid, "measured_mean": finite.mean() if finite.size else np.nan,
                     "measured_std": finite.std(ddof=1) if finite.size > 1 else 0.0,
                     "n_seeds": finite.size, "profile": profile, "note": note})
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def table1_claim_values(final: pd.DataFrame, protocol: str | None = None
                        ) -> dict[str, np.ndarray]:
    """Map a Table 1 ``final`` table to claim ids, by protocol.

    Parameters
    ----------
    final : pandas.DataFrame
        The ``final`` table of :func:`~topofl_lib.experiments.table1_comparison`
        (columns ``protocol, scenario, method, seed`` and the metrics); results of both
        protocols may be concatenated.
    protocol : {"paper", "ours"}, optional
        The protocol of every row, for a table without a ``protocol`` column (e.g. from
        :func:`~topofl_lib.experiments.run_comparison`).

    Returns
    -------
    dict
        ``{claim id: per-seed values in seed order}``. Under ``"paper"`` the paper's
        five methods give ``ptopofl.t1.<hc|bm>.<auc|acc|conv>.<method>`` (the paper's
        own protocol, like for like) and Local-only and the v1.0.0 SCAFFOLD rule give
        ``topofl.t1.<scenario>.<metric>.<localonly|scaffold_v1>``; under ``"ours"`` every
        label gives ``topofl.t1.own.<scenario>.<metric>.<method>``. Only ids present in
        the claims table are returned; labels without a claim spelling are left out.

    Raises
    ------
    ValueError
        When the protocol is neither given nor a column, or is unknown.
    """
    known = set(load_paper_claims().index)
    out = {}
    for (prot, scenario, method), g in _with_protocol(final, protocol).groupby(
            ["protocol", "scenario", "method"]):
        key, scen = METHOD_KEYS.get(method), SCENARIO_KEYS.get(scenario)
        if key is None or scen is None:
            continue
        paper_row = prot == "paper" and method in METHODS_OF_TABLE1
        prefix = "ptopofl.t1" if paper_row else PROTOCOL_PREFIXES[prot]
        for metric, mkey in METRIC_KEYS.items():
            cid = f"{prefix}.{scen}.{mkey}.{key}"
            if cid in known:
                out[cid] = g.sort_values("seed")[metric].to_numpy(dtype=np.float64)
    return out


def _with_protocol(final: pd.DataFrame, protocol: str | None) -> pd.DataFrame:
    """``final`` with a checked ``protocol`` column (its own, or ``protocol`` for all rows)."""
    if "protocol" in final:
        if protocol is not None:
            raise ValueError("give protocol only for a table without a 'protocol' column")
    elif protocol is None:
        raise ValueError("final has no 'protocol' column; pass protocol='paper' or 'ours'")
    else:
        final = final.assign(protocol=protocol)
    unknown = sorted(set(final["protocol"]) - set(PROTOCOL_PREFIXES))
    if unknown:
        raise ValueError(f"unknown protocol(s) {unknown}; expected {list(PROTOCOL_PREFIXES)}")
    return final


def _percent(g: pd.DataFrame) -> np.ndarray:
    return 100.0 * g.sort_values("seed")["accuracy"].to_numpy(dtype=np.float64)


def fedtopo_claim_values(final: pd.DataFrame, tgbs: pd.DataFrame | None = None
                         ) -> dict[str, np.ndarray]:
    """FedTopo Table 1-3 ids (percent) from a comparison's ``final`` table.

    ``final`` rows have ``scenario`` ``"fashion_mnist-<P><param>"``; methods ``FedTopo``,
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
    """Write one notebook's claim rows to ``results_dir/claims/<name>.csv`` (atomically).

    Parameters
    ----------
    rows : pandas.DataFrame
        Claim rows, as from :func:`claim_rows`.
    results_dir : str or Path
        The results folder.
    name : str
        The file's stem.

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    ValueError
        The file's real path (symbolic links resolved) lies in the repository's
        published ``results/``, which only ``python -m topofl_lib reproduce`` writes
        (:func:`topofl_lib.outputs.check_unpublished`); nothing is written then.
    """
    path = check_unpublished(Path(results_dir) / "claims" / f"{name}.csv", "write_claims")
    with atomic_path(path) as tmp:
        rows.to_csv(tmp, index=False, float_format="%.6g")
    return path


class ClaimFileError(ValueError):
    """A claim file that cannot be read as claim rows; the message names it and the fault."""


#: Columns every claim file has (``note`` may be missing from older files).
REQUIRED_CLAIM_COLUMNS = CLAIM_COLUMNS[:-1]


def _parse_claim_file(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise ClaimFileError(f"{path} is empty (not even its header line)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        reason = " ".join(str(exc).split())
        raise ClaimFileError(f"{path} cannot be read as CSV ({reason})") from None


def _bad_rows(rows: pd.DataFrame, bad: pd.Series) -> str:
    """``line N (id 'x')`` for the first few rows where ``bad`` is true (line 1: header)."""
    where = [f"line {i + 2} (id {rows['id'].iloc[i]!r})" for i in np.flatnonzero(bad)[:3]]
    more = int(bad.sum()) - len(where)
    return ", ".join(where) + (f" and {more} more" if more > 0 else "")


def _check_claim_columns(rows: pd.DataFrame, path: Path) -> None:
    missing = [c for c in REQUIRED_CLAIM_COLUMNS if c not in rows]
    unknown = [c for c in rows if c not in CLAIM_COLUMNS]
    if missing or unknown:
        raise ClaimFileError(f"{path} has columns {list(rows.columns)}: "
                             + "; ".join(filter(None, [missing and f"{missing} missing",
                                                       unknown and f"{unknown} unknown"]))
                             + f"; a claim file has columns {CLAIM_COLUMNS}")


def _check_claim_values(rows: pd.DataFrame, path: Path) -> None:
    ids = rows["id"]
    faults = {"id is empty": ids.isna() | (ids.astype(str).str.strip() == ""),
              "id repeats an earlier row's": ids.duplicated() & ids.notna()}
    numbers = {c: pd.to_numeric(rows[c], errors="coerce")
               for c in ("measured_mean", "measured_std", "n_seeds")}
    for column, values in numbers.items():
        faults[f"{column} is not a number"] = values.isna() & rows[column].notna()
    seeds, mean, std = numbers["n_seeds"], numbers["measured_mean"], numbers["measured_std"]
    faults["n_seeds is not a whole number >= 0"] = ~((seeds >= 0) & (seeds % 1 == 0))
    faults["measured_std is not a finite number >= 0"] = ~(np.isfinite(std) & (std >= 0))
    faults["measured_mean is empty or infinite while n_seeds > 0"] = (
        ~np.isfinite(mean) & (seeds > 0))
    faults["profile is empty"] = rows["profile"].isna() | (
        rows["profile"].astype(str).str.strip() == "")
    for what, bad in faults.items():
        if bad.any():
            raise ClaimFileError(f"{path}: {what} at {_bad_rows(rows, bad)}")


def read_claim_file(path) -> pd.DataFrame:
    """Read one notebook's claim file, checking its columns and every value.

    Parameters
    ----------
    path : str or Path
        A ``claims/<name>.csv`` file, as :func:`write_claims` writes it.

    Returns
    -------
    pandas.DataFrame
        Its rows, as read (columns :data:`CLAIM_COLUMNS`; ``note`` may be missing).

    Raises
    ------
    ClaimFileError
        The file is empty or not CSV, lacks a column of :data:`REQUIRED_CLAIM_COLUMNS`
        or has an unknown one, or a row has an empty or repeated id, a non-numeric or
        negative value, a fractional ``n_seeds``, or an empty profile (what a file cut
        short leaves in its last row). The message names the file, the fault and the
        first rows that show it.
    """
    path = Path(path)
    rows = _parse_claim_file(path)
    _check_claim_columns(rows, path)
    _check_claim_values(rows, path)
    return rows


def _read_claims(results_dir) -> pd.DataFrame:
    """Every ``claims/*.csv`` merged, with a ``source`` column (the file's stem)."""
    files = sorted((Path(results_dir) / "claims").glob("*.csv"))
    if not files:
        return pd.DataFrame(columns=[*CLAIM_COLUMNS, "source"])
    merged = pd.concat([read_claim_file(f).assign(source=f.stem) for f in files],
                       ignore_index=True)
    repeated = merged[merged["id"].duplicated(keep=False)]
    if len(repeated):
        cid = repeated["id"].iloc[0]
        sources = sorted(repeated.loc[repeated["id"] == cid, "source"])
        raise ClaimFileError(f"claim id {cid!r} is in more than one claim file "
                             f"({', '.join(f'claims/{s}.csv' for s in sources)} in "
                             f"{results_dir}); each claim belongs to one notebook")
    notes = merged["note"] if "note" in merged else pd.Series("", index=merged.index)
    merged["note"] = notes.astype(object).where(notes.notna(), "")
    order = {cid: i for i, cid in enumerate(load_paper_claims().index)}
    missing = [cid for cid in NOT_RUN if cid not in set(merged["id"])]
    if missing:
        merged = pd.concat([merged, pd.DataFrame(
            {"id": missing, "measured_mean": np.nan, "measured_std": np.nan, "n_seeds": 0,
             "profile": "not run", "note": [NOT_RUN[c] for c in missing],
             "source": NOT_RUN_SOURCE})], ignore_index=True)
    return merged.sort_values("id", key=lambda s: s.map(order)).reset_index(drop=True)


def collect_claims(results_dir, source: bool = False) -> pd.DataFrame:
    """Merge every ``results_dir/claims/*.csv`` (sorted by claim-table order).

    Every id of :data:`NOT_RUN` that no file measures gets a row without a value
    (``n_seeds`` 0, profile ``not run``, its reason as the note).

    Parameters
    ----------
    results_dir : str or Path
        A results folder (``claims/`` in it).
    source : bool, default=False
        Add a ``source`` column: the stem of the claim file each row comes from
        (:data:`NOT_RUN_SOURCE` for the rows of :data:`NOT_RUN`).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CLAIM_COLUMNS` (and ``source``), one row per claim id.

    Raises
    ------
    ClaimFileError
        A claim file is damaged (:func:`read_claim_file`), or an id is in two files.
    """
    merged = _read_claims(results_dir)
    return merged[[*CLAIM_COLUMNS, "source"]] if source else merged[CLAIM_COLUMNS]


def compare_with_paper(measured: pd.DataFrame) -> pd.DataFrame:
    """Claim rows joined with the paper's numbers, indexed by claim id.

    Parameters
    ----------
    measured : pandas.DataFrame
        Claim rows (:func:`claim_rows`, :func:`collect_claims`, or the summary of
        :func:`topofl_lib.claims_summary.summary_table`).

    Returns
    -------
    pandas.DataFrame
        ``measured``'s columns (but ``id``, the index) and the paper's: ``paper``,
        ``setting``, ``method``, ``metric``, ``paper_value`` (float), ``value_text`` (as
        printed), ``paper_std``, ``source``, and ``difference`` (our mean minus the
        paper's value). Whether they agree is :func:`topofl_lib.claims_summary.paper_verdict`.
    """
    paper = load_paper_claims()[["paper", "setting", "method", "metric", "value",
                                 "value_text", "paper_std", "source"]]
    df = measured.set_index("id").join(paper.rename(columns={"value": "paper_value"}),
                                       how="left")
    return df.assign(difference=df["measured_mean"] - df["paper_value"])


def _per_seed(df: pd.DataFrame, column: str, **where) -> np.ndarray:
    m = np.ones(len(df), dtype=bool)
    for key, value in where.items():
        m &= (df[key] == value).to_numpy()
    return df[m].sort_values("seed")[column].to_numpy(dtype=np.float64)


#: Robustness claim ids per protocol, ``{protocol: {method: id}}`` (the attack rate's
#: percentage follows the prefix).
ROBUSTNESS_IDS = {
    "paper": {"pTopoFL": "ptopofl.robust.{rate}.ptopofl", "FedAvg": "ptopofl.robust.{rate}.fedavg",
              "Local-only": "topofl.robust.{rate}.localonly"},
    "ours": {m: f"topofl.robust.own.{{rate}}.{key}" for m, key in (
        ("pTopoFL", "ptopofl"), ("FedAvg", "fedavg"), ("Local-only", "localonly"),
        ("Median", "median"), ("TrimmedMean", "trimmedmean"), ("Krum", "krum"))},
}
#: Ablation claim ids per protocol, ``{protocol: {variant label: id}}``.
ABLATION_IDS = {
    "paper": {"full": "ptopofl.ablation.full", "M=1": "ptopofl.ablation.m1",
              "beta=0": "ptopofl.ablation.beta0", "no trust": "topofl.ablation.no_trust",
              "no augmentation": "topofl.ablation.no_augmentation",
              "Wasserstein": "topofl.ablation.wasserstein"},
    "ours": {"full": "topofl.ablation.own.full", "M=1": "topofl.ablation.own.m1",
             "beta=0": "topofl.ablation.own.beta0", "no trust": "topofl.ablation.own.no_trust",
             "no augmentation": "topofl.ablation.own.no_augmentation",
             "Wasserstein": "topofl.ablation.own.wasserstein"},
}


def robustness_claim_values(final: pd.DataFrame, rate: float = 0.5,
                            protocol: str | None = None) -> dict[str, np.ndarray]:
    """Robustness ids at attack ``rate`` from a label-flip sweep's ``final`` table.

    Under the paper's protocol pTopoFL and FedAvg give ``ptopofl.robust.50.*`` and
    Local-only ``topofl.robust.50.localonly``; under ours every method with an id gives
    ``topofl.robust.own.50.*`` (:data:`ROBUSTNESS_IDS`). ``protocol`` is needed only for
    a table without a ``protocol`` column (see :func:`table1_claim_values`). Only ids
    present in the claims table are returned.

    Parameters
    ----------
    final : pandas.DataFrame
        The sweep's ``final`` table (with ``rate`` and, unless ``protocol`` is given,
        ``protocol`` columns); both protocols' sweeps may be concatenated.
    rate : float, default=0.5
        The adversarial rate the claims are read at.
    protocol : {"paper", "ours"}, optional
        The protocol of every row, for a table without a ``protocol`` column.

    Returns
    -------
    dict of str to ndarray
        Claim id -> per-seed final AUCs, sorted by seed (methods without runs left out).
    """
    known = set(load_paper_claims().index)
    final = _with_protocol(final, protocol)
    out = {}
    for prot, g in final.groupby("protocol"):
        for method, pattern in ROBUSTNESS_IDS[prot].items():
            cid = pattern.format(rate=f"{100 * rate:g}")
            v = _per_seed(g, "auc", rate=rate, method=method)
            if v.size and cid in known:
                out[cid] = v
    return out


def ablation_claim_values(final: pd.DataFrame, protocol: str | None = None
                          ) -> dict[str, np.ndarray]:
    """Ablation ids from a variants run labelled ``full``, ``M=1``, ``beta=0``, ...

    The paper's protocol gives ``ptopofl.ablation.*`` (and ``topofl.ablation.*`` for the
    variants beyond the paper), ours ``topofl.ablation.own.*`` (:data:`ABLATION_IDS`).

    Parameters
    ----------
    final : pandas.DataFrame
        The variants run's ``final`` table (labels of
        :data:`topofl_lib.experiments.ABLATIONS`); both protocols may be concatenated.
    protocol : {"paper", "ours"}, optional
        The protocol of every row, for a table without a ``protocol`` column.

    Returns
    -------
    dict of str to ndarray
        Claim id -> per-seed final AUCs, sorted by seed (variants without runs left out).
    """
    final = _with_protocol(final, protocol)
    out = {}
    for prot, g in final.groupby("protocol"):
        for label, cid in ABLATION_IDS[prot].items():
            v = _per_seed(g, "auc", method=label)
            if v.size:
                out[cid] = v
    return out


def continual_claim_values(per_seed: pd.DataFrame) -> dict[str, np.ndarray]:
    """``ptopofl.continual.drift`` and the drift-trigger detection rates."""
    ordered = per_seed.sort_values("seed")
    return {"ptopofl.continual.drift": ordered["mean_drift"].to_numpy(dtype=np.float64),
            "topofl.continual.detected": ordered["detected"].dropna().to_numpy(dtype=np.float64),
            "topofl.continual.false_alarms": ordered["false_alarms"].to_numpy(dtype=np.float64)}


def gfc_claim_values(main: pd.DataFrame, multiplier: pd.DataFrame | None = None,
                     scalability: pd.DataFrame | None = None) -> dict[str, np.ndarray]:
    """``gfc.*`` ids (MNIST rows measured on MNIST-5k in 2-D; Table 1 is in percent).

    Parameters
    ----------
    main : pandas.DataFrame
        ARI/NMI per dataset, epsilon, method and seed.
    multiplier : pandas.DataFrame, optional
        ARI per ``alpha``, epsilon and seed (Table 3).
    scalability : pandas.DataFrame, optional
        ARI/NMI per ``n_clients``, method, epsilon and seed (Table 6).

    Returns
    -------
    dict of str to ndarray
        Claim id -> per-seed values sorted by seed (only known ids).
    """
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

#: Claim-id prefix of the label-aware notebook's attacks (the label flip has none).
LABEL_AWARE_ATTACK_KEYS = {"label_flip": "", "noisy_label_flip": "noisy."}
#: Claim-id prefix of the detection scenarios (:func:`topofl_lib.detection.detection_scenarios`
#: labels without their rate): the attacks above, the paper protocol's 30% flip, a 30%
#: partial flip of our protocol.
DETECTION_SCENARIO_KEYS = {**LABEL_AWARE_ATTACK_KEYS, "label_flip paper": "paper.",
                           "partial0.3": "partial30."}


def _rate_key(rate: float) -> str:
    return f"{round(100 * float(rate)):d}"


def label_aware_claim_values(detection: pd.DataFrame | None = None,
                             recovery: pd.DataFrame | None = None,
                             final: pd.DataFrame | None = None,
                             drift: pd.DataFrame | None = None,
                             descinv: pd.DataFrame | None = None,
                             mia: pd.DataFrame | None = None,
                             dp: pd.DataFrame | None = None,
                             deep: pd.DataFrame | None = None) -> dict[str, np.ndarray]:
    """``topofl.cc.*`` ids from the label-aware notebook's tables (per-seed values).

    Parameters
    ----------
    detection : DataFrame, optional
        :func:`~topofl_lib.detection.per_seed_detection` of detection runs (scenarios
        ``"<attack> <rate>"``): ``topofl.cc.detect.<rate%>.<desc>.tpr`` / ``.fpr``
        (tau 1.8), ``.tpr.tau1`` / ``.fpr.tau1`` (tau 1.0), ``.rocauc`` for the label
        flip, ``topofl.cc.detect.noisy.<rate%>.<desc>.*`` for the noisy label flip,
        ``topofl.cc.detect.paper.<rate%>.<desc>.*`` for the paper protocol's flip and
        ``topofl.cc.detect.partial30.<rate%>.<desc>.*`` for a 30% partial flip
        (:data:`DETECTION_SCENARIO_KEYS`); other scenarios have no id.
    recovery : DataFrame, optional
        :func:`~topofl_lib.detection.cluster_recovery` of the same runs:
        ``topofl.cc.ari.<rate%>.<desc>`` (ARI) and ``.ari90`` (ARI >= 0.9, 0/1).
    final : DataFrame, optional
        :func:`~topofl_lib.experiments.label_aware_comparison`:
        ``topofl.cc.auc.<protocol>.<rate%>.<method>`` for the label flip (every row
        when there is no ``attack`` column), ``topofl.cc.auc.noisy.<protocol>.<rate%>.
        <method>`` for the noisy label flip.
    drift : DataFrame, optional
        ``per_seed_detection(drift_runs(...), (), "drift", "shifted")``:
        ``topofl.cc.drift.<desc>.rocauc``.
    descinv, mia, dp : DataFrame, optional
        The privacy runners' tables (healthcare, with a ``descriptor`` column):
        ``topofl.cc.privacy.<desc>.descinv.recovered`` / ``.descinv.relerr``,
        ``.mia.auc`` (descriptor channel), ``.dp.eps1.auc`` / ``.dp.nodp.auc``.
    deep : DataFrame, optional
        ``final`` of the deep Fashion-MNIST Dir(0.1) runs (``method``, ``seed``,
        ``accuracy``): ``topofl.cc.deep.fmnist01.<method>.acc``.

    Returns
    -------
    dict
        ``{claim id: per-seed values}``. Values are averaged within a seed (over
        clients), one per seed in seed order; NaN seeds (no ARI with one latent type)
        are left out. Only ids present in the claims table are returned; an empty
        selection is dropped.
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
                if attack not in DETECTION_SCENARIO_KEYS:
                    continue
                prefix = DETECTION_SCENARIO_KEYS[attack]
                base = f"topofl.cc.detect.{prefix}{_rate_key(rate)}.{dkey}"
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
    if deep is not None:
        for method in deep["method"].unique():
            key = LABEL_AWARE_METHOD_KEYS.get(method)
            if key:
                put(f"topofl.cc.deep.fmnist01.{key}.acc", deep, "accuracy", method=method)
    if final is not None:
        if "attack" not in final:  # a table of label-flip runs only
            final = final.assign(attack="label_flip")
        for (attack, protocol, rate, method), _ in final.groupby(
                ["attack", "protocol", "rate", "method"]):
            key = LABEL_AWARE_METHOD_KEYS.get(method)
            if key and attack in LABEL_AWARE_ATTACK_KEYS:
                put(f"topofl.cc.auc.{LABEL_AWARE_ATTACK_KEYS[attack]}{protocol}."
                    f"{_rate_key(rate)}.{key}", final, "auc", attack=attack,
                    protocol=protocol, rate=rate, method=method)
    return out
