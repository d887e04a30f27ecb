"""Fitting column parts: nutpie on the written-out density (nothing compiled), statistics
swapped without rebuilding, and the posterior against PyMC's NUTS and a closed form."""

from __future__ import annotations

import warnings

import arviz_stats as azs
import numpy as np
import pymc as pm
import pytest
import xarray as xr

from pseudopost.fitting.parts import PartSampler, nutpie_model, sample_part, shared_data
from pseudopost.models.parts import PartData, make_part

from .._reference.part_models import pymc_model


def _ordinal(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 2, n)]).astype(float)
    eta = X @ np.array([0.6, -0.8])
    y = (rng.logistic(size=n) + eta > np.array([-0.5, 0.4, 1.5])[:, None]).sum(0).astype(float)
    active = rng.random(n) < 0.8
    part = make_part("ordinal", "y", ["a", "b"], n_levels=4)
    return part, PartData(np.where(active, y, np.nan), X, active), rng.uniform(0.3, 1.0, n)


def test_default_path_compiles_nothing_and_swaps_statistics(monkeypatch):
    import nutpie
    import pytensor

    fail = lambda *a, **k: pytest.fail("compiled")  # noqa: E731
    monkeypatch.setattr(nutpie, "compile_pymc_model", fail)
    monkeypatch.setattr(pytensor, "function", fail)
    part, data, w = _ordinal()
    stats = part.statistics(data, w)
    sampler = PartSampler(part, stats)
    some = np.flatnonzero(data.X[:, 0] == 0)
    fewer = part.statistics(data.take(some), w[some])  # fewer patterns: new shapes
    assert fewer.n_patterns < stats.n_patterns
    for s in (stats, fewer):
        tree = sampler.sample(s, draws=60, tune=60, chains=1, seed=3)
        post = tree["posterior"]
        assert set(post.data_vars) == {"cutpoints", "beta"}
        assert post["beta"].dims == ("chain", "draw", "predictor")
        assert list(post["predictor"].values) == ["a", "b"]
        assert post["cutpoints"].dims == ("chain", "draw", "cutpoint")
        assert (np.diff(post["cutpoints"].to_numpy(), axis=-1) > 0).all()
        assert "sample_stats" in tree
    again = sampler.sample(stats, draws=60, tune=60, chains=1, seed=3)["posterior"]
    first = sampler.sample(stats, draws=60, tune=60, chains=1, seed=3)["posterior"]
    np.testing.assert_array_equal(again["beta"].to_numpy(), first["beta"].to_numpy())


def test_nutpie_model_data_are_the_statistics():
    part, data, w = _ordinal()
    stats = part.statistics(data, w)
    model = nutpie_model(part, stats)
    assert set(model._shared_data) == set(stats.arrays)
    with pytest.raises(ValueError, match="needs 'ordinal' statistics"):
        shared_data(part, make_part("bernoulli", "y").empty_statistics())


def _summary(post, name):
    x = post[name].to_numpy().reshape(-1, *post[name].shape[2:])
    ess = np.atleast_1d(azs.ess(post, method="bulk")[name].to_numpy())
    return x.mean(0), x.std(0), ess


@pytest.mark.slow
def test_posterior_equals_pymc_nuts_on_the_reference_model():
    """nutpie on the written-out density against PyMC's own NUTS on the reference model
    (the ready OrdinalRegression, weighted): means and sds within Monte Carlo error. (About a
    minute, mostly PyMC's compilation; the fast sibling is the conjugate check below, and the
    density itself equals PyMC's in tests/models/parts.)"""
    part, data, w = _ordinal()
    stats = part.statistics(data, w)
    ours = PartSampler(part, stats, precondition=False).sample(
        stats, draws=600, tune=500, chains=2, seed=1
    )  # the plain written-out density (the preconditioned one is checked against it below)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pymc_model(part, data, w):
            ref = pm.sample(
                draws=600, tune=500, chains=2, random_seed=2, nuts_sampler="pymc",
                progressbar=False, compute_convergence_checks=False, cores=1,
            )  # fmt: skip
    for name in ("cutpoints", "beta"):
        m1, s1, e1 = _summary(ours["posterior"], name)
        m2, s2, e2 = _summary(ref["posterior"].to_dataset(), name)
        se_mean = np.sqrt(s1**2 / e1 + s2**2 / e2)
        np.testing.assert_array_less(np.abs(m1 - m2), 4.5 * se_mean)
        se_sd = np.sqrt(s1**2 / (2 * e1) + s2**2 / (2 * e2))  # sd of a sample sd (near normal)
        np.testing.assert_array_less(np.abs(s1 - s2), 4.5 * se_sd)


