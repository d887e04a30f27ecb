"""The pseudo posterior mechanism end to end (small draws; full size lives in benchmarks/)."""

import warnings

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr

from pseudopost import PseudoPosterior, SamplingWarning
from pseudopost.fitting import sufficient
from pseudopost.models import (
    LogNormalRegression,
    NegativeBinomialRegression,
    NormalRegression,
    PoissonRegression,
)

FAST = {"draws": 200, "tune": 200, "chains": 2}


def _quiet_fit(mech, data=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        return mech.fit(data, **{**FAST, **kw})


def test_simulation_weights_epsilon_and_positive_synthetic(sim_result):
    res = sim_result
    assert res.likelihood == "sufficient"  # the default fast path for a log-normal model
    assert res.datatree.attrs["likelihood"] == "sufficient"
    alpha = res.alpha.to_numpy()
    assert alpha.min() >= 0 and alpha.max() <= 1
    assert alpha.min() == 0.0 and alpha.max() == 1.0  # linear normalisation spans [0, 1]
    assert res.epsilon < res.unweighted_epsilon
    assert res.epsilon == pytest.approx(2 * res.lipschitz.max().item())
    # the riskiest record (largest L_i) gets the smallest weight
    assert alpha[np.argmax(res.risk.to_numpy())] == 0.0
    syn = res.synthesize(seed=1)
    assert list(syn.columns) == ["z", "x"] and (syn["x"] > 0).all() and len(syn) == 400


def test_accountant_matches_brute_force_on_the_weighted_draws(sim_result, sim_small):
    from scipy import stats

    post = sim_result.posterior
    b0 = post["intercept"].to_numpy().ravel()
    b1 = post["beta"].to_numpy().reshape(-1)
    s = post["sigma"].to_numpy().ravel()
    f = stats.lognorm(
        s=s[:, None], scale=np.exp(b0[:, None] + b1[:, None] * sim_small.z.to_numpy())
    )
    logp = f.logpdf(sim_small.x.to_numpy()[None, :])
    want = (sim_result.alpha.to_numpy() * np.abs(logp)).max(axis=0)
    np.testing.assert_allclose(sim_result.lipschitz.to_numpy(), want, rtol=1e-8)


def test_datatree_is_arviz_ready(sim_result):
    tree = sim_result.datatree
    assert {
        "posterior",
        "risk_posterior",
        "weights",
        "privacy",
        "sample_stats",
        "risk_sample_stats",
        "observed_data",
    } <= set(tree.children)
    summ = az.summary(tree, round_to="none")
    assert {"intercept", "sigma"} <= set(summ.index) and "r_hat" in summ.columns
    assert isinstance(sim_result.lipschitz, xr.DataArray)
    assert sim_result.lipschitz.dims == ("record",)
    assert tree["privacy"].attrs["neighbouring_relation"] == "add/remove one record"
    assert set(sim_result.diagnostics) == {"weighted", "unweighted"}


def test_m_datasets_use_distinct_draws(sim_result):
    out = sim_result.synthesize_datasets(3, seed=4)
    assert isinstance(out, list) and len(out) == 3
    assert all(isinstance(f, pd.DataFrame) for f in out)
    assert not np.allclose(out[0]["x"], out[1]["x"])
    pd.testing.assert_frame_equal(sim_result.synthesize_datasets(3, seed=4)[2], out[2])
    # one dataset: a DataFrame, the first of the list for the same seed
    one = sim_result.synthesize(seed=4)
    assert isinstance(one, pd.DataFrame)
    pd.testing.assert_frame_equal(one, sim_result.synthesize_datasets(1, seed=4)[0])


def test_synthesize_m_is_deprecated_and_keeps_its_old_return_types(sim_result):
    with pytest.warns(DeprecationWarning, match=r"synthesize_datasets\(m, seed=...\)"):
        several = sim_result.synthesize(m=3, seed=4)
    assert isinstance(several, list) and len(several) == 3
    for old, new in zip(several, sim_result.synthesize_datasets(3, seed=4), strict=True):
        pd.testing.assert_frame_equal(old, new)
    with pytest.warns(DeprecationWarning):
        single = sim_result.synthesize(1, seed=4)  # positional m, as pseudopost 0.1 allowed
    pd.testing.assert_frame_equal(single, sim_result.synthesize(seed=4))
    with pytest.raises(ValueError, match="'m'"):
        sim_result.synthesize_datasets(0, seed=1)


def test_unweighted_synthesizer_is_an_option_of_the_result(sim_result):
    from pseudopost.synthesis import synthesize_unweighted

    frames = sim_result.synthesize_datasets(2, seed=6, weighted=False)
    weighted = sim_result.synthesize_datasets(2, seed=6)
    assert not np.allclose(frames[0]["x"], weighted[0]["x"])  # another posterior
    np.testing.assert_array_equal(frames[0]["z"], weighted[0]["z"])  # same predictors
    one = sim_result.synthesize_datasets(1, seed=6, weighted=False)[0]
    pd.testing.assert_frame_equal(sim_result.synthesize(seed=6, weighted=False), one)
    with pytest.warns(DeprecationWarning, match="weighted=False"):
        old = synthesize_unweighted(sim_result, 2, seed=6)
    for a, b in zip(old, frames, strict=True):
        pd.testing.assert_frame_equal(a, b)
    risk_post = sim_result.datatree["risk_posterior"].to_dataset()
    total = risk_post.sizes["chain"] * risk_post.sizes["draw"]
    with pytest.raises(ValueError, match=f"exceeds the {total} unweighted posterior draws"):
        sim_result.synthesize_datasets(total + 1, weighted=False)


@pytest.mark.parametrize("likelihood", ["full", "sufficient"])
def test_same_seed_same_release_and_no_recompile(sim_small, monkeypatch, likelihood):
    import nutpie

    from pseudopost.fitting import cache

    cache.clear()
    calls = []
    if likelihood == "full":
        real = nutpie.compile_pymc_model
        monkeypatch.setattr(
            nutpie, "compile_pymc_model", lambda *a, **k: calls.append(1) or real(*a, **k)
        )
    else:
        real = sufficient.part_model
        monkeypatch.setattr(
            sufficient, "part_model", lambda *a, **k: calls.append(1) or real(*a, **k)
        )
    data = sim_small.iloc[:150].copy()
    before = data.copy()
    mech = PseudoPosterior(LogNormalRegression("x", ["z"]), reweight=True, likelihood=likelihood)
    r1 = _quiet_fit(mech, data, seed=9)
    # unweighted + weighted + reweighted fits share one compilation
    if likelihood == "full":
        sampler = cache.weighted_sampler(r1.model, r1.built, censored=False, kind="nutpie")
    else:
        sampler = cache.statistics_sampler(r1.model, r1.prepared.arrays, "nutpie")
    assert len(calls) == 1 and sampler.compilations == 1
    r2 = _quiet_fit(mech, data, seed=9)
    assert r1.epsilon == r2.epsilon
    first = r1.synthesize(seed=2)
    pd.testing.assert_frame_equal(first, r2.synthesize(seed=2))
    pd.testing.assert_frame_equal(data, before)  # the caller's frame is untouched
    r3 = _quiet_fit(mech, data, seed=10)
    assert r3.epsilon != r1.epsilon
    # other data of the same shape reuse the compiled model (data swapped in, not recompiled)
    other = sim_small.iloc[150:300].reset_index(drop=True)
    r4 = _quiet_fit(mech, other, seed=9)
    assert len(calls) == 1 and sampler.compilations == 1
    assert r4.risk.shape == (150,) and not np.allclose(r4.risk, r1.risk)
    assert r4.built is not r1.built  # each result keeps its own model of its own data
    np.testing.assert_allclose(r4.synthesize(seed=0)["z"], other["z"])
    # an earlier result still synthesizes from its own data, not the data swapped in since
    pd.testing.assert_frame_equal(r1.synthesize(seed=2), first)
    assert r1.likelihood == r4.likelihood == likelihood
    if likelihood == "sufficient":  # the statistics model does not depend on n either
        r5 = _quiet_fit(mech, sim_small.iloc[:90], seed=9)
        assert len(calls) == 1 and r5.risk.shape == (90,)


def test_both_likelihood_paths_give_the_same_epsilon_within_monte_carlo_error(sim_small):
    """Same data and fixed weights: per-chain epsilons (independent estimates, recomputed by
    brute force with SciPy) of the full and the sufficient-statistics fits agree (Welch t)."""
    from scipy import stats

    data = sim_small.iloc[:150]
    alpha = np.random.default_rng(8).uniform(0.2, 1.0, len(data))
    z, x = data["z"].to_numpy(), data["x"].to_numpy()
    per_chain = {}
    for likelihood in ("full", "sufficient"):
        mech = PseudoPosterior(LogNormalRegression("x", ["z"]), likelihood=likelihood)
        res = _quiet_fit(mech, data, weights=alpha, seed=5, chains=4, draws=300, tune=300)
        assert res.likelihood == likelihood
        post = res.posterior
        b0, s = (post[k].to_numpy()[..., None] for k in ("intercept", "sigma"))
        b1 = post["beta"].isel(predictor=0).to_numpy()[..., None]
        f = stats.lognorm(s=s, scale=np.exp(b0 + b1 * z)).logpdf(x)  # (chain, draw, record)
        eps = 2 * (alpha * np.abs(f).max(axis=1)).max(axis=1)
        assert res.epsilon == pytest.approx(eps.max(), rel=1e-8)
        per_chain[likelihood] = eps
    test = stats.ttest_ind(per_chain["full"], per_chain["sufficient"], equal_var=False)
    assert test.pvalue > 1e-3, per_chain


def test_likelihood_path_choice(sim_small):
    model = LogNormalRegression("x", ["z"])
    prepared = model.prepare(sim_small)
    path = lambda **kw: PseudoPosterior(model, **kw)._likelihood_path(prepared)  # noqa: E731
    assert path()[0] == "sufficient"
    assert path(likelihood="full") == ("full", "per-record likelihood (likelihood='full')")
    kind, note = path(censor_epsilon=4.0)
    assert kind == "full" and "censoring" in note
    nb = NegativeBinomialRegression("x")
    assert (
        "NegativeBinomialRegression has no sufficient"
        in PseudoPosterior(nb)._likelihood_path(nb.prepare(sim_small.assign(x=1.0)))[1]
    )
    with pytest.raises(ValueError, match=r"likelihood='sufficient' is not available.*Negative"):
        PseudoPosterior(nb, likelihood="sufficient")


def test_sufficient_on_a_poisson_design_with_too_many_rows_fails_before_work(monkeypatch, rng):
    import nutpie

    from pseudopost.fitting.sufficient import MAX_UNIQUE_ROWS

    monkeypatch.setattr(nutpie, "compile_pymc_model", lambda *a, **k: pytest.fail("compiled"))
    monkeypatch.setattr(sufficient, "part_model", lambda *a, **k: pytest.fail("compiled"))
    n = MAX_UNIQUE_ROWS + 10
    df = pd.DataFrame({"z": rng.normal(size=n), "c": rng.poisson(2.0, n)})
    mech = PseudoPosterior(PoissonRegression("c", ["z"]), likelihood="sufficient")
    with pytest.raises(ValueError, match=f"{n} unique predictor rows"):
        mech.fit(df, draws=10)


def test_draw_exclusion_lowers_epsilon_and_is_used_in_synthesis(sim_small):
    data = sim_small.iloc[:150]
    full = _quiet_fit(PseudoPosterior(LogNormalRegression("x", ["z"])), data, seed=1)
    cut = _quiet_fit(
        PseudoPosterior(LogNormalRegression("x", ["z"]), exclude_quantile=0.9), data, seed=1
    )
    kept = cut.datatree["privacy"]["draw_kept"].to_numpy()
    assert 0.85 < kept.mean() < 0.95
    assert cut.epsilon <= full.epsilon
    assert cut.synthesize_datasets(int(kept.sum()), seed=0)[0].shape == (150, 2)
    with pytest.raises(ValueError, match=f"exceeds the {int(kept.sum())} kept posterior draws"):
        cut.synthesize_datasets(int(kept.sum()) + 1)


def test_user_written_pymc_model_and_joint_records(rng):
    y1, y2 = rng.normal(1, 1, 50), rng.normal(2, 1, 50)
    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 10)
        sd = pm.HalfNormal("sd", 2)
        pm.Normal("a", mu, sd, observed=y1)
        pm.Normal("b", mu + 1, sd, observed=y2)
    res = _quiet_fit(PseudoPosterior(m), seed=2)
    assert res.epsilon < res.unweighted_epsilon
    syn = res.synthesize(seed=0)
    assert list(syn.columns) == ["a", "b"] and len(syn) == 50
    assert len(m.potentials) == 0  # the user's model is not modified


