r"""The one module through which pseudopost adds noise, and the privacy maps that calibrate it.

Every additive-noise release in pseudopost (REPS, PRISM, the entropy-calibrated histogram) calls
:func:`gaussian_noise` or :func:`laplace_noise` here, with a scale chosen by the calibration
functions below. Calibration searches the privacy *map* (a function from sensitivity and noise
scale to epsilon/delta, as OpenDP exposes it) rather than re-deriving a formula elsewhere.

Privacy maps (sensitivity :math:`\Delta` in the norm named; the neighbouring relation is the
caller's and fixes :math:`\Delta`):

* Laplace, :math:`\Delta_1`: pure :math:`\varepsilon = \Delta_1 / b`.
* Gaussian, classic (Dwork & Roth 2014, Thm A.1):
  :math:`\sigma = \Delta_2 \sqrt{2\ln(1.25/\delta)}/\varepsilon`; the theorem assumes
  :math:`\varepsilon < 1`; beyond, it holds only where the exact curve below says so (it
  fails for large epsilon: at :math:`\varepsilon = 20`, :math:`\delta = 10^{-5}` the exact
  epsilon is 25), which :func:`check_classic_gaussian` checks. The REPS paper uses it for all
  epsilon.
* Gaussian, analytic (Balle & Wang 2018, Thm 8): the exact curve

  .. math:: \delta(\varepsilon) = \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
            - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big).

* Gaussian, zero-concentrated DP (Bun & Steinke 2016, Prop 1.6):
  :math:`\rho = \Delta_2^2 / (2\sigma^2)`; to approximate DP (Prop 1.3)
  :math:`\varepsilon = \rho + 2\sqrt{\rho \ln(1/\delta)}`.

Backends. ``"numpy"`` draws from the caller's Generator, so the same seed gives the same release.
``"opendp"`` uses OpenDP's floating-point-safe samplers (discretised internally, immune to the
Mironov 2012 floating-point attack); they draw from the operating system's CSPRNG and therefore
**cannot** be reproduced from a seed. That is the price of the safer noise; the release records
which backend it used.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy import optimize, special

from pseudopost._extras import require
from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive, check_probability

__all__ = [
    "Backend",
    "check_classic_gaussian",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_noise",
    "gaussian_rho",
    "gaussian_sigma",
    "laplace_epsilon",
    "laplace_noise",
    "laplace_scale",
    "zcdp_rho_to_epsilon",
    "zcdp_sigma",
]

Backend = Literal["numpy", "opendp"]
GaussianMethod = Literal["classic", "analytic"]


# --------------------------------------------------------------------------- privacy maps
def laplace_epsilon(sensitivity: float, scale: float) -> float:
    r"""Pure-DP map of the Laplace mechanism: :math:`\varepsilon = \Delta_1 / b`."""
    return check_positive(sensitivity, "sensitivity") / check_positive(scale, "scale")


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    r"""Laplace scale :math:`b = \Delta_1/\varepsilon` for pure :math:`\varepsilon`-DP."""
    return check_positive(sensitivity, "sensitivity") / check_positive(epsilon, "epsilon")


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    r"""Exact delta of the Gaussian mechanism at ``epsilon`` (Balle & Wang 2018, Thm 8)."""
    s = check_positive(sigma, "sigma")
    d = check_positive(sensitivity, "sensitivity")
    e = check_positive(epsilon, "epsilon", strict=False)
    a, b = d / (2 * s), e * s / d
    # e^eps * Phi(-a - b) evaluated in log space so large epsilon cannot overflow
    second = np.exp(e + special.log_ndtr(-a - b))
    return float(max(special.ndtr(a - b) - second, 0.0))


def gaussian_epsilon(sigma: float, sensitivity: float, delta: float) -> float:
    """Smallest epsilon with ``gaussian_delta(sigma, sensitivity, epsilon) <= delta`` (exact)."""
    check_probability(delta, "delta")
    if gaussian_delta(sigma, sensitivity, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(sigma, sensitivity, hi) > delta:
        hi *= 2.0
    return float(
        optimize.brentq(
            lambda e: gaussian_delta(sigma, sensitivity, e) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12
        )
    )


def gaussian_sigma(
    sensitivity: float, epsilon: float, delta: float, method: GaussianMethod = "classic"
) -> float:
    r"""Noise standard deviation for :math:`(\varepsilon, \delta)`-DP at L2 ``sensitivity``.

    ``method="classic"``: :math:`\Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon` (Dwork & Roth,
    Thm A.1), the calibration the REPS paper uses (its Corollary 2). ``method="analytic"``: the
    smallest sigma whose exact curve (:func:`gaussian_delta`) meets delta, found by root search.
    """
    d = check_positive(sensitivity, "sensitivity")
    e = check_positive(epsilon, "epsilon")
    dl = check_probability(delta, "delta")
    if method == "classic":
        return d * np.sqrt(2.0 * np.log(1.25 / dl)) / e
    if method != "analytic":
        raise ValueError(f"The 'method' parameter must be 'classic' or 'analytic'. Got {method!r}.")
    lo, hi = 1e-12 * d, d
    while gaussian_delta(hi, d, e) > dl:
        hi *= 2.0
    return float(
        optimize.brentq(lambda s: gaussian_delta(s, d, e) - dl, lo, hi, xtol=1e-14 * d, rtol=1e-12)
    )


def check_classic_gaussian(epsilon: float, delta: float, where: str) -> None:
    r"""Refuse a classic calibration that does not deliver :math:`(\varepsilon, \delta)`.

    The classic :math:`\sigma` (Dwork & Roth, Thm A.1, proven for :math:`\varepsilon < 1`) is
    checked on the exact curve (:func:`gaussian_delta`, which depends on
    :math:`\sigma/\Delta` only); ``where`` names the release step in the error.
    """
    e = check_positive(epsilon, "epsilon")
    dl = check_probability(delta, "delta")
    exact = gaussian_delta(gaussian_sigma(1.0, e, dl, method="classic"), 1.0, e)
    if exact > dl * (1 + 1e-9):
        raise ValueError(
            f"The classic Gaussian calibration does not give ({e:.6g}, {dl:.3g})-DP for {where}: "
            f"at its sigma the exact delta is {exact:.3g} > {dl:.3g} (Dwork & Roth's Theorem A.1 "
            "covers epsilon < 1). Use the analytic calibration or a smaller epsilon."
        )


def gaussian_rho(sigma: float, sensitivity: float) -> float:
    r"""zCDP map of the Gaussian mechanism: :math:`\rho = \Delta_2^2/(2\sigma^2)`."""
    return check_positive(sensitivity, "sensitivity") ** 2 / (
        2 * check_positive(sigma, "sigma") ** 2
    )


def zcdp_sigma(sensitivity: float, rho: float) -> float:
    r"""Sigma giving :math:`\rho`-zCDP: :math:`\Delta_2 / \sqrt{2\rho}`."""
    return check_positive(sensitivity, "sensitivity") / np.sqrt(2 * check_positive(rho, "rho"))


def zcdp_rho_to_epsilon(rho: float, delta: float) -> float:
    r""":math:`\rho`-zCDP implies :math:`(\rho + 2\sqrt{\rho\ln(1/\delta)}, \delta)`-DP."""
    r = check_positive(rho, "rho", strict=False)
    dl = check_probability(delta, "delta")
    return float(r + 2.0 * np.sqrt(r * np.log(1.0 / dl)))


# --------------------------------------------------------------------------- samplers
def _check_backend(backend: str) -> None:
    if backend not in ("numpy", "opendp"):
        raise ValueError(f"The 'backend' parameter must be 'numpy' or 'opendp'. Got {backend!r}.")


def _opendp_vector(kind: str, values: np.ndarray, scale: float) -> np.ndarray:
    dp = require("opendp.prelude", "backend='opendp'")

    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    if kind == "gaussian":
        meas = dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=float(scale))
    else:
        meas = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=float(scale))
    flat = np.asarray(values, dtype=float).ravel()
    return np.asarray(meas(flat.tolist()), dtype=float).reshape(np.shape(values))


def _add_noise(
    kind: str, values: np.ndarray | float, scale: float, seed: SeedLike, backend: Backend
) -> np.ndarray:
    """``values`` plus ``kind`` ("gaussian" or "laplace") noise of the checked ``scale``."""
    _check_backend(backend)
    v = np.asarray(values, dtype=float)
    if backend == "opendp":
        return _opendp_vector(kind, v, scale)
    rng = as_generator(seed)
    draw = rng.normal if kind == "gaussian" else rng.laplace
    return v + draw(0.0, scale, size=v.shape)


def gaussian_noise(
    values: np.ndarray | float, sigma: float, seed: SeedLike = None, backend: Backend = "numpy"
) -> np.ndarray:
    """``values + N(0, sigma^2 I)``; the input array is not modified."""
    return _add_noise("gaussian", values, check_positive(sigma, "sigma"), seed, backend)


def laplace_noise(
    values: np.ndarray | float, scale: float, seed: SeedLike = None, backend: Backend = "numpy"
) -> np.ndarray:
    """``values + Laplace(0, scale)`` coordinate-wise; the input array is not modified."""
    return _add_noise("laplace", values, check_positive(scale, "scale"), seed, backend)
