"""One way to pass randomness: a ``seed`` argument turned into a NumPy Generator.

A Generator passed in is *copied* (its bit generator state is cloned), so two callers never share
a stream and a caller's Generator is left untouched. ``None`` draws fresh OS entropy; there is no
fallback to NumPy's global legacy state anywhere in pseudopost.
"""

from __future__ import annotations

import copy

import numpy as np

__all__ = ["SeedLike", "as_generator", "spawn_seeds"]

SeedLike = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(seed: SeedLike) -> np.random.Generator:
    """Return an independent Generator for ``seed`` (copied if it already is one)."""
    if isinstance(seed, np.random.Generator):
        return copy.deepcopy(seed)
    if isinstance(seed, bool) or not (
        seed is None or isinstance(seed, (int, np.integer, np.random.SeedSequence))
    ):
        raise TypeError(
            f"The 'seed' argument must be an int, a numpy Generator, a SeedSequence or None. "
            f"Got {seed!r} of type {type(seed).__name__} instead."
        )
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise ValueError(f"The 'seed' argument must be a non-negative integer. Got {seed} instead.")
    return np.random.default_rng(seed)


def spawn_seeds(seed: SeedLike, n: int) -> list[int]:
    """``n`` independent integer seeds derived from ``seed`` (for samplers that want ints)."""
    rng = as_generator(seed)
    return [int(s) for s in rng.integers(0, 2**31 - 1, size=n)]
