"""The model contract (:func:`pseudopost.checks.check_model`) over every ready model and
PyMC's families used for microdata, each written the way PyMC's gallery writes it, with SciPy
references for the log-likelihood and the range probabilities.

Small data (n = 40). By default every family checks the contract on 20 random points of its
parameter space (no MCMC), and a few families, one per path that differs, run through the whole
mechanism with tiny fits (20 draws, one chain, PyMC's sampler, ``FAST_COMPILE``); under
``-m slow`` every family and ready model runs through the mechanism, with refits, and once more
as in production (nutpie, Numba).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import special, stats

from pseudopost.checks import CHECKS, ModelCheckError, capabilities, check_model
from pseudopost.mechanisms.pseudo_posterior import PseudoPosterior
from pseudopost.models import (
    CategoricalRegression,
    DirichletCategorical,
    FiniteMixture,
    HurdleLogNormal,
    HurdleNegativeBinomial,
    LogisticRegression,
    LogNormalRegression,
    NegativeBinomialRegression,
    NormalRegression,
    OrdinalRegression,
    PoissonRegression,
    SynthModel,
)

from .._reference.sequential import SequentialModel

N = 40
SEED = 20261122


def _z():
    return np.random.default_rng(SEED).normal(size=N)


def _eta(d, z):
    """a + b z for flat draws (draws, records)."""
    return d["a"][:, None] + d["b"][:, None] * z[None, :]


# -- SciPy-like references that SciPy lacks ------------------------------------------------------
class _ZeroInflated:
    """P(0) = 1 - psi + psi p(0); P(k) = psi p(k), k >= 1 (PyMC's psi: the non-zero part)."""

    def __init__(self, base, psi):
        self.base, self.psi = base, psi

    def logpmf(self, x):
        lp = np.log(self.psi) + self.base.logpmf(x)
        return np.where(x == 0, np.logaddexp(np.log1p(-self.psi), lp), lp)

    def logcdf(self, x):
        with np.errstate(divide="ignore"):
            c = np.logaddexp(np.log1p(-self.psi), np.log(self.psi) + self.base.logcdf(x))
        return np.where(x < 0, -np.inf, c)

    def logsf(self, x):
        return np.where(x < 0, 0.0, np.log(self.psi) + self.base.logsf(x))


class _TopCoded:
    """X = min(Y, cap): density of Y below cap, the atom P(Y >= cap) at cap."""

    def __init__(self, base, cap):
        self.base, self.cap = base, cap

    def logpdf(self, x):
        return np.where(x >= self.cap, self.base.logsf(self.cap), self.base.logpdf(x))

    def logcdf(self, x):
        return np.where(x >= self.cap, 0.0, self.base.logcdf(x))

    def logsf(self, x):
        return np.where(x >= self.cap, -np.inf, self.base.logsf(x))


class _Mixture:
    def __init__(self, w, comps):
        self.lw, self.comps = np.log(w), comps

    def _mix(self, what, x):
        return special.logsumexp(
            [self.lw[:, [k]] + getattr(c, what)(x) for k, c in enumerate(self.comps)], axis=0
        )

    def logpdf(self, x):
        return self._mix("logpdf", x)

    def logcdf(self, x):
        return self._mix("logcdf", x)

    def logsf(self, x):
        return self._mix("logsf", x)


class _Levels:
    """An outcome on codes 0..K-1 with probabilities p (draws, records, K)."""

    def __init__(self, p):
        self.p = p

    def _pick(self, table, x, below, above):
        k = np.floor(np.asarray(x, dtype=float))
        idx = np.clip(k, 0, self.p.shape[2] - 1).astype(int)[None, :, None]
        with np.errstate(divide="ignore"):
            v = np.log(np.take_along_axis(table, np.broadcast_to(idx, (*table.shape[:2], 1)), 2))
        v = v[..., 0]
        return np.where(k < 0, below, np.where(k > self.p.shape[2] - 1, above, v))

    def logpmf(self, x):
        return self._pick(self.p, x, -np.inf, -np.inf)

    def logcdf(self, x):
        cdf = np.cumsum(self.p, axis=2)
        return np.where(np.floor(x) >= self.p.shape[2] - 1, 0.0, self._pick(cdf, x, -np.inf, 0.0))

    def logsf(self, x):
        sf = np.clip(1.0 - np.cumsum(self.p, axis=2), 0.0, 1.0)
        return np.where(
            np.floor(x) >= self.p.shape[2] - 1, -np.inf, self._pick(sf, x, 0.0, -np.inf)
        )


class _MvNormal:
    def __init__(self, mu, chol):
        self.mu, self.chol = mu, chol

    def logpdf(self, x):
        out = [
            stats.multivariate_normal(m, c @ c.T).logpdf(x)
            for m, c in zip(self.mu, self.chol, strict=True)
        ]
        return np.asarray(out)


# -- PyMC's families, written as the gallery writes them ----------------------------------------
def _regression(name, dist, y, *, link=lambda e: e, **priors):
    """y ~ dist(link(a + b z), ...) with z in pm.Data (no dims, so records can be sliced)."""
    z = _z()
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a = pm.Normal("a", priors.pop("a_mu", 0.0), 1.0)
        b = pm.Normal("b", 0.0, 0.5)
        dist(name, link(a + b * zd), observed=y, shape=zd.shape)
    return m


def normal():
    z, rng = _z(), np.random.default_rng(1)
    y = rng.normal(1 + 0.5 * z, 1.5)
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 5), pm.Normal("b", 0, 2)
        s = pm.HalfNormal("s", 3)
        pm.Normal("y", a + b * zd, s, observed=y, shape=zd.shape)
    return m, lambda d: stats.norm(_eta(d, z), d["s"][:, None])


