"""Seeds: the lists of seeds a multi-seed runner takes, and seeds drawn from a generator."""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from .._validation import check_int

__all__ = ["SEED_BOUND", "check_seeds", "draw_seed"]

#: Exclusive upper bound of the seeds :func:`draw_seed` draws by default (what
#: scikit-learn's ``random_state`` and torch's generators accept on every platform).
SEED_BOUND = 2**31 - 1


def draw_seed(rng: np.random.Generator, size: int | None = None,
              high: int = SEED_BOUND) -> int | np.ndarray:
    """Draw a seed (or ``size`` seeds) uniformly from ``[0, high)`` with ``rng``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator the seed is drawn from (it advances by one draw per seed).
    size : int or None, default=None
        ``None`` draws one seed and returns an ``int``; an int returns an int64 array.
    high : int, default=SEED_BOUND
        Exclusive upper bound (pTopoFL's persistence-subsample seeds use ``2**32 - 1``).

    Returns
    -------
    int or numpy.ndarray
        Exactly ``rng.integers(high, size=size)`` (as an ``int`` when ``size`` is None),
        so replacing that idiom by this function changes no number.
    """
    if size is None:
        return int(rng.integers(high))
    return rng.integers(high, size=size)


def check_seeds(seeds: Any, name: str = "seeds") -> list[int]:
    """Validate a list of seeds: a non-empty iterable of distinct non-negative ints.

    Parameters
    ----------
    seeds : iterable of int
        e.g. ``range(10)`` or ``[0, 1, 2]``. A bare int is refused (``seeds=10`` is
        ambiguous: ten seeds, or seed 10?).
    name : str
        Parameter name for the messages.

    Returns
    -------
    list of int

    Raises
    ------
    TypeError
        ``seeds`` is a bare int or not iterable, or a seed is not an int.
    ValueError
        ``seeds`` is empty, a seed is negative, or a seed repeats.
    """
    if isinstance(seeds, (Integral, np.integer)) and not isinstance(seeds, bool):
        raise TypeError(f"{name} must be an iterable of ints such as range(10), got {seeds!r}")
    try:
        seeds = list(seeds)
    except TypeError:
        raise TypeError(f"{name} must be an iterable of ints such as range(10), got "
                        f"{seeds!r}") from None
    if not seeds:
        raise ValueError(f"{name} is empty; give at least one seed")
    seeds = [check_int(s, "seed", low=0) for s in seeds]
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise ValueError(f"{name} repeats seed(s) {repeated}: each seed is one realisation, "
                         f"so a repeat would count one run twice (got {seeds})")
    return seeds
