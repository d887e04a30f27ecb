"""Range-restricted accountants, calibration, censoring (range-restricted paper, issue 3)."""

import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

from pseudopost import PseudoPosterior
from pseudopost.datasets import load_fatigue, simulate_lognormal
from pseudopost.evaluate.utility import ecdf_utility
from pseudopost.models import LogNormalRegression, NormalRegression, RecordFunction
from pseudopost.models.weighting import weighted_model
from pseudopost.privacy.contraction import contraction
from pseudopost.risk import MultiplicativeRange, inclusion_lambda

KW = {"draws": 500, "tune": 500, "chains": 2}


def _fit(mech, data, seed=5, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mech.fit(data, **{**KW, "seed": seed, **kw})


def test_lambda_matches_closed_form_predictive():
    """Fixed posterior draws of N(mu, sigma): lambda_i = 1 - mean_m P_m(l_i <= x* <= u_i)."""
    rng = np.random.default_rng(1)
    y = rng.normal(0, 1, 6)
    model = NormalRegression("y")
    base = model.build(model.prepare(pd.DataFrame({"y": y})))
    mu, sigma = rng.normal(0, 0.3, (1, 50)), rng.uniform(0.8, 1.5, (1, 50))
    post = xr.Dataset({"intercept": (("chain", "draw"), mu), "sigma": (("chain", "draw"), sigma)})
    lower, upper = y - 0.5, y + 0.8
    S = 4000
    lam = inclusion_lambda(base, post, "y", lower, upper, draws=S, seed=3, max_bytes=8 * 6 * 700)
    # the S draws are a uniform resample of the 50 posterior draws: compare with the exact mixture
    inside = stats.norm.cdf((upper[:, None] - mu) / sigma) - stats.norm.cdf(
        (lower[:, None] - mu) / sigma
    )
    exact = 1 - inside.mean(axis=1)
    se = np.sqrt(exact * (1 - exact) / S) + np.sqrt(inside.var(axis=1) / S)
    assert np.all(np.abs(lam - exact) < 4 * se + 1e-3)


@pytest.fixture(scope="module")
def sim_fits():
    data = simulate_lognormal(1000, seed=1)
    model = LogNormalRegression("x", ["z"])
    out = {"weighted": _fit(PseudoPosterior(model), data)}
    for ab in [(0.4, 1.8), (0.6, 1.2)]:
        for method in ("truncated", "averaged"):
            out[(ab, method)] = _fit(
                PseudoPosterior(
                    model, sensitive_range=MultiplicativeRange(*ab), range_method=method
                ),
                data,
            )
    return data, out


def test_paper_orderings_on_the_simulation(sim_fits):
    """Section 4.1: Unweighted > Weighted > trunc (0.4,1.8) > trunc (0.6,1.2); averaged below
    truncated for the same (a, b); averaged utility (ECDF U_a) better than weighted."""
    data, f = sim_fits
    w = f["weighted"]
    t1, t2 = f[((0.4, 1.8), "truncated")], f[((0.6, 1.2), "truncated")]
    a1, a2 = f[((0.4, 1.8), "averaged")], f[((0.6, 1.2), "averaged")]
    assert w.unweighted_epsilon > w.epsilon > t1.epsilon > t2.epsilon
    assert a1.epsilon < t1.epsilon and a2.epsilon < t2.epsilon
    ua = {
        k: np.mean(
            [
                ecdf_utility(data[["x"]], s[["x"]])["U_a"].iloc[0]
                for s in r.synthesize_datasets(5, seed=2)
            ]
        )
        for k, r in {"w": w, "a1": a1, "a2": a2}.items()
    }
    assert ua["a1"] < ua["w"] and ua["a2"] < ua["w"]
    # truncation changes only the accountant: same weights and draws as the weighted fit
    np.testing.assert_allclose(t1.alpha, w.alpha)
    xr.testing.assert_allclose(t1.posterior, w.posterior)
    # averaged: alpha* = lambda + (1 - lambda) alpha
    np.testing.assert_allclose(a1.alpha_star, a1.lambda_ + (1 - a1.lambda_) * a1.alpha)


def test_truncated_accountant_against_brute_force(sim_fits):
    data, f = sim_fits
    t = f[((0.6, 1.2), "truncated")]
    post = t.posterior
    b0, b1, s = (post[k].to_numpy().reshape(-1) for k in ("intercept", "beta", "sigma"))
    dist = stats.lognorm(s=s[:, None], scale=np.exp(b0[:, None] + b1[:, None] * data.z.to_numpy()))
    x = data.x.to_numpy()
    logp_r = np.log(dist.cdf(1.2 * x) - dist.cdf(0.6 * x))
    want = (t.alpha.to_numpy() * np.abs(dist.logpdf(x) - logp_r)).max(axis=0)
    np.testing.assert_allclose(t.lipschitz, want, rtol=1e-6)
    a = f[((0.6, 1.2), "averaged")]
    post = a.posterior
    b0, b1, s = (post[k].to_numpy().reshape(-1) for k in ("intercept", "beta", "sigma"))
    dist = stats.lognorm(s=s[:, None], scale=np.exp(b0[:, None] + b1[:, None] * data.z.to_numpy()))
    coef = (1 - a.lambda_.to_numpy()) * a.alpha.to_numpy()
    np.testing.assert_allclose(a.lipschitz, (coef * np.abs(dist.logpdf(x))).max(axis=0), rtol=1e-6)


@pytest.mark.parametrize("which", ["simulation", "fatigue"])
def test_calibration_reaches_target_within_two_percent(which):
    if which == "simulation":
        data, model, target = simulate_lognormal(600, seed=4), LogNormalRegression("x", ["z"]), 5.0
    else:
        data, model, target = load_fatigue(), LogNormalRegression("cycle", ["stress"]), 15.0
    res = _fit(PseudoPosterior(model, target_epsilon=target), data, seed=2)
    cal = res.calibration
    assert cal.within_tolerance and abs(res.epsilon - target) <= 0.02 * target
    assert 0 < cal.scale < 1 and cal.refits <= 4
    np.testing.assert_allclose(res.alpha.max(), cal.scale)  # alpha = s * risk weights
    assert res.datatree["privacy"].attrs["epsilon"] == res.epsilon


def test_range_truncated_calibration_reaches_target():
    """Regression: calibrating a range-truncated fit reweighted the accountant's record
    function (the sensitive part, which needs each record's range) instead of the full
    log-likelihood the fit was sampled with."""
    data = simulate_lognormal(400, seed=4)
    model, rng_ = LogNormalRegression("x", ["z"]), MultiplicativeRange(0.6, 1.2)
    free = _fit(PseudoPosterior(model, sensitive_range=rng_), data, seed=2)
    target = 0.6 * free.epsilon
    res = _fit(PseudoPosterior(model, sensitive_range=rng_, target_epsilon=target), data, seed=2)
    assert res.calibration.refits >= 1 and 0 < res.calibration.scale < 1
    assert abs(res.epsilon - target) <= 0.05 * target


def test_censored_posterior_density_and_bound():
    rng = np.random.default_rng(0)
    y = rng.normal(0, 1, 30)
    y[0] = 9.0
    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 10)
        pm.Normal("y", mu, 1.0, observed=y)
    alpha, B = rng.uniform(0.2, 1, 30), 1.5
    f = weighted_model(m, weights=alpha, censor_bound=B).compile_logp()
    for mu in (-1.0, 0.5):
        want = (
            stats.norm(0, 10).logpdf(mu) + np.clip(alpha * stats.norm(mu, 1).logpdf(y), -B, B).sum()
        )
        assert f({"mu": mu}) == pytest.approx(want, rel=1e-8)


