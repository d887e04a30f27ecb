"""Theorem 6.3 (and its zCDP analogue) against a numerical minimiser; pools and conversions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from pseudopost.mechanisms.prism.budget import (
    allocate_budget,
    allocation_objective,
    epsilon_to_rho,
    split_pools,
)
from pseudopost.privacy.noise import zcdp_rho_to_epsilon


def _numerical(a, total, accounting):
    """Minimise the bound over the simplex by SLSQP from the uniform start."""
    m = len(a)
    res = optimize.minimize(
        lambda b: allocation_objective(a, b, accounting=accounting),
        np.full(m, total / m),
        method="SLSQP",
        bounds=[(1e-9, total)] * m,
        constraints=[{"type": "eq", "fun": lambda b: b.sum() - total}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    return res.x, res.fun


@pytest.mark.parametrize("accounting", ["approx", "zcdp"])
@pytest.mark.parametrize("instance", range(6))
def test_closed_form_equals_numerical_minimiser(accounting, instance):
    rng = np.random.default_rng(instance)
    a = rng.lognormal(0.0, 1.5, size=rng.integers(2, 9))
    total = float(rng.uniform(0.2, 4.0))
    closed = allocate_budget(a, total, accounting=accounting)
    num_x, num_f = _numerical(a, total, accounting)
    closed_f = allocation_objective(a, closed, accounting=accounting)
    assert closed.sum() == pytest.approx(total)
    assert closed_f <= num_f * (1 + 1e-7)
    np.testing.assert_allclose(closed, num_x, rtol=2e-3, atol=1e-6)


def test_theorem_6_3_optimal_value():
    a = np.array([1.0, 4.0, 9.0])
    eps = allocate_budget(a, 2.0)
    np.testing.assert_allclose(eps, 2.0 * np.sqrt(a) / np.sqrt(a).sum())
    assert allocation_objective(a, eps) == pytest.approx(np.sqrt(a).sum() ** 2 / 2.0)
    rho = allocate_budget(a, 0.5, accounting="zcdp")
    expected = (a ** (2 / 3)).sum() ** 1.5 / np.sqrt(0.5)
    assert allocation_objective(a, rho, accounting="zcdp") == pytest.approx(expected)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=12), st.floats(0.05, 10.0))
def test_closed_form_never_worse_than_uniform(a, total):
    for acc in ("approx", "zcdp"):
        best = allocation_objective(a, allocate_budget(a, total, accounting=acc), accounting=acc)
        unif = allocation_objective(a, allocate_budget(a, total, method="uniform"), accounting=acc)
        assert best <= unif * (1 + 1e-12)


def test_allocate_budget_bad_input():
    with pytest.raises(ValueError, match="'a'"):
        allocate_budget([1.0, -1.0], 1.0)
    with pytest.raises(ValueError, match="total"):
        allocate_budget([1.0], 0.0)
    with pytest.raises(ValueError, match="accounting"):
        allocate_budget([1.0], 1.0, accounting="rdp")


def test_split_pools_defaults_and_reallocation():
    pools = split_pools(1.0, used=["sel", "mi", "task", "bg"])
    assert pools == pytest.approx({"sel": 0.1, "mi": 0.05, "task": 0.65, "bg": 0.2})
    causal = split_pools(1.0, used=["task", "bg"])
    assert causal == pytest.approx({"task": 0.8, "bg": 0.2})
    binned = split_pools(2.0, used=["task", "bg"], bins_fraction=0.05)
    assert sum(binned.values()) == pytest.approx(2.0)
    assert binned["bins"] == pytest.approx(0.1)


@pytest.mark.parametrize(("eps", "delta"), [(0.2, 1e-6), (1.0, 1e-8), (4.0, 1e-5)])
def test_epsilon_to_rho_inverts_the_conversion(eps, delta):
    assert zcdp_rho_to_epsilon(epsilon_to_rho(eps, delta), delta) == pytest.approx(eps)
