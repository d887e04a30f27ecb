"""Status encoding (observed / missing / codes / spikes) and its exact inverse."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pseudopost.models.status import (
    StatusInfo,
    column_kind,
    is_missing,
    join_status,
    split_status,
)

FAST = settings(max_examples=100, deadline=None)


def _empty(v) -> bool:
    """Brute-force empty cell, written independently of the module."""
    if v is None or v is pd.NA:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return isinstance(v, str) and v == ""


def _expected_status(series: pd.Series, codes, spikes) -> list[int]:
    out = []
    for v in series.astype(object).tolist():
        if _empty(v):
            out.append(1)
            continue
        s = 0
        for j, t in enumerate([*codes, *spikes]):
            if (isinstance(v, str) == isinstance(t, str)) and v == t:
                s = 2 + j
                break
        out.append(s)
    return out


# --- strategies: a column of one dtype, its codes and spikes ----------------------------------

NUM_POOL = [-9, -8, 0, 1, 2, 3, 40, 7]
STR_POOL = ["a", "b", "c", "-8", "refused", "n/a"]


@st.composite
def numeric_case(draw):
    dtype = draw(st.sampled_from(["float64", "int64", "Int64", "Float64", "int32"]))
    n = draw(st.integers(0, 12))
    vals = draw(st.lists(st.sampled_from(NUM_POOL), min_size=n, max_size=n))
    can_miss = dtype not in ("int64", "int32")
    miss = draw(st.lists(st.booleans(), min_size=n, max_size=n)) if can_miss else [False] * n
    cells = [(None if m else v) for v, m in zip(vals, miss, strict=True)]
    if dtype in ("float64",):
        s = pd.Series([np.nan if c is None else float(c) for c in cells], dtype=dtype)
        if n:  # non-integral values too
            s = s + draw(st.sampled_from([0.0, 0.5]))
    else:
        s = pd.Series(cells, dtype=dtype)
    pool = sorted(set(NUM_POOL))
    chosen = draw(st.lists(st.sampled_from(pool), unique=True, max_size=4))
    k = draw(st.integers(0, len(chosen)))
    codes, spikes = chosen[:k], chosen[k:]
    return s, codes, spikes


@st.composite
def text_case(draw):
    kind = draw(st.sampled_from(["object", "str", "string", "category", "ordered"]))
    n = draw(st.integers(0, 12))
    marker = draw(st.sampled_from(["none", "nan", "empty", "mixed"]))
    cells = []
    for _ in range(n):
        if draw(st.booleans()) and draw(st.booleans()):
            if marker == "mixed":
                cells.append(draw(st.sampled_from([None, np.nan, ""])))
            else:
                cells.append({"none": None, "nan": np.nan, "empty": ""}[marker])
        else:
            cells.append(draw(st.sampled_from(STR_POOL)))
    if kind == "object":
        s = pd.Series(cells, dtype=object)
    elif kind == "str":
        s = pd.Series(cells, dtype="str")
    elif kind == "string":
        s = pd.Series(cells, dtype="string")
    else:
        cats = [*STR_POOL, ""] if marker in ("empty", "mixed") else STR_POOL
        s = pd.Series(
            pd.Categorical(
                [None if (c is None or (isinstance(c, float))) else c for c in cells],
                categories=cats,
                ordered=kind == "ordered",
            )
        )
    codes = draw(st.lists(st.sampled_from(STR_POOL), unique=True, max_size=3))
    return s, codes


def _equivalent(a: pd.Series, b: pd.Series) -> None:
    """Same dtype, same values, every empty cell empty in both."""
    assert a.dtype == b.dtype
    ma, mb = is_missing(a), is_missing(b)
    np.testing.assert_array_equal(ma, mb)
    av, bv = a.astype(object).to_numpy(), b.astype(object).to_numpy()
    assert [x for x, m in zip(av, ma, strict=True) if not m] == [
        x for x, m in zip(bv, mb, strict=True) if not m
    ]


@FAST
@given(numeric_case())
def test_numeric_round_trip_and_status(case):
    s, codes, spikes = case
    before = s.copy()
    status, values, info = split_status(s, codes, spikes=spikes, name="x")
    pd.testing.assert_series_equal(s, before)  # input untouched
    assert status.tolist() == _expected_status(s, codes, spikes)
    assert info.levels == (
        "observed",
        "missing",
        *(str(c) for c in codes),
        *(f"spike:{v}" for v in spikes),
    )
    obs = status == 0
    assert values.dtype == np.float64
    assert np.all(np.isnan(values[~obs]))
    np.testing.assert_array_equal(values[obs], s.to_numpy(dtype=float, na_value=np.nan)[obs])
    back = join_status(status, values, info, index=s.index)
    # exact: dtype, values and the kind of empty cell
    pd.testing.assert_series_equal(back, s.rename("x"))


@FAST
@given(text_case())
def test_text_round_trip_and_status(case):
    s, codes = case
    if column_kind(s) == "category" and not set(codes) <= set(s.cat.categories):
        with pytest.raises(ValueError, match="categories"):
            split_status(s, codes)
        return
    status, values, info = split_status(s, codes, name="t")
    assert status.tolist() == _expected_status(s, codes, ())
    obs = status == 0
    assert all(_empty(v) for v in values[~obs])
    assert list(values[obs]) == list(s.astype(object).to_numpy()[obs])
    back = join_status(status, values, info, index=s.index)
    _equivalent(back, s.rename("t"))
    miss = s.astype(object)[is_missing(s)].tolist()
    one_marker = len({("nan" if isinstance(v, float) else repr(v)) for v in miss}) <= 1
    if one_marker and s.dtype == object:
        # homogeneous empty cells come back as the same marker (None stays None, "" stays "")
        pd.testing.assert_series_equal(back, s.rename("t"))


def test_levels_are_fixed_by_declarations_not_data():
    s = pd.Series([1.0, 2.0, 3.0])
    *_, info = split_status(s, [-8, -9], spikes=[0, 2.5])
    assert info.levels == ("observed", "missing", "-8", "-9", "spike:0", "spike:2.5")
    assert info.code_status(-9) == 3 and info.spike_status(2.5) == 5


def test_example_income_column():
    s = pd.Series([1200.0, -8, np.nan, 0, -9, 0, 530.5], name="income")
    status, values, info = split_status(s, [-8, -9], spikes=[0])
    assert status.tolist() == [0, 2, 1, 4, 3, 4, 0]
    np.testing.assert_array_equal(values, [1200.0, np.nan, np.nan, np.nan, np.nan, np.nan, 530.5])
    assert info.codes == (-8.0, -9.0) and info.spikes == (0.0,)


def test_int_column_with_codes_keeps_int64_and_gains_nullable_when_missing():
    s = pd.Series([5, -8, 7, -9], dtype="int64", name="n")
    status, values, info = split_status(s, [-8, -9])
    assert info.codes == (-8, -9) and all(type(c) is int for c in info.codes)
    pd.testing.assert_series_equal(join_status(status, values, info), s)
    status2 = status.copy()
    status2[0] = 1
    out = join_status(status2, values, info)
    assert out.dtype == "Int64" and out.isna().tolist() == [True, False, False, False]
    assert out.tolist()[1:] == [-8, 7, -9]
    s32 = s.astype("int32")
    st32, v32, i32 = split_status(s32, [-8])
    st32[2] = 1
    assert join_status(st32, v32, i32).dtype == "Int32"


def test_empty_strings_are_missing_in_text_columns_only():
    assert is_missing(pd.Series(["a", "", None, np.nan], dtype=object)).tolist() == [
        False,
        True,
        True,
        True,
    ]
    assert is_missing(pd.Series(["a", ""], dtype="string")).tolist() == [False, True]
    cat = pd.Series(pd.Categorical(["a", "", None], categories=["a", ""]))
    assert is_missing(cat).tolist() == [False, True, True]
    assert is_missing(pd.Series([1.0, np.nan])).tolist() == [False, True]
    assert is_missing(pd.Series([1, None], dtype="Int64")).tolist() == [False, True]


# --- bad input: clear errors naming the column and value, before any work ----------------------


@pytest.mark.parametrize(
    ("series", "codes", "spikes", "kwargs", "error", "match"),
    [
        (
            pd.Series([1.0, 2.0]),
            ["-8"],
            (),
            {},
            TypeError,
            r"code '-8' of column 'x' must be a number",
        ),
        (pd.Series([1.0, 2.0]), [True], (), {}, TypeError, "must be a number"),
        (pd.Series([1.0, 2.0]), [np.nan], (), {}, ValueError, "must be finite"),
        (pd.Series([1, 2]), [1.5], (), {}, ValueError, r"code 1.5 .* not an integer"),
        (
            pd.Series([1, 2], dtype="uint8"),
            [-8],
            (),
            {},
            ValueError,
            r"outside the range \[0, 255\]",
        ),
        (pd.Series(["a", "b"]), [-8], (), {}, TypeError, r"code -8 of column 'x' must be a string"),
        (pd.Series(["a", "b"]), [""], (), {}, ValueError, "empty cell"),
        (pd.Series([True, False]), [0], (), {}, TypeError, "boolean"),
        (
            pd.Series(pd.Categorical(["a", "b"])),
            ["c"],
            (),
            {},
            ValueError,
            r"code 'c' of column 'x' is not one of its categories",
        ),
        (
            pd.Series([1.0, 2.0]),
            [-8],
            [-8],
            {},
            ValueError,
            "both as a missing code and as a spike",
        ),
        (pd.Series([1.0, 2.0]), [-8, -8.0], (), {}, ValueError, "declared twice"),
        (pd.Series([1.0, 2.0]), (), [0, 0], {}, ValueError, "spike 0 is declared twice"),
        (pd.Series(["a", "b"]), (), [0], {}, TypeError, r"spike 0 has no place"),
        (
            pd.Series([1.0, 2.0]),
            (),
            [-1],
            {"support": (0, np.inf)},
            ValueError,
            r"spike -1 of column 'x' is outside the column's support",
        ),
        (pd.Series([1, 2]), (), [0.5], {}, ValueError, "not an integer"),
        (pd.Series(["a", "b"]), ["missing"], (), {}, ValueError, "clashes"),
        (pd.Series([1.0]), "-8", (), {}, TypeError, "list or tuple"),
        (pd.Series([2**60, 1]), (), (), {}, ValueError, "beyond 2\\*\\*53"),
    ],
)
def test_bad_declarations_are_clear_errors(series, codes, spikes, kwargs, error, match):
    with pytest.raises(error, match=match):
        split_status(series.rename("x"), codes, spikes=spikes, **kwargs)


def test_join_rejects_bad_status_and_values():
    s = pd.Series([1.0, -8.0, 3.0], name="x")
    status, values, info = split_status(s, [-8])
    with pytest.raises(ValueError, match=r"status code 5 is outside 0\.\.2"):
        join_status(np.array([0, 5, 0]), values, info)
    with pytest.raises(ValueError, match="observed record 1 has no finite value"):
        join_status(np.array([0, 0, 0]), values, info)
    with pytest.raises(ValueError, match="same length"):
        join_status(status[:2], values, info)
    cat = pd.Series(pd.Categorical(["a", "b"]), name="c")
    cs, _, ci = split_status(cat, [])
    with pytest.raises(ValueError, match="not one of its categories"):
        join_status(cs, np.array(["a", "z"], dtype=object), ci)


def test_status_info_is_plain_frozen_data():
    *_, info = split_status(pd.Series([1.0]), [-8])
    assert isinstance(info, StatusInfo)
    with pytest.raises(AttributeError):
        info.levels = ()
    with pytest.raises(KeyError):
        info.code_status(-7)
