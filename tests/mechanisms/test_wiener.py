"""Wiener-kernel private mean: estimator, exact RKHS sensitivity, noise law, empirical audit."""

from __future__ import annotations

import numpy as np
import pytest

from pseudopost._rng import spawn_seeds
from pseudopost.mechanisms.wiener import WienerMean, wiener_kernel
from pseudopost.privacy.audit import epsilon_lower_bound
from pseudopost.privacy.noise import gaussian_epsilon, gaussian_sigma
from pseudopost.privacy.statement import REPLACE_ONE


def _brownian(n: int, t: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.normal(0.0, np.sqrt(1.0 / t), size=(n, t)), axis=1)


def _h_norm(f: np.ndarray, grid: np.ndarray) -> float:
    """RKHS norm of the Wiener kernel: sqrt(f' K^-1 f) = sqrt(sum (df)^2 / dt) with f(0) = 0."""
    df = np.diff(np.r_[0.0, f])
    dt = np.diff(np.r_[0.0, grid])
    return float(np.sqrt((df**2 / dt).sum()))


def test_penalised_mean_solves_the_normal_equations():
    x = _brownian(30, 12, 0)
    mech = WienerMean(1.0, 1e-5, rho=0.01, norm_bound=10.0)
    grid = mech.grid_for(12)
    k = wiener_kernel(grid)
    h = 1.0 / 12
    # gradient of h|xbar - mu|^2 + rho mu' K^-1 mu is zero at the estimate
    mu = mech.penalised_mean(x)
    grad = -2 * h * (x.mean(axis=0) - mu) + 2 * 0.01 * np.linalg.solve(k, mu)
    np.testing.assert_allclose(grad, 0.0, atol=1e-12)
    assert _h_norm(mu, grid) == pytest.approx(np.sqrt(mu @ np.linalg.solve(k, mu)))


def test_sensitivity_is_exact_and_below_the_closed_form_bound():
    n, t = 25, 16
    for rho in (1e-6, 1e-3, 0.1):
        mech = WienerMean(1.0, 1e-5, rho=rho, norm_bound=2.0)
        grid = mech.grid_for(t)
        sens = mech.sensitivity(n, t)
        assert sens <= mech.sensitivity_bound(n) * (1 + 1e-12)
        # random replace-one pairs never exceed it
        base = _brownian(n, t, 1)
        rng = np.random.default_rng(2)
        for _ in range(200):
            other = base.copy()
            other[0] = rng.normal(0, 3, t)
            diff = mech.penalised_mean(base) - mech.penalised_mean(other)
            assert _h_norm(diff, grid) <= sens * (1 + 1e-9)
        # the worst pair x_i = -x_i' along the maximising eigenvector attains it
        lam, vec = np.linalg.eigh(wiener_kernel(grid))
        j = np.argmax(np.sqrt(lam) / (lam + rho * t))
        v = vec[:, j] * 2.0 * np.sqrt(t)  # L2 norm (1/t sum v^2)^(1/2) = 2 = norm_bound
        a, b = base.copy(), base.copy()
        a[0], b[0] = v, -v
        diff = mech.penalised_mean(a) - mech.penalised_mean(b)
        assert _h_norm(diff, grid) == pytest.approx(sens, rel=1e-9)


def test_bound_is_nearly_attained_when_rho_matches_an_eigenvalue():
    t = 40
    lam = np.linalg.eigvalsh(wiener_kernel(np.arange(1, t + 1) / t))
    mech = WienerMean(1.0, 1e-5, rho=lam[-3] / t, norm_bound=1.0)
    assert mech.sensitivity(10, t) == pytest.approx(mech.sensitivity_bound(10), rel=1e-9)


def test_noise_is_a_scaled_wiener_process():
    t = 8
    x = _brownian(20, t, 3)
    mech = WienerMean(1.0, 1e-5, rho=0.001, norm_bound=5.0)
    mu = mech.penalised_mean(x)
    draws = np.array([mech.release(x, seed=s).mean for s in spawn_seeds(4, 4000)]) - mu
    sigma = mech.release(x, seed=0).sigma
    assert sigma == pytest.approx(gaussian_sigma(mech.sensitivity(20, t), 1.0, 1e-5, "analytic"))
    cov = np.cov(draws.T) / sigma**2
    np.testing.assert_allclose(cov, wiener_kernel(mech.grid_for(t)), atol=0.07)
    np.testing.assert_allclose(draws.mean(axis=0) / sigma, 0.0, atol=0.07)


