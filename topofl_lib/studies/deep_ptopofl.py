"""pTopoFL's deep experiments (Table 2) on offline stand-ins: their claim ids, and the
values the notebook's comparison with the paper states in prose.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claim_keys import METHOD_KEYS
from ..results import load_paper_claims
from .common import mean_sd, percent

__all__ = ["DEEP_STAND_INS", "SUMMARY_SETTINGS", "deep_claim_values", "levels_values",
           "paired_values", "server_view_values", "setting_name"]

#: Our stand-in for each of pTopoFL's deep settings (Table 2), which need CIFAR-10 /
#: FEMNIST that cannot be had offline: ``{key: ((dataset, partition, param), note)}``.
DEEP_STAND_INS = {
    "cifar01": (("fashion_mnist", "L", 0.1),
                "stand-in: Fashion-MNIST, Dir(0.1), 10 clients, CNN"),
    "cifar05": (("fashion_mnist", "L", 0.5),
                "stand-in: Fashion-MNIST, Dir(0.5), 10 clients, CNN"),
    "femnist": (("mnist5k", "L", 0.5), "stand-in: MNIST-5k, Dir(0.5), 10 clients, CNN"),
}


def deep_claim_values(final: pd.DataFrame) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """pTopoFL Table 2 ids from the stand-in runs, and the note marking each.

    Parameters
    ----------
    final : pandas.DataFrame
        The deep comparisons' ``final`` tables, with the setting columns ``dataset``,
        ``partition`` and ``param``.

    Returns
    -------
    values : dict of str to ndarray
        Claim id -> per-seed accuracies, sorted by seed.
    notes : dict of str to str
        Claim id -> the stand-in it was measured on.
    """
    values, notes = {}, {}
    known = set(load_paper_claims().index)
    for key, ((dataset, partition, param), note) in DEEP_STAND_INS.items():
        rows = final[(final["dataset"] == dataset) & (final["partition"] == partition)
                     & (final["param"] == param)]
        for method, g in rows.groupby("method"):
            cid = f"ptopofl.t2.{key}.{METHOD_KEYS.get(method, '')}"
            if cid in known:
                values[cid] = g.sort_values("seed")["accuracy"].to_numpy(dtype=np.float64)
                notes[cid] = note
    return values, notes


def setting_name(dataset: str, alpha: float) -> str:
    """The name of one deep setting in the notebook's paired tables.

    Parameters
    ----------
    dataset : str
        The image data set.
    alpha : float
        The Dirichlet concentration of its label skew.

    Returns
    -------
    str
        ``"<dataset> Dir(<alpha>)"``.

    Examples
    --------
    >>> setting_name("fashion_mnist", 0.1)
    'fashion_mnist Dir(0.1)'
    """
    return f"{dataset} Dir({alpha})"


#: The settings the notebook's comparison with the paper names: ``{suffix: (dataset, alpha)}``
#: (``f01``: Fashion-MNIST Dir(0.1), ``m05``: MNIST-5k Dir(0.5), ...).
SUMMARY_SETTINGS = {"f01": ("fashion_mnist", 0.1), "f05": ("fashion_mnist", 0.5),
                    "m01": ("mnist5k", 0.1), "m05": ("mnist5k", 0.5)}
_NAN = float("nan")


def _level_text(g: pd.DataFrame, methods) -> str:
    """``"FedAvg 67.4 ± 11.7, ..., pTopoFL 76.8 ± 3.0"``: accuracies in percent, pTopoFL
    last (no sd for a single seed; ``n/a`` when the setting was not run)."""
    order = [m for m in methods if m != "pTopoFL"] + ["pTopoFL"]
    return ", ".join(f"{m} {mean_sd(percent(g[g['method'] == m]), digits=1)}"
                     for m in order if (g["method"] == m).any()) or "n/a"


def _paper_percent(key: str, method: str) -> float:
    """The paper's Table 2 accuracy of ``method`` in stand-in setting ``key``, in percent."""
    claims = load_paper_claims()
    cid = f"ptopofl.t2.{key}.{METHOD_KEYS[method]}"
    return 100.0 * float(claims.loc[cid, "value"]) if cid in claims.index else _NAN


