r"""A class-conditional topological descriptor: persistence that sees labels.

The 48-dim descriptor of pTopoFL summarises a client's *features* only, so nothing a
client does to its labels can move it. This descriptor summarises the client's labelled
data ``(X, y)`` in blocks, each the per-point form of the 48-dim statistics
(:func:`~topofl_lib.topology.summaries.per_point_summary`) of exact Vietoris–Rips
persistence (ripser) on a canonical subsample of at most ``n_sub`` points
(:func:`~topofl_lib.topology.descriptor.canonical_subsample`):

``joint`` block (``8 + 2 L``)
    The cloud of features and a scaled label coordinate,
    :math:`z_i = (x_i, \lambda r\, e_{y_i} / \sqrt 2)`, with :math:`e_c` the one-hot vector
    of class ``c``, :math:`r` the root-mean-square distance of the client's points to their
    centroid and :math:`\lambda` = ``label_scale``: two records with different labels are
    at least :math:`\lambda r` apart. ``label_scale=0`` gives the features-only cloud.
one block per class (``n_classes`` x ``(8 + 2 L)``, if ``class_blocks``)
    The persistence of the records of class ``c``, multiplied by ``class_weight``. A
    class with fewer than ``min_class_size`` records (absent classes included) gets a
    block of zeros: the documented fallback, so clients of any label distribution have
    a descriptor of the same length.
class proportions (``n_classes``, if ``proportions``)
    The fraction of records in each class.

What it sees and what it cannot
    Everything here is invariant to permuting the records and to isometries of the
    feature space (rotations, reflections, translations). Relabelling the classes by a
    permutation :math:`\pi` leaves the joint block unchanged (it permutes the one-hot
    axes, an isometry) and permutes the class blocks and proportions by :math:`\pi`, so
    pairwise distances between clients relabelled *consistently* are unchanged.
    Flipping all of a binary client's labels is such a relabelling of one client only:
    the joint block cannot see it (a reflection of the label axis), and the class blocks
    see it only through differences between the two classes' shapes; class proportions
    see it when the label marginal is asymmetric. Partial flips and label skew change
    the joint cloud and the class clouds.

Privacy: the class blocks reveal which classes a client holds (the zero fallback) and,
weakly, their sizes; ``proportions=True`` releases the label marginal itself. Measure
before relying on either (the privacy notebook's attacks run on any descriptor).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from .._validation import (
    check_bool,
    check_int,
    check_labels,
    check_points,
    check_random_state,
    check_real,
    power_of_two_split,
)
from ..core.seeds import draw_seed
from .descriptor import canonical_subsample
from .inputs import check_client_pairs, check_fitted_dimension, common_dimension
from .persistence import persistence_diagrams
from .summaries import paper_grids, per_point_summary, summary_names

__all__ = [
    "ClassConditionalDescriptor",
    "check_class_conditional_params",
    "class_conditional_descriptor",
    "class_conditional_names",
    "rips_per_point",
]


def rips_per_point(X, n_sub: int | None, n_thresholds: int, seed: int) -> np.ndarray:
    """Per-point summary of the exact Rips persistence of ``X`` (canonical subsample).

    Parameters
    ----------
    X : array-like of shape (n, d)
        Points (at least 2).
    n_sub : int or None
        Subsample size (``min(n_sub, n)`` points); ``None``: every point.
    n_thresholds : int
        Points of each Betti-curve grid (:func:`~topofl_lib.topology.summaries.paper_grids`).
    seed : int
        Draws the subsample.

    Returns
    -------
    ndarray
        One summary row per point of the (sub)sample
        (:func:`~topofl_lib.topology.summaries.per_point_summary`).
    """
    X = check_points(X, min_points=2)
    if n_sub is not None and X.shape[0] > n_sub:
        X = X[canonical_subsample(X, n_sub, np.random.default_rng(seed))]
    dgms = persistence_diagrams(X)
    return per_point_summary(dgms, X.shape[0], paper_grids(dgms, n_thresholds))


def class_conditional_names(n_classes: int, n_thresholds: int = 20, class_blocks: bool = True,
                            proportions: bool = False) -> list[str]:
    """Names of the entries of :func:`class_conditional_descriptor`.

    Parameters
    ----------
    n_classes, n_thresholds, class_blocks, proportions
        As in :func:`class_conditional_descriptor`.

    Returns
    -------
    list of str
    """
    check_class_conditional_params(n_classes=n_classes, n_thresholds=n_thresholds,
                                   class_blocks=class_blocks, proportions=proportions)
    names = summary_names(n_thresholds, "joint_")
    if class_blocks:
        for c in range(n_classes):
            names += summary_names(n_thresholds, f"class{c}_")
    if proportions:
        names += [f"proportion_{c}" for c in range(n_classes)]
    return names


def check_class_conditional_params(n_classes=2, label_scale=0.5, class_blocks=True,
                                   class_weight=0.3, proportions=False, n_sub=80,
                                   n_thresholds=20, min_class_size=5,
                                   random_state=None) -> None:
    """Validate the parameters of :func:`class_conditional_descriptor` (and of
    :class:`ClassConditionalDescriptor`, whose ``get_params()`` they are).

    Raises ``ValueError``/``TypeError`` naming the first bad parameter; draws nothing
    from a ``random_state`` generator.

    Parameters
    ----------
    n_classes, label_scale, class_blocks, class_weight, proportions
        As in :func:`class_conditional_descriptor`.
    n_sub, n_thresholds, min_class_size, random_state
        As in :func:`class_conditional_descriptor`.
    """
    check_int(n_classes, "n_classes", low=2)
    check_real(label_scale, "label_scale", low=0.0)
    check_bool(class_blocks, "class_blocks")
    check_real(class_weight, "class_weight", low=0.0)
    check_bool(proportions, "proportions")
    if n_sub is not None:
        check_int(n_sub, "n_sub", low=2)
    check_int(n_thresholds, "n_thresholds", low=2)
    check_int(min_class_size, "min_class_size", low=2)
    check_random_state(random_state)


def _seed(random_state) -> int:
    """One int seed, so every block draws its subsample from the same stream."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return draw_seed(check_random_state(random_state), high=2**32 - 1)


