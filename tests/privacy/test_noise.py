"""The noise module: privacy maps equal their formulas; calibration inverts them."""

import numpy as np
import pytest
from scipy import stats

from pseudopost.privacy import epsilon_lower_bound, noise


def test_classic_gaussian_formula():
    got = noise.gaussian_sigma(2.0, 0.5, 1e-5)
    assert got == pytest.approx(2.0 * np.sqrt(2 * np.log(1.25 / 1e-5)) / 0.5, rel=1e-14)


def test_analytic_gaussian_matches_balle_wang_curve():
    sigma = noise.gaussian_sigma(1.0, 1.0, 1e-5, method="analytic")
    # exact curve with plain scipy (no log-space tricks needed at eps = 1)
    a, b = 1 / (2 * sigma), sigma
    delta = stats.norm.cdf(a - b) - np.e * stats.norm.cdf(-a - b)
    assert delta == pytest.approx(1e-5, rel=1e-6)
    assert sigma < noise.gaussian_sigma(1.0, 1.0, 1e-5)  # analytic is tighter
    assert noise.gaussian_epsilon(sigma, 1.0, 1e-5) == pytest.approx(1.0, rel=1e-8)


def test_large_epsilon_does_not_overflow():
    s = noise.gaussian_sigma(1.0, 800.0, 1e-9, method="analytic")
    assert np.isfinite(s) and s > 0
    assert noise.gaussian_delta(s, 1.0, 800.0) == pytest.approx(1e-9, rel=1e-4)


def test_laplace_and_zcdp_maps():
    assert noise.laplace_scale(3.0, 1.5) == 2.0
    assert noise.laplace_epsilon(3.0, 2.0) == 1.5
    assert noise.gaussian_rho(2.0, 1.0) == pytest.approx(1 / 8)
    assert noise.zcdp_sigma(1.0, 1 / 8) == pytest.approx(2.0)
    rho, d = 0.5, 1e-6
    assert noise.zcdp_rho_to_epsilon(rho, d) == pytest.approx(
        rho + 2 * np.sqrt(rho * np.log(1 / d))
    )


def test_samplers_are_seeded_and_leave_input_alone():
    v = np.arange(5.0)
    a = noise.gaussian_noise(v, 1.0, seed=3)
    np.testing.assert_array_equal(a, noise.gaussian_noise(v, 1.0, seed=3))
    np.testing.assert_array_equal(v, np.arange(5.0))
    rng = np.random.default_rng(1)
    noise.laplace_noise(v, 1.0, seed=rng)
    assert rng.bit_generator.state == np.random.default_rng(1).bit_generator.state  # copied
    o = noise.gaussian_noise(v, 1.0, backend="opendp")
    assert o.shape == v.shape and not np.array_equal(o, v)


@pytest.mark.parametrize(
    ("fn", "args", "msg"),
    [
        (noise.gaussian_sigma, (1.0, 0.0, 1e-5), "epsilon"),
        (noise.gaussian_sigma, (1.0, 1.0, 1.5), "delta"),
        (noise.gaussian_sigma, (-1.0, 1.0, 1e-5), "sensitivity"),
        (noise.gaussian_sigma, (1.0, 1.0, 1e-5, "fancy"), "method"),
        (noise.laplace_noise, (np.zeros(2), 1.0, 0, "torch"), "backend"),
    ],
)
def test_bad_arguments(fn, args, msg):
    with pytest.raises(ValueError, match=msg):
        fn(*args)


def test_audit_of_laplace_stays_below_claim_and_detects_a_cheat():
    eps = 1.0
    a = noise.laplace_noise(np.zeros(20000), 1 / eps, seed=1)
    b = noise.laplace_noise(np.ones(20000), 1 / eps, seed=2)
    res = epsilon_lower_bound(a, b)
    assert 0.6 < res.epsilon_lower <= eps
    # a mechanism using half the noise it claims is caught
    b_cheat = noise.laplace_noise(np.ones(20000), 0.5 / eps, seed=3)
    a_cheat = noise.laplace_noise(np.zeros(20000), 0.5 / eps, seed=4)
    assert epsilon_lower_bound(a_cheat, b_cheat).epsilon_lower > eps