def test_censored_mechanism_bound_holds_for_every_record_and_draw():
    data = load_fatigue()
    res = _fit(PseudoPosterior(LogNormalRegression("cycle", ["stress"]), censor_epsilon=4.0), data)
    assert res.global_epsilon == 4.0
    assert res.epsilon <= 4.0 + 1e-12 and np.all(res.lipschitz <= 2.0 + 1e-12)
    post = res.posterior
    b0, b1, s = (post[k].to_numpy().reshape(-1) for k in ("intercept", "beta", "sigma"))
    # log-space log-normal density: the censored posterior visits draws where scipy overflows
    mu = b0[:, None] + b1[:, None] * data.stress.to_numpy()
    lx = np.log(data.cycle.to_numpy())
    logp = (
        -lx - np.log(s[:, None]) - 0.5 * np.log(2 * np.pi) - (lx - mu) ** 2 / (2 * s[:, None] ** 2)
    )
    clipped = np.clip(res.alpha.to_numpy() * logp, -2.0, 2.0)
    assert np.abs(clipped).max() <= 2.0
    np.testing.assert_allclose(res.lipschitz, np.abs(clipped).max(axis=0), rtol=1e-8)
    assert "global" in res.datatree["privacy"].attrs["guarantee"]


def test_contraction_returns_the_nested_sizes():
    data = simulate_lognormal(300, seed=2)
    table = contraction(
        PseudoPosterior(LogNormalRegression("x", ["z"])),
        data,
        [100, 300],
        draws=200,
        tune=200,
        seed=1,
    )
    assert sorted(table.n.unique()) == [100, 300]
    assert (table.groupby("n").size() == [100, 300]).all()
    eps = table.groupby("n").epsilon.first()
    np.testing.assert_allclose(eps, 2 * table.groupby("n").lipschitz.max())


