"""Hurdle models: log-likelihood and log-CDF against SciPy over grids with the zero, the smallest
positive values and far tails; inversion with two uniforms; bad input."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from pseudopost import PseudoPosterior
from pseudopost._streams import record_uniforms
from pseudopost.models import HurdleLogNormal, HurdleNegativeBinomial, RecordFunction

Z = np.array([-40.0, -2.0, -0.5, 0.0, 0.7, 1.5, 3.0, 40.0])
LN = {
    "psi_intercept": np.array([0.3, -1.0]),
    "psi_beta": np.array([[0.8], [1.0]]),
    "intercept": np.array([1.0, 0.5]),
    "beta": np.array([[0.1], [0.05]]),
    "sigma": np.array([1.2, 0.6]),
}
NB = {k: v for k, v in LN.items() if k != "sigma"} | {"phi": np.array([2.5, 0.7])}


def _lin(d, z, names=("intercept", "beta")):
    return d[names[0]][:, None] + d[names[1]][:, 0][:, None] * z[None, :]


def _psi_logs(d, z):
    eta = _lin(d, z, ("psi_intercept", "psi_beta"))
    return special.log_expit(eta), special.log_expit(-eta)  # log psi, log(1 - psi)


def _range_fn(model, base):
    return RecordFunction(
        base,
        graph=lambda m, o, e: model.log_prob_range_graph(m, e["lower"], e["upper"]),
        extra_inputs=("lower", "upper"),
    )


# ---------------------------------------------------------------- log-normal
X_LN = np.array([0.0, 0.0, 1e-9, 0.3, 1.0, 7.0, 1e4, 0.0])


def _ln_setup():
    df = pd.DataFrame({"z": Z, "x": X_LN})
    model = HurdleLogNormal("x", ["z"])
    return model, model.build(model.prepare(df))


def _ln_scipy(z):
    return stats.lognorm(s=LN["sigma"][:, None], scale=np.exp(_lin(LN, z)))


def test_hurdle_lognormal_loglik_matches_scipy():
    _model, base = _ln_setup()
    assert [rv.name for rv in base.free_RVs] == list(LN)
    got = RecordFunction(base)(LN)
    log_psi, log_1m = _psi_logs(LN, Z)
    pos = X_LN > 0
    dens = _ln_scipy(Z).logpdf(np.where(pos, X_LN, 1.0))
    want = np.where(pos, log_psi + dens, log_1m)
    np.testing.assert_allclose(got, want, rtol=1e-11)
    assert np.all(np.isfinite(got))


def test_hurdle_lognormal_range_includes_the_mass_at_zero():
    model, base = _ln_setup()
    fn = _range_fn(model, base)
    dist = _ln_scipy(Z)
    log_psi, log_1m = _psi_logs(LN, Z)
    psi = np.exp(log_psi)
    for lo, hi in [(0.0, 0.0), (0.0, 2.0), (-1.0, 0.5), (0.5, 3.0), (50.0, 1e3), (1e-12, 1e-6)]:
        got = fn(LN, lower=np.full(Z.size, lo), upper=np.full(Z.size, hi))
        # P(lo <= X <= hi) = 1{lo <= 0} (1 - psi) + psi (G(hi) - G(lo)), G the log-normal CDF
        g = dist.cdf(hi) - dist.cdf(max(lo, 0.0))
        with np.errstate(divide="ignore"):
            want = _ln_range_reference(dist, lo, hi, g, log_psi, log_1m)
        ok = np.isfinite(want) & (psi * g > 1e-250)
        np.testing.assert_allclose(got[ok], want[ok], rtol=1e-7, atol=1e-15)
        assert np.all(np.isfinite(got)) and np.all(got <= 1e-12)
    got = fn(LN, lower=np.full(Z.size, 0.0), upper=np.full(Z.size, np.inf))
    np.testing.assert_allclose(got, 0.0, atol=1e-12)
    assert np.all(fn(LN, lower=np.full(Z.size, -3.0), upper=np.full(Z.size, -1.0)) == -np.inf)


def _ln_range_reference(dist, lo, hi, g, log_psi, log_1m):
    if lo <= 0:
        return np.logaddexp(log_1m, log_psi + np.log(np.maximum(g, 1e-300)))
    tail = dist.logsf(lo) + np.log1p(-np.exp(dist.logsf(hi) - dist.logsf(lo)))
    return log_psi + np.where(dist.cdf(lo) > 0.5, tail, np.log(g))


def test_hurdle_lognormal_inversion():
    model = HurdleLogNormal("x", ["z"])
    params = {k: v[0] for k, v in LN.items()}
    z = np.array([-1.0, 0.0, 1.0, 2.0])
    u = np.array([[0.05, 0.3], [0.99, 0.01], [0.7, 0.5], [0.999, 0.999]])
    got = model.sample_outcome(params, {"z": z}, u)
    psi = special.expit(0.3 + 0.8 * z)
    pos = stats.lognorm(s=1.2, scale=np.exp(1.0 + 0.1 * z)).ppf(u[:, 1])
    np.testing.assert_allclose(got, np.where(u[:, 0] > 1 - psi, pos, 0.0), rtol=1e-13)
    n = 300
    x = model.sample_outcome(params, {"z": np.zeros(n)}, record_uniforms(3, 0, 0, n, 2))
    p0 = special.expit(-0.3)
    assert stats.binomtest(int((x == 0).sum()), n, p0).pvalue > 0.01
    cond = stats.lognorm(s=1.2, scale=np.exp(1.0))
    assert stats.kstest(x[x > 0], cond.cdf).pvalue > 0.01


def test_hurdle_lognormal_bad_input():
    df = pd.DataFrame({"x": [0.0, 3.0, -0.5], "z": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"non-negative.*row 2 has -0.5"):
        HurdleLogNormal("x", ["z"]).prepare(df)
    with pytest.raises(ValueError, match=r"Unknown column\(s\) \['w'\]"):
        HurdleLogNormal("x", ["w"]).prepare(df)
    with pytest.raises(ValueError, match=r"'u' must have shape \(n, 2\)"):
        HurdleLogNormal("x").sample_outcome({k: v[0] for k, v in LN.items()}, {}, np.ones((3, 1)))


# ---------------------------------------------------------------- negative binomial
Y_NB = np.array([0, 0, 1, 2, 5, 1, 200, 0])


def _nb_scipy(z, d=NB):
    mu = np.exp(_lin(d, z))
    phi = d["phi"][:, None]
    return stats.nbinom(phi, phi / (phi + mu))


def test_hurdle_negative_binomial_loglik_matches_scipy():
    df = pd.DataFrame({"z": Z, "y": Y_NB})
    model = HurdleNegativeBinomial("y", ["z"])
    base = model.build(model.prepare(df))
    assert [rv.name for rv in base.free_RVs] == list(NB)
    got = RecordFunction(base)(NB)
    log_psi, log_1m = _psi_logs(NB, Z)
    nb = _nb_scipy(Z)
    want = np.where(Y_NB > 0, log_psi + nb.logpmf(Y_NB) - nb.logsf(0), log_1m)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_hurdle_negative_binomial_range_against_brute_force_sum():
    df = pd.DataFrame({"z": Z, "y": Y_NB})
    model = HurdleNegativeBinomial("y", ["z"])
    fn = _range_fn(model, model.build(model.prepare(df)))
    log_psi, log_1m = _psi_logs(NB, Z)
    nb = _nb_scipy(Z)
    ks = np.arange(0, 400)[:, None, None]
    pmf = np.where(ks > 0, log_psi + nb.logpmf(ks) - nb.logsf(0), log_1m)  # (k, draw, record)
    for lo, hi in [(0, 0), (0, 3), (1, 1), (2, 10), (-4, 2), (150, 399)]:
        got = fn(NB, lower=np.full(Z.size, float(lo)), upper=np.full(Z.size, float(hi)))
        inside = (ks >= lo) & (ks <= hi)
        want = special.logsumexp(np.where(inside, pmf, -np.inf), axis=0)
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-12)


def test_hurdle_negative_binomial_inversion():
    model = HurdleNegativeBinomial("y", ["z"])
    params = {k: v[0] for k, v in NB.items()}
    z = np.array([-1.0, 0.0, 1.0, 2.0, 0.5])
    u = np.array([[0.05, 0.3], [0.99, 0.01], [0.7, 0.5], [0.999, 0.97], [0.9, 0.6]])
    got = model.sample_outcome(params, {"z": z}, u)
    psi = special.expit(0.3 + 0.8 * z)
    nb = stats.nbinom(2.5, 2.5 / (2.5 + np.exp(1.0 + 0.1 * z)))
    p0 = nb.pmf(0)
    truncated = np.maximum(nb.ppf(p0 + u[:, 1] * (1 - p0)), 1)  # ppf of the zero-truncated NB
    np.testing.assert_array_equal(got, np.where(u[:, 0] > 1 - psi, truncated, 0.0))
    n = 300
    x = model.sample_outcome(params, {"z": np.zeros(n)}, record_uniforms(8, 0, 0, n, 2))
    assert np.all(x == np.round(x)) and x.min() >= 0
    nb0 = stats.nbinom(2.5, 2.5 / (2.5 + np.exp(1.0)))
    psi0 = special.expit(0.3)
    probs = np.array([1 - psi0, *(psi0 * nb0.pmf([1, 2, 3, 4]) / nb0.sf(0))])
    probs = np.append(probs, 1 - probs.sum())
    counts = np.bincount(np.minimum(x.astype(int), 5), minlength=6)
    assert stats.chisquare(counts, n * probs).pvalue > 0.01


def test_hurdle_negative_binomial_bad_input():
    df = pd.DataFrame({"y": [0, 2, 1.5]})
    with pytest.raises(ValueError, match=r"non-negative integer count.*row 2 has 1.5"):
        HurdleNegativeBinomial("y").prepare(df)


@pytest.mark.parametrize("cls", [HurdleLogNormal, HurdleNegativeBinomial])
def test_fit_weighted_epsilon_below_unweighted(rng, cls):
    n = 200
    z = rng.normal(size=n)
    positive = rng.uniform(size=n) < special.expit(0.4 + z)
    if cls is HurdleLogNormal:
        size = rng.lognormal(1 + 0.3 * z, 0.8)
    else:
        size = 1 + rng.poisson(np.exp(0.8 + 0.3 * z))
    df = pd.DataFrame({"z": z, "x": np.where(positive, size, 0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = PseudoPosterior(cls("x", ["z"])).fit(df, draws=200, tune=200, chains=2, seed=1)
    assert np.isfinite(res.epsilon) and res.epsilon <= res.unweighted_epsilon
    syn = res.synthesize(seed=1)
    assert syn["x"].dtype == df["x"].dtype and (syn["x"] >= 0).all() and (syn["x"] == 0).any()
