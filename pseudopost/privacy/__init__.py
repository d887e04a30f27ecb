"""Accountants, noise calibration, privacy maps and audits."""

from .audit import AuditResult, epsilon_lower_bound
from .lipschitz import AbsReduction, local_epsilon, reduce_abs

__all__ = ["AbsReduction", "AuditResult", "epsilon_lower_bound", "local_epsilon", "reduce_abs"]