def test_nutpie_on_the_simplex_density_matches_the_conjugate_posterior():
    """The Dirichlet-categorical density on PyMC's simplex transform, sampled by nutpie,
    against its closed form Dirichlet(a + C) (and the exact sampler)."""
    rng = np.random.default_rng(4)
    n = 80
    part = make_part("dirichlet_categorical", "y", n_levels=3, concentration=1.5)
    data = PartData(
        rng.choice(3, n, p=[0.2, 0.5, 0.3]).astype(float), np.zeros((n, 0)), np.ones(n, bool)
    )
    w = rng.uniform(0, 1, n)
    stats = part.statistics(data, w)
    alpha = 1.5 + stats.arrays["counts"]
    a0 = alpha.sum()
    mean, sd = alpha / a0, np.sqrt(alpha * (a0 - alpha) / (a0**2 * (a0 + 1)))
    import nutpie

    trace = nutpie.sample(
        nutpie_model(part, stats), draws=1000, tune=500, chains=2, seed=5, progress_bar=False
    )
    post = trace["posterior"].to_dataset()
    m, s, ess = _summary(post, "p")
    np.testing.assert_array_less(np.abs(m - mean), 4.5 * sd / np.sqrt(ess))
    np.testing.assert_array_less(np.abs(s - sd), 4.5 * sd / np.sqrt(2 * ess))
    exact = sample_part(part, stats, draws=500, tune=0, chains=2, seed=6)["posterior"]
    assert exact["p"].dims == ("chain", "draw", "level")
    assert "sample_stats" not in sample_part(part, stats, draws=5, tune=0, chains=1, seed=6)


def test_sampling_arguments_are_checked():
    part, data, w = _ordinal(n=30)
    with pytest.raises(ValueError, match="'draws' must be an integer >= 1"):
        sample_part(part, part.statistics(data, w), draws=0, tune=10, chains=1, seed=0)


def test_preconditioned_sampler_draws_the_same_posterior():
    """The Laplace-preconditioned variables (x = x0 + L z, a constant Jacobian) give the same
    posterior as the plain density: the transformed log density equals the original one up to
    the constant, and means and sds of two independent runs agree within Monte Carlo error (sd
    errors from the ESS of the squared deviations, not of the draws)."""
    from pseudopost.fitting.laplace import laplace_transform
    from pseudopost.fitting.parts import preconditioned_model

    part, data, w = _ordinal()
    stats = part.statistics(data, w)
    x0, L = laplace_transform(part, stats)
    density = part.log_density(stats)
    H = np.linalg.inv(L @ L.T)
    assert np.all(np.linalg.eigvalsh(H) > 0)
    model = preconditioned_model(part, stats)
    logp = model._make_logp_func()
    z = np.random.default_rng(0).normal(size=part.layout.size)
    lp, g = logp(z, **shared_data(part, stats), __laplace_x0=x0, __laplace_L=L)
    ref, gref = density.logp_grad(x0 + L @ z)
    assert lp == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(g, L.T @ gref, rtol=1e-10, atol=1e-12)
    runs = [
        PartSampler(part, stats, precondition=pc).sample(
            stats, draws=1000, tune=400, chains=2, seed=seed
        )["posterior"]
        for pc, seed in ((True, 3), (False, 4))
    ]
    for name in ("cutpoints", "beta"):
        (m1, s1, e1), (m2, s2, e2) = (_summary(r, name) for r in runs)
        se_mean = np.sqrt(s1**2 / e1 + s2**2 / e2)
        np.testing.assert_array_less(np.abs(m1 - m2), 4.5 * se_mean)
        q1, q2 = (_sq_ess(r, name) for r in runs)
        se_sd = np.sqrt(s1**2 / (2 * q1) + s2**2 / (2 * q2))
        np.testing.assert_array_less(np.abs(s1 - s2), 4.5 * se_sd)


def _sq_ess(post, name):
    """ESS of the squared deviations (the ESS that governs a sample variance)."""
    da = post[name]
    dev = (da - da.mean(("chain", "draw"))) ** 2
    return np.atleast_1d(azs.ess(dev.to_dataset(name="v"), method="bulk")["v"].to_numpy()).ravel()


