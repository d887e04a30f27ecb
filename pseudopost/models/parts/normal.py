r"""Normal part: the normal linear regression (:class:`NormalRegression`).

:math:`y_i \sim N(\eta_i, \sigma^2)`, :math:`\eta_i = \beta_0 + z_i^\top\beta = d_i^\top b`
with :math:`d_i = (1, z_i)`; priors :math:`\beta_0, \beta_j \sim N(0, s^2)`,
:math:`\sigma \sim N^+(0, s^2)` (log transform), s = 10 by default. The statistics are the
exact :math:`Z^\top W Z` ones of ``pseudopost.fitting.sufficient.block_statistics``
(:math:`S_w = \sum w_i`, :math:`S_{wyy} = \sum w_i y_i^2`, :math:`D^\top W D`,
:math:`D^\top W y`, the constant J):

.. math::
    \ell_w = -S_w(\tfrac12\log 2\pi + \log\sigma) - \frac{Q}{2\sigma^2} + J, \quad
    Q = S_{wyy} - 2 b^\top D^\top W y + b^\top D^\top W D\, b,

:math:`\partial_b = (D^\top Wy - D^\top WD\,b)/\sigma^2`, :math:`\partial_\sigma = -S_w/\sigma +
Q/\sigma^3`. Hessian: :math:`\partial_b^2 = -D^\top WD/\sigma^2`,
:math:`\partial_b\partial_\sigma = -2(D^\top Wy - D^\top WD\,b)/\sigma^3`,
:math:`\partial_\sigma^2 = S_w/\sigma^2 - 3Q/\sigma^4`. Cost O(p^2) per gradient whatever n. Per record (a ``gauss`` part) the linear
predictor is tabulated per design row. Inversion: :math:`y^* = \eta + \sigma\Phi^{-1}(u)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import special

from pseudopost.models.parts.base import Part
from pseudopost.models.parts.layout import Layout, Param

__all__ = ["NormalPart"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@dataclass(frozen=True)
class NormalPart(Part):
    """Normal regression part (see the module docstring). Parameters ``intercept``, ``beta``,
    ``sigma``."""

    family = "normal"
    kind = "gauss"
    has_hessian = True
    default_prior_scale = 10.0

    @cached_property
    def layout(self) -> Layout:
        s = self.prior_scale
        params = [Param("intercept", (), prior=("normal", 0.0, s))]
        if self.p:
            params.append(Param("beta", (self.p,), prior=("normal", 0.0, s)))
        params.append(Param("sigma", (), "log", ("halfnormal", s)))
        return Layout(tuple(params))

    def _gauss_outcome(self, y):
        """(y on the modelling scale, per-record constant of the density of x as given)."""
        return y, np.zeros_like(y)

    def _statistics(self, y, X, w) -> dict:
        t, aux = self._gauss_outcome(y)
        design = np.column_stack([np.ones(len(t)), X])
        wt = w * t
        return {
            "sw": np.asarray(w.sum()),
            "swy": np.asarray(wt.sum()),
            "swyy": np.asarray(wt @ t),
            "ztwz": (design * w[:, None]).T @ design,
            "ztwy": design.T @ wt,
            "const": np.asarray(float(w @ aux)),
        }

    @staticmethod
    def _quadratic(values, arrays):
        """(b, sigma, Z'WZ b, the weighted residual sum of squares) at ``values``."""
        b = np.concatenate([np.atleast_1d(values["intercept"]), values.get("beta", np.zeros(0))])
        zb = arrays["ztwz"] @ b
        quad = float(arrays["swyy"]) + float(b @ zb - 2.0 * (arrays["ztwy"] @ b))
        return b, float(values["sigma"]), zb, quad

    def _loglik_grad(self, values, arrays):
        _, sigma, zb, quad = self._quadratic(values, arrays)
        ztwy = arrays["ztwy"]
        sw = float(arrays["sw"])
        inv2 = 1.0 / sigma**2
        ll = -sw * (_HALF_LOG_2PI + math.log(sigma)) - 0.5 * quad * inv2 + float(arrays["const"])
        gb = (ztwy - zb) * inv2
        grads = {"intercept": np.asarray(gb[0]), "sigma": np.asarray(-sw / sigma + quad / sigma**3)}
        if self.p:
            grads["beta"] = gb[1:]
        return ll, grads

    def logp_grad(self, x, arrays):
        r"""The generic :meth:`Part.logp_grad` written out for this layout (``intercept``,
        ``beta``, log ``sigma``; priors :math:`N(0, s^2)` and :math:`N^+(0, s^2)`, the
        log transform's Jacobian :math:`\log\sigma`): the same numbers without the generic
        per-parameter loop, which doubled the cost of a gradient on the sufficient-statistics
        path (``pseudopost.fitting.sufficient``)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.p + 2,):
            return super().logp_grad(x, arrays)
        b, log_sigma = x[:-1], float(x[-1])
        sigma = math.exp(log_sigma)
        s2 = self.prior_scale**2
        zb = arrays["ztwz"] @ b
        ztwy = arrays["ztwy"]
        quad = float(arrays["swyy"]) + float(b @ zb - 2.0 * (ztwy @ b))
        sw = float(arrays["sw"])
        inv2 = 1.0 / (sigma * sigma)
        ll = -sw * (_HALF_LOG_2PI + log_sigma) - 0.5 * quad * inv2 + float(arrays["const"])
        k = b.size
        lp = (-0.5 * float(b @ b) / s2 - k * (math.log(self.prior_scale) + _HALF_LOG_2PI)
              + 0.5 * math.log(2.0 / math.pi) - math.log(self.prior_scale)
              - 0.5 * sigma * sigma / s2 + log_sigma)  # fmt: skip
        grad = np.empty(k + 1)
        grad[:k] = (ztwy - zb) * inv2 - b / s2
        grad[k] = -sw + quad * inv2 - sigma * sigma / s2 + 1.0
        return ll + lp, grad

    def _loglik_hess(self, values, arrays):
        b, sigma, zb, quad = self._quadratic(values, arrays)
        ztwz, ztwy = arrays["ztwz"], arrays["ztwy"]
        k = b.size
        H = np.empty((k + 1, k + 1))
        H[:k, :k] = -ztwz / sigma**2
        H[:k, k] = H[k, :k] = -2.0 * (ztwy - zb) / sigma**3
        H[k, k] = float(arrays["sw"]) / sigma**2 - 3.0 * quad / sigma**4
        return H

    def _gauss_table(self, params, rows):
        sigma = params["sigma"]
        return self.eta_rows(params, rows), 1.0 / sigma, -np.log(sigma) - _HALF_LOG_2PI

    @staticmethod
    def transform(y: np.ndarray) -> np.ndarray:
        return y

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        eta = self.linear(params, X)
        return self.transform(eta + float(params["sigma"]) * special.ndtri(u))
