"""The fused accountant equals brute force (an explicit n x M matrix of SciPy log densities),
for every ready model, every decomposition, extreme values and any record blocking."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import special, stats

from pseudopost.models import (
    LogNormalRegression,
    NegativeBinomialRegression,
    NormalRegression,
    PoissonRegression,
    RecordFunction,
)
from pseudopost.privacy import (
    Censored,
    RangeAveraged,
    RangeTruncated,
    Unrestricted,
    fused,
    reduce_abs,
    reduce_sum,
)
from pseudopost.privacy.accountant import (
    account,
    account_block,
    combine_blocks,
    sensitive_function,
)
from pseudopost.privacy.fused import BlockKernel, FusedFunction, block_kernel, record_function
from pseudopost.privacy.kernels import glm
from pseudopost.privacy.kernels.special import log_ndtr, log_normal_range

MODELS = {
    "normal": NormalRegression,
    "lognormal": LogNormalRegression,
    "poisson": PoissonRegression,
    "negbin": NegativeBinomialRegression,
}
CASES = [(f, v) for f in MODELS for v in ("f", "trunc", "censor") if not (
    v == "trunc" and f in ("poisson", "negbin"))]  # fmt: skip
VARIANT = {"f": glm.F, "trunc": glm.TRUNC, "censor": glm.CENSOR}


# -- brute force --------------------------------------------------------------------------------
def _ref_log_range(za, zb):
    """log(Phi(zb) - Phi(za)) from SciPy's log_ndtr, right tail above the median."""
    right = za > 0
    a = np.where(right, special.log_ndtr(-za), special.log_ndtr(zb))
    b = np.where(right, special.log_ndtr(-zb), special.log_ndtr(za))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isneginf(b), a, a + np.log(-np.expm1(b - a)))


def _brute(family, variant, draws, x, Z, extras, bound):
    """(g, scale): the (M, n) matrix of g and the size of the terms that cancel in it."""
    eta = draws["intercept"][:, None] + (draws["beta"] @ Z.T if Z.shape[1] else 0.0)
    with np.errstate(all="ignore"):
        if family in ("normal", "lognormal"):
            s = draws["sigma"][:, None]
            if family == "normal":
                f = stats.norm.logpdf(x, eta, s)
                lo, hi = extras.get("lower"), extras.get("upper")
            else:
                f = stats.lognorm(s=s, scale=np.exp(eta)).logpdf(x)
                lo = np.log(extras["lower"]) if "lower" in extras else None
                hi = np.log(extras["upper"]) if "upper" in extras else None
            # eta's rounding (eps |eta|) moves z = (t - eta) / s by eps |eta| / s, and -z^2 / 2
            # (the log density's and a far tail's log-probability's, which cancel under
            # truncation) by |z| times that: at s = 3e-7, z = 2600 the two paths' z^2 / 2 of
            # 3.4e6 differ by 7e-7 (Hypothesis found it; |eta| / s alone allowed 4.6e-7)
            z = np.abs(((np.log(x) if family == "lognormal" else x) - eta) / s)
            scale = np.abs(f) + (1.0 + z) * np.abs(eta) / s
            if variant == "trunc":
                f = f - _ref_log_range((lo - eta) / s, (hi - eta) / s)
        elif family == "poisson":
            f = stats.poisson.logpmf(x, np.exp(eta))
            scale = np.abs(x * eta) + np.exp(eta) + special.gammaln(x + 1)
        else:
            phi, mu = draws["phi"][:, None], np.exp(eta)
            f = np.where(
                phi > 1e10, stats.poisson.logpmf(x, mu), stats.nbinom.logpmf(x, phi, phi / (phi + mu))
            )  # fmt: skip
            scale = (
                special.gammaln(x + phi) + np.abs(special.gammaln(phi)) + special.gammaln(x + 1)
                + (x + phi) * np.abs(np.logaddexp(np.log(phi), eta)) + x * np.abs(eta)
                + phi * np.abs(np.log(phi))
            )  # fmt: skip
        if variant == "censor":
            f = np.clip(extras["alpha"] * f, -bound, bound)
    return f, 1.0 + scale


def _reduce(g, c):
    a = np.abs(g)
    a = np.where(np.isnan(a), np.inf, a)
    with np.errstate(invalid="ignore"):
        return a.max(axis=0), (c * a).max(axis=1), g @ c


def _close(got, want, tol):
    got, want = np.asarray(got), np.asarray(want)
    assert np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(
        np.isnan(got), np.isnan(want)
    )
    ok = np.isfinite(want)
    assert np.all(np.abs(got[ok] - want[ok]) <= 1e-9 * np.abs(want[ok]) + tol[ok])