def student_t():
    z, rng = _z(), np.random.default_rng(2)
    y = 1 + 0.5 * z + 1.5 * rng.standard_t(4, N)
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 5), pm.Normal("b", 0, 2)
        s = pm.HalfNormal("s", 3)
        pm.StudentT("y", nu=4, mu=a + b * zd, sigma=s, observed=y, shape=zd.shape)
    return m, lambda d: stats.t(4, _eta(d, z), d["s"][:, None])


def lognormal():
    z, rng = _z(), np.random.default_rng(3)
    y = rng.lognormal(2 + 0.3 * z, 0.7)
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 5), pm.Normal("b", 0, 2)
        s = pm.HalfNormal("s", 2)
        pm.LogNormal("y", a + b * zd, s, observed=y, shape=zd.shape)
    return m, lambda d: stats.lognorm(s=d["s"][:, None], scale=np.exp(_eta(d, z)))


def gamma():
    z, rng = _z(), np.random.default_rng(4)
    mu = np.exp(1 + 0.3 * z)
    y = rng.gamma(3.0, mu / 3.0)
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 3), pm.Normal("b", 0, 1)
        k = pm.Gamma("k", 2, 1)
        pm.Gamma("y", alpha=k, beta=k / pm.math.exp(a + b * zd), observed=y, shape=zd.shape)
    return m, lambda d: stats.gamma(a=d["k"][:, None], scale=np.exp(_eta(d, z)) / d["k"][:, None])


def weibull():
    z, rng = _z(), np.random.default_rng(5)
    y = np.exp(1 + 0.3 * z) * rng.weibull(1.5, N)
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 3), pm.Normal("b", 0, 1)
        k = pm.HalfNormal("k", 2)
        pm.Weibull("y", alpha=k, beta=pm.math.exp(a + b * zd), observed=y, shape=zd.shape)
    return m, lambda d: stats.weibull_min(c=d["k"][:, None], scale=np.exp(_eta(d, z)))


def beta():
    z, rng = _z(), np.random.default_rng(6)
    p = special.expit(0.3 + 0.5 * z)
    y = np.clip(rng.beta(8 * p, 8 * (1 - p)), 1e-6, 1 - 1e-6)
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 2), pm.Normal("b", 0, 1)
        kappa = pm.Gamma("kappa", 2, 0.2)
        mu = pm.math.invlogit(a + b * zd)
        pm.Beta("y", alpha=mu * kappa, beta=(1 - mu) * kappa, observed=y, shape=zd.shape)

    def ref(d):
        mu, k = special.expit(_eta(d, z)), d["kappa"][:, None]
        return stats.beta(mu * k, (1 - mu) * k)

    return m, ref


