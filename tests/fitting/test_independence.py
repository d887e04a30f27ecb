"""The independence Metropolis-Hastings sampler of a part's weighted posterior: an exact MCMC
kernel whatever its proposal (checked against quadrature of a skewed one-parameter posterior,
with the Laplace proposal and with a deliberately shifted one), refused when the proposal is too
far from the posterior (the caller runs NUTS), the same draws for the same seed."""

from __future__ import annotations

import arviz_stats as azs
import numpy as np
import pytest

from pseudopost.fitting import laplace
from pseudopost.fitting.parts import IMH_MIN_ACCEPTANCE, PartSampler, independence_draws
from pseudopost.models.parts import PartData, make_part


def _skewed(positives=3):
    """A logistic intercept from 3 positives in 25 records: skewed (the Laplace normal is not
    the posterior) and one-dimensional (its moments by quadrature)."""
    y = np.zeros(25)
    y[:positives] = 1.0
    part = make_part("bernoulli", "y", [])
    stats = part.statistics(PartData(y, np.zeros((25, 0)), np.ones(25, bool)), np.ones(25))
    return part, stats


def _quadrature(part, stats):
    density = part.log_density(stats)
    grid = np.linspace(-12.0, 6.0, 20_001)
    lp = np.array([density.logp_grad(np.array([g]))[0] for g in grid])
    w = np.exp(lp - lp.max())
    w /= w.sum()
    mean = float(np.sum(w * grid))
    return mean, float(np.sqrt(np.sum(w * (grid - mean) ** 2)))


def _flat(tree, part):
    post = tree["posterior"]
    n = post.sizes["chain"] * post.sizes["draw"]
    flat = {k: post[k].to_numpy().reshape(n, -1) for k in part.layout.names}
    return np.stack([part.layout.pack({k: v[i] for k, v in flat.items()}) for i in range(n)])


@pytest.mark.parametrize("shift", [0.0, 0.4])
def test_independence_draws_are_exact_against_quadrature(shift):
    """Mean and sd of the draws against quadrature of the posterior, to Monte Carlo error,
    though the proposal (the Laplace normal, or one moved 0.4 sd off the mode) has another
    mean: the chain corrects it, which importance-free normal draws would not."""
    part, stats = _skewed()
    x0, L, exact = laplace.laplace_approximation(part, stats)
    assert exact
    mean, sd = _quadrature(part, stats)
    assert abs(x0[0] - mean) > 0.1 * sd  # the proposal's centre is not the posterior mean
    tree = independence_draws(part, stats, x0 + shift * L[0, 0], L, 20_000, 200, 2, seed=3)
    assert tree is not None
    rate = tree["sample_stats"].attrs["acceptance_rate"]
    assert min(rate) >= IMH_MIN_ACCEPTANCE
    assert not tree["sample_stats"]["diverging"].any()
    x = _flat(tree, part)[:, 0]
    ess = float(azs.ess(x.reshape(2, -1)))  # within 4 Monte Carlo standard errors
    assert ess > 2_000
    assert abs(x.mean() - mean) < 4.0 * sd / np.sqrt(ess)
    assert abs(x.std() - sd) < 4.0 * sd / np.sqrt(2.0 * ess) + 0.01 * sd
    accepted = tree["sample_stats"]["accepted"].to_numpy()
    moved = np.diff(tree["posterior"]["intercept"].to_numpy().reshape(2, -1), axis=1) != 0
    np.testing.assert_array_equal(moved, accepted[:, 1:])  # a draw moves exactly when accepted


