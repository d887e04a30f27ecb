r"""Poisson part: the log-linear Poisson regression (:class:`PoissonRegression`).

:math:`y_i \sim \mathrm{Poisson}(e^{\eta_i})`, :math:`\eta_i = \beta_0 + z_i^\top\beta`,
:math:`\beta_0 \sim N(0, (2s)^2)`, :math:`\beta_j \sim N(0, s^2)`, s = 2.5 by default. Grouped
statistics :math:`W_g = \sum_{i\in g} w_i`, :math:`Y_g = \sum_{i\in g} w_i y_i` (guide:
*Whole files*) and the constant :math:`-\sum_i w_i \log y_i!`:

.. math::
    \ell_w = \sum_g \bigl[Y_g \eta_g - W_g e^{\eta_g}\bigr] - \sum_i w_i \log y_i!, \qquad
    \partial\ell_w/\partial\eta_g = Y_g - W_g e^{\eta_g}.

Inversion: ``scipy.stats.poisson.ppf(u, exp(eta))``, as the ready model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import special, stats

from pseudopost.models.parts.base import Part
from pseudopost.models.parts.bernoulli import coefficients, linear_grads, linear_rows
from pseudopost.models.parts.data import group_rows
from pseudopost.models.parts.layout import Layout

__all__ = ["PoissonPart", "count_statistics", "is_count"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def is_count(y: np.ndarray, minimum: float = 0.0) -> np.ndarray:
    """Whether each y is an integer >= minimum."""
    return np.isfinite(y) & (y >= minimum) & (y == np.round(y))


def count_statistics(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict:
    """``rows``, ``w``, ``wy`` per design row and ``const`` = -sum w log y!."""
    rows, inv = group_rows(X)
    u = rows.shape[0]
    return {
        "rows": rows,
        "w": np.bincount(inv, weights=w, minlength=u).astype(np.float64),
        "wy": np.bincount(inv, weights=w * y, minlength=u).astype(np.float64),
        "const": np.asarray(-float(w @ special.gammaln(y + 1.0))),
    }


@dataclass(frozen=True)
class PoissonPart(Part):
    """Poisson regression part (see the module docstring). Parameters ``intercept``, ``beta``."""

    family = "poisson"
    support = "a non-negative integer count"

    def _in_support(self, y):
        return is_count(y)

    @cached_property
    def layout(self) -> Layout:
        return Layout(tuple(coefficients(self, 2.0 * self.prior_scale)))

    def _statistics(self, y, X, w) -> dict:
        return count_statistics(X, y, w)

    def _loglik_grad(self, values, arrays):
        rows, w, wy = arrays["rows"], arrays["w"], arrays["wy"]
        eta = linear_rows(self, values, rows)
        we = w * np.exp(eta)
        ll = float(wy @ eta - we.sum() + float(arrays["const"]))
        return ll, linear_grads(self, rows, wy - we)

    def logp_grad(self, x, arrays):
        r"""The generic :meth:`Part.logp_grad` written out for this layout (``intercept`` with
        prior :math:`N(0, (2s)^2)`, ``beta`` with :math:`N(0, s^2)`, no transform): the same
        numbers without the generic per-parameter path, which cost a fifth more per gradient
        on the sufficient-statistics path (``pseudopost.fitting.sufficient``)."""
        x = np.asarray(x, dtype=np.float64)
        rows, w, wy = arrays["rows"], arrays["w"], arrays["wy"]
        if x.shape != (self.p + 1,) or rows.shape[1] != self.p:
            return super().logp_grad(x, arrays)
        s, s0 = self.prior_scale, 2.0 * self.prior_scale
        beta = x[1:]
        with np.errstate(over="ignore", invalid="ignore"):
            eta = x[0] + rows @ beta if self.p else np.full(w.size, x[0])
            we = w * np.exp(eta)
            r = wy - we
            ll = float(wy @ eta - we.sum() + float(arrays["const"]))
        lp = (-0.5 * (x[0] / s0) ** 2 - math.log(s0) - 0.5 * float(beta @ beta) / s**2
              - self.p * math.log(s) - (self.p + 1) * _HALF_LOG_2PI)  # fmt: skip
        grad = np.empty(self.p + 1)
        grad[0] = r.sum() - x[0] / s0**2
        grad[1:] = rows.T @ r - beta / s**2
        return ll + lp, grad

    def _key_table(self, params, rows, key_row, key_y):
        eta = self.eta_rows(params, rows)[:, key_row]
        return key_y * eta - np.exp(eta) - special.gammaln(key_y + 1.0)

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        return stats.poisson.ppf(u, np.exp(self.linear(params, X)))