def exponential():
    z, rng = _z(), np.random.default_rng(7)
    y = rng.exponential(np.exp(1 + 0.3 * z))
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 3), pm.Normal("b", 0, 1)
        pm.Exponential("y", lam=pm.math.exp(-(a + b * zd)), observed=y, shape=zd.shape)
    return m, lambda d: stats.expon(scale=np.exp(_eta(d, z)))


def poisson():
    z, rng = _z(), np.random.default_rng(8)
    y = rng.poisson(np.exp(1 + 0.3 * z))
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 3), pm.Normal("b", 0, 1)
        pm.Poisson("y", pm.math.exp(a + b * zd), observed=y, shape=zd.shape)
    return m, lambda d: stats.poisson(np.exp(_eta(d, z)))


def _nb(d, z, key="phi"):
    phi, mu = d[key][:, None], np.exp(_eta(d, z))
    return stats.nbinom(phi, phi / (phi + mu))


def negative_binomial():
    z, rng = _z(), np.random.default_rng(9)
    y = rng.negative_binomial(3, 3 / (3 + np.exp(1 + 0.3 * z)))
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 3), pm.Normal("b", 0, 1)
        phi = pm.Gamma("phi", 2, 0.5)
        pm.NegativeBinomial("y", mu=pm.math.exp(a + b * zd), alpha=phi, observed=y, shape=zd.shape)
    return m, lambda d: _nb(d, z)


def zero_inflated_poisson():
    z, rng = _z(), np.random.default_rng(10)
    y = rng.poisson(np.exp(1 + 0.3 * z)) * (rng.uniform(size=N) < 0.7)
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 3), pm.Normal("b", 0, 1)
        psi = pm.Beta("psi", 2, 2)
        pm.ZeroInflatedPoisson("y", psi, pm.math.exp(a + b * zd), observed=y, shape=zd.shape)
    return m, lambda d: _ZeroInflated(stats.poisson(np.exp(_eta(d, z))), d["psi"][:, None])


def zero_inflated_negative_binomial():
    z, rng = _z(), np.random.default_rng(11)
    y = rng.negative_binomial(3, 3 / (3 + np.exp(1 + 0.3 * z))) * (rng.uniform(size=N) < 0.7)
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 3), pm.Normal("b", 0, 1)
        psi = pm.Beta("psi", 2, 2)
        phi = pm.Gamma("phi", 2, 0.5)
        mu = pm.math.exp(a + b * zd)
        pm.ZeroInflatedNegativeBinomial("y", psi=psi, mu=mu, alpha=phi, observed=y, shape=zd.shape)
    return m, lambda d: _ZeroInflated(_nb(d, z), d["psi"][:, None])


def binomial():
    z, rng = _z(), np.random.default_rng(12)
    y = rng.binomial(10, special.expit(0.2 + 0.6 * z))
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 2), pm.Normal("b", 0, 1)
        pm.Binomial("y", n=10, p=pm.math.invlogit(a + b * zd), observed=y, shape=zd.shape)
    return m, lambda d: stats.binom(10, special.expit(_eta(d, z)))


def bernoulli():
    z, rng = _z(), np.random.default_rng(13)
    y = rng.binomial(1, special.expit(0.2 + 0.8 * z))
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 2), pm.Normal("b", 0, 1)
        pm.Bernoulli("y", logit_p=a + b * zd, observed=y, shape=zd.shape)
    return m, lambda d: stats.bernoulli(special.expit(_eta(d, z)))


def categorical():
    z, rng = _z(), np.random.default_rng(14)
    y = rng.integers(0, 3, N)
    with pm.Model(coords={"level": ["lo", "mid", "hi"]}) as m:
        zd = pm.Data("z", z)
        a = pm.ZeroSumNormal("a", 1.0, dims="level")
        b = pm.Normal("b", 0, 1, dims="level")
        logits = a[None, :] + zd[:, None] * b[None, :]
        pm.Categorical("y", logit_p=logits, observed=y, shape=zd.shape)

    def ref(d):
        logits = d["a"][:, None, :] + z[None, :, None] * d["b"][:, None, :]
        return _Levels(special.softmax(logits, axis=2))

    return m, ref


