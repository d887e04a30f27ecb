r"""Hurdle models: ready models for outcomes with many zeros (expenditure, capital gains, visits).

A logistic part decides whether :math:`x_i > 0`, with :math:`\psi_i = P(x_i > 0) =
\sigma(\gamma_0 + z_i^\top\gamma)` (``psi_intercept`` :math:`\gamma_0` ~ N(0, 5^2),
``psi_beta`` :math:`\gamma` ~ N(0, 2.5^2), dims ``predictor``), and a positive part gives the size:

* :class:`HurdleLogNormal`: :math:`x_i \mid x_i > 0 \sim \mathrm{LogNormal}(\beta_0 +
  z_i^\top\beta, \sigma^2)` with the priors of :class:`~pseudopost.models.LogNormalRegression`
  (``intercept``, ``beta``, ``sigma``; scale s = 10). The likelihood is a mass
  :math:`1 - \psi_i` at 0 and a density :math:`\psi_i f(x_i)` above it.
* :class:`HurdleNegativeBinomial`: :math:`x_i \mid x_i > 0` a zero-truncated negative binomial
  with mean parameter :math:`\mu_i = e^{\beta_0 + z_i^\top\beta}` and dispersion ``phi``
  (priors of :class:`~pseudopost.models.NegativeBinomialRegression`),
  :math:`P(x_i = k) = \psi_i\, \mathrm{NB}(k)/(1 - \mathrm{NB}(0))` for k >= 1.

A hurdle rather than a zero-inflated count model: zeros come from one process only (the units
with none), so the two parts separate, and the negative binomial lets the positive counts be
over-dispersed, which survey counts usually are (a zero-inflated Poisson cannot). All priors are
fixed numbers, never from the data. Log-likelihood and log-CDF are in log space,
with :math:`\log\psi = -\mathrm{softplus}(-\eta_\psi)` and
:math:`\log(1-\psi) = -\mathrm{softplus}(\eta_\psi)`:

.. math::
    F(x) = (1 - \psi) + \psi\, G(x), \qquad S(x) = \psi\, S_G(x) \quad (x \ge 0),

with G the positive part's CDF (for the count part :math:`G(k) = (F_{NB}(k) - F_{NB}(0)) /
(1 - F_{NB}(0))`). Inversion uses two uniforms per record: :math:`x^* = 0` if
:math:`u_1 \le 1 - \psi`, else :math:`G^{-1}(u_2)`, the family part's inversion
(:class:`~pseudopost.models.parts.LogNormalPart`,
:class:`~pseudopost.models.parts.ZeroTruncatedNegativeBinomialPart`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import normal_lccdf, normal_lcdf
from scipy import special

from pseudopost.models._glm import GLM
from pseudopost.models.base import Prepared
from pseudopost.models.counts import _CountGLM

__all__ = ["HurdleLogNormal", "HurdleNegativeBinomial"]

PSI_NAMES = ("psi_intercept", "psi_beta")
PSI_SCALE = 2.5


class _Hurdle(GLM):
    parameter_names = PSI_NAMES
    uniforms_per_record = 2

    def psi_predictor(
        self, prepared: Prepared, prefix: str, X: pt.TensorVariable | None
    ) -> pt.TensorVariable:
        return self.linear_predictor(
            prepared, PSI_SCALE, prefix, intercept_scale=2.0 * PSI_SCALE, X=X, names=PSI_NAMES
        )

    def is_zero(
        self,
        params: Mapping[str, np.ndarray],
        predictors: Mapping[str, np.ndarray],
        u: np.ndarray,
    ) -> np.ndarray:
        """u_1 <= 1 - psi = sigma(-eta_psi)."""
        eta = self.eta(params, predictors, len(u), names=PSI_NAMES)
        return u[:, 0] <= special.expit(-eta)

    def _hurdle_sample(self, params, predictors, u) -> np.ndarray:
        """0 where :meth:`is_zero`, else the positive part's inversion of ``u_2`` (the family
        part's :meth:`~pseudopost.models.parts.Part.sample`: log-normal or zero-truncated
        negative binomial)."""
        u = self.check_uniforms(u)
        X = self.design_matrix(predictors, len(u))
        x = self.family_part(params).sample(params, X, u[:, 1])
        return np.where(self.is_zero(params, predictors, u), 0.0, x)


# ---------------------------------------------------------------- log-normal
def _ln_dist(eta_psi, mu, sigma, size):
    return pm.HurdleLogNormal.dist(psi=pt.sigmoid(eta_psi), mu=mu, sigma=sigma, size=size)


def _ln_logp(value, eta_psi, mu, sigma):
    pos = pt.gt(value, 0)
    safe = pt.switch(pos, value, 1.0)
    positive = -pt.softplus(-eta_psi) + pm.logp(pm.LogNormal.dist(mu, sigma), safe)
    return pt.switch(pos, positive, pt.switch(pt.eq(value, 0), -pt.softplus(eta_psi), -np.inf))


def _ln_logcdf(value, eta_psi, mu, sigma):
    safe = pt.switch(pt.gt(value, 0), value, 1.0)
    positive = -pt.softplus(-eta_psi) + pm.logcdf(pm.LogNormal.dist(mu, sigma), safe)
    positive = pt.switch(pt.gt(value, 0), positive, -np.inf)
    return pt.switch(pt.lt(value, 0), -np.inf, pt.logaddexp(-pt.softplus(eta_psi), positive))


def _ln_logsf(value, eta_psi, mu, sigma):
    safe = pt.switch(pt.gt(value, 0), value, 1.0)
    positive = -pt.softplus(-eta_psi) + normal_lccdf(mu, sigma, pt.log(safe))
    return pt.switch(
        pt.gt(value, 0), positive, pt.switch(pt.lt(value, 0), 0.0, -pt.softplus(-eta_psi))
    )


class HurdleLogNormal(_Hurdle):
    """Zero or log-normal: ``outcome`` >= 0 with many zeros (see module docstring).

    Parameters: ``psi_intercept``, ``psi_beta`` (logit of P(x > 0)); ``intercept``, ``beta``,
    ``sigma`` (log-normal part); ``beta`` and ``psi_beta`` have dims ``predictor``.
    """

    family = "hurdle_lognormal"

    def check_outcome(self, y: np.ndarray, data: pd.DataFrame) -> None:
        self._first_bad(data, y < 0, "non-negative (0 or a positive amount)")

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        X = self.design(prepared, prefix)
        eta_psi = self.psi_predictor(prepared, prefix, X)
        mu = self.linear_predictor(prepared, self.prior_scale, prefix, X=X)
        sigma = pm.HalfNormal(f"{prefix}sigma", self.prior_scale)
        y = pm.Data(f"{self.outcome}_data", prepared.arrays[self.outcome])
        pm.CustomDist(
            self.outcome,
            eta_psi,
            mu,
            sigma,
            dist=_ln_dist,
            logp=_ln_logp,
            logcdf=_ln_logcdf,
            observed=y,
            shape=y.shape,
        )

    def log_survival(self, rv: pt.TensorVariable, value: pt.TensorVariable) -> pt.TensorVariable:
        return _ln_logsf(value, *rv.owner.op.dist_params(rv.owner))

    def log_prob_range_graph(
        self, model: pm.Model, lower: pt.TensorVariable, upper: pt.TensorVariable
    ) -> pt.TensorVariable:
        r""":math:`\log P(a \le X \le b) = \log(1\{a \le 0 \le b\}(1 - \psi) +
        \psi\,(G(b) - G(a)))`, the log-normal part from its left or right tail (whichever
        keeps it accurate) and never through F, whose mass at 0 would swamp small ranges."""
        rv = model[self.outcome]
        eta_psi, mu, sigma = rv.owner.op.dist_params(rv.owner)

        def log_g(x):
            return pt.switch(
                pt.gt(x, 0), normal_lcdf(mu, sigma, pt.log(pt.maximum(x, 1e-300))), -np.inf
            )

        def log_s(x):
            return pt.switch(
                pt.gt(x, 0), normal_lccdf(mu, sigma, pt.log(pt.maximum(x, 1e-300))), 0.0
            )

        lo_g = log_g(lower)
        left = pm.math.logdiffexp(log_g(upper), lo_g)
        right = pm.math.logdiffexp(log_s(lower), log_s(upper))
        positive = -pt.softplus(-eta_psi) + pt.switch(pt.gt(lo_g, np.log(0.5)), right, left)
        with_zero = pt.logaddexp(-pt.softplus(eta_psi), positive)
        out = pt.switch(pt.le(lower, 0), with_zero, positive)
        return pt.switch(pt.lt(upper, 0), -np.inf, out)

    def sample_outcome(
        self,
        params: Mapping[str, np.ndarray],
        predictors: Mapping[str, np.ndarray],
        u: np.ndarray,
    ) -> np.ndarray:
        return self._hurdle_sample(params, predictors, u)


# ---------------------------------------------------------------- negative binomial
def _nb_dist(eta_psi, mu, phi, size):
    return pm.HurdleNegativeBinomial.dist(psi=pt.sigmoid(eta_psi), mu=mu, alpha=phi, size=size)


def _nb_log_p0(mu, phi):
    """log NB(0) = phi * log(phi / (phi + mu))."""
    return -phi * pt.log1p(mu / phi)


def _nb_logp(value, eta_psi, mu, phi):
    pos = pt.ge(value, 1)
    safe = pt.switch(pos, value, 1)
    log_trunc = pt.log1mexp(_nb_log_p0(mu, phi))  # log(1 - NB(0))
    nb = pm.logp(pm.NegativeBinomial.dist(mu=mu, alpha=phi), safe)
    positive = -pt.softplus(-eta_psi) + nb - log_trunc
    return pt.switch(pos, positive, pt.switch(pt.eq(value, 0), -pt.softplus(eta_psi), -np.inf))


def _nb_logcdf(value, eta_psi, mu, phi):
    k = pt.floor(value)
    log_p0 = _nb_log_p0(mu, phi)
    safe = pt.switch(pt.ge(k, 1), k, 1.0)
    upto = pm.logcdf(pm.NegativeBinomial.dist(mu=mu, alpha=phi), safe)
    positive = -pt.softplus(-eta_psi) + pm.math.logdiffexp(upto, log_p0) - pt.log1mexp(log_p0)
    positive = pt.switch(pt.ge(k, 1), positive, -np.inf)
    return pt.switch(pt.lt(k, 0), -np.inf, pt.logaddexp(-pt.softplus(eta_psi), positive))


def _nb_logsf(value, eta_psi, mu, phi):
    r""":math:`\log S(k) = \log\psi + \log I_{\mu/(\mu+\phi)}(k + 1, \phi) - \log(1 - NB(0))`."""
    k = pt.maximum(pt.floor(value), 0.0)
    tail = pt.log(pt.betainc(k + 1.0, phi, mu / (mu + phi)))
    positive = -pt.softplus(-eta_psi) + tail - pt.log1mexp(_nb_log_p0(mu, phi))
    return pt.switch(pt.lt(value, 0), 0.0, positive)


class HurdleNegativeBinomial(_Hurdle, _CountGLM):
    """Zero or a zero-truncated negative binomial count (see module docstring).

    Parameters: ``psi_intercept``, ``psi_beta`` (logit of P(x > 0)); ``intercept``, ``beta``,
    ``phi`` (count part); ``beta`` and ``psi_beta`` have dims ``predictor``.
    """

    family = "hurdle_count"

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        X = self.design(prepared, prefix)
        eta_psi = self.psi_predictor(prepared, prefix, X)
        mu = pt.exp(
            self.linear_predictor(
                prepared, self.prior_scale, prefix, intercept_scale=2.0 * self.prior_scale, X=X
            )
        )
        phi = pm.Gamma(f"{prefix}phi", alpha=2.0, beta=0.1)
        y = self.observed_data(prepared)
        pm.CustomDist(
            self.outcome,
            eta_psi,
            mu,
            phi,
            dist=_nb_dist,
            logp=_nb_logp,
            logcdf=_nb_logcdf,
            observed=y,
            shape=y.shape,
        )

    def log_survival(self, rv: pt.TensorVariable, value: pt.TensorVariable) -> pt.TensorVariable:
        return _nb_logsf(value, *rv.owner.op.dist_params(rv.owner))

    def sample_outcome(
        self,
        params: Mapping[str, np.ndarray],
        predictors: Mapping[str, np.ndarray],
        u: np.ndarray,
    ) -> np.ndarray:
        return self._hurdle_sample(params, predictors, u)
