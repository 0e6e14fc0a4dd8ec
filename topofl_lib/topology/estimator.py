"""scikit-learn style transformer: point clouds -> pTopoFL descriptors."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from .._validation import check_bool, check_choice, check_int, check_random_state
from .descriptor import H1_GRIDS, descriptor_names, topological_descriptor
from .inputs import check_clouds, check_fitted_dimension, common_dimension
from .persistence import PERSISTENCE_METHODS

__all__ = ["TopologicalDescriptor"]


class TopologicalDescriptor(TransformerMixin, BaseEstimator):
    """Map each point cloud (one client's data) to its ``8 + 2 L`` descriptor.

    Each *sample* seen by this transformer is a whole point cloud: ``X`` is a
    sequence of arrays of shape ``(n_points_k, n_features)``, and ``transform``
    returns an array of shape ``(len(X), 8 + 2 * n_thresholds)``.

    Parameters
    ----------
    n_sub : int or None, default=80
        Points subsampled per cloud before persistence (``None``: all points; a cloud
        whose persistence would not fit in memory is refused with a safe ``n_sub``).
    n_thresholds : int, default=20
        Betti-curve resolution ``L``.
    persistence : {"ripser", "triangle"}, default="ripser"
        Exact Vietoris–Rips persistence, or the paper's triangle approximation.
    h1_grid : {"own", "h0"}, default="own"
        Threshold grid of the H1 Betti curve, see
        :mod:`topofl_lib.topology.descriptor`.
    strict : bool, default=True
        Raise when a cloud has fewer than ``n_sub`` points (else use all of them).
    random_state : None, int or numpy.random.Generator
        Seeds the subsample. With an int every cloud is subsampled with a fresh
        generator seeded by it, so a cloud's descriptor does not depend on its
        position in ``X``.

    Attributes
    ----------
    n_features_in_ : int
        Dimension of the points seen in ``fit``; ``transform`` requires the same.
    feature_names_out_ : list of str
        Names of the descriptor entries.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> clouds = [rng.normal(size=(100, 3)), rng.normal(size=(120, 3))]
    >>> TopologicalDescriptor(random_state=0).fit_transform(clouds).shape
    (2, 48)
    """

    def __init__(self, n_sub=80, n_thresholds=20, persistence="ripser", h1_grid="own",
                 strict=True, random_state=None):
        self.n_sub = n_sub
        self.n_thresholds = n_thresholds
        self.persistence = persistence
        self.h1_grid = h1_grid
        self.strict = strict
        self.random_state = random_state

    def _check_params(self) -> None:
        """Validate the parameters (called by ``fit``; not scikit-learn's
        ``_validate_params``)."""
        if self.n_sub is not None:
            check_int(self.n_sub, "n_sub", low=2)
        check_int(self.n_thresholds, "n_thresholds", low=2)
        check_choice(self.persistence, "persistence", PERSISTENCE_METHODS)
        check_choice(self.h1_grid, "h1_grid", H1_GRIDS)
        check_bool(self.strict, "strict")
        check_random_state(self.random_state)

    def fit(self, X, y=None):
        """Validate the parameters and record the point dimension.

        Parameters
        ----------
        X : list of array-like of shape (n_i, d)
            Point clouds (``transform``'s input).
        y : None
            Ignored (scikit-learn's API).

        Returns
        -------
        self
        """
        self._check_params()
        self.n_features_in_ = common_dimension(check_clouds(X))
        self.feature_names_out_ = descriptor_names(self.n_thresholds)
        return self

    def transform(self, X) -> np.ndarray:
        """Descriptors of the clouds in ``X``, shape ``(len(X), 8 + 2 L)``."""
        check_fitted_dimension(self)  # an unfitted transformer raises before X is read
        clouds = check_clouds(X)
        check_fitted_dimension(self, clouds)
        seed = self.random_state
        shared = seed if isinstance(seed, np.random.Generator) else None
        return np.vstack([
            topological_descriptor(
                c, self.n_sub, n_thresholds=self.n_thresholds, persistence=self.persistence,
                h1_grid=self.h1_grid, strict=self.strict,
                random_state=shared if shared is not None else seed,
                name=f"X[{i}] (client {i})",
            )
            for i, c in enumerate(clouds)
        ])

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the descriptor entries."""
        return np.asarray(descriptor_names(self.n_thresholds), dtype=object)
