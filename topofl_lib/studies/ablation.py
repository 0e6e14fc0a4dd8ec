"""pTopoFL's ablation (Sec. 4.7): the variants and their claim ids.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..data.scenarios import PROTOCOLS
from .common import per_seed, with_protocol
from .table1 import TABLE1_VARIANTS

__all__ = [
    "ABLATIONS", "ABLATION_IDS", "ABLATION_KEYS", "PAPER_ABLATIONS",
    "ablation_claim_values", "ablation_variants",
]

#: pTopoFL's ablation variants (Sec. 4.7: M = 1 and beta = 0; ours: no trust weighting,
#: no feature augmentation, diagram Wasserstein distance), ``{label: parameter changes}``.
ABLATIONS: dict[str, dict] = {
    "full": {}, "M=1": {"n_clusters": 1}, "beta=0": {"beta": 0.0},
    "no trust": {"use_trust": False}, "no augmentation": {"augment": False},
    "Wasserstein": {"distance": "wasserstein"},
}

def ablation_variants(protocol: str = "ours", changes: dict | None = None,
                      references: Sequence[str] = ("FedAvg", "Local-only")) -> dict:
    """``variants`` of :func:`run_comparison` for a pTopoFL ablation under ``protocol``.

    Parameters
    ----------
    protocol : {"ours", "paper"}
        Each variant is pTopoFL's Table 1 configuration under this protocol
        (:data:`TABLE1_VARIANTS`: under ``"paper"`` the lbfgs local solver) with the
        variant's changes applied. Run it on a scenario of the same protocol
        (``scenario_params={"protocol": protocol}``).
    changes : dict, optional
        ``{label: {pTopoFL parameter: value}}`` (default: :data:`ABLATIONS`).
    references : sequence of str
        Labels of :data:`TABLE1_VARIANTS` ``[protocol]`` added unchanged.

    Returns
    -------
    dict
        ``{label: (method name, params)}``.
    """
    check_choice(protocol, "protocol", PROTOCOLS)
    table = TABLE1_VARIANTS[protocol]
    base = table["pTopoFL"][1]
    changes = ABLATIONS if changes is None else changes
    unknown = [r for r in references if r not in table]
    if unknown:
        raise ValueError(f"unknown references {unknown}; expected labels of {list(table)}")
    return {**{label: ("pTopoFL", {**base, **change}) for label, change in changes.items()},
            **{r: table[r] for r in references}}

#: Claim-id spelling of each ablation variant.
ABLATION_KEYS = {"full": "full", "M=1": "m1", "beta=0": "beta0", "no trust": "no_trust",
                 "no augmentation": "no_augmentation", "Wasserstein": "wasserstein"}
#: The variants the paper reports (Sec. 4.7); the others are ours (``topofl.*`` ids).
PAPER_ABLATIONS = ("full", "M=1", "beta=0")
#: Ablation claim ids per protocol, ``{protocol: {variant label: id}}``.
ABLATION_IDS = {
    "paper": {label: f"{'ptopofl' if label in PAPER_ABLATIONS else 'topofl'}.ablation.{key}"
              for label, key in ABLATION_KEYS.items()},
    "ours": {label: f"topofl.ablation.own.{key}" for label, key in ABLATION_KEYS.items()},
}


def ablation_claim_values(final: pd.DataFrame, protocol: str | None = None
                          ) -> dict[str, np.ndarray]:
    """Ablation ids from a variants run labelled ``full``, ``M=1``, ``beta=0``, ...

    The paper's protocol gives ``ptopofl.ablation.*`` (and ``topofl.ablation.*`` for the
    variants beyond the paper), ours ``topofl.ablation.own.*`` (:data:`ABLATION_IDS`).

    Parameters
    ----------
    final : pandas.DataFrame
        The variants run's ``final`` table (labels of
        :data:`topofl_lib.studies.ablation.ABLATIONS`); both protocols may be concatenated.
    protocol : {"paper", "ours"}, optional
        The protocol of every row, for a table without a ``protocol`` column.

    Returns
    -------
    dict of str to ndarray
        Claim id -> per-seed final AUCs, sorted by seed (variants without runs left out).
    """
    final = with_protocol(final, protocol)
    out = {}
    for prot, g in final.groupby("protocol"):
        for label, cid in ABLATION_IDS[prot].items():
            v = per_seed(g, "auc", method=label)
            if v.size:
                out[cid] = v
    return out
