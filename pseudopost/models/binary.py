r"""Logistic regression: the ready model for a binary outcome.

.. math::
    P(y_i = 1) = \sigma(\eta_i), \quad \eta_i = \beta_0 + z_i^\top\beta, \quad
    \beta_0 \sim N(0, (2s)^2), \ \beta_j \sim N(0, s^2),

with ``prior_scale`` s = 2.5 by default (rstanarm's scale for logit coefficients; fixed numbers,
never from the data). The outcome may be 0/1, bool, or any column with two levels (a two-level
``Categorical``, two strings): code 1 is the second level. Log-likelihood and log-CDF are computed
from :math:`\log\sigma(\eta) = -\mathrm{softplus}(-\eta)`, finite for any :math:`\eta`:

.. math::
    \log p(y \mid \eta) = -\mathrm{softplus}(\mp\eta), \quad
    \log F(0) = -\mathrm{softplus}(\eta), \quad \log F(1) = 0.

Inversion: :math:`y^* = 1` iff :math:`u > \sigma(-\eta) = F(0)`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from pseudopost.models._levels import LevelGLM
from pseudopost.models.base import Prepared

__all__ = ["LogisticRegression"]


def _dist(eta, size):
    return pm.Bernoulli.dist(logit_p=eta, size=size)


def _logp(value, eta):
    one = -pt.softplus(-eta)
    zero = -pt.softplus(eta)
    return pt.switch(pt.eq(value, 1), one, pt.switch(pt.eq(value, 0), zero, -np.inf))


def _logcdf(value, eta):
    return pt.switch(pt.lt(value, 0), -np.inf, pt.switch(pt.lt(value, 1), -pt.softplus(eta), 0.0))


def _logsf(value, eta):
    return pt.switch(pt.lt(value, 0), 0.0, pt.switch(pt.lt(value, 1), -pt.softplus(-eta), -np.inf))


class LogisticRegression(LevelGLM):
    """Logistic regression of a binary ``outcome`` on ``predictors`` (see module docstring).

    Parameters: ``intercept``, ``beta`` (dims ``predictor``).
    """

    family = "logistic"

    def check_levels(self, levels: tuple, data: pd.DataFrame) -> None:
        s = data[self.outcome]
        numeric = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s)
        if numeric and not isinstance(s.dtype, pd.CategoricalDtype):
            v = s.to_numpy(dtype=float, na_value=np.nan)
            self._first_bad(data, (v != 0) & (v != 1), "0 or 1 (or bool, or two levels)")
        if len(levels) != 2:
            raise ValueError(
                f"Column '{self.outcome}' has {len(levels)} level(s) {list(levels)}; "
                f"LogisticRegression needs exactly 2 (CategoricalRegression takes more)."
            )

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        eta = self.linear_predictor(
            prepared, self.prior_scale, prefix, intercept_scale=2.0 * self.prior_scale
        )
        y = self.observed_codes(prepared)
        pm.CustomDist(
            self.outcome, eta, dist=_dist, logp=_logp, logcdf=_logcdf, observed=y, shape=y.shape
        )

    def log_survival(self, rv: pt.TensorVariable, value: pt.TensorVariable) -> pt.TensorVariable:
        (eta,) = rv.owner.op.dist_params(rv.owner)
        return _logsf(value, eta)