def class_conditional_descriptor(
    X,
    y,
    n_classes: int = 2,
    *,
    label_scale: float = 0.5,
    class_blocks: bool = True,
    class_weight: float = 0.3,
    proportions: bool = False,
    n_sub: int | None = 80,
    n_thresholds: int = 20,
    min_class_size: int = 5,
    random_state=None,
) -> np.ndarray:
    """The class-conditional descriptor of one client's labelled data.

    Parameters
    ----------
    X : array-like of shape (n_records, n_features)
        Finite features (at least 2 records).
    y : array-like of shape (n_records,)
        Labels in ``0..n_classes-1`` (a client may miss classes).
    n_classes : int
        Number of classes of the federation (fixes the descriptor's length).
    label_scale : float >= 0
        :math:`\\lambda` of the joint block (module docstring).
    class_blocks : bool
        Include one block per class.
    class_weight : float >= 0
        Multiplier of the class blocks (their weight against the joint block once the
        server l2-normalises the whole vector).
    proportions : bool
        Append the class proportions (releases the label marginal).
    n_sub : int or None
        Points per persistence computation (canonical subsample); ``None``: all.
    n_thresholds : int
        Betti-curve resolution ``L``.
    min_class_size : int
        Classes with fewer records get the zero block.
    random_state : None, int or Generator
        Seeds the subsamples; every block draws from a fresh generator with one seed,
        so a class's block does not depend on the other classes.

    Returns
    -------
    numpy.ndarray
        Length ``(8 + 2 L) (1 + n_classes [class_blocks]) + n_classes [proportions]``;
        names from :func:`class_conditional_names`.
    """
    X = check_points(X, min_points=2)
    check_class_conditional_params(n_classes, label_scale, class_blocks, class_weight,
                                   proportions, n_sub, n_thresholds, min_class_size,
                                   random_state)
    y = check_labels(y, X.shape[0], require_both=False, n_classes=n_classes)
    seed = _seed(random_state)
    U, e = power_of_two_split(X - X.mean(axis=0))  # no overflow of the squares
    radius = float(np.ldexp(np.sqrt((U**2).sum(axis=1).mean()), int(e.item())))
    onehot = np.eye(n_classes)[y] * (label_scale * radius / np.sqrt(2.0))
    blocks = [rips_per_point(np.hstack([X, onehot]), n_sub, n_thresholds, seed)]
    width = blocks[0].size
    if class_blocks:
        for c in range(n_classes):
            Xc = X[y == c]
            blocks.append(class_weight * rips_per_point(Xc, n_sub, n_thresholds, seed)
                          if Xc.shape[0] >= min_class_size else np.zeros(width))
    if proportions:
        blocks.append(np.bincount(y, minlength=n_classes) / y.size)
    return np.concatenate(blocks)


