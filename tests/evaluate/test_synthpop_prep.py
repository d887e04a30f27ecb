"""Cells as synthpop reads them: missing cells, codes, levels, and synthpop's numeric groups."""

import numpy as np
import pandas as pd
import pytest

from pseudopost.evaluate._synthpop_prep import (
    MISSING_LABEL,
    check_missing_codes,
    factor_codes,
    group_numeric,
    missing_mask,
)


def test_missing_cells_of_every_kind():
    s = pd.Series(["a", "", None, np.nan, pd.NA, "b"], dtype=object)
    assert missing_mask(s).tolist() == [False, True, True, True, True, False]
    num = pd.Series(pd.array([1, None, 3], dtype="Int64"))
    assert missing_mask(num).tolist() == [False, True, False]
    assert missing_mask(pd.Series([0.0, np.nan])).tolist() == [False, True]


def test_factor_codes_order_levels_as_r_rbind():
    first = np.array(["b", "a", None], dtype=object)
    second = np.array(["c", "a", "b"], dtype=object)
    c1, c2, levels = factor_codes(first, second)
    # sorted levels of the first array, then the second's new ones, then the missing level
    assert levels == ["a", "b", "c", MISSING_LABEL]
    assert c1.tolist() == [1, 0, 3]
    assert c2.tolist() == [2, 0, 1]


def test_quantile_groups_by_hand():
    x = np.arange(1.0, 11.0)
    g = group_numeric(x, x.copy(), 5, (), "x")
    # 20 values 1,1,2,2,...,10,10; R type-7 quantiles at 0, .2, ..., 1 (index 1 + 19 p):
    # 1, 2 + .8 = 2.8, 4 + .6 = 4.6, 6 + .4 = 6.4, 8 + .2 = 8.2, 10
    assert g.style == "quantile"
    np.testing.assert_allclose(g.breaks, [1, 2.8, 4.6, 6.4, 8.2, 10])
    assert g.real.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert g.levels[-1].endswith("]") and g.levels[0].endswith(")")  # last interval closed


def test_quantile_breaks_match_numpy_linear_quantiles():
    rng = np.random.default_rng(3)
    x, y = rng.lognormal(size=40), rng.lognormal(size=25)
    g = group_numeric(x, y, 5, (), "x")
    expected = np.quantile(np.r_[x, y], np.linspace(0, 1, 6))
    np.testing.assert_allclose(g.breaks, expected, rtol=1e-12)


def test_few_distinct_values_get_one_group_each():
    real = np.array([0.0] * 8 + [1.0, 5.0])
    syn = np.array([0.0] * 9 + [3.0])
    g = group_numeric(real, syn, 5, (), "x")
    # 4 distinct values <= 5 groups: classInt's "unique" style, breaks at the midpoints
    np.testing.assert_allclose(g.breaks[1:-1], [0.5, 2.0, 4.0])
    assert g.real.tolist() == [0] * 8 + [1, 3]
    assert g.synthetic.tolist() == [0] * 9 + [2]


def test_equal_width_fallback_when_quantiles_collapse():
    x = np.array([0.0] * 18 + [1, 2, 3, 4, 5, 6])
    g = group_numeric(x, x.copy(), 5, (), "x")
    # quantile breaks 0,0,0,0,1.6,6 leave two levels (< 3): equal widths 0, 1.2, ..., 6
    assert g.style == "equal"
    np.testing.assert_allclose(g.breaks, [0, 1.2, 2.4, 3.6, 4.8, 6.0])
    assert g.real[18:].tolist() == [0, 1, 2, 3, 4, 4]
    # a code counts as a level (synthpop's test on the number of levels): no fallback then
    with_code = group_numeric(np.r_[x, -8.0], x.copy(), 5, (-8.0,), "x")
    assert with_code.style == "quantile" and len(with_code.levels) == 3


def test_codes_and_missing_cells_are_levels_of_their_own():
    real = np.array([1.0, 2.0, -8.0, np.nan, 3.0])
    syn = np.array([2.0, -8.0, -8.0, 1.0, 3.0])
    g = group_numeric(real, syn, 5, (-8.0,), "x")
    assert g.levels[3:] == ["-8", MISSING_LABEL]
    assert g.real.tolist() == [0, 1, 3, 4, 2]
    assert g.synthetic.tolist() == [1, 3, 3, 0, 2]


def test_grouping_needs_a_synthetic_value():
    with pytest.raises(ValueError, match="no value in 'synthetic'"):
        group_numeric(np.array([1.0, 2.0]), np.array([np.nan, -8.0]), 5, (-8.0,), "x")
    with pytest.raises(ValueError, match="'ngroups'"):
        group_numeric(np.array([1.0, 2.0]), np.array([1.0]), 1, (), "x")


FRAME = pd.DataFrame({"x": [1.0, -8.0], "g": ["a", "b"]})


@pytest.mark.parametrize(
    ("codes", "error", "message"),
    [
        ([-8], TypeError, "must be a mapping"),
        ({"zz": [1]}, ValueError, "column 'zz', which is not in 'real'"),
        ({"x": -8}, TypeError, r"must be a list, e.g. \[-8\]"),
        ({"x": "-8"}, TypeError, "must be a list"),
        ({"x": ["-8"]}, TypeError, "must be numbers; got '-8'"),
        ({"x": [True]}, TypeError, "must be numbers"),
        ({"x": [np.nan]}, ValueError, "finite numbers"),
    ],
)
def test_bad_codes_are_named(codes, error, message):
    with pytest.raises(error, match=message):
        check_missing_codes(codes, FRAME, FRAME)


def test_codes_of_categorical_columns_are_levels_already():
    assert check_missing_codes({"g": ["a"], "x": [-8, -8.0]}, FRAME, FRAME) == {"x": (-8.0,)}