# -- random models, data, draws ------------------------------------------------------------------
def _case(family, variant, seed, n, m, p, log_sigma, outlier, big):
    rng = np.random.default_rng(seed)
    Z = rng.normal(0, 1, (n, p))
    draws = {"intercept": rng.normal(0, 1, m), "beta": rng.normal(0, 0.5, (m, p))}
    if family in ("normal", "lognormal"):
        draws["sigma"] = 10.0 ** rng.uniform(log_sigma - 0.5, log_sigma + 0.5, m)
        y = rng.normal(0, 1, n) + outlier * rng.choice([-1.0, 0.0, 1.0], n)
        x = np.exp(y) if family == "lognormal" else y
    else:
        draws["intercept"] += np.log1p(big) * 0.5
        x = np.floor(rng.uniform(0, 1, n) ** 3 * big)
        x[rng.uniform(size=n) < 0.3] = 0.0  # zero counts
        if family == "negbin":
            draws["phi"] = 10.0 ** rng.uniform(-1.5, 11, m)  # includes PyMC's Poisson limit
    extras = {}
    if variant == "trunc":
        if family == "lognormal":
            lo = x * rng.choice([0.0, 0.4, 0.6, 1.0], n)
            hi = x * rng.choice([1.0, 1.2, 1.8, np.inf], n)
        else:
            lo = x - rng.choice([0.0, 0.5, 3.0, np.inf], n)
            hi = x + rng.choice([0.1, 1.0, 40.0, np.inf], n)
        extras = {"lower": lo, "upper": hi}
    elif variant == "censor":
        extras = {"alpha": rng.uniform(0, 1, n)}
    c = rng.uniform(0, 1, n) * (rng.uniform(size=n) > 0.1)  # some zero coefficients
    return x, Z, draws, extras, c


PATHS = pytest.mark.parametrize("dense", [False, True], ids=["numba", "numpy"])


@PATHS
@pytest.mark.parametrize(("family", "variant"), CASES)
@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 700),
    m=st.integers(1, 12),
    p=st.integers(0, 3),
    log_sigma=st.floats(-6, 1.5),
    outlier=st.sampled_from([0.0, 5.0, 60.0]),
    big=st.sampled_from([1.0, 30.0, 1e6]),
    n_chunks=st.integers(1, 5),
)
# a far tail under truncation at tiny sigma (z = 2600): the tolerance's conditioning term
@example(seed=0, n=419, m=8, p=0, log_sigma=-6.0, outlier=0.0, big=1.0, n_chunks=1)
def test_fused_equals_brute_force(
    family, variant, dense, seed, n, m, p, log_sigma, outlier, big, n_chunks
):
    x, Z, draws, extras, c = _case(family, variant, seed, n, m, p, log_sigma, outlier, big)
    preds = tuple(f"z{j}" for j in range(p))
    kernel = BlockKernel(family, "y", preds, VARIANT[variant], 2.5, dense=dense)
    arrays = {"y": x, **{k: Z[:, j] for j, k in enumerate(preds)}}
    g, scale = _brute(family, variant, draws, x, Z, extras, 2.5)
    with pytest.MonkeyPatch.context() as mp:  # any record chunking gives the same result
        mp.setattr(glm, "chunks", lambda n: n_chunks)
        red = kernel.reduce_abs(draws, arrays, c, **extras)
        got_sum = kernel.reduce_sum(draws, arrays, c, **extras)
    want_rec, want_draw, want_sum = _reduce(g, c)
    # SciPy's nbinom.logpmf itself loses ~1e-13 of the cancelling terms at phi ~ 1e9, x ~ 1e6
    scale = scale * (1e-12 if family == "negbin" else 1e-13)
    _close(red.per_record, want_rec, scale.max(axis=0))
    _close(red.per_draw, want_draw, scale.max(axis=1))
    _close(kernel.values(draws, arrays, **extras), g, scale)
    _close(got_sum, want_sum, (scale * c).sum(axis=1))


