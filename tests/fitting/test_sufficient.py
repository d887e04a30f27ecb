"""Sufficient-statistics fast path: exact log density, additive blocks, same posterior."""

import arviz as az
import numpy as np
import pandas as pd
import pytest

from pseudopost.fitting import sufficient as S
from pseudopost.fitting.sampler import make_sampler, model_data
from pseudopost.models import (
    LogNormalRegression,
    NegativeBinomialRegression,
    NormalRegression,
    PoissonRegression,
    PyMCModel,
    weighted_model,
)


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(5)
    n = 300
    z = rng.normal(2.0, 1.0, n)
    g = rng.integers(0, 4, n).astype(float)
    return pd.DataFrame(
        {
            "z": z,
            "g": g,
            "h": rng.integers(0, 2, n).astype(float),
            "x": np.exp(rng.normal(z + 1.0, 1.0)),
            "y": rng.normal(3.0 - 0.5 * z, 2.0),
            "c": rng.poisson(np.exp(0.5 + 0.3 * g)),
        }
    )


MODELS = [
    NormalRegression("y", ["z", "g"]),
    NormalRegression("y"),
    LogNormalRegression("x", ["z"]),
    PoissonRegression("c", ["g", "h"]),
    PoissonRegression("c"),
]


@pytest.mark.parametrize("model", MODELS, ids=repr)
def test_weighted_log_density_equals_the_full_model(model, frame):
    """Exact identity: prior + sum_i w_i log p(x_i | theta) from the sums, at random points
    of the unconstrained space (including the sigma log-transform Jacobian)."""
    rng = np.random.default_rng(1)
    prepared = model.prepare(frame)
    w = rng.uniform(0.0, 1.0, prepared.n)
    full = weighted_model(model.build(prepared), model.observed, weights=w)
    fast = S.statistics_model(model, S.total_statistics(model, prepared.arrays, w))
    f_full = full.compile_logp(mode="FAST_COMPILE")
    f_fast = fast.compile_logp(mode="FAST_COMPILE")
    point = full.initial_point()
    assert sorted(point) == sorted(fast.initial_point())
    for _ in range(10):
        theta = {k: rng.normal(0.0, 1.5, np.shape(v)) for k, v in point.items()}
        want = float(f_full(theta))
        assert float(f_fast(theta)) == pytest.approx(want, rel=1e-9)


def test_statistics_are_additive_over_canonical_blocks_and_order_invariant():
    rng = np.random.default_rng(2)
    n = S.STATS_BLOCK + 40_000
    z = rng.normal(size=n)
    g = rng.integers(0, 5, n).astype(float)
    arrays = {
        "z": z,
        "g": g,
        "x": np.exp(rng.normal(1 + z, 1.0)),
        "c": rng.poisson(np.exp(0.2 * g)).astype(float),
    }
    w = rng.uniform(size=n)
    model = LogNormalRegression("x", ["z", "g"])
    total = S.total_statistics(model, arrays, w)
    edges = [(0, S.STATS_BLOCK), (S.STATS_BLOCK, n)]
    blocks = [
        S.block_statistics(model, {k: v[a:b] for k, v in arrays.items()}, w[a:b]) for a, b in edges
    ]
    for k in total:  # bit-identical to the ordered sum over the canonical blocks
        assert np.array_equal(total[k], np.sum(np.stack([b[k] for b in blocks]), axis=0))
    # the closed forms, and another order of the records (equal up to rounding)
    y = np.log(arrays["x"])
    design = np.column_stack([np.ones(n), z, g])
    np.testing.assert_allclose(total["ztwz"], design.T @ (w[:, None] * design), rtol=1e-12)
    np.testing.assert_allclose(total["ztwy"], design.T @ (w * y), rtol=1e-12)
    np.testing.assert_allclose(total["const"], -(w @ y), rtol=1e-12)
    perm = rng.permutation(n)
    shuffled = S.total_statistics(model, {k: v[perm] for k, v in arrays.items()}, w[perm])
    for k in total:
        np.testing.assert_allclose(shuffled[k], total[k], rtol=1e-11)

    pois = PoissonRegression("c", ["g", "z"])
    arrays["z"] = np.round(z)  # few unique rows
    rows = S.design_rows(pois, arrays)
    chunks = [slice(0, 1000), slice(1000, 70_000), slice(70_000, n)]
    merged = S.merge_rows(
        *(S.design_rows(pois, {k: v[c] for k, v in arrays.items()}) for c in chunks)
    )
    assert np.array_equal(merged, rows)
    assert np.array_equal(S.design_rows(pois, {k: v[perm] for k, v in arrays.items()}), rows)
    stats = S.total_statistics(pois, arrays, w)
    assert np.array_equal(stats["rows"], rows)
    # W_u is the weight of the records with row u; the per-row sums add up to sum w
    u = 3
    mask = (arrays["g"] == rows[u, 0]) & (arrays["z"] == rows[u, 1])
    assert stats["row_weights"][u] == pytest.approx(w[mask].sum(), rel=1e-12)
    assert stats["row_weights"].sum() == pytest.approx(w.sum(), rel=1e-12)
    shuffled = S.total_statistics(pois, {k: v[perm] for k, v in arrays.items()}, w[perm])
    np.testing.assert_allclose(shuffled["row_weights"], stats["row_weights"], rtol=1e-11)


