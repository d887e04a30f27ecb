r"""Log-normal part: the log-normal regression (:class:`LogNormalRegression`).

:math:`\log x_i \sim N(\eta_i, \sigma^2)` with the normal part's priors (s = 10). The
log-likelihood is the density of x *as given*, including the Jacobian :math:`-\log x_i` (epsilon
depends on the units of the released variable): the statistics are the normal part's on
:math:`y_i = \log x_i` with :math:`J = -\sum_i w_i \log x_i`, and per record
:math:`f_i = -\log\sigma - \tfrac12\log 2\pi - \log x_i - \tfrac12((\log x_i - \eta)/\sigma)^2`.
Inversion: :math:`x^* = \exp(\eta + \sigma\Phi^{-1}(u))`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pseudopost.models.parts.normal import NormalPart

__all__ = ["LogNormalPart"]


@dataclass(frozen=True)
class LogNormalPart(NormalPart):
    """Log-normal regression part (see the module docstring). Parameters ``intercept``,
    ``beta``, ``sigma``."""

    family = "lognormal"
    support = "strictly positive"

    def _in_support(self, y):
        return np.isfinite(y) & (y > 0)

    def _gauss_outcome(self, y):
        t = np.log(y)
        return t, -t

    @staticmethod
    def transform(y: np.ndarray) -> np.ndarray:
        return np.exp(y)
