"""The bin-points part: exact draws against the closed-form Dirichlet posterior of each bin,
inversion inside a bin against the shares, finite log shares at tiny concentrations."""

from __future__ import annotations

import numpy as np
import pytest

from pseudopost.models.parts import BinPointsPart, PartData
from pseudopost.models.parts.bin_points import log_dirichlet


def _part(groups, prior):
    return BinPointsPart("y", n_levels=len(groups), groups=tuple(groups), prior=tuple(prior))


def test_exact_draws_are_each_bins_dirichlet_posterior():
    groups, prior = (0, 0, 0, 1, 1), (0.5, 0.5, 2.0, 1.0, 0.25)
    part = _part(groups, prior)
    y = np.array([0, 0, 1, 2, 2, 2, 3, 4, 4], dtype=np.float64)
    w = np.array([1.0, 0.5, 1.0, 1.0, 0.2, 1.0, 1.0, 0.7, 1.0])
    stats = part.statistics(PartData(y, np.zeros((y.size, 0)), np.ones(y.size, bool)), w)
    draws = part.exact_draws(stats, 40_000, np.random.default_rng(3))["log_p"]
    p = np.exp(draws)
    # closed form: Dirichlet(prior + weighted counts) within each bin
    a = np.array(prior) + np.bincount(y.astype(int), weights=w, minlength=5)
    for idx in ([0, 1, 2], [3, 4]):
        a0 = a[idx].sum()
        mean, var = a[idx] / a0, a[idx] * (a0 - a[idx]) / (a0**2 * (a0 + 1))
        np.testing.assert_allclose(p[:, idx].sum(axis=1), 1.0, rtol=1e-12)
        assert np.all(np.abs(p[:, idx].mean(axis=0) - mean) < 4 * np.sqrt(var / 4e4))
        np.testing.assert_allclose(p[:, idx].var(axis=0), var, rtol=0.05)


def test_log_shares_stay_finite_at_tiny_concentrations():
    lp = log_dirichlet(np.array([1e-4, 1e-6, 3.0]), np.array([0, 0, 0]), 2000,
                       np.random.default_rng(0))  # fmt: skip
    assert np.all(np.isfinite(lp))
    # a share of concentration 1e-6 beside 3.0: almost surely below 1e-100 (log < -230)
    assert np.median(lp[:, 1]) < -230
    np.testing.assert_allclose(np.logaddexp.reduce(lp, axis=1), 0.0, atol=1e-12)


def test_sample_in_bins_follows_the_shares_of_the_given_bin():
    part = _part((0, 0, 1, 1, 1), (1.0,) * 5)
    log_p = np.log(np.array([0.3, 0.7, 0.2, 0.5, 0.3]))
    rng = np.random.default_rng(1)
    n = 200_000
    bins = rng.integers(0, 2, n)
    lv = part.sample_in_bins({"log_p": log_p}, bins, rng.random(n))
    assert np.all(np.isin(lv[bins == 0], [0, 1])) and np.all(np.isin(lv[bins == 1], [2, 3, 4]))
    for j, idx in ((0, [0, 1]), (1, [2, 3, 4])):
        share = np.bincount(lv[bins == j], minlength=5)[idx] / np.sum(bins == j)
        np.testing.assert_allclose(share, np.exp(log_p[idx]), atol=0.006)


def test_per_record_loglik_is_the_log_share():
    part = _part((0, 0, 1), (1.0, 1.0, 1.0))
    lp = np.log(np.array([[0.25, 0.75, 1.0], [0.5, 0.5, 1.0]]))
    y = np.array([1.0, 0.0, 2.0, np.nan])
    data = PartData(y, np.zeros((4, 0)), ~np.isnan(y))
    ll = part.loglik({"log_p": lp}, data)
    np.testing.assert_allclose(ll, [[np.log(0.75), np.log(0.25), 0, 0], [np.log(0.5)] * 2 + [0, 0]])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"groups": (1, 0), "prior": (1.0, 1.0)}, "non-decreasing"),
        ({"groups": (0, 0), "prior": (1.0, 0.0)}, "> 0"),
        ({"groups": (0,), "prior": (1.0, 1.0)}, "one entry per level"),
    ],
)
def test_bad_specs_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BinPointsPart("y", n_levels=2, **kwargs)