@pytest.mark.parametrize("cls", [PoissonRegression, NegativeBinomialRegression])
def test_count_models_synthesize_counts(rng, cls):
    z = rng.normal(size=80)
    df = pd.DataFrame({"z": z, "n": rng.poisson(np.exp(1 + 0.4 * z))})
    res = _quiet_fit(PseudoPosterior(cls("n", ["z"])), df, seed=3)
    assert res.likelihood == ("sufficient" if cls is PoissonRegression else "full")
    syn = res.synthesize(seed=1)
    assert syn["n"].dtype == np.int64 and (syn["n"] >= 0).all()
    assert res.epsilon <= res.unweighted_epsilon


def test_poor_diagnostics_warn_naming_fit_and_parameter(sim_small):
    with pytest.warns(SamplingWarning, match=r"(weighted|unweighted) fit.*'(intercept|beta|sigma)"):
        PseudoPosterior(LogNormalRegression("x", ["z"])).fit(
            sim_small.iloc[:60], draws=8, tune=10, chains=2, seed=0
        )


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("frame", "model", "exc", "msg"),
    [
        (
            pd.DataFrame({"x": [1.0, np.nan, 2.0]}),
            NormalRegression("x"),
            ValueError,
            r"Column 'x'.*row 1.*nan",
        ),
        (pd.DataFrame({"x": [1.0, np.inf, 2.0]}), NormalRegression("x"), ValueError, "finite"),
        (
            pd.DataFrame({"x": ["a", "b", "c"]}),
            NormalRegression("x"),
            TypeError,
            "Column 'x' must be numeric",
        ),
        (
            pd.DataFrame({"x": [1.0, -2.0, 3.0]}),
            LogNormalRegression("x"),
            ValueError,
            r"strictly positive.*row 1.*-2",
        ),
        (
            pd.DataFrame({"x": [1.0, 0.0, 3.0]}),
            LogNormalRegression("x"),
            ValueError,
            "strictly positive",
        ),
        (
            pd.DataFrame({"n": [1.0, 2.5, 3.0]}),
            PoissonRegression("n"),
            ValueError,
            r"non-negative integer.*2\.5",
        ),
        (
            pd.DataFrame({"n": [1, -2, 3]}),
            NegativeBinomialRegression("n"),
            ValueError,
            "non-negative integer",
        ),
        (
            pd.DataFrame({"x": []}, dtype=float),
            NormalRegression("x"),
            ValueError,
            "at least 2 rows",
        ),
        (pd.DataFrame({"x": [1.0]}), NormalRegression("x"), ValueError, "at least 2 rows"),
        (
            pd.DataFrame({"x": [1.0, 2.0]}),
            NormalRegression("income"),
            ValueError,
            r"Unknown column\(s\) \['income'\]",
        ),
        (pd.DataFrame({"x": [1.0, 2.0]}), NormalRegression("x", ["age"]), ValueError, "age"),
    ],
)
def test_bad_data_is_refused_before_sampling(frame, model, exc, msg, monkeypatch):
    import nutpie

    fail = lambda *a, **k: pytest.fail("work started before validation")  # noqa: E731
    monkeypatch.setattr(nutpie, "compile_pymc_model", fail)
    monkeypatch.setattr(sufficient, "part_model", fail)
    before = frame.copy()
    with pytest.raises(exc, match=msg):
        PseudoPosterior(model).fit(frame, draws=10)
    pd.testing.assert_frame_equal(frame, before)


