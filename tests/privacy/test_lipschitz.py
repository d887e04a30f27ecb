"""The accountant's block reduction equals brute force, for every blocking."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pseudopost.models import LogNormalRegression, RecordFunction
from pseudopost.privacy import local_epsilon, reduce_abs, reduce_sum


@pytest.fixture(scope="module")
def fn_and_data():
    rng = np.random.default_rng(5)
    n = 37
    z = rng.normal(2, 1, n)
    df = pd.DataFrame({"z": z, "x": rng.lognormal(z + 1, 1)})
    model = LogNormalRegression("x", ["z"])
    return RecordFunction(model.build(model.prepare(df))), df


def _brute(draws, df):
    eta = draws["intercept"][:, None] + draws["beta"][:, :1] * df["z"].to_numpy()[None, :]
    return stats.lognorm(s=draws["sigma"][:, None], scale=np.exp(eta)).logpdf(
        df["x"].to_numpy()[None, :]
    )


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 40), max_bytes=st.integers(8, 4000))
def test_reduce_abs_equals_brute_force_for_any_block_size(fn_and_data, seed, m, max_bytes):
    fn, df = fn_and_data
    rng = np.random.default_rng(seed)
    draws = {
        "intercept": rng.normal(1, 1, m),
        "beta": rng.normal(1, 0.5, (m, 1)),
        "sigma": rng.uniform(0.2, 3, m),
    }
    coef = rng.uniform(0, 1, fn.n)
    full = np.abs(_brute(draws, df))
    red = reduce_abs(fn, draws, coef, max_bytes=max_bytes)
    np.testing.assert_allclose(red.per_record, full.max(axis=0), rtol=1e-10)
    np.testing.assert_allclose(red.per_draw, (coef * full).max(axis=1), rtol=1e-10)
    assert local_epsilon(coef * red.per_record) == pytest.approx(2 * (coef * full).max())


def test_record_chunking_is_used_and_bounded(fn_and_data):
    fn, _ = fn_and_data
    rng = np.random.default_rng(0)
    draws = {
        "intercept": rng.normal(size=10),
        "beta": rng.normal(size=(10, 1)),
        "sigma": rng.uniform(1, 2, 10),
    }
    reduce_abs(fn, draws, max_bytes=8 * 5)
    assert fn.record_chunking
    blocks = list(fn.blocks(10, 8 * 5))
    assert all((b[0].stop - b[0].start) * (b[1].stop - b[1].start) <= 5 for b in blocks)
    covered = np.zeros((fn.n, 10), int)
    for r, d in blocks:
        covered[r, d] += 1
    assert (covered == 1).all()


def test_coefficient_validation(fn_and_data):
    fn, _ = fn_and_data
    draws = {"intercept": np.zeros(2), "beta": np.zeros((2, 1)), "sigma": np.ones(2)}
    with pytest.raises(ValueError, match="coefficient"):
        reduce_abs(fn, draws, -np.ones(fn.n))


def test_generic_path_compiles_lazily_and_reduces_inside_the_graph(fn_and_data):
    """Constructing a RecordFunction compiles nothing; the accountant compiles only the
    in-graph reductions, never the (draws, records) matrix function."""
    _, df = fn_and_data
    model = LogNormalRegression("x", ["z"])
    fn = RecordFunction(model.build(model.prepare(df)))
    assert fn._compiled is None and not fn._reducers
    rng = np.random.default_rng(1)
    draws = {"intercept": rng.normal(size=4), "beta": rng.normal(size=(4, 1)), "sigma": np.ones(4)}
    coef = rng.uniform(0, 1, fn.n)
    red = reduce_abs(fn, draws, coef, max_bytes=8 * 20)  # record chunks of 20
    total = reduce_sum(fn, draws, coef, max_bytes=8 * 20)
    assert fn._compiled is None and set(fn._reducers) == {"abs", "sum"}
    full = _brute(draws, df)
    np.testing.assert_allclose(red.per_record, np.abs(full).max(axis=0), rtol=1e-10)
    np.testing.assert_allclose(red.per_draw, (coef * np.abs(full)).max(axis=1), rtol=1e-10)
    np.testing.assert_allclose(total, full @ coef, rtol=1e-10)
