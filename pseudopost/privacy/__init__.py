"""Accountants, noise calibration, privacy maps, sensitivity bounds and audits.

REPS's budget accounting moved into the mechanism (``pseudopost.mechanisms.reps.accounting``);
its old names here forward with a DeprecationWarning until pseudopost 0.3.
"""

from pseudopost._deprecated import moved_names
from pseudopost.privacy import noise
from pseudopost.privacy.audit import AuditResult, epsilon_lower_bound
from pseudopost.privacy.calibration import CalibrationReport
from pseudopost.privacy.contraction import contraction, plot_contraction
from pseudopost.privacy.decomposition import (
    Censored,
    Decomposition,
    RangeAveraged,
    RangeTruncated,
    Unrestricted,
)
from pseudopost.privacy.entropy import (
    TABLE_S1_RENYI_CONSTANTS,
    paper_renyi_constant,
    renyi_entropy,
    renyi_entropy_sensitivity,
    shannon_entropy,
    shannon_entropy_sensitivity,
)
from pseudopost.privacy.lipschitz import AbsReduction, local_epsilon, reduce_abs, reduce_sum
from pseudopost.privacy.statement import PrivacyStatement

__all__ = [
    "TABLE_S1_RENYI_CONSTANTS",
    "AbsReduction",
    "AuditResult",
    "CalibrationReport",
    "Censored",
    "Decomposition",
    "PrivacyStatement",
    "RangeAveraged",
    "RangeTruncated",
    "Unrestricted",
    "contraction",
    "epsilon_lower_bound",
    "local_epsilon",
    "noise",
    "paper_renyi_constant",
    "plot_contraction",
    "reduce_abs",
    "reduce_sum",
    "renyi_entropy",
    "renyi_entropy_sensitivity",
    "shannon_entropy",
    "shannon_entropy_sensitivity",
]

__getattr__ = moved_names(
    __name__,
    dict.fromkeys(
        ("BudgetSplit", "compose", "default_delta", "end_to_end_epsilon", "gaussian_pdp_epsilon",
         "split_budget", "synthesis_epsilon", "synthesis_sigma", "weighted_release_epsilon"),
        "pseudopost.mechanisms.reps.accounting",
    ),
)  # fmt: skip