def ordered_logistic():
    z, rng = _z(), np.random.default_rng(15)
    y = np.clip(np.round(1.5 + z + rng.logistic(size=N)), 0, 3).astype(int)
    with pm.Model() as m:
        zd = pm.Data("z", z)
        b = pm.Normal("b", 0, 1)
        cut = pm.Normal(
            "cutpoints", [-1.0, 0.0, 1.0], 2.0, transform=pm.distributions.transforms.ordered
        )
        pm.OrderedLogistic("y", eta=b * zd, cutpoints=cut, observed=y, shape=zd.shape)

    def ref(d):
        cdf = special.expit(d["cutpoints"][:, None, :] - d["b"][:, None, None] * z[None, :, None])
        cdf = np.concatenate([np.zeros((*cdf.shape[:2], 1)), cdf, np.ones((*cdf.shape[:2], 1))], 2)
        return _Levels(np.diff(cdf, axis=2))

    return m, ref


CAP = 30.0


def censored():
    """Top-coded income (issue 17): pm.Censored(pm.LogNormal.dist(mu, sigma), upper=cap)."""
    z, rng = _z(), np.random.default_rng(16)
    y = np.minimum(rng.lognormal(2.5 + 0.3 * z, 0.6), CAP)
    assert (y == CAP).sum() >= 3
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 2, 3), pm.Normal("b", 0, 1)
        s = pm.HalfNormal("s", 2)
        dist = pm.LogNormal.dist(a + b * zd, s)
        pm.Censored("income", dist, lower=None, upper=CAP, observed=y, shape=zd.shape)
    return m, lambda d: _TopCoded(stats.lognorm(s=d["s"][:, None], scale=np.exp(_eta(d, z))), CAP)


def truncated():
    z, rng = _z(), np.random.default_rng(17)
    y = stats.truncnorm.rvs(-2, np.inf, loc=2 + 0.5 * z, scale=1.0, random_state=rng)
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 3), pm.Normal("b", 0, 1)
        s = pm.HalfNormal("s", 2)
        pm.Truncated("y", pm.Normal.dist(a + b * zd, s), lower=0.0, observed=y, shape=zd.shape)

    def ref(d):
        mu, s = _eta(d, z), d["s"][:, None]
        return stats.truncnorm((0 - mu) / s, np.inf, loc=mu, scale=s)

    return m, ref


def mixture():
    rng = np.random.default_rng(18)
    y = np.where(rng.uniform(size=N) < 0.4, rng.normal(-2, 0.7, N), rng.normal(2, 1.0, N))
    with pm.Model(coords={"component": [0, 1]}) as m:
        w = pm.Dirichlet("w", np.ones(2), dims="component")
        mu = pm.Normal(
            "mu", [-1.0, 1.0], 3.0, dims="component", transform=pm.distributions.transforms.ordered
        )
        sigma = pm.HalfNormal("sigma", 2.0, dims="component")
        pm.NormalMixture("y", w=w, mu=mu, sigma=sigma, observed=y, shape=y.shape)

    def ref(d):
        comps = [stats.norm(d["mu"][:, [k]], d["sigma"][:, [k]]) for k in range(2)]
        return _Mixture(d["w"], comps)

    return m, ref


def mv_normal():
    """A vector-valued record: two correlated answers per person."""
    rng = np.random.default_rng(19)
    Y = rng.multivariate_normal([1.0, -1.0], [[1.0, 0.6], [0.6, 2.0]], N)
    with pm.Model(coords={"answer": ["q1", "q2"]}) as m:
        mu = pm.Normal("mu", 0, 3, dims="answer")
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=2, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=2)
        )
        pm.MvNormal("y", mu=mu, chol=chol, observed=Y, shape=Y.shape)

    def ref(d):
        k = d["chol"]
        L = np.zeros((len(k), 2, 2))
        L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = k[:, 0], k[:, 1], k[:, 2]
        return _MvNormal(d["mu"], L)

    return m, ref


def hierarchical():
    """Gallery style: coords and dims, pm.Data with dims, a non-centred group effect."""
    rng = np.random.default_rng(20)
    groups = np.array(["north", "south", "east", "west"])
    idx = np.resize(np.arange(4), N)
    z = _z()
    y = rng.normal([0.5, -0.5, 1.0, 0.0], 0.5)[idx] + 0.4 * z + rng.normal(0, 1.0, N)
    with pm.Model(coords={"group": groups, "obs": np.arange(N)}) as m:
        g = pm.Data("group_idx", idx, dims="obs")
        zd = pm.Data("z", z, dims="obs")
        mu = pm.Normal("mu", 0, 2)
        tau = pm.HalfNormal("tau", 1)
        offset = pm.Normal("offset", 0, 1, dims="group")
        effect = pm.Deterministic("effect", mu + tau * offset, dims="group")
        b = pm.Normal("b", 0, 1)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", effect[g] + b * zd, sigma, observed=y, dims="obs")

    def ref(d):
        effect = d["mu"][:, None] + d["tau"][:, None] * d["offset"]
        return stats.norm(effect[:, idx] + d["b"][:, None] * z, d["sigma"][:, None])

    return m, ref


