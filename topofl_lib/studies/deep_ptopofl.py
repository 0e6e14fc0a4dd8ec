"""pTopoFL's deep experiments (Table 2) on offline stand-ins: their claim ids.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claim_keys import METHOD_KEYS
from ..results import load_paper_claims

__all__ = ["DEEP_STAND_INS", "deep_claim_values"]

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
