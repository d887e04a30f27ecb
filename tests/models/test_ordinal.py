"""OrdinalRegression: log-likelihood and log-CDF against SciPy (and mpmath in the far tails),
inversion, levels, bad input."""

import warnings

import mpmath as mp
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pseudopost import PseudoPosterior
from pseudopost._streams import record_uniforms
from pseudopost.models import OrdinalRegression, RecordFunction

CUT = np.array([-1.5, 0.2, 2.0])  # K = 4 levels
Z = np.array([-400.0, -30.0, -2.0, 0.0, 1.0, 3.0, 30.0, 400.0])


def _draws():
    return {"cutpoints": CUT[None, :], "beta": np.array([[1.0]])}


def _exact_log_pmf(k, eta):
    """log(F(k) - F(k-1)) in 600-digit arithmetic."""
    with mp.workdps(600):
        c = [-mp.inf, *(mp.mpf(float(v)) for v in CUT), mp.inf]

        def cdf(x):
            return mp.mpf(0) if x == -mp.inf else mp.mpf(1) if x == mp.inf else 1 / (1 + mp.exp(-x))

        e = mp.mpf(float(eta))
        return float(mp.log(cdf(c[k + 1] - e) - cdf(c[k] - e)))


def _build(codes):
    z = np.resize(Z, len(codes))
    df = pd.DataFrame({"z": z, "y": pd.Categorical.from_codes(codes, ["D", "C", "B", "A"], True)})
    model = OrdinalRegression("y", ["z"], levels=["D", "C", "B", "A"])
    prepared = model.prepare(df)
    return model, prepared, model.build(prepared), z


@pytest.mark.parametrize("k", [0, 1, 2, 3])  # first, interior and last level
def test_loglik_matches_scipy_and_exact_tails(k):
    _model, _prepared, base, z = _build(np.full(Z.size, k))
    got = RecordFunction(base)(_draws())[0]
    want = np.array([_exact_log_pmf(k, e) for e in z])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300)
    assert np.all(np.isfinite(got))
    mid = np.abs(z) < 5
    F = stats.logistic.cdf
    lo = F(CUT[k - 1] - z) if k > 0 else 0.0
    hi = F(CUT[k] - z) if k < 3 else 1.0
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(got[mid], np.log(hi - lo)[mid], rtol=1e-10)


def test_log_prob_range_matches_scipy_cdf_over_the_support_edges():
    model, _prepared, base, z = _build(np.resize([0, 1, 2, 3], Z.size))
    fn = RecordFunction(
        base,
        graph=lambda m, o, e: model.log_prob_range_graph(m, e["lower"], e["upper"]),
        extra_inputs=("lower", "upper"),
    )

    def log_f(k, e):
        if k < 0:
            return -np.inf
        if k >= 3:
            return 0.0
        return stats.logistic.logcdf(CUT[k] - e)

    def log_s(k, e):
        if k < 0:
            return 0.0
        if k >= 3:
            return -np.inf
        return stats.logistic.logsf(CUT[k] - e)

    for lo, hi in [(0, 0), (3, 3), (0, 3), (1, 2), (-2, 0), (2, 9), (-5, 10)]:
        got = fn(_draws(), lower=np.full(Z.size, lo, float), upper=np.full(Z.size, hi, float))[0]
        want = []
        for e in z:  # log(F(b) - F(a - 1)) from whichever tail keeps it accurate
            a, b = log_f(lo - 1, e), log_f(hi, e)
            sa, sb = log_s(lo - 1, e), log_s(hi, e)
            if a > np.log(0.5):
                want.append(sa + np.log1p(-np.exp(sb - sa)) if sa > -np.inf else -np.inf)
            else:
                want.append(b + np.log1p(-np.exp(a - b)))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300)
    assert np.all(
        fn(_draws(), lower=np.zeros(Z.size), upper=np.full(Z.size, 3.0))[0] == 0.0
    )  # the whole support has probability one


def _probs(eta):
    F = np.concatenate([[0.0], stats.logistic.cdf(CUT - eta), [1.0]])
    return np.diff(F)


