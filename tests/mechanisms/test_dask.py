"""The Dask backend: accountant = brute force, statistics and synthesis = in memory, bit for bit."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

dd = pytest.importorskip("dask.dataframe")

import dask  # noqa: E402
import dask.array as da  # noqa: E402

import pseudopost as pp  # noqa: E402
from pseudopost._streams import record_uniforms  # noqa: E402
from pseudopost.fitting.sufficient import STATS_BLOCK, total_statistics  # noqa: E402
from pseudopost.mechanisms.pseudo_posterior.dask import is_dask_input, passes  # noqa: E402
from pseudopost.mechanisms.pseudo_posterior.dask.backend import fit_dask, synthesize_frame  # noqa: E402
from pseudopost.mechanisms.pseudo_posterior.dask.passes import abs_reduction, statistics  # noqa: E402
from pseudopost.mechanisms.pseudo_posterior.dask.records import load_records  # noqa: E402
from pseudopost.models import (  # noqa: E402
    LogNormalRegression,
    NegativeBinomialRegression,
    NormalRegression,
    PoissonRegression,
)
from pseudopost.models.base import synthesis_stream  # noqa: E402
from pseudopost.privacy.decomposition import Unrestricted  # noqa: E402
from pseudopost.risk import MultiplicativeRange  # noqa: E402

DRAWS = dict(draws=200, tune=200, chains=2)


def _frame(kind: str, n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, object]:
    z1, z2 = rng.normal(size=n), rng.integers(0, 3, n).astype(float)
    eta = 0.5 + 0.8 * z1 - 0.3 * z2
    if kind == "poisson":
        y = rng.poisson(np.exp(0.3 * eta)).astype(np.int64)
        return pd.DataFrame({"z1": z1.round(1), "z2": z2, "y": y}), PoissonRegression(
            "y", ["z1", "z2"]
        )
    y = eta + rng.normal(size=n)
    if kind == "lognormal":
        return pd.DataFrame({"z1": z1, "z2": z2, "y": np.exp(y)}), LogNormalRegression(
            "y", ["z1", "z2"]
        )
    return pd.DataFrame({"z1": z1, "z2": z2, "y": y}), NormalRegression("y", ["z1", "z2"])


def _brute(kind, draws, df) -> np.ndarray:
    """log p(y_i | theta_m) from SciPy, shape (draws, records)."""
    Z = df[["z1", "z2"]].to_numpy()
    eta = draws["intercept"][:, None] + draws["beta"] @ Z.T
    y = df["y"].to_numpy(dtype=float)[None, :]
    if kind == "poisson":
        return stats.poisson(np.exp(eta)).logpmf(y)
    sigma = draws["sigma"][:, None]
    if kind == "lognormal":
        return stats.lognorm(s=sigma, scale=np.exp(eta)).logpdf(y)
    return stats.norm(eta, sigma).logpdf(y)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["normal", "lognormal", "poisson"]),
    seed=st.integers(0, 10_000),
    n=st.integers(2, 120),
    m=st.integers(1, 25),
    partitions=st.integers(1, 6),
    block=st.integers(1, 50),
)
def test_dask_accountant_equals_brute_force(kind, seed, n, m, partitions, block):
    rng = np.random.default_rng(seed)
    df, model = _frame(kind, n, rng)
    draws = {"intercept": rng.normal(0.3, 0.5, m), "beta": rng.normal(0, 0.5, (m, 2))}
    if kind != "poisson":
        draws["sigma"] = rng.uniform(0.3, 3.0, m)
    coef = rng.uniform(0, 1, n)
    records = load_records(dd.from_pandas(df, npartitions=min(partitions, n)), model, block=block)
    c = da.from_array(coef, chunks=block)
    per_record, per_draw = abs_reduction(records, model, Unrestricted(), draws, c)
    got_record, got_draw = dask.compute(per_record, per_draw)
    full = np.abs(_brute(kind, draws, df))
    np.testing.assert_allclose(got_record, full.max(axis=0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_draw, (coef * full).max(axis=1), rtol=1e-10, atol=1e-12)
    # chunk invariance: one block of everything gives the same numbers bit for bit
    whole = load_records(dd.from_pandas(df, npartitions=1), model, block=n)
    one_record, one_draw = dask.compute(
        *abs_reduction(whole, model, Unrestricted(), draws, c.rechunk(n))
    )
    np.testing.assert_array_equal(got_record, one_record)
    np.testing.assert_array_equal(got_draw, one_draw)


@pytest.mark.parametrize("kind", ["lognormal", "poisson"])
def test_statistics_bit_identical_to_in_memory(kind):
    rng = np.random.default_rng(3)
    n = 2 * STATS_BLOCK + 1234
    df, model = _frame(kind, n, rng)
    w = rng.uniform(0, 1, n)
    prepared = model.prepare(df)
    expected = total_statistics(model, prepared.arrays, w)
    records = load_records(dd.from_pandas(df, npartitions=5), model)
    rows = passes.design_rows_of(records, model)
    weights = da.from_array(w, chunks=100_000)
    got = statistics(records, model, weights, rows)
    assert set(got) == set(expected)
    for k in expected:
        np.testing.assert_array_equal(got[k], expected[k], err_msg=k)


def test_synthesis_is_partition_invariant_and_equals_in_memory_inversion():
    rng = np.random.default_rng(4)
    df, model = _frame("lognormal", 1000, rng)
    params = {"intercept": np.asarray(0.4), "beta": np.array([0.7, -0.2]), "sigma": 0.9}
    u = record_uniforms(99, synthesis_stream(1, 0), 0, len(df), 1)
    expected = df[["z1", "z2"]].copy()
    expected["y"] = model.sample_outcome(params, {"z1": df.z1.values, "z2": df.z2.values}, u)
    for parts in (1, 3, 7):
        records = load_records(dd.from_pandas(df, npartitions=parts), model)
        got = synthesize_frame(records, model, params, 99, 1).compute()
        pd.testing.assert_frame_equal(got, expected)


# ---------------------------------------------------------------- end to end, one shared fit
@pytest.fixture(scope="module")
def lognormal_data():
    return pp.datasets.simulate_lognormal(600, seed=5)


@pytest.fixture(scope="module")
def dask_result(lognormal_data):
    mech = pp.PseudoPosterior(LogNormalRegression("x", ["z"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_dask(mech, dd.from_pandas(lognormal_data, npartitions=4), seed=11, **DRAWS)


def test_dask_run_equals_in_memory_run(lognormal_data, dask_result):
    mech = pp.PseudoPosterior(LogNormalRegression("x", ["z"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = mech.fit(lognormal_data, seed=11, **DRAWS)
    assert memory.likelihood == "sufficient"
    assert dask_result.epsilon == memory.epsilon
    assert dask_result.unweighted_epsilon == memory.unweighted_epsilon
    np.testing.assert_array_equal(dask_result.lipschitz.compute(), memory.lipschitz.values)
    np.testing.assert_array_equal(dask_result.alpha.compute(), memory.alpha.values)
    for a, b in zip(
        dask_result.synthesize_datasets(2, seed=3),
        memory.synthesize_datasets(2, seed=3),
        strict=True,
    ):
        pd.testing.assert_frame_equal(a.compute(), b)
    # one dataset, and the unweighted synthesizer, from the same base class: same data
    one = dask_result.synthesize(seed=3)
    assert isinstance(one, dd.DataFrame)
    pd.testing.assert_frame_equal(one.compute(), memory.synthesize(seed=3))
    pd.testing.assert_frame_equal(
        dask_result.synthesize(seed=4, weighted=False).compute(),
        memory.synthesize(seed=4, weighted=False),
    )
    assert dask_result.privacy_statement == memory.privacy_statement
    assert dask_result.likelihood == memory.likelihood == "sufficient"
    pd.testing.assert_frame_equal(dask_result.summary(), memory.summary())


def test_dask_weights_are_the_in_memory_weights_function_on_blocks():
    from pseudopost.risk.weights import risk_summary, risk_weights, weights_from_risk

    risk = np.random.default_rng(2).gamma(2.0, 3.0, 1000)
    lazy = da.from_array(risk, chunks=137)
    for method in ("linear", "logistic"):
        summary = risk_summary(risk, method)
        got = passes.risk_weights(lazy, summary, 0.8, 0.1).compute()
        np.testing.assert_array_equal(got, risk_weights(risk, 0.8, 0.1, method))
        np.testing.assert_array_equal(got, weights_from_risk(risk, summary, 0.8, 0.1))


def test_poisson_dask_run_equals_in_memory_run():
    df, model = _frame("poisson", 500, np.random.default_rng(8))
    mech = pp.PseudoPosterior(model)
    small = dict(draws=150, tune=150, chains=2, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = mech.fit(df, **small)
        chunked = mech.fit(dd.from_pandas(df, npartitions=3), **small)
    assert memory.likelihood == "sufficient"
    assert chunked.epsilon == memory.epsilon
    pd.testing.assert_frame_equal(chunked.synthesize(seed=1).compute(), memory.synthesize(seed=1))


def test_exclude_quantile_equals_in_memory(lognormal_data):
    mech = pp.PseudoPosterior(LogNormalRegression("x", ["z"]), exclude_quantile=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = mech.fit(lognormal_data, seed=2, **DRAWS)
        chunked = mech.fit(dd.from_pandas(lognormal_data, npartitions=2), seed=2, **DRAWS)
    kept = chunked.datatree["privacy"]["draw_kept"].values
    assert 0 < kept.sum() < kept.size
    np.testing.assert_array_equal(kept, memory.datatree["privacy"]["draw_kept"].values)
    assert chunked.epsilon == memory.epsilon == 2 * chunked.lipschitz.compute().values.max()
    np.testing.assert_array_equal(chunked.lipschitz.compute(), memory.lipschitz.values)


def test_logistic_weights_match_numpy(lognormal_data):
    from pseudopost.risk import risk_weights

    mech = pp.PseudoPosterior(LogNormalRegression("x", ["z"]), normalisation="logistic")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mech.fit(dd.from_pandas(lognormal_data, npartitions=3), seed=2, **DRAWS)
    risk = res.risk.compute().values
    expected = risk_weights(risk, 1.0, 0.0, "logistic")
    np.testing.assert_allclose(res.alpha.compute().values, expected, rtol=1e-12)


def test_result_is_lazy_and_consistent(dask_result):
    lip = dask_result.lipschitz
    assert lip.chunks is not None  # a Dask-backed DataArray
    values = lip.compute().values
    assert values.shape == (600,)
    assert dask_result.epsilon == 2 * values.max()
    risk = dask_result.risk.compute().values
    assert dask_result.unweighted_epsilon == 2 * risk.max()
    alpha = dask_result.alpha.compute().values
    assert alpha.min() >= 0 and alpha.max() <= 1 and alpha[np.argmin(risk)] == 1.0
    assert dask_result.epsilon < dask_result.unweighted_epsilon
    assert set(dask_result.diagnostics) == {"unweighted", "weighted"}


def test_parquet_in_and_out_with_workdir(tmp_path, lognormal_data, dask_result):
    src = tmp_path / "data.parquet"
    lognormal_data.to_parquet(src, row_group_size=150)
    mech = pp.PseudoPosterior(LogNormalRegression("x", ["z"]))
    assert is_dask_input(src) and is_dask_input(str(src)) and not is_dask_input(lognormal_data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mech.fit(src, seed=11, **DRAWS)  # dispatch to the Dask backend
        again = fit_dask(mech, src, seed=11, workdir=tmp_path / "work", **DRAWS)
    assert res.epsilon == again.epsilon == dask_result.epsilon
    out = again.write_parquet(tmp_path / "out", 2, seed=3)
    assert [p.name for p in out] == ["synthetic-1", "synthetic-2"]
    for path, expected in zip(out, dask_result.synthesize_datasets(2, seed=3), strict=True):
        written = pd.read_parquet(path)
        pd.testing.assert_frame_equal(
            written, expected.compute(), check_index_type=False, check_names=False
        )
    with pytest.raises(ValueError, match="exists and is not empty"):
        again.write_parquet(tmp_path / "out", seed=3)
    with pytest.warns(DeprecationWarning, match="write_parquet"):
        old = again.synthesize(seed=3, path=tmp_path / "old")
    expected = dask_result.synthesize(seed=3).compute()
    pd.testing.assert_frame_equal(
        pd.read_parquet(old[0]), expected, check_index_type=False, check_names=False
    )


def test_distributed_local_cluster(lognormal_data, dask_result):
    distributed = pytest.importorskip("distributed")
    mech = pp.PseudoPosterior(LogNormalRegression("x", ["z"]))
    ddf = dd.from_pandas(lognormal_data, npartitions=3)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        res = fit_dask(mech, ddf, seed=11, client=client, **DRAWS)
        syn = res.synthesize(seed=3).compute()
    assert res.epsilon == dask_result.epsilon
    pd.testing.assert_frame_equal(syn, dask_result.synthesize(seed=3).compute())


# ---------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def mech():
    return pp.PseudoPosterior(LogNormalRegression("x", ["z"]))


def _ddf(**cols):
    return dd.from_pandas(pd.DataFrame(cols), npartitions=2)


def test_missing_column(mech):
    with pytest.raises(ValueError, match=r"Unknown column\(s\) \['z'\]"):
        fit_dask(mech, _ddf(x=[1.0, 2.0, 3.0]), seed=1)


def test_non_numeric_column(mech):
    with pytest.raises(TypeError, match="Column 'z' must be numeric"):
        fit_dask(mech, _ddf(z=["a", "b", "c"], x=[1.0, 2.0, 3.0]), seed=1)


def test_non_finite_value_names_column_and_row(mech):
    z = np.zeros(10)
    z[7] = np.nan
    with pytest.raises(ValueError, match=r"Column 'z' must hold finite values; row 7 has nan"):
        fit_dask(mech, _ddf(z=z, x=np.ones(10)), seed=1)


def test_outcome_outside_support(mech):
    x = np.ones(10)
    x[8] = -2.0
    with pytest.raises(
        ValueError, match=r"Column 'x' must be strictly positive.*row 8 has .*-2\.0"
    ):
        fit_dask(mech, _ddf(z=np.zeros(10), x=x), seed=1)


def test_too_few_rows_and_missing_path(mech, tmp_path):
    with pytest.raises(ValueError, match="at least 2 rows"):
        fit_dask(mech, dd.from_pandas(pd.DataFrame({"z": [0.0], "x": [1.0]}), npartitions=1))
    with pytest.raises(ValueError, match="does not exist"):
        fit_dask(mech, tmp_path / "nothing.parquet")
    with pytest.raises(TypeError, match="Dask DataFrame or a Parquet path"):
        fit_dask(mech, pd.DataFrame({"z": [0.0, 1.0], "x": [1.0, 2.0]}))


def test_bad_workdir_and_client(mech, tmp_path):
    ddf = _ddf(z=np.zeros(4), x=np.ones(4))
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "file").write_text("x")
    with pytest.raises(ValueError, match=r"'workdir' .* is not an empty folder"):
        fit_dask(mech, ddf, workdir=tmp_path / "used")
    with pytest.raises(TypeError, match="'workdir' must be a folder path"):
        fit_dask(mech, ddf, workdir=3)
    with pytest.raises(TypeError, match=r"'client' must be a distributed\.Client"):
        fit_dask(mech, ddf, client="localhost:8786")


def test_unsupported_options_fail_before_work():
    ddf = _ddf(z=np.zeros(4), x=np.ones(4))
    ranged = pp.PseudoPosterior(
        LogNormalRegression("x", ["z"]), sensitive_range=MultiplicativeRange(0.5, 2.0)
    )
    with pytest.raises(NotImplementedError, match="'sensitive_range'"):
        fit_dask(ranged, ddf)
    with pytest.raises(NotImplementedError, match="sufficient statistics"):
        fit_dask(pp.PseudoPosterior(NegativeBinomialRegression("x", ["z"])), ddf)
    with pytest.raises(NotImplementedError, match="'weights' must be None"):
        pp.PseudoPosterior(LogNormalRegression("x", ["z"])).fit(ddf, weights=np.ones(4))
    with pytest.raises(ValueError, match="'draws' parameter must be an integer >= 1"):
        fit_dask(pp.PseudoPosterior(LogNormalRegression("x", ["z"])), ddf, draws=0)


# ---------------------------------------------------------------- REPS statistics
def test_reps_weighted_statistics_from_dask_equal_in_memory():
    from pseudopost.mechanisms.reps.core import split_feature_types, weighted_statistics
    from pseudopost.mechanisms.reps.data import simulate_outliers
    from pseudopost.mechanisms.reps.gaussian_nb import NaiveBayesSchema

    frame = simulate_outliers(500, seed=2).frame
    numeric, cats = split_feature_types(frame, "y")
    schema = NaiveBayesSchema.from_frame(frame, "y", numeric, cats)
    w = np.random.default_rng(1).uniform(0, 1, len(frame))
    expected = weighted_statistics(frame, schema, w, clip=1.5)
    ddf = dd.from_pandas(frame, npartitions=3)
    lengths = ddf.map_partitions(len).compute().tolist()
    weights = da.from_array(w, chunks=(tuple(lengths),))
    np.testing.assert_allclose(weighted_statistics(ddf, schema, weights, 1.5), expected, 1e-12)
    by_part = weighted_statistics(ddf, schema, lambda part: w[part.index.to_numpy()], 1.5)
    np.testing.assert_allclose(by_part, expected, rtol=1e-12)
    ones = weighted_statistics(frame, schema, None, clip=1.5)
    np.testing.assert_allclose(weighted_statistics(ddf, schema, None, 1.5), ones, rtol=1e-12)


def test_poisson_with_too_many_unique_rows_is_refused():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"z": rng.normal(size=5000), "y": rng.poisson(2.0, 5000)})
    records = load_records(dd.from_pandas(df, npartitions=2), PoissonRegression("y", ["z"]))
    with pytest.raises(NotImplementedError, match="more than 4096 unique predictor rows"):
        passes.design_rows_of(records, PoissonRegression("y", ["z"]))