@pytest.mark.parametrize(
    ("kwargs", "msg"),
    [
        ({"scale": 0.0}, "scale"),
        ({"scale": 1.0, "shift": -1.0}, "every weight 0"),
        ({"normalisation": "rank"}, "method"),
        ({"exclude_quantile": 0.0}, "exclude_quantile"),
        ({"sampler": "stan"}, "sampler"),
        ({"likelihood": "fast"}, "'likelihood' parameter must be one of"),
        ({"likelihood": "sufficient", "censor_epsilon": 4.0}, "censoring clips"),
        ({"censor_epsilon": 4.0, "exclude_quantile": 0.9}, "depends on the data"),
    ],
)
def test_bad_mechanism_arguments(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        PseudoPosterior(NormalRegression("x"), **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "exc", "msg"),
    [
        ({"draws": 0}, ValueError, "draws"),
        ({"chains": 0}, ValueError, "chains"),
        ({"tune": -1}, ValueError, "tune"),
        ({"draws": 2.5}, TypeError, "draws"),
        ({"weights": np.ones(3)}, ValueError, r"shape \(4,\)"),
        ({"weights": np.array([0.5, 2.0, 1, 1])}, ValueError, r"record 1 has 2\.0"),
        ({"weights": np.zeros(4)}, ValueError, "all 0"),
        ({"seed": -3}, ValueError, "seed"),
    ],
)
def test_bad_fit_arguments(kwargs, exc, msg):
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(exc, match=msg):
        PseudoPosterior(NormalRegression("x")).fit(df, **kwargs)


