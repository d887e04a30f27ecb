"""The cumulative part (ordered logit over a bounded grid's points), shift only and
location-scale: its weighted log density and gradient against an ungrouped SciPy computation
with its own prior, its exact Hessian against differences of its gradient, per-record
log-likelihood against SciPy, sparse statistics that add over blocks, synthesis by bisection
equal to the ordinal part's inversion (shift only) and to the location-scale distribution, and
a fit that recovers a known spread effect. The centred spread (``scale_centre``) in every check
of the location-scale part, and as the reparametrisation it is."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from pseudopost.fitting.parts import sample_part
from pseudopost.models.parts import CumulativePart, PartData, make_part

from ..._reference.part_models import ready_model

K, N = 9, 300


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(21)
    X = np.column_stack([rng.integers(0, 3, N), np.round(rng.normal(size=N), 1)]).astype(float)
    y = np.clip(np.rint(rng.logistic(size=N) * 1.5 + 4 + X @ [0.8, -0.6]), 0, K - 1)
    y[y == 2] = 3  # an empty inner level
    y[y == K - 1] = K - 2  # and an empty top level
    active = rng.random(N) < 0.8
    w = rng.uniform(0, 1, N)
    w[rng.random(N) < 0.1] = 0.0
    part = make_part("cumulative", "y", ["a", "b"], n_levels=K, fused=False)
    data = PartData(np.where(active, y, np.nan), np.where(active[:, None], X, np.nan), active)
    return part, data, w


def _scipy_loglik(params, y, X, centre=0.0):
    """log[F((c_k - eta) s) - F((c_{k-1} - eta) s)], s = exp(-(x - centre)'gamma) (1 without
    gamma)."""
    c = np.concatenate([[-np.inf], params["cutpoints"], [np.inf]])
    eta = X @ params["beta"]
    s = np.exp(-((X - centre) @ params["gamma"])) if "gamma" in params else 1.0
    k = y.astype(int)
    return np.log(stats.logistic.cdf((c[k + 1] - eta) * s) - stats.logistic.cdf((c[k] - eta) * s))


def _scipy_density(part, data, w, x):
    v = part.layout.unpack(x)
    act = data.active
    ll = w[act] @ _scipy_loglik(v, data.y[act], data.X[act], part.centre)
    s = part.prior_scale
    centres = special.logit(np.arange(1, K) / K)  # equal probabilities of the K points
    prior = stats.norm.logpdf(v["cutpoints"], centres, part.cut_scale * s).sum()
    prior += stats.norm.logpdf(v["beta"], 0, s).sum()
    if "gamma" in v:
        prior += stats.norm.logpdf(v["gamma"], 0, 0.4 * s).sum()
    a = (K - 2) // 2  # the anchor: the middle cutpoint is free, the gaps hang off it
    return ll + prior + x[: K - 1].sum() - x[a]  # the log-Jacobian of the gaps


SCALED = pytest.mark.parametrize("scaled", [False, True, "centred"],
                                 ids=["shift", "location-scale", "centred"])
#: a centre of the log-spread's design (scale_centre) for the "centred" cases
CENTRE = (0.5, -0.3)


def _make(scaled, **kw):
    """The case's cumulative part: shift only, location-scale, or location-scale centred."""
    centre = {"scale_centre": CENTRE} if scaled == "centred" else {}
    return make_part("cumulative", "y", ["a", "b"], n_levels=K, scaled=bool(scaled), **centre,
                     **kw)  # fmt: skip


@SCALED
@pytest.mark.parametrize("fused", [False, True], ids=["numpy", "numba"])
def test_density_and_gradient_equal_scipy_ungrouped(case, fused, scaled):
    part, data, w = case
    assert isinstance(part, CumulativePart) and part.layout.size == K - 1 + 2
    part = _make(scaled, fused=fused)
    assert part.layout.names == ["cutpoints", "beta", "gamma"][: 3 if scaled else 2]
    density = part.log_density(part.statistics(data, w))
    rng = np.random.default_rng(2)
    for _ in range(5):
        x = part.initial_point(0) + rng.normal(scale=0.5, size=part.layout.size)
        v, g = density.logp_grad(x)
        assert v == pytest.approx(_scipy_density(part, data, w, x), rel=1e-11, abs=1e-9)
        # the gradient against differences of the density, which equals SciPy's at every x
        # (SciPy's difference of CDFs loses digits where both are near 1: its own differences
        # are off by 5e-3 at a centred case's values)
        num = np.array([(density.logp_grad(x + h)[0] - density.logp_grad(x - h)[0]) / 2e-6
                        for h in 1e-6 * np.eye(x.size)])  # fmt: skip
        assert density.logp_grad(x + 1e-6)[0] == pytest.approx(
            _scipy_density(part, data, w, x + 1e-6), rel=1e-11, abs=1e-9)
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-5)


