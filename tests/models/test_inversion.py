"""Synthesis by inversion of the ready models, x_i = F^{-1}(u_i | theta, z_i), and the default
SynthModel.simulate that draws from record-indexed uniforms."""

import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

from pseudopost._streams import record_uniforms
from pseudopost.models import (
    LogNormalRegression,
    NegativeBinomialRegression,
    NormalRegression,
    PoissonRegression,
    PyMCModel,
    synthesis_stream,
)

Q = np.array([1e-12, 0.01, 0.3, 0.5, 0.77, 0.99, 1 - 1e-12])
PARAMS = {"intercept": np.array(1.2), "beta": np.array([0.4]), "sigma": np.array(0.7)}
PARAMS_NB = {"intercept": np.array(1.2), "beta": np.array([0.4]), "phi": np.array(3.5)}


def _scipy(kind, eta):
    if kind == "normal":
        return stats.norm(eta, 0.7)
    if kind == "lognormal":
        return stats.lognorm(s=0.7, scale=np.exp(eta))
    if kind == "poisson":
        return stats.poisson(np.exp(eta))
    mu = np.exp(eta)
    return stats.nbinom(3.5, 3.5 / (3.5 + mu))


CASES = [
    ("normal", NormalRegression, PARAMS),
    ("lognormal", LogNormalRegression, PARAMS),
    ("poisson", PoissonRegression, PARAMS),
    ("negbin", NegativeBinomialRegression, PARAMS_NB),
]


@pytest.mark.parametrize(("kind", "cls", "params"), CASES)
def test_quantile_function_equals_scipy_ppf(kind, cls, params):
    z = np.linspace(-2, 2, Q.size)
    got = cls("y", ["z"]).sample_outcome(params, {"z": z}, Q[:, None])
    want = _scipy(kind, 1.2 + 0.4 * z).ppf(Q)
    if kind in ("poisson", "negbin"):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize(("kind", "cls", "params"), CASES)
def test_inversion_draws_follow_the_model(kind, cls, params):
    n = 300
    z = np.linspace(-1, 1, n)
    u = record_uniforms(2026, stream=3, start=0, n=n, k=1)
    x = cls("y", ["z"]).sample_outcome(params, {"z": z}, u)
    dist = _scipy(kind, 1.2 + 0.4 * z)
    if kind in ("normal", "lognormal"):  # probability integral transform is U(0, 1)
        assert stats.kstest(dist.cdf(x), "uniform").pvalue > 0.01
    else:  # randomised PIT of a discrete variable is U(0, 1)
        v = dist.cdf(x - 1) + np.random.default_rng(0).uniform(size=n) * dist.pmf(x)
        assert stats.kstest(v, "uniform").pvalue > 0.01
        assert np.all(x == np.round(x)) and np.all(x >= 0)


def test_intercept_only_model_needs_no_predictors():
    x = NormalRegression("y").sample_outcome(PARAMS, {}, np.array([[0.5], [0.975]]))
    np.testing.assert_allclose(x, [1.2, 1.2 + 0.7 * stats.norm.ppf(0.975)])


def test_bad_sample_outcome_input():
    model = NormalRegression("y", ["z"])
    with pytest.raises(ValueError, match=r"needs predictor\(s\) \['z'\]"):
        model.sample_outcome(PARAMS, {"w": np.zeros(2)}, np.full((2, 1), 0.5))
    with pytest.raises(ValueError, match=r"'u' must have shape \(n, 1\)"):
        model.sample_outcome(PARAMS, {"z": np.zeros(2)}, np.full(2, 0.5))
    with pytest.raises(ValueError, match="strictly inside"):
        model.sample_outcome(PARAMS, {"z": np.zeros(2)}, np.array([[0.5], [1.0]]))
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        model.sample_outcome(PARAMS, {"z": np.zeros(3)}, np.full((2, 1), 0.5))


def test_synthesis_stream():
    assert synthesis_stream(0, 0) == 0
    assert synthesis_stream(3, 5) == 3 * 2**16 + 5
    pairs = {synthesis_stream(d, c) for d in range(4) for c in range(4)}
    assert len(pairs) == 16
    with pytest.raises(ValueError, match="'column' must be below"):
        synthesis_stream(0, 2**16)
    with pytest.raises(ValueError, match="'dataset' must be a non-negative integer"):
        synthesis_stream(-1, 0)


def _posterior(rng, chains=2, draws=6):
    return xr.Dataset(
        {
            "intercept": (("chain", "draw"), rng.normal(1, 0.1, (chains, draws))),
            "beta": (("chain", "draw", "predictor"), rng.normal(0.4, 0.1, (chains, draws, 1))),
            "sigma": (("chain", "draw"), rng.uniform(0.5, 1.5, (chains, draws))),
        },
        coords={"chain": range(chains), "draw": range(draws), "predictor": ["z"]},
    )


