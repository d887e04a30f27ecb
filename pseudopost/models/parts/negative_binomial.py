r"""Negative-binomial part: the log-linear NB regression (:class:`NegativeBinomialRegression`).

:math:`y_i \sim \mathrm{NB}(\mu_i, \phi)` with :math:`\log\mu_i = \eta_i = \beta_0 +
z_i^\top\beta`, :math:`\mathrm{Var} = \mu + \mu^2/\phi`; priors :math:`\beta_0 \sim N(0,
(2s)^2)`, :math:`\beta_j \sim N(0, s^2)`, :math:`\phi \sim \mathrm{Gamma}(2, 0.1)` (log
transform). With :math:`\ell = \log(\phi + e^\eta)`,

.. math::
    \log \mathrm{NB}(y \mid \mu, \phi) = \log\Gamma(y + \phi) - \log\Gamma(\phi) - \log y!
        + y(\eta - \ell) + \phi(\log\phi - \ell),

so the weighted log-likelihood depends on the data through :math:`W_g, Y_g` per design row g,
the weight :math:`V_v = \sum_{i: y_i = v} w_i` of each distinct outcome v, and the constant
:math:`-\sum_i w_i \log y_i!` (guide: *Whole files*):

.. math::
    \ell_w = \sum_v V_v \log\Gamma(v + \phi) - W\log\Gamma(\phi)
      + \sum_g \bigl[Y_g(\eta_g - \ell_g) + W_g\phi(\log\phi - \ell_g)\bigr] + \text{const}.

With :math:`q_g = e^{\eta_g - \ell_g} = \mu_g/(\phi + \mu_g)`:
:math:`\partial_{\eta_g} = Y_g(1 - q_g) - W_g\phi q_g` and
:math:`\partial_\phi = \sum_v V_v\psi(v + \phi) - W\psi(\phi) + \sum_g[-Y_g e^{-\ell_g} +
W_g(\log\phi - \ell_g + q_g)]`. For :math:`\phi > 10^{10}` PyMC (and the fused kernels) use the
Poisson limit; so does this part. Inversion: ``scipy.stats.nbinom.ppf(u, phi, phi/(phi+mu))``,
as the ready model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import special, stats

from pseudopost.models.parts.base import Part
from pseudopost.models.parts.bernoulli import coefficients, linear_grads, linear_rows
from pseudopost.models.parts.layout import Layout, Param
from pseudopost.models.parts.poisson import count_statistics, is_count

__all__ = ["POISSON_LIMIT", "NegativeBinomialPart"]

POISSON_LIMIT = 1e10


@dataclass(frozen=True)
class NegativeBinomialPart(Part):
    """Negative-binomial regression part (see the module docstring). Parameters
    ``intercept``, ``beta``, ``phi``."""

    family = "negative_binomial"
    support = "a non-negative integer count"
    minimum = 0.0

    def _in_support(self, y):
        return is_count(y, self.minimum)

    @cached_property
    def layout(self) -> Layout:
        phi = Param("phi", (), "log", ("gamma", 2.0, 0.1))
        return Layout((*coefficients(self, 2.0 * self.prior_scale), phi))

    def _statistics(self, y, X, w) -> dict:
        out = count_statistics(X, y, w)
        values, inv = np.unique(y, return_inverse=True)
        vw = np.bincount(inv.reshape(-1), weights=w, minlength=values.size)
        out.update(values=values.astype(np.float64), vweights=vw.astype(np.float64))
        return out

    def _loglik_grad(self, values, arrays):
        rows, w, wy = arrays["rows"], arrays["w"], arrays["wy"]
        v, vw = arrays["values"], arrays["vweights"]
        eta = linear_rows(self, values, rows)
        phi = float(values["phi"])
        ll = float(arrays["const"])
        if phi > POISSON_LIMIT:  # PyMC's Poisson limit: no dependence on phi
            we = w * np.exp(eta)
            ll += float(wy @ eta - we.sum())
            d_eta, d_phi = wy - we, 0.0
        else:
            log_phi = math.log(phi)
            ell = np.logaddexp(log_phi, eta)
            q = np.exp(eta - ell)
            total_w = float(w.sum())
            ll += float(vw @ special.gammaln(v + phi)) - total_w * math.lgamma(phi)
            ll += float(wy @ (eta - ell) + phi * (w @ (log_phi - ell)))
            d_eta = wy * (1.0 - q) - w * phi * q
            d_phi = float(vw @ special.digamma(v + phi)) - total_w * float(special.digamma(phi))
            d_phi += float(w @ (log_phi - ell + q) - wy @ np.exp(-ell))
        t_ll, t_eta, t_phi = self._truncation(eta, phi, w)
        grads = linear_grads(self, rows, d_eta + t_eta)
        grads["phi"] = np.asarray(d_phi + t_phi)
        return ll + t_ll, grads

    def _truncation(self, eta, phi, w):
        """(log-likelihood, d/deta, d/dphi) of the truncation term (none here)."""
        return 0.0, 0.0, 0.0

    def _key_table(self, params, rows, key_row, key_y):
        return self._nb_table(params, rows, key_row, key_y)[0]

    def _nb_table(self, params, rows, key_row, key_y):
        """(log NB per key (B, keys), eta (B, U), phi (B, 1)): log Gamma terms per distinct
        outcome, log(phi + e^eta) per design row, gathered per key (module docstring)."""
        eta = self.eta_rows(params, rows)
        phi = params["phi"][:, None]
        values, vidx = np.unique(key_y, return_inverse=True)
        vidx = vidx.reshape(-1)
        lg = special.gammaln(values + phi) - special.gammaln(phi) - special.gammaln(values + 1.0)
        log_phi = np.log(phi)
        ell = np.logaddexp(log_phi, eta)[:, key_row]
        ek = eta[:, key_row]
        tail = np.where(key_y != 0.0, key_y * (ek - ell), 0.0)
        f = lg[:, vidx] + tail + phi * (log_phi - ell)
        big = phi[:, 0] > POISSON_LIMIT
        if big.any():  # PyMC's Poisson limit
            e = ek[big]
            f[big] = key_y * e - np.exp(e) - special.gammaln(key_y + 1.0)
        return f, eta, phi

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        mu = np.exp(self.linear(params, X))
        phi = float(params["phi"])
        return stats.nbinom.ppf(u, phi, phi / (phi + mu))
