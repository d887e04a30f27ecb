"""Empirical audit of the per-part censoring of a whole file (issue 30 item 2): a 2-column file
(a binary and a 3-level categorical, each a Dirichlet-categorical part), neighbours D = D' plus
one record, exact draws of every part's censored posterior (rejection from the prior,
``CensoredFile``) and of the uncensored one (conjugate). The censored release's lower bound
stays below the claimed 2B, the uncensored release's exceeds it, and the package's NUTS draws
of a censored part follow the exact censored posterior."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pseudopost.fitting.censored import censored_part_draws, split_bound
from pseudopost.fitting.columns import file_part_data
from pseudopost.models.file import FileModel
from pseudopost.models.parts import PartData
from pseudopost.privacy.audit import CensoredFile, epsilon_lower_bound

A, LEVELS = ["n", "y"], ["p", "q", "r"]
#: every level present in D' too: the neighbours share one model plan (the bound holds given it)
REST = [("n", "q"), ("y", "q"), ("n", "r")]
OUTLIER = ("y", "r")
EPS = 2.0  # claimed: B = 1, B_k = 0.5 per part
MODEL = FileModel(predictor_matrix={"b": []})  # b marginal: both parts conjugate


def _file(rows):
    frame = pd.DataFrame({"a": pd.Categorical([r[0] for r in rows], categories=A),
                          "b": pd.Categorical([r[1] for r in rows], categories=LEVELS)})  # fmt: skip
    prepared = MODEL.prepare(frame)
    parts, data = file_part_data(MODEL, prepared)
    return CensoredFile(tuple(parts), tuple(data), split_bound(parts, EPS / 2)), prepared.n


def _record():
    one = lambda code: PartData(np.array([code]), np.zeros((1, 0)), np.array([True]))  # noqa: E731
    return {"a": one(1.0), "b": one(2.0)}


def _audit(base_rows, runs, seed):
    d, n_d = _file([*base_rows, OUTLIER])
    d2, n_d2 = _file(base_rows)
    assert [p.name for p in d.parts] == ["a", "b"] and d.bounds == {"a": 0.5, "b": 0.5}
    rng = np.random.default_rng(seed)
    out = {}
    for censored in (True, False):
        s = d.record_logp(d.draws(np.ones(n_d), runs, rng, censored=censored), _record())
        s2 = d2.record_logp(d2.draws(np.ones(n_d2), runs, rng, censored=censored), _record())
        out[censored] = epsilon_lower_bound(s, s2).epsilon_lower
    return out


@pytest.mark.parametrize(
    ("base", "censored_at_least"),
    [([("n", "p"), *REST], 0.2),  # D' of 4 records: the audit has power (measured 0.32)
     ([("n", "p")] * 27 + REST, 0.0)],  # n = 31: the censored posteriors near the prior
)  # fmt: skip
def test_censored_file_is_not_refuted_and_the_uncensored_one_is(base, censored_at_least):
    low = _audit(base, 20_000, seed=3)
    # discrete parts: each record's term lies in [-B_k, 0], so the true loss is at most B = 1
    assert censored_at_least <= low[True] <= EPS / 2
    assert low[False] > EPS  # uncensored: measured 2.2 (n = 5) and 2.3 (n = 31)


def test_rejection_sampler_is_the_censored_density():
    """The exact draws of a censored part follow its density (1-d: KS against the CDF by
    quadrature on the simplex's one free coordinate)."""
    f, n = _file([("n", "p")] * 6 + REST)
    part, data = f.parts[0], f.data[0]
    draws = f.draws(np.ones(n), 20_000, np.random.default_rng(4))["a"]["p"][:, 1]
    grid = np.linspace(1e-6, 1 - 1e-6, 200_001)
    counts = np.array([8, 1])  # a = n, y
    logd = np.clip(np.log(np.column_stack([1 - grid, grid])), -0.5, 0.5) @ counts  # flat prior
    cdf = np.cumsum(np.exp(logd - logd.max()))
    cdf /= cdf[-1]
    assert stats.kstest(draws, lambda v: np.interp(v, grid, cdf)).pvalue > 0.01
    assert part.family == "dirichlet_categorical" and data.n == n


def test_package_nuts_draws_the_exact_censored_posterior():
    """The mechanism's sampler (NUTS on the censored density) against the exact draws: the
    binary part's share of 'y' and the 3-level part's share of 'r' (two-sample KS on thinned
    NUTS draws, and the means within Monte Carlo error)."""
    f, n = _file([("n", "p")] * 6 + REST)
    exact = f.draws(np.ones(n), 20_000, np.random.default_rng(5))
    for j, (name, level) in enumerate((("a", 1), ("b", 2))):
        tree = censored_part_draws(f.parts[j], f.data[j], np.ones(n), f.bounds[name],
                                   draws=1000, tune=300, chains=2, seed=11)  # fmt: skip
        nuts = tree["posterior"]["p"].to_numpy()[..., level].ravel()
        ref = exact[name]["p"][:, level]
        assert abs(nuts.mean() - ref.mean()) < 0.03, (name, nuts.mean(), ref.mean())
        assert stats.ks_2samp(nuts[::5], ref).pvalue > 0.001
