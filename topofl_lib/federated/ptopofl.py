r"""pTopoFL (Algorithm 1 of the paper) for logistic-regression clients.

Round 0 (in ``fit``, before training): every client computes its topological
descriptor :math:`\phi_k` from its training features; the server forms
:math:`D_{ij}` (l2 distance of normalised descriptors, or the diagrams' 1-Wasserstein),
clusters the clients into ``n_clusters`` groups (average linkage) and computes trust
weights (Eq. 8, threshold ``tau``). Each round, every client trains from its own
cluster's blended model; the server aggregates within clusters with Eq. 6 weights and
blends with the consensus (Eq. 7, ``beta``).

Feature augmentation (Sec. 3.2, ``augment=True``): four columns are appended to each
client's features: the distance of the sample to the client's training centroid
(divided by :math:`\sqrt d`), the H0 and H1 persistence entropies (divided by
:math:`\log m`, m the number of points in the persistence computation), and the
Betti-0 number at the median H0 death scale (divided by m). The last three are
constant within a client. Note that the Betti-0 number at the median H0 death is
about m/2 by construction, so that column carries almost no information; we keep it
because the paper specifies it.

Signature tracking (Sec. 3.5, ``track_signatures=True``): Algorithm 1 has every client
compute its descriptor in every round; ``signatures_[r]`` records them and ``drift_`` is
Eq. 9 on l2-normalised descriptors. Each client draws its persistence subsample with its
own fixed seed, so its descriptor changes only when its data change: drift measures
distribution change, not subsampling noise. A client whose data are unchanged since the
last round reuses its descriptor (a cache keyed by a hash of the data), so with static
data (Scenarios A/B) tracking is free and the drift is exactly 0.

What the clients send is the descriptor *and their model* (Algorithm 1: "Transmit
phi_k and theta_k"); with ``distance="wasserstein"`` they also send their persistence
diagrams. So pTopoFL does not remove the model-update channel that gradient-inversion
attacks use; see the privacy notebook.

Deep models (``model=TorchModel(...)``, the paper's Scenarios C/D): a client's
descriptor summarises the *penultimate-layer activations* of ``n_sub`` of its samples
(paper: 200, drawn with the client's fixed seed) under the model it currently holds:
the initial global model in round 0, its cluster's model when signatures are tracked.
Feature augmentation is defined for tabular features only, so ``augment`` must be
False with a network.

Differentially private descriptors (``descriptor_mechanism``): each client releases
``mechanism.release(phi / ||phi||)`` once, in round 0, and the server sees only that
(:mod:`topofl_lib.privacy.mechanisms`). Signature tracking is then off, since every
further release would spend more privacy budget. A model-dependent label-aware
descriptor is released (through the mechanism) after every round.

Differentially private models (``model_dp``, :mod:`topofl_lib.privacy.model_channel`):
with client-level DP each cluster's model moves by the noisy sum of its members' clipped
updates; the weights are Eq. 6's without the size factor :math:`n_k` (the one factor
that is unbounded), divided by their largest value in the cluster, so each lies in
(0, 1] and no client's share of the sum exceeds one clipped update. They depend only on
the released descriptors, so adversaries keep their Eq. 8 down-weighting. ``weights_``
(and ``consensus_weights_``, ``weight_history_``) then report these size-free weights,
normalised within each cluster: each client's share of its cluster's update (in
expectation under client sampling), i.e. the weights the noisy sums used. Eq. 7
blending follows, unchanged. With sample-level DP the clients train by DP-SGD and the
aggregation is the usual one. Each client's accountant records its descriptor releases
too (an unprotected one, with infinite epsilon, when no ``descriptor_mechanism``
noises them), so the run's epsilon covers both channels.
"""

from __future__ import annotations

import hashlib
from functools import partial

import numpy as np

from .._validation import (
    as_float_array,
    check_bool,
    check_choice,
    check_finite,
    check_int,
    check_real,
)
from ..core.registry import register_method
from ..core.seeds import draw_seed
from ..topology.descriptor import H1_GRIDS, client_topology
from ..topology.distances import DISTANCES, diagram_distances, normalise_descriptors
from ..topology.model_anchored import ModelAnchoredDescriptor
from ..topology.persistence import PERSISTENCE_METHODS
from . import client_descriptors as label_aware
from .aggregation import (
    aggregate_round,
    blend_clusters,
    consensus_model,
    server_state,
)
from .augmentation import augment_features, augmentation_stats
from .base import FederatedAlgorithm, client_streams
from .private_training import hooks_for

