"""Accountants, noise calibration, privacy maps, sensitivity bounds and audits."""

from . import noise
from .audit import AuditResult, epsilon_lower_bound
from .calibration import CalibrationReport
from .contraction import contraction, plot_contraction
from .decomposition import Censored, Decomposition, RangeAveraged, RangeTruncated, Unrestricted
from .entropy import (
    TABLE_S1_RENYI_CONSTANTS,
    paper_renyi_constant,
    renyi_entropy,
    renyi_entropy_sensitivity,
    shannon_entropy,
    shannon_entropy_sensitivity,
)
from .lipschitz import AbsReduction, local_epsilon, reduce_abs, reduce_sum
from .reps_accounting import (
    BudgetSplit,
    compose,
    default_delta,
    end_to_end_epsilon,
    gaussian_pdp_epsilon,
    split_budget,
    synthesis_epsilon,
    synthesis_sigma,
    weighted_release_epsilon,
)

__all__ = [
    "TABLE_S1_RENYI_CONSTANTS",
    "AbsReduction",
    "AuditResult",
    "BudgetSplit",
    "CalibrationReport",
    "Censored",
    "Decomposition",
    "RangeAveraged",
    "RangeTruncated",
    "Unrestricted",
    "compose",
    "contraction",
    "default_delta",
    "end_to_end_epsilon",
    "epsilon_lower_bound",
    "gaussian_pdp_epsilon",
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
    "split_budget",
    "synthesis_epsilon",
    "synthesis_sigma",
    "weighted_release_epsilon",
]