@PATHS
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31), cuts=st.lists(st.integers(1, 299), max_size=4))
def test_blocks_combine_by_concatenation_and_max(dense, seed, cuts):
    """The Dask contract: per_record concatenates, per_draw takes the max, sums add."""
    x, Z, draws, extras, c = _case("lognormal", "trunc", seed, 300, 7, 2, 0.0, 5.0, 1.0)
    kernel = BlockKernel("lognormal", "y", ("a", "b"), glm.TRUNC, dense=dense)
    arrays = {"y": x, "a": Z[:, 0], "b": Z[:, 1]}
    full = kernel.reduce_abs(draws, arrays, c, **extras)
    edges = [0, *sorted(set(cuts)), 300]
    parts, sums = [], []
    for lo, hi in itertools.pairwise(edges):
        sl = {k: v[lo:hi] for k, v in arrays.items()}
        ex = {k: v[lo:hi] for k, v in extras.items()}
        parts.append(kernel.reduce_abs(draws, sl, c[lo:hi], **ex))
        sums.append(kernel.reduce_sum(draws, sl, c[lo:hi], **ex))
    np.testing.assert_array_equal(np.concatenate([q.per_record for q in parts]), full.per_record)
    np.testing.assert_array_equal(np.max([q.per_draw for q in parts], axis=0), full.per_draw)
    np.testing.assert_allclose(
        np.sum(sums, axis=0), kernel.reduce_sum(draws, arrays, c, **extras), rtol=1e-12
    )


def test_log_ndtr_and_range_match_scipy_in_both_tails():
    z = np.concatenate([np.linspace(-45, 40, 8501), [-np.inf, np.inf, -1e200, -20.0, -1.0]])
    got = np.array([log_ndtr(v) for v in z])
    want = special.log_ndtr(z)
    ok = np.abs(want) > 1e-300  # denormal noise far in the right tail
    np.testing.assert_allclose(got[ok], want[ok], rtol=2e-13)  # erfc: ~1e-14 relative
    np.testing.assert_allclose(got[~ok], want[~ok], rtol=0, atol=1e-300)
    za = np.array([-50.0, -3, 0.5, 30, -np.inf, 2, 37.0])
    zb = np.array([-49.0, 3, 0.6, 31, np.inf, np.inf, 38.0])
    got = np.array([log_normal_range(a, b) for a, b in zip(za, zb, strict=True)])
    np.testing.assert_allclose(got, _ref_log_range(za, zb), rtol=1e-13)
    assert np.all(np.isfinite(got))  # neither tail cancels
    np.testing.assert_allclose(fused.dense.log_normal_range(za, zb), got, rtol=1e-14)


@pytest.mark.parametrize(("family", "variant"), CASES)
def test_numpy_and_numba_paths_agree_and_the_choice_is_by_size(family, variant, monkeypatch):
    x, Z, draws, extras, c = _case(family, variant, 5, 400, 9, 2, 0.0, 5.0, 30.0)
    arrays = {"y": x, "a": Z[:, 0], "b": Z[:, 1]}
    kernels = [BlockKernel(family, "y", ("a", "b"), VARIANT[variant], 2.5, dense=d) for d in (0, 1)]
    slow, fast = (k.reduce_abs(draws, arrays, c, **extras) for k in kernels)
    np.testing.assert_allclose(fast.per_record, slow.per_record, rtol=1e-13)
    np.testing.assert_allclose(fast.per_draw, slow.per_draw, rtol=1e-13)
    if family in ("normal", "lognormal") and variant != "trunc":  # + and x only: same bits
        np.testing.assert_array_equal(fast.per_record, slow.per_record)
    assert fused.dense_for(2000, 4000) and not fused.dense_for(2000, 4200)
    auto = BlockKernel(family, "y", ("a", "b"), VARIANT[variant], 2.5)
    calls = []
    monkeypatch.setattr(fused.dense, "abs_reduce", lambda *a: calls.append(1) or (0, 0))
    monkeypatch.setattr(fused, "DENSE_MAX", 400 * 9)  # n x M at the limit: NumPy
    auto._run(auto.data(arrays), draws, c, extras, False)
    monkeypatch.setattr(fused, "DENSE_MAX", 400 * 9 - 1)  # one record-draw more: Numba
    auto._run(auto.data(arrays), draws, c, extras, False)
    assert calls == [1]


def test_nan_log_density_is_unbounded_and_zero_weight_propagates_nan():
    kernel = BlockKernel("normal", "y", (), glm.F)
    draws = {"intercept": np.array([0.0, 0.0]), "sigma": np.array([1.0, -1.0])}  # bad sigma
    red = kernel.reduce_abs(draws, {"y": np.array([0.0, 1.0])}, np.array([0.0, 1.0]))
    np.testing.assert_array_equal(red.per_record, [np.inf, np.inf])
    assert np.isnan(red.per_draw[1]) and red.per_draw[0] == pytest.approx(
        0.5 + np.log(2 * np.pi) / 2
    )


