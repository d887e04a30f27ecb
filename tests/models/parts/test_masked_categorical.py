"""The masked categorical part (structural zeros): SciPy's renormalised softmax record by
record, the grouped density and its gradient, equality with the plain categorical when every
level is allowed, inversion that never draws a forbidden level, and its checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from pseudopost.models.parts import PartData, make_part

from ._hessian import assert_hessian_matches_gradient

K = 4


def _case(n=200, seed=0):
    rng = np.random.default_rng(seed)
    Z = np.column_stack([rng.integers(0, 3, n), rng.normal(size=n).round(1)]).astype(float)
    mask = np.ones((n, K))
    forbid = rng.integers(0, K, n)
    some = rng.random(n) < 0.6
    mask[some, forbid[some]] = 0.0  # one level forbidden on 60 % of the records
    mask[rng.random(n) < 0.1, 1:] = 0.0  # and only level 0 allowed on some
    mask[:, 0] = np.where(mask[:, 1:].sum(1) == 0, 1.0, mask[:, 0])
    logits = np.column_stack([np.zeros(n), 0.3 + Z @ rng.normal(size=(2, K - 1))])
    logits = np.where(mask > 0, logits, -np.inf)
    y = np.argmax(logits + rng.gumbel(size=logits.shape), axis=1).astype(float)
    active = rng.random(n) < 0.85
    X = np.column_stack([Z, mask])
    return PartData(np.where(active, y, np.nan), X, active), rng.uniform(0, 1, n)


def _part(p=2):
    return make_part("masked_categorical", "y", [f"z{j}" for j in range(p)], n_levels=K)


def _scipy_loglik(params, Z, mask, y):
    logits = np.column_stack(
        [np.zeros(len(Z)), params["intercept"] + Z @ np.asarray(params["beta"])]
    )
    logits = np.where(mask > 0, logits, -np.inf)
    return special.log_softmax(logits, axis=1)[np.arange(len(y)), y.astype(int)]


def _points(part, seed, k=5):
    rng = np.random.default_rng(seed)
    return [part.initial_point(0) + rng.normal(scale=0.7, size=part.layout.size) for _ in range(k)]


def test_loglik_is_the_renormalised_softmax_record_by_record():
    data, _ = _case()
    part = _part()
    xs = np.array(_points(part, 1))
    draws = part.layout.unpack(xs)
    got = part.loglik(draws, data)
    act = data.active
    np.testing.assert_array_equal(got[:, ~act], 0.0)
    for m in range(len(xs)):
        params = {k: v[m] for k, v in draws.items()}
        ref = _scipy_loglik(params, data.X[act, :2], data.X[act, 2:], data.y[act])
        np.testing.assert_allclose(got[m, act], ref, rtol=1e-12, atol=1e-13)


def test_density_value_and_gradient_against_ungrouped_reference():
    data, w = _case()
    part = _part()
    density = part.log_density(part.statistics(data, w))
    act = data.active
    s = part.prior_scale
    for x in _points(part, 2):
        v = part.layout.unpack(x)
        ref = w[act] @ _scipy_loglik(v, data.X[act, :2], data.X[act, 2:], data.y[act])
        ref += stats.norm.logpdf(v["intercept"], 0, 2 * s).sum()
        ref += stats.norm.logpdf(v["beta"], 0, s).sum()
        lp, grad = density.logp_grad(x)
        assert lp == pytest.approx(ref, rel=1e-11)
        h = 1e-6
        fd = [
            (density.logp_grad(x + h * e)[0] - density.logp_grad(x - h * e)[0]) / (2 * h)
            for e in np.eye(x.size)
        ]
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)


def test_statistics_add_over_blocks():
    data, w = _case()
    part = _part()
    whole = part.statistics(data, w)
    a = part.statistics(data.take(slice(0, 70)), w[:70])
    b = part.statistics(data.take(slice(70, None)), w[70:])
    x = _points(part, 3)[0]
    assert part.log_density(a + b).logp_grad(x)[0] == pytest.approx(
        part.log_density(whole).logp_grad(x)[0], rel=1e-12
    )
    # no records: the identity of + (its design rows carry the mask's K columns too)
    empty = part.empty_statistics()
    assert empty.arrays["rows"].shape == (0, part.width) == (0, 2 + K)
    assert part.log_density(empty + whole).logp_grad(x)[0] == pytest.approx(
        part.log_density(whole).logp_grad(x)[0], rel=1e-12
    )


def test_all_allowed_equals_the_plain_categorical():
    data, w = _case()
    plain = make_part("categorical", "y", ["z0", "z1"], n_levels=K)
    Z = data.X[:, :2]
    # outcomes of the plain part (no mask) and an all-ones mask
    all_ok = PartData(data.y, np.column_stack([Z, np.ones((data.n, K))]), data.active)
    masked = _part()
    for x in _points(masked, 4):
        a = masked.log_density(masked.statistics(all_ok, w)).logp_grad(x)
        b = plain.log_density(plain.statistics(PartData(data.y, Z, data.active), w)).logp_grad(x)
        assert a[0] == pytest.approx(b[0], rel=1e-12)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-10, atol=1e-12)
        params = masked.layout.unpack(x)
        u = np.random.default_rng(5).uniform(size=data.n)
        np.testing.assert_array_equal(
            masked.sample(params, all_ok.X, u), plain.sample(params, Z, u)
        )


def test_inversion_never_draws_a_forbidden_level_and_follows_the_probabilities():
    rng = np.random.default_rng(6)
    part = _part(p=0)
    n = 20000
    mask = np.ones((n, K))
    mask[: n // 2, 2] = 0.0
    mask[n // 2 :, 3] = 0.0
    mask[:10, :] = [0.0, 0.0, 0.0, 1.0]  # only the last level allowed
    params = {"intercept": np.array([0.5, -0.2, 0.1])}
    u = rng.uniform(size=n)
    u[:5] = 1 - 1e-16  # rounding at the top cannot pass the last allowed level
    y = part.sample(params, mask, u).astype(int)
    assert mask[np.arange(n), y].all()
    assert (y[:10] == 3).all()
    logits = np.concatenate([[0.0], params["intercept"]])
    probs = special.softmax(np.where(mask[n // 2] > 0, logits, -np.inf))
    share = np.bincount(y[n // 2 :], minlength=K) / (n - n // 2)
    se = np.sqrt(probs * (1 - probs) / (n - n // 2))
    assert np.all(np.abs(share - probs) < 4 * se + 1e-12)


def test_checks_name_the_record():
    data, w = _case()
    part = _part()
    with pytest.raises(ValueError, match="followed by 4 allowed-level columns"):
        part.statistics(PartData(data.y, data.X[:, :3], data.active), w)
    X = data.X.copy()
    i = int(np.flatnonzero(data.active)[0])
    X[i, 2 + int(data.y[i])] = 0.0
    with pytest.raises(ValueError, match=f"record {i} has level .* which its mask forbids"):
        part.statistics(PartData(data.y, X, data.active), w)
    X = data.X.copy()
    X[i, 2:] = 0.0
    with pytest.raises(ValueError, match=f"record {i} has no allowed level"):
        part.statistics(PartData(data.y, X, data.active), w)
    with pytest.raises(ValueError, match="no allowed level to draw"):
        part.sample(part.layout.unpack(part.initial_point(0)), X[i : i + 1], np.array([0.5]))


@pytest.mark.parametrize("p", [2, 0])
def test_exact_hessian_equals_differences_of_the_gradient(p):
    """The masked multinomial logit's Hessian (prior included) against central differences of
    its gradient, away from the mode, with forbidden levels on most records; symmetric."""
    data, w = _case()
    if p == 0:
        data = PartData(data.y, data.X[:, 2:], data.active)
    part = _part(p)
    density = part.log_density(part.statistics(data, w))
    assert density.has_hessian
    assert_hessian_matches_gradient(density, np.random.default_rng(3))