MISSING = np.array([2, 5, 11, 30])


def masked():
    """An income with missing answers (NaN), which PyMC imputes (issue 17)."""
    z, rng = _z(), np.random.default_rng(21)
    y = rng.lognormal(2 + 0.3 * z, 0.6)
    y[MISSING] = np.nan
    with pm.Model() as m:
        zd = pm.Data("z", z)
        a, b = pm.Normal("a", 0, 5), pm.Normal("b", 0, 2)
        s = pm.HalfNormal("s", 2)
        pm.LogNormal("income", a + b * zd, s, observed=y)
    seen = np.setdiff1d(np.arange(N), MISSING)
    return m, lambda d: stats.lognorm(s=d["s"][:, None], scale=np.exp(_eta(d, z[seen])))


FAMILIES = {
    "Normal": normal,
    "StudentT": student_t,
    "LogNormal": lognormal,
    "Gamma": gamma,
    "Weibull": weibull,
    "Beta": beta,
    "Exponential": exponential,
    "Poisson": poisson,
    "NegativeBinomial": negative_binomial,
    "ZeroInflatedPoisson": zero_inflated_poisson,
    "ZeroInflatedNegativeBinomial": zero_inflated_negative_binomial,
    "Binomial": binomial,
    "Bernoulli": bernoulli,
    "Categorical": categorical,
    "OrderedLogistic": ordered_logistic,
    "Censored": censored,
    "Truncated": truncated,
    "Mixture": mixture,
    "MvNormal": mv_normal,
    "hierarchical": hierarchical,
    "masked": masked,
}
#: families run through the whole mechanism (two fits) in the default suite: the issue 17
#: regression (a symbolic distribution) and dims that stop record chunking; the masked and the
#: top-coded models also run through it in test_custom.py, a vector record in test_weighting.py.
#: The others check the same contract on random points (no MCMC; the same simulate path); all
#: run through the mechanism under -m slow
MECHANISM = {"Censored", "hierarchical"}


# -- ready models -----------------------------------------------------------------------------
def _frame():
    rng = np.random.default_rng(SEED)
    z = rng.normal(size=N)
    return pd.DataFrame(
        {
            "z": z,
            "y": rng.normal(1 + 0.5 * z, 1.5),
            "x": rng.lognormal(2 + 0.3 * z, 0.6),
            "k": rng.poisson(np.exp(1 + 0.3 * z)).astype(np.int64),
            "b": rng.uniform(size=N) < special.expit(0.5 * z),
            "c": pd.Categorical(rng.choice(["a", "b", "c"], N)),
            "d": rng.choice(["p", "q", "r"], N),
            "o": pd.Categorical(rng.choice(["lo", "mid", "hi"], N), ["lo", "mid", "hi"], True),
            "h": np.where(rng.uniform(size=N) < 0.3, 0.0, rng.lognormal(1, 0.5, N)),
            "hk": np.where(rng.uniform(size=N) < 0.4, 0, rng.poisson(3, N)).astype(np.int64),
            "m": np.where(rng.uniform(size=N) < 0.5, rng.normal(-2, 0.5, N), rng.normal(2, 0.5, N)),
        }
    )


