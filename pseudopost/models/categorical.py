r"""Categorical outcomes: multinomial logit on predictors, and a Dirichlet-categorical without.

* :class:`CategoricalRegression`: for K levels (codes 0..K-1, level 0 the reference),

  .. math::
      P(y_i = k) = \frac{e^{\eta_{ik}}}{\sum_l e^{\eta_{il}}}, \quad \eta_{i0} = 0, \quad
      \eta_{ik} = \beta_{0k} + z_i^\top \beta_{\cdot k} \ (k \ge 1),

  with ``intercept`` (dims ``level``: the K-1 non-reference levels) ~ N(0, (2s)^2) and ``beta``
  (dims ``predictor``, ``level``) ~ N(0, s^2), s = ``prior_scale`` = 2.5. The log-likelihood is
  the log-softmax, finite for any logits.
* :class:`DirichletCategorical`: :math:`p \sim \mathrm{Dirichlet}(a\mathbf 1_K)`,
  :math:`y_i \sim \mathrm{Categorical}(p)`, parameter ``p`` (dims ``level``: all K levels),
  ``concentration`` a = 1 (uniform on the simplex).

Priors are fixed numbers, never taken from the data. Levels are the outcome's levels that occur in
the data (in a ``Categorical``'s category order, sorted otherwise); one level is an error.
Unordered levels have no CDF, so sensitive ranges are refused. Inversion: the smallest code k
with :math:`\sum_{l \le k} p_l \ge u`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pseudopost._validation import check_positive
from pseudopost.models._levels import LevelGLM, level_indicator
from pseudopost.models.base import Prepared

__all__ = ["CategoricalRegression", "DirichletCategorical"]


def _dist(logits, size):
    return pm.Categorical.dist(logit_p=logits, size=size)


def _logp(value, logits):
    k = logits.shape[-1]
    lp = (pt.special.log_softmax(logits, axis=-1) * level_indicator(value, k)).sum(axis=-1)
    inside = pt.and_(pt.ge(value, 0), pt.lt(value, k))
    return pt.switch(inside, lp, -np.inf)


class _Unordered(LevelGLM):
    def outcome_values(self, prepared: Prepared) -> np.ndarray:
        raise ValueError(
            f"Sensitive ranges need an ordered outcome; '{self.outcome}' is an unordered "
            f"categorical ({type(self).__name__}). Use OrdinalRegression if its levels are ordered."
        )

    def log_prob_range_graph(
        self, model: pm.Model, lower: pt.TensorVariable, upper: pt.TensorVariable
    ) -> pt.TensorVariable:
        return self.outcome_values(None)  # raises: no CDF without an order



class CategoricalRegression(_Unordered):
    """Multinomial logit of a categorical ``outcome`` on ``predictors`` (see module docstring).

    Parameters: ``intercept`` (dims ``level``), ``beta`` (dims ``predictor``, ``level``); the
    ``level`` coords are the non-reference levels (as strings).
    """

    family = "categorical"

    def part_options(self, params: Mapping[str, np.ndarray]) -> dict:
        return {"n_levels": np.asarray(params["intercept"]).shape[-1] + 1}

    def coords(self, prefix: str = "", prepared: Prepared | None = None) -> dict[str, list]:
        out = super().coords(prefix, prepared)
        if prepared is not None:
            out[f"{prefix}level"] = [str(v) for v in prepared.categories[self.outcome][1:]]
        return out

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        s = self.prior_scale
        intercept = pm.Normal(f"{prefix}intercept", 0.0, 2.0 * s, dims=f"{prefix}level")
        X = self.design(prepared, prefix)
        y = self.observed_codes(prepared)
        n = y.shape[0]  # symbolic, so that the accountant can slice records
        eta = intercept[None, :] + pt.zeros((n, self.n_levels(prepared) - 1))
        if self.predictors:
            beta = pm.Normal(f"{prefix}beta", 0.0, s, dims=(f"{prefix}predictor", f"{prefix}level"))
            eta = eta + X @ beta
        logits = pt.concatenate([pt.zeros((n, 1)), eta], axis=1)
        pm.CustomDist(
            self.outcome,
            logits,
            dist=_dist,
            logp=_logp,
            signature="(k)->()",
            observed=y,
            shape=y.shape,
        )

class DirichletCategorical(_Unordered):
    """Categorical outcome with a Dirichlet prior on its level probabilities (no predictors).

    Parameter: ``p`` (dims ``level``: all K levels, as strings).
    """

    family = "dirichlet_categorical"
    parameter_names = ("p",)

    def __init__(self, outcome: str, *, concentration: float = 1.0) -> None:
        super().__init__(outcome, ())
        self.concentration = check_positive(concentration, "concentration")

    def __repr__(self) -> str:
        return f"DirichletCategorical(outcome={self.outcome!r}, concentration={self.concentration})"

    def part_options(self, params: Mapping[str, np.ndarray]) -> dict:
        return {"n_levels": np.asarray(params["p"]).shape[-1], "concentration": self.concentration}

    def coords(self, prefix: str = "", prepared: Prepared | None = None) -> dict[str, list]:
        if prepared is None:
            return {}
        return {f"{prefix}level": [str(v) for v in prepared.categories[self.outcome]]}

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        k = self.n_levels(prepared)
        p = pm.Dirichlet(f"{prefix}p", a=np.full(k, self.concentration), dims=f"{prefix}level")
        y = self.observed_codes(prepared)
        pm.Categorical(self.outcome, p=p, observed=y, shape=y.shape)
