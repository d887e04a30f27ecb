"""LogisticRegression: log-likelihood, log-CDF and inversion against SciPy; dtypes; bad input."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from pseudopost import PseudoPosterior
from pseudopost._streams import record_uniforms
from pseudopost.models import LogisticRegression, RecordFunction

# linear predictor grid: far tails (where 1 - expit underflows) and the middle
ETA = np.array([-800.0, -40.0, -3.0, 0.0, 2.5, 40.0, 800.0])
DRAWS = {"intercept": np.array([0.0, 0.5]), "beta": np.array([[1.0], [1.0]])}


def _frame(y):
    z = np.resize(ETA, len(y))
    return pd.DataFrame({"z": z, "y": y})


def _eta(z):
    return DRAWS["intercept"][:, None] + DRAWS["beta"][:, 0][:, None] * z[None, :]


@pytest.mark.parametrize("y", [0, 1])
def test_loglik_matches_scipy_at_both_levels_and_far_tails(y):
    df = _frame(np.full(ETA.size, y))
    model = LogisticRegression("y", ["z"])
    got = RecordFunction(model.build(model.prepare(pd.concat([df, _frame([1 - y])]))))(DRAWS)
    eta = _eta(df["z"].to_numpy())
    want = special.log_expit(eta if y == 1 else -eta)  # log sigma(+-eta), exact in the tails
    np.testing.assert_allclose(got[:, : ETA.size], want, rtol=1e-12, atol=0)
    mid = np.abs(eta) < 30  # where SciPy's Bernoulli is itself accurate
    np.testing.assert_allclose(
        got[:, : ETA.size][mid], stats.bernoulli.logpmf(y, special.expit(eta))[mid], rtol=1e-10
    )
    assert np.all(np.isfinite(got))


def test_log_prob_range_matches_scipy_cdf():
    df = _frame(np.resize([0, 1], ETA.size))
    model = LogisticRegression("y", ["z"])
    base = model.build(model.prepare(df))
    fn = RecordFunction(
        base,
        graph=lambda m, o, e: model.log_prob_range_graph(m, e["lower"], e["upper"]),
        extra_inputs=("lower", "upper"),
    )
    eta = _eta(df["z"].to_numpy())
    log_f0 = special.log_expit(-eta)  # log F(0) = log(1 - p)
    for lo, hi, want in [
        (0, 0, log_f0),
        (1, 1, special.log_expit(eta)),
        (0, 1, np.zeros_like(eta)),
        (-3, 0, log_f0),
    ]:
        got = fn(DRAWS, lower=np.full(ETA.size, lo, float), upper=np.full(ETA.size, hi, float))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
        mid = np.abs(eta) < 30
        p = stats.bernoulli(special.expit(eta))
        ref = np.log(p.cdf(hi) - p.cdf(lo - 1))
        np.testing.assert_allclose(got[mid], ref[mid], rtol=1e-9, atol=1e-12)


def test_quantile_function_and_draws_by_inversion():
    model = LogisticRegression("y", ["z"])
    params = {"intercept": np.array(0.3), "beta": np.array([1.2])}
    z = np.linspace(-2, 2, 5)
    q = np.array([0.01, 0.3, 0.5, 0.7, 0.99])
    got = model.sample_outcome(params, {"z": z}, q[:, None])
    np.testing.assert_array_equal(got, stats.bernoulli.ppf(q, special.expit(0.3 + 1.2 * z)))
    n = 300
    u = record_uniforms(11, 0, 0, n, 1)
    x = model.sample_outcome(params, {"z": np.zeros(n)}, u)
    k = int(x.sum())
    assert stats.binomtest(k, n, special.expit(0.3)).pvalue > 0.01


@pytest.mark.parametrize(
    "values",
    [
        np.array([0, 1, 1, 0]),
        np.array([True, False, True, True]),
        pd.Categorical(["no", "yes", "yes", "no"], categories=["yes", "no", "maybe"]),
        pd.array(["b", "a", "a", "b"], dtype="str"),
    ],
)
def test_synthetic_output_keeps_dtype_and_levels(values):
    df = pd.DataFrame({"z": [0.1, 0.2, 0.3, 0.4], "y": values}, index=[5, 6, 7, 8])
    before = df.copy()
    model = LogisticRegression("y", ["z"])
    prepared = model.prepare(df)
    assert set(prepared.arrays["y"]) == {0.0, 1.0}
    out = model.to_frame(prepared, {"y": np.array([1.0, 1.0, 0.0, 1.0])})
    assert out["y"].dtype == df["y"].dtype and out.index.equals(df.index)
    assert set(out["y"]) <= set(df["y"])
    roundtrip = model.to_frame(prepared, {"y": prepared.arrays["y"]})
    pd.testing.assert_frame_equal(roundtrip, df)
    pd.testing.assert_frame_equal(df, before)  # the caller's frame is not modified


@pytest.mark.parametrize(
    ("y", "msg"),
    [
        ([0, 1, 2, 1], r"must be 0 or 1.*row 2 has 2"),
        ([0.0, 1.0, 0.5, 1.0], r"row 2 has 0.5"),
        (["a", "b", "c", "a"], r"has 3 level\(s\).*needs exactly 2"),
        ([1, 1, 1, 1], r"has 1 level\(s\) \[1\]"),
        ([1.0, np.nan, 0.0, 1.0], r"missing values.*row 1"),
    ],
)
def test_bad_outcome_is_named(y, msg):
    df = pd.DataFrame({"z": np.zeros(4), "y": y})
    with pytest.raises(ValueError, match=msg):
        LogisticRegression("y", ["z"]).prepare(df)


def test_missing_column_is_named():
    with pytest.raises(ValueError, match=r"Unknown column\(s\) \['w'\]"):
        LogisticRegression("y", ["w"]).prepare(pd.DataFrame({"y": [0, 1]}))


def test_fit_weighted_epsilon_below_unweighted(rng):
    n = 200
    z = rng.normal(size=n)
    df = pd.DataFrame({"z": z, "y": rng.uniform(size=n) < special.expit(0.5 + z)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = PseudoPosterior(LogisticRegression("y", ["z"])).fit(
            df, draws=200, tune=200, chains=2, seed=1
        )
    assert np.isfinite(res.epsilon) and res.epsilon <= res.unweighted_epsilon
    syn = res.synthesize(seed=2)
    assert syn["y"].dtype == bool and syn["z"].equals(df["z"])
    unweighted = res.datatree["risk_posterior"]["beta"]
    assert float(unweighted.mean()) == pytest.approx(1.0, abs=0.6)  # the generating slope
