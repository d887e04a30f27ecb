"""The Laplace preconditioner: with an exact Hessian, Newton reaches the mode (gradient 0 to
many digits) and L L^T inverts the Hessian there, which equals differences of the gradient;
parts without one keep the difference path; a location-scale part reaches its mode from its
shift-only part's mode."""

from __future__ import annotations

import numpy as np
import pytest

from pseudopost.fitting import laplace
from pseudopost.models.parts import PartData, make_part


def _stats(family, kw, n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 2, n), rng.normal(size=n)])
    k = kw.get("n_levels", 2)
    eta = X @ np.array([0.5, -0.7, 0.8])
    if family == "normal":
        y = 1.0 + eta + 0.1 * rng.normal(size=n)
    elif family == "poisson":
        y = rng.poisson(np.exp(0.3 * eta))
    else:
        y = np.minimum((rng.logistic(size=n) + eta > np.arange(k - 1)[:, None]).sum(0), k - 1)
    part = make_part(family, "y", ["a", "b", "c"], **kw)
    stats = part.statistics(PartData(y.astype(float), X, np.ones(n, bool)), rng.uniform(0, 1, n))
    return part, stats


def _fd_hessian(density, x, h=1e-6):
    return np.column_stack([
        (density.logp_grad(x + h * e)[1] - density.logp_grad(x - h * e)[1]) / (2 * h)
        for e in np.eye(x.size)
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("family", "kw"),
    [
        ("categorical", {"n_levels": 4}),
        ("bernoulli", {}),
        ("ordinal", {"n_levels": 4}),
        ("normal", {}),
    ],
)
def test_newton_on_the_exact_hessian_reaches_the_mode(family, kw, monkeypatch):
    part, stats = _stats(family, kw)
    density = part.log_density(stats)
    calls = []
    monkeypatch.setattr(laplace, "_near_mode", lambda *a: calls.append(1) or a[1])
    x0, L = laplace.laplace_transform(part, stats)
    assert not calls  # the difference path was not taken
    g = density.logp_grad(x0)[1]
    assert g @ (L @ L.T) @ g < 1e-8  # the Newton decrement: within 1e-4 sd of the mode
    H = -_fd_hessian(density, x0)
    np.testing.assert_allclose(np.linalg.inv(L @ L.T), H, rtol=1e-5, atol=1e-6 * np.abs(H).max())
    # the old path (Newton-CG, differences) lands near the same point
    monkeypatch.undo()  # the real _near_mode again
    monkeypatch.setattr(type(part), "has_hessian", False)
    x1, L1 = laplace.laplace_transform(part, stats)
    sd = np.sqrt(np.diag(L @ L.T))
    assert np.all(np.abs(x1 - x0) < 0.5 * sd)
    np.testing.assert_allclose(np.diag(L1 @ L1.T), sd**2, rtol=0.2)


def test_location_scale_part_reaches_its_mode_from_the_shift_only_mode(monkeypatch):
    """A location-scale part with a predictor near 2e5 (Adult's fnlwgt) and five 0/1 levels that
    shift and widen the spread, over 60 points: its log density is not concave, and damped
    Newton from the prior's support point stopped far from the mode (Newton decrement 5.5e3);
    started from the shift-only part's mode it reaches it (decrement below 1e-8) and L L^T
    inverts the Hessian there."""
    rng = np.random.default_rng(1)
    n, k, nlev = 3000, 60, 6
    lev = rng.integers(0, nlev, n)
    B = (lev[:, None] == np.arange(1, nlev)).astype(float)
    X = np.column_stack([rng.lognormal(12, 0.5, n).round(), B])
    gamma = rng.normal(0, 0.4, nlev - 1)
    latent = B @ rng.normal(0, 0.5, nlev - 1) + np.exp(B @ gamma) * rng.logistic(size=n)
    y = np.clip(np.rint(latent * 2 + k / 2), 0, k - 1)
    names = ["fnlwgt", *(f"b{j}" for j in range(1, nlev))]
    part = make_part("cumulative", "y", names, n_levels=k, scaled=True)
    stats = part.statistics(PartData(y, X, np.ones(n, bool)), np.ones(n))
    density = part.log_density(stats)
    starts = []
    inner = laplace._start
    monkeypatch.setattr(laplace, "_start", lambda *a: starts.append(a[0]) or inner(*a))
    x0, L = laplace.laplace_transform(part, stats)
    assert [p.has_scale for p in starts] == [True, False]  # the shift-only part's mode first
    g = density.logp_grad(x0)[1]
    assert g @ (L @ L.T) @ g < 1e-8
    H = -density.hessian(x0)
    np.testing.assert_allclose(L @ L.T @ H, np.eye(x0.size), atol=1e-6)
    got = part.layout.unpack(x0)["gamma"][1:]
    assert np.all(np.abs(got - gamma) < 0.2), (got, gamma)  # the levels' spreads (prior: 0.1 low)


def test_a_refit_starts_its_mode_search_at_a_given_mode(monkeypatch):
    """A weighted refit's mode search started at the unweighted fit's mode (the mechanism's
    refits) reaches the same mode as a search from the usual start (decrement below 1e-8) in
    fewer Newton steps, without the shift-only part's mode; a start where the density is not
    finite is ignored, one of the wrong size refused."""
    rng = np.random.default_rng(2)
    n, k = 2000, 30
    lev = rng.integers(0, 4, n)
    B = (lev[:, None] == np.arange(1, 4)).astype(float)
    X = np.column_stack([rng.normal(size=n), B])
    latent = X @ np.array([0.8, 0.5, -0.4, 0.3]) + np.exp(B @ [0.3, -0.2, 0.1]) * rng.logistic(
        size=n
    )
    y = np.clip(np.rint(latent * 3 + k / 2), 0, k - 1)
    part = make_part("cumulative", "y", ["x", "b1", "b2", "b3"], n_levels=k, scaled=True)
    data = PartData(y, X, np.ones(n, bool))
    x_u, _ = laplace.laplace_transform(part, part.statistics(data, np.ones(n)))
    stats = part.statistics(data, rng.uniform(0.2, 1.0, n))
    steps = []
    solve = laplace._damped_solve
    monkeypatch.setattr(laplace, "_damped_solve", lambda H, g: steps.append(1) or solve(H, g))
    x_cold, L_cold = laplace.laplace_transform(part, stats)
    cold, steps[:] = len(steps), []
    x_warm, L_warm = laplace.laplace_transform(part, stats, start=x_u)
    assert 0 < len(steps) < cold, (len(steps), cold)
    g = part.log_density(stats).logp_grad(x_warm)[1]
    assert g @ (L_warm @ L_warm.T) @ g < 1e-8
    sd = np.sqrt(np.diag(L_cold @ L_cold.T))
    assert np.all(np.abs(x_warm - x_cold) < 1e-3 * sd)
    assert not np.allclose(x_u, x_cold, rtol=0, atol=1e-3 * sd.min())  # a mode of its own
    x_nan, _ = laplace.laplace_transform(part, stats, start=np.full_like(x_u, np.nan))
    np.testing.assert_array_equal(x_nan, x_cold)
    with pytest.raises(ValueError, match=r"'start' must have shape \(\d+,\) for part 'y'"):
        laplace.laplace_transform(part, stats, start=x_u[:-1])


def test_newton_damping_is_scale_free_past_a_non_concave_point():
    """f = 5e13 x1^2 + x2^4 / 4 - x2^2 / 2 from x2 = 0.1, where f'' < 0 in x2 and x1's
    curvature is 1e14 (a predictor in raw units, Adult's fnlwgt): damping by a multiple of the
    largest curvature froze x2 (a step of 1e-9, a decrement below the stopping threshold) and
    Newton stopped there; damping relative to each parameter's curvature reaches the minimum
    at x2 = 1, where the Hessian is positive definite."""

    def f(x):
        return 5e13 * x[0] ** 2 + x[1] ** 4 / 4 - x[1] ** 2 / 2, np.array(
            [1e14 * x[0], x[1] ** 3 - x[1]]
        )

    found = laplace._newton(f, lambda x: np.diag([1e14, 3 * x[1] ** 2 - 1]), np.array([1e-7, 0.1]))
    assert found is not None
    x, H, converged = found
    assert converged
    np.testing.assert_allclose(x, [0.0, 1.0], atol=1e-3)
    assert np.all(np.linalg.eigvalsh(H) > 0)


def test_parts_without_a_hessian_use_differences():
    part, stats = _stats("poisson", {})
    assert not part.log_density(stats).has_hessian
    x0, L = laplace.laplace_transform(part, stats)
    density = part.log_density(stats)
    H = -_fd_hessian(density, x0)
    assert np.all(np.linalg.eigvalsh(H) > 0)
    np.testing.assert_allclose(np.linalg.inv(L @ L.T), H, rtol=1e-2, atol=1e-3 * np.abs(H).max())


def test_above_max_dim_the_dense_hessian_is_never_formed(monkeypatch):
    part, stats = _stats("categorical", {"n_levels": 4})
    monkeypatch.setattr(type(part), "hessian", lambda *a: pytest.fail("dense Hessian formed"))
    _, L = laplace.laplace_transform(part, stats, max_dim=5)
    assert np.count_nonzero(L - np.diag(np.diag(L))) == 0
    assert np.all(np.diag(L) > 0)


def test_blas_runs_on_one_thread_during_the_transform_and_is_restored():
    from threadpoolctl import threadpool_info

    def threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = threads()
    with laplace._one_blas_thread():
        with laplace._one_blas_thread():
            assert all(t == 1 for t in threads())
        assert all(t == 1 for t in threads())  # still one user
    assert threads() == before
    part, stats = _stats("bernoulli", {})
    laplace.laplace_transform(part, stats)
    assert threads() == before


def test_a_step_where_phi_underflows_is_an_infinite_objective_not_an_error():
    """An optimiser's wild step can send the negative binomial's log phi to -800: phi = 0 and
    ``math.log(0)`` raises a ValueError inside the density (a 10^6-record file met it). The
    objective is then +inf with a zero gradient, so the optimiser backs off."""
    rng = np.random.default_rng(1)
    n = 200
    X = rng.integers(0, 2, (n, 1)).astype(float)
    y = rng.negative_binomial(3, 0.3, n).astype(float)
    part = make_part("negative_binomial", "y", ["a"])
    stats = part.statistics(PartData(y, X, np.ones(n, bool)), np.ones(n))
    density = part.log_density(stats)
    x = np.zeros(part.layout.size)
    x[part.layout.slices["phi"]] = -800.0
    with pytest.raises(ValueError):
        density.logp_grad(x)  # the density itself refuses the point
    value, grad = laplace._negative(density)(x)
    assert value == np.inf and not grad.any()
    x0, L = laplace.laplace_transform(part, stats)
    assert np.all(np.isfinite(x0)) and np.all(np.isfinite(L))


def test_laplace_draws_are_the_normal_at_the_mode_with_the_inverse_hessian():
    """Draws of N(x0, H^-1) on the unconstrained scale, importance-resampled: the gradient is
    zero at their centre; on a nearly normal posterior (an ordered logit on 2,000 records) the
    Pareto k-hat is small and the draws' covariance is the inverse of an independent
    finite-difference Hessian there (8 % on the variances, 0.05 on the correlations with 20,000
    draws); the same seed gives the same draws."""
    from pseudopost.fitting.parts import laplace_draws, laplace_khat_max

    part, stats = _stats("ordinal", {"n_levels": 4}, n=2000)
    x0, L, exact = laplace.laplace_approximation(part, stats)
    assert exact
    density = part.log_density(stats)
    np.testing.assert_allclose(density.logp_grad(x0)[1], 0.0, atol=1e-5)
    tree = laplace_draws(part, stats, x0, L, 10_000, 2, seed=7)
    assert "sample_stats" not in tree.children
    post = tree["posterior"]
    assert post.attrs["laplace_khat"] < 0.5 < laplace_khat_max(20_000) == 0.7
    assert post["cutpoints"].dims == ("chain", "draw", "cutpoint")
    flat = {k: post[k].to_numpy().reshape(20_000, -1) for k in part.layout.names}
    x = np.stack([part.layout.pack({k: v[i] for k, v in flat.items()}) for i in range(20_000)])
    cov = np.cov(x.T)
    ref = np.linalg.inv(-_fd_hessian(density, x0))
    np.testing.assert_allclose(np.diag(cov), np.diag(ref), rtol=0.08)
    sd = np.sqrt(np.diag(ref))
    np.testing.assert_allclose(cov / np.outer(sd, sd), ref / np.outer(sd, sd), atol=0.05)
    np.testing.assert_array_less(np.abs(x.mean(0) - x0), 0.05 * sd)
    again = laplace_draws(part, stats, x0, L, 10_000, 2, seed=7)["posterior"]
    np.testing.assert_array_equal(again["beta"].to_numpy(), post["beta"].to_numpy())


def test_fewer_laplace_draws_than_the_proposals_are_a_subset_of_their_resample():
    """2 x 50 draws asked for: LAPLACE_PROPOSALS normal proposals are made and judged (the
    k-hat line of 500 ratios, not of 100) and the 100 draws returned are distinct rows of those
    proposals (a random subset of their systematic resample); the same seed, the same draws."""
    from pseudopost.fitting.parts import LAPLACE_PROPOSALS, laplace_draws

    part, stats = _stats("ordinal", {"n_levels": 4}, n=2000)
    x0, L, _ = laplace.laplace_approximation(part, stats)
    tree = laplace_draws(part, stats, x0, L, 50, 2, seed=3)
    post = tree["posterior"]
    assert post.attrs["laplace_resampled"]
    assert (post.sizes["chain"], post.sizes["draw"]) == (2, 50)
    flat = {k: post[k].to_numpy().reshape(100, -1) for k in part.layout.names}
    x = np.stack([part.layout.pack({k: v[i] for k, v in flat.items()}) for i in range(100)])
    z = np.random.default_rng(3).standard_normal((LAPLACE_PROPOSALS, x0.size))
    proposals = x0 + z @ L.T
    rows = [int(np.argmin(np.abs(proposals - xi).max(axis=1))) for xi in x]
    np.testing.assert_allclose(x, proposals[rows], atol=1e-9)
    assert len(set(rows)) > 80  # a near-normal posterior: few repeats in the resample
    assert max(rows) >= 100  # drawn from all 500 proposals, not the first 100 only
    again = laplace_draws(part, stats, x0, L, 50, 2, seed=3)["posterior"]
    np.testing.assert_array_equal(again["beta"].to_numpy(), post["beta"].to_numpy())


def _one_positive_in_400():
    """A logistic part on 400 records with one positive: a posterior skewed far beyond a
    normal's tails: its part, sufficient statistics, design and outcome."""
    rng = np.random.default_rng(1)
    n = 400
    X = np.column_stack([rng.integers(0, 2, n), rng.normal(size=n)]).astype(float)
    y = np.zeros(n)
    y[0] = 1.0
    part = make_part("bernoulli", "y", ["a", "b"])
    return part, part.statistics(PartData(y, X, np.ones(n, bool)), np.ones(n)), X, y


def test_a_rare_level_posterior_is_not_resampled_from_its_laplace_approximation():
    """One positive record in 400: the logistic posterior is skewed far beyond a normal's
    tails and the importance ratios' k-hat exceeds the threshold, so the Laplace draws are not
    trusted as a posterior sample (None). The risk step (``laplace=True``) then draws the
    split-normal approximation (Geweke 1989): a short side towards frequent, a long one towards
    rarer. Its mean share of positives is nearer NUTS's than the normal approximation's (which
    puts as much mass on each side: unchecked normal draws once put 29 % positives in a
    synthetic YRBSS sample), and within 2x of the data's 1/400. With fewer than 50 distinct
    records per parameter the stand-in is refused (NUTS)."""
    from pseudopost.fitting.parts import PartSampler, laplace_draws, split_normal_scales

    part, stats, X, y = _one_positive_in_400()
    x0, L, exact = laplace.laplace_approximation(part, stats)
    assert exact
    assert laplace_draws(part, stats, x0, L, 250, 2, seed=0) is None
    # the split-normal stand-in needs APPROXIMATE_MIN_PATTERNS (50) distinct records per
    # parameter (3 here): 150 records have them, 149 do not (NUTS then)
    for m, drawn in ((149, False), (150, True)):
        few = part.statistics(PartData(y[:m], X[:m], np.ones(m, bool)), np.ones(m))
        f0, fL, _ = laplace.laplace_approximation(part, few)
        tree = laplace_draws(part, few, f0, fL, 250, 2, seed=0, approximate=True)
        assert (tree is not None) == drawn
    lower, upper = split_normal_scales(part, stats, x0, L)
    j = int(np.argmax(np.abs(L[0])))  # the axis the intercept loads on most
    assert lower[j] > 1.0 > upper[j]

    def share(tree):
        post = tree["posterior"]
        a = post["intercept"].to_numpy().ravel()
        b = post["beta"].to_numpy().reshape(a.size, -1)
        return float(np.mean(1.0 / (1.0 + np.exp(-(a[:, None] + b @ X.T)))))

    sampler = PartSampler(part, stats)
    tree, _ = sampler.sample_with_mode(stats, draws=250, chains=2, tune=250, seed=0,
                                       laplace=True)  # fmt: skip
    assert "sample_stats" not in tree.children
    assert tree["posterior"].attrs["laplace_resampled"] is False
    nuts, _ = sampler.sample_with_mode(stats, draws=1000, chains=2, tune=250, seed=0)
    assert "sample_stats" in nuts.children
    z = np.random.default_rng(2).standard_normal((2000, x0.size))
    xs = x0 + z @ L.T
    values = [part.layout.unpack(row) for row in xs]
    normal = float(np.mean([np.mean(1.0 / (1.0 + np.exp(-(v["intercept"] + X @ v["beta"]))))
                            for v in values]))  # fmt: skip
    split, exact_share = share(tree), share(nuts)
    assert abs(split - exact_share) < abs(normal - exact_share)
    assert 1 / 800 < split < 2 / 400


def test_laplace_draws_agree_with_nuts_when_the_posterior_is_nearly_normal():
    """A logistic regression on 3,000 records (Bernstein-von Mises): the Laplace draws'
    means and sds against NUTS's within a tenth of a posterior sd and 10 %."""
    from pseudopost.fitting.parts import PartSampler

    part, stats = _stats("bernoulli", {}, n=3000, seed=2)
    sampler = PartSampler(part, stats)
    approx, _ = sampler.sample_with_mode(stats, draws=2000, tune=0, chains=2, seed=1,
                                         laplace=True)  # fmt: skip
    nuts, _ = sampler.sample_with_mode(stats, draws=2000, tune=300, chains=2, seed=1)
    assert "sample_stats" not in approx.children and "sample_stats" in nuts.children
    for name in ("intercept", "beta"):
        a, b = (t["posterior"][name].to_numpy().reshape(4000, -1) for t in (approx, nuts))
        sd = b.std(0)
        np.testing.assert_array_less(np.abs(a.mean(0) - b.mean(0)), 0.1 * sd)
        np.testing.assert_allclose(a.std(0), sd, rtol=0.1)


def test_laplace_draws_fall_back_to_nuts_without_an_exact_hessian():
    """A part whose mode is found on gradient differences (no exact Hessian) is only near
    its mode: it is drawn by NUTS even when Laplace draws are asked for."""
    from pseudopost.fitting.parts import PartSampler

    part, stats = _stats("poisson", {})
    assert not laplace.laplace_approximation(part, stats)[2]
    tree, _ = PartSampler(part, stats).sample_with_mode(
        stats, draws=50, tune=50, chains=1, seed=0, laplace=True
    )
    assert "sample_stats" in tree.children


def test_newton_short_of_the_mode_keeps_its_best_point_and_a_dense_factor(monkeypatch):
    """Newton stopped short (its step limit: a near-deterministic column's location-scale part
    creeps towards a far mode) keeps the last iterate, above the start in log density, and a
    dense factor of the (damped) Hessian there, flagged as not the Laplace approximation; the
    old fallback threw the iterates away for a diagonal factor (489 leapfrog steps per draw)."""
    part, stats = _stats("ordinal", {"n_levels": 4})
    density = part.log_density(stats)
    start = laplace._start(part, stats, laplace.MAX_DIM)
    monkeypatch.setattr(laplace, "_NEWTON_MAX", 1)
    monkeypatch.setattr(laplace, "_near_mode", lambda *a: pytest.fail("difference path taken"))
    x0, L, exact = laplace.laplace_approximation(part, stats)
    assert not exact
    assert density.logp_grad(x0)[0] > density.logp_grad(start)[0]
    assert np.count_nonzero(L - np.diag(np.diag(L))) > 0  # dense
    found = laplace._newton(laplace._negative(density), lambda x: -density.hessian(x), start)
    assert found is not None and found[2] is False
    # a Hessian that is nowhere positive definite: the damped factor, still dense
    H = np.array([[1.0, 2.0], [2.0, 1.0]])
    Ld = laplace._damped_factor(H)
    assert Ld is not None and np.all(np.linalg.eigvalsh(np.linalg.inv(Ld @ Ld.T)) > 0)
    assert laplace._factor(H) is None


def test_a_stuck_risk_step_run_is_kept_without_a_second_run(monkeypatch):
    """A part too small for the split-normal stand-in runs NUTS in the risk step; when that
    run is stuck (R-hat or ESS) it is kept as it is (``sample_stats`` attribute ``stuck``),
    where the weighted fit (an exact mechanism) runs NUTS again with the low-rank mass
    matrix."""
    from pseudopost.fitting import parts as fp

    rng = np.random.default_rng(1)
    n = 100  # 100 records, 3 parameters: below APPROXIMATE_MIN_PATTERNS per parameter
    X = np.column_stack([rng.integers(0, 2, n), rng.normal(size=n)]).astype(float)
    y = np.zeros(n)
    y[:2] = 1.0  # a rare level: k-hat too large for importance resampling
    part = make_part("bernoulli", "y", ["a", "b"])
    stats = part.statistics(PartData(y, X, np.ones(n, bool)), np.ones(n))
    x0, L, exact = laplace.laplace_approximation(part, stats)
    assert exact
    assert fp.laplace_draws(part, stats, x0, L, 100, 2, seed=0, approximate=True) is None
    runs = []
    real_nuts = fp.PartSampler._nuts

    def counted(self, *a):
        runs.append(a[-2])  # the adaptation of each NUTS run
        return real_nuts(self, *a)

    monkeypatch.setattr(fp.PartSampler, "_nuts", counted)
    monkeypatch.setattr(fp, "_stuck", lambda tree: True)
    sampler = fp.PartSampler(part, stats)
    tree, mode = sampler.sample_with_mode(stats, draws=100, tune=50, chains=2, seed=0,
                                          laplace=True)  # fmt: skip
    assert runs == ["diag"]
    assert tree["sample_stats"].attrs["stuck"].startswith("stuck (R-hat or ESS): kept")
    assert "rerun" not in tree["sample_stats"].attrs
    assert tree["posterior"].sizes["chain"] == 2 and tree["posterior"].sizes["draw"] == 100
    np.testing.assert_allclose(mode, x0)
    runs.clear()
    weighted, _ = sampler.sample_with_mode(stats, draws=100, tune=50, chains=2, seed=0)
    assert runs == ["diag", "low_rank"] and "rerun" in weighted["sample_stats"].attrs
    assert "stuck" not in weighted["sample_stats"].attrs
    # how each was drawn, in the tree (the whole file's record of its parts)
    # (_stuck is True throughout here: the second run has not mixed either)
    assert fp.drawn_by(tree) == fp.NUTS_STUCK and fp.drawn_by(weighted) == fp.NUTS_RERUN_UNMIXED


def test_a_hard_part_runs_the_robust_settings_from_the_start(monkeypatch):
    """``hard`` (a part the risk step drew from its split-normal form): the weighted fit's
    first NUTS run has the second run's settings (low-rank mass matrix, deeper trees, at least
    RETRY_MIN_TUNE tuning steps) and is labelled ``nuts low-rank``; stuck, it is drawn again
    as any part; the risk step's draws (``laplace``) ignore it. The draws sample the same
    posterior as the ordinary run."""
    from pseudopost.fitting import parts as fp

    rng = np.random.default_rng(4)
    n = 400
    X = np.column_stack([rng.integers(0, 2, n), rng.normal(size=n)]).astype(float)
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.3 + X[:, 0] - 0.5 * X[:, 1])))).astype(float)
    part = make_part("bernoulli", "y", ["a", "b"])
    stats = part.statistics(PartData(y, X, np.ones(n, bool)), np.ones(n))
    runs = []
    real_nuts = fp.PartSampler._nuts

    def counted(self, compiled, draws, tune, chains, seed, progress, adaptation, depth):
        runs.append((tune, adaptation, depth))
        return real_nuts(self, compiled, draws, tune, chains, seed, progress, adaptation, depth)

    monkeypatch.setattr(fp.PartSampler, "_nuts", counted)
    sampler = fp.PartSampler(part, stats)
    plain, _ = sampler.sample_with_mode(stats, draws=300, tune=50, chains=2, seed=0)
    hard, _ = sampler.sample_with_mode(stats, draws=300, tune=50, chains=2, seed=0, hard=True)
    assert runs[0] == (50, "diag", fp.WHITENED_MAXDEPTH)
    assert runs[1] == (fp.RETRY_MIN_TUNE, "low_rank", fp.RETRY_MAXDEPTH)
    assert fp.drawn_by(plain) == fp.NUTS and fp.drawn_by(hard) == fp.NUTS_LOW_RANK
    for v in ("intercept", "beta"):
        a, b = plain["posterior"][v].to_numpy(), hard["posterior"][v].to_numpy()
        se = np.sqrt(a.reshape(600, -1).var(0) / 150 + b.reshape(600, -1).var(0) / 150)
        assert np.all(np.abs(a.reshape(600, -1).mean(0) - b.reshape(600, -1).mean(0)) < 4 * se)
    runs.clear()
    monkeypatch.setattr(fp, "_stuck", lambda tree: True)
    again, _ = sampler.sample_with_mode(stats, draws=50, tune=20, chains=2, seed=0, hard=True)
    assert [r[1] for r in runs] == ["low_rank", "low_rank"]
    assert fp.drawn_by(again) == fp.NUTS_RERUN_UNMIXED
    runs.clear()
    risk, _ = sampler.sample_with_mode(stats, draws=50, tune=20, chains=2, seed=0, laplace=True,
                                       hard=True)  # fmt: skip
    assert fp.drawn_by(risk) in (fp.LAPLACE, fp.SPLIT_NORMAL, fp.NUTS_STUCK)
    assert all(r[1] == "diag" for r in runs)