READY = {
    "NormalRegression": lambda: NormalRegression("y", ["z"]),
    "LogNormalRegression": lambda: LogNormalRegression("x", ["z"]),
    "PoissonRegression": lambda: PoissonRegression("k", ["z"]),
    "NegativeBinomialRegression": lambda: NegativeBinomialRegression("k", ["z"]),
    "LogisticRegression": lambda: LogisticRegression("b", ["z"]),
    "CategoricalRegression": lambda: CategoricalRegression("c", ["z"]),
    "DirichletCategorical": lambda: DirichletCategorical("d"),
    "OrdinalRegression": lambda: OrdinalRegression("o", ["z"]),
    "HurdleLogNormal": lambda: HurdleLogNormal("h", ["z"]),
    "HurdleNegativeBinomial": lambda: HurdleNegativeBinomial("hk", ["z"]),
    "FiniteMixture": lambda: FiniteMixture("m", 2),
    # the composite pp.synthesize builds: each column on the ones before it
    "SequentialModel": lambda: SequentialModel(
        ["x", "k", "c"],
        {"x": "lognormal", "k": "negative_binomial", "c": "categorical"},
        keep=["z"],
        transforms={"x": "log1p"},
    ),
}


def _run(name, draws, **kw):
    model, reference = FAMILIES[name]()
    return check_model(model, reference=reference, draws=draws, seed=3, **kw)


def _assert_complete(report, expect_skipped=()):
    assert set(report.passed) | set(report.skipped) == set(CHECKS)
    assert set(report.skipped) == set(expect_skipped), report.skipped
    assert np.isfinite(report.epsilon) and report.epsilon > 0
    assert report.capabilities == ("pymc",)  # built as one PyMC model, nothing else


#: checks a family cannot run, and why (asserted, so a new skip is noticed)
NO_RANGES = {"MvNormal"}  # a vector-valued record has no univariate CDF


def _skips(name):
    return ["ranges"] if name in NO_RANGES | UNORDERED else []


@pytest.mark.parametrize("name", list(FAMILIES))
def test_pymc_family_passes_the_contract(name):
    if name in MECHANISM:
        report = _run(name, "mechanism", refit=False)
    else:
        report = _run(name, "points")
    _assert_complete(report, _skips(name))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FAMILIES))
def test_pymc_family_passes_the_contract_through_the_mechanism(name):
    _assert_complete(_run(name, "mechanism", refit=True), _skips(name))


#: found by the production run of the contract: nutpie's Numba build of the *weighted* model
#: (the base model plus the weighted-likelihood potential) of ``pm.Truncated`` fails at every
#: initial point ("Logp function returned error"), while PyMC's own log density there is finite
#: and nutpie samples the unweighted model; the PyMC sampler path passes (test above)
_PRODUCTION_KNOWN = {
    "Truncated": "nutpie (Numba) cannot start on the weighted pm.Truncated model; use sampler='pymc'",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=_PRODUCTION_KNOWN[n], strict=True))
        if n in _PRODUCTION_KNOWN
        else n
        for n in FAMILIES
    ],
)
def test_pymc_family_passes_the_contract_as_in_production(name):
    """nutpie and the configured PyTensor mode (Numba), two chains, more draws."""
    report = _run(name, "mechanism", sampler="nutpie", mode=None, chains=2, n_draws=100, tune=100)
    _assert_complete(report, _skips(name))


#: ready models whose outcome has no order (no CDF), or a record of several outcomes: ranges are
#: refused with a clear error
UNORDERED = {"CategoricalRegression", "DirichletCategorical", "SequentialModel"}
#: ready models through the whole mechanism by default: the sufficient-statistics fit and a
#: fused accountant (the others: random points by default, the mechanism under -m slow)
READY_MECHANISM = {"NormalRegression"}


@pytest.mark.parametrize("name", list(READY))
def test_ready_model_passes_the_contract(name):
    draws = "mechanism" if name in READY_MECHANISM else "points"
    # the refit half of the seed check (two fits, same seed) on the cheapest fit by default
    report = check_model(READY[name](), _frame(), draws=draws, refit=draws == "mechanism", seed=3)
    _assert_complete(report, _skips(name))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(READY))
def test_ready_model_passes_the_contract_through_the_mechanism(name):
    _assert_complete(check_model(READY[name](), _frame(), seed=3), _skips(name))


# -- every check can fail -------------------------------------------------------------------------
def _counts():
    return _frame()[["k"]]


class _Float32Outcome(PoissonRegression):
    def to_frame(self, prepared, predictive):
        return super().to_frame(prepared, predictive).astype({"k": np.float32})


class _Unseeded(PoissonRegression):
    def sample_outcome(self, params, predictors, u):
        return super().sample_outcome(
            params, predictors, np.random.default_rng().uniform(size=u.shape)
        )


