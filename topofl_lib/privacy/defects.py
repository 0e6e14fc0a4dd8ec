"""Planted defects of client-level DP: the positive controls of an audit.

An audit that never fires proves nothing. These options are :class:`ClientLevelDP` with
one thing broken, and they account as the correct option does, so an audit run through
their own code (:func:`~topofl_lib.privacy.audit.client_dp_audit`) must certify more
than they account: the check "no audit bound above the accounted epsilon" can fail.
Never use them to train.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, check_choice
from .model_channel import ClientLevelDP

__all__ = ["DEFECTS", "planted_defect"]

#: The planted defects: the noise drawn at a tenth of the noise accounted, and the
#: updates summed unclipped (the noise right).
DEFECTS = ("noise/10", "no clipping")


class _TooLittleNoise(ClientLevelDP):
    """Draws a tenth of the noise it accounts."""

    @property
    def noise_scale(self) -> float:
        return super().noise_scale / 10


class _NoClipping(ClientLevelDP):
    """Sums the updates unclipped; the noise is the correct option's."""

    def noisy_sum(self, updates, weights, rng: np.random.Generator) -> np.ndarray:
        updates = as_float_array(updates, "updates")
        weights = as_float_array(weights, "weights")
        return weights @ updates + rng.normal(scale=self.noise_scale, size=updates.shape[1])


def planted_defect(dp: ClientLevelDP, defect: str) -> ClientLevelDP:
    """``dp`` with ``defect`` planted (its parameters, and so its accounting, unchanged).

    Parameters
    ----------
    dp : ClientLevelDP
        The correct option.
    defect : {"noise/10", "no clipping"}
        What to break (:data:`DEFECTS`).

    Returns
    -------
    ClientLevelDP
    """
    if not isinstance(dp, ClientLevelDP):
        raise TypeError(f"dp must be a ClientLevelDP, got {dp!r}")
    check_choice(defect, "defect", DEFECTS)
    kind = _TooLittleNoise if defect == "noise/10" else _NoClipping
    return kind(**dp.get_params())