def test_the_probe_ends_hopeless_importance_ratios_early_with_the_same_draws(monkeypatch):
    """A normal 4 sds off the mode of a skewed posterior (one positive in 400 records): the
    k-hat of the first ratios is past the first of PROBE_KHAT, so the other proposals' densities
    are never computed; the split-normal draws that stand in are the same as with every ratio
    computed (they read the proposals' normals, not their ratios). A near-normal posterior
    computes all LAPLACE_PROPOSALS ratios, probe by probe, and resamples as without probes."""
    from pseudopost.fitting import parts as P

    part, stats, _, _ = _one_positive_in_400()
    x0, L, _ = laplace.laplace_approximation(part, stats)
    x0 = x0 + 4.0 * L[:, 0]
    calls = []
    ratios = P._ratios
    monkeypatch.setattr(P, "_ratios", lambda d, x, z: calls.append(x.shape[0]) or ratios(d, x, z))
    monkeypatch.setattr(P, "APPROXIMATE_MIN_PATTERNS", 1)  # the split-normal stand-in
    probed = P.laplace_draws(part, stats, x0, L, 100, 2, seed=0, approximate=True)
    (n, k), (n2, _) = P.PROBE_KHAT
    assert calls == [n]
    assert probed["posterior"].attrs["laplace_khat"] > k
    assert not probed["posterior"].attrs["laplace_resampled"]
    probes = P.PROBE_KHAT
    monkeypatch.setattr(P, "PROBE_KHAT", ())
    whole = P.laplace_draws(part, stats, x0, L, 100, 2, seed=0, approximate=True)
    np.testing.assert_array_equal(probed["posterior"]["beta"].to_numpy(),
                                  whole["posterior"]["beta"].to_numpy())  # fmt: skip
    part, stats = _stats("ordinal", {"n_levels": 4}, n=2000)
    x0, L, _ = laplace.laplace_approximation(part, stats)
    whole = P.laplace_draws(part, stats, x0, L, 50, 2, seed=3)
    monkeypatch.setattr(P, "PROBE_KHAT", probes)
    calls.clear()
    tree = P.laplace_draws(part, stats, x0, L, 50, 2, seed=3)
    assert calls == [n, n2 - n, P.LAPLACE_PROPOSALS - n2]
    assert tree["posterior"].attrs["laplace_resampled"]
    np.testing.assert_array_equal(tree["posterior"]["beta"].to_numpy(),
                                  whole["posterior"]["beta"].to_numpy())  # fmt: skip
