"""CategoricalRegression and DirichletCategorical: log-likelihood and inversion against SciPy,
levels and dtypes kept, bad input."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from pseudopost import PseudoPosterior
from pseudopost._streams import record_uniforms
from pseudopost.models import CategoricalRegression, DirichletCategorical, RecordFunction

LEVELS = ["low", "mid", "high", "top"]


def _frame(rng, n=24):
    z = np.linspace(-300, 300, n)  # extreme logits: the log-softmax must stay finite
    y = pd.Categorical(np.resize(LEVELS, n), categories=LEVELS)
    return pd.DataFrame({"z": z, "y": y})


def test_multinomial_logit_loglik_matches_scipy_including_extreme_logits(rng):
    df = _frame(rng)
    model = CategoricalRegression("y", ["z"])
    prepared = model.prepare(df)
    base = model.build(prepared)
    assert base.named_vars_to_dims["beta"] == ("predictor", "level")
    assert list(base.coords["level"]) == LEVELS[1:]  # level 0 is the reference
    draws = {"intercept": rng.normal(size=(3, 3)), "beta": rng.normal(size=(3, 1, 3))}
    got = RecordFunction(base)(draws)
    z = df["z"].to_numpy()
    eta = draws["intercept"][:, None, :] + z[None, :, None] * draws["beta"][:, 0, None, :]
    logits = np.concatenate([np.zeros((3, z.size, 1)), eta], axis=2)
    codes = prepared.arrays["y"].astype(int)
    want = special.log_softmax(logits, axis=2)[:, np.arange(z.size), codes]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.all(np.isfinite(got))
    mid = np.abs(z) < 5  # SciPy's multinomial pmf where it does not underflow
    p = special.softmax(logits, axis=2)
    ref = stats.multinomial.logpmf(np.eye(4)[codes][None, mid], 1, p[:, mid])
    np.testing.assert_allclose(got[:, mid], ref, rtol=1e-9)


def test_dirichlet_categorical_loglik_covers_every_level():
    df = pd.DataFrame({"y": ["b", "a", "c", "c", "a", "c"]})
    model = DirichletCategorical("y")
    base = model.build(model.prepare(df))
    assert list(base.coords["level"]) == ["a", "b", "c"]
    p = np.array([[0.2, 0.5, 0.3], [1e-12, 0.5, 0.5 - 1e-12]])
    got = RecordFunction(base)({"p": p})
    codes = np.array([1, 0, 2, 2, 0, 2])
    want = np.log(p[:, codes])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(
        got[0], stats.multinomial.logpmf(np.eye(3)[codes], 1, p[0]), rtol=1e-12
    )


def _rv_discrete_ppf(probs, q):
    k = np.arange(len(probs))
    return stats.rv_discrete(values=(k, probs)).ppf(q)


def test_quantile_function_equals_scipy_and_draws_follow_the_probabilities():
    model = CategoricalRegression("y", ["z"])
    params = {"intercept": np.array([0.5, -0.2, 1.0]), "beta": np.array([[0.3, -0.4, 0.1]])}
    z = np.array([-1.0, 0.0, 2.0])
    for q in [0.03, 0.4, 0.62, 0.97]:
        got = model.sample_outcome(params, {"z": z}, np.full((3, 1), q))
        logits = np.column_stack(
            [np.zeros(3), params["intercept"] + np.outer(z, params["beta"][0])]
        )
        probs = special.softmax(logits, axis=1)
        want = [_rv_discrete_ppf(p, q) for p in probs]
        np.testing.assert_array_equal(got, want)
    n = 300
    p = np.array([0.1, 0.2, 0.3, 0.4])
    x = DirichletCategorical("y").sample_outcome({"p": p}, {}, record_uniforms(9, 2, 0, n, 1))
    np.testing.assert_array_equal(
        DirichletCategorical("y").sample_outcome({"p": p}, {}, np.array([[0.05], [0.25], [0.99]])),
        _rv_discrete_ppf(p, np.array([0.05, 0.25, 0.99])),
    )
    counts = np.bincount(x.astype(int), minlength=4)
    assert stats.chisquare(counts, n * p).pvalue > 0.01


def test_levels_and_dtype_are_kept_and_unused_categories_never_drawn():
    cat = pd.Categorical(["b", "a", "b", "c"], categories=["z", "a", "b", "c"], ordered=False)
    for y in [cat, np.array(["b", "a", "b", "c"], dtype=object), [3, 1, 3, 7]]:
        df = pd.DataFrame({"y": y})
        model = DirichletCategorical("y")
        prepared = model.prepare(df)
        assert len(prepared.categories["y"]) == 3  # 'z' is unused: not modelled
        out = model.to_frame(prepared, {"y": np.array([2.0, 2.0, 1.0, 0.0])})
        assert out["y"].dtype == df["y"].dtype
        assert set(out["y"]) <= set(df["y"])
        pd.testing.assert_frame_equal(model.to_frame(prepared, {"y": prepared.arrays["y"]}), df)


@pytest.mark.parametrize(
    ("model", "frame", "exc", "msg"),
    [
        (
            DirichletCategorical("y"),
            pd.DataFrame({"y": ["a", "a", "a"]}),
            ValueError,
            r"Column 'y' has 1 level\(s\) \['a'\]; DirichletCategorical needs at least 2",
        ),
        (
            CategoricalRegression("y", ["z"]),
            pd.DataFrame({"y": ["a", None, "b"], "z": [1.0, 2.0, 3.0]}),
            ValueError,
            r"missing values.*row 1",
        ),
        (
            CategoricalRegression("y", ["z"]),
            pd.DataFrame({"y": ["a", "b", "c"]}),
            ValueError,
            r"Unknown column\(s\) \['z'\]",
        ),
        (
            CategoricalRegression("y", ["z"]),
            pd.DataFrame({"y": ["a", "b", "c"], "z": ["u", "v", "w"]}),
            TypeError,
            "Column 'z' must be numeric",
        ),
    ],
)
def test_bad_input(model, frame, exc, msg):
    with pytest.raises(exc, match=msg):
        model.prepare(frame)


def test_unordered_outcome_refuses_sensitive_ranges():
    model = CategoricalRegression("y")
    prepared = model.prepare(pd.DataFrame({"y": ["a", "b", "a"]}))
    with pytest.raises(ValueError, match="unordered categorical"):
        model.outcome_values(prepared)
    with pytest.raises(ValueError, match="concentration"):
        DirichletCategorical("y", concentration=0.0)


def test_fit_weighted_epsilon_below_unweighted(rng):
    n = 240
    z = rng.normal(size=n)
    logits = np.column_stack([np.zeros(n), 0.5 + z, -0.5 - z])
    codes = (rng.uniform(size=n)[:, None] > np.cumsum(special.softmax(logits, 1), 1)).sum(1)
    y = pd.Categorical(np.array(["north", "south", "west"])[np.minimum(codes, 2)])
    df = pd.DataFrame({"z": z, "y": y})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = PseudoPosterior(CategoricalRegression("y", ["z"])).fit(
            df, draws=200, tune=200, chains=2, seed=1
        )
    assert np.isfinite(res.epsilon) and res.epsilon <= res.unweighted_epsilon
    syn = res.synthesize(seed=3)
    assert syn["y"].dtype == df["y"].dtype and set(syn["y"]) <= set(df["y"])
    unweighted = res.datatree["risk_posterior"]["beta"].mean(("chain", "draw")).to_numpy()[0]
    assert unweighted[0] > 0 > unweighted[1]  # the signs of the generating coefficients