def test_a_proposal_far_too_narrow_is_refused_and_nuts_runs():
    """A proposal a twentieth of the posterior's spread: its ratios' tail is heavy (k-hat) or
    its chains stick, and no draws are returned; through the part sampler, NUTS runs instead."""
    part, stats = _skewed()
    x0, L, _ = laplace.laplace_approximation(part, stats)
    assert independence_draws(part, stats, x0, 0.05 * L, 250, 250, 2, seed=0) is None
    rng = np.random.default_rng(1)
    n = 400
    X = np.column_stack([rng.integers(0, 2, n), rng.normal(size=n)]).astype(float)
    y = np.zeros(n)
    y[0] = 1.0  # one positive in 400: skewed far beyond a normal's tails
    rare = make_part("bernoulli", "y", ["a", "b"])
    rare_stats = rare.statistics(PartData(y, X, np.ones(n, bool)), np.ones(n))
    x0, L, exact = laplace.laplace_approximation(rare, rare_stats)
    assert exact
    assert independence_draws(rare, rare_stats, x0, L, 250, 250, 2, seed=0) is None
    tree, _ = PartSampler(rare, rare_stats).sample_with_mode(
        rare_stats, draws=100, tune=100, chains=1, seed=0, independence=True
    )
    ss = tree["sample_stats"]
    assert "accepted" not in ss and float(ss["n_steps"].mean()) > 1.0  # NUTS trajectories


def test_same_seed_same_chain_and_tune_is_discarded():
    part, stats = _skewed(positives=10)
    x0, L, _ = laplace.laplace_approximation(part, stats)
    a = independence_draws(part, stats, x0, L, 300, 100, 2, seed=9)
    b = independence_draws(part, stats, x0, L, 300, 100, 2, seed=9)
    c = independence_draws(part, stats, x0, L, 300, 100, 2, seed=10)
    va, vb, vc = (t["posterior"]["intercept"].to_numpy() for t in (a, b, c))
    assert va.shape == (2, 300)
    np.testing.assert_array_equal(va, vb)
    assert not np.array_equal(va, vc)
    assert independence_draws(part, stats, x0, L, 20, 20, 1, seed=0) is None  # too few draws


def _counted(monkeypatch):
    """Count the log densities the proposals' ratios cost."""
    from pseudopost.fitting import parts as P

    calls = []
    ratios = P._ratios

    def counted(density, x, z):
        calls.append(x.shape[0])
        return ratios(density, x, z)

    monkeypatch.setattr(P, "_ratios", counted)
    return calls


def test_the_probe_ends_a_hopeless_chain_early_and_never_changes_a_kept_one(monkeypatch):
    """A proposal 4 sds off the mode sticks at once (7 % of the first chain's first PROBE moves
    accepted): they are judged and the other proposals' densities never computed (None, NUTS
    runs). A chain that passes is the very same with and without the probe (same seed, same
    draws)."""
    from pseudopost.fitting import parts as P

    part, stats = _skewed()
    x0, L, _ = laplace.laplace_approximation(part, stats)
    calls = _counted(monkeypatch)
    assert independence_draws(part, stats, x0 + 4.0 * L[0], L, 250, 250, 2, seed=0) is None
    assert calls == [P.PROBE]
    calls.clear()
    part, stats = _skewed(positives=10)
    x0, L, _ = laplace.laplace_approximation(part, stats)
    probed = independence_draws(part, stats, x0, L, 300, 100, 2, seed=9)
    assert calls == [P.PROBE, 2 * 400 - P.PROBE]
    monkeypatch.setattr(P, "PROBE", 10**9)  # no probe: every ratio at once
    whole = independence_draws(part, stats, x0, L, 300, 100, 2, seed=9)
    np.testing.assert_array_equal(probed["posterior"]["intercept"].to_numpy(),
                                  whole["posterior"]["intercept"].to_numpy())  # fmt: skip
    assert probed["sample_stats"].attrs["acceptance_rate"] == whole["sample_stats"].attrs[
        "acceptance_rate"]  # fmt: skip
    # fewer states per chain than the probe: it reads the first chain's only (60 of 120)
    short = independence_draws(part, stats, x0, L, 40, 20, 2, seed=9)  # no probe
    monkeypatch.setattr(P, "PROBE", 100)
    calls.clear()
    again = independence_draws(part, stats, x0, L, 40, 20, 2, seed=9)
    assert calls[0] == 60
    for a, b in ((short, again),):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a["posterior"]["intercept"].to_numpy(),
                                          b["posterior"]["intercept"].to_numpy())  # fmt: skip
