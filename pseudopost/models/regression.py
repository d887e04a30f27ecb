r"""Normal and log-normal regression: the ready models for continuous outcomes.

Priors (weakly informative, fixed by ``prior_scale`` = s, default 10; choose s from public
knowledge of the outcome's scale, never from the confidential data):

.. math::
    \beta_0 \sim N(0, s^2), \quad \beta_j \sim N(0, s^2), \quad \sigma \sim N^+(0, s^2).

* :class:`NormalRegression`: :math:`y_i \sim N(\beta_0 + z_i^\top\beta, \sigma^2)`.
* :class:`LogNormalRegression`: :math:`\log x_i \sim N(\beta_0 + z_i^\top\beta, \sigma^2)`, on
  the log scale. Its log-likelihood is the density of x *as given* (including the Jacobian
  :math:`-\log x_i`), because epsilon depends on the units of the released variable.

Synthesis by inversion: :math:`y^* = \eta + \sigma\,\Phi^{-1}(u)`, and :math:`x^* = e^{y^*}`
for the log-normal.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm

from pseudopost.models._glm import GLM
from pseudopost.models.base import Prepared

__all__ = ["LogNormalRegression", "NormalRegression"]


class _ContinuousGLM(GLM):
    """Location-scale regression: outcome ~ Dist(mu = eta, sigma)."""

    distribution: type[pm.Distribution]

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        mu = self.linear_predictor(prepared, self.prior_scale, prefix)
        sigma = pm.HalfNormal(f"{prefix}sigma", self.prior_scale)
        y = pm.Data(f"{self.outcome}_data", prepared.arrays[self.outcome])
        self.distribution(self.outcome, mu=mu, sigma=sigma, observed=y, shape=y.shape)


class NormalRegression(_ContinuousGLM):
    """Normal linear regression of ``outcome`` on ``predictors`` (see module docstring)."""

    family = "normal"
    distribution = pm.Normal


class LogNormalRegression(_ContinuousGLM):
    """Log-normal regression: log(outcome) normal-linear in ``predictors`` (outcome > 0)."""

    family = "lognormal"
    distribution = pm.LogNormal

    def check_outcome(self, y: np.ndarray, data: pd.DataFrame) -> None:
        self._first_bad(data, y <= 0, "strictly positive")