def test_bad_model_specs():
    with pytest.raises(ValueError, match="both the outcome and a predictor"):
        NormalRegression("x", ["x"])
    with pytest.raises(ValueError, match="clash"):
        NormalRegression("sigma")
    with pytest.raises(TypeError, match=r"SynthModel or a pymc\.Model"):
        PseudoPosterior("x")


def test_pymc_sampler_fallback_gives_the_same_posterior(rng, monkeypatch):
    """sampler="pymc" fits the same pseudo posterior as nutpie (conjugate closed form)."""
    import nutpie

    monkeypatch.setattr(nutpie, "sample", lambda *a, **k: pytest.fail("nutpie sampled"))
    y = rng.normal(2.0, 1.0, 40)
    alpha = rng.uniform(0.2, 1.0, 40)
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=y)
    res = _quiet_fit(PseudoPosterior(m, sampler="pymc"), draws=500, tune=300, weights=alpha, seed=1)
    prec = 1 / 100 + alpha.sum()
    draws = res.posterior["mu"].to_numpy().ravel()
    assert abs(draws.mean() - (alpha * y).sum() / prec) < 4 * float(
        az.mcse(res.posterior["mu"]).item()
    )
    assert res.epsilon < res.unweighted_epsilon or np.all(alpha == 1)


