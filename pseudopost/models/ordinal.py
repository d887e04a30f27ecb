r"""Ordered logit (proportional odds): the ready model for an ordinal outcome.

For K ordered levels (codes 0..K-1) and cutpoints :math:`c_0 < \dots < c_{K-2}`,

.. math::
    F(k \mid z_i) = P(y_i \le k) = \sigma(c_k - \eta_i), \quad \eta_i = z_i^\top\beta,
    \qquad P(y_i = k) = \sigma(c_k - \eta_i) - \sigma(c_{k-1} - \eta_i)

(:math:`c_{-1} = -\infty`, :math:`c_{K-1} = \infty`; no intercept: the cutpoints hold it).
Priors (fixed numbers, never from the data): :math:`c_k \sim N(k - (K-2)/2, (2s)^2)` constrained
increasing (PyMC's ordered transform; the centres, spaced 1 apart on the logit scale, only give an
ordered starting point), ``beta`` ~ N(0, s^2), s = ``prior_scale`` = 2.5.

Log-likelihood and log-CDF are evaluated in log space, finite far into both tails:
:math:`\log F(k) = -\mathrm{softplus}(\eta - c_k)`, :math:`\log S(k) = -\mathrm{softplus}(c_k -
\eta)`, and with :math:`a = c_k - \eta`, :math:`b = c_{k-1} - \eta`,

.. math::
    \log(\sigma(a) - \sigma(b)) = \log(e^a - e^b) - \mathrm{softplus}(a) - \mathrm{softplus}(b)

(for :math:`b > 0` the same identity on :math:`(-b, -a)`). Sensitive ranges are in codes (both
endpoints count). Inversion: the smallest k with :math:`F(k) \ge u`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from pseudopost.models._levels import LevelGLM, level_indicator
from pseudopost.models.base import Prepared

__all__ = ["OrdinalRegression"]


def _dist(eta, cutpoints, size):
    return pm.OrderedLogistic.dist(eta=eta, cutpoints=cutpoints, size=size)


def _cut(cutpoints, k):
    """c_k for integer codes k (clipped into 0..K-2), broadcast against k."""
    m = cutpoints.shape[-1]
    idx = pt.clip(pt.cast(k, "int64"), 0, m - 1)
    c = cutpoints if cutpoints.ndim > 1 else cutpoints[None, :]
    return (c * level_indicator(idx, m)).sum(-1)


def _log_sigmoid_diff(a, b):
    """log(sigma(a) - sigma(b)) for a > b (both finite)."""
    left = pm.math.logdiffexp(a, b) - pt.softplus(a) - pt.softplus(b)
    right = pm.math.logdiffexp(-b, -a) - pt.softplus(-a) - pt.softplus(-b)
    return pt.switch(pt.gt(b, 0), right, left)


def _logp(value, eta, cutpoints):
    m = cutpoints.shape[-1]  # K - 1
    k = pt.cast(value, "int64")
    a = _cut(cutpoints, k) - eta  # c_k - eta
    b = _cut(cutpoints, k - 1) - eta  # c_{k-1} - eta
    bottom, top = pt.eq(k, 0), pt.eq(k, m)
    edge = pt.or_(bottom, top)
    mid = _log_sigmoid_diff(pt.switch(edge, 1.0, a), pt.switch(edge, 0.0, b))
    out = pt.switch(bottom, -pt.softplus(-a), pt.switch(top, -pt.softplus(b), mid))
    return pt.switch(pt.and_(pt.ge(k, 0), pt.le(k, m)), out, -np.inf)


def _logcdf(value, eta, cutpoints):
    m = cutpoints.shape[-1]
    k = pt.floor(value)
    inside = -pt.softplus(eta - _cut(cutpoints, k))
    return pt.switch(pt.lt(k, 0), -np.inf, pt.switch(pt.ge(k, m), 0.0, inside))


def _logsf(value, eta, cutpoints):
    m = cutpoints.shape[-1]
    k = pt.floor(value)
    inside = -pt.softplus(_cut(cutpoints, k) - eta)
    return pt.switch(pt.lt(k, 0), 0.0, pt.switch(pt.ge(k, m), -np.inf, inside))


class OrdinalRegression(LevelGLM):
    """Ordered logit of an ordinal ``outcome`` on ``predictors`` (see module docstring).

    ``levels`` lists the levels lowest first (it may include levels absent from the data);
    by default an ordered ``Categorical``'s observed categories, or a numeric column's sorted
    observed values. Parameters: ``cutpoints`` (dims ``cutpoint``, K-1 values), ``beta``
    (dims ``predictor``).
    """

    family = "ordinal"
    parameter_names = ("cutpoints",)
    ordered = True

    def __init__(
        self,
        outcome: str,
        predictors: Sequence[str] = (),
        levels: Sequence | None = None,
        *,
        prior_scale: float | None = None,
    ) -> None:
        super().__init__(outcome, predictors, prior_scale=prior_scale)
        if levels is not None:
            if isinstance(levels, str) or not isinstance(levels, Sequence | pd.Index | np.ndarray):
                raise TypeError(f"'levels' must be a sequence of levels. Got {levels!r}.")
            levels = tuple(np.asarray(levels, dtype=object).tolist())
            if len(set(levels)) != len(levels):
                raise ValueError(f"'levels' has duplicates: {list(levels)}.")
            if len(levels) < 2:
                raise ValueError(f"'levels' must list at least 2 levels. Got {list(levels)}.")
        self.levels = levels

    def part_options(self, params: Mapping[str, np.ndarray]) -> dict:
        return {"n_levels": np.asarray(params["cutpoints"]).shape[-1] + 1}

    def __repr__(self) -> str:
        return (
            f"OrdinalRegression(outcome={self.outcome!r}, predictors={list(self.predictors)!r}, "
            f"levels={None if self.levels is None else list(self.levels)!r}, "
            f"prior_scale={self.prior_scale})"
        )

    def coords(self, prefix: str = "", prepared: Prepared | None = None) -> dict[str, list]:
        out = super().coords(prefix, prepared)
        if prepared is not None:
            lv = [str(v) for v in prepared.categories[self.outcome]]
            out[f"{prefix}cutpoint"] = [f"{a}|{b}" for a, b in pairwise(lv)]
        return out

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        m = self.n_levels(prepared) - 1
        cutpoints = pm.Normal(
            f"{prefix}cutpoints",
            np.arange(m) - (m - 1) / 2.0,  # fixed, increasing: an ordered starting point
            2.0 * self.prior_scale,
            dims=f"{prefix}cutpoint",
            transform=pm.distributions.transforms.ordered,
        )
        X = self.design(prepared, prefix)
        y = self.observed_codes(prepared)
        eta = pt.zeros(y.shape[0])
        if self.predictors:
            beta = pm.Normal(f"{prefix}beta", 0.0, self.prior_scale, dims=f"{prefix}predictor")
            eta = X @ beta
        pm.CustomDist(
            self.outcome,
            eta,
            cutpoints,
            dist=_dist,
            logp=_logp,
            logcdf=_logcdf,
            signature="(),(k)->()",
            observed=y,
            shape=y.shape,
        )

    def log_survival(self, rv: pt.TensorVariable, value: pt.TensorVariable) -> pt.TensorVariable:
        eta, cutpoints = rv.owner.op.dist_params(rv.owner)
        return _logsf(value, eta, cutpoints)
