"""Bad input to the parts: clear errors naming the argument, the value and what was expected,
before any work; inputs are never modified."""

from __future__ import annotations

import numpy as np
import pytest

from pseudopost.models.parts import FAMILIES, PartData, make_part


def _data(y, X=None, active=None):
    y = np.asarray(y, dtype=float)
    n = y.size
    return PartData(
        y, np.zeros((n, 0)) if X is None else X, np.ones(n, bool) if active is None else active
    )


def test_part_data_shapes_and_types():
    with pytest.raises(ValueError, match="'y' must be 1-d"):
        PartData(np.zeros((3, 1)), np.zeros((3, 0)), np.ones(3, bool))
    with pytest.raises(ValueError, match=r"'X' must have shape \(3, p\)"):
        PartData(np.zeros(3), np.zeros((2, 1)), np.ones(3, bool))
    with pytest.raises(TypeError, match="'active' must be a bool array"):
        PartData(np.zeros(3), np.zeros((3, 0)), np.ones(3))
    with pytest.raises(ValueError, match=r"'active' must have shape \(3,\)"):
        PartData(np.zeros(3), np.zeros((3, 0)), np.ones(4, bool))


@pytest.mark.parametrize(
    "family,options,bad,expected",
    [
        ("bernoulli", {}, 2.0, "0 or 1"),
        ("categorical", {"n_levels": 3}, 3.0, r"integer code in 0\.\.2"),
        ("categorical", {"n_levels": 3}, 1.5, r"integer code in 0\.\.2"),
        ("ordinal", {"n_levels": 4}, -1.0, r"integer code in 0\.\.3"),
        ("normal", {}, np.inf, "finite"),
        ("lognormal", {}, 0.0, "strictly positive"),
        ("poisson", {}, 2.5, "non-negative integer"),
        ("negative_binomial", {}, -1.0, "non-negative integer"),
        ("zero_truncated_negative_binomial", {}, 0.0, "positive integer"),
        ("dirichlet_categorical", {"n_levels": 2}, 2.0, r"integer code in 0\.\.1"),
    ],
)
def test_outcome_outside_the_support_names_the_record(family, options, bad, expected):
    part = make_part(family, "income", **options)
    y = np.array([1.0, 1.0, bad, 1.0, bad])
    before = y.copy()
    with pytest.raises(ValueError, match=f"'income' must be .*{expected}.*record 2 has .*2 such"):
        part.statistics(_data(y), np.ones(5))
    np.testing.assert_array_equal(y, before)
    # the same value on an inactive record is ignored
    part.statistics(_data(y, active=np.array([True, True, False, True, False])), np.ones(5))


def test_design_and_weights_are_checked():
    part = make_part("poisson", "c", ["a", "b"])
    y = np.array([1.0, 2.0, 0.0])
    with pytest.raises(ValueError, match=r"2 predictor\(s\) \['a', 'b'\]; 'X' has 1"):
        part.statistics(_data(y, np.zeros((3, 1))), np.ones(3))
    X = np.zeros((3, 2))
    X[1, 0] = np.nan
    with pytest.raises(ValueError, match="not finite on active record 1"):
        part.statistics(_data(y, X), np.ones(3))
    part.statistics(_data(y, X, np.array([True, False, True])), np.ones(3))
    with pytest.raises(ValueError, match=r"'weights' must be finite and >= 0; record 2 has -1"):
        part.statistics(_data(y, np.zeros((3, 2))), np.array([1.0, 0.5, -1.0]))
    with pytest.raises(ValueError, match=r"'weights' must have shape \(3,\)"):
        part.statistics(_data(y, np.zeros((3, 2))), np.ones(4))


def test_specs_are_checked():
    with pytest.raises(ValueError, match="Unknown part family 'beta'"):
        make_part("beta", "y")
    with pytest.raises(ValueError, match=r"'n_levels' must be an integer >= 2\. Got 1"):
        make_part("categorical", "y", n_levels=1)
    with pytest.raises(ValueError, match="'n_levels' must be an integer >= 2"):
        make_part("ordinal", "y", n_levels=2.5)
    with pytest.raises(ValueError, match="takes no predictors"):
        make_part("dirichlet_categorical", "y", ["a"], n_levels=3)
    with pytest.raises(ValueError, match="'concentration' must be a finite number > 0"):
        make_part("dirichlet_categorical", "y", n_levels=3, concentration=0.0)
    with pytest.raises(ValueError, match="'prior_scale' must be a finite number > 0"):
        make_part("normal", "y", prior_scale=-1.0)
    with pytest.raises(ValueError, match="duplicates"):
        make_part("normal", "y", ["a", "a"])
    with pytest.raises(ValueError, match="without '::'"):
        make_part("normal", "y", name="a::b")
    with pytest.raises(TypeError, match="'outcome' must be a non-empty str"):
        make_part("normal", "")


def test_default_prior_scales_are_the_ready_models():
    assert make_part("normal", "y").prior_scale == 10.0
    assert make_part("lognormal", "y").prior_scale == 10.0
    for family in ("bernoulli", "poisson", "negative_binomial", "zero_truncated_negative_binomial"):
        assert make_part(family, "y").prior_scale == 2.5
    for family in ("categorical", "ordinal"):
        assert make_part(family, "y", n_levels=3).prior_scale == 2.5
    assert set(FAMILIES) == {
        "bernoulli", "categorical", "ordinal", "normal", "lognormal", "poisson",
        "negative_binomial", "zero_truncated_negative_binomial", "dirichlet_categorical",
        "masked_categorical", "cumulative", "binned", "bin_points", "tilted_levels",
    }  # fmt: skip
    assert make_part("normal", "y").name == "y"
    assert make_part("categorical", "income", n_levels=3, name="income:status").name == (
        "income:status"
    )
