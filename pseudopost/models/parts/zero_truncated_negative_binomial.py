r"""Zero-truncated negative-binomial part: the positive part of a count column whose zeros are a
spike (the count part of :class:`HurdleNegativeBinomial`).

For :math:`y \ge 1`, :math:`p(y) = \mathrm{NB}(y \mid \mu, \phi) / (1 - \mathrm{NB}(0 \mid \mu,
\phi))` with :math:`\log\mathrm{NB}(0) = L_0 = \phi(\log\phi - \ell)`,
:math:`\ell = \log(\phi + e^\eta)`; parameters and priors of
:mod:`~pseudopost.models.parts.negative_binomial` (the hurdle's count part). The statistics are
the negative binomial's; the truncation adds :math:`-\sum_g W_g \log(1 - e^{L_{0g}})`, with

.. math::
    \partial_{\eta_g} = W_g \frac{\partial L_0/\partial\eta_g}{e^{-L_{0g}} - 1}, \quad
    \frac{\partial L_0}{\partial\eta} = -\phi q, \quad
    \frac{\partial L_0}{\partial\phi} = \log\phi - \ell + q .

Inversion as the hurdle's positive branch: the smallest :math:`k \ge 1` with
:math:`S_{NB}(k) \le (1 - u)\,S_{NB}(0)`, i.e. ``max(nbinom.isf((1 - u) s0, phi, p), 1)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from pseudopost.models.parts._math import log1mexp
from pseudopost.models.parts.negative_binomial import NegativeBinomialPart

__all__ = ["ZeroTruncatedNegativeBinomialPart", "log_p0"]


def log_p0(eta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    r""":math:`\log\mathrm{NB}(0) = -\phi\log(1 + \mu/\phi)` (as the hurdle's ``_nb_log_p0``)."""
    return -phi * np.log1p(np.exp(eta) / phi)


@dataclass(frozen=True)
class ZeroTruncatedNegativeBinomialPart(NegativeBinomialPart):
    """Zero-truncated negative binomial part (see the module docstring). Parameters
    ``intercept``, ``beta``, ``phi``."""

    family = "zero_truncated_negative_binomial"
    support = "a positive integer count"
    minimum = 1.0

    def _truncation(self, eta, phi, w):
        l0 = log_p0(eta, phi)
        r = w / np.expm1(-l0)  # d/dL0 of -w log(1 - e^L0) = w e^L0 / (1 - e^L0)
        ell = np.logaddexp(np.log(phi), eta)
        q = np.exp(eta - ell)
        return -float(w @ log1mexp(l0)), r * (-phi * q), float(r @ (np.log(phi) - ell + q))

    def _key_table(self, params, rows, key_row, key_y):
        f, eta, phi = self._nb_table(params, rows, key_row, key_y)
        return f - log1mexp(log_p0(eta, phi))[:, key_row]  # truncation per design row

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        mu = np.exp(self.linear(params, X))
        phi = float(params["phi"])
        p = phi / (phi + mu)
        s0 = -np.expm1(phi * np.log(p))
        return np.maximum(stats.nbinom.isf((1.0 - u) * s0, phi, p), 1.0)