def _moments(post, name):
    da = post[name]
    return (
        da.mean(("chain", "draw")).to_numpy(),
        da.std(("chain", "draw")).to_numpy(),
        np.asarray(az.mcse(da, method="mean").to_numpy()),
        np.asarray(az.mcse(da, method="sd").to_numpy()),
    )


@pytest.mark.parametrize(
    "model", [LogNormalRegression("x", ["z"]), PoissonRegression("c", ["g"])], ids=repr
)
def test_posterior_matches_the_full_model_within_monte_carlo_error(model, frame):
    rng = np.random.default_rng(3)
    prepared = model.prepare(frame)
    w = rng.uniform(0.1, 1.0, prepared.n)
    fit = {"draws": 300, "tune": 300, "chains": 2, "seed": 4}
    fast = S.sufficient_sampler(
        model, S.total_statistics(model, prepared.arrays, np.ones(prepared.n))
    )
    stats = S.statistics_data(model, S.total_statistics(model, prepared.arrays, w))
    got = fast.sample(stats, **fit)["posterior"]
    weighted = weighted_model(model.build(prepared), model.observed)
    ref_sampler = make_sampler(weighted, "nutpie-jax")
    ref = ref_sampler.sample({**model_data(weighted), "alpha": w}, **fit)["posterior"]
    assert set(got.data_vars) == set(ref.data_vars)
    for name in ref.data_vars:
        assert got[name].dims == ref[name].dims
        m1, s1, e1, f1 = _moments(got, name)
        m2, s2, e2, f2 = _moments(ref, name)
        np.testing.assert_array_less(np.abs(m1 - m2), 4 * np.hypot(e1, e2))
        np.testing.assert_array_less(np.abs(s1 - s2), 4 * np.hypot(f1, f2))


def test_one_compilation_serves_other_sizes_and_weights(frame):
    model = LogNormalRegression("x", ["z"])
    prepared = model.prepare(frame)
    fast = S.sufficient_sampler(model, S.total_statistics(model, prepared.arrays, np.ones(300)))
    half = {k: v[:150] for k, v in prepared.arrays.items()}
    fit = {"draws": 200, "tune": 200, "chains": 2, "seed": 1}
    a = fast.sample(S.statistics_data(model, S.total_statistics(model, half, np.ones(150))), **fit)
    full = S.total_statistics(model, prepared.arrays, np.ones(300))
    b = fast.sample(S.statistics_data(model, full), **fit)
    assert fast.compilations == 1
    # the posterior sd of the intercept shrinks with n (about 1/sqrt(2) for twice the data)
    ratio = float(b["posterior"]["intercept"].std() / a["posterior"]["intercept"].std())
    assert 0.5 < ratio < 0.9


def test_supports():
    assert S.supports(NormalRegression("y")) and S.supports(LogNormalRegression("x", ["z"]))
    assert S.supports(PoissonRegression("c", ["g"]))
    assert not S.supports(NegativeBinomialRegression("c", ["g"]))
    import pymc as pm

    with pm.Model() as m:
        pm.Normal("a", pm.Normal("mu"), 1.0, observed=np.zeros(3))
    assert not S.supports(PyMCModel(m))
    rng = np.random.default_rng(0)
    many = pd.DataFrame({"z": rng.normal(size=S.MAX_UNIQUE_ROWS + 1), "c": np.ones(4097)})
    pois = PoissonRegression("c", ["z"])
    assert S.supports(pois) and not S.supports(pois, pois.prepare(many))
    assert "4097 unique" in S.unsupported_reason(pois, pois.prepare(many))


def test_bad_input(frame):
    model = LogNormalRegression("x", ["z"])
    arrays = model.prepare(frame).arrays
    with pytest.raises(ValueError, match=r"'weights' must have shape \(300,\)"):
        S.block_statistics(model, arrays, np.ones(3))
    with pytest.raises(ValueError, match=r"'weights' must have shape \(300,\)"):
        S.total_statistics(model, arrays, np.ones(3))
    with pytest.raises(ValueError, match=r"finite and >= 0; record 2 has -1\.0"):
        S.block_statistics(model, arrays, np.r_[1.0, 1.0, -1.0, np.ones(297)])
    pois = PoissonRegression("c", ["g"])
    parrays = pois.prepare(frame).arrays
    with pytest.raises(ValueError, match="need 'rows'"):
        S.block_statistics(pois, parrays, np.ones(300))
    with pytest.raises(ValueError, match="does not contain"):
        S.block_statistics(pois, parrays, np.ones(300), rows=np.array([[0.0], [1.0]]))
    with pytest.raises(TypeError, match="NegativeBinomialRegression has no sufficient"):
        S.block_statistics(NegativeBinomialRegression("c"), parrays, np.ones(300))
    with pytest.raises(ValueError, match="lack"):
        S.statistics_model(model, {"sw": np.asarray(1.0)})
    before = {k: v.copy() for k, v in arrays.items()}
    S.total_statistics(model, arrays, np.ones(300))
    for k in arrays:  # the caller's arrays are not modified
        assert np.array_equal(arrays[k], before[k])
