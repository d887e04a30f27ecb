r"""Rank-normalised split R-hat and bulk and tail ESS of many parameters at once.

The definitions are arviz-stats' (``arviz_stats.base.diagnostics``; Vehtari, Gelman, Simpson,
Carpenter & Buerkner 2021, *Rank-normalization, folding, and localization: an improved R-hat
for assessing convergence of MCMC*, Bayesian Analysis 16, sections 4.2-4.3), computed on an
array of draws ``(chain, draw, k)`` for all ``k`` parameters together: arviz-stats applies its
functions one parameter at a time, at about 0.5 ms each, which is seconds for a whole-file
fit of thousands of parameters (YRBSS: about 10 % of ``pp.synthesize``). The results equal
arviz-stats' to rounding (``tests/fitting/test_mixing.py``).

* chains are split in halves (:math:`2C` chains of :math:`\lfloor D/2 \rfloor` draws);
* z-scale: the ranks :math:`r` of all draws of a parameter (ties averaged) mapped to
  :math:`\Phi^{-1}((r - 3/8) / (S + 1/4))` (Blom 1958);
* R-hat :math:`= \sqrt{(B/W + n - 1)/n}` with :math:`B` n times the variance of the chain
  means, :math:`W` the mean within-chain variance; the reported value is the larger of the
  z-scaled draws' and the z-scaled folded draws' (:math:`|x - \mathrm{median}|`);
* ESS :math:`= S / \hat\tau` with Geyer's initial positive and monotone sequences of the
  autocorrelations (from the FFT autocovariance); bulk: of the z-scaled split draws; tail: the
  smaller of the ESS of the indicators :math:`x \le q_p` and :math:`x \le q_{1-p}`.

A parameter with a NaN draw gets NaN, as in arviz-stats; so does the R-hat of fewer than 2
chains or 4 draws.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy import fft, special, stats

__all__ = ["ess_bulk", "ess_tail", "rhat"]


def _split(x: np.ndarray) -> np.ndarray:
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Blom-normalised ranks over all draws (chain, draw) of each parameter."""
    c, d, k = x.shape
    flat = x.reshape(c * d, k)
    rank = stats.rankdata(flat, method="average", axis=0)
    size = c * d
    return special.ndtri((rank - 0.375) / (size - 0.75 + 1.0)).reshape(c, d, k)


def _rhat_plain(x: np.ndarray) -> np.ndarray:
    n = x.shape[1]
    chain_mean = x.mean(axis=1)
    chain_var = x.var(axis=1, ddof=1)
    between = n * chain_mean.var(axis=0, ddof=1)
    within = chain_var.mean(axis=0)
    with np.errstate(all="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _invalid(x: np.ndarray) -> np.ndarray:
    return np.isnan(x).any(axis=(0, 1))


def rhat(x: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat (the larger of bulk and folded) of draws ``(chain, draw, k)``;
    shape ``(k,)``."""
    x = np.asarray(x, dtype=float)
    k = x.shape[2]
    if x.shape[0] < 2 or x.shape[1] < 4:
        return np.full(k, np.nan)
    bad = _invalid(x)
    split = _split(np.where(bad, 0.0, x))
    bulk = _rhat_plain(_z_scale(split))
    folded = np.abs(split - np.median(split.reshape(-1, k), axis=0))
    tail = _rhat_plain(_z_scale(folded))
    out = np.maximum(bulk, tail)  # NaN where either is NaN
    out[bad] = np.nan
    return out


@njit(cache=True, nogil=True, error_model="numpy")  # a constant parameter: 0/0 = nan
def _geyer(acov, var_plus, mean_var, n_chain, n_draw):  # pragma: no cover - compiled
    """arviz-stats' ``_ess`` after the autocovariance, for each parameter (last axis)."""
    k = acov.shape[1]
    out = np.empty(k)
    size = n_chain * n_draw
    for j in range(k):
        rho = np.zeros(n_draw)
        rho[0] = 1.0
        even = 1.0
        odd = 1.0 - (mean_var[j] - acov[1, j]) / var_plus[j]
        rho[1] = odd
        t = 1
        while t < n_draw - 3 and even + odd > 0.0:
            even = 1.0 - (mean_var[j] - acov[t + 1, j]) / var_plus[j]
            odd = 1.0 - (mean_var[j] - acov[t + 2, j]) / var_plus[j]
            if even + odd >= 0:
                rho[t + 1] = even
                rho[t + 2] = odd
            t += 2
        max_t = t - 2
        if even > 0:
            rho[max_t + 1] = even
        t = 1
        while t <= max_t - 2:
            if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
                rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
                rho[t + 2] = rho[t + 1]
            t += 2
        tau = -1.0 + 2.0 * rho[: max_t + 1].sum() + rho[max_t + 1 : max_t + 2].sum()
        tau = max(tau, 1.0 / np.log10(size))
        out[j] = size / tau
        if np.isnan(rho).any():
            out[j] = np.nan
    return out


def _ess(x: np.ndarray) -> np.ndarray:
    """ESS of draws ``(chain, draw, k)`` (arviz-stats' ``_ess``), each parameter."""
    c, d, k = x.shape
    const = np.ptp(x.reshape(c * d, k), axis=0) < np.finfo(float).resolution
    centred = x - x.mean(axis=1, keepdims=True)
    m = fft.next_fast_len(2 * d)
    f = fft.rfft(centred, n=m, axis=1)
    acov = fft.irfft(f * np.conjugate(f), n=m, axis=1)[:, :d] / d  # (c, d, k)
    mean_acov = acov.mean(axis=0)  # (d, k)
    mean_var = mean_acov[0] * d / (d - 1.0)
    var_plus = mean_var * (d - 1.0) / d
    if c > 1:
        var_plus = var_plus + x.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(all="ignore"):
        out = _geyer(np.ascontiguousarray(mean_acov), var_plus, mean_var, c, d)
    out[const] = c * d
    return out


def ess_bulk(x: np.ndarray) -> np.ndarray:
    """Bulk ESS (of the z-scaled split draws) of draws ``(chain, draw, k)``; shape ``(k,)``."""
    x = np.asarray(x, dtype=float)
    k = x.shape[2]
    if x.shape[1] < 4:
        return np.full(k, np.nan)
    bad = _invalid(x)
    out = _ess(_z_scale(_split(np.where(bad, 0.0, x))))
    out[bad] = np.nan
    return out


def ess_tail(x: np.ndarray, prob: float | None = None) -> np.ndarray:
    """Tail ESS: the smaller ESS of the split indicators :math:`x \\le q_p` and :math:`x \\le
    q_{1-p}` (quantiles over all draws, NumPy's linear method) of draws ``(chain, draw, k)``;
    ``prob`` None: arviz-base's ``rcParams["stats.ci_prob"]`` (0.89: the 11 % and 89 %
    quantiles), as ``arviz_stats.ess(method="tail")``."""
    if prob is None:
        from arviz_base import rcParams

        prob = float(rcParams["stats.ci_prob"])
    x = np.asarray(x, dtype=float)
    c, d, k = x.shape
    if d < 4:
        return np.full(k, np.nan)
    bad = _invalid(x)
    x = np.where(bad, 0.0, x)
    lo, hi = sorted((prob, 1.0 - prob))
    q = np.quantile(x.reshape(c * d, k), [lo, hi], axis=0)
    out = np.minimum(_ess(_split((x <= q[0]).astype(float))),
                     _ess(_split((x <= q[1]).astype(float))))  # fmt: skip
    out[bad] = np.nan
    return out
