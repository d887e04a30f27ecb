"""FiniteMixture: log-likelihood and log-CDF against SciPy (far tails included), inversion with
two uniforms, ordered means, bad input."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from pseudopost import PseudoPosterior
from pseudopost._streams import record_uniforms
from pseudopost.models import FiniteMixture, RecordFunction

DRAWS = {
    "w": np.array([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1]]),
    "mu": np.array([[-2.0, 0.5, 3.0], [-1.0, 0.0, 1.0]]),
    "sigma": np.array([[0.5, 1.0, 2.0], [0.3, 0.4, 0.5]]),
}
X = {
    "normal": np.array([-60.0, -2.0, 0.0, 0.5, 4.0, 45.0]),
    "lognormal": np.array([1e-30, 0.1, 1.0, 2.0, 30.0, 1e8]),
}


def _components(family, d=DRAWS):
    mu, s = d["mu"][:, None, :], d["sigma"][:, None, :]
    if family == "normal":
        return stats.norm(mu, s)
    return stats.lognorm(s=s, scale=np.exp(mu))


def _setup(family):
    model = FiniteMixture("x", 3, family)
    base = model.build(model.prepare(pd.DataFrame({"x": X[family]})))
    return model, base


@pytest.mark.parametrize("family", ["normal", "lognormal"])
def test_loglik_is_logsumexp_of_scipy_components(family):
    _, base = _setup(family)
    assert [rv.name for rv in base.free_RVs] == ["w", "mu", "sigma"]
    assert base.named_vars_to_dims["mu"] == ("component",)
    got = RecordFunction(base)(DRAWS)
    comps = _components(family).logpdf(X[family][None, :, None])
    want = special.logsumexp(comps, b=DRAWS["w"][:, None, :], axis=2)
    np.testing.assert_allclose(got, want, rtol=1e-11)
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("family", ["normal", "lognormal"])
def test_log_prob_range_matches_scipy_in_both_tails(family):
    model, base = _setup(family)
    fn = RecordFunction(
        base,
        graph=lambda m, o, e: model.log_prob_range_graph(m, e["lower"], e["upper"]),
        extra_inputs=("lower", "upper"),
    )
    x = X[family]
    lower, upper = (x - 0.5, x + 0.5) if family == "normal" else (0.8 * x, 1.25 * x)
    got = fn(DRAWS, lower=lower, upper=upper)
    comps = _components(family)
    w = DRAWS["w"][:, None, :]
    log_f = lambda v: special.logsumexp(comps.logcdf(v[None, :, None]), b=w, axis=2)  # noqa: E731
    log_s = lambda v: special.logsumexp(comps.logsf(v[None, :, None]), b=w, axis=2)  # noqa: E731
    with np.errstate(divide="ignore"):
        left = log_f(upper) + np.log1p(-np.exp(log_f(lower) - log_f(upper)))
        right = log_s(lower) + np.log1p(-np.exp(log_s(upper) - log_s(lower)))
    want = np.where(log_f(lower) > np.log(0.5), right, left)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-7)


def test_log_cdf_at_the_support_edges():
    model, base = _setup("lognormal")
    fn = RecordFunction(
        base,
        graph=lambda m, o, e: model.log_prob_range_graph(m, e["lower"], e["upper"]),
        extra_inputs=("lower", "upper"),
    )
    n = X["lognormal"].size
    whole = fn(DRAWS, lower=np.full(n, -1.0), upper=np.full(n, np.inf))
    np.testing.assert_allclose(whole, 0.0, atol=1e-12)
    assert np.all(fn(DRAWS, lower=np.full(n, -5.0), upper=np.full(n, 0.0)) == -np.inf)


@pytest.mark.parametrize("family", ["normal", "lognormal"])
def test_inversion_picks_component_then_value(family):
    model = FiniteMixture("x", 3, family)
    params = {k: v[0] for k, v in DRAWS.items()}
    u = np.array([[0.1, 0.3], [0.2, 0.9], [0.25, 0.01], [0.69, 0.5], [0.71, 0.999]])
    got = model.sample_outcome(params, {}, u)
    comp = np.array([0, 0, 1, 1, 2])  # cumulative weights 0.2, 0.7, 1.0
    mu, s = params["mu"][comp], params["sigma"][comp]
    want = stats.norm.ppf(u[:, 1], mu, s) if family == "normal" else None
    if family == "lognormal":
        want = stats.lognorm.ppf(u[:, 1], s=s, scale=np.exp(mu))
    np.testing.assert_allclose(got, want, rtol=1e-13)
    n = 300
    x = model.sample_outcome(params, {}, record_uniforms(21, 0, 0, n, 2))
    comps = _components(family, {k: v[:1] for k, v in DRAWS.items()})

    def cdf(v):
        return (params["w"] * comps.cdf(np.asarray(v)[:, None, None])[:, 0, :]).sum(-1)

    assert stats.kstest(x, cdf).pvalue > 0.01


def test_bad_input():
    with pytest.raises(ValueError, match=r"'k' parameter must be an integer >= 2"):
        FiniteMixture("x", 1)
    with pytest.raises(ValueError, match=r"'family' parameter must be one of"):
        FiniteMixture("x", 2, "gamma")
    with pytest.raises(ValueError, match=r"strictly positive.*row 1 has 0.0"):
        FiniteMixture("x", 2, "lognormal").prepare(pd.DataFrame({"x": [1.0, 0.0, 2.0]}))
    with pytest.raises(ValueError, match=r"Unknown column\(s\) \['x'\]"):
        FiniteMixture("x", 2).prepare(pd.DataFrame({"y": [1.0, 0.0, 2.0]}))


def test_fit_weighted_epsilon_below_unweighted(rng):
    n = 200
    x = np.where(rng.uniform(size=n) < 0.4, rng.normal(-3, 0.6, n), rng.normal(2, 1.0, n))
    df = pd.DataFrame({"x": x})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = PseudoPosterior(FiniteMixture("x", 2)).fit(df, draws=200, tune=200, chains=2, seed=1)
    assert np.isfinite(res.epsilon) and res.epsilon <= res.unweighted_epsilon
    mu = res.datatree["risk_posterior"]["mu"].mean(("chain", "draw")).to_numpy()
    np.testing.assert_allclose(mu, [-3, 2], atol=0.6)  # ordered: no label switching
    syn = res.synthesize(seed=1)
    assert syn["x"].dtype == np.float64 and ((syn["x"] < -1).mean() > 0.2)