__all__ = ["PTopoFL", "augment_features", "augmentation_stats", "signature_drift"]


def signature_drift(signatures) -> np.ndarray:
    """Eq. 9 signature drift of each client (Sec. 3.5).

    ``signatures`` has shape (n_rounds, K, 48): the descriptors recorded each round. The
    drift of client ``k`` is the mean over rounds of the distance between its
    l2-normalised signature and its first one. Used by :class:`PTopoFL` and by the
    Flower strategy (:mod:`topofl_lib.flower`).
    """
    sig = as_float_array(signatures, "signatures")
    if sig.ndim != 3 or sig.shape[0] == 0:
        raise ValueError(f"signatures must have shape (n_rounds, K, dim), got {sig.shape}")
    check_finite(sig, "signatures")
    normed = np.stack([normalise_descriptors(s) for s in sig])
    return np.linalg.norm(normed - normed[0], axis=2).mean(axis=0)


@register_method
class PTopoFL(FederatedAlgorithm):
    """Personalised topology-aware FL.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`FederatedAlgorithm`.
    solver, evaluate_on, standardise, model_dp
        As in :class:`FederatedAlgorithm` (``model_dp``: as in :class:`FedAvg`, and the
        module docstring). With ``solver="lbfgs"`` every client fits its (augmented)
        local optimum each round, so the cluster models are the same in every round: the
        solver of the paper's released code.
    n_clusters : int, default=2
        ``M`` (paper: 2 for Scenarios A/B).
    beta : float, default=0.3
        Inter-cluster blending coefficient of Eq. 7.
    tau : float >= 0, default=2.0
        Anomaly z-score threshold of Eq. 8 (paper: 2.0 comparison, 1.8 robustness); see
        :func:`~topofl_lib.federated.trust_weights` for why it must be >= 0.
    distance : {"l2", "wasserstein"}, default="l2"
        Client distance used for clustering and trust.
    use_trust : bool, default=True
        If False all trust weights are 1 (ablation).
    augment : bool, default=True
        Sec. 3.2 feature augmentation.
    n_sub : int, default=80
        Points per client for persistence; smaller clients use all their points.
    n_thresholds, persistence, h1_grid
        Descriptor options (:func:`topofl_lib.topology.topological_descriptor`).
    track_signatures : bool, default=True
        Recompute descriptors every round and record drift (Sec. 3.5).
    drift_threshold : float or None, default=None
        Re-cluster (Sec. 3.5) when a client's drift statistic exceeds this. ``None``
        never re-clusters. Needs ``track_signatures``.
    drift_window : int, default=3
        The drift statistic of a client is the distance between the mean of its
        normalised signatures over the last ``drift_window`` rounds and their mean over
        the first ``drift_window`` rounds after the last clustering (averaging damps the
        round-to-round sampling noise of a client whose records are renewed each round).
    descriptor_mechanism : object, optional
        A DP mechanism (e.g. :class:`topofl_lib.privacy.GaussianMechanism`; its
        ``release(x, random_state)`` and ``privacy_event()``) applied to the normalised
        descriptors before the server sees them. Requires ``distance="l2"``.
    descriptor : {"paper", "class_conditional", "model_anchored"} or transformer
        What each client sends as phi_k: the paper's 48-dim descriptor
        (default, unchanged behaviour), or a label-aware one
        (:mod:`topofl_lib.federated.client_descriptors`; a
        :class:`~topofl_lib.topology.ClassConditionalDescriptor` or
        :class:`~topofl_lib.topology.ModelAnchoredDescriptor` instance sets its
        parameters). Clustering, Eq. 8 and Eq. 6 are unchanged; a model-anchored
        descriptor is recomputed against the broadcast models every round, after a
        warm-up round (one cluster, trust 1), and the clients are re-clustered on it
        (the schedule of :mod:`~topofl_lib.federated.client_descriptors`). Requires
        ``distance="l2"``.

    Attributes
    ----------
    descriptors_ : ndarray (K, 48), or (K, d) with a label-aware ``descriptor``
    distances_ : ndarray (K, K)
    labels_ : ndarray (K,)  cluster of each client
    trust_, z_scores_ : ndarray (K,)
    weights_ : ndarray (K,)  Eq. 6 weights (sum to 1 within each cluster); under
        client-level ``model_dp`` without the size factor, as the noisy sums use them
    cluster_models_ : ndarray (M, dim)  blended models after the last round
    signatures_ : ndarray (n_rounds, K, 48) or None
    drift_ : ndarray (K,) or None  Eq. 9 on normalised descriptors
    consensus_weights_ : ndarray (K,)  weight of each client in the consensus of Eq. 7,
        ``|C_j|/K * w_k`` (sums to 1); the "aggregation weight" of Theorem 5
    weight_history_ : ndarray (n_rounds, K)  ``consensus_weights_`` in each round
    local_models_ : ndarray (K, dim)  the models the clients returned in the last round
    drift_statistic_ : ndarray (n_rounds, K)  the drift statistic (NaN until defined)
    recluster_rounds_ : list of int  rounds (1-based) after which drift re-clustered

    Examples
    --------
    >>> from topofl_lib import PTopoFL, make_healthcare
    >>> scenario = make_healthcare(n_clients=4, n_adversarial=1, random_state=0)
    >>> est = PTopoFL(n_rounds=3, random_state=0).fit(scenario)
    >>> est.descriptors_.shape, est.labels_
    ((4, 48), array([0, 0, 0, 1]))
    >>> [c.adversarial for c in scenario.clients]
    [False, False, False, True]
    """

    name = "pTopoFL"

    def __init__(self, n_rounds=15, lr=0.1, local_epochs=2, batch_size=32, C=1.0,
                 n_clusters=2, beta=0.3, tau=2.0, distance="l2", use_trust=True,
                 descriptor="paper",
                 augment=True, n_sub=80, n_thresholds=20, persistence="ripser",
                 h1_grid="own", track_signatures=True, drift_threshold=None,
                 drift_window=3, descriptor_mechanism=None, model=None, random_state=None,
                 rng_streams="shared", solver="sgd", evaluate_on=None, standardise=None,
                 model_dp=None):
        super().__init__(n_rounds, lr, local_epochs, batch_size, C, model, random_state,
                         rng_streams, evaluate_on, standardise)
        self.n_clusters = n_clusters
        self.beta = beta
        self.tau = tau
        self.distance = distance
        self.use_trust = use_trust
        self.descriptor = descriptor
        self.augment = augment
        self.n_sub = n_sub
        self.n_thresholds = n_thresholds
        self.persistence = persistence
        self.h1_grid = h1_grid
        self.track_signatures = track_signatures
        self.drift_threshold = drift_threshold
        self.drift_window = drift_window
        self.descriptor_mechanism = descriptor_mechanism
        self.solver = solver
        self.model_dp = model_dp

    def _check_params(self):
        super()._check_params()
        check_int(self.n_clusters, "n_clusters", low=1)
        check_real(self.beta, "beta", low=0.0, high=1.0)
        check_real(self.tau, "tau", low=0.0)
        check_choice(self.distance, "distance", DISTANCES)
        check_int(self.n_sub, "n_sub", low=2)
        check_int(self.n_thresholds, "n_thresholds", low=2)
        check_choice(self.persistence, "persistence", PERSISTENCE_METHODS)
        check_choice(self.h1_grid, "h1_grid", H1_GRIDS)
        if self.drift_threshold is not None:
            check_real(self.drift_threshold, "drift_threshold", low=0.0, low_open=True)
        check_int(self.drift_window, "drift_window", low=1)
        for flag in ("use_trust", "augment", "track_signatures"):
            check_bool(getattr(self, flag), flag)
        if self.drift_threshold is not None and not self.track_signatures:
            raise ValueError("drift_threshold re-clusters on tracked signatures; it needs "
                             "track_signatures=True")
        if self.model is not None and self.augment:
            raise ValueError("augment=True appends tabular features and needs the logistic "
                             "model; pass augment=False with a TorchModel")
        label_aware.check_descriptor(self.descriptor, self.n_sub, self.n_thresholds)
        if not label_aware.is_paper(self.descriptor):
            if self.distance != "l2":
                raise ValueError("a label-aware descriptor has no diagrams to compare; use "
                                 f"distance='l2', got distance={self.distance!r}")
            check_choice(label_aware.DEFAULT_ANCHORS, "anchors", label_aware.ANCHORS)
            check_choice(label_aware.DEFAULT_RECLUSTER, "recluster", label_aware.RECLUSTER)
        if self.descriptor_mechanism is not None:
            if not callable(getattr(self.descriptor_mechanism, "release", None)):
                raise TypeError("descriptor_mechanism must have a release(x, random_state) method")
            if self.distance != "l2":
                raise ValueError("descriptor_mechanism requires distance='l2' (diagrams are "
                                 "not privatised)")
            if self.drift_threshold is not None:
                raise ValueError("drift_threshold needs signature tracking, which a "
                                 "descriptor_mechanism turns off (each release spends "
                                 "privacy budget); pass drift_threshold=None")
            if not callable(getattr(self.descriptor_mechanism, "privacy_event", None)):
                raise TypeError("every descriptor release is recorded (and accounted under "
                                "model_dp), so descriptor_mechanism needs a privacy_event() "
                                "method (GaussianMechanism and LaplaceMechanism have one), "
                                f"got {type(self.descriptor_mechanism).__name__}")

    def _default_hooks(self):
        return hooks_for(self.model_dp)

    def traits(self) -> dict:
        """As :meth:`FederatedAlgorithm.traits`; ``augment=True`` couples records.

        Returns
        -------
        dict
        """
        coupling = ("augment=True builds every record's four extra features from the "
                    "client's whole data (its centroid and persistence statistics)",
                    "pass augment=False")
        return {**super().traits(), "record_coupling": coupling if self.augment else None}

    @property
    def _mean_rule(self) -> bool:
        return True

    def _descriptor_points(self, k, X, w):
        """The points client ``k`` summarises: its features, or for a network the
        penultimate activations under ``w`` of ``n_sub`` samples (fixed per client)."""
        if self.model is None:
            return X
        idx = label_aware.client_records(X.shape[0], self.n_sub, self._client_seeds[k])
        return self.learner_.representation(w, X[idx])

    def _topology(self, k, X, w=None):
        X = self._descriptor_points(k, X, self._w_init if w is None else w)
        digest = hashlib.blake2b(np.ascontiguousarray(X).tobytes(), digest_size=16).digest()
        cached = self._topology_cache.get(k)
        if cached is not None and cached[0] == digest:
            return cached[1]
        result = client_topology(
            X, self.n_sub, n_thresholds=self.n_thresholds, persistence=self.persistence,
            h1_grid=self.h1_grid, strict=False, random_state=int(self._client_seeds[k]),
            name=f"client {k}",
        )
        self._topology_cache[k] = (digest, result)
        return result

    def _prepare(self, scenario):
        clients = scenario.clients
        K = len(clients)
        if self.n_clusters > K:
            raise ValueError(f"n_clusters={self.n_clusters} exceeds the {K} clients")
        if self.rng_streams == "per_client":
            self._client_seeds = [client_streams(self.random_state, k)[1] for k in range(K)]
        else:  # 2**32 - 1, not the usual bound: these seeds made the committed results
            self._client_seeds = draw_seed(self._rng, K, high=2**32 - 1)
        self._topology_cache = {}
        tops = [self._topology(k, c.X_train) for k, c in enumerate(clients)]
        descriptors = np.array([t[0] for t in tops])
        sizes = np.array([c.n_train for c in clients], dtype=np.float64)
        self._prepare_label_aware(K)
        if self._label_clients is None:
            self._server_step(self._release(descriptors), [t[1] for t in tops], sizes)
        elif self._model_dependent:
            self._warm_up(sizes)
        else:
            self._server_step(self._label_aware_descriptors(), None, sizes)
        self._augmentation = [
            augmentation_stats(c.X_train, t) if self.augment else None
            for c, t in zip(clients, tops, strict=True)
        ]
        self.recluster_rounds_ = []

    def _release(self, phi: np.ndarray) -> np.ndarray:
        """What the server receives of the clients' descriptors ``phi`` (K, d): their
        DP release (normalised, then noised) or, without ``descriptor_mechanism``,
        ``phi`` itself; accounted for every client (with ``model_dp``)."""
        mechanism = self.descriptor_mechanism
        if mechanism is None:
            self._record_release({"mechanism": "none", "channel": "descriptor"})
            return phi
        self._record_release({**mechanism.privacy_event(), "channel": "descriptor"})
        return mechanism.release(normalise_descriptors(phi), self._rng)

    def _server_step(self, descriptors, diagrams, sizes, labels=None) -> None:
        """Round-0 server work (and re-clustering): distances, clusters, trust, Eq. 6.
        ``labels``: keep these clusters (trust and weights of new descriptors only)."""
        distances = None if self.distance == "l2" else diagram_distances(diagrams)
        st = server_state(descriptors, self._weight_sizes(sizes), self.n_clusters, self.tau,
                          self.use_trust, distances, labels)
        self.descriptors_ = np.asarray(descriptors, dtype=np.float64)
        self.distances_, self.labels_ = st["distances"], st["labels"]
        self.trust_, self.z_scores_, self.weights_ = st["trust"], st["z"], st["weights"]
        self._cluster_sizes = st["cluster_sizes"]
        self.consensus_weights_ = st["consensus_weights"]

    def _client_changed(self, k, client):
        if self.augment:
            self._augmentation[k] = augmentation_stats(
                client.X_train, self._topology(k, client.X_train))

    def _features(self, k, X):
        return augment_features(X, self._augmentation[k]) if self.augment else X

    def _setup(self, K, w0):
        self.cluster_models_ = np.tile(w0, (self._cluster_sizes.size, 1))
        self.weight_history_ = np.zeros((self.n_rounds, K))
        self.drift_statistic_ = np.full((self.n_rounds, K), np.nan)
        self._since = 0
        self._tracking = self.track_signatures and self.descriptor_mechanism is None
        dim = (self.descriptors_.shape[1] if self._label_clients is None
               else self._label_aware_dimension())
        self.signatures_ = np.empty((self.n_rounds, K, dim)) if self._tracking else None
        self.drift_ = None

    def _round(self, r):
        K = self.n_clients_
        if self._hooks.aggregates:
            self.local_models_, models = self._hooked_mean_round(
                self.cluster_models_, self.labels_, self._dp_weights())
            self.cluster_models_ = blend_clusters(models, self._cluster_sizes, self.beta)
        else:
            local = np.array([self._train(k, self.cluster_models_[self.labels_[k]])[0]
                              for k in range(K)])
            self.local_models_ = local
            self.cluster_models_ = aggregate_round(local, self.labels_, self.weights_,
                                                   self._cluster_sizes, self.beta)
        self.weight_history_[r] = self.consensus_weights_
        if self._label_clients is not None:
            phis = self._label_aware_round()
        if self._tracking:
            if self._label_clients is None:  # sent in the clear (no mechanism)
                self._record_release({"mechanism": "none", "channel": "descriptor"})
            tops = ([(p, None) for p in phis] if self._label_clients is not None else
                    [self._topology(k, c.X_train, self.cluster_models_[self.labels_[k]])
                     for k, c in enumerate(self._clients)])
            self.signatures_[r] = [t[0] for t in tops]
            self.drift_ = signature_drift(self.signatures_[:r + 1])
            normed = np.stack([normalise_descriptors(s) for s in self.signatures_[:r + 1]])
            w = self.drift_window
            if r + 1 - self._since >= 2 * w:
                reference = normed[self._since:self._since + w].mean(axis=0)
                current = normed[r + 1 - w:r + 1].mean(axis=0)
                self.drift_statistic_[r] = np.linalg.norm(current - reference, axis=1)
                if (self.drift_threshold is not None
                        and np.any(self.drift_statistic_[r] > self.drift_threshold)):
                    self._recluster(r, tops)

    def _weight_sizes(self, sizes: np.ndarray) -> np.ndarray:
        """The sizes Eq. 6 weighs by: the clients' sizes, or all 1 under client-level DP
        (a size is unbounded, so it cannot weigh a clipped update)."""
        return np.ones_like(sizes) if self._hooks.aggregates else sizes

    def _dp_weights(self) -> np.ndarray:
        """Each client's weight in its cluster's sum under client-level DP: its
        ``weights_`` (Eq. 6 without the size factor) over their largest value in the
        cluster, so in (0, 1]; all 1 in the warm-up of a model-dependent descriptor (one
        cluster, trust 1, uniform weights)."""
        top = np.zeros(self._cluster_sizes.size)
        np.maximum.at(top, self.labels_, self.weights_)
        return self.weights_ / top[self.labels_]

    def _recluster(self, r, tops) -> None:
        """Sec. 3.5: re-cluster on the current signatures."""
        self._regroup(np.array([t[0] for t in tops]), [t[1] for t in tops])
        self._since = r
        self.recluster_rounds_.append(r + 1)

    def _regroup(self, descriptors, diagrams) -> None:
        """Cluster the clients anew on ``descriptors``; a new cluster starts from the
        mean of the models its members were using."""
        in_use = self.cluster_models_[self.labels_]
        self._server_step(descriptors, diagrams, self._n)
        M = self._cluster_sizes.size
        self.cluster_models_ = np.array([in_use[self.labels_ == j].mean(axis=0)
                                         for j in range(M)])

    # -- label-aware descriptors (``descriptor`` option) --------------------------------
    def _prepare_label_aware(self, K: int) -> None:
        """The clients' side of a label-aware ``descriptor`` and the server's schedule."""
        self._label_clients = None
        if label_aware.is_paper(self.descriptor):
            return
        transformer = label_aware.check_descriptor(
            self.descriptor, self.n_sub, self.n_thresholds, self.learner_.n_classes)
        self._label_clients = [
            label_aware.LabelAwareClient(
                transformer, self.learner_, self._client_seeds[k],
                n_sub=None if self.model is None else self.n_sub,
                features=partial(self._features, k))
            for k in range(K)]
        anchored = isinstance(transformer, ModelAnchoredDescriptor)
        self._model_dependent = anchored or self.model is not None
        self._cluster_anchors = anchored and label_aware.DEFAULT_ANCHORS == "clusters"
        self._recluster_every_round = label_aware.DEFAULT_RECLUSTER == "every_round"
        self._block_size = len(transformer.get_feature_names_out())

    def _label_aware_dimension(self) -> int:
        """Length of a client's label-aware descriptor (one block per anchor)."""
        return (self.n_clusters if self._cluster_anchors else 1) * self._block_size

    def _label_aware_descriptors(self, anchors=None) -> np.ndarray:
        """Every client's label-aware descriptor, as released to the server (DP
        mechanism applied); ``anchors``: the models they were broadcast."""
        phi = np.array([lc.descriptor(c.X_train, c.y_train, anchors)
                        for lc, c in zip(self._label_clients, self._clients, strict=True)])
        return self._release(phi)

    def _warm_up(self, sizes) -> None:
        """Round-1 state of a model-dependent descriptor: one cluster, trust 1, weights
        proportional to the clients' sizes (a FedAvg round; uniform under client-level DP)."""
        K = sizes.size
        w = self._weight_sizes(sizes)
        w = w / w.sum()
        self.descriptors_ = None
        self.distances_ = np.zeros((K, K))
        self.labels_ = np.zeros(K, dtype=np.int64)
        self.trust_, self.z_scores_, self.weights_ = np.ones(K), np.zeros(K), w
        self._cluster_sizes = np.array([K])
        self.consensus_weights_ = w

    def _anchor_models(self) -> np.ndarray:
        """The models the clients' descriptors are computed against, (n_anchors, dim):
        every cluster model (the warm-up's one model repeated), or the consensus."""
        models = self.cluster_models_
        if self._cluster_anchors:
            M = self.n_clusters
            return models if models.shape[0] == M else np.repeat(models[:1], M, axis=0)
        return consensus_model(models, self._cluster_sizes)[None, :]

    def _label_aware_round(self):
        """After a round's aggregation: the clients' label-aware descriptors (the
        round's signatures; ``None`` for a static descriptor without tracking) and,
        for a model-dependent one, the server step the next round uses: clusters
        (after the warm-up, then every round or never again), Eq. 8 and Eq. 6."""
        if not self._model_dependent:  # static: recomputed (cached) for tracking only
            return self._label_aware_descriptors() if self._tracking else None
        first = self.descriptors_ is None
        phi = self._label_aware_descriptors(self._anchor_models())
        if first or self._recluster_every_round:
            self._regroup(phi, None)
        else:
            self._server_step(phi, None, self._n, labels=self.labels_)
        return phi

    def _client_model(self, k):
        return self.cluster_models_[self.labels_[k]]
