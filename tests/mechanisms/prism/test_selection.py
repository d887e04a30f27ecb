"""Exponential mechanism frequencies, the MI sensitivity bound by enumeration, noisy trees."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pseudopost.mechanisms.prism.selection import (
    conditional_mutual_information,
    exponential_mechanism,
    exponential_spanning_tree,
    greedy_top_k,
    mi_sensitivity,
    mutual_information,
    selection_probabilities,
)


def test_exponential_mechanism_frequencies_match_formula():
    u = np.array([0.0, 0.5, 1.0, 2.0])
    eps, sens = 1.0, 0.5
    expected = np.exp(eps * u / (2 * sens))
    expected /= expected.sum()
    np.testing.assert_allclose(selection_probabilities(u, eps, sens), expected)
    draws = np.array([exponential_mechanism(u, eps, sens, seed=s) for s in range(8000)])
    counts = np.bincount(draws, minlength=u.size)
    assert stats.chisquare(counts, 8000 * expected).pvalue > 1e-3
    # and a wrong temperature is detected by the same test
    wrong = np.exp(eps * u / sens)
    assert stats.chisquare(counts, 8000 * wrong / wrong.sum()).pvalue < 1e-6


def test_greedy_top_k_round_frequencies():
    u = np.array([0.0, 1.0, 2.0])
    eps, sens, k = 2.0, 0.5, 2
    p = selection_probabilities(u, eps / k, sens)
    pairs = [tuple(greedy_top_k(u, k, eps, sens, seed=s)) for s in range(6000)]
    obs = np.array([pairs.count(pr) for pr in itertools.permutations(range(3), 2)])
    exp = []
    for i, j in itertools.permutations(range(3), 2):
        rest = [r for r in range(3) if r != i]
        exp.append(p[i] * selection_probabilities(u[rest], eps / k, sens)[rest.index(j)])
    assert stats.chisquare(obs, 6000 * np.array(exp)).pvalue > 1e-3
    assert all(len(set(pr)) == 2 for pr in pairs)


def _mi_max_change(kx, ky, n):
    cells = list(itertools.product(range(kx), range(ky)))
    worst = 0.0
    for ds in itertools.combinations_with_replacement(range(len(cells)), n):
        x = np.array([cells[c][0] for c in ds])
        y = np.array([cells[c][1] for c in ds])
        base = mutual_information(x, y, kx, ky)
        for i, c in itertools.product(range(n), range(len(cells))):
            x2, y2 = x.copy(), y.copy()
            x2[i], y2[i] = cells[c]
            worst = max(worst, abs(mutual_information(x2, y2, kx, ky) - base))
    return worst


@pytest.mark.parametrize(("kx", "ky", "n"), [(2, 2, 5), (2, 2, 7), (3, 2, 5), (3, 3, 4)])
def test_mi_sensitivity_bound_by_enumeration(kx, ky, n):
    """Every dataset of size n and every replace-one neighbour stays within the bound."""
    worst = _mi_max_change(kx, ky, n)
    bound = mi_sensitivity(n, binary=2 in (kx, ky))
    assert worst <= bound + 1e-12
    if (kx, ky) == (2, 2):  # PrivBayes' binary bound is attained
        assert worst == pytest.approx(bound, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(30, 300), st.integers(2, 5), st.integers(2, 4), st.integers(0, 2**31 - 1))
def test_mi_sensitivity_random_neighbours(n, kx, ky, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, kx, n), rng.integers(0, ky, n)
    x[: n // 2] = y[: n // 2] % kx  # some dependence
    i = rng.integers(n)
    x2, y2 = x.copy(), y.copy()
    x2[i], y2[i] = rng.integers(kx), rng.integers(ky)
    change = abs(mutual_information(x, y, kx, ky) - mutual_information(x2, y2, kx, ky))
    assert change <= mi_sensitivity(n, binary=2 in (kx, ky)) + 1e-12


def test_cmi_chain_rule_and_independence(rng):
    n = 20000
    y = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.8, y, 1 - y)
    b = np.where(rng.random(n) < 0.8, y, 1 - y)  # a, b independent given y
    assert conditional_mutual_information(a, b, y, 2, 2, 2) < 1e-3
    assert mutual_information(a, b, 2, 2) > 0.05
    c = a ^ y  # a and c are dependent given y
    assert conditional_mutual_information(a, c, y, 2, 2, 2) > 0.3


def test_spanning_tree_is_a_tree_and_follows_scores():
    nodes = list("ABCDE")
    pairs = list(itertools.combinations(nodes, 2))
    scores = {
        p: (10.0 if p in [("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")] else 0.0) for p in pairs
    }
    tree = exponential_spanning_tree(nodes, scores, epsilon_round=50.0, sensitivity=1.0, seed=3)
    assert len(tree) == 4
    assert sorted(tree) == [("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")]
    noisy = exponential_spanning_tree(nodes, scores, 1e-6, 1.0, seed=4)
    seen = {n for e in noisy for n in e}
    assert len(noisy) == 4 and seen == set(nodes)


def test_top_k_bad_k():
    with pytest.raises(ValueError, match="'k'"):
        greedy_top_k([1.0, 2.0], 3, 1.0, 0.1, seed=0)
