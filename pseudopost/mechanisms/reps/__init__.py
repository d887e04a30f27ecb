"""REPS: risk-equalized DP synthesis (papers/reps-risk-equalized-dp-synthesis.md).

:class:`REPS` (stages 1, 1.5 and 2 of section 5) and its frozen :class:`RepsRelease`; the
baselines of appendix B (:data:`METHODS`); the Dask path of the weighted clipped statistics;
and the mechanism's own pieces: the DP rarity scorer (``rarity``),
the weight maps (``weight_maps``) and the budget accounting
(``accounting``).
"""

from pseudopost.mechanisms.reps.accounting import (
    BudgetSplit,
    end_to_end_epsilon,
    split_budget,
    synthesis_sigma,
    weighted_release_epsilon,
)
from pseudopost.mechanisms.reps.baselines import (
    METHODS,
    HardRemoval,
    NonPrivateNaiveBayes,
    RandomDownweighting,
    make_method,
)
from pseudopost.mechanisms.reps.core import REPS, RepsRelease, release_weighted_statistics
from pseudopost.mechanisms.reps.rarity import HistogramRarity, dp_quantile, release_histograms
from pseudopost.mechanisms.reps.weight_maps import (
    cap_weights,
    hinge_exp_weights,
    targeted_clip_share,
    targeted_weights,
)

__all__ = [
    "METHODS",
    "REPS",
    "BudgetSplit",
    "HardRemoval",
    "HistogramRarity",
    "NonPrivateNaiveBayes",
    "RandomDownweighting",
    "RepsRelease",
    "cap_weights",
    "dp_quantile",
    "end_to_end_epsilon",
    "hinge_exp_weights",
    "make_method",
    "release_histograms",
    "release_weighted_statistics",
    "split_budget",
    "synthesis_sigma",
    "targeted_clip_share",
    "targeted_weights",
    "weighted_release_epsilon",
]
