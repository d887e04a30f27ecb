r"""Privacy accounting of REPS (Asiaee et al., section 6 and appendix B.2).

Neighbouring relation throughout: :math:`D \sim D^{(-i)}`, record :math:`i` replaced by the null
record :math:`\perp` with :math:`\phi(\perp) = 0` (section 3.1; add/remove with public
:math:`n`).

* Budget split (appendix B.2): :math:`(\varepsilon_s, \delta_s) = (0.1\varepsilon, \delta/2)`
  for scoring, :math:`(\varepsilon_t, \delta_t) = (0.9\varepsilon, \delta/2)` for synthesis,
  :math:`\delta = 1/n^2` by default.
* Theorem 1: the two stages compose to :math:`(\varepsilon_s + \varepsilon_t, \delta_s + \delta_t)`.
* Theorem 2: a Gaussian release whose record-:math:`i` influence is :math:`\alpha_i` gives
  :math:`\varepsilon_i \le \alpha_i\sqrt{2\ln(1.25/\delta)}/\sigma`.
* Lemma 1 / Corollary 2: for the weighted clipped mean, :math:`\alpha_i \le w_i C / n`, so
  :math:`\varepsilon_i \le \frac{w_i C}{n\sigma}\sqrt{2\ln(1.25/\delta_t)}`.
* Corollary 1: end to end,
  :math:`\varepsilon_{i,\mathrm{tot}} \le \varepsilon_s + \varepsilon_{i,t}`.

Two privacy maps are offered: ``"classic"`` (Dwork & Roth Thm A.1, the paper's) and
``"analytic"`` (Balle & Wang's exact curve); both come from :mod:`pseudopost.privacy.noise`, and
the per-instance map always uses the same one as the calibration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from pseudopost._validation import (
    check_in_interval,
    check_positive,
    check_positive_int,
    check_probability,
)
from pseudopost.privacy.noise import gaussian_epsilon, gaussian_sigma

__all__ = [
    "BudgetSplit",
    "compose",
    "default_delta",
    "end_to_end_epsilon",
    "gaussian_pdp_epsilon",
    "split_budget",
    "synthesis_epsilon",
    "synthesis_sigma",
    "weighted_release_epsilon",
]

Calibration = Literal["classic", "analytic"]


@dataclass(frozen=True)
class BudgetSplit:
    """Total budget and its two stages; ``epsilon == epsilon_s + epsilon_t`` (Theorem 1)."""

    epsilon: float
    delta: float
    epsilon_s: float
    delta_s: float
    epsilon_t: float
    delta_t: float


def default_delta(n: int) -> float:
    """:math:`\\delta = 1/n^2` (section 7.4)."""
    return 1.0 / check_positive_int(n, "n", minimum=2) ** 2


def split_budget(epsilon: float, delta: float, scoring_share: float = 0.1) -> BudgetSplit:
    r"""Split :math:`(\varepsilon, \delta)` between scoring and synthesis (appendix B.2).

    ``scoring_share`` of epsilon goes to Stage 1 and delta is halved between the stages; with
    ``scoring_share = 0`` there is no Stage 1 and synthesis gets the whole budget (the paper's
    "DP uniform, no scoring").
    """
    e = check_positive(epsilon, "epsilon")
    d = check_probability(delta, "delta")
    share = check_in_interval(scoring_share, "scoring_share", 0.0, 1.0, closed="left")
    if share == 0.0:
        return BudgetSplit(e, d, 0.0, 0.0, e, d)
    return BudgetSplit(e, d, share * e, d / 2, e - share * e, d / 2)


def compose(
    epsilon_s: float, delta_s: float, epsilon_t: float, delta_t: float
) -> tuple[float, float]:
    """Theorem 1 (basic adaptive composition): ``(epsilon_s + epsilon_t, delta_s + delta_t)``."""
    es = check_positive(epsilon_s, "epsilon_s", strict=False)
    et = check_positive(epsilon_t, "epsilon_t", strict=False)
    ds = check_in_interval(delta_s, "delta_s", 0.0, 1.0, closed="left")
    dt = check_in_interval(delta_t, "delta_t", 0.0, 1.0, closed="left")
    return es + et, ds + dt


def synthesis_sigma(
    n: int, clip: float, epsilon_t: float, delta_t: float, method: Calibration = "classic"
) -> float:
    r"""Stage-2 noise for global sensitivity :math:`C/n` (Proposition 1 (2)-(3))."""
    n = check_positive_int(n, "n")
    return gaussian_sigma(check_positive(clip, "clip") / n, epsilon_t, delta_t, method=method)


def gaussian_pdp_epsilon(
    influence: np.ndarray, sigma: float, delta: float, method: Calibration = "classic"
) -> np.ndarray:
    r"""Theorem 2: per-instance epsilon of :math:`f(D) + N(0, \sigma^2 I)` given influences.

    ``"classic"``: :math:`\alpha_i\sqrt{2\ln(1.25/\delta)}/\sigma`; ``"analytic"``: the smallest
    epsilon on the exact Gaussian curve at sensitivity :math:`\alpha_i`. Zero influence gives 0.
    """
    a = np.asarray(influence, dtype=float)
    if not np.isfinite(a).all() or (a < 0).any():
        raise ValueError("The 'influence' values must be finite and >= 0.")
    s = check_positive(sigma, "sigma")
    dl = check_probability(delta, "delta")
    if method == "classic":
        return a * (gaussian_sigma(1.0, 1.0, dl) / s)
    if method != "analytic":
        raise ValueError(f"The 'method' parameter must be 'classic' or 'analytic'. Got {method!r}.")
    vals, inv = np.unique(a, return_inverse=True)
    eps = np.array([gaussian_epsilon(s, v, dl) if v > 0 else 0.0 for v in vals])
    return eps[inv].reshape(a.shape)


def weighted_release_epsilon(
    weights: np.ndarray,
    *,
    clip: float,
    n: int,
    sigma: float,
    delta: float,
    method: Calibration = "classic",
) -> np.ndarray:
    r"""Corollary 2, per record.

    .. math:: \varepsilon_i \le \frac{w_i C}{n\sigma}\sqrt{2\ln(1.25/\delta_t)}
    """
    w = np.asarray(weights, dtype=float)
    if not np.isfinite(w).all() or (w < 0).any() or (w > 1).any():
        raise ValueError("The 'weights' must lie in [0, 1].")
    influence = w * check_positive(clip, "clip") / check_positive_int(n, "n")  # Lemma 1
    return gaussian_pdp_epsilon(influence, sigma, delta, method)


def synthesis_epsilon(
    n: int, clip: float, sigma: float, delta: float, method: Calibration = "classic"
) -> float:
    """Global Stage-2 epsilon: Corollary 2 at the largest weight, 1 (Proposition 1 (3))."""
    return float(weighted_release_epsilon(np.ones(1), clip=clip, n=n, sigma=sigma,
                                          delta=delta, method=method)[0])  # fmt: skip


def end_to_end_epsilon(epsilon_s: float, per_instance_t: np.ndarray) -> np.ndarray:
    r"""Corollary 1: :math:`\varepsilon_{i,\mathrm{tot}} = \varepsilon_s + \varepsilon_{i,t}`."""
    return check_positive(epsilon_s, "epsilon_s", strict=False) + np.asarray(per_instance_t)
