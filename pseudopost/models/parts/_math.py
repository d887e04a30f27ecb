r"""Scalar functions of the parts' densities in NumPy, finite far into both tails.

* :func:`softplus` :math:`\log(1 + e^x)`; :math:`\log\sigma(x) = -\mathrm{softplus}(-x)`.
* :func:`log1mexp` :math:`\log(1 - e^{x})` for :math:`x \le 0` (Maechler 2012: ``log(-expm1(x))``
  above :math:`-\log 2`, ``log1p(-exp(x))`` below).
* :func:`log_sigmoid_diff` :math:`\log(\sigma(a) - \sigma(b))` for :math:`a > b`, as the ordinal
  ready model computes it: :math:`\log(e^a - e^b) - \mathrm{softplus}(a) - \mathrm{softplus}(b)`
  for :math:`b \le 0`, the same identity on :math:`(-b, -a)` for :math:`b > 0`.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["expit", "log1mexp", "log_sigmoid", "log_sigmoid_diff", "logdiffexp", "softplus"]

expit = special.expit


def softplus(x: np.ndarray) -> np.ndarray:
    r""":math:`\log(1 + e^x)` (``logaddexp(0, x)``)."""
    return np.logaddexp(0.0, x)


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    r""":math:`\log\sigma(x) = -\mathrm{softplus}(-x)`."""
    return -np.logaddexp(0.0, -x)


def log1mexp(x: np.ndarray) -> np.ndarray:
    r""":math:`\log(1 - e^x)` for :math:`x \le 0` (``-inf`` at 0)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(x > -np.log(2.0), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def logdiffexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r""":math:`\log(e^a - e^b)` for :math:`a \ge b`."""
    return a + log1mexp(b - a)


def log_sigmoid_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r""":math:`\log(\sigma(a) - \sigma(b))` for :math:`a > b` (module docstring)."""
    left = logdiffexp(a, b) - softplus(a) - softplus(b)
    right = logdiffexp(-b, -a) - softplus(-a) - softplus(-b)
    return np.where(b > 0, right, left)
