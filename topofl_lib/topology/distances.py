r"""Distances between clients' topological summaries.

``"l2"``
    What the pTopoFL paper implements (Sec. 3.3, Algorithm 1):
    :math:`D_{ij} = \|\hat\phi_i - \hat\phi_j\|_2` with :math:`\hat\phi = \phi/\|\phi\|_2`.
``"wasserstein"``
    What its abstract claims ("clustered by Wasserstein similarity between their PH
    diagrams"): :math:`D_{ij} = \sum_{q \in \{0, 1\}} W_1(\text{Dgm}_q(i), \text{Dgm}_q(j))`,
    computed by :func:`persim.wasserstein`. It needs the diagrams themselves, so a server
    using it receives more than the 48-dim descriptor.

The diagram distance (:data:`WASSERSTEIN`) is persim's: the **1-Wasserstein distance with
the Euclidean ground metric**. Matching a point :math:`(b, d)` to a point :math:`(b', d')`
costs their Euclidean distance :math:`\sqrt{(b - b')^2 + (d - d')^2}`, and matching it to
the diagonal costs its Euclidean distance to the diagonal, :math:`(d - b)/\sqrt{2}` (it
goes to its projection :math:`((b + d)/2, (b + d)/2)`); :math:`W_1` is the least total
cost over all matchings, the costs summed to the power 1 (not squared, not the
:math:`L_\infty` ground metric). Points that die at infinity are left out.
``tests/test_descriptor.py`` pins it on two diagrams whose distance is worked out by hand.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

from .._validation import check_points, l2_norm
from .descriptor import check_diagrams

__all__ = ["DISTANCES", "WASSERSTEIN", "descriptor_distances", "diagram_distances",
           "normalise_descriptors"]

DISTANCES = ("l2", "wasserstein")

#: The name of the diagram distance :func:`persim.wasserstein` computes (module docstring).
WASSERSTEIN = "1-Wasserstein distance (Euclidean ground metric)"


def normalise_descriptors(Phi) -> np.ndarray:
    """Rows of ``Phi`` divided by their l2 norm (zero rows stay zero)."""
    Phi = check_points(Phi, "Phi")
    norms = l2_norm(Phi, axis=1, keepdims=True)
    return np.divide(Phi, norms, out=np.zeros_like(Phi), where=norms > 0)


def descriptor_distances(Phi) -> np.ndarray:
    """Pairwise Euclidean distances between l2-normalised descriptors (K x K)."""
    P = normalise_descriptors(Phi)
    return cdist(P, P)


def diagram_distances(diagrams: list[list[np.ndarray]]) -> np.ndarray:
    """Pairwise sum over H0 and H1 of persim's 1-Wasserstein distance (K x K).

    The distance is :data:`WASSERSTEIN` (Euclidean ground metric; module docstring).

    Parameters
    ----------
    diagrams : list of [H0, H1]
        Finite diagrams, one entry per client.
    """
    import persim  # imports matplotlib (0.3 s): only the Wasserstein distance needs it

    checked = [check_diagrams(d, f"diagrams[{k}]") for k, d in enumerate(diagrams)]
    K = len(checked)
    D = np.zeros((K, K))
    for i in range(K):
        for j in range(i + 1, K):
            d = sum(persim.wasserstein(checked[i][q], checked[j][q]) for q in (0, 1))
            D[i, j] = D[j, i] = d
    return D
