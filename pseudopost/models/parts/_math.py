r"""Scalar functions of the parts' densities in NumPy, finite far into both tails.

* :func:`softplus` :math:`\log(1 + e^x)`; :math:`\log\sigma(x) = -\mathrm{softplus}(-x)`.
* :func:`log1mexp` :math:`\log(1 - e^{x})` for :math:`x \le 0` (Maechler 2012: ``log(-expm1(x))``
  above :math:`-\log 2`, ``log1p(-exp(x))`` below).
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["expit", "log1mexp", "log_sigmoid", "softplus"]

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
