"""Cases for the column parts: one small data set per family, and an independent SciPy
reference of the per-record log-likelihood, the priors and the log-Jacobians."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest
from scipy import special, stats

from pseudopost.models.parts import PartData, make_part

N = 120


@dataclass(frozen=True)
class Case:
    part: object
    data: PartData
    weights: np.ndarray
    truth: dict


def _design(rng, kind: str) -> np.ndarray:
    a = rng.integers(0, 3, N).astype(float)
    b = rng.integers(0, 2, N).astype(float)
    c = np.round(rng.normal(size=N), 1)
    return {"none": np.zeros((N, 0)), "ab": np.column_stack([a, b]), "c": c[:, None]}.get(
        kind, np.column_stack([a, b, c])
    )


# family, design, options, true params (on the constrained scale)
SPECS = {
    "bernoulli": ("bernoulli", "ab", {}, {"intercept": 0.3, "beta": [0.8, -1.0]}),
    "bernoulli_no_predictors": ("bernoulli", "none", {}, {"intercept": -0.5}),
    "categorical": (
        "categorical", "ab", {"n_levels": 3},
        {"intercept": [0.2, -0.4], "beta": [[0.5, -0.3], [1.0, 0.2]]},
    ),
    "categorical_status": ("categorical", "none", {"n_levels": 4}, {"intercept": [-1.0, 0.5, 0.0]}),
    "ordinal": (
        "ordinal", "ab", {"n_levels": 4}, {"cutpoints": [-1.0, 0.2, 1.5], "beta": [0.6, -0.4]}
    ),
    "ordinal_binary_continuous": ("ordinal", "c", {"n_levels": 2}, {"cutpoints": [0.3], "beta": [1.2]}),
    "normal": (
        "normal", "abc", {"prior_scale": 4.0},
        {"intercept": 1.0, "beta": [0.5, -1.0, 2.0], "sigma": 0.7},
    ),
    "normal_no_predictors": ("normal", "none", {}, {"intercept": 3.0, "sigma": 1.5}),
    "lognormal": ("lognormal", "ab", {}, {"intercept": 0.5, "beta": [0.3, -0.2], "sigma": 0.6}),
    "poisson": ("poisson", "ab", {}, {"intercept": 0.4, "beta": [0.3, -0.5]}),
    "negative_binomial": (
        "negative_binomial", "ab", {"prior_scale": 1.5},
        {"intercept": 0.8, "beta": [0.2, -0.3], "phi": 3.0},
    ),
    "zero_truncated_negative_binomial": (
        "zero_truncated_negative_binomial", "ab", {},
        {"intercept": 0.5, "beta": [0.4, -0.3], "phi": 2.0},
    ),
    "dirichlet_categorical": ("dirichlet_categorical", "none", {"n_levels": 3, "concentration": 1.5},
                              {"p": [0.2, 0.5, 0.3]}),
}  # fmt: skip
CASE_IDS = list(SPECS)


def eta_of(params: dict, X: np.ndarray) -> np.ndarray:
    return float(params["intercept"]) + X @ np.asarray(params.get("beta", np.zeros(0)))


def _logits(params: dict, X: np.ndarray) -> np.ndarray:
    """Multinomial logits (n, K) with level 0 the reference."""
    eta = np.tile(np.asarray(params["intercept"], dtype=float), (len(X), 1))
    if X.shape[1]:
        eta = eta + X @ np.asarray(params["beta"])
    return np.column_stack([np.zeros(len(X)), eta])


def simulate(part, params: dict, X: np.ndarray, rng) -> np.ndarray:
    """Outcomes from the family's own definition (NumPy random, not the part's sampler)."""
    fam = part.family
    if fam == "dirichlet_categorical":
        return rng.choice(part.n_levels, size=len(X), p=params["p"]).astype(float)
    if fam == "ordinal":
        eta = X @ np.asarray(params["beta"])
        return (rng.logistic(size=len(X)) + eta > np.asarray(params["cutpoints"])[:, None]).sum(0)
    if fam == "categorical":
        logits = _logits(params, X)
        g = rng.gumbel(size=logits.shape)
        return np.argmax(logits + g, axis=1).astype(float)
    eta = eta_of(params, X)
    if fam == "bernoulli":
        return (rng.random(len(X)) < special.expit(eta)).astype(float)
    if fam == "normal":
        return eta + params["sigma"] * rng.normal(size=len(X))
    if fam == "lognormal":
        return np.exp(eta + params["sigma"] * rng.normal(size=len(X)))
    if fam == "poisson":
        return rng.poisson(np.exp(eta)).astype(float)
    phi, mu = params["phi"], np.exp(eta)
    y = rng.negative_binomial(phi, phi / (phi + mu)).astype(float)
    if fam == "zero_truncated_negative_binomial":
        while (y == 0).any():
            z = y == 0
            y[z] = rng.negative_binomial(phi, phi / (phi + mu[z]))
    return y


@cache
def build_case(name: str) -> Case:
    family, design, options, truth = SPECS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    X = _design(rng, design)
    part = make_part(family, "y", [f"z{j}" for j in range(X.shape[1])], **options)
    truth = {k: np.asarray(v, dtype=float) for k, v in truth.items()}
    y = simulate(part, truth, X, rng)
    active = rng.random(N) < 0.75
    y = np.where(active, y, np.nan)  # inactive outcomes are ignored, whatever they hold
    X = np.where(active[:, None], X, np.nan)
    w = rng.uniform(0.0, 1.0, N)
    w[rng.random(N) < 0.1] = 0.0
    return Case(part, PartData(y, X, active), w, truth)


def scipy_loglik(part, params: dict, y: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Per-record log-likelihood from SciPy's distributions (records given are all used)."""
    fam = part.family
    if fam == "dirichlet_categorical":
        return np.log(np.asarray(params["p"])[y.astype(int)])
    if fam == "categorical":
        logits = _logits(params, X)
        return special.log_softmax(logits, axis=1)[np.arange(len(y)), y.astype(int)]
    if fam == "ordinal":
        eta = X @ np.asarray(params["beta"]) if X.shape[1] else np.zeros(len(y))
        c = np.concatenate([[-np.inf], np.asarray(params["cutpoints"]), [np.inf]])
        k = y.astype(int)
        return np.log(stats.logistic.cdf(c[k + 1] - eta) - stats.logistic.cdf(c[k] - eta))
    eta = eta_of(params, X)
    if fam == "bernoulli":
        return stats.bernoulli.logpmf(y, special.expit(eta))
    if fam == "normal":
        return stats.norm.logpdf(y, eta, params["sigma"])
    if fam == "lognormal":
        return stats.lognorm.logpdf(y, s=params["sigma"], scale=np.exp(eta))
    if fam == "poisson":
        return stats.poisson.logpmf(y, np.exp(eta))
    phi = float(params["phi"])
    nb = stats.nbinom(phi, phi / (phi + np.exp(eta)))
    if fam == "negative_binomial":
        return nb.logpmf(y)
    return nb.logpmf(y) - np.log(nb.sf(0))


