"""How well a (DP) rarity scorer finds the true outliers (REPS paper, appendix B.2, figures 4-5).

Both measures compare a scorer's values with the non-private k-NN outlier scores of the same
records (:func:`pseudopost.evaluate.outliers.knn_outlier_scores`).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from pseudopost._validation import check_in_interval

__all__ = ["recall_at_top", "scorer_spearman"]


def _pair(scores: np.ndarray, oracle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(scores, dtype=float), np.asarray(oracle, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(
            f"Scores must be two 1-d arrays of equal length >= 2; got {a.shape}, {b.shape}."
        )
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("Scores must be finite.")
    return a, b


def scorer_spearman(scores: np.ndarray, oracle: np.ndarray) -> float:
    """Spearman rank correlation between a scorer and the oracle outlier scores."""
    a, b = _pair(scores, oracle)
    return float(stats.spearmanr(a, b).statistic)


def recall_at_top(scores: np.ndarray, oracle: np.ndarray, fraction: float = 0.1) -> float:
    """Recall@top-``fraction``: share of the oracle's top group also in the scorer's top group.

    Each top group is the ``ceil(fraction * n)`` largest values (ties broken by order).
    """
    a, b = _pair(scores, oracle)
    f = check_in_interval(fraction, "fraction", 0.0, 1.0, closed="right")
    m = int(np.ceil(f * a.size))
    top_a = set(np.argsort(-a, kind="stable")[:m].tolist())
    top_b = np.argsort(-b, kind="stable")[:m]
    return float(np.mean([i in top_a for i in top_b]))