def test_release_audit_on_the_worst_pair():
    """Empirical audit with the most powerful score (projection on K^-1 (mu' - mu))."""
    n, t = 10, 10
    mech = WienerMean(1.0, 1e-3, rho=0.01, norm_bound=1.0)
    grid = mech.grid_for(t)
    lam, vec = np.linalg.eigh(wiener_kernel(grid))
    v = vec[:, np.argmax(np.sqrt(lam) / (lam + 0.01 * t))] * np.sqrt(t)
    a = _brownian(n, t, 5) * 0.1
    b = a.copy()
    a[0], b[0] = v, -v
    w = np.linalg.solve(wiener_kernel(grid), mech.penalised_mean(b) - mech.penalised_mean(a))
    seeds = spawn_seeds(6, 12_000)
    sa = np.array([mech.release(a, seed=s).mean @ w for s in seeds[:6000]])
    sb = np.array([mech.release(b, seed=s).mean @ w for s in seeds[6000:]])
    res = epsilon_lower_bound(sa, sb, delta=1e-3)
    assert 0.3 < res.epsilon_lower <= 1.0


def test_larger_rho_means_less_noise():
    sig = [
        WienerMean(1.0, 1e-5, rho=r, norm_bound=3.0).release(_brownian(50, 80, 0), seed=1).sigma
        for r in (1e-6, 1e-3, 1e-1)
    ]
    assert sig[0] > sig[1] > sig[2]


def test_clipping_reproducibility_and_input_left_alone():
    x = _brownian(10, 20, 7) * 50
    before = x.copy()
    mech = WienerMean(1.0, 1e-5, rho=0.01, norm_bound=1.0)
    clipped = mech.clip(x)
    assert (np.sqrt((clipped**2).mean(axis=1)) <= 1.0 + 1e-12).all()
    np.testing.assert_array_equal(mech.release(x, seed=3).mean, mech.release(x, seed=3).mean)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize(
    ("kwargs", "paths", "match"),
    [
        ({"rho": 0.0}, None, "'rho'"),
        ({"epsilon": -1.0}, None, "'epsilon'"),
        ({"delta": 1.0}, None, "'delta'"),
        ({"norm_bound": 0.0}, None, "'norm_bound'"),
        ({"grid": [0.0, 0.5, 1.0]}, None, "singular"),
        ({"grid": [0.5, 0.2]}, None, "increasing"),
        ({"grid": [0.25, 0.5, 0.75, 1.0]}, np.ones((3, 5)), "grid"),
        ({}, np.ones(5), "2-D"),
        ({}, np.empty((0, 5)), "2-D"),
        ({}, np.array([[1.0, np.nan]]), "finite"),
        ({"backend": "torch"}, None, "'backend'"),
    ],
)
def test_bad_input_is_refused(kwargs, paths, match):
    args = {"epsilon": 1.0, "delta": 1e-5, "rho": 0.01, "norm_bound": 1.0, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        WienerMean(**args).release(np.ones((3, 5)) if paths is None else paths, seed=0)


def test_opendp_backend_runs():
    x = _brownian(20, 10, 8)
    rel = WienerMean(1.0, 1e-5, rho=0.01, norm_bound=2.0, backend="opendp").release(x)
    assert rel.backend == "opendp" and rel.mean.shape == (10,) and np.isfinite(rel.mean).all()


def test_privacy_statement_is_the_release_budget():
    x = _brownian(20, 10, 9)
    mech = WienerMean(0.8, 1e-5, rho=0.01, norm_bound=2.0)
    rel = mech.release(x, seed=1)
    st = rel.privacy_statement
    assert (st.epsilon, st.delta) == (rel.epsilon, rel.delta) == (0.8, 1e-5)
    assert st == mech.privacy_statement  # each call of release() costs this
    assert st.neighbouring == REPLACE_ONE and st.scope == "global" and st.unit == "release"
    # the noise actually used delivers the stated epsilon on the exact Gaussian curve
    assert gaussian_epsilon(rel.sigma, rel.sensitivity, rel.delta) == pytest.approx(0.8, rel=1e-6)


def test_classic_calibration_is_refused_where_the_formula_fails():
    with pytest.raises(ValueError, match="classic Gaussian calibration"):
        WienerMean(20.0, 1e-5, rho=0.01, norm_bound=1.0, gaussian_method="classic")
    WienerMean(0.5, 1e-5, rho=0.01, norm_bound=1.0, gaussian_method="classic")