def test_quantile_function_equals_scipy_and_draws_follow_the_model():
    model = OrdinalRegression("y", ["z"])
    params = {"cutpoints": CUT, "beta": np.array([0.8])}
    z = np.array([-1.0, 0.5, 2.0])
    for q in [0.02, 0.3, 0.55, 0.9, 0.995]:
        got = model.sample_outcome(params, {"z": z}, np.full((3, 1), q))
        want = [stats.rv_discrete(values=(np.arange(4), _probs(0.8 * zi))).ppf(q) for zi in z]
        np.testing.assert_array_equal(got, want)
    n = 300
    x = model.sample_outcome(params, {"z": np.zeros(n)}, record_uniforms(4, 0, 0, n, 1))
    counts = np.bincount(x.astype(int), minlength=4)
    assert stats.chisquare(counts, n * _probs(0.0)).pvalue > 0.01


def test_levels_dtype_and_order():
    df = pd.DataFrame({"y": [1, 3, 3, 1, 2], "z": np.arange(5.0)})
    model = OrdinalRegression("y", ["z"], levels=[1, 2, 3, 4])  # 4 is never observed
    prepared = model.prepare(df)
    assert prepared.categories["y"] == (1, 2, 3, 4)
    base = model.build(prepared)
    assert list(base.coords["cutpoint"]) == ["1|2", "2|3", "3|4"]
    out = model.to_frame(prepared, {"y": np.array([3.0, 0.0, 1.0, 2.0, 3.0])})
    assert out["y"].dtype == np.int64 and list(out["y"]) == [4, 1, 2, 3, 4]
    cat = pd.Categorical(["lo", "hi", "mid"], categories=["lo", "mid", "hi"], ordered=True)
    prep = OrdinalRegression("y").prepare(pd.DataFrame({"y": cat}))
    assert prep.categories["y"] == ("lo", "mid", "hi")
    np.testing.assert_array_equal(prep.arrays["y"], [0, 2, 1])


@pytest.mark.parametrize(
    ("model", "y", "exc", "msg"),
    [
        (OrdinalRegression("y"), ["b", "a", "c"], ValueError, r"order is unknown; pass 'levels'"),
        (
            OrdinalRegression("y", levels=["a", "b"]),
            ["b", "a", "c"],
            ValueError,
            r"one of the levels \['a', 'b'\].*row 2 has 'c'",
        ),
        (OrdinalRegression("y"), [2, 2, 2], ValueError, r"1 level\(s\) \[2\]"),
        (
            OrdinalRegression("y"),
            pd.Categorical(["a", "b", "a"]),
            ValueError,
            "unordered Categorical",
        ),
    ],
)
def test_bad_input(model, y, exc, msg):
    with pytest.raises(exc, match=msg):
        model.prepare(pd.DataFrame({"y": y}))


def test_bad_levels_argument():
    with pytest.raises(ValueError, match="duplicates"):
        OrdinalRegression("y", levels=[1, 2, 1])
    with pytest.raises(ValueError, match="at least 2"):
        OrdinalRegression("y", levels=[1])
    with pytest.raises(TypeError, match="sequence of levels"):
        OrdinalRegression("y", levels="abc")


def test_fit_weighted_epsilon_below_unweighted(rng):
    n = 240
    z = rng.normal(size=n)
    latent = 1.2 * z + rng.logistic(size=n)
    codes = np.searchsorted(CUT, latent)
    y = pd.Categorical.from_codes(codes, ["none", "some", "much", "all"], ordered=True)
    df = pd.DataFrame({"z": z, "y": y})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = PseudoPosterior(OrdinalRegression("y", ["z"])).fit(
            df, draws=200, tune=200, chains=2, seed=1
        )
    assert np.isfinite(res.epsilon) and res.epsilon <= res.unweighted_epsilon
    syn = res.synthesize(seed=1)
    assert syn["y"].dtype == df["y"].dtype and set(syn["y"]) <= set(df["y"])
    cuts = res.datatree["risk_posterior"]["cutpoints"].to_numpy().reshape(-1, 3)
    assert np.all(np.diff(cuts, axis=1) > 0)  # ordered in every draw
