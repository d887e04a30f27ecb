r"""Scalar special functions for the fused kernels, compiled by Numba.

Everything is in log space, as the accountant's range probabilities need
(range-restricted paper, section 3; guide: *The pseudo posterior mechanism*):

* :func:`log_ndtr` :math:`\log\Phi(z)`: :math:`\log(\tfrac12\operatorname{erfc}(-z/\sqrt2))`
  for :math:`-20 \le z \le -1` (``erfc`` has full relative accuracy there),
  :math:`\operatorname{log1p}(-\tfrac12\operatorname{erfc}(z/\sqrt2))` for :math:`z > -1`, and
  the asymptotic series
  :math:`-z^2/2 - \log(-z) - \tfrac12\log 2\pi + \log\sum_k (-1)^k (2k-1)!!/z^{2k}` below -20
  (SciPy's ``log_ndtr`` uses the same split).
* :func:`log1mexp` :math:`\log(1 - e^{x})` for :math:`x \le 0` (Maechler 2012).
* :func:`logdiffexp` :math:`\log(e^a - e^b)` for :math:`a \ge b`.
* :func:`log_normal_range` :math:`\log(\Phi(z_b) - \Phi(z_a))`, from the left tail when the range
  lies below the median and from the right tail above it, so neither tail cancels to
  :math:`-\infty` (the same rule as :meth:`SynthModel.log_prob_range_graph`).
"""

from __future__ import annotations

import math

from numba import njit

__all__ = ["log1mexp", "log_ndtr", "log_normal_range", "logdiffexp"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_HALF = math.sqrt(0.5)
_LOG_HALF = math.log(0.5)


@njit(cache=True, fastmath=False)
def log_ndtr(z: float) -> float:
    r""":math:`\log\Phi(z)`, accurate in both tails."""
    if z > -1.0:
        return math.log1p(-0.5 * math.erfc(z * _SQRT_HALF))
    if z >= -20.0:
        return math.log(0.5 * math.erfc(-z * _SQRT_HALF))
    if z == -math.inf:
        return -math.inf
    # asymptotic series: Phi(z) ~ phi(z)/(-z) * sum_k (-1)^k (2k-1)!! / z^(2k); |z| > 20 makes
    # the 12th term < 1e-30 of the first
    w = 1.0 / (z * z)
    term = 1.0
    total = 1.0
    for k in range(1, 13):
        term *= -(2.0 * k - 1.0) * w
        total += term
    return -0.5 * z * z - math.log(-z) - _HALF_LOG_2PI + math.log(total)


@njit(cache=True, fastmath=False)
def log1mexp(x: float) -> float:
    r""":math:`\log(1 - e^{x})` for :math:`x \le 0` (``-inf`` at 0)."""
    if x > _LOG_HALF:  # x > -log 2
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


@njit(cache=True, fastmath=False)
def logdiffexp(a: float, b: float) -> float:
    r""":math:`\log(e^a - e^b)` for :math:`a \ge b`; ``a`` when :math:`b = -\infty`."""
    if b == -math.inf:
        return a
    return a + log1mexp(b - a)


@njit(cache=True, fastmath=False)
def log_normal_range(za: float, zb: float) -> float:
    r""":math:`\log(\Phi(z_b) - \Phi(z_a))` for :math:`z_a \le z_b`.

    From the tail the range lies in (right tail above the median, :math:`\Phi(-z) = 1 - \Phi(z)`),
    as a difference of ``erfc`` values while the nearer endpoint is within 30 standard deviations
    (both ``erfc`` values keep full relative accuracy there, and two ``erfc`` calls cost a third of
    three log-space calls), in log space (:func:`logdiffexp` of :func:`log_ndtr`) beyond.
    """
    if za > 0.0:  # the range lies above the median: right tail
        if za < 30.0:
            return math.log(0.5 * (math.erfc(za * _SQRT_HALF) - math.erfc(zb * _SQRT_HALF)))
        return logdiffexp(log_ndtr(-za), log_ndtr(-zb))
    if zb > -30.0:
        return math.log(0.5 * (math.erfc(-zb * _SQRT_HALF) - math.erfc(-za * _SQRT_HALF)))
    return logdiffexp(log_ndtr(zb), log_ndtr(za))
