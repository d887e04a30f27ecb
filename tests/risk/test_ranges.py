import numpy as np
import pytest

from pseudopost.risk.ranges import (
    AdditiveRange,
    ArrayRange,
    BracketRange,
    MultiplicativeRange,
    TailRange,
)


def test_multiplicative_and_additive():
    x = np.array([10.0, 100.0, -5.0])
    lo, hi = MultiplicativeRange(0.4, 1.8).bounds(x)
    np.testing.assert_allclose(lo, [4, 40, -9])
    np.testing.assert_allclose(hi, [18, 180, -2])
    lo, hi = AdditiveRange(1.0, 2.5).bounds(x)
    np.testing.assert_allclose(lo, x - 1)
    np.testing.assert_allclose(hi, x + 2.5)


def test_brackets_hold_each_value():
    x = np.array([5.0, 10.0, 19.9, 20.0, 100.0])
    lo, hi = BracketRange([0, 10, 20, np.inf]).bounds(x)
    np.testing.assert_array_equal(lo, [0, 10, 10, 20, 20])
    np.testing.assert_array_equal(hi, [10, 20, 20, np.inf, np.inf])
    lo, hi = BracketRange([0, 10, 20]).bounds(np.array([20.0]))  # top cut closes the last
    assert (lo[0], hi[0]) == (10, 20)


def test_tail_range_widens_the_top_q():
    x = np.arange(1.0, 101.0)
    lo, hi = TailRange(0.4, 1.8, 0.2, 2.4, q=0.05).bounds(x)
    assert np.sum(lo == 0.2 * x) == 5 and np.all(lo[-5:] == 0.2 * x[-5:])
    assert np.all(hi[:95] == 1.8 * x[:95])


def test_array_range():
    lo, hi = ArrayRange([0, 1], [2, 3]).bounds(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(lo, [0, 1])
    np.testing.assert_array_equal(hi, [2, 3])


@pytest.mark.parametrize(
    ("make", "msg"),
    [
        (lambda: MultiplicativeRange(1.8, 0.4), "a <= b"),
        (lambda: MultiplicativeRange(1.2, 1.8), "0 <= a <= 1 <= b"),
        (lambda: MultiplicativeRange(np.nan, 1.8), "NaN"),
        (lambda: AdditiveRange(-1, 1), "below"),
        (lambda: TailRange(0.4, 1.8, 0.2, 2.4, q=0.0), "q"),
        (lambda: TailRange(0.4, 1.8, 0.2, 2.4, q=1.5), "q"),
        (lambda: BracketRange([0, 5, 5]), "strictly increasing"),
        (lambda: ArrayRange([0, 3], [1, 2]), "record 1 has lower 3"),
    ],
)
def test_bad_ranges(make, msg):
    with pytest.raises(ValueError, match=msg):
        make()


def test_value_outside_its_range_names_the_record():
    with pytest.raises(ValueError, match="record 1 has value 5 outside"):
        ArrayRange([0, 0], [1, 1]).bounds(np.array([0.5, 5.0]))
    with pytest.raises(ValueError, match="outside every bracket"):
        BracketRange([0, 10]).bounds(np.array([11.0]))
    with pytest.raises(ValueError, match="NaN"):
        ArrayRange([0, np.nan], [1, 2]).bounds(np.array([0.5, 1.0]))
