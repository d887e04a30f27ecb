r"""A test reference: the PyMC model each column part is checked against.

A part (:mod:`pseudopost.models.parts`) writes out its family's numbers (statistics, density,
gradient, Hessian, inversion); the suite checks them against PyMC's own log density of the
same model: the family's ready model (:data:`pseudopost.models.families.FAMILIES`: the first
family whose part it is) with the part's priors, built on the part's active records with their
likelihood weighted (:func:`~pseudopost.models.weighting.weighted_model`). These reference
builders were methods of the parts until the ready models began to synthesize through their
parts (issue 29, "one family, one place"); as functions of the tests they keep the package's
imports running one way (ready model -> part). Import them with a relative import
(``from ..._reference.part_models import pymc_model``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from pseudopost.models.base import Prepared
from pseudopost.models.categorical import DirichletCategorical
from pseudopost.models.families import FAMILIES
from pseudopost.models.parts.data import check_weights
from pseudopost.models.registry import MODEL_NAMES
from pseudopost.models.weighting import weighted_model

__all__ = ["pymc_model", "ready_model"]


def ready_model(part):
    """The ready model with the part's priors (outcome ``"y"``, predictors ``x0..``)."""
    if part.family == "dirichlet_categorical":
        return DirichletCategorical("y", concentration=part.concentration)
    name = next((f.name for f in FAMILIES.values() if f.part == part.family and f.model), None)
    if name is None or part.family == "zero_truncated_negative_binomial":
        raise NotImplementedError(f"No ready model has the part {part.family!r} alone.")
    return MODEL_NAMES[name]("y", [f"x{j}" for j in range(part.p)], prior_scale=part.prior_scale)


def pymc_model(part, data, weights: np.ndarray) -> pm.Model:
    """The reference PyMC model of ``part`` on the active records of ``data``, their
    likelihood weighted by ``weights``. The zero-truncated negative binomial, which no ready
    model is alone, is the hurdle negative binomial's count part (its priors; log NB(y) -
    log(1 - NB(0)) through PyMC's ``NegativeBinomial``)."""
    data = part.check_data(data)
    w = check_weights(weights, data.n)
    act = data.active
    if part.family == "zero_truncated_negative_binomial":
        return weighted_model(_truncated_count(part, data, act), weights=w[act])
    model = ready_model(part)
    arrays = {f"x{j}": data.X[act, j].copy() for j in range(part.p)}
    arrays["y"] = data.y[act].copy()
    n = int(act.sum())
    k = getattr(part, "n_levels", None)
    categories = {"y": tuple(range(k))} if k is not None else {}
    prepared = Prepared(arrays, n, pd.RangeIndex(n), {}, categories)
    return weighted_model(model.build(prepared), weights=w[act])


def _truncated_count(part, data, act) -> pm.Model:
    s = part.prior_scale

    def logp(value, mu, phi):
        nb = pm.logp(pm.NegativeBinomial.dist(mu=mu, alpha=phi), value)
        return nb - pt.log1mexp(-phi * pt.log1p(mu / phi))

    with pm.Model(coords=part.coords()) as model:
        eta = pm.Normal("intercept", 0.0, 2.0 * s)
        if part.p:
            X = pm.Data("X", data.X[act])
            eta = eta + X @ pm.Normal("beta", 0.0, s, dims="predictor")
        else:
            eta = eta + pt.zeros(int(act.sum()))
        phi = pm.Gamma("phi", alpha=2.0, beta=0.1)
        y = pm.Data("y_data", data.y[act].astype(np.int64))
        pm.CustomDist("y", pt.exp(eta), phi, logp=logp, observed=y, shape=y.shape)
    return model
