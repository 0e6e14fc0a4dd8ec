"""Robustness to adversarial clients (pTopoFL Sec. 4.4, Figure 4, Theorem 5).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .._validation import check_choice, check_real
from ..claim_keys import METHOD_KEYS
from ..core.seeds import check_seeds
from ..data.scenarios import PROTOCOLS
from ..results import load_paper_claims
from ..runner import ComparisonResult, run_comparison
from ..runner.plan import check_runs
from .common import per_seed, with_protocol
from .table1 import TABLE1_VARIANTS

__all__ = ["ROBUSTNESS_IDS", "robustness_claim_values", "robustness_sweep"]

def robustness_sweep(
    rates: Sequence[float] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5),
    seeds: Iterable[int] = range(10),
    methods: Sequence[str] | None = None,
    attack: str = "label_flip",
    n_clients: int = 10,
    n_rounds: int = 10,
    tau: float = 1.8,
    progress: bool = True,
    protocol: str = "ours",
) -> tuple[ComparisonResult, pd.DataFrame]:
    """Sweep the fraction of adversarial hospitals (pTopoFL Sec. 4.4, Figure 4).

    ``round(rate * n_clients)`` hospitals of :func:`~topofl_lib.data.make_healthcare`
    run ``attack``; pTopoFL uses ``tau`` (paper Table 3: 1.8 for robustness). Returns the
    merged :class:`ComparisonResult` (with ``rate`` and ``protocol`` columns in
    ``curves`` and ``final``)
    and a Theorem 5 table for pTopoFL: per rate and seed, the measured adversarial
    weight in the consensus, the trust share of adversaries, the separation
    ``lam_delta`` and the bound.

    Parameters
    ----------
    rates : sequence of float, default=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
        Fractions of adversarial hospitals, each in [0, 0.5].
    seeds : iterable of int, default=range(10)
        The seeds.
    methods : sequence of str, optional
        Under ``protocol="ours"`` method names (default: :data:`METHODS`) with their
        defaults; under ``protocol="paper"`` labels of :data:`TABLE1_VARIANTS`
        ``["paper"]`` (default: all of them), i.e. the paper code's local solvers.
    attack : str, default="label_flip"
        The adversaries' attack (see :func:`~topofl_lib.data.make_healthcare`).
    n_clients : int, default=10
        Number of hospitals.
    n_rounds : int, default=10
        Communication rounds.
    tau : float, default=1.8
        pTopoFL's trust threshold.
    progress : bool, default=True
        Show tqdm bars.
    protocol : {"ours", "paper"}, default="ours"
        ``"ours"``: our generator (adversaries flip all their training labels, only
        honest hospitals are scored). ``"paper"``: the generator, evaluation and local
        solvers of the paper's released code; the hospitals are ``n_clients`` draws of
        :func:`~topofl_lib.data.paper_protocol.paper_healthcare`, whose adversaries flip
        30% of all their labels (test labels included) and are scored with the others.

    Returns
    -------
    result : ComparisonResult
        All rates' runs, with ``rate`` and ``protocol`` columns.
    theorem5 : pandas.DataFrame
        One row per (rate, seed) of pTopoFL: ``protocol``, ``eps``, ``adversarial_weight``,
        ``adversarial_trust_share``, ``delta_sep``, ``lam``, ``lam_delta``, ``bound`` and
        ``assumption_holds``.
    """
    from ..theory import adversarial_separation, theorem5_bound

    seeds = check_seeds(seeds)
    check_choice(protocol, "protocol", PROTOCOLS)
    if protocol == "paper":
        table = TABLE1_VARIANTS["paper"]
        labels = list(table) if methods is None else list(methods)
        unknown = [m for m in labels if m not in table]
        if unknown or not labels:
            raise ValueError(f"with protocol='paper', methods must be a non-empty list of "
                             f"{list(table)}, got {labels}")
        runs = {m: table[m] for m in labels}
    else:
        runs = {label: (m, {}) for label, m, _ in check_runs(methods, None, None)}
    runs = {label: (m, {**extra, "tau": tau} if m == "pTopoFL" else extra)
            for label, (m, extra) in runs.items()}
    curves, finals, rows = [], [], []
    for rate in rates:
        check_real(rate, "rate", low=0.0, high=0.5)
        n_adv = int(round(rate * n_clients))
        res = run_comparison(
            "healthcare", seeds, n_rounds=n_rounds,
            scenario_params={"n_clients": n_clients, "n_adversarial": n_adv, "attack": attack,
                             "protocol": protocol},
            variants=runs, keep_models="pTopoFL" in runs, progress=progress)
        curves.append(res.curves.assign(rate=rate, protocol=protocol))
        finals.append(res.final.assign(rate=rate, protocol=protocol))
        for (name, seed), est in res.models.items():
            if name != "pTopoFL":
                continue
            adv = ~est.honest_
            sep = adversarial_separation(est.distances_, adv)
            eps = adv.mean()
            rows.append({
                "protocol": protocol, "rate": rate, "seed": seed, "eps": eps,
                "adversarial_weight": float(est.consensus_weights_[adv].sum()),
                "adversarial_trust_share": float(est.trust_[adv].sum() / est.trust_.sum()),
                **sep,
                "bound": (theorem5_bound(eps, sep["lam_delta"])
                          if np.isfinite(sep["lam_delta"]) else np.nan),
                "assumption_holds": bool(sep["delta_sep"] > 0) if adv.any() else False,
            })
    merged = ComparisonResult(pd.concat(curves, ignore_index=True),
                              pd.concat(finals, ignore_index=True), {})
    return merged, pd.DataFrame(rows)

#: Robustness claim ids per protocol, ``{protocol: {method: id pattern}}`` (the attack
#: rate's percentage fills ``{rate}``; methods spelled by :data:`METHOD_KEYS`): under the
#: paper's protocol the paper's pTopoFL and FedAvg rows and our Local-only row, under ours
#: every method of the sweep with its Byzantine-robust baselines.
ROBUSTNESS_IDS = {
    "paper": {"pTopoFL": "ptopofl.robust.{rate}.ptopofl",
              "FedAvg": "ptopofl.robust.{rate}.fedavg",
              "Local-only": "topofl.robust.{rate}.localonly"},
    "ours": {m: f"topofl.robust.own.{{rate}}.{METHOD_KEYS[m]}"
             for m in ("pTopoFL", "FedAvg", "Local-only", "Median", "TrimmedMean", "Krum")},
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
    final = with_protocol(final, protocol)
    out = {}
    for prot, g in final.groupby("protocol"):
        for method, pattern in ROBUSTNESS_IDS[prot].items():
            cid = pattern.format(rate=f"{100 * rate:g}")
            v = per_seed(g, "auc", rate=rate, method=method)
            if v.size and cid in known:
                out[cid] = v
    return out