class _Mutating(PoissonRegression):
    def prepare(self, data):
        data.loc[data.index[0], "k"] = 99  # modifies the caller's frame
        return super().prepare(data)


class _NoLowerBound(PoissonRegression):
    def log_prob_range_graph(self, model, lower, upper):
        from pseudopost.models.weighting import rv_logprob

        return rv_logprob(model, model[self.outcome], upper, "logcdf")  # forgets the lower end


@pytest.mark.parametrize(
    ("broken", "check"),
    [(_Float32Outcome, "synthesis"), (_Unseeded, "seed"), (_Mutating, "input_unchanged"),
     (_NoLowerBound, "ranges")],
)  # fmt: skip
def test_a_broken_model_fails_the_check_it_breaks(broken, check):
    with pytest.raises(ModelCheckError) as err:
        check_model(broken("k"), _counts(), draws="points")
    assert err.value.check == check


def test_broken_machinery_fails_its_check(monkeypatch):
    """Weighting, log-likelihood and accountant wrong in turn (patched): each check fails."""
    from pseudopost import checks

    def weights_squared(model, observed=None, weights=None, censor_bound=None):
        return checks_weighted(model, observed, weights**2, censor_bound)

    checks_weighted = checks.weighted_model
    with monkeypatch.context() as mp:
        mp.setattr(checks, "weighted_model", weights_squared)
        with pytest.raises(ModelCheckError, match=r"^\[weighting\]"):
            check_model(PoissonRegression("k"), _counts(), draws="points")

    record_function = checks.record_function

    class _Scaled:
        def __init__(self, f):
            self.f, self.n, self.fused = f, f.n, getattr(f, "fused", False)

        def __call__(self, draws, *a, **k):
            return 1.001 * self.f(draws, *a, **k)

    with monkeypatch.context() as mp:
        mp.setattr(checks, "record_function", lambda m, b: _Scaled(record_function(m, b)))
        with pytest.raises(ModelCheckError, match=r"^\[loglik\]"):
            check_model(PoissonRegression("k"), _counts(), draws="points")

    account = checks.account

    def ignores_alpha(g, draws, alpha, decomposition, **kw):
        return account(g, draws, np.ones_like(alpha), decomposition, **kw)

    with monkeypatch.context() as mp:
        mp.setattr(checks, "account", ignores_alpha)
        with pytest.raises(ModelCheckError, match=r"^\[accountant\]"):
            check_model(PoissonRegression("k"), _counts(), draws="points")


class _Unfitted(SynthModel):
    """The base protocol only: neither built as one PyMC model nor fitted by parts."""

    observed = ("k",)

    @property
    def columns(self):
        return ["k"]

    def prepare(self, data):
        return PoissonRegression("k").prepare(data)

    def to_frame(self, prepared, predictive):
        return PoissonRegression("k").to_frame(prepared, predictive)


def test_a_model_without_a_way_to_fit_fails_validation_naming_the_capabilities():
    assert capabilities(_Unfitted()) == ()
    with pytest.raises(ModelCheckError, match=r"^\[validation\] .*has neither of the "
                       r"capabilities 'pymc' .* and 'parts'") as err:  # fmt: skip
        check_model(_Unfitted(), _counts(), draws="points")
    assert err.value.capability is None
    # and the mechanism refuses it before any work, naming both capabilities
    with pytest.raises(TypeError, match=r"_Unfitted has neither capability .*'pymc'.*'parts'"):
        PseudoPosterior(_Unfitted())


def test_a_failure_names_the_capability():
    with pytest.raises(ModelCheckError, match=r"^\[ranges\] .* \(capability 'pymc'\): ") as err:
        check_model(_NoLowerBound("k"), _counts(), draws="points")
    assert err.value.capability == "pymc"
    with pytest.raises(ModelCheckError, match=r"^\[seed\] .* \(the base protocol\): "):
        check_model(_Unseeded("k"), _counts(), draws="points")


def test_unsupported_model_is_refused_before_any_check():
    with pm.Model() as m:
        pm.Normal("y", pm.Normal("mu"), 1.0, observed=1.0)
    with pytest.raises(ValueError, match="'y' is a scalar"):
        check_model(m)
    with pytest.raises(TypeError, match=r"'model' must be a SynthModel or a pymc\.Model"):
        check_model("normal")
