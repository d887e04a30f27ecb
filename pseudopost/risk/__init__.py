"""Per-record risk, weights, sensitive ranges and range-inclusion probabilities."""

from .inclusion import inclusion_lambda
from .ranges import (
    AdditiveRange,
    ArrayRange,
    BracketRange,
    MultiplicativeRange,
    SensitiveRange,
    TailRange,
)
from .weights import check_weight_knobs, normalise_risk, risk_weights

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