def levels_values(final: pd.DataFrame, methods) -> dict:
    """The levels paragraph: each setting's accuracies beside the paper's Table 2.

    Parameters
    ----------
    final : pandas.DataFrame
        The deep comparisons' ``final`` tables (columns ``dataset``, ``param``,
        ``method``, ``seed``, ``accuracy``).
    methods : list of str
        The methods run, in the order the text lists them (pTopoFL last).

    Returns
    -------
    dict
        For each suffix of :data:`SUMMARY_SETTINGS` (``f01``, ...), the setting's levels
        as text; and the paper's FedAvg and pTopoFL in percent for each key of
        :data:`DEEP_STAND_INS`: ``paper_fedavg_cifar01``, ``paper_ptopofl_cifar01``, ...
    """
    out = {}
    for suffix, (dataset, alpha) in SUMMARY_SETTINGS.items():
        g = final[(final["dataset"] == dataset) & np.isclose(final["param"], alpha)]
        out[suffix] = _level_text(g, methods)
    for key in DEEP_STAND_INS:
        for m in ("FedAvg", "pTopoFL"):
            out[f"paper_{m.lower()}_{key}"] = _paper_percent(key, m)
    return out


def _paired(family: pd.DataFrame, suffix: str, method: str) -> pd.Series:
    """``pTopoFL - method`` in one setting of the family, differences in points (NaN when
    not run)."""
    name = setting_name(*SUMMARY_SETTINGS[suffix])
    cols = ["mean_diff", "ci_low", "ci_high", "wins", "p_wilcoxon", "p_holm"]
    if (name, method) not in family.index:
        return pd.Series(_NAN, index=cols)
    row = family.loc[(name, method), cols].astype(np.float64)
    return row * np.array([100.0, 100.0, 100.0, 1.0, 1.0, 1.0])


def paired_values(final: pd.DataFrame, family: pd.DataFrame, n_seeds: int) -> dict:
    """The paragraph "Is pTopoFL better?": paired differences against FedAvg and pFedMe.

    Parameters
    ----------
    final : pandas.DataFrame
        As for :func:`levels_values`.
    family : pandas.DataFrame
        :func:`~topofl_lib.statistics.holm_family` of ``pTopoFL - other`` over the
        settings, named by :func:`setting_name`.
    n_seeds : int
        Seeds per setting.

    Returns
    -------
    dict
        Against FedAvg on Fashion-MNIST (suffixes ``01``, ``05``): wins ``w``, difference
        ``g`` and 95% interval ``lo`` / ``hi`` in points, Wilcoxon ``p`` and its Holm
        adjustment ``h``; on MNIST-5k the differences ``gm01``, ``gm05``; ``pmin``, the
        smallest Wilcoxon p-value ``n_seeds`` seeds allow; ``m`` (the family's size) and
        ``n_sig`` (adjusted p under 0.05); on Fashion-MNIST Dir(0.1) pFedMe's and
        pTopoFL's mean accuracy ``pf`` / ``pt`` (percent) and pTopoFL's wins over pFedMe
        ``wp``, and the method with the best mean there (``best``); ``direction`` (whether
        both FedAvg differences have the paper's sign) and ``intervals`` (how many of their
        intervals exclude 0, as words); the paper's pFedMe as printed (``pfedme_paper``)
        and ``pfedme_verdict``, whether it is below the paper's pTopoFL in every setting.
    """
    out = {"pmin": 2.0 ** (1 - n_seeds), "m": int(family["family_size"].iloc[0]),
           "n_sig": int((family["p_holm"] < 0.05).sum())}
    for a in ("01", "05"):
        row = _paired(family, "f" + a, "FedAvg")
        out.update({f"w{a}": row["wins"], f"g{a}": row["mean_diff"], f"lo{a}": row["ci_low"],
                    f"hi{a}": row["ci_high"], f"p{a}": row["p_wilcoxon"], f"h{a}": row["p_holm"]})
        out[f"gm{a}"] = _paired(family, "m" + a, "FedAvg")["mean_diff"]
    g = final[(final["dataset"] == "fashion_mnist") & np.isclose(final["param"], 0.1)]
    means = {m: percent(r).mean() for m, r in g.groupby("method")}
    out["pf"], out["pt"] = means.get("pFedMe", _NAN), means.get("pTopoFL", _NAN)
    out["wp"] = _paired(family, "f01", "pFedMe")["wins"]
    out["best"] = max(means, key=means.get) if means else "n/a"
    gains = [out["g01"], out["g05"]]
    out["direction"] = ("the direction the paper reports" if all(x > 0 for x in gains) else
                        "against the paper's direction" if all(x <= 0 for x in gains)
                        else "the paper's direction in one of the two")
    n_excl = sum(bool(out[f"lo{a}"] > 0 or out[f"hi{a}"] < 0) for a in ("01", "05"))
    out["intervals"] = ("neither 95% interval excludes 0", "one 95% interval excludes 0",
                        "both 95% intervals exclude 0")[n_excl]
    paper = {k: (_paper_percent(k, "pFedMe"), _paper_percent(k, "pTopoFL")) for k in DEEP_STAND_INS}
    out["pfedme_paper"] = ", ".join(f"{pf / 100:.2f}" for pf, _ in paper.values())
    out["pfedme_verdict"] = ("below pTopoFL everywhere" if all(pf < pt for pf, pt in paper.values())
                             else "not below pTopoFL everywhere")
    return out


