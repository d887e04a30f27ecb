"""The frontier from one fit (issue 30, item 1): PSIS estimates against refits, the k-hat rule,
the fit's own setting, seeds, inputs."""

import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest

import pseudopost as pp
from pseudopost.datasets import simulate_lognormal
from pseudopost.models import LogNormalRegression
from pseudopost.risk import MultiplicativeRange

matplotlib.use("Agg")

KW = {"draws": 500, "tune": 300, "chains": 2}
MODEL = LogNormalRegression("x", ["z"])
NEAR = [(0.8, 0.0), (0.9, 0.0), (1.0, 0.1)]  # settings near the fit's own (1, 0)


def _mechanism(method, scale=1.0, shift=0.0, **kw):
    if method == "weighted":
        return pp.PseudoPosterior(MODEL, scale, shift, **kw)
    return pp.PseudoPosterior(
        MODEL, scale, shift, sensitive_range=MultiplicativeRange(0.4, 1.8), range_method=method
    )


def _fit(mech, data, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mech.fit(data, **KW, seed=seed)


@pytest.fixture(scope="module")
def data():
    return simulate_lognormal(300, seed=11)


@pytest.fixture(scope="module")
def fits(data):
    return {m: _fit(_mechanism(m), data, seed=7) for m in ("weighted", "truncated", "averaged")}


@pytest.mark.parametrize("method", ["weighted", "truncated", "averaged"])
def test_psis_epsilon_within_10_percent_of_refits(fits, data, method):
    """The issue's goal: where k-hat < 0.7, the PSIS epsilon is within 10 % of the epsilon of
    the mechanism refitted at that setting (its own risk step, another seed)."""
    res = fits[method]
    fr = pp.evaluate.frontier(res, scales=[0.8, 0.9, 1.0], shifts=[0.0, 0.1], seed=1, refit=False)
    for c, g in NEAR:
        row = fr[(fr["scale"] == c) & (fr["shift"] == g)].iloc[0]
        assert row["method"] == "psis" and row["khat"] < 0.7
        refit = _fit(_mechanism(method, c, g), data, seed=8).epsilon
        assert abs(row["epsilon"] - refit) <= 0.1 * refit, (c, g, row["epsilon"], refit)


def test_far_setting_is_refitted(fits):
    res = fits["weighted"]
    fr = pp.evaluate.frontier(res, scales=[0.05, 1.0], shifts=0.0, seed=2)
    far, own = fr.iloc[0], fr.iloc[1]
    assert far["khat"] > 0.7 and far["method"] == "refit"
    assert own["method"] == "psis"
    # weights of at most 0.05: the refit's epsilon is far below the fit's, and measured
    assert 0 < far["epsilon"] < 0.2 * res.epsilon
    assert np.isfinite(far["S_pMSE"])
    skipped = pp.evaluate.frontier(res, scales=0.05, shifts=0.0, seed=2, refit=False).iloc[0]
    assert skipped["method"] == "none" and np.isnan(skipped["epsilon"])
    assert np.isnan(skipped["S_pMSE"])


@pytest.mark.parametrize("method", ["weighted", "truncated", "averaged"])
def test_own_setting_gives_the_fits_epsilon_exactly(fits, method):
    res = fits[method]
    row = pp.evaluate.frontier(res, seed=3).iloc[0]  # default grid: the fit's own (1, 0)
    assert (row["scale"], row["shift"]) == (1.0, 0.0)
    assert row["method"] == "psis" and row["khat"] == 0.0
    assert row["ess"] == pytest.approx(KW["chains"] * KW["draws"])
    assert row["epsilon"] == res.epsilon
    assert row["weight_total"] == pytest.approx(float(res.alpha.sum()))


def test_same_seed_same_frame(fits):
    res = fits["weighted"]
    kw = {"scales": [0.05, 0.9], "shifts": [0.0, 0.1], "datasets": 2}
    a = pp.evaluate.frontier(res, **kw, seed=4)
    b = pp.evaluate.frontier(res, **kw, seed=4)
    pd.testing.assert_frame_equal(a, b)
    assert set(a["method"]) == {"psis", "refit"}
    c = pp.evaluate.frontier(res, **kw, seed=5)
    assert not np.allclose(a["S_pMSE"], c["S_pMSE"])  # the seed reaches the synthesis


def test_disclosure_and_membership_measures(fits, data):
    res = fits["weighted"]
    holdout = simulate_lognormal(300, seed=12)
    fr = pp.evaluate.frontier(
        res, scales=[0.8, 1.0], shifts=0.0, data=data, keys=["z"], target="x", holdout=holdout,
        seed=6,
    )  # fmt: skip
    assert list(fr.columns[:7]) == [
        "scale", "shift", "epsilon", "S_pMSE", "table_S_pMSE", "DiSCO", "repU",
    ]  # fmt: skip
    assert fr["DiSCO"].between(0, 100).all() and fr["mia_advantage"].between(0, 1).all()
    # the predictor z is kept as given: its key uniques replicate at every setting
    assert fr["repU"].nunique() == 1
    ax = pp.evaluate.plot_frontier(fr)
    assert ax.get_xlabel().startswith("local epsilon") and len(ax.collections) == 1
    assert ax.figure.axes[-1].get_ylabel() == "DiSCO"  # the colour bar


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"scales": [1.0, -0.5]}, r"'scales'\[1\] must be > 0"),
        ({"shifts": [float("nan")]}, r"'shifts'\[0\] must be finite"),
        ({"scales": [0.5], "shifts": [-0.6]}, "scale \\+ shift > 0"),
        ({"scales": []}, "at least one value"),
        ({"datasets": 0}, "datasets"),
        ({"datasets": 5000}, "exceeds the fit's 1000 draws"),
        ({"keys": ["z"]}, "both 'keys' and 'target'"),
        ({"keys": ["w"], "target": "x"}, r"not columns of the data"),
        ({"keys": ["x"], "target": "x"}, "also one of the 'keys'"),
        ({"khat_max": 0.0}, "khat_max"),
        ({"refit": "yes"}, "'refit' argument must be True or False"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_input_is_refused_before_any_work(fits, kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        pp.evaluate.frontier(fits["weighted"], **kw)


def test_refused_results_and_data(fits, data):
    with pytest.raises(TypeError, match="PseudoPosteriorResult"):
        pp.evaluate.frontier(data)
    other = data.assign(x=data["x"] * 1.01)
    with pytest.raises(ValueError, match="not the data the result was fitted on"):
        pp.evaluate.frontier(fits["weighted"], data=other)
    reweighted = _fit(_mechanism("weighted", reweight=True), data, seed=7)
    with pytest.raises(ValueError, match="re-weighted"):
        pp.evaluate.frontier(reweighted)


def test_a_users_pymc_model(data):
    """A PyMCModel holds its own data: the frontier reads its records, refits without data."""
    import pymc as pm

    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 10)
        sigma = pm.HalfNormal("sigma", 5)
        pm.Normal("y", mu, sigma, observed=np.log(data["x"].to_numpy()[:200]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pp.PseudoPosterior(m).fit(**KW, seed=7)
    fr = pp.evaluate.frontier(res, scales=[1.0, 0.05], shifts=0.0, seed=1)
    assert fr["epsilon"].iloc[0] == res.epsilon
    assert list(fr["method"]) == ["psis", "refit"] and 0 < fr["epsilon"].iloc[1] < res.epsilon
    assert "table_S_pMSE" not in fr  # one column: no two-way table
    with pytest.raises(ValueError, match="holds its own data"):
        pp.evaluate.frontier(res, data=data)


def test_synthesize_draws_is_the_synthesis_of_the_chosen_draws(fits):
    """``synthesize_draws`` under draws chosen by the caller: a draw repeated gives one dataset
    each, the same seed the same frames; draws outside the posterior refused by name."""
    res = fits["weighted"]
    a = res.synthesize_draws(np.array([3, 3, 10]), seed=5)
    b = res.synthesize_draws(np.array([3, 3, 10]), seed=5)
    assert len(a) == 3 and all(x.equals(y) for x, y in zip(a, b, strict=True))
    assert not a[0]["x"].equals(a[2]["x"])  # another draw, another dataset
    with pytest.raises(ValueError, match=r"'draws' must lie in \[0, 1000\)"):
        res.synthesize_draws(np.array([1000]))
    with pytest.raises(TypeError, match="'draws'"):
        res.synthesize_draws(np.array([0.5]))
