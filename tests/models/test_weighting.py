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


@pytest.mark.parametrize("data_shape", [False, True])
def test_observed_parent_enters_at_its_observed_value(data_shape):
    """b ~ N(a, 1) with a observed: the per-record log-likelihood (risk, accountant) must use the
    observed a, as the weighted model's density does, not a random draw of a."""
    from pseudopost.models import RecordFunction

    rng = np.random.default_rng(3)
    a_obs, b_obs = rng.normal(size=7), rng.normal(size=7)
    with pm.Model() as m:
        mu = pm.Normal("mu")
        if data_shape:
            g = pm.Data("g", np.zeros(7))
            a = pm.Normal("a", mu + g, 1.0, observed=a_obs, shape=g.shape)
        else:
            a = pm.Normal("a", mu, 1.0, observed=a_obs, shape=7)
        pm.Normal("b", a, 1.0, observed=b_obs, shape=7)
    mus = np.array([-0.4, 0.0, 1.3])
    got = RecordFunction(m, ["a", "b"])({"mu": mus})
    want = stats.norm.logpdf(a_obs, mus[:, None]) + stats.norm.logpdf(b_obs, a_obs)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # the weighted model's density uses the observed a too: alpha = 1 gives the plain posterior
    wm = weighted_model(m)
    point = {"mu": np.array(0.7)}
    np.testing.assert_allclose(wm.compile_logp()(point), m.compile_logp()(point), rtol=1e-12)


def test_vector_valued_records_fit_and_account():
    """One record = one row of a (n, 2) observed variable: the accountant uses the row's summed
    log density, and the result keeps the row in observed_data."""
    Y = np.random.default_rng(0).normal(size=(20, 2))
    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 1, shape=2)
        pm.Normal("y", mu, 1.0, observed=Y, shape=(20, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = PseudoPosterior(m).fit(draws=50, tune=50, seed=0, progress=False)
    assert res.datatree["observed_data"]["y"].shape == (20, 2)
    mu_draws = res.posterior["mu"].to_numpy().reshape(-1, 2)
    f = stats.norm.logpdf(Y[None], mu_draws[:, None, :]).sum(axis=2)
    np.testing.assert_allclose(res.lipschitz, res.alpha * np.abs(f).max(axis=0), rtol=1e-9)