def test_which_kernels_apply():
    lognormal = LogNormalRegression("x", ["z"])
    poisson = PoissonRegression("k")
    rt = RangeTruncated(np.zeros(2), np.ones(2))
    assert block_kernel(lognormal, rt).variant == glm.TRUNC
    assert block_kernel(poisson, rt) is None  # count log-CDFs: generic path
    assert block_kernel(poisson, Censored(1.0)).bound == 1.0
    assert block_kernel(poisson, RangeAveraged(np.zeros(2))).variant == glm.F
    assert block_kernel(object(), Unrestricted()) is None


def test_bad_block_input_is_refused():
    kernel = BlockKernel("normal", "y", ("z",), glm.TRUNC)
    draws = {"intercept": np.zeros(2), "beta": np.zeros((2, 1)), "sigma": np.ones(2)}
    y = np.zeros(3)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['z'\]"):
        kernel.reduce_abs(draws, {"y": y}, np.ones(3), lower=y, upper=y)
    with pytest.raises(ValueError, match=r"free variable\(s\) \['sigma'\]"):
        kernel.reduce_abs({"intercept": np.zeros(2), "beta": np.zeros((2, 1))}, {"y": y, "z": y},
                          np.ones(3), lower=y, upper=y)  # fmt: skip
    with pytest.raises(ValueError, match=r"input\(s\) \['upper'\]"):
        kernel.reduce_abs(draws, {"y": y, "z": y}, np.ones(3), lower=y)
    with pytest.raises(ValueError, match="coefficient"):
        kernel.reduce_abs(draws, {"y": y, "z": y}, -np.ones(3), lower=y, upper=y)
    with pytest.raises(ValueError, match=r"'lower' must have shape \(3,\)"):
        kernel.reduce_abs(draws, {"y": y, "z": y}, np.ones(3), lower=y[:2], upper=y)


# -- fused == generic PyTensor graph, on the built models ----------------------------------------
def _frame(family, rng, n=60):
    z = rng.normal(0, 1, n)
    if family == "normal":
        return pd.DataFrame({"z": z, "y": 1 + 2 * z + rng.normal(0, 1, n)})
    if family == "lognormal":
        return pd.DataFrame({"z": z, "y": np.exp(1 + z + rng.normal(0, 1, n))})
    return pd.DataFrame({"z": z, "y": rng.poisson(np.exp(1 + 0.5 * z)) * (1 + (z > 1) * 40)})


def _draws(family, rng, m=25):
    d = {"intercept": rng.normal(1, 0.3, m), "beta": rng.normal(0.5, 0.3, (m, 1))}
    if family in ("normal", "lognormal"):
        d["sigma"] = rng.uniform(0.05, 2, m)
    if family == "negbin":
        d["phi"] = rng.uniform(0.3, 30, m)
    return d


@pytest.mark.parametrize(
    ("family", "decomp"),
    [
        ("normal", "truncated"),
        ("lognormal", "truncated"),
        ("poisson", "censored"),
        ("negbin", "weighted"),
    ],
)
def test_fused_equals_generic_record_function(family, decomp, rng):
    model = MODELS[family]("y", ["z"])
    df = _frame(family, rng)
    prepared = model.prepare(df)
    base = model.build(prepared)
    y = df["y"].to_numpy(float)
    decomposition = {
        "truncated": RangeTruncated(y * 0.5 if family == "lognormal" else y - 1, y * 1.5 + 1)
        if family == "lognormal"
        else RangeTruncated(y - 1, y + 1.5),
        "censored": Censored(3.0),
        "weighted": Unrestricted(),
    }[decomp]
    alpha = rng.uniform(0, 1, len(df))
    loglik = record_function(model, base)
    assert isinstance(loglik, FusedFunction)
    fused = sensitive_function(decomposition, model, base, loglik)
    generic = decomposition.generic_function(model, base, RecordFunction(base, model.observed))
    assert isinstance(fused, FusedFunction) and isinstance(generic, RecordFunction)
    draws = _draws(family, rng)
    coef, extras = decomposition.coefficient(alpha), decomposition.extras(alpha)
    # PyTensor's erfcx-based normal log-CDF is accurate to ~3e-8 relative only (checked
    # against mpmath: the fused kernel and SciPy agree with it to 1e-15)
    rtol = 1e-7 if decomp == "truncated" else 1e-12
    tol = {"rtol": rtol, "atol": rtol}
    want = reduce_abs(generic, draws, coef, **extras)
    got = reduce_abs(fused, draws, coef, **extras)
    np.testing.assert_allclose(got.per_record, want.per_record, **tol)
    np.testing.assert_allclose(got.per_draw, want.per_draw, **tol)
    sums = [reduce_sum(f, draws, coef, **extras) for f in (fused, generic)]
    np.testing.assert_allclose(*sums, **tol)
    rows = [f(draws, slice(5, 17), **extras) for f in (fused, generic)]
    np.testing.assert_allclose(*rows, **tol)


