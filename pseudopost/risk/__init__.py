"""Per-record risk, weights, sensitive ranges and range-inclusion probabilities."""

from pseudopost.risk.inclusion import inclusion_lambda
from pseudopost.risk.ranges import (
    AdditiveRange,
    ArrayRange,
    BracketRange,
    MultiplicativeRange,
    SensitiveRange,
    TailRange,
)
from pseudopost.risk.rarity import HistogramRarity, dp_quantile, release_histograms
from pseudopost.risk.weight_maps import (
    cap_weights,
    hinge_exp_weights,
    targeted_clip_share,
    targeted_weights,
)
from pseudopost.risk.weights import check_weight_knobs, normalise_risk, risk_weights

__all__ = [
    "AdditiveRange",
    "ArrayRange",
    "BracketRange",
    "HistogramRarity",
    "MultiplicativeRange",
    "SensitiveRange",
    "TailRange",
    "cap_weights",
    "check_weight_knobs",
    "dp_quantile",
    "hinge_exp_weights",
    "inclusion_lambda",
    "normalise_risk",
    "release_histograms",
    "risk_weights",
    "targeted_clip_share",
    "targeted_weights",
]
