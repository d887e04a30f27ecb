"""Evaluation of synthetic data: membership inference by outlier decile, TSTR, scorer quality.

Mechanism-agnostic: every function takes real train/test (and optionally reference) frames and a
synthetic frame.
"""

from .membership import (
    MembershipResult,
    advantage,
    decile_advantages,
    distance_attack_scores,
    domias_attack_scores,
    membership_inference,
    run_attacks,
)
from .outliers import decile_labels, knn_outlier_scores
from .scorer_quality import recall_at_top, scorer_spearman
from .tstr import tstr_auroc

__all__ = [
    "MembershipResult",
    "advantage",
    "decile_advantages",
    "decile_labels",
    "distance_attack_scores",
    "domias_attack_scores",
    "knn_outlier_scores",
    "membership_inference",
    "recall_at_top",
    "run_attacks",
    "scorer_spearman",
    "tstr_auroc",
]
