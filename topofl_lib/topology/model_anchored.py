r"""A model-anchored topological descriptor: persistence of the shared model's margins.

Flipping all of a client's labels is an isometry of its (features, label) cloud, so no
isometry-invariant summary of the client's own data can see it. Every client does
share one thing: the model the server broadcast. Under that model each record has a
signed margin (:func:`anchor_margins`): positive when the model prefers the record's
label, negative when it prefers another. This descriptor summarises that function on
the client's records:

Filtration
    :math:`f_i = \sigma(\text{margin}_i) \in (0, 1)`, the logistic function of the
    margin, filtered by sublevel sets on the flag complex of the records'
    ``n_neighbors``-nearest-neighbour graph (exact lower-star H0 and H1,
    :mod:`topofl_lib.topology.lower_star`). Records the model gets wrong enter first.
    Because every client evaluates the *same* model, filtration values are comparable
    across clients, so the Betti curves use one fixed grid of ``L`` thresholds on
    ``[0, 1]`` (not the data-adaptive grid of the 48-dim descriptor, which would
    discard exactly the level information that tells an agreeing client from a
    disagreeing one). Essential classes count as alive to the end of the grid and
    have their death capped at 1 in the other statistics.
Layout
    ``[sublevel fraction (L) | per-point 48-dim statistics of [H0, H1] (8 + 2 L)]``.
    The sublevel fraction at threshold ``t`` is the fraction of records with
    :math:`f_i \le t` (the Betti-0 curve of the vertices alone, i.e. the distribution of
    the margins); the persistence statistics add how the low-margin records are
    arranged in feature space (a few isolated records, or whole regions).
    ``sublevel_fraction=False`` drops the first block.
Margins (:func:`anchor_margins`)
    Logistic regression: the *geometric* margin
    :math:`s_i (w^\top x_i + b) / \|w\|_2`, :math:`s_i = 2 y_i - 1`, the signed distance to
    the model's decision boundary. It does not depend on the scale of ``w``, so an
    early, small model anchors as well as a late one. A torch network: the logit
    margin :math:`z_{y_i} - \max_{c \ne y_i} z_c`. The points of the graph are the
    features for logistic regression and the penultimate activations of the *same*
    model for a network (:func:`anchor_points`).

Invariances: the descriptor is invariant to permuting the records and to isometries of
the points (the graph and the function are); relabelling the classes consistently in
the data *and* the model (permuting the output units) leaves every margin unchanged.
It is *not* invariant to a label flip against a fixed model: a flip negates a binary
record's margin, and the descriptor changes (tested).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, TransformerMixin

from .._validation import (
    as_float_array,
    check_bool,
    check_finite,
    check_int,
    check_labels,
    check_points,
    check_random_state,
)
from .descriptor import canonical_subsample
from .inputs import check_client_pairs, check_fitted_dimension, common_dimension
from .lower_star import knn_edges, lower_star_diagrams
from .summaries import per_point_summary, summary_names

__all__ = [
    "ModelAnchoredDescriptor",
    "anchor_margins",
    "anchor_points",
    "check_model_anchored_params",
    "model_anchored_descriptor",
    "model_anchored_names",
]


def anchor_margins(learner, w, X, y) -> np.ndarray:
    """Signed margin of every record's true label under the model ``w``.

    Parameters
    ----------
    learner : LogisticLearner or TorchLearner
        The model class (:mod:`topofl_lib.federated.local`, :mod:`topofl_lib.deep`).
    w : ndarray
        Flat parameter vector (the broadcast model).
    X : array-like (n, d)
        Raw features (what the learner's model takes).
    y : array-like (n,)
        Labels.

    Returns
    -------
    ndarray of shape (n,)
        Geometric margin for logistic regression (0 when ``w`` has no direction yet),
        logit margin for a network (module docstring).
    """
    X = check_points(X)
    n_classes = getattr(learner, "n_classes", 2)
    y = check_labels(y, X.shape[0], require_both=False, n_classes=n_classes)
    if hasattr(learner, "logits"):
        z = learner.logits(w, X).astype(np.float64)
        true = z[np.arange(y.size), y]
        z[np.arange(y.size), y] = -np.inf
        return true - z.max(axis=1)
    w = check_finite(as_float_array(w, "w"), "w")
    if w.shape != (X.shape[1] + 1,):
        raise ValueError(f"w must have {X.shape[1] + 1} entries (weights, bias), got {w.shape}")
    norm = np.linalg.norm(w[:-1])
    if norm == 0:
        return np.zeros(y.size)
    return (2.0 * y - 1.0) * (X @ w[:-1] + w[-1]) / norm


def anchor_points(learner, w, X) -> np.ndarray:
    """The points of the client's graph: the learner's representation of ``X`` under ``w``.

    Parameters
    ----------
    learner : Learner
        The model class's learner (:class:`topofl_lib.core.Learner`).
    w : ndarray
        The broadcast model's flat parameters.
    X : ndarray of shape (n, d)
        The client's features.

    Returns
    -------
    ndarray of float64, shape (n, m)
    """
    return np.asarray(learner.representation(w, X), dtype=np.float64)


def model_anchored_names(n_thresholds: int = 20, sublevel_fraction: bool = True,
                         prefix: str = "") -> list[str]:
    """Names of the entries of :func:`model_anchored_descriptor`.

    Parameters
    ----------
    n_thresholds, sublevel_fraction
        As in :func:`model_anchored_descriptor`.
    prefix : str, default=""
        Put before every name.

    Returns
    -------
    list of str
    """
    check_model_anchored_params(n_thresholds=n_thresholds, sublevel_fraction=sublevel_fraction)
    head = ([f"{prefix}sublevel_fraction_{i}" for i in range(n_thresholds)]
            if sublevel_fraction else [])
    return head + summary_names(n_thresholds, prefix + "margin_")


def check_model_anchored_params(n_neighbors=15, n_sub=80, n_thresholds=20,
                                sublevel_fraction=True, random_state=None) -> None:
    """Validate the parameters of :func:`model_anchored_descriptor` (and of
    :class:`ModelAnchoredDescriptor`, whose ``get_params()`` they are).

    Raises ``ValueError``/``TypeError`` naming the first bad parameter; draws nothing
    from a ``random_state`` generator.

    Parameters
    ----------
    n_neighbors, n_sub, n_thresholds, sublevel_fraction, random_state
        As in :func:`model_anchored_descriptor`.
    """
    check_int(n_neighbors, "n_neighbors", low=1)
    if n_sub is not None:
        check_int(n_sub, "n_sub", low=2)
    check_int(n_thresholds, "n_thresholds", low=2)
    check_bool(sublevel_fraction, "sublevel_fraction")
    check_random_state(random_state)


def model_anchored_descriptor(
    points,
    margins,
    *,
    n_neighbors: int = 15,
    n_sub: int | None = 80,
    n_thresholds: int = 20,
    sublevel_fraction: bool = True,
    random_state=None,
) -> np.ndarray:
    """The model-anchored descriptor of one client.

    Parameters
    ----------
    points : array-like of shape (n_records, n_dims)
        The client's records as points (features, or a network's activations).
    margins : array-like of shape (n_records,)
        The broadcast model's signed margin of each record (:func:`anchor_margins`).
    n_neighbors : int
        ``k`` of the nearest-neighbour graph.
    n_sub : int or None
        Records kept (canonical subsample of the points); ``None``: all.
    n_thresholds : int
        ``L``, thresholds of the fixed grid on [0, 1].
    sublevel_fraction : bool
        Prepend the fraction of records in each sublevel set.
    random_state : None, int or Generator
        Seeds the subsample.

    Returns
    -------
    numpy.ndarray of shape (L [sublevel_fraction] + 8 + 2 L,)
    """
    P = check_points(points, "points", min_points=2)
    m = as_float_array(margins, "margins")
    if m.shape != (P.shape[0],):
        raise ValueError(f"margins must have shape ({P.shape[0]},), got {m.shape}")
    check_finite(m, "margins")
    check_model_anchored_params(n_neighbors, n_sub, n_thresholds, sublevel_fraction,
                                random_state)
    if n_sub is not None and P.shape[0] > n_sub:
        keep = canonical_subsample(P, n_sub, check_random_state(random_state))
        P, m = P[keep], m[keep]
    f = expit(m)
    grid = np.linspace(0.0, 1.0, n_thresholds)
    dgms = lower_star_diagrams(f, knn_edges(P, n_neighbors))
    summary = per_point_summary(dgms, f.size, [grid, grid], n_essential=(0, 0), cap=1.0)
    if not sublevel_fraction:
        return summary
    fraction = (f[None, :] <= grid[:, None]).mean(axis=1)
    return np.concatenate([fraction, summary])


class ModelAnchoredDescriptor(TransformerMixin, BaseEstimator):
    """Map each client's ``(points, margins)`` to its model-anchored descriptor.

    Each *sample* is one client: ``X`` is a sequence of pairs ``(points_k, margins_k)``,
    the margins computed by the client under the broadcast model (:func:`anchor_margins`;
    points from :func:`anchor_points`). With an int ``random_state`` every client is
    seeded by it.

    Parameters
    ----------
    n_neighbors, n_sub, n_thresholds, sublevel_fraction, random_state
        As in :func:`model_anchored_descriptor`.

    Attributes
    ----------
    n_features_in_ : int
        Dimension of the points seen in ``fit``.
    feature_names_out_ : list of str

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> pts = rng.normal(size=(50, 3))
    >>> ModelAnchoredDescriptor(random_state=0).fit_transform([(pts, pts[:, 0])]).shape
    (1, 68)
    """

    def __init__(self, n_neighbors=15, n_sub=80, n_thresholds=20, sublevel_fraction=True,
                 random_state=None):
        self.n_neighbors = n_neighbors
        self.n_sub = n_sub
        self.n_thresholds = n_thresholds
        self.sublevel_fraction = sublevel_fraction
        self.random_state = random_state

    def _check_params(self) -> None:
        """Validate the parameters (called by ``fit``; not scikit-learn's
        ``_validate_params``)."""
        check_model_anchored_params(**self.get_params())

    def fit(self, X, y=None):
        """Validate the parameters and record the dimension of the points.

        Parameters
        ----------
        X : list of (points, margins) pairs
            The clients (``transform``'s input).
        y : None
            Ignored (scikit-learn's API).

        Returns
        -------
        self
        """
        self._check_params()
        clients = check_client_pairs(X, "margins")
        self.n_features_in_ = common_dimension([p for p, _ in clients], "clients")
        self.feature_names_out_ = model_anchored_names(self.n_thresholds,
                                                       self.sublevel_fraction)
        return self

    def transform(self, X) -> np.ndarray:
        """Descriptors of the clients in ``X``."""
        check_fitted_dimension(self)  # an unfitted transformer raises before X is read
        clients = check_client_pairs(X, "margins")
        check_fitted_dimension(self, [p for p, _ in clients])
        return np.vstack([model_anchored_descriptor(P, m, **self.get_params())
                          for P, m in clients])

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the descriptor entries."""
        return np.asarray(model_anchored_names(self.n_thresholds, self.sublevel_fraction),
                          dtype=object)
