"""Per-record risk, weights, sensitive ranges and range-inclusion probabilities.

REPS's rarity scorer and weight maps moved into the mechanism (:mod:`pseudopost.mechanisms.reps`);
their old names here forward with a DeprecationWarning until pseudopost 0.3.
"""

from pseudopost._deprecated import moved_names
from pseudopost.risk.inclusion import inclusion_lambda
from pseudopost.risk.ranges import (
    AdditiveRange,
    ArrayRange,
    BracketRange,
    MultiplicativeRange,
    SensitiveRange,
    TailRange,
)
from pseudopost.risk.weights import check_weight_knobs, normalise_risk, risk_weights

__all__ = [
    "AdditiveRange",
    "ArrayRange",
    "BracketRange",
    "MultiplicativeRange",
    "SensitiveRange",
    "TailRange",
    "check_weight_knobs",
    "inclusion_lambda",
    "normalise_risk",
    "risk_weights",
]

__getattr__ = moved_names(
    __name__,
    {
        **dict.fromkeys(("HistogramRarity", "dp_quantile", "release_histograms"),
                        "pseudopost.mechanisms.reps.rarity"),
        **dict.fromkeys(("cap_weights", "hinge_exp_weights", "targeted_clip_share",
                         "targeted_weights"), "pseudopost.mechanisms.reps.weight_maps"),
    },
)  # fmt: skip