def test_trees_are_capped_in_whitened_variables_only(monkeypatch):
    """With a dense Laplace factor the trees stop at 2**3 - 1 = 7 leapfrog steps (the draws'
    n_steps say so); with the diagonal fallback nutpie keeps its depth of 10."""
    import pseudopost.fitting.laplace as laplace
    import pseudopost.fitting.parts as parts

    seen = []
    run = parts.run_nutpie
    monkeypatch.setattr(
        parts, "run_nutpie", lambda *a, **k: seen.append(k["maxdepth"]) or run(*a, **k)
    )
    monkeypatch.setattr(parts, "_stuck", lambda tree: False)
    part, data, w = _ordinal()
    stats = part.statistics(data, w)
    tree = PartSampler(part, stats).sample(stats, draws=50, tune=50, chains=1, seed=1)
    assert seen == [parts.WHITENED_MAXDEPTH] == [3]
    assert int(tree["sample_stats"]["n_steps"].max()) <= 7
    x0, L = laplace.laplace_transform(part, stats)
    diagonal = lambda *a, **k: (x0, np.diag(np.sqrt(np.diag(L @ L.T))), False)  # noqa: E731
    monkeypatch.setattr(laplace, "laplace_approximation", diagonal)
    PartSampler(part, stats).sample(stats, draws=5, tune=5, chains=1, seed=1)
    assert seen[-1] == 10


def _chains(means, draws=250, seed=0, walk=False, constant=False):
    """A posterior-only tree of two parameters, one chain per entry of ``means`` (a random
    walk instead of independent draws with ``walk``)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((len(means), draws, 2))
    if walk:
        z = np.cumsum(z, axis=1) / 5
    z += np.asarray(means, dtype=float)[:, None, None]
    post = xr.Dataset({"beta": (("chain", "draw", "predictor"), z)})
    if constant:
        post["gamma"] = (("chain", "draw"), np.ones(z.shape[:2]))
    return xr.DataTree.from_dict({"posterior": post})


def test_a_run_is_stuck_when_chains_disagree_or_barely_move():
    """Independent draws: not stuck; chains a posterior sd apart (R-hat far above 1.05) or a
    slow random walk (bulk ESS far below 10 % of the draws): stuck. A parameter constant over
    the draws is left out, not read as stuck."""
    import pseudopost.fitting.parts as parts

    assert not parts._stuck(_chains([0.0, 0.0]))
    assert parts._stuck(_chains([0.0, 1.0]))
    assert parts._stuck(_chains([0.0, 0.0], walk=True))
    assert not parts._stuck(_chains([0.0, 0.0], constant=True))
    assert (
        parts._least_ess(_chains([0.0, 0.0], walk=True))
        < 50
        < parts._least_ess(_chains([0.0, 0.0]))
    )


def test_a_stuck_run_is_drawn_again_with_a_low_rank_mass_matrix(monkeypatch):
    """When the first (diagonal, depth-3) run is stuck, the part is drawn a second time with
    nutpie's low-rank adaptation, trees up to 15 steps and at least 150 tuning steps, on the
    next seed; the tree says so, and it keeps the run with the larger least ESS."""
    import pseudopost.fitting.parts as parts

    seen = []
    run = parts.run_nutpie
    monkeypatch.setattr(parts, "run_nutpie", lambda *a, **k: seen.append(k) or run(*a, **k))
    monkeypatch.setattr(parts, "_stuck", lambda tree: True)
    part, data, w = _ordinal()
    stats = part.statistics(data, w)
    tree = PartSampler(part, stats).sample(stats, draws=60, tune=20, chains=2, seed=3)
    first, second = seen
    assert (first["adaptation"], first["maxdepth"], first["tune"], first["seed"]) == (
        "diag",
        3,
        20,
        3,
    )
    assert (second["adaptation"], second["maxdepth"], second["tune"], second["seed"]) == (
        "low_rank",
        parts.RETRY_MAXDEPTH,
        parts.RETRY_MIN_TUNE,
        4,
    )
    assert (parts.RETRY_MAXDEPTH, parts.RETRY_MIN_TUNE) == (4, 150)
    assert "stuck" in tree["sample_stats"].attrs["rerun"]
    assert (tree["posterior"].sizes["chain"], tree["posterior"].sizes["draw"]) == (2, 60)
