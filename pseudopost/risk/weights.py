r"""Risk-based record weights for the pseudo posterior (Savitsky, Williams & Hu 2022).

1. Risk from the *unweighted* posterior: :math:`L_i = \max_m |f_{\theta_m}(x_i)|`.
2. Normalise to :math:`r_i \in [0, 1]`. ``"linear"`` (default, the papers):
   :math:`r_i = (L_i - \min_j L_j)/(\max_j L_j - \min_j L_j)`; ``"logistic"`` (seen in public R
   code): :math:`r_i = 1/(1 + e^{-(L_i - \bar L)/s_L})`.
3. Weights :math:`\alpha_i = \min(1, \max(0, c (1 - r_i) + g))`; c (``scale``) and g
   (``shift``) are the risk-utility knobs, defaults c = 1, g = 0.

A record of higher risk (its log-likelihood far from zero, typically in a tail) gets a lower
weight. Weights are a deterministic function of the data and the unweighted draws: they spend no
separate budget; their effect is measured by the accountant on the weighted posterior.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from pseudopost._validation import check_positive

__all__ = ["check_weight_knobs", "normalise_risk", "risk_weights"]

Normalisation = Literal["linear", "logistic"]


def check_weight_knobs(scale: float, shift: float) -> tuple[float, float]:
    """Validate c and g before any sampling: c > 0 finite, g finite, and c + g > 0 (the
    lowest-risk record has r = 0 and weight c + g; if that is <= 0 every weight is 0)."""
    c = check_positive(scale, "scale")
    try:
        g = float(shift)
    except (TypeError, ValueError):
        raise TypeError(f"The 'shift' parameter must be a real number. Got {shift!r}.") from None
    if not np.isfinite(g):
        raise ValueError(f"The 'shift' parameter must be finite. Got {shift!r}.")
    if c + g <= 0:
        raise ValueError(
            f"scale={c} and shift={g} make every weight 0 (alpha_i = clip(c (1 - r_i) + g) <= "
            f"c + g = {c + g}); choose scale + shift > 0."
        )
    return c, g


def normalise_risk(risk: np.ndarray, method: Normalisation = "linear") -> np.ndarray:
    """Map risks :math:`L_i` to :math:`r_i \\in [0, 1]` (see module docstring)."""
    L = np.asarray(risk, dtype=float)
    if L.ndim != 1 or L.size == 0:
        raise ValueError(f"'risk' must be a non-empty vector; got shape {L.shape}.")
    if not np.all(np.isfinite(L)):
        bad = int(np.flatnonzero(~np.isfinite(L))[0])
        raise ValueError(
            f"Risk of record {bad} is {L[bad]}: the model gives it no finite "
            "log-likelihood under some posterior draw."
        )
    if method == "linear":
        span = L.max() - L.min()
        return np.zeros_like(L) if span == 0 else (L - L.min()) / span
    if method == "logistic":
        sd = L.std()
        return np.full_like(L, 0.5) if sd == 0 else 1.0 / (1.0 + np.exp(-(L - L.mean()) / sd))
    raise ValueError(f"The 'method' parameter must be 'linear' or 'logistic'. Got {method!r}.")


def risk_weights(
    risk: np.ndarray,
    scale: float = 1.0,
    shift: float = 0.0,
    method: Normalisation = "linear",
) -> np.ndarray:
    r"""Weights :math:`\alpha_i = \mathrm{clip}(c(1 - r_i) + g, 0, 1)` from risks :math:`L_i`."""
    c, g = check_weight_knobs(scale, shift)
    return np.clip(c * (1.0 - normalise_risk(risk, method)) + g, 0.0, 1.0)
