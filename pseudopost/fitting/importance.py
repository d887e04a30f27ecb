r"""Pareto-smoothed importance sampling (PSIS) and systematic resampling.

Draws :math:`\theta_m` of a proposal :math:`q` are reweighted towards a target :math:`p` by the
log ratios :math:`\log p(\theta_m) - \log q(\theta_m)`; PSIS replaces the largest ratios by
the quantiles of a generalised Pareto fitted to them (ArviZ's ``psislw``), and the fitted shape
:math:`\hat k` says whether the weights can be trusted (Vehtari, Simpson, Gelman, Yao & Gabry
2024, *Pareto smoothed importance sampling*, JMLR 25). A systematic resample then turns the
weights into as many equally weighted draws. Used by the Laplace draws of a part
(:func:`pseudopost.fitting.parts.laplace_draws`) and by the calibration to a target epsilon
(:mod:`pseudopost.privacy.calibration`).
"""

from __future__ import annotations

import arviz_stats  # noqa: F401  (the .azstats accessor)
import numpy as np
import xarray as xr

__all__ = ["psis_log_weights", "systematic_resample"]


def psis_log_weights(log_ratio: np.ndarray, shape: tuple[int, int]) -> tuple[np.ndarray, float]:
    """(normalised PSIS log weights, flat; Pareto k-hat) of the log ratios, laid out as
    ``shape`` = (chains, draws). A constant ratio (the target is the proposal) gives equal
    weights and k-hat 0. ArviZ raises ``ValueError`` when the tail is too short to fit."""
    if np.ptp(log_ratio) < 1e-12:
        return np.full(log_ratio.size, -np.log(log_ratio.size)), 0.0
    da = xr.DataArray(np.asarray(log_ratio).reshape(shape), dims=("chain", "draw"))
    lw, khat = (-da).azstats.psislw(dim=["chain", "draw"])  # psislw negates its input
    return lw.to_numpy().ravel(), float(khat)


def systematic_resample(log_weights: np.ndarray, u: float) -> np.ndarray:
    """Indices of a systematic resample (size = number of draws) with offset ``u`` in [0, 1)."""
    w = np.exp(log_weights - np.max(log_weights))
    cdf = np.cumsum(w / w.sum())
    m = w.size
    return np.minimum(np.searchsorted(cdf, (u + np.arange(m)) / m), m - 1)
