"""The fused (Numba) and NumPy log-likelihood, gradient and Hessian of the grouped multinomial
logit and logistic parts: equal to each other, to an independent SciPy reference and to finite
differences, on random shapes including p = 0, absent levels and zero-weight patterns; the
parts' exact Hessians (priors and transforms included) against differences of their gradients."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from pseudopost.models.parts import PartData, make_part
from pseudopost.models.parts import _fused as F

from ._hessian import assert_hessian_matches_gradient

SHAPES = st.tuples(
    st.integers(0, 25),  # patterns U
    st.integers(0, 4),  # predictors p
    st.integers(2, 5),  # levels K
    st.integers(0, 2**32 - 1),  # seed
)


def _case(u, p, k, seed):
    rng = np.random.default_rng(seed)
    rows = rng.integers(-1, 3, (u, p)).astype(float)  # many zeros (one-hot like)
    if p:
        rows[:, 0] = np.where(rng.random(u) < 0.5, rng.normal(size=u), 0.0)
    counts = rng.poisson(0.6, (u, k)) * rng.uniform(0.2, 2.0, (u, 1))
    if u:
        counts[rng.random(u) < 0.2] = 0.0  # zero-weight patterns
        counts[:, rng.integers(k)] = 0.0  # one level absent
    b0 = rng.normal(size=k - 1)
    beta = rng.normal(size=(p, k - 1))
    return rows, counts, b0, beta


def _reference(rows, counts, b0, beta):
    """ll of sum_{g,k} C_gk log softmax(eta_g)_k, by SciPy."""
    eta = np.zeros((rows.shape[0], counts.shape[1]))
    eta[:, 1:] = b0 + rows @ beta
    ls = special.log_softmax(eta, axis=1)
    return float(np.sum(np.where(counts > 0, counts * ls, 0.0)))


def _flat(b0, beta):
    return np.concatenate([np.ravel(b0), np.ravel(beta)])


def _grad_flat(fn, x, m, p):
    _, gi, gb = fn(x[:m], x[m:].reshape(p, m) if m > 1 or p else x[m:])
    return _flat(gi, gb)


@settings(max_examples=60, deadline=None)
@given(SHAPES)
def test_categorical_numba_numpy_reference_and_differences_agree(shape):
    rows, counts, b0, beta = _case(*shape)
    p, m = rows.shape[1], counts.shape[1] - 1
    ref = _reference(rows, counts, b0, beta)
    out = {f: F.categorical_loglik_grad(rows, counts, b0, beta, fused=f) for f in (True, False)}
    for ll, gi, gb in out.values():
        assert ll == pytest.approx(ref, rel=1e-10, abs=1e-10)
        assert gi.shape == (m,) and gb.shape == (p, m)
    np.testing.assert_allclose(out[True][1], out[False][1], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(out[True][2], out[False][2], rtol=1e-10, atol=1e-10)
    # gradient against central differences of the SciPy reference
    x, h = _flat(b0, beta), 1e-6
    fd = np.array([
        (_reference(rows, counts, *_split(x + h * e, m, p))
         - _reference(rows, counts, *_split(x - h * e, m, p))) / (2 * h)
        for e in np.eye(x.size)
    ])  # fmt: skip
    np.testing.assert_allclose(_flat(*out[True][1:]), fd, rtol=1e-5, atol=1e-5)
    # Hessian: Numba = NumPy = differences of the analytic gradient, symmetric
    H = {f: F.categorical_hessian(rows, counts, b0, beta, fused=f) for f in (True, False)}
    np.testing.assert_allclose(H[True], H[False], rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(H[True], H[True].T)
    fdh = np.column_stack([
        (_flat(*F.categorical_loglik_grad(rows, counts, *_split(x + h * e, m, p))[1:])
         - _flat(*F.categorical_loglik_grad(rows, counts, *_split(x - h * e, m, p))[1:]))
        / (2 * h)
        for e in np.eye(x.size)
    ])  # fmt: skip
    np.testing.assert_allclose(H[True], fdh, rtol=1e-5, atol=1e-5)
    assert np.all(np.linalg.eigvalsh(H[True]) <= 1e-9)  # concave


def _split(x, m, p):
    return x[:m], x[m:].reshape(p, m)


def _bern_reference(rows, w, wy, b0, beta):
    eta = b0 + rows @ beta
    return float(np.sum(wy * special.log_expit(eta) + (w - wy) * special.log_expit(-eta)))


@settings(max_examples=60, deadline=None)
@given(SHAPES)
def test_bernoulli_numba_numpy_reference_and_differences_agree(shape):
    u, p, _, seed = shape
    rng = np.random.default_rng(seed)
    rows = _case(u, p, 2, seed)[0]
    w = rng.uniform(0.0, 3.0, u) * (rng.random(u) < 0.8)  # zero-weight patterns
    wy = w * rng.uniform(0.0, 1.0, u) * (rng.random(u) < 0.7)
    b0, beta = float(rng.normal()), rng.normal(size=p) * 3.0
    ref = _bern_reference(rows, w, wy, b0, beta)
    out = {f: F.bernoulli_loglik_grad(rows, w, wy, b0, beta, fused=f) for f in (True, False)}
    for ll, _, gb in out.values():
        assert ll == pytest.approx(ref, rel=1e-10, abs=1e-10)
        assert gb.shape == (p,)
    assert out[True][1] == pytest.approx(out[False][1], rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(out[True][2], out[False][2], rtol=1e-10, atol=1e-10)
    x, h = np.concatenate([[b0], beta]), 1e-6

    def grad(x):
        _, gi, gb = F.bernoulli_loglik_grad(rows, w, wy, x[0], x[1:], fused=True)
        return np.concatenate([[gi], gb])

    fd = [
        (_bern_reference(rows, w, wy, (x + h * e)[0], (x + h * e)[1:])
         - _bern_reference(rows, w, wy, (x - h * e)[0], (x - h * e)[1:])) / (2 * h)
        for e in np.eye(x.size)
    ]  # fmt: skip
    np.testing.assert_allclose(grad(x), fd, rtol=1e-5, atol=1e-5)
    H = F.bernoulli_hessian(rows, w, b0, beta)
    fdh = np.column_stack([(grad(x + h * e) - grad(x - h * e)) / (2 * h) for e in np.eye(x.size)])
    np.testing.assert_allclose(H, fdh, rtol=1e-5, atol=1e-5)


def test_the_size_threshold_picks_the_kernel(monkeypatch):
    rows = _case(40, 3, 4, 0)[0]
    assert F.use_fused(rows, 4, None)  # every part with records, by default
    assert not F.use_fused(rows[:0], 4, None)  # no records: nothing to run
    assert not F.use_fused(rows, 4, False)
    monkeypatch.setattr(F, "FUSED_MIN", 10**6)
    assert not F.use_fused(rows, 4, None)
    assert F.use_fused(rows, 4, True)


PART_CASES = [
    ("categorical", ["a", "b", "c"], {"n_levels": 4}),
    ("categorical", [], {"n_levels": 3}),
    ("bernoulli", ["a", "b", "c"], {}),
    ("bernoulli", [], {}),
    ("ordinal", ["a", "b", "c"], {"n_levels": 4}),
    ("ordinal", ["a"], {"n_levels": 2}),
    ("normal", ["a", "b", "c"], {}),
    ("lognormal", [], {}),
]


@pytest.mark.parametrize(("family", "preds", "kw"), PART_CASES)
@pytest.mark.parametrize("fused", [True, False])
def test_part_hessian_equals_differences_of_its_gradient(family, preds, kw, fused, monkeypatch):
    """Whole log density (likelihood, priors, ordered-transform Jacobian) at points away from
    the mode, on both kernels."""
    monkeypatch.setattr(F, "FUSED_MIN", 0 if fused else 10**12)
    rng = np.random.default_rng(7)
    n, p = 200, len(preds)
    X = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 2, n), rng.normal(size=n)])[:, :p]
    k = kw.get("n_levels", 2)
    y = rng.integers(0, k, n).astype(float)
    if family in ("normal", "lognormal"):
        y = np.exp(rng.normal(size=n))
    active = rng.random(n) < 0.85
    part = make_part(family, "y", preds, **kw)
    stats = part.statistics(PartData(np.where(active, y, np.nan), X, active), rng.uniform(0, 2, n))
    density = part.log_density(stats)
    assert density.has_hessian
    assert_hessian_matches_gradient(density, rng)


def test_parts_without_an_analytic_hessian_say_so():
    part = make_part("poisson", "y", ["a"])
    stats = part.statistics(PartData(np.ones(3), np.zeros((3, 1)), np.ones(3, bool)), np.ones(3))
    density = part.log_density(stats)
    assert not density.has_hessian
    with pytest.raises(NotImplementedError, match="no analytic Hessian"):
        density.hessian(np.zeros(part.layout.size))


@settings(max_examples=30, deadline=None)
@given(SHAPES)
def test_sparse_rows_hold_exactly_the_non_zeros(shape):
    rows = _case(*shape)[0]
    sp = F.sparse_rows(rows)
    assert set(sp) == set(F.SPARSE_KEYS)
    ptr, col, val = (sp[k] for k in F.SPARSE_KEYS)
    assert ptr.shape == (rows.shape[0] + 1,) and ptr[0] == 0
    dense = np.zeros_like(rows)
    for g in range(rows.shape[0]):
        sl = slice(int(ptr[g]), int(ptr[g + 1]))
        assert np.all(np.diff(col[sl]) > 0)
        dense[g, col[sl].astype(int)] = val[sl]
    np.testing.assert_array_equal(dense, rows)
    assert np.all(val != 0)


@pytest.mark.parametrize("family", ["categorical", "bernoulli"])
def test_derived_arrays_travel_with_the_statistics_and_change_nothing(family, monkeypatch):
    from pseudopost.fitting.parts import shared_data

    rng = np.random.default_rng(3)
    n = 150
    X = np.column_stack([rng.integers(0, 3, n), rng.normal(size=n)])
    y = rng.integers(0, 2, n).astype(float)
    part = make_part(family, "y", ["a", "b"], **({"n_levels": 3} if family != "bernoulli" else {}))
    stats = part.statistics(PartData(y, X, np.ones(n, bool)), rng.uniform(0, 1, n))
    x = rng.normal(size=part.layout.size)
    monkeypatch.setattr(F, "FUSED_MIN", 10**12)
    small = part.log_density(stats)
    assert set(small.arrays) == set(stats.arrays)  # below the threshold: NumPy, nothing derived
    monkeypatch.setattr(F, "FUSED_MIN", 0)
    big = part.log_density(stats)
    assert set(big.arrays) == set(stats.arrays) | set(F.SPARSE_KEYS)
    assert set(shared_data(part, stats)) == set(big.arrays)
    lp0, g0 = small.logp_grad(x)
    for lp, g in (big.logp_grad(x), part.logp_grad(x, stats.arrays)):
        assert lp == pytest.approx(lp0, rel=1e-12)
        np.testing.assert_allclose(g, g0, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(big.hessian(x), small.hessian(x), rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(SHAPES, st.booleans())
def test_categorical_tables_numba_equal_numpy_and_blocks_combine_exactly(shape, non_finite):
    """Per-key log-likelihood tables: the Numba kernel equals the NumPy one (NaN and inf where
    it has them), and a value never depends on the other draws or rows of the block."""
    u, p, k, seed = shape
    rng = np.random.default_rng(seed)
    rows = _case(max(u, 1), max(p, 1), k, seed)[0]
    part = make_part("categorical", "y", [f"x{j}" for j in range(rows.shape[1])], n_levels=k)
    y = rng.integers(0, k, rows.shape[0]).astype(float)
    enc = part.encode(PartData(y, rows, np.ones(rows.shape[0], bool)))
    n_draws = 6
    params = {
        "intercept": rng.normal(size=(n_draws, k - 1)),
        "beta": rng.normal(size=(n_draws, rows.shape[1], k - 1)) * 2.0,
    }
    if non_finite:
        params["beta"][1, 0, 0] = np.inf
        params["beta"][2, -1, -1] = np.nan
    got = F.categorical_table(
        enc.rows, params["intercept"], params["beta"], enc.key_row, enc.key_y.astype(np.int64)
    )
    old = F.TABLE_MIN
    try:
        F.TABLE_MIN = 10**9
        ref = part.table(params, enc)
        F.TABLE_MIN = 0
        assert np.array_equal(part.table(params, enc), got, equal_nan=True)  # dispatch
    finally:
        F.TABLE_MIN = old
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    ok = np.isfinite(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-13, atol=1e-13)
    # blocks: a subset of draws, and the keys of a subset of rows, give the same bits
    sub = {n: v[[4, 1]] for n, v in params.items()}
    part_draws = F.categorical_table(
        enc.rows, sub["intercept"], sub["beta"], enc.key_row, enc.key_y.astype(np.int64)
    )
    assert np.array_equal(part_draws, got[[4, 1]], equal_nan=True)
    keep = np.flatnonzero(enc.key_row % 2 == 0)
    rows_used, inv = np.unique(enc.key_row[keep], return_inverse=True)
    part_rows = F.categorical_table(
        enc.rows[rows_used], params["intercept"], params["beta"], inv, enc.key_y[keep].astype(int)
    )
    assert np.array_equal(part_rows, got[:, keep], equal_nan=True)


def test_lane_exponential_equals_numpy_below_zero():
    """The vectorised exponential of the multinomial kernel (``_exp_lanes``): within 2.3e-16
    relative of NumPy's on x <= 0 down to its floor, the floor's value below it, NaN kept."""
    rng = np.random.default_rng(3)
    x = np.concatenate([-np.abs(rng.normal(0, 30, 997)), [0.0, -0.0, -1e-300, -707.9, -708.0]])
    out, bits = np.empty_like(x), np.empty(x.size, np.int64)
    F._exp_lanes(x, out, bits)
    np.testing.assert_allclose(out, np.exp(np.maximum(x, F._EXP_LOW)), rtol=2.3e-16, atol=0)
    low = np.array([-708.5, -745.2, -1e5, -np.inf, np.nan])
    out, bits = np.empty_like(low), np.empty(low.size, np.int64)
    F._exp_lanes(low, out, bits)
    np.testing.assert_allclose(out[:4], np.exp(F._EXP_LOW), rtol=2.3e-16, atol=0)
    assert np.isnan(out[4])


@pytest.mark.parametrize("k", [2, 3, 5, 8, 9, 10, 16, 17, 18, 25, 41])
def test_categorical_kernel_in_lanes_equals_the_reference_across_lane_widths(k):
    """K - 1 levels on either side of a multiple of the lane width (8), linear predictors of
    up to +-800 (an exponential below the floor, the largest level far above the reference),
    zero-weight patterns and absent levels: the Numba kernel equals SciPy's log-likelihood and
    the NumPy gradient."""
    rng = np.random.default_rng(k)
    rows, counts, b0, beta = _case(60, 4, k, k)
    for scale in (1.0, 40.0, 200.0):
        b0s, betas = b0 * scale, beta * scale
        ref = _reference(rows, counts, b0s, betas)
        ll, gi, gb = F.categorical_loglik_grad(rows, counts, b0s, betas, fused=True)
        _, gi0, gb0 = F.categorical_loglik_grad(rows, counts, b0s, betas, fused=False)
        assert ll == pytest.approx(ref, rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(gi, gi0, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(gb, gb0, rtol=1e-10, atol=1e-9)
        assert gi.shape == (k - 1,) and gb.shape == (4, k - 1)
        # both kernels, whichever the dispatch picks for this K
        sp = F._sparse(rows, None)
        for kernel in (F._categorical_lanes, F._categorical_scalar):
            ll_k, gi_k, gb_k = kernel(*sp, counts, b0s, np.ascontiguousarray(betas))
            assert ll_k == pytest.approx(ref, rel=1e-12, abs=1e-9)
            np.testing.assert_allclose(gi_k, gi0, rtol=1e-10, atol=1e-9)
            np.testing.assert_allclose(gb_k, gb0, rtol=1e-10, atol=1e-9)
    assert rng is not None


@pytest.mark.parametrize("k", [4, 12])
def test_categorical_kernel_propagates_a_nan(k):
    rows, counts, b0, beta = _case(30, 3, k, 1)
    beta = beta.copy()
    beta[1, 2] = np.nan
    ll, gi, gb = F.categorical_loglik_grad(rows, counts, b0, beta, fused=True)
    assert np.isnan(ll) and np.isnan(gi).any() and np.isnan(gb).any()


def _dense_sum(rows, coef, base):
    out = np.repeat(base[:, None], rows.shape[0], axis=1)
    for j in range(rows.shape[1]):
        out += coef[:, j, None] * rows[:, j]
    return out


def test_linear_rows_equal_the_dense_sum_bit_for_bit_and_do_not_depend_on_the_block():
    """The tables' linear predictors over the rows' non-zeros: the NumPy loop over all
    predictors bit for bit (the zeros add nothing), a draw with an infinite coefficient as
    the dense sum (0 * inf is NaN there), and each entry the same whatever other draws or rows
    are in the block."""
    rng = np.random.default_rng(4)
    rows = _case(300, 7, 3, 4)[0]
    coef = rng.normal(size=(9, 7)) * rng.uniform(0.1, 30.0, (9, 1))
    base = rng.normal(size=9)
    coef[3, 2] = np.inf
    coef[5, 0] = np.nan
    out = F.linear_rows(rows, coef, base)
    np.testing.assert_array_equal(out, _dense_sum(rows, coef, base))
    assert np.isnan(out[3]).any()  # 0 * inf where row 2 of the design is 0
    np.testing.assert_array_equal(F.linear_rows(rows[40:90], coef[2:4], base[2:4]), out[2:4, 40:90])
    np.testing.assert_array_equal(F.linear_rows(rows, coef), _dense_sum(rows, coef, np.zeros(9)))
    assert F.linear_rows(rows[:, :0], coef[:, :0], base).shape == (9, 300)


def test_the_non_zeros_of_read_only_rows_are_kept_and_writeable_rows_are_read_again():
    rows = np.ascontiguousarray(_case(50, 4, 3, 2)[0])
    coef = np.random.default_rng(0).normal(size=(2, 4))
    before = F.linear_rows(rows, coef)
    rows[:, 1] += 1.0  # writeable: its non-zeros are read at every call
    np.testing.assert_array_equal(F.linear_rows(rows, coef), _dense_sum(rows, coef, np.zeros(2)))
    assert not np.array_equal(before, F.linear_rows(rows, coef))
    fixed = rows.copy()
    fixed.flags.writeable = False
    first = F._sparse(fixed, None)
    assert F._sparse(fixed, None) is first  # kept, by the array's identity
    np.testing.assert_array_equal(F.linear_rows(fixed, coef), _dense_sum(fixed, coef, np.zeros(2)))
    key = id(fixed)
    del fixed
    assert key not in F._SPARSE_CACHE  # dropped with its array