def scipy_log_prior_jacobian(part, x: np.ndarray) -> float:
    """Log prior (SciPy) + log-Jacobian (by hand) at the unconstrained point x."""
    s = part.prior_scale
    values = part.layout.unpack(x)
    sl = part.layout.slices
    total = 0.0
    for name, v in values.items():
        xs = x[sl[name]]
        if name == "sigma":
            total += stats.halfnorm.logpdf(v, scale=s) + xs.sum()
        elif name == "phi":
            total += stats.gamma.logpdf(v, a=2.0, scale=10.0) + xs.sum()
        elif name == "cutpoints":
            m = v.size
            total += stats.norm.logpdf(v, np.arange(m) - (m - 1) / 2, 2 * s).sum() + xs[1:].sum()
        elif name == "p":
            a = np.full(v.size, part.concentration)
            total += stats.dirichlet.logpdf(v, a) + np.log(v.size) + np.log(v).sum()
        elif name == "intercept":
            scale = s if part.family in ("normal", "lognormal") else 2 * s
            total += stats.norm.logpdf(v, 0, scale).sum()
        else:
            total += stats.norm.logpdf(v, 0, s).sum()
    return float(total)


def scipy_log_density(part, data: PartData, weights: np.ndarray, x: np.ndarray) -> float:
    """The ungrouped reference: sum_i w_i a_i f(x_i) record by record (SciPy) + prior + Jacobian."""
    act = data.active
    f = scipy_loglik(part, part.layout.unpack(x), data.y[act], data.X[act])
    return float(weights[act] @ f) + scipy_log_prior_jacobian(part, x)


@pytest.fixture(params=CASE_IDS)
def case(request) -> Case:
    return build_case(request.param)


@pytest.fixture
def reference():
    """The SciPy reference functions (module docstring)."""
    return {
        "loglik": scipy_loglik,
        "log_density": scipy_log_density,
        "prior": scipy_log_prior_jacobian,
        "build_case": build_case,
        "simulate": simulate,
    }
