"""Two-sample statistics of propensity scores given as counts per distinct score.

synthpop compares the scores of the synthetic and the real records with R's
``ks.test(syn, real)$statistic`` (SPECKS) and ``wilcox.test(syn, real)$statistic`` (U). Both
depend on the scores only through how many records of each frame sit at each score, so they are
computed here from weights: ``a`` (synthetic) and ``b`` (real) counts per score, ties included.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ks_statistic", "wilcoxon_w"]


def ks_statistic(score: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    r"""Kolmogorov-Smirnov distance :math:`\max_v |F_a(v) - F_b(v)|` of the weighted scores.

    The empirical CDFs are compared after each distinct score, as R's ``ks.test`` does with
    ties.
    """
    order = np.argsort(score, kind="stable")
    s, wa, wb = score[order], a[order], b[order]
    last = np.r_[s[1:] != s[:-1], True]
    fa = np.cumsum(wa)[last] / wa.sum()
    fb = np.cumsum(wb)[last] / wb.sum()
    return float(np.max(np.abs(fa - fb)))


def wilcoxon_w(score: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    r"""Wilcoxon rank-sum statistic :math:`W` of the ``a`` scores against the ``b`` scores.

    :math:`W = \sum_{i \in a} \mathrm{rank}_i - n_a(n_a+1)/2` with mid-ranks for ties, i.e. the
    number of (a, b) pairs with the a score larger plus half the tied pairs.
    """
    values, inverse = np.unique(score, return_inverse=True)
    wa = np.bincount(inverse.ravel(), weights=a, minlength=values.size)
    wb = np.bincount(inverse.ravel(), weights=b, minlength=values.size)
    below = np.cumsum(wb) - wb
    return float(np.sum(wa * (below + 0.5 * wb)))
