"""Ready models: per-record log-likelihood and range log-probability against SciPy."""

import numpy as np
import pandas as pd
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special, stats

from pseudopost.models import (
    LogNormalRegression,
    NegativeBinomialRegression,
    NormalRegression,
    PoissonRegression,
    RecordFunction,
)

M = 5  # posterior draws used for checking


def _frame(rng, kind, n=40):
    z = rng.normal(size=n)
    if kind == "normal":
        y = rng.normal(1 + 0.5 * z, 2.0)
        y[:3] = [-40.0, 0.0, 55.0]  # far tails
    elif kind == "lognormal":
        y = rng.lognormal(1 + 0.5 * z, 1.0)
        y[:3] = [1e-6, 1.0, 1e5]
    else:
        y = rng.poisson(np.exp(1 + 0.3 * z)).astype(np.int64)
        y[:3] = [0, 0, 60]
    return pd.DataFrame({"z": z, "y": y})


def _draws(rng, with_phi=False):
    d = {"intercept": rng.normal(1, 0.2, M), "beta": rng.normal(0.4, 0.1, (M, 1))}
    d["sigma"] = rng.uniform(0.5, 2.5, M)
    if with_phi:
        d["phi"] = rng.uniform(0.5, 30, M)
    return d


def _scipy_dist(kind, d, z):
    eta = d["intercept"][:, None] + d["beta"][:, 0][:, None] * z[None, :]
    if kind == "normal":
        return stats.norm(eta, d["sigma"][:, None])
    if kind == "lognormal":
        return stats.lognorm(s=d["sigma"][:, None], scale=np.exp(eta))
    if kind == "poisson":
        return stats.poisson(np.exp(eta))
    phi = d["phi"][:, None]
    mu = np.exp(eta)
    return stats.nbinom(phi, phi / (phi + mu))


CASES = [
    ("normal", NormalRegression),
    ("lognormal", LogNormalRegression),
    ("poisson", PoissonRegression),
    ("negbin", NegativeBinomialRegression),
]


@pytest.mark.parametrize(("kind", "cls"), CASES)
def test_record_loglik_matches_scipy(rng, kind, cls):
    df = _frame(rng, "counts" if kind in ("poisson", "negbin") else kind)
    model = cls("y", ["z"])
    prepared = model.prepare(df)
    base = model.build(prepared)
    draws = {
        k: v
        for k, v in _draws(rng, kind == "negbin").items()
        if k in {rv.name for rv in base.free_RVs}
    }
    got = RecordFunction(base)(draws)
    dist = _scipy_dist(kind, draws, df["z"].to_numpy())
    y = df["y"].to_numpy()
    want = dist.logpmf(y) if kind in ("poisson", "negbin") else dist.logpdf(y)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def _range_fn(model, base):
    def graph(m, observed, extras):
        return model.log_prob_range_graph(m, extras["lower"], extras["upper"])

    return RecordFunction(base, graph=graph, extra_inputs=("lower", "upper"))


@pytest.mark.parametrize(("kind", "cls"), CASES)
def test_log_prob_range_matches_scipy_including_far_tails(rng, kind, cls):
    df = _frame(rng, "counts" if kind in ("poisson", "negbin") else kind)
    model = cls("y", ["z"])
    prepared = model.prepare(df)
    base = model.build(prepared)
    draws = {
        k: v
        for k, v in _draws(rng, kind == "negbin").items()
        if k in {rv.name for rv in base.free_RVs}
    }
    y = df["y"].to_numpy().astype(float)
    if model.discrete:
        lower, upper = np.floor(0.6 * y), np.ceil(1.2 * y)
    elif kind == "normal":
        lower, upper = y - 0.5, y + 0.5
    else:
        lower, upper = 0.6 * y, 1.2 * y
    got = _range_fn(model, base)(draws, lower=lower, upper=upper)
    dist = _scipy_dist(kind, draws, df["z"].to_numpy())
    if model.discrete:  # both endpoints count: brute-force log-sum of the pmf over a..b
        ks = np.arange(0, upper.max() + 1)
        lp = dist.logpmf(ks[:, None, None])  # (k, draw, record)
        inside = (ks[:, None, None] >= lower) & (ks[:, None, None] <= upper)
        want = special.logsumexp(np.where(inside, lp, -np.inf), axis=0)
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-10)
    else:  # log space via logcdf/logsf; linear-space subtraction underflows in the far tails
        lo_cdf, hi_cdf = dist.logcdf(lower), dist.logcdf(upper)
        want = hi_cdf + np.log1p(-np.exp(lo_cdf - hi_cdf))
        tail = dist.logsf(lower) + np.log1p(-np.exp(dist.logsf(upper) - dist.logsf(lower)))
        want = np.where(lo_cdf > np.log(0.5), tail, want)
        assert np.all(np.isfinite(got)), "far-tail range probabilities must stay finite"
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_far_tail_range_is_finite_where_linear_space_underflows():
    df = pd.DataFrame({"y": [0.0, 1.0, 60.0]})
    model = NormalRegression("y")
    base = model.build(model.prepare(df))
    fn = _range_fn(model, base)
    draws = {"intercept": np.zeros(1), "sigma": np.ones(1)}
    y = df["y"].to_numpy()
    got = fn(draws, lower=y, upper=y + 1.0)
    linear = stats.norm.cdf(y + 1) - stats.norm.cdf(y)
    assert linear[2] == 0.0  # underflows in linear space
    want = special.log_ndtr(-60.0) + np.log1p(
        -np.exp(special.log_ndtr(-61.0) - special.log_ndtr(-60.0))
    )
    np.testing.assert_allclose(got[0, 2], want, rtol=1e-6)


