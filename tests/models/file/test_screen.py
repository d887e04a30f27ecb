"""Awkward columns agencies' files carry (issue 31, item 5): duplicate or bad names, numbers out
of range and identifiers refused before any work, with the column, row and value named; and a
many-level categorical column modelled without predictors and left out of later columns'."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pseudopost as pp
from pseudopost.models.file import Declarations, make_plan
from pseudopost.models.file.choice import MANY_LEVELS
from pseudopost.models.file.design import ColumnFeatures
from pseudopost.models.file.encoding import encode
from pseudopost.models.file.plan import (
    MAX_COEFFICIENTS,
    knots_fitting,
    thinned_knots,
    trimmed_inputs,
)
from pseudopost.models.file.screen import ID_MIN_DISTINCT, OUTER_BOUND, screen_frame


def _small(n: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "age": rng.integers(16, 80, n),
            "income": np.round(rng.lognormal(10, 1, n)),
        },
        index=pd.RangeIndex(100, 100 + n),  # labels that are not positions
    )


def _with_id(n: int = 120) -> pd.DataFrame:
    f = _small(n)
    f["person"] = [f"P{k:05d}" for k in range(n)]
    return f


def _many(n: int = 150, levels: int = 400, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cats = [f"c{k:04d}" for k in range(levels)]
    f = _small(n, seed)
    f.insert(1, "code", pd.Categorical(rng.choice(cats[:100], n), categories=cats))
    return f


def test_duplicate_names_are_listed():
    f = _small()
    f = pd.concat([f, f[["age", "sex"]]], axis=1)
    with pytest.raises(ValueError, match=r"\['sex', 'age'\] occur more than once"):
        screen_frame(f)
    with pytest.raises(ValueError, match="occur more than once"):  # even when dropped
        screen_frame(f, drop=["age", "sex"])


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        (3, TypeError, r"must be strings; got \[3\]"),
        ("", ValueError, r"position\(s\) \[3\] have an empty name"),
        ("a::b", ValueError, r"\['a::b'\] contain '::'"),
    ],
)
def test_bad_names(name, error, message):
    f = _small()
    f[name] = 1.0
    with pytest.raises(error, match=message):
        screen_frame(f)


@pytest.mark.parametrize("value", [1e300, np.inf, -np.inf, -2 * OUTER_BOUND])
def test_numbers_out_of_range_name_column_row_value_and_count(value):
    f = _small()
    f["income"] = f["income"].astype(float)
    f.loc[[117, 150], "income"] = value
    with pytest.raises(ValueError) as info:
        screen_frame(f)
    text = str(info.value)
    assert "'income'" in text and "row 117" in text and f"{value}" in text
    assert "2 value(s)" in text


def test_numbers_within_range_and_nullable_dtypes_pass():
    f = _small()
    f["income"] = f["income"].astype("Float64")
    f.loc[101, "income"] = pd.NA
    f.loc[102, "income"] = OUTER_BOUND  # the bound itself is allowed
    f["count"] = pd.array([1] * len(f), dtype="Int64")
    before = f.copy()
    assert screen_frame(f) is None  # accepted: no error
    pd.testing.assert_frame_equal(f, before)


def test_dropped_columns_are_not_screened_and_kept_ones_only_for_numbers():
    f = _with_id()
    f["income"] = f["income"].astype(float)
    f.loc[105, "income"] = np.inf
    screen_frame(f, drop=["person", "income"])
    with pytest.raises(ValueError, match="'income' holds inf in row 105"):
        screen_frame(f, keep=["person", "income"])
    screen_frame(f.drop(columns="income"), keep=["person"])


def test_identifier_is_refused_with_an_example_and_how_to_fix():
    f = _with_id()
    f.loc[100, "person"] = ""  # empty cells are not values
    f.loc[101, "person"] = None
    with pytest.raises(ValueError) as info:
        screen_frame(f)
    text = str(info.value)
    assert "Column 'person' looks like a record identifier" in text
    assert "118 distinct values in its 118 non-empty cells" in text
    assert "'P00002' in row 102" in text
    assert "drop=['person']" in text and "pandas Categorical" in text
    # declared as a Categorical (a code with levels), it is not an identifier
    f["person"] = f["person"].astype("category")
    screen_frame(f)


def test_identifier_rule_boundaries():
    n = 2 * ID_MIN_DISTINCT + 10
    rng = np.random.default_rng(0)
    f = _small(n)
    # each value twice: distinct == half the cells, not more than half
    f["household"] = [f"H{k // 2:04d}" for k in range(n)]
    screen_frame(f)
    # more than half distinct but only 50: a small code column of a small file
    g = _small(2 * ID_MIN_DISTINCT - 1)
    g["state"] = [f"S{k:02d}" for k in range(ID_MIN_DISTINCT)] + ["S00"] * (ID_MIN_DISTINCT - 1)
    screen_frame(g)
    g.loc[g.index[-1], "state"] = "S99"  # 51 distinct of 99
    with pytest.raises(ValueError, match="'state' looks like a record identifier"):
        screen_frame(g)
    f["household"] = rng.permutation([f"H{k:04d}" for k in range(n)])
    with pytest.raises(ValueError, match="'household' looks like"):
        screen_frame(f)


def test_serial_numbers_are_refused_as_an_identifier_and_quantities_are_not():
    """Row numbers (ints, shuffled, or floats with an empty cell) are refused naming the run;
    all-distinct amounts that do not fill a run, a run with one value twice, a 50-record run,
    booleans, a Categorical of numbers and a dropped or kept serial column pass."""
    n = 2 * ID_MIN_DISTINCT + 10
    rng = np.random.default_rng(0)
    f = _small(n)
    f["pid"] = np.arange(1, n + 1)
    with pytest.raises(ValueError, match=rf"'pid' looks like a record identifier: serial "
                       rf"numbers, the {n} whole numbers from 1 to {n} each held once"):  # fmt: skip
        screen_frame(f)
    g = f.copy()
    g["pid"] = rng.permutation(n).astype(float) + 1000
    g.loc[g.index[3], "pid"] = np.nan  # 109 of the run 1000..1109: no longer filling it
    screen_frame(g)
    g["pid"] = rng.permutation(n).astype(float) + 1000
    with pytest.raises(ValueError, match="'pid' looks like a record identifier"):
        screen_frame(g)
    screen_frame(f, drop=["pid"])
    screen_frame(f, keep=["pid"])
    for values in (
        rng.choice(10**6, n, replace=False),  # distinct amounts, no run
        np.r_[np.arange(1, n), 1],  # a value twice
    ):
        f["pid"] = values
        screen_frame(f)
    f["pid"] = pd.Categorical(np.arange(n))
    screen_frame(f)
    h = _small(ID_MIN_DISTINCT)
    h["pid"] = np.arange(ID_MIN_DISTINCT)
    screen_frame(h)


def test_input_is_never_modified():
    f = _with_id()
    f["income"] = f["income"].astype(float)
    f.loc[103, "income"] = 1e300
    before = f.copy(deep=True)
    for kw in ({}, {"drop": ["income"]}, {"drop": ["income", "person"]}):
        try:
            screen_frame(f, **kw)
        except ValueError:
            pass
    pd.testing.assert_frame_equal(f, before)
    assert list(f.columns) == list(before.columns) and f.index.equals(before.index)


def test_make_plan_screens_first():
    f = _with_id()
    with pytest.raises(ValueError, match="'person' looks like a record identifier"):
        make_plan(f, Declarations.from_arguments())
    make_plan(f, Declarations.from_arguments(drop=["person"]))


def test_many_level_column_plan():
    f = _many()
    assert f["code"].nunique() > MANY_LEVELS
    with pytest.warns(UserWarning, match=r"Column 'code' has \d+ levels .*keeps no relation "
                      r"between it and 'sex', 'age', 'income'"):  # fmt: skip
        plan = make_plan(f, Declarations.from_arguments())
    by = {p.name: p for p in plan.plans}
    code = by["code"]
    assert [pp.part.family for pp in code.parts] == ["dirichlet_categorical"]
    assert code.design.columns == ()
    # left out of the later columns' predictors; the small columns stay in
    assert by["age"].design.columns == ("sex",)
    assert by["income"].design.columns == ("sex", "age")
    row = plan.choices().set_index("column").loc["code"]
    assert row.model == "dirichlet_categorical"
    assert f"more than {MANY_LEVELS}" in row.reason
    assert "left out of later columns' predictors" in row.reason
    # kept, it is left out of the synthesized columns' predictors too, and says so
    kept = make_plan(f, Declarations.from_arguments(keep=["code"]))
    assert all("code" not in p.design.columns for p in kept.plans)
    assert (
        "left out of later columns' predictors"
        in (kept.choices().set_index("column").loc["code", "reason"])
    )


def test_many_level_column_declarations_override():
    f = _many()
    # a declared predictor_matrix row: the column is conditioned on what it names
    plan = make_plan(f, Declarations.from_arguments(predictor_matrix={"code": ["sex"]}))
    code = {p.name: p for p in plan.plans}["code"]
    assert code.choice.model == "categorical" and code.design.columns == ("sex",)
    # a later column's declared row may name it; the others are still cut off from it
    with pytest.warns(UserWarning, match=r"between it and 'sex', 'age';") as caught:
        plan = make_plan(f, Declarations.from_arguments(predictor_matrix={"income": ["code"]}))
    assert not any("'income'" in str(w.message) for w in caught)
    assert {p.name: p for p in plan.plans}["income"].design.columns == ("code",)
    # a column with 50 levels is not a many-level column
    g = f.copy()
    g["code"] = pd.Categorical([f"c{k % MANY_LEVELS}" for k in range(len(g))])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # nothing is cut off: no warning
        plan = make_plan(g, Declarations.from_arguments())
    by = {p.name: p for p in plan.plans}
    assert by["code"].choice.model == "categorical"
    assert "code" in by["income"].design.columns


def test_many_level_column_synthesized_among_its_levels():
    f = _many()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pp.synthesize(f, draws=50, tune=50, chains=1, seed=1)
    row = out.choices.set_index("column").loc["code"]
    assert row.model == "dirichlet_categorical" and f"more than {MANY_LEVELS}" in row.reason
    synth = out.synthetic["code"]
    assert isinstance(synth.dtype, pd.CategoricalDtype)
    assert set(synth.dropna()) <= set(f["code"])
    assert synth.notna().all() and len(synth) == len(f)


def test_trimmed_inputs_leaves_out_the_widest_first():
    widths = {"a": 2, "b": 11, "c": 3, "d": 11}
    # 39 levels: (39 - 1)(1 + 27) = 1,064 coefficients; without b and d: 38 x 6 = 228
    kept, left = trimmed_inputs(("a", "b", "c", "d"), widths, 39, cap=400)
    assert kept == ("a", "c") and left == ("d", "b")  # equally wide: the later one first
    # under the cap nothing is left out; a binary outcome keeps 399 design columns
    assert trimmed_inputs(("a", "b"), widths, 3, cap=400) == (("a", "b"), ())
    assert trimmed_inputs(("a",), {"a": 399}, 2, cap=400) == (("a",), ())
    assert trimmed_inputs(("a",), {"a": 400}, 2, cap=400) == ((), ("a",))


def test_many_coefficient_categorical_plan():
    rng = np.random.default_rng(3)
    n = 400
    f = pd.DataFrame({
        "region": pd.Categorical(rng.choice([f"r{k}" for k in range(12)], n)),
        "kind": pd.Categorical(rng.choice(list("wxyz"), n)),
        "x": rng.normal(size=n),
        "code": pd.Categorical(rng.choice([f"c{k:02d}" for k in range(40)], n)),
    })  # fmt: skip
    assert f["code"].nunique() == 40 <= MANY_LEVELS
    plan = make_plan(f, Declarations.from_arguments())
    code = {p.name: p for p in plan.plans}["code"]
    assert code.design.columns == ("kind", "x") and code.trimmed == ("region",)
    part = code.parts[0].part
    assert part.family == "categorical"
    assert (part.n_levels - 1) * (1 + code.design.width) <= MAX_COEFFICIENTS
    row = plan.choices().set_index("column").loc["code"]
    assert "region left out of its predictors" in row.reason
    # a declared predictor_matrix row is kept as declared
    plan = make_plan(f, Declarations.from_arguments(predictor_matrix={"code": ["region", "x"]}))
    code = {p.name: p for p in plan.plans}["code"]
    assert code.design.columns == ("region", "x") and code.trimmed == ()


def test_thinned_knots_leave_the_outermost_out_first():
    k = (1.0, 2.0, 3.0, 4.0, 5.0)
    assert thinned_knots(k, 5) == k and thinned_knots(k, 9) == k
    assert thinned_knots(k, 3) == (2.0, 3.0, 4.0)
    assert thinned_knots(k, 2) == (2.0, 4.0)
    assert thinned_knots(k, 1) == (3.0,)
    assert thinned_knots(k, 0) == ()
    assert thinned_knots((1.0, 2.0, 3.0), 2) == (1.0, 2.0)  # not the middle knot twice


def test_thinned_knots_are_distinct_and_as_many_as_asked():
    for k in range(12):
        knots = tuple(float(i) for i in range(k))
        for j in range(13):
            kept = thinned_knots(knots, j)
            assert len(set(kept)) == len(kept) == min(j, k), (k, j, kept)
            assert list(kept) == sorted(kept) and set(kept) <= set(knots)


def _features(name, frame, knots=()):
    cat = isinstance(frame[name].dtype, pd.CategoricalDtype)
    return ColumnFeatures(encode(frame[name], name, 0, categorical=cat), knots=knots)


def test_knots_thinned_before_an_input_is_left_out():
    rng = np.random.default_rng(0)
    n = 200
    f = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "z": rng.normal(size=n),
            "g": pd.Categorical(rng.choice([f"g{k}" for k in range(9)], n)),
        }
    )
    knots = (-1.0, -0.5, 0.0, 0.5, 1.0)
    feats = {"x": _features("x", f, knots), "z": _features("z", f, knots),
             "g": _features("g", f)}  # fmt: skip
    assert feats["x"].width == 6 and feats["g"].width == 8
    # 15 levels: all knots 14 x (1 + 20) = 294 fits: nothing thinned, nothing left out
    assert knots_fitting(("x", "z", "g"), feats, 15, cap=400) == (5, ("x", "z", "g"), ())
    # cap 250: all knots leave g out (14 x 21 = 294); with 3 knots each 14 x 17 = 238 keeps it
    j, kept, left = knots_fitting(("x", "z", "g"), feats, 15, cap=250)
    assert (j, kept, left) == (3, ("x", "z", "g"), ())
    assert trimmed_inputs(("x", "z", "g"), {k: v.width for k, v in feats.items()}, 15,
                          cap=250) == (("x", "z"), ("g",))  # fmt: skip
    # cap 60: with all knots every input is left out; with none, x and z enter linearly
    # (14 x 3 = 42) and g (8 indicators) stays out
    j, kept, left = knots_fitting(("x", "z", "g"), feats, 15, cap=60)
    assert (j, kept, left) == (0, ("x", "z"), ("g",))
    assert 14 * (1 + sum(_thin_width(feats[x], j) for x in kept)) <= 60
    # an input kept with all knots is never traded for others: with a 4-level h, cap 60
    # keeps h alone at all knots (14 x 4 = 56); with none, x and z (14 x 3) would replace it
    f["h"] = pd.Categorical(rng.choice(list("abcd"), n))
    feats["h"] = _features("h", f)
    assert knots_fitting(("x", "z", "h"), feats, 15, cap=60) == (5, ("h",), ("z", "x"))


def _thin_width(f, j):
    from dataclasses import replace

    return replace(f, knots=thinned_knots(f.knots, j)).width


def test_an_input_the_rules_make_a_function_of_another_is_left_out_beside_it():
    """education-num fixed by education (rules on every level): a later column's design holds
    education's one-hot, whose span has every function of it, so education-num's features
    (exactly collinear) are left out; kept where a level has no rule, or where the
    determinant itself is left out (over the coefficient cap)."""
    rng = np.random.default_rng(1)
    n = 300
    levels = {"low": 1, "mid": 2, "high": 3}
    ed = rng.choice(list(levels), n)
    f = pd.DataFrame({"ed": ed, "ednum": [levels[v] for v in ed],
                      "y": rng.choice(list("abc"), n), "w": rng.normal(size=n)})  # fmt: skip
    rules = [f"ednum == {k} when ed == '{v}'" for v, k in levels.items()]
    plan = make_plan(f, Declarations.from_arguments(rules=rules))
    by = {p.name: p for p in plan.plans}
    for c in ("y", "w"):
        names = [x.column.name for x in by[c].design.inputs]
        assert "ed" in names and "ednum" not in names, (c, names)
        assert by[c].determined == (("ednum", "ed"),)
    why = plan.choices().set_index("column").loc["y", "reason"]
    assert "ednum left out of its predictors (a function of ed by the declared rules" in why
    # one level without its rule: ednum is not a function of ed's levels, so it stays
    partial = make_plan(f.assign(ednum=np.where(ed == "high", 7, f["ednum"])),
                        Declarations.from_arguments(rules=rules[:2]))  # fmt: skip
    assert all("ednum" in [x.column.name for x in p.design.inputs]
               for p in partial.plans if p.name in ("y", "w"))  # fmt: skip
    # a determinant over the cap: with 42 levels of ed, a 12-level y needs 11 x (1 + 41) > 400
    # coefficients, so ed is left out, and ednum comes back in its place
    g = f.assign(y=rng.choice([f"y{k:02d}" for k in range(12)], n))
    g["ed"] = [f"{v}{k}" for v, k in zip(ed, rng.integers(0, 14, n), strict=True)]
    cells = sorted(set(g["ed"]))
    wide = [f"ednum == {levels[c.rstrip('0123456789')]} when ed == '{c}'" for c in cells]
    trimmed = make_plan(g, Declarations.from_arguments(rules=wide))
    y = next(p for p in trimmed.plans if p.name == "y")
    assert "ed" in y.trimmed and y.determined == ()
    assert "ednum" in [x.column.name for x in y.design.inputs]