def test_jax_backend_fits_the_same_weighted_posterior(rng, monkeypatch):
    """sampler="nutpie-jax" recompiles per fit (data frozen) but samples the same posterior."""
    import nutpie

    real, backends = nutpie.compile_pymc_model, []
    monkeypatch.setattr(
        nutpie,
        "compile_pymc_model",
        lambda *a, **k: backends.append(k.get("backend")) or real(*a, **k),
    )
    y = rng.normal(2.0, 1.0, 40)
    alpha = rng.uniform(0.2, 1.0, 40)
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=y)
    res = _quiet_fit(PseudoPosterior(m, sampler="nutpie-jax"), draws=800, weights=alpha, seed=2)
    assert backends == ["jax", "jax"]  # unweighted and weighted fits
    prec = 1 / 100 + alpha.sum()
    mcse = float(az.mcse(res.posterior["mu"]).item())
    assert abs(res.posterior["mu"].mean().item() - (alpha * y).sum() / prec) < 4 * mcse
    assert abs(res.posterior["mu"].std().item() - prec**-0.5) < 0.15 * prec**-0.5


# ----------------------------------------------------------------------------- no shared state
def test_interleaved_fits_on_other_data_leave_the_first_result_alone(sim_small):
    """Fits on other data between synthesis calls change nothing in an earlier result: each
    result synthesizes (weighted and unweighted) from its own model of its own data."""
    model = LogNormalRegression("x", ["z"])
    mech = PseudoPosterior(model, likelihood="full")
    a, b, c = (sim_small.iloc[k : k + 100].reset_index(drop=True) for k in (0, 100, 200))
    first = _quiet_fit(mech, a, seed=3)
    weighted, unweighted = first.synthesize(seed=5), first.synthesize(seed=5, weighted=False)
    second = _quiet_fit(mech, b, seed=3)
    middle = first.synthesize(seed=5)
    third = _quiet_fit(mech, c, seed=4)
    pd.testing.assert_frame_equal(first.synthesize(seed=5), weighted)
    pd.testing.assert_frame_equal(middle, weighted)
    pd.testing.assert_frame_equal(first.synthesize(seed=5, weighted=False), unweighted)
    np.testing.assert_array_equal(weighted["z"], a["z"])  # predictors as given, from a
    for other, data in ((second, b), (third, c)):
        syn = other.synthesize(seed=5)
        np.testing.assert_array_equal(syn["z"], data["z"])
        assert not np.allclose(syn["x"], weighted["x"])
    # the first fit's data are still what its model holds
    x_data = first.built["x_data"].get_value()
    np.testing.assert_array_equal(x_data, a["x"].to_numpy())


