"""weighted_model: the pseudo posterior's log density, exactly, and the conjugate posterior."""

import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pseudopost import PseudoPosterior
from pseudopost.models import PyMCModel, weighted_model


def _normal_model(y):
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=y)
    return m


def test_weighted_logp_is_alpha_times_loglik_plus_prior(rng):
    y = rng.normal(1.0, 1.0, 25)
    alpha = rng.uniform(0, 1, 25)
    m = _normal_model(y)
    w = weighted_model(m, weights=alpha)
    f = w.compile_logp()
    for mu in (-3.0, 0.4, 2.5):
        want = stats.norm(0, 10).logpdf(mu) + np.sum(alpha * stats.norm(mu, 1).logpdf(y))
        assert f({"mu": mu}) == pytest.approx(want, rel=1e-8)
    # the original model is untouched
    assert "alpha" not in m.named_vars and len(m.potentials) == 0


def test_joint_record_weight_multiplies_sum_of_variables(rng):
    y1, y2 = rng.normal(size=10), rng.normal(size=10)
    alpha = rng.uniform(0, 1, 10)
    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 10)
        pm.Normal("a", mu, 1.0, observed=y1)
        pm.Normal("b", 2 * mu, 1.0, observed=y2)
    f = weighted_model(m, weights=alpha).compile_logp()
    mu = 0.3
    want = stats.norm(0, 10).logpdf(mu) + np.sum(
        alpha * (stats.norm(mu, 1).logpdf(y1) + stats.norm(2 * mu, 1).logpdf(y2))
    )
    assert f({"mu": mu}) == pytest.approx(want, rel=1e-8)


def test_conjugate_weighted_posterior_matches_closed_form(rng):
    """y_i ~ N(mu, 1), mu ~ N(0, 10^2), fixed alpha: precision 1/100 + sum alpha,
    mean sum(alpha y)/precision. Within 4 Monte Carlo standard errors."""
    y = rng.normal(3.0, 1.0, 60)
    alpha = rng.uniform(0.05, 1.0, 60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = PseudoPosterior(PyMCModel(_normal_model(y))).fit(
            draws=1500, tune=500, chains=2, seed=3, weights=alpha
        )
    prec = 1 / 100 + alpha.sum()
    mean, sd = (alpha * y).sum() / prec, prec**-0.5
    draws = res.posterior["mu"].to_numpy().ravel()
    import arviz as az

    mcse = float(az.mcse(res.posterior["mu"]).item())
    assert abs(draws.mean() - mean) < 4 * mcse
    assert abs(draws.std() - sd) < 0.1 * sd
    np.testing.assert_allclose(res.alpha.to_numpy(), alpha)