def test_simulate_draws_dataset_j_from_chosen_draw_and_stream_j(rng):
    n = 30
    df = pd.DataFrame({"z": rng.normal(size=n), "y": rng.lognormal(size=n)})
    model = LogNormalRegression("y", ["z"])
    prepared = model.prepare(df)
    base = model.build(prepared)
    post = _posterior(rng)
    chosen = np.array([2, 9])  # flat chain-major: draw 9 is chain 1, draw 3
    frames = model.simulate(prepared, base, post, chosen, seed=77)
    assert len(frames) == 2
    for j, (c, d) in enumerate([(0, 2), (1, 3)]):
        params = {k: post[k].isel(chain=c, draw=d).to_numpy() for k in post.data_vars}
        u = record_uniforms(77, synthesis_stream(j, 0), 0, n, 1)
        want = model.sample_outcome(params, {"z": df["z"].to_numpy()}, u)
        np.testing.assert_array_equal(frames[j]["y"].to_numpy(), want)
        pd.testing.assert_series_equal(frames[j]["z"], df["z"])
    assert list(frames[0].columns) == ["z", "y"] and frames[0].index.equals(df.index)


def test_synthesis_is_chunk_invariant(rng):
    n = 50
    z = rng.normal(size=n)
    model = NegativeBinomialRegression("y", ["z"])
    full = model.sample_outcome(PARAMS_NB, {"z": z}, record_uniforms(5, 1, 0, n, 1))
    parts = [
        model.sample_outcome(PARAMS_NB, {"z": z[a:b]}, record_uniforms(5, 1, start=a, n=b - a, k=1))
        for a, b in [(0, 17), (17, 18), (18, 50)]
    ]
    np.testing.assert_array_equal(np.concatenate(parts), full)


def test_user_pymc_model_falls_back_to_posterior_predictive(rng):
    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 10)
        pm.Normal("a", mu, 1, observed=rng.normal(size=10))
    model = PyMCModel(m)
    assert not model.inverts and NormalRegression("y").inverts
    post = xr.Dataset(
        {"mu": (("chain", "draw"), np.full((1, 4), 100.0))},
        coords={"chain": [0], "draw": range(4)},
    )
    frames = model.simulate(model.prepare(None), m, post, np.array([1, 2]), seed=3)
    assert len(frames) == 2 and abs(frames[0]["a"].mean() - 100) < 2


def test_pymc_predictive_and_inversion_draw_the_same_distribution():
    """The new models' PyMC random path (used by range-averaged inclusion probabilities) and
    their inversion agree: two-sample tests on 2000 draws each."""
    from pseudopost.models import (
        FiniteMixture,
        HurdleLogNormal,
        HurdleNegativeBinomial,
        OrdinalRegression,
    )
    from pseudopost.models.predictive import predictive_draws

    n = 2000
    z = np.resize([-0.5, 0.5], n)
    df = pd.DataFrame(
        {
            "z": z,
            "o": np.resize([1, 2, 3], n),
            "h": np.resize([0.0, 1.0, 2.0], n),
            "k": np.resize([0, 1, 4], n),
            "m": np.resize([-1.0, 2.0], n),
        }
    )
    common = {"intercept": 0.5, "beta": [0.3], "psi_intercept": 0.2, "psi_beta": [0.6]}
    cases = [
        (OrdinalRegression("o", ["z"]), {"cutpoints": [-0.3, 0.9], "beta": [1.0]}),
        (HurdleLogNormal("h", ["z"]), common | {"sigma": 0.8}),
        (HurdleNegativeBinomial("k", ["z"]), common | {"phi": 2.0}),
        (FiniteMixture("m", 2), {"w": [0.3, 0.7], "mu": [-2.0, 1.0], "sigma": [0.5, 1.0]}),
    ]
    for model, values in cases:
        base = model.build(model.prepare(df))
        params = {rv.name: np.asarray(values[rv.name], float) for rv in base.free_RVs}
        post = xr.Dataset(
            {
                k: (("chain", "draw", *(f"{k}_{i}" for i in range(v.ndim))), v[None, None])
                for k, v in params.items()
            }
        )
        pymc_x = predictive_draws(base, post, [model.outcome], np.array([0]), 5)[model.outcome][0]
        u = record_uniforms(6, 0, 0, n, model.uniforms_per_record)
        inv_x = model.sample_outcome(params, {"z": z}, u)
        if model.discrete:
            table = np.array(
                [np.bincount(np.minimum(x.astype(int), 6), minlength=7) for x in (pymc_x, inv_x)]
            )
            table = table[:, table.sum(0) > 0]
            assert stats.chi2_contingency(table).pvalue > 0.001, type(model).__name__
        else:
            assert stats.ks_2samp(pymc_x, inv_x).pvalue > 0.001, type(model).__name__