def test_predictors_optional_and_parameter_names(rng):
    df = pd.DataFrame({"y": rng.lognormal(size=10)})
    base = LogNormalRegression("y").build(LogNormalRegression("y").prepare(df))
    assert {rv.name for rv in base.free_RVs} == {"intercept", "sigma"}
    base = NegativeBinomialRegression("y", ["z"]).build(
        NegativeBinomialRegression("y", ["z"]).prepare(
            pd.DataFrame({"y": rng.poisson(3, 10), "z": rng.normal(size=10)})
        )
    )
    assert {rv.name for rv in base.free_RVs} == {"intercept", "beta", "phi"}
    assert base.named_vars_to_dims["beta"] == ("predictor",)


def test_logdiffexp_used_is_stable():
    # guard against a PyMC change: logdiffexp of nearly equal large negatives stays finite
    a, b = pt.dscalar(), pt.dscalar()
    import pymc as pm

    f = pytensor.function([a, b], pm.math.logdiffexp(a, b))
    assert np.isfinite(f(-800.0, -801.0))


@pytest.mark.parametrize(("kind", "cls"), CASES)
def test_declare_with_prefix_inside_a_composite_model(rng, kind, cls):
    import pymc as pm

    df = _frame(rng, "counts" if kind in ("poisson", "negbin") else kind)
    df["w"] = rng.normal(size=len(df))
    model, other = cls("y", ["z"]), NormalRegression("w", ["z"])
    prepared, prep_w = model.prepare(df), other.prepare(df)
    plain = model.build(prepared)
    assert plain.coords == {"predictor": ("z",)} and model.coords("y_") == {"y_predictor": ["z"]}
    with pm.Model() as joint:
        model.declare(prepared, "y_")
        other.declare(prep_w, "w_")
    assert {rv.name for rv in joint.free_RVs} == {f"y_{rv.name}" for rv in plain.free_RVs} | {
        "w_intercept",
        "w_beta",
        "w_sigma",
    }
    assert joint.named_vars_to_dims["y_beta"] == ("y_predictor",)
    assert {d.name for d in joint.data_vars} == {"y_X", "y_data", "w_X", "w_data"}
    assert {rv.name for rv in joint.observed_RVs} == {"y", "w"}
    draws = {
        k: v
        for k, v in _draws(rng, kind == "negbin").items()
        if k in {rv.name for rv in plain.free_RVs}
    }
    w_draws = {"intercept": rng.normal(size=M), "beta": rng.normal(size=(M, 1))}
    w_draws["sigma"] = rng.uniform(0.5, 2, M)
    both = {f"y_{k}": v for k, v in draws.items()} | {f"w_{k}": v for k, v in w_draws.items()}
    got = RecordFunction(joint)(both)
    want = RecordFunction(plain)(draws) + RecordFunction(other.build(prep_w))(w_draws)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_every_ready_model_declares_with_prefix_and_inverts(rng):
    import pymc as pm

    from pseudopost.models import (
        CategoricalRegression,
        DirichletCategorical,
        FiniteMixture,
        HurdleLogNormal,
        HurdleNegativeBinomial,
        LogisticRegression,
        OrdinalRegression,
    )

    n = 30
    z = rng.normal(size=n)
    df = pd.DataFrame(
        {
            "z": z,
            "b": np.resize([True, False, False], n),
            "c": pd.Categorical(np.resize(["x", "y", "w"], n)),
            "d": np.resize(["p", "q"], n),
            "o": pd.Categorical(np.resize(["lo", "hi", "mid"], n), ["lo", "mid", "hi"], True),
            "h": np.resize([0.0, 1.5, 20.0], n),
            "k": np.resize([0, 3, 1, 0], n),
            "m": rng.normal(size=n),
        }
    )
    models = {
        "b_": LogisticRegression("b", ["z"]),
        "c_": CategoricalRegression("c", ["z"]),
        "d_": DirichletCategorical("d"),
        "o_": OrdinalRegression("o", ["z"]),
        "h_": HurdleLogNormal("h", ["z"]),
        "k_": HurdleNegativeBinomial("k", ["z"]),
        "m_": FiniteMixture("m", 2),
    }
    assert len({m.family for m in models.values()}) == len(models)
    prepared = {p: m.prepare(df) for p, m in models.items()}
    separate, draws = 0.0, {}
    for prefix, model in models.items():
        alone = model.build(prepared[prefix])
        names = [rv.name for rv in alone.free_RVs]
        vals = dict(zip(names, pm.draw([alone[k] for k in names], random_seed=1), strict=True))
        draws |= {f"{prefix}{k}": v[None] for k, v in vals.items()}
        separate = separate + RecordFunction(alone)({k: v[None] for k, v in vals.items()})
        assert model.inverts  # every ready model synthesizes by inversion
        u = np.full((n, model.uniforms_per_record), 0.5)
        x = model.sample_outcome(vals, {"z": z}, u)
        assert x.shape == (n,) and np.all(np.isfinite(x))
        out = model.to_frame(prepared[prefix], {model.outcome: x})
        assert out[model.outcome].dtype == df[model.outcome].dtype
    with pm.Model() as joint:
        for prefix, model in models.items():
            model.declare(prepared[prefix], prefix)
    dims = joint.named_vars_to_dims
    assert dims["c_beta"] == ("c_predictor", "c_level") and dims["o_cutpoints"] == ("o_cutpoint",)
    assert dims["m_mu"] == ("m_component",) and dims["h_psi_beta"] == ("h_predictor",)
    assert {rv.name for rv in joint.observed_RVs} == {m.outcome for m in models.values()}
    np.testing.assert_allclose(RecordFunction(joint)(draws), separate, rtol=1e-10)
