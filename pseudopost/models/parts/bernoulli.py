r"""Bernoulli part: the logistic regression of a binary outcome (:class:`LogisticRegression`).

.. math::
    P(y_i = 1) = \sigma(\eta_i), \quad \eta_i = \beta_0 + z_i^\top\beta, \quad
    \beta_0 \sim N(0, (2s)^2), \ \beta_j \sim N(0, s^2), \quad s = 2.5 \text{ by default}.

Grouped statistics (guide: *Whole files*): with :math:`W_g = \sum_{i \in g} w_i` and
:math:`Y_g = \sum_{i \in g} w_i y_i` over the records of design row g,

.. math::
    \ell_w = \sum_g \bigl[Y_g \log\sigma(\eta_g) + (W_g - Y_g)\log\sigma(-\eta_g)\bigr], \qquad
    \partial\ell_w/\partial\eta_g = Y_g - W_g\,\sigma(\eta_g),

with :math:`\log\sigma(\eta) = -\mathrm{softplus}(-\eta)` (finite for any :math:`\eta`).
Inversion: :math:`y^* = 1` iff :math:`u > \sigma(-\eta)`, as the ready model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pseudopost.models.parts._fused import (
    bernoulli_hessian,
    bernoulli_loglik_grad,
    sparse_rows,
    use_fused,
)
from pseudopost.models.parts._math import expit, log_sigmoid
from pseudopost.models.parts.base import Part
from pseudopost.models.parts.data import group_rows
from pseudopost.models.parts.layout import Layout, Param

__all__ = ["BernoulliPart", "coefficients"]


def coefficients(part: Part, intercept_scale: float) -> list[Param]:
    """``intercept`` ~ N(0, intercept_scale) and, with predictors, ``beta`` ~ N(0, s)."""
    out = [Param("intercept", (), prior=("normal", 0.0, intercept_scale))]
    if part.p:
        out.append(Param("beta", (part.p,), prior=("normal", 0.0, part.prior_scale)))
    return out


def linear_grads(part: Part, rows: np.ndarray, d_eta: np.ndarray) -> dict[str, np.ndarray]:
    """Gradient on ``intercept`` and ``beta`` from the gradient on the rows' eta."""
    out = {"intercept": np.asarray(d_eta.sum())}
    if part.p:
        out["beta"] = d_eta @ rows
    return out


def linear_rows(part: Part, values: Mapping[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    """eta (U,) of one point at the design rows."""
    eta = np.full(rows.shape[0], float(values["intercept"]))
    if part.p:
        eta = eta + rows @ values["beta"]
    return eta


@dataclass(frozen=True)
class BernoulliPart(Part):
    """Logistic regression part (see the module docstring). Parameters ``intercept``,
    ``beta``."""

    family = "bernoulli"
    has_hessian = True
    support = "0 or 1"

    def _in_support(self, y: np.ndarray) -> np.ndarray:
        return (y == 0.0) | (y == 1.0)

    @cached_property
    def layout(self) -> Layout:
        return Layout(tuple(coefficients(self, 2.0 * self.prior_scale)))

    def _statistics(self, y, X, w) -> dict:
        rows, inv = group_rows(X)
        u = rows.shape[0]
        return {
            "rows": rows,
            "w": np.bincount(inv, weights=w, minlength=u).astype(np.float64),
            "wy": np.bincount(inv, weights=w * y, minlength=u).astype(np.float64),
        }

    def derived(self, arrays):
        rows = arrays["rows"]
        return sparse_rows(rows) if use_fused(rows, 1, None) else {}

    def _loglik_grad(self, values, arrays):
        ll, g_int, g_beta = bernoulli_loglik_grad(
            arrays["rows"], arrays["w"], arrays["wy"], values["intercept"], values.get("beta"),
            sparse=arrays if "rows_ptr" in arrays else None,
        )  # fmt: skip
        grads = {"intercept": np.asarray(g_int)}
        if self.p:
            grads["beta"] = g_beta
        return ll, grads

    def _loglik_hess(self, values, arrays):
        return bernoulli_hessian(
            arrays["rows"], arrays["w"], values["intercept"], values.get("beta")
        )

    def _key_table(self, params, rows, key_row, key_y):
        eta = self.eta_rows(params, rows)  # per design row, then gathered per key
        one, zero = log_sigmoid(eta), log_sigmoid(-eta)
        return np.where(key_y == 1.0, one[:, key_row], zero[:, key_row])

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        return (u > expit(-self.linear(params, X))).astype(np.float64)
