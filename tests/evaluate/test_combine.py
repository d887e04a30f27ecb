"""Combining rules for m synthetic datasets (Raghunathan, Reiter & Rubin 2003; Reiter 2003)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from pseudopost.evaluate.combine import combine, combine_fits


def test_partially_synthetic_rule_by_hand():
    c = combine([1.0, 2.0, 3.0], [0.5, 0.5, 0.5], rule="partially")
    # qbar = 2, b = 1, ubar = 0.5: T = b/m + ubar, nu = (m-1)(1 + ubar/(b/m))^2
    assert c.estimate.iloc[0] == 2.0
    assert c.variance.iloc[0] == pytest.approx(1 / 3 + 0.5)
    assert c.df.iloc[0] == pytest.approx(2 * 2.5**2)
    assert not c.adjusted.iloc[0]


def test_fully_synthetic_rule_by_hand():
    c = combine([1.0, 2.0, 3.0], [0.5, 0.5, 0.5], rule="fully")
    # T = (1 + 1/m) b - ubar, nu = (m-1)(1 - ubar/((1+1/m) b))^2
    assert c.variance.iloc[0] == pytest.approx(4 / 3 - 0.5)
    assert c.df.iloc[0] == pytest.approx(2 * (1 - 0.5 / (4 / 3)) ** 2)
    lo, hi = c.conf_int(0.9).iloc[0]
    assert lo < 2.0 < hi


def test_fully_synthetic_negative_variance_is_adjusted():
    c = combine([1.0, 1.01], [1.0, 1.0], rule="fully")
    assert c.adjusted.iloc[0]
    assert c.variance.iloc[0] == pytest.approx(1.0)  # ubar, the conservative choice


def test_terms_are_kept_by_name():
    est = [pd.Series({"a": 1.0, "b": 2.0}), pd.Series({"a": 3.0, "b": 2.0})]
    var = [pd.Series({"a": 0.1, "b": 0.2}), pd.Series({"a": 0.1, "b": 0.2})]
    c = combine(est, var, rule="partially")
    assert list(c.estimate.index) == ["a", "b"]
    assert c.between["b"] == 0.0 and np.isinf(c.df["b"])
    assert list(c.table().columns)[:3] == ["estimate", "se", "df"]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"estimates": [1.0], "variances": [1.0], "rule": "fully"}, ValueError, "m >= 2"),
        ({"estimates": [1.0, 2.0], "variances": [1.0], "rule": "fully"}, ValueError, "match"),
        ({"estimates": [1.0, 2.0], "variances": [1.0, -1.0], "rule": "fully"}, ValueError, ">= 0"),
        ({"estimates": [1.0, 2.0], "variances": [1.0, 1.0], "rule": "rrr"}, ValueError, "'rule'"),
    ],
)
def test_bad_inputs_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        combine(**kwargs)


def _datasets(m, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=200)
    return [pd.DataFrame({"x": x, "y": 1 + 2 * x + rng.normal(size=200)}) for _ in range(m)]


def test_combine_fits_with_statsmodels_matches_manual():
    data = _datasets(4, 1)
    c = combine_fits(data, lambda d: smf.ols("y ~ x", d).fit(), rule="partially")
    fits = [smf.ols("y ~ x", d).fit() for d in data]
    q = np.array([f.params["x"] for f in fits])
    u = np.array([f.bse["x"] ** 2 for f in fits])
    assert c.estimate["x"] == pytest.approx(q.mean())
    assert c.variance["x"] == pytest.approx(q.var(ddof=1) / 4 + u.mean())
    assert c.estimate["x"] == pytest.approx(2.0, abs=0.2)


def test_combine_fits_with_a_pair_and_bad_returns():
    data = _datasets(3, 2)
    c = combine_fits(data, lambda d: (d.y.mean(), d.y.var() / len(d)), rule="fully")
    assert c.m == 3
    with pytest.raises(TypeError, match="dataset 0 gave float"):
        combine_fits(data, lambda d: 1.0, rule="fully")
    with pytest.raises(ValueError, match="m >= 2"):
        combine_fits(data[:1], lambda d: (1.0, 1.0), rule="fully")
