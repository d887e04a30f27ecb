"""Replace-one sensitivity of a marginal and an empirical DP audit of one measurement."""

import itertools

import numpy as np
import pytest

from pseudopost.mechanisms.prism.measure import (
    marginal_probabilities,
    measure_marginal,
    replace_one_l2,
)
from pseudopost.privacy.audit import epsilon_lower_bound
from pseudopost.privacy.noise import gaussian_sigma


def test_l2_sensitivity_is_sqrt2_over_n_by_enumeration():
    sizes = {"a": 2, "b": 3}
    n = 4
    cells = list(itertools.product(range(2), range(3)))
    worst = 0.0
    for ds in itertools.combinations_with_replacement(range(6), n):
        codes = {"a": np.array([cells[c][0] for c in ds]), "b": np.array([cells[c][1] for c in ds])}
        p = marginal_probabilities(codes, ("a", "b"), sizes)
        for i, c in itertools.product(range(n), range(6)):
            alt = {k: v.copy() for k, v in codes.items()}
            alt["a"][i], alt["b"][i] = cells[c]
            worst = max(worst, np.linalg.norm(p - marginal_probabilities(alt, ("a", "b"), sizes)))
    assert worst == pytest.approx(replace_one_l2(n))


def _audit_scores(sigma, runs=3000):
    """Measure (a, y) on D and on a replace-one neighbour; project on the difference."""
    n = 50
    rng = np.random.default_rng(0)
    a, y = rng.integers(0, 3, n), rng.integers(0, 2, n)
    d = {"a": a, "y": y}
    d2 = {"a": a.copy(), "y": y.copy()}
    d2["a"][0], d2["y"][0] = (a[0] + 1) % 3, 1 - y[0]
    sizes = {"a": 3, "y": 2}
    p, p2 = (marginal_probabilities(x, ("a", "y"), sizes) for x in (d, d2))
    direction = (p - p2) / np.linalg.norm(p - p2)

    def run(codes, seed):
        m = measure_marginal(
            codes, ("a", "y"), sizes, sigma, epsilon=1.0, delta=1e-5, pool="task", seed=seed
        )
        return float((m.noisy - p2) @ direction)

    s1 = np.array([run(d, s) for s in range(runs)])
    s2 = np.array([run(d2, runs + s) for s in range(runs)])
    return s1, s2, n


def test_empirical_audit_of_one_marginal_measurement():
    eps, delta = 1.0, 1e-5
    sigma = gaussian_sigma(replace_one_l2(50), eps, delta, method="analytic")
    s1, s2, _ = _audit_scores(sigma)
    res = epsilon_lower_bound(s1, s2, delta=delta, confidence=0.95)
    assert res.epsilon_lower <= eps


def test_audit_detects_under_noised_measurement():
    """The same audit rejects a mechanism with a quarter of the required noise."""
    sigma = gaussian_sigma(replace_one_l2(50), 1.0, 1e-5, method="analytic") / 4
    s1, s2, _ = _audit_scores(sigma)
    assert epsilon_lower_bound(s1, s2, delta=1e-5).epsilon_lower > 1.0


def test_measurement_record_is_frozen_and_costed():
    codes = {"a": np.array([0, 1, 1, 2]), "y": np.array([0, 0, 1, 1])}
    m = measure_marginal(
        codes, ("a", "y"), {"a": 3, "y": 2}, 0.1, epsilon=0.5, delta=1e-6, pool="task", seed=1
    )
    assert m.table().shape == (3, 2) and m.cells == 6
    assert m.rho == pytest.approx((np.sqrt(2) / 4) ** 2 / (2 * 0.1**2))
    with pytest.raises(ValueError):
        m.noisy[0] = 1.0
    with pytest.raises(AttributeError):
        m.sigma = 1.0  # type: ignore[misc]
