"""REPS: risk-equalized DP synthesis (papers/reps-risk-equalized-dp-synthesis.md).

:class:`REPS` (stages 1, 1.5 and 2 of section 5) and its frozen :class:`RepsRelease`; the
baselines of appendix B (:data:`METHODS`); the Dask path of the weighted clipped statistics.
"""

from pseudopost.mechanisms.reps.baselines import (
    METHODS,
    HardRemoval,
    NonPrivateNaiveBayes,
    RandomDownweighting,
    make_method,
)
from pseudopost.mechanisms.reps.core import REPS, RepsRelease, release_weighted_statistics

__all__ = [
    "METHODS",
    "REPS",
    "HardRemoval",
    "NonPrivateNaiveBayes",
    "RandomDownweighting",
    "RepsRelease",
    "make_method",
    "release_weighted_statistics",
]
