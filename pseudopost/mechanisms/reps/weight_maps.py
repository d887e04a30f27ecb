r"""Stage 1.5 of REPS: maps from rarity scores to weights :math:`w_i \in (0, 1]` (section 5.2).

.. math::
    \text{cap:}\quad w_i = \min\Big(1, \frac{\tau}{\hat s_i + \tau}\Big), \qquad
    \text{hinge-exp:}\quad w_i = \exp\big(-\gamma(\hat s_i - t)_+\big),

and the targeted schedule of Proposition 1: :math:`w_i = \tau_{\text{out}}/C` on a high-risk set
:math:`\mathcal H` and 1 elsewhere, which caps every :math:`i \in \mathcal H` at
:math:`\varepsilon_i \le \frac{\tau_{\text{out}}}{n\sigma}\sqrt{2\ln(1.25/\delta_t)}`
(:func:`targeted_clip_share` solves that for :math:`\tau_{\text{out}}`).

Privacy. A weight map spends no budget, but the Stage-2 accounting (Lemma 1) needs each
:math:`w_i` to be a function of record :math:`i` and DP releases *only*. The threshold
:math:`t` and :math:`\tau` must therefore be public or released with DP (e.g.
:func:`pseudopost.mechanisms.reps.rarity.dp_quantile` of the scores, which REPS does by default); a raw
percentile of the training records' scores, as the paper's experiments take it, lets one record
move every other record's weight and is not covered by Lemma 1.
"""

from __future__ import annotations

import numpy as np

from pseudopost._validation import check_positive, check_positive_int
from pseudopost.privacy.noise import gaussian_sigma

__all__ = ["cap_weights", "hinge_exp_weights", "targeted_clip_share", "targeted_weights"]


def _scores(scores: np.ndarray, nonnegative: bool = False) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or not np.isfinite(s).all():
        raise ValueError("The 'scores' argument must be a 1-d array of finite values.")
    if nonnegative and (s < 0).any():
        raise ValueError(f"The 'scores' must be >= 0 for this map; the smallest is {s.min()!r}.")
    return s


def cap_weights(scores: np.ndarray, tau: float) -> np.ndarray:
    r"""Cap map :math:`w_i = \min(1, \tau/(\hat s_i + \tau))` for scores :math:`\hat s_i \ge 0`."""
    s = _scores(scores, nonnegative=True)
    t = check_positive(tau, "tau")
    return np.minimum(1.0, t / (s + t))


def hinge_exp_weights(scores: np.ndarray, gamma: float, threshold: float) -> np.ndarray:
    r"""Hinge-exponential map :math:`w_i = \exp(-\gamma(\hat s_i - t)_+)`.

    ``gamma`` >= 0 sets how sharply records above the threshold :math:`t` lose weight (the
    paper's grid is {0.5, 1, 2, 4}); ``gamma = 0`` gives uniform weights.
    """
    s = _scores(scores)
    g = check_positive(gamma, "gamma", strict=False)
    t = float(threshold)
    if not np.isfinite(t):
        raise ValueError(f"The 'threshold' parameter must be finite. Got {threshold!r}.")
    return np.exp(-g * np.maximum(s - t, 0.0))


def targeted_weights(high_risk: np.ndarray, tau_out: float, clip: float) -> np.ndarray:
    r"""Proposition 1: :math:`w_i = \tau_{\text{out}}/C` for :math:`i \in \mathcal H`, else 1.

    ``high_risk`` is a boolean mask of :math:`\mathcal H`; requires
    :math:`0 < \tau_{\text{out}} \le C`. The global sensitivity stays :math:`C/n`, so the
    global epsilon is unchanged while records in :math:`\mathcal H` get the smaller bound.
    """
    h = np.asarray(high_risk)
    if h.dtype != bool or h.ndim != 1:
        raise TypeError("The 'high_risk' argument must be a 1-d boolean mask.")
    c = check_positive(clip, "clip")
    t = check_positive(tau_out, "tau_out")
    if t > c:
        raise ValueError(f"The 'tau_out' parameter must be <= clip C = {c}. Got {tau_out!r}.")
    return np.where(h, t / c, 1.0)


def targeted_clip_share(epsilon_out: float, *, n: int, sigma: float, delta: float) -> float:
    r""":math:`\tau_{\text{out}}` that caps high-risk records at :math:`\varepsilon_{\text{out}}`.

    Inverts Proposition 1 (1): :math:`\tau_{\text{out}} = \varepsilon_{\text{out}}\, n\sigma /
    \sqrt{2\ln(1.25/\delta_t)}`, using the classic Gaussian map of
    :func:`pseudopost.privacy.noise.gaussian_sigma` (sigma at sensitivity 1, epsilon 1 is
    :math:`\sqrt{2\ln(1.25/\delta)}`).
    """
    e = check_positive(epsilon_out, "epsilon_out")
    n = check_positive_int(n, "n")
    s = check_positive(sigma, "sigma")
    return e * n * s / gaussian_sigma(1.0, 1.0, delta)
