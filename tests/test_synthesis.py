"""``pseudopost.synthesize``: automatic model choice, validation, and a small Adult run."""

import warnings

import numpy as np
import pandas as pd
import pytest

from pseudopost.synthesis import choose_model, model_class, synthesize


def _choice(values, **kw):
    return choose_model(pd.Series(values), "c", **kw)


@pytest.mark.parametrize(
    ("values", "model", "detected"),
    [
        (np.array([True, False, True]), "logistic", "binary"),
        (["a", "b", "a"], "logistic", "binary"),
        (np.array([0, 1, 1, 0]), "logistic", "binary"),
        (["a", "b", "c", "a"], "categorical", "categorical"),
        (np.array([1, 2, 3, 2, 1]), "categorical", "categorical"),
        (np.array([-1.5, 0.2, 3.0, 1.1]), "normal", "real"),
        (np.array([0.0, 0.0, 2.5, 7.1, 0.4]), "hurdle_lognormal", "zero-inflated amount"),
        (
            np.array([0, 0, 2174, 14084, 5013, 0, 3103, 7688]),
            "hurdle_lognormal",
            "zero-inflated amount",
        ),
        (np.exp(np.linspace(-2, 3, 50)), "lognormal", "positive skewed"),
        (np.linspace(10, 20, 50), "normal", "positive"),
        (np.arange(0, 40) % 17, "negative_binomial", "count"),
    ],
)
def test_choose_model_rules(values, model, detected):
    c = _choice(values)
    assert (c.model, c.detected) == (model, detected), c.reason


def test_choose_model_ordinal_and_unconditioned_categorical():
    ordered = pd.Categorical(["lo", "hi", "mid"], categories=["lo", "mid", "hi"], ordered=True)
    assert _choice(ordered).model == "ordinal"
    marginal = _choice(["a", "b", "c"], conditioned=False).model
    assert marginal == "dirichlet_categorical"
    assert model_class(marginal).family == "dirichlet_categorical"


def test_model_class_names_and_errors():
    from pseudopost.models import LogNormalRegression

    assert model_class("lognormal") is LogNormalRegression
    assert model_class("NegBin").__name__ == "NegativeBinomialRegression"
    with pytest.raises(ValueError, match=r"Unknown model name 'gamma' for column 'x'"):
        model_class("gamma", "x")


@pytest.fixture
def small():
    rng = np.random.default_rng(3)
    n = 40
    return pd.DataFrame(
        {
            "g": rng.choice(["a", "b"], n),
            "x": rng.lognormal(size=n),
            "k": rng.poisson(2, n),
        }
    )


def test_bad_input_is_refused_before_any_work(small):
    with pytest.raises(ValueError, match=r"'order' names column\(s\) \['nope'\]"):
        synthesize(small, order=["g", "nope"])
    with pytest.raises(ValueError, match=r"'keep' names column\(s\) \['nope'\]"):
        synthesize(small, keep=["nope"])
    with pytest.raises(ValueError, match=r"'models' names column\(s\) \['nope'\]"):
        synthesize(small, models={"nope": "normal"})
    with pytest.raises(ValueError, match=r"Unknown model name 'gamma' for column 'x'"):
        synthesize(small, models={"x": "gamma"})
    with pytest.raises(ValueError, match=r"not synthesized"):
        synthesize(small, order=["x"], models={"k": "poisson"})
    with pytest.raises(ValueError, match=r"Column 'g' has missing values \(row 5"):
        synthesize(small.assign(g=small.g.where(small.index != 5, None)))
    with pytest.raises(ValueError, match=r"at least 2 rows. Got 0"):
        synthesize(small.iloc[:0])
    with pytest.raises(ValueError, match=r"Column 'one' has a single level 'only'"):
        synthesize(small.assign(one="only"))
    bad = small.assign(x=small.x.where(small.index != 4, 0.0))
    with pytest.raises(ValueError, match=r"Column 'x' must be strictly positive.*row 4"):
        synthesize(bad, models={"x": "lognormal"})
    with pytest.raises(TypeError, match=r"must be a pandas DataFrame"):
        synthesize(small.to_numpy())


@pytest.fixture(scope="module")
def adult_run():
    """A small Adult subsample (fixed seed) through the whole pipeline: ~1 min on 2 cores."""
    from pseudopost.datasets import load_adult

    frame = load_adult()[["sex", "age", "income"]].sample(300, random_state=4)
    frame = frame.reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, draws=200, tune=200, seed=9, sampler="nutpie-jax")
    return frame, out


def test_adult_weighted_epsilon_below_unweighted(adult_run):
    frame, out = adult_run
    assert out.epsilon < out.unweighted_epsilon
    lip = out.lipschitz.to_numpy()
    assert lip.shape == (len(frame),)
    assert out.epsilon == pytest.approx(2 * lip.max())


def test_adult_choices_and_synthetic_frame(adult_run):
    frame, out = adult_run
    table = out.choices.set_index("column")
    assert list(table.model) == ["logistic", "negative_binomial", "logistic"]
    assert set(table.role) == {"synthetic"}
    syn = out.synthetic
    assert (syn.dtypes == frame.dtypes).all()
    for c in ("sex", "income"):
        assert set(syn[c]) <= set(frame[c])
    assert out.synthetic_columns == ["sex", "age", "income"]


def test_adult_same_seed_same_synthesis(adult_run):
    frame, out = adult_run
    a = out.synthesize_datasets(2, seed=5)
    b = out.synthesize_datasets(2, seed=5)
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y)
    u = out.synthesize(seed=5, weighted=False)
    assert list(u.columns) == ["sex", "age", "income"]
    assert (u.dtypes == frame.dtypes).all()
    pd.testing.assert_frame_equal(u, out.result.synthesize(seed=5, weighted=False))
    assert out.privacy_statement == out.result.privacy_statement
    assert out.privacy_statement.scope == "local"


def test_adult_synthesize_m_is_deprecated_and_returns_its_old_types(adult_run):
    _, out = adult_run
    with pytest.warns(DeprecationWarning, match=r"synthesize_datasets\(m, seed=...\)"):
        old = out.synthesize(m=2, seed=5)
    assert isinstance(old, list)
    for x, y in zip(old, out.synthesize_datasets(2, seed=5), strict=True):
        pd.testing.assert_frame_equal(x, y)
    with pytest.warns(DeprecationWarning):
        single = out.synthesize(m=1, seed=5)
    pd.testing.assert_frame_equal(single, out.synthesize(seed=5))