def test_a_users_model_is_snapshotted_at_fit_time(rng, monkeypatch):
    """A PyMC model refitted after ``pm.set_data`` shares the compiled sampler, and the earlier
    result keeps synthesizing from the data it was fitted on."""
    import nutpie

    real, calls = nutpie.compile_pymc_model, []
    monkeypatch.setattr(
        nutpie, "compile_pymc_model", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    x1, x2 = rng.normal(size=40), rng.normal(5.0, 1.0, 40)
    with pm.Model() as m:
        x = pm.Data("x", x1)
        y = pm.Data("y", 1.0 + 2.0 * x1 + rng.normal(size=40))
        a, b = pm.Normal("a", 0, 10), pm.Normal("b", 0, 10)
        pm.Normal("out", a + b * x, 1.0, observed=y, shape=x.shape)
    first = _quiet_fit(PseudoPosterior(m), seed=1)
    before = first.synthesize(seed=2)
    pm.set_data({"x": x2, "y": 1.0 + 2.0 * x2 + rng.normal(size=40)}, model=m)
    second = _quiet_fit(PseudoPosterior(m), seed=1)
    assert len(calls) == 1  # same structure: the compiled sampler is reused
    pd.testing.assert_frame_equal(first.synthesize(seed=2), before)
    # outcomes near a + b x: the second result's x are about 5 higher, times b = 2
    gap = second.synthesize(seed=2)["out"].mean() - before["out"].mean()
    assert 7.0 < gap < 13.0


# ----------------------------------------------------------------------------- privacy statement
@pytest.fixture(scope="module")
def censored_data():
    return pd.DataFrame({"x": np.random.default_rng(4).normal(1.0, 1.0, 30)})


@pytest.mark.parametrize(
    ("mech_kw", "fit_kw", "scope", "origin"),
    [
        ({}, {}, "global given the weights", "risk"),
        ({"shift": 1.0}, {}, "global", "ones"),
        ({}, {"weights": "ones"}, "global", "ones"),
        ({}, {"weights": "half", "public_weights": True}, "global", "public"),
        ({}, {"weights": "half"}, "global given the weights", "given"),
        ({"reweight": True, "shift": 1.0}, {}, "global given the weights", "risk"),
    ],
    ids=["risk", "shift-1", "ones", "public", "given", "reweighted"],
)
def test_censored_statement_is_global_only_with_weights_fixed_in_advance(
    censored_data, mech_kw, fit_kw, scope, origin
):
    n = len(censored_data)
    arrays = {"ones": np.ones(n), "half": np.linspace(0.2, 1.0, n)}
    if "weights" in fit_kw:
        fit_kw = {**fit_kw, "weights": arrays[fit_kw["weights"]]}
    mech = PseudoPosterior(NormalRegression("x"), censor_epsilon=6.0, **mech_kw)
    res = _quiet_fit(mech, censored_data, seed=1, draws=100, tune=100, **fit_kw)
    statement = res.privacy_statement
    assert statement.scope == scope and statement.epsilon == res.global_epsilon == 6.0
    assert statement.is_global == (scope == "global")
    assert res.datatree["privacy"].attrs["weights_origin"] == origin
    text = " ".join(statement.assumptions)
    assert "exact sampling" in text
    if scope == "global":
        assert "fixed before the data were seen" in text
        assert "given the weights" not in res.datatree["privacy"].attrs["guarantee"]
    else:
        assert "holds given the weights" in text
        assert "given the weights" in res.datatree["privacy"].attrs["guarantee"]


def test_uncensored_statement_is_local(sim_result):
    statement = sim_result.privacy_statement
    assert statement.scope == "local" and not statement.is_global
    assert statement.epsilon == sim_result.epsilon and sim_result.global_epsilon is None
    assert any("local to this database" in a for a in statement.assumptions)
    assert any(a.startswith("n is public") for a in statement.assumptions)


def test_statement_of_a_saved_fit_without_the_weights_origin_is_not_global():
    from pseudopost.mechanisms.pseudo_posterior.result import pseudo_posterior_statement

    attrs = {"epsilon": 3.0, "global_epsilon": 4.0, "decomposition": "censored"}
    assert pseudo_posterior_statement(attrs).scope == "global given the weights"
    assert pseudo_posterior_statement({**attrs, "weights_origin": "ones"}).scope == "global"


def test_public_weights_need_weights():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"'public_weights=True'.*no 'weights'"):
        PseudoPosterior(NormalRegression("x")).fit(df, public_weights=True)


# ----------------------------------------------------------------------------- no re-executed script
def test_pymc_sampler_never_runs_the_users_script_again(tmp_path):
    """A plain script without ``if __name__ == "__main__":`` using sampler="pymc" runs once
    (PyMC's forkserver children used to import it again, then fail)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    counter = tmp_path / "runs.txt"
    script = tmp_path / "analysis.py"
    script.write_text(
        f"""
with open({str(counter)!r}, "a") as f:
    f.write("run\\n")
import warnings
import numpy as np
import pandas as pd
import pseudopost as pp
from pseudopost.models import NormalRegression

warnings.simplefilter("ignore")
df = pd.DataFrame({{"x": np.random.default_rng(0).normal(size=20)}})
res = pp.PseudoPosterior(NormalRegression("x"), sampler="pymc").fit(
    df, draws=30, tune=30, chains=2, seed=1
)
print("epsilon", res.epsilon)
"""
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("PYTEST_CURRENT_TEST", None)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "epsilon" in done.stdout
    assert counter.read_text().count("run") == 1