def test_count_truncation_and_user_models_use_the_generic_path(rng):
    model = PoissonRegression("y", ["z"])
    df = _frame("poisson", rng)
    base = model.build(model.prepare(df))
    y = df["y"].to_numpy(float)
    sens = sensitive_function(RangeTruncated(y, y + 2), model, base, record_function(model, base))
    assert isinstance(sens, RecordFunction)
    assert sens._compiled is None  # compiled lazily, on first use


def test_mechanism_uses_the_fused_accountant_and_equals_generic(sim_result, sim_small):
    """The mechanism's risk and Lipschitz bounds (fused) equal the generic PyTensor path."""
    model, base = sim_result.model, sim_result.built
    loglik = record_function(model, base)  # what the mechanism composes on its own model
    assert isinstance(loglik, FusedFunction)
    free = [rv.name for rv in base.free_RVs]
    generic = RecordFunction(base, model.observed)
    from pseudopost.models.loglik import stack_draws

    draws = stack_draws(sim_result.posterior, free)
    alpha = sim_result.alpha.to_numpy()
    lip = alpha * reduce_abs(generic, draws).per_record
    np.testing.assert_allclose(sim_result.lipschitz.to_numpy(), lip, rtol=1e-12)
    assert sim_result.epsilon == pytest.approx(2 * lip.max(), rel=1e-12)
    risk_draws = stack_draws(sim_result.datatree["risk_posterior"].to_dataset(), free)
    np.testing.assert_allclose(
        sim_result.risk.to_numpy(), reduce_abs(generic, risk_draws).per_record, rtol=1e-12
    )
    x = sim_small["x"].to_numpy()
    decomps = (RangeTruncated(0.4 * x, 1.8 * x), RangeAveraged(alpha / 2), Censored(2.0))
    for decomp in decomps:
        fused = sensitive_function(decomp, model, base, loglik)
        gen = decomp.generic_function(model, base, generic)
        coef, extras = decomp.coefficient(alpha), decomp.extras(alpha)
        a = reduce_abs(fused, draws, coef, **extras)
        b = reduce_abs(gen, draws, coef, **extras)
        rtol = 1e-7 if isinstance(decomp, RangeTruncated) else 1e-12  # PyTensor's erfcx
        np.testing.assert_allclose(a.per_record, b.per_record, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(a.per_draw, b.per_draw, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", ["weighted", "truncated", "censored"])
def test_account_equals_its_block_function_over_any_blocks(name, rng):
    """One accountant: account() on all records equals account_block() on record blocks joined
    by combine_blocks(), bit for bit (the Dask backend's contract)."""
    import dataclasses

    from pseudopost.privacy.lipschitz import local_epsilon

    model = NormalRegression("y", ["z"])
    df = _frame("normal", rng, n=200)
    prepared = model.prepare(df)
    base = model.build(prepared)
    y = df["y"].to_numpy()
    decomp = {
        "weighted": Unrestricted(),
        "truncated": RangeTruncated(y - 1.0, y + 1.0),
        "censored": Censored(1.5),
    }[name]
    draws, alpha = _draws("normal", rng), rng.uniform(0.0, 1.0, 200)
    whole = account(sensitive_function(decomp, model, base, record_function(model, base)),
                    draws, alpha, decomp)  # fmt: skip
    kernel = dataclasses.replace(block_kernel(model, decomp), dense=fused.dense_for(200, 25))
    c, extras = decomp.coefficient(alpha), decomp.extras(alpha)
    parts = [
        account_block(
            kernel,
            draws,
            {k: v[s] for k, v in prepared.arrays.items()},
            c[s],
            {k: v[s] for k, v in extras.items()},
        )
        for s in (slice(0, 7), slice(7, 150), slice(150, 200))
    ]
    np.testing.assert_array_equal(
        c * np.concatenate([p.per_record for p in parts]), whole.lipschitz
    )
    per_draw = combine_blocks([p.per_draw for p in parts])
    np.testing.assert_array_equal(per_draw, whole.per_draw)
    assert local_epsilon(per_draw) == whole.epsilon
