r"""Finite mixture of normals or log-normals: the ready model for a multi-modal continuous outcome.

.. math::
    p(x_i) = \sum_{j=1}^{k} w_j\, f(x_i \mid \mu_j, \sigma_j), \quad
    w \sim \mathrm{Dirichlet}(a\mathbf 1_k), \quad \mu_j \sim N(m_j, s^2),\ \mu_1 < \dots < \mu_k,
    \quad \sigma_j \sim N^+(0, s^2),

with f normal, or log-normal (:math:`\mu, \sigma` on the log scale, density of x as given). The
means are ordered (PyMC's ordered transform) so that components cannot switch labels; the prior
centres :math:`m_j` are evenly spaced in [-1, 1] (only an ordered starting point). Priors are
fixed numbers (``prior_scale`` s = 10, ``concentration`` a = 1), never from the data. No
predictors: use it for a column synthesized from its marginal, or as a first column.

Log-likelihood, log-CDF and log-survival are log-sum-exps of the components',
:math:`\log F(x) = \mathrm{logsumexp}_j(\log w_j + \log F_j(x))`, finite in the far tails.
Inversion uses two uniforms per record: the component from :math:`u_1` (smallest j with
:math:`\sum_{l \le j} w_l \ge u_1`), the value :math:`\mu_j + \sigma_j \Phi^{-1}(u_2)`
(exponentiated for the log-normal).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import normal_lccdf, normal_lcdf
from scipy import special

from pseudopost._validation import check_positive, check_positive_int
from pseudopost.models._glm import GLM
from pseudopost.models._levels import invert_cdf
from pseudopost.models.base import Prepared
from pseudopost.models.families import FAMILIES as _TABLE

__all__ = ["FiniteMixture"]

#: the component families (the ``component`` facet of the one family table)
FAMILIES = tuple(f.name for f in _TABLE.values() if f.component)
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _components(value, lognormal: bool):
    """(x, log x) per record with a trailing component axis; log x safe for x <= 0."""
    v = pt.shape_padright(value)
    if not lognormal:
        return v, None
    pos = pt.gt(v, 0)
    return pt.log(pt.switch(pos, v, 1.0)), pos


def _logp(lognormal: bool):
    def logp(value, w, mu, sigma):
        y, pos = _components(value, lognormal)
        comp = -0.5 * ((y - mu) / sigma) ** 2 - pt.log(sigma) - _LOG_SQRT_2PI
        if lognormal:
            comp = pt.switch(pos, comp - y, -np.inf)
        return pt.logsumexp(pt.log(w) + comp, axis=-1)

    return logp


def _logcdf(lognormal: bool, survival: bool = False):
    def logcdf(value, w, mu, sigma):
        y, pos = _components(value, lognormal)
        comp = (normal_lccdf if survival else normal_lcdf)(mu, sigma, y)
        if lognormal:
            comp = pt.switch(pos, comp, 0.0 if survival else -np.inf)
        return pt.logsumexp(pt.log(w) + comp, axis=-1)

    return logcdf


def _dist(lognormal: bool):
    def dist(w, mu, sigma, size):
        comps = (pm.LogNormal if lognormal else pm.Normal).dist(mu=mu, sigma=sigma)
        return pm.Mixture.dist(w=w, comp_dists=comps, size=size)

    return dist


class FiniteMixture(GLM):
    """Mixture of ``k`` normal or log-normal components for ``outcome`` (see module docstring).

    Parameters: ``w`` (weights), ``mu`` (ordered means), ``sigma``, each with dims
    ``component`` (coords 0..k-1).
    """

    uniforms_per_record = 2
    parameter_names = ("w", "mu")

    def __init__(
        self,
        outcome: str,
        k: int,
        family: str = "normal",
        *,
        prior_scale: float | None = None,
        concentration: float = 1.0,
    ) -> None:
        super().__init__(outcome, (), prior_scale=prior_scale)
        self.k = check_positive_int(k, "k", minimum=2)
        if family not in FAMILIES:
            raise ValueError(f"The 'family' parameter must be one of {FAMILIES}. Got {family!r}.")
        self.component_family = family
        self.family = f"{family}_mixture"
        self.concentration = check_positive(concentration, "concentration")

    def __repr__(self) -> str:
        return (
            f"FiniteMixture(outcome={self.outcome!r}, k={self.k}, "
            f"family={self.component_family!r}, prior_scale={self.prior_scale}, "
            f"concentration={self.concentration})"
        )

    @property
    def lognormal(self) -> bool:
        return self.component_family == "lognormal"

    def check_outcome(self, y: np.ndarray, data: pd.DataFrame) -> None:
        if self.lognormal:
            self._first_bad(data, y <= 0, "strictly positive")

    def coords(self, prefix: str = "", prepared: Prepared | None = None) -> dict[str, list]:
        return {f"{prefix}component": list(range(self.k))}

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        dims = f"{prefix}component"
        w = pm.Dirichlet(f"{prefix}w", a=np.full(self.k, self.concentration), dims=dims)
        mu = pm.Normal(
            f"{prefix}mu",
            np.linspace(-1.0, 1.0, self.k),  # fixed, increasing: an ordered starting point
            self.prior_scale,
            dims=dims,
            transform=pm.distributions.transforms.ordered,
        )
        sigma = pm.HalfNormal(f"{prefix}sigma", self.prior_scale, dims=dims)
        y = pm.Data(f"{self.outcome}_data", prepared.arrays[self.outcome])
        pm.CustomDist(
            self.outcome,
            w,
            mu,
            sigma,
            dist=_dist(self.lognormal),
            logp=_logp(self.lognormal),
            logcdf=_logcdf(self.lognormal),
            signature="(k),(k),(k)->()",
            observed=y,
            shape=y.shape,
        )

    def log_survival(self, rv: pt.TensorVariable, value: pt.TensorVariable) -> pt.TensorVariable:
        return _logcdf(self.lognormal, survival=True)(value, *rv.owner.op.dist_params(rv.owner))

    def sample_outcome(
        self,
        params: Mapping[str, np.ndarray],
        predictors: Mapping[str, np.ndarray],
        u: np.ndarray,
    ) -> np.ndarray:
        u = self.check_uniforms(u)
        w = np.asarray(params["w"], np.float64)
        mu, sigma = np.asarray(params["mu"], np.float64), np.asarray(params["sigma"], np.float64)
        cdf = np.broadcast_to(np.cumsum(w)[:-1], (len(u), self.k - 1))
        j = invert_cdf(cdf, u[:, 0]).astype(np.int64)
        x = mu[j] + sigma[j] * special.ndtri(u[:, 1])
        return np.exp(x) if self.lognormal else x