class ClassConditionalDescriptor(TransformerMixin, BaseEstimator):
    """Map each client's labelled data ``(X_k, y_k)`` to its class-conditional descriptor.

    Each *sample* is one client: ``X`` is a sequence of ``(features, labels)`` pairs and
    ``transform`` returns an array of shape ``(len(X), n_descriptor)``. With an int
    ``random_state`` every client is seeded by it (a client's descriptor does not
    depend on its position).

    Parameters
    ----------
    n_classes, label_scale, class_blocks, class_weight, proportions
        As in :func:`class_conditional_descriptor`.
    n_sub, n_thresholds, min_class_size, random_state
        As in :func:`class_conditional_descriptor`.

    Attributes
    ----------
    n_features_in_ : int
        Feature dimension seen in ``fit``.
    feature_names_out_ : list of str

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> clients = [(rng.normal(size=(60, 3)), rng.integers(0, 2, 60)) for _ in range(2)]
    >>> ClassConditionalDescriptor(random_state=0).fit_transform(clients).shape
    (2, 144)
    """

    def __init__(self, n_classes=2, label_scale=0.5, class_blocks=True, class_weight=0.3,
                 proportions=False, n_sub=80, n_thresholds=20, min_class_size=5,
                 random_state=None):
        self.n_classes = n_classes
        self.label_scale = label_scale
        self.class_blocks = class_blocks
        self.class_weight = class_weight
        self.proportions = proportions
        self.n_sub = n_sub
        self.n_thresholds = n_thresholds
        self.min_class_size = min_class_size
        self.random_state = random_state

    def _params(self) -> dict:
        return {k: getattr(self, k) for k in (
            "label_scale", "class_blocks", "class_weight", "proportions", "n_sub",
            "n_thresholds", "min_class_size")}

    def _check_params(self) -> None:
        """Validate the parameters (called by ``fit``; not scikit-learn's
        ``_validate_params``)."""
        check_class_conditional_params(**self.get_params())

    def _clients(self, X) -> list[tuple[np.ndarray, np.ndarray]]:
        return check_client_pairs(X, "labels", self.n_classes)

    def fit(self, X, y=None):
        """Validate the parameters and record the feature dimension.

        Parameters
        ----------
        X : list of (points, labels) pairs
            The clients (``transform``'s input).
        y : None
            Ignored (scikit-learn's API).

        Returns
        -------
        self
        """
        self._check_params()
        self.n_features_in_ = common_dimension([p for p, _ in self._clients(X)], "clients")
        self.feature_names_out_ = class_conditional_names(
            self.n_classes, self.n_thresholds, self.class_blocks, self.proportions)
        return self

    def transform(self, X) -> np.ndarray:
        """Descriptors of the clients in ``X``."""
        check_fitted_dimension(self)  # an unfitted transformer raises before X is read
        clients = self._clients(X)
        check_fitted_dimension(self, [p for p, _ in clients])
        return np.vstack([
            class_conditional_descriptor(Xk, yk, self.n_classes, **self._params(),
                                         random_state=self.random_state)
            for Xk, yk in clients
        ])

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the descriptor entries."""
        return np.asarray(class_conditional_names(
            self.n_classes, self.n_thresholds, self.class_blocks, self.proportions),
            dtype=object)
