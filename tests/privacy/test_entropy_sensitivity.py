"""Entropy sensitivity bounds: brute force over every replace-one pair with n <= 30, m <= 4."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pseudopost.privacy.entropy import (
    TABLE_S1_RENYI_CONSTANTS,
    paper_renyi_constant,
    renyi_entropy,
    renyi_entropy_sensitivity,
    shannon_entropy,
    shannon_entropy_sensitivity,
)

ORDERS = [0.5, 1.5, 2.0, 3.0, 5.0, 10.0]


def _histograms(n: int, m: int) -> np.ndarray:
    """Every histogram of n records over m bins (compositions of n), shape (K, m)."""
    rows = []
    for cut in itertools.combinations(range(n + m - 1), m - 1):
        b = (-1, *cut, n + m - 1)
        rows.append([b[i + 1] - b[i] - 1 for i in range(m)])
    return np.array(rows, dtype=float)


def _entropies(c: np.ndarray, order: float | None) -> np.ndarray:
    p = c / c.sum(axis=1, keepdims=True)
    if order is None:
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.where(p > 0, p * np.log2(p), 0.0).sum(axis=1)
    return np.log2((np.where(p > 0, p, 0.0) ** order).sum(axis=1)) / (1.0 - order)


def _max_change(n: int, m: int, order: float | None) -> float:
    """Exact max |H(c) - H(c')| over all replace-one pairs (move one unit from bin i to j)."""
    c = _histograms(n, m)
    h = _entropies(c, order)
    worst = 0.0
    for i, j in itertools.permutations(range(m), 2):
        ok = c[:, i] > 0
        d = c[ok].copy()
        d[:, i] -= 1
        d[:, j] += 1
        worst = max(worst, float(np.abs(_entropies(d, order) - h[ok]).max()))
    return worst


@pytest.fixture(scope="module")
def brute_force() -> dict:
    return {
        (order, n, m): _max_change(n, m, order)
        for order in [None, *ORDERS]
        for n in range(1, 31)
        for m in range(2, 5)
    }


def test_shannon_theorem3_bound_holds_on_every_pair(brute_force):
    ratios = {
        (n, m): brute_force[(None, n, m)] / shannon_entropy_sensitivity(n)
        for n in range(1, 31)
        for m in range(2, 5)
    }
    tightest = max(ratios.values())
    assert tightest <= 1.0
    # tightest ratio seen: 0.4771 at n = 30 (exact / Theorem 3 tends to 1/2 from below)
    assert max(ratios, key=ratios.get)[0] == 30
    assert tightest == pytest.approx(0.4771455776638989, abs=1e-9)


def test_shannon_tight_sensitivity_equals_enumerated_maximum(brute_force):
    for n in range(1, 31):
        for m in range(2, 5):
            assert brute_force[(None, n, m)] == pytest.approx(
                shannon_entropy_sensitivity(n, tight=True), abs=1e-12
            )


@pytest.mark.parametrize("order", ORDERS)
def test_renyi_bound_holds_on_every_pair(brute_force, order):
    for n in range(1, 31):
        for m in range(2, 5):
            exact = brute_force[(order, n, m)]
            assert exact <= renyi_entropy_sensitivity(n, order) + 1e-12
            assert exact <= renyi_entropy_sensitivity(n, order, bins=m) + 1e-12


def test_paper_renyi_bound_is_violated(brute_force):
    """Appendix C eq. (17) fails: documented gap between the paper's proof and what holds."""
    violated = {
        order
        for order in ORDERS
        for n in range(1, 31)
        for m in range(2, 5)
        if brute_force[(order, n, m)] > paper_renyi_constant(order) / n
    }
    assert {0.5, 5.0, 10.0} <= violated
    # the worked counterexample of the module docstring: alpha = 0.5, (30, 0) -> (29, 1)
    change = abs(renyi_entropy([29, 1], 0.5) - renyi_entropy([30, 0], 0.5))
    assert change == pytest.approx(0.4426, abs=1e-3)
    assert change > paper_renyi_constant(0.5) / 30


def test_table_s1_constants_match_the_formula():
    for order, printed in TABLE_S1_RENYI_CONSTANTS.items():
        assert paper_renyi_constant(order) == pytest.approx(printed, abs=0.006)


def test_theorem3_bound_values_quoted_in_the_paper():
    # section V-F says "about 0.2" at n = 50; eq. (4) gives 0.2946 (the text rounds loosely)
    assert shannon_entropy_sensitivity(50) == pytest.approx(0.2946, abs=1e-4)
    # below 0.01 at n = 5000; Table IV / S3 print 0.00037 at n = 1e5 and 0.03645 at n = 601
    assert shannon_entropy_sensitivity(5000) < 0.01
    assert shannon_entropy_sensitivity(100_000) == pytest.approx(0.00037, abs=5e-6)
    assert shannon_entropy_sensitivity(601) == pytest.approx(0.03645, abs=5e-5)
    assert shannon_entropy_sensitivity(1460) == pytest.approx(0.01676, abs=5e-5)


def test_entropies_against_closed_forms():
    assert shannon_entropy([5, 5, 5, 5]) == pytest.approx(2.0)
    assert shannon_entropy([7, 0]) == 0.0
    assert renyi_entropy([1, 1, 1, 1], 2.0) == pytest.approx(2.0)
    p = np.array([0.2, 0.3, 0.5])
    assert renyi_entropy(p * 10, 2.0) == pytest.approx(-math.log2((p**2).sum()))
    # alpha -> 1 recovers Shannon
    assert renyi_entropy(p * 10, 1.0 + 1e-7) == pytest.approx(shannon_entropy(p), abs=1e-5)


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(0, 400), min_size=2, max_size=12).filter(lambda c: sum(c) > 1),
    data=st.data(),
)
def test_bounds_hold_for_random_large_histograms(counts, data):
    c = np.array(counts, dtype=float)
    n = int(c.sum())
    i = data.draw(st.sampled_from([k for k in range(c.size) if c[k] > 0]))
    j = data.draw(st.sampled_from([k for k in range(c.size) if k != i]))
    d = c.copy()
    d[i] -= 1
    d[j] += 1
    assert (
        abs(shannon_entropy(c) - shannon_entropy(d))
        <= shannon_entropy_sensitivity(n, tight=True) + 1e-12
    )
    for order in ORDERS:
        change = abs(renyi_entropy(c, order) - renyi_entropy(d, order))
        assert change <= renyi_entropy_sensitivity(n, order, bins=c.size) + 1e-12


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: shannon_entropy_sensitivity(0), "'n'"),
        (lambda: shannon_entropy_sensitivity(2.5), "'n'"),
        (lambda: renyi_entropy_sensitivity(10, 1.0), "differ from 1"),
        (lambda: renyi_entropy_sensitivity(10, -2.0), "'order'"),
        (lambda: renyi_entropy_sensitivity(10, 2.0, bins=0), "'bins'"),
        (lambda: shannon_entropy([]), "non-empty"),
        (lambda: shannon_entropy([0, 0]), "empty histogram"),
        (lambda: shannon_entropy([1, -1]), "non-negative"),
        (lambda: renyi_entropy([1, 2], 1), "differ from 1"),
    ],
)
def test_bad_input_is_refused(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
