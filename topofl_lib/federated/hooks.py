"""What another object may do around a fit's round loop: :class:`RoundHooks`.

:meth:`FederatedAlgorithm.fit <topofl_lib.federated.FederatedAlgorithm.fit>` calls
its hooks at six points: when the fit starts, in each client's local SGD (which
gradient and which batches it runs), after it, when a client releases something to
the server, in place of a (cluster-wise) mean server rule, and when a round and the
fit end. These no-op defaults change no number and draw nothing; a wrapper overrides
the points it needs, as Flower's strategy wrappers do around a strategy
(:class:`~topofl_lib.federated.private_training.PrivateTraining` is the differential
privacy of the model channel, :class:`~topofl_lib.federated.PrivateMethod` wraps any
method in it).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["RoundHooks"]


class RoundHooks:
    """Round hooks that do nothing (the base of a wrapper's).

    Attributes
    ----------
    aggregates : bool
        Whether :meth:`mean_round` replaces the method's mean server rule (False here).
    """

    aggregates = False

    def check(self, method) -> None:
        """Refuse a method the hooks cannot wrap (nothing here).

        Parameters
        ----------
        method : FederatedAlgorithm
            The method, before its fit starts.
        """

    def start(self, method, rng: np.random.Generator) -> None:
        """Called once the method's clients and learner are known, before its round 0.

        Parameters
        ----------
        method : FederatedAlgorithm
            The method being fitted (``n_clients_``, ``learner_``, ``evaluation_``).
        rng : numpy.random.Generator
            The fit's generator (spawn from it: drawing from it changes the fit).
        """

    def local_sgd(self, learner, data, n: int, batch: int, epochs: int, rng, to_work,
                  gradient: Callable) -> tuple[Callable, object]:
        """The gradient and batches of a client's local SGD: ``(gradient, None)`` here
        (the method's own gradient, batches drawn by shuffling).

        Parameters
        ----------
        learner : object
            The fit's learner.
        data : tuple
            The client's data in the learner's form.
        n : int
            Its training size.
        batch : int
            Its batch size.
        epochs : int
            Local epochs.
        rng : numpy.random.Generator
            The client's generator.
        to_work : callable
            Into the learner's work space.
        gradient : callable
            The method's gradient ``g(w, idx)``.

        Returns
        -------
        gradient : callable
        batches : iterable of index arrays, or None
        """
        return gradient, None

    def trained(self, k: int, steps: int) -> None:
        """Client ``k`` took ``steps`` local steps this round (nothing here).

        Parameters
        ----------
        k : int
        steps : int
        """

    def record(self, event: dict, round_number: int, clients=None) -> None:
        """Some clients released something to the server (nothing here).

        Parameters
        ----------
        event : dict
            What was released (a :class:`~topofl_lib.privacy.PrivacyAccountant` event,
            without its round).
        round_number : int
            Its round (0 before round 1).
        clients : iterable of int, optional
            Whose release it is (default: every client).
        """

    def mean_round(self, starts: np.ndarray, groups: np.ndarray, weights: np.ndarray,
                   train: Callable[[int, np.ndarray], np.ndarray]
                   ) -> tuple[np.ndarray, np.ndarray]:
        """A round of a (cluster-wise) weighted-mean server rule, when :attr:`aggregates`.

        Parameters
        ----------
        starts : ndarray of shape (M, dim)
            Each group's model.
        groups : ndarray of int, shape (K,)
            Each client's group.
        weights : ndarray of shape (K,)
            Each client's weight in its group's mean, in (0, 1].
        train : callable
            ``train(k, start)``: the model client ``k`` returns after training.

        Returns
        -------
        local : ndarray of shape (K, dim)
        models : ndarray of shape (M, dim)
        """
        raise NotImplementedError(f"{type(self).__name__} does not aggregate")

    def end_round(self, round_number: int, sizes: np.ndarray,
                  batch_of: Callable[[int], int]) -> None:
        """A round ended (nothing here).

        Parameters
        ----------
        round_number : int
            The round (1-based).
        sizes : ndarray of shape (K,)
            The clients' training sizes.
        batch_of : callable
            ``batch_of(k)``: client ``k``'s batch size.
        """

    def finish(self) -> tuple[dict, dict]:
        """What the fit adds to ``history_`` and which attributes it sets: none here.

        Returns
        -------
        history : dict of ndarray
        attributes : dict
        """
        return {}, {}
