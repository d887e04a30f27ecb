"""Per-record risk and weights for the pseudo posterior."""

from .weights import check_weight_knobs, normalise_risk, risk_weights

__all__ = ["check_weight_knobs", "normalise_risk", "risk_weights"]
