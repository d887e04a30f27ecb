"""Synthesis by inversion: a part's ``sample`` is its ready model's ``sample_outcome`` for the
same uniforms; the conjugate part's exact draws follow the Dirichlet closed form."""

from __future__ import annotations

import numpy as np
import pytest

from pseudopost.models import HurdleNegativeBinomial
from pseudopost.models.parts import PartData, make_part

from ..._reference.part_models import ready_model


def _inputs(case, rng, n=300):
    part = case.part
    X = rng.integers(0, 3, (n, part.p)).astype(float) + rng.normal(scale=0.1, size=(n, part.p))
    u = rng.uniform(size=n)
    params = {k: np.asarray(v) for k, v in case.truth.items()}
    return params, X, u


def test_sample_equals_the_ready_models_inversion(case):
    part = case.part
    if part.family == "zero_truncated_negative_binomial":
        pytest.skip("checked against the hurdle below")
    params, X, u = _inputs(case, np.random.default_rng(11))
    ready = ready_model(part)
    predictors = {f"x{j}": X[:, j] for j in range(part.p)}
    expected = ready.sample_outcome(params, predictors, u[:, None])
    got = part.sample(params, X, u)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(part.sample(params, X, u[:, None]), expected)


def test_zero_truncated_sample_is_the_hurdles_positive_branch(reference):
    case = reference["build_case"]("zero_truncated_negative_binomial")
    part = case.part
    params, X, u = _inputs(case, np.random.default_rng(12))
    hurdle = HurdleNegativeBinomial("y", ["x0", "x1"])
    hp = {**params, "psi_intercept": np.asarray(0.0), "psi_beta": np.zeros(2)}
    uu = np.column_stack([np.full(u.size, 0.75), u])  # u_1 > 1 - psi = 0.5: the count branch
    expected = hurdle.sample_outcome(hp, {"x0": X[:, 0], "x1": X[:, 1]}, uu)
    got = part.sample(params, X, u)
    np.testing.assert_array_equal(got, expected)
    assert got.min() >= 1


def test_sample_checks_its_inputs(case):
    part = case.part
    params, X, u = _inputs(case, np.random.default_rng(13), n=5)
    with pytest.raises(ValueError, match="strictly inside"):
        part.sample(params, X, np.r_[u[:4], 1.0])
    with pytest.raises(ValueError, match="'X' must have shape"):
        part.sample(params, np.zeros((5, part.p + 1)), u)
    name = part.layout.names[0]
    with pytest.raises(ValueError, match=f"lacks '{name}'"):
        part.sample({k: v for k, v in params.items() if k != name}, X, u)


def test_sample_recovers_the_outcome_distribution(case, reference):
    """Inversion draws have the simulated data's distribution (a check independent of the
    ready models): means within 5 standard errors."""
    part = case.part
    rng = np.random.default_rng(14)
    params, X, _ = _inputs(case, rng, n=4000)
    ours = part.sample(params, X, rng.uniform(size=4000))
    theirs = reference["simulate"](part, params, X, rng)
    if part.family == "lognormal":
        ours, theirs = np.log(ours), np.log(theirs)
    se = np.sqrt(ours.var() / ours.size + theirs.var() / theirs.size)
    assert abs(ours.mean() - theirs.mean()) < 5 * se


def test_exact_draws_follow_the_dirichlet_closed_form(reference):
    case = reference["build_case"]("dirichlet_categorical")
    part, data, w = case.part, case.data, case.weights
    stats = part.statistics(data, w)
    counts = np.bincount(data.y[data.active].astype(int), weights=w[data.active], minlength=3)
    np.testing.assert_allclose(stats.arrays["counts"], counts, rtol=1e-14)
    alpha = part.concentration + counts
    a0 = alpha.sum()
    m = 40_000
    draws = part.exact_draws(stats, m, np.random.default_rng(15))["p"]
    assert draws.shape == (m, 3)
    mean, var = alpha / a0, alpha * (a0 - alpha) / (a0**2 * (a0 + 1))
    np.testing.assert_array_less(np.abs(draws.mean(0) - mean), 5 * np.sqrt(var / m))
    # the sample variance of m draws has sd about var * sqrt(2 / m) (near-normal marginals)
    np.testing.assert_array_less(np.abs(draws.var(0) - var), 5 * var * np.sqrt(2 / m))
    again = part.exact_draws(stats, m, np.random.default_rng(15))["p"]
    np.testing.assert_array_equal(draws, again)


def test_only_conjugate_parts_have_exact_draws(reference):
    case = reference["build_case"]("categorical_status")
    stats = case.part.statistics(case.data, case.weights)
    assert not case.part.conjugate
    with pytest.raises(NotImplementedError, match="no conjugate"):
        case.part.exact_draws(stats, 10, np.random.default_rng(0))
    dc = make_part("dirichlet_categorical", "y", n_levels=2)
    s = dc.statistics(
        PartData(np.array([0.0, 1.0]), np.zeros((2, 0)), np.ones(2, bool)), np.ones(2)
    )
    with pytest.raises(ValueError, match="n_draws"):
        dc.exact_draws(s, 0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        dc.exact_draws(s, 5, 3)
