"""The catalogue of this package's algorithms, registered by name, and :func:`make_method`.

Each algorithm registers itself when its module is imported
(:func:`topofl_lib.core.register_method`), so a class imported on its own can be stored and
found by name. Methods defined above this layer register
themselves in the same way, or are found through a ``topofl_lib.methods`` entry point
(``"FedTopo"``: :class:`topofl_lib.fedtopo.FedTopo`), so this module names none of them.
"""

from __future__ import annotations

from ..core.registry import get_method
from .base import FederatedAlgorithm
from .fedavg import FedAvg, FedProx
from .fedavgm import FedAvgM
from .fedccfa import FedCCFA
from .feddc import FedDC
from .feddyn import FedDyn
from .fedfm import FedFM
from .fednova import FedNova
from .fedpac import FedPAC
from .local_only import LocalOnly
from .moon import Moon
from .pfedme import PFedMe
from .ptopofl import PTopoFL
from .robust import CoordinateMedian, Krum, TrimmedMean
from .scaffold import Scaffold

__all__ = ["ALL_METHODS", "FEDTOPO_BASELINES", "METHODS", "REFERENCE_METHODS",
           "REPRESENTATION_METHODS", "ROBUST_METHODS", "make_method"]

#: The paper's five methods (name as printed in the paper -> class).
METHODS: dict[str, type[FederatedAlgorithm]] = {
    cls.name: cls for cls in (PTopoFL, FedAvg, FedProx, Scaffold, PFedMe)
}
#: Byzantine-robust aggregation baselines from the literature.
ROBUST_METHODS: dict[str, type[FederatedAlgorithm]] = {
    cls.name: cls for cls in (CoordinateMedian, TrimmedMean, Krum)
}
#: FedTopo Table 1's other baselines (aggregation, regularisation and momentum methods).
FEDTOPO_BASELINES: dict[str, type[FederatedAlgorithm]] = {
    cls.name: cls for cls in (FedAvgM, FedNova, FedDyn, FedDC)
}
#: Reference baselines outside the paper's comparison (Local-only: no federation).
REFERENCE_METHODS: dict[str, type[FederatedAlgorithm]] = {LocalOnly.name: LocalOnly}
#: FedTopo's representation-alignment baselines. They need a network (``model=``), so
#: they are registered but kept out of :data:`ALL_METHODS`, whose methods also fit the
#: logistic model.
REPRESENTATION_METHODS: dict[str, type[FederatedAlgorithm]] = {
    cls.name: cls for cls in (Moon, FedFM, FedPAC, FedCCFA)
}
#: Every algorithm of this package.
ALL_METHODS = {**METHODS, **ROBUST_METHODS, **FEDTOPO_BASELINES, **REFERENCE_METHODS}


def make_method(name: str, **params) -> FederatedAlgorithm:
    """Instantiate a registered algorithm by its name.

    Parameters
    ----------
    name : str
        ``"pTopoFL"``, ``"FedAvg"``, ... (:data:`ALL_METHODS`), or a plug-in's name
        (``"FedTopo"``); :func:`topofl_lib.core.method_names` lists them all.
    **params
        The algorithm's parameters.

    Returns
    -------
    FederatedAlgorithm
        An unfitted estimator.

    Examples
    --------
    >>> from topofl_lib import make_method
    >>> make_method("FedProx", n_rounds=5, mu=0.01)
    FedProx(mu=0.01, n_rounds=5)
    """
    return get_method(name)(**params)