def server_view_values(clusters, trust, dominant) -> dict:
    """What one pTopoFL server's clustering says about the label skew.

    Parameters
    ----------
    clusters : array-like of int, shape (n_clients,)
        Each client's cluster.
    trust : array-like of float, shape (n_clients,)
        Each client's trust weight (Eq. 8).
    dominant : array-like of int, shape (n_clients,)
        Each client's most frequent class.

    Returns
    -------
    dict
        ``n_clusters``; ``classes_per_cluster`` (text: the number of distinct dominant
        classes in each cluster, largest first); ``n_singletons`` (clusters of one
        client); ``shared`` (dominant classes held by more than one client), ``split``
        (those of them spread over more than one cluster) and their counts
        ``n_shared`` / ``n_split``; ``n_downweighted`` (trust below 1); ``tracks``,
        ``"line up with"`` when no shared class is split, else ``"do not line up with"``.

    Examples
    --------
    >>> v = server_view_values([0, 0, 1, 1], [1.0, 1.0, 1.0, 0.5], [3, 3, 2, 2])
    >>> v["tracks"], v["n_split"], v["n_downweighted"]
    ('line up with', 0, 1)
    """
    clusters, trust, dominant = (np.asarray(a) for a in (clusters, trust, dominant))
    if not clusters.shape == trust.shape == dominant.shape or clusters.ndim != 1:
        raise ValueError("clusters, trust and dominant must be 1-d of one length, got shapes "
                         f"{clusters.shape}, {trust.shape}, {dominant.shape}")
    per_cluster = sorted((len(set(dominant[clusters == c])) for c in np.unique(clusters)),
                         reverse=True)
    classes, counts = np.unique(dominant, return_counts=True)
    shared = [int(c) for c in classes[counts > 1]]
    split = [c for c in shared if len(set(clusters[dominant == c])) > 1]
    return {"n_clusters": len(per_cluster),
            "classes_per_cluster": ", ".join(str(n) for n in per_cluster),
            "n_singletons": int(sum(np.sum(clusters == c) == 1 for c in np.unique(clusters))),
            "shared": ", ".join(map(str, shared)) or "none", "n_shared": len(shared),
            "split": ", ".join(map(str, split)) or "none", "n_split": len(split),
            "n_downweighted": int(np.sum(trust < 1.0)),
            "tracks": "do not line up with" if split else "line up with"}