@pytest.mark.parametrize(
    ("kwargs", "data", "msg"),
    [
        (
            {"sensitive_range": MultiplicativeRange(0.4, 1.8)},
            pd.DataFrame({"x": [-1.0, 2.0, 3.0]}),
            "strictly positive",
        ),
        ({"sensitive_range": "0.4-1.8"}, None, "SensitiveRange"),
        (
            {"sensitive_range": MultiplicativeRange(0.4, 1.8), "range_method": "mean"},
            None,
            "range_method",
        ),
        ({"censor_epsilon": 1.0, "target_epsilon": 2.0}, None, "cannot be combined"),
        ({"target_epsilon": -1.0}, None, "target_epsilon"),
    ],
)
def test_bad_range_and_budget_arguments(kwargs, data, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        PseudoPosterior(LogNormalRegression("x"), **kwargs).fit(data, draws=5)


def test_value_outside_its_range_is_refused_before_sampling(monkeypatch):
    import nutpie

    from pseudopost.risk import ArrayRange

    monkeypatch.setattr(
        nutpie, "compile_pymc_model", lambda *a, **k: pytest.fail("work started before validation")
    )
    with pytest.raises(ValueError, match="record 2 has value 3 outside"):
        PseudoPosterior(
            LogNormalRegression("x"), sensitive_range=ArrayRange([0, 0, 0], [5, 5, 2])
        ).fit(pd.DataFrame({"x": [1.0, 2.0, 3.0]}), draws=5)


def test_record_function_for_range_is_reused_by_truncated_accountant():
    df = pd.DataFrame({"x": [1.0, 2.0, 4.0]})
    model = LogNormalRegression("x")
    base = model.build(model.prepare(df))
    fn = RecordFunction(
        base,
        graph=lambda m, o, e: model.log_prob_range_graph(m, e["lo"], e["hi"]),
        extra_inputs=("lo", "hi"),
    )
    draws = {"intercept": np.array([0.0]), "sigma": np.array([1.0])}
    got = fn(draws, lo=0.5 * df.x.to_numpy(), hi=2 * df.x.to_numpy())
    want = np.log(stats.lognorm(1).cdf(2 * df.x) - stats.lognorm(1).cdf(0.5 * df.x))
    np.testing.assert_allclose(got[0], want, rtol=1e-7)  # PyMC log-CDF: erf-based, ~1e-8


def test_violin_and_contraction_plots_render(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from pseudopost.evaluate import plot_violins
    from pseudopost.privacy import plot_contraction

    ax = plot_violins({"a": np.arange(5.0), "b": np.arange(3.0) * 2}, ylabel="L")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    table = pd.DataFrame({"n": [10] * 3 + [20] * 3, "lipschitz": np.arange(6.0)})
    ax2 = plot_contraction(table)
    assert [t.get_text() for t in ax2.get_xticklabels()] == ["10", "20"]
    ax2.figure.savefig(tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_calibration_uses_every_allowed_refit_and_warns_when_short():
    """Regression: the last allowed refit had no seed (IndexError). A tolerance no fit can meet
    forces all refits; the result reports them and warns."""
    from pseudopost import SamplingWarning

    mech = PseudoPosterior(
        LogNormalRegression("cycle", ["stress"]), target_epsilon=15.0, rtol=1e-12, max_refits=2
    )
    with pytest.warns(SamplingWarning, match="Calibration reached"):
        res = mech.fit(load_fatigue(), draws=200, tune=200, seed=3, progress=False)
    assert res.calibration.refits == 2 and not res.calibration.within_tolerance
