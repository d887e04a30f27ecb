r"""Poisson and negative-binomial regression: the ready models for counts.

Log link, :math:`\log\mu_i = \beta_0 + z_i^\top\beta`. Priors (``prior_scale`` = s, default
2.5 as rstanarm's coefficients on the log scale; set it from public knowledge):

.. math::
    \beta_0 \sim N(0, (2s)^2), \quad \beta_j \sim N(0, s^2), \quad
    \phi \sim \mathrm{Gamma}(2, 0.1) \ \text{(negative binomial only)}.

The negative binomial is parameterised by mean and dispersion,
:math:`\mathrm{Var}(y_i) = \mu_i + \mu_i^2/\phi` (PyMC's ``NegativeBinomial(mu, alpha=phi)``);
Gamma(2, 0.1) keeps :math:`\phi` away from 0 and lets data pull it to large values (near-Poisson).
Outcomes must be non-negative integers. The range probability of a count counts both endpoints.
Synthesis by inversion is the family part's (``PoissonPart``, ``NegativeBinomialPart``: SciPy's
``poisson.ppf``, ``nbinom.ppf``), after a check that every mean is finite.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from pseudopost.models._glm import GLM
from pseudopost.models.base import Prepared

__all__ = ["NegativeBinomialRegression", "PoissonRegression"]


class _CountGLM(GLM):
    discrete = True
    default_prior_scale = 2.5

    def check_outcome(self, y: np.ndarray, data: pd.DataFrame) -> None:
        self._first_bad(data, (y < 0) | (y != np.round(y)), "a non-negative integer count")

    def log_mean(self, prepared: Prepared, prefix: str = "") -> pt.TensorVariable:
        return self.linear_predictor(
            prepared, self.prior_scale, prefix, intercept_scale=2.0 * self.prior_scale
        )

    def observed_data(self, prepared: Prepared) -> pt.TensorVariable:
        return pm.Data(f"{self.outcome}_data", prepared.arrays[self.outcome].astype(np.int64))

    def sample_outcome(
        self,
        params: Mapping[str, np.ndarray],
        predictors: Mapping[str, np.ndarray],
        u: np.ndarray,
    ) -> np.ndarray:
        u = self.check_uniforms(u)
        eta = self.eta(params, predictors, len(u))
        with np.errstate(over="ignore"):
            mu = np.exp(eta)
        if not np.all(np.isfinite(mu)):  # SciPy's nbinom.ppf never returns at p = 0 (mu = inf)
            i = int(np.flatnonzero(~np.isfinite(mu))[0])
            raise ValueError(
                f"The mean of '{self.outcome}' is not finite for record {i} under this posterior "
                f"draw (log mean {eta[i]!r}): no count can be drawn. Put its predictors on a "
                f"scale where exp(eta) stays finite (e.g. transforms={{column: 'log1p'}})."
            )
        return super().sample_outcome(params, predictors, u)


class PoissonRegression(_CountGLM):
    """Poisson log-linear regression of a count ``outcome`` on ``predictors``."""

    family = "poisson"

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        mu = pt.exp(self.log_mean(prepared, prefix))
        y = self.observed_data(prepared)
        pm.Poisson(self.outcome, mu=mu, observed=y, shape=y.shape)

    def log_survival(self, rv: pt.TensorVariable, value: pt.TensorVariable) -> pt.TensorVariable:
        r""":math:`\log P(X > k) = \log P(k + 1, \mu)` (regularised lower incomplete gamma);
        PyMC's logccdf cancels to -inf in the far right tail."""
        mu = rv.owner.op.dist_params(rv.owner)[0]
        k = pt.floor(value)
        return pt.switch(pt.lt(k, 0), 0.0, pt.log(pt.gammainc(k + 1.0, mu)))


class NegativeBinomialRegression(_CountGLM):
    """Negative-binomial (mean, dispersion ``phi``) log-linear regression of a count."""

    family = "negative_binomial"

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        mu = pt.exp(self.log_mean(prepared, prefix))
        phi = pm.Gamma(f"{prefix}phi", alpha=2.0, beta=0.1)
        y = self.observed_data(prepared)
        pm.NegativeBinomial(self.outcome, mu=mu, alpha=phi, observed=y, shape=y.shape)

    def log_survival(self, rv: pt.TensorVariable, value: pt.TensorVariable) -> pt.TensorVariable:
        r""":math:`\log P(X > k) = \log I_{\mu/(\mu+\phi)}(k + 1, \phi)` (regularised incomplete
        beta); PyMC's logccdf loses accuracy and cancels to -inf in the far right tail."""
        n, p = rv.owner.op.dist_params(rv.owner)[:2]  # PyMC's (n = phi, p = phi / (phi + mu))
        k = pt.floor(value)
        return pt.switch(pt.lt(k, 0), 0.0, pt.log(pt.betainc(k + 1.0, n, 1.0 - p)))