@SCALED
def test_exact_hessian_equals_differences_of_the_gradient(case, scaled):
    part, data, w = case
    part = _make(scaled, fused=False)
    density = part.log_density(part.statistics(data, w))
    x = part.initial_point(0) + np.random.default_rng(3).normal(scale=0.4, size=part.layout.size)
    H = density.hessian(x)
    h = 1e-6
    num = np.array([(density.logp_grad(x + e)[1] - density.logp_grad(x - e)[1]) / (2 * h)
                    for e in h * np.eye(x.size)])  # fmt: skip
    np.testing.assert_allclose(H, H.T, atol=1e-9)
    np.testing.assert_allclose(H, num, rtol=1e-5, atol=1e-5)


def test_likelihood_is_the_ordinal_parts(case):
    """Same likelihood and gradient as the ordinal part (dense statistics), other prior."""
    part, data, w = case
    ordinal = make_part("ordinal", "y", ["a", "b"], n_levels=K)
    a, b = part.statistics(data, w).arrays, ordinal.statistics(data, w).arrays
    values = part.layout.unpack(part.initial_point(0) + 0.3)
    lb, gb = ordinal._loglik_grad(values, b)
    numba = make_part("cumulative", "y", ["a", "b"], n_levels=K, fused=True)
    for p in (part, numba):
        la, ga = p._loglik_grad(values, a)
        assert la == pytest.approx(lb, rel=1e-13)
        for k in ga:
            np.testing.assert_allclose(ga[k], gb[k], rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(part._loglik_hess(values, a), ordinal._loglik_hess(values, b),
                               rtol=1e-11, atol=1e-11)  # fmt: skip


@SCALED
def test_per_record_loglik_equals_scipy(case, scaled):
    part, data, _ = case
    part = _make(scaled)
    rng = np.random.default_rng(4)
    x = part.initial_point(0) + rng.normal(scale=0.3, size=(4, part.layout.size))
    draws = part.layout.unpack(x)
    F = part.loglik(draws, data)
    act = data.active
    for m in range(4):
        v = {k: d[m] for k, d in draws.items()}
        np.testing.assert_allclose(F[m, act], _scipy_loglik(v, data.y[act], data.X[act],
                                                            part.centre), rtol=1e-11)  # fmt: skip
        assert (F[m, ~act] == 0).all()


def test_sparse_statistics_add_and_follow_the_keys(case):
    part, data, w = case
    whole = part.statistics(data, w).arrays
    half = N // 2
    parts = [part.statistics(data.take(s), w[s]) for s in (slice(0, half), slice(half, N))]
    merged = (parts[0] + parts[1]).arrays
    np.testing.assert_array_equal(merged["rows"], whole["rows"])
    np.testing.assert_allclose(merged["w"], whole["w"], rtol=1e-13)
    keep = data.active & (w > 0)
    keys = np.unique(np.column_stack([data.X[keep], data.y[keep]]), axis=0)
    assert whole["rows"].shape == (keys.shape[0], part.p + 1)  # one row per (design row, point)
    assert whole["w"].sum() == pytest.approx(w[keep].sum())


def test_sample_is_the_ordinal_inversion_and_recovers_the_distribution(case):
    part, _, _ = case
    ordinal = make_part("ordinal", "y", ["a", "b"], n_levels=K)
    rng = np.random.default_rng(5)
    params = part.layout.unpack(
        part.initial_point(0) + rng.normal(scale=0.3, size=part.layout.size)
    )
    n = 40_000
    X = np.column_stack([np.ones(n), np.zeros(n)])
    u = rng.uniform(size=n)
    got = part.sample(params, X, u)
    np.testing.assert_array_equal(got, ordinal.sample(params, X, u))
    p = np.exp(_scipy_loglik(params, np.arange(K, dtype=float), np.ones((K, 1)) * [1.0, 0.0]))
    share = np.bincount(got.astype(int), minlength=K) / n
    assert np.all(np.abs(share - p) <= 4 * np.sqrt(p * (1 - p) / n) + 1e-4), (share, p)


def test_location_scale_sample_follows_the_scaled_distribution(case):
    """P(y <= k | x) = sigma((c_k - eta) exp(-zeta)): the draws' shares at two design rows
    whose spreads differ (zeta = 0 and 1.2) match it, and the narrower row's draws are
    more concentrated."""
    part, _, _ = case
    part = make_part("cumulative", "y", ["a", "b"], n_levels=K, scaled=True)
    params = {"cutpoints": np.linspace(-3, 3, K - 1), "beta": np.array([0.5, 0.0]),
              "gamma": np.array([0.6, 0.0])}  # fmt: skip
    rng = np.random.default_rng(6)
    n = 40_000
    sds = []
    for a in (0.0, 2.0):
        X = np.column_stack([np.full(n, a), np.zeros(n)])
        got = part.sample(params, X, rng.uniform(size=n))
        p = np.exp(_scipy_loglik(params, np.arange(K, dtype=float), np.ones((K, 1)) * [a, 0.0]))
        share = np.bincount(got.astype(int), minlength=K) / n
        assert np.all(np.abs(share - p) <= 4 * np.sqrt(p * (1 - p) / n) + 1e-4), (a, share, p)
        sds.append(got.std())
    assert sds[1] > 1.5 * sds[0]  # exp(1.2) = 3.3 times the spread on the logit scale


def test_location_scale_fit_recovers_a_spread_effect():
    """Data from the location-scale model (a binary predictor that widens the spread, gamma =
    0.7, and shifts it, beta = 1): the posterior of the fitted part covers both, and gamma is
    far from 0."""
    rng = np.random.default_rng(7)
    n, k = 3000, 12
    x = rng.integers(0, 2, n).astype(float)
    cut = np.linspace(-2.5, 2.5, k - 1)
    latent = 1.0 * x + np.exp(0.7 * x) * rng.logistic(size=n)
    y = (latent[:, None] > cut).sum(axis=1).astype(float)
    data = PartData(y, x[:, None], np.ones(n, bool))
    part = make_part("cumulative", "y", ["x"], n_levels=k, scaled=True)
    stats_ = part.statistics(data, np.ones(n))
    tree = sample_part(part, stats_, draws=200, tune=200, chains=1, seed=3)
    post = tree["posterior"]
    for name, truth in (("beta", 1.0), ("gamma", 0.7)):
        v = post[name].to_numpy().ravel()
        assert abs(v.mean() - truth) < 4 * v.std() + 0.02, (name, v.mean(), v.std())
    assert abs(post["gamma"].to_numpy().mean()) > 6 * post["gamma"].to_numpy().std()


def test_cutpoints_hang_off_the_middle():
    """``ordered_mid``: the middle free coordinate is a cutpoint, the others log-gaps away from
    it (so the tails' gaps do not move the cutpoints the data hold); round trip."""
    part = make_part("cumulative", "y", (), n_levels=8)
    prm = part.layout["cutpoints"]
    assert prm.transform == "ordered_mid" and prm.anchor == 3
    x = np.array([0.1, -0.2, 0.3, 1.5, 0.0, -1.0, 0.2])
    c = prm.backward(x)
    e = np.exp(x)
    expected = [1.5 - e[0] - e[1] - e[2], 1.5 - e[1] - e[2], 1.5 - e[2], 1.5,
                1.5 + e[4], 1.5 + e[4] + e[5], 1.5 + e[4] + e[5] + e[6]]  # fmt: skip
    np.testing.assert_allclose(c, expected, rtol=1e-14)
    np.testing.assert_allclose(prm.forward(c), x, rtol=1e-12, atol=1e-12)


def test_prior_centres_span_log_k_whatever_k():
    for k in (3, 50, 2000):
        c = make_part("cumulative", "y", (), n_levels=k).centres
        assert c.size == k - 1 and np.all(np.diff(c) > 0)
        assert c[-1] == pytest.approx(np.log(k - 1)) and c[0] == pytest.approx(-c[-1])
    with pytest.raises(NotImplementedError, match="No ready model"):
        ready_model(make_part("cumulative", "y", (), n_levels=3))


@pytest.mark.parametrize("fused", [False, True], ids=["numpy", "numba"])
def test_centred_spread_is_a_reparametrisation(case, fused):
    """zeta = (z - z0)'gamma: the centred part at (c, beta, gamma) has the uncentred part's
    likelihood at (c e^{z0'gamma}, beta e^{z0'gamma}, gamma), per record and summed; its draws
    by inversion are the uncentred part's at those values; a centre of the wrong length is
    refused."""
    _, data, w = case
    centred, plain = _make("centred", fused=fused), _make(True, fused=fused)
    rng = np.random.default_rng(8)
    v = centred.layout.unpack(centred.initial_point(0) + rng.normal(scale=0.4, size=K + 3))
    e = np.exp(np.asarray(CENTRE) @ v["gamma"])
    assert abs(np.log(e)) > 0.05  # the centre matters at these values
    u = {"cutpoints": v["cutpoints"] * e, "beta": v["beta"] * e, "gamma": v["gamma"]}
    a = centred.statistics(data, w).arrays
    if fused:
        a = {**a, **centred.derived(a)}
    assert centred._loglik_grad(v, a)[0] == pytest.approx(plain._loglik_grad(u, a)[0],
                                                          rel=1e-12)  # fmt: skip
    one = {k: x[None] for k, x in v.items()}
    np.testing.assert_allclose(centred.loglik(one, data),
                               plain.loglik({k: x[None] for k, x in u.items()}, data),
                               rtol=1e-11, atol=1e-12)  # fmt: skip
    X, q = data.X[data.active], rng.uniform(size=int(data.active.sum()))
    np.testing.assert_array_equal(centred.sample(v, X, q), plain.sample(u, X, q))
    with pytest.raises(ValueError, match="scale_centre must hold 2 finite values"):
        make_part("cumulative", "y", ["a", "b"], n_levels=K, scaled=True, scale_centre=(1.0,))


def test_no_gamma_without_predictors():
    part = make_part("cumulative", "y", (), n_levels=5, scaled=True)
    assert part.layout.names == ["cutpoints"] and not part.has_scale
