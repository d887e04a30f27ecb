r"""Empirical privacy audit: a statistically valid lower bound on epsilon from observed outputs.

Run a mechanism many times on a dataset D and on a neighbour D', reduce each output to a real
score, and test the events :math:`S_t = \{\text{score} > t\}` and :math:`\{\text{score} \le t\}`.
For any :math:`(\varepsilon, \delta)`-DP mechanism and every event S,
:math:`P_D(S) \le e^\varepsilon P_{D'}(S) + \delta`, hence

.. math:: \varepsilon \ge \ln\frac{\underline{p} - \delta}{\overline{q}}

with :math:`\underline{p}` a lower Clopper-Pearson bound on :math:`P_D(S)` and
:math:`\overline{q}` an upper bound on :math:`P_{D'}(S)` (Jagielski et al. 2020; Nasr et al.
2021). Both directions (D, D') and (D', D) are tested. The confidence is split over all events
tried (Bonferroni), so the returned bound holds with probability at least ``confidence``: a
correct mechanism fails ``epsilon_lower <= claimed`` at most ``1 - confidence`` of the time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from pseudopost._validation import check_in_interval

__all__ = ["AuditResult", "clopper_pearson", "epsilon_lower_bound"]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`epsilon_lower_bound`."""

    epsilon_lower: float
    threshold: float
    direction: str
    counts: tuple[int, int]
    trials: tuple[int, int]
    confidence: float


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Two one-sided ``1 - alpha`` Clopper-Pearson bounds (lower, upper) for ``k`` of ``n``."""
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))
    return lo, hi


def epsilon_lower_bound(
    scores_d: np.ndarray,
    scores_neighbour: np.ndarray,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    n_thresholds: int = 50,
) -> AuditResult:
    """Largest epsilon lower bound over threshold events on the two samples of scores.

    Parameters
    ----------
    scores_d, scores_neighbour
        One real score per independent run of the mechanism on D and on its neighbour.
    delta
        The mechanism's claimed delta (subtracted as in the inequality above).
    confidence
        Joint confidence over every event tested (Bonferroni over thresholds and directions).
    n_thresholds
        Thresholds at evenly spaced quantiles of the pooled scores.
    """
    a = np.asarray(scores_d, dtype=float).ravel()
    b = np.asarray(scores_neighbour, dtype=float).ravel()
    if a.size < 10 or b.size < 10:
        raise ValueError(f"Need at least 10 runs on each dataset; got {a.size} and {b.size}.")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("Audit scores must be finite.")
    check_in_interval(confidence, "confidence", 0.0, 1.0, closed="neither")
    check_in_interval(delta, "delta", 0.0, 1.0, closed="left")
    pooled = np.concatenate([a, b])
    ts = np.unique(np.quantile(pooled, np.linspace(0.02, 0.98, n_thresholds)))
    alpha = (1 - confidence) / (4 * len(ts))  # 2 events x 2 directions per threshold, one-sided
    best = AuditResult(0.0, float(ts[0]), "none", (0, 0), (a.size, b.size), confidence)
    for t in ts:
        for name, x, y in (("D>D'", a, b), ("D'>D", b, a)):
            for side in (">", "<="):
                kx = int(np.sum(x > t)) if side == ">" else int(np.sum(x <= t))
                ky = int(np.sum(y > t)) if side == ">" else int(np.sum(y <= t))
                p_lo, _ = clopper_pearson(kx, x.size, alpha)
                _, q_hi = clopper_pearson(ky, y.size, alpha)
                if p_lo - delta <= 0 or q_hi <= 0:
                    continue
                eps = float(np.log((p_lo - delta) / q_hi))
                if eps > best.epsilon_lower:
                    best = AuditResult(
                        eps, float(t), f"{name} {side}", (kx, ky), (x.size, y.size), confidence
                    )
    return best
