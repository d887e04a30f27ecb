"""Derived columns (a codebook's definitions): checked on the real records before any work,
never modelled, computed from the synthetic columns, in the real column's dtype."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pseudopost as pp
from pseudopost.models.file import Declarations, make_plan
from pseudopost.models.file.derived import check_derived, derive


def _frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    exper = rng.integers(0, 30, n)
    wage = np.round(np.exp(1.5 + 0.03 * exper + rng.normal(0, 0.4, n)), 2)
    wage[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame({
        "sex": rng.choice(["f", "m"], n),
        "exper": exper,
        "expersq": exper**2,
        "wage": wage,
        "lwage": np.log(wage).astype(np.float32),  # stored in single precision
    })  # fmt: skip


DERIVED = {"expersq": "exper ** 2", "lwage": "log(wage)"}


def test_definitions_are_checked_on_the_real_records():
    f = _frame()
    check_derived(f, DERIVED, ["sex", "exper", "wage"])  # float32 rounding is tolerated
    bad = f.copy()
    bad.loc[7, "expersq"] = 5
    with pytest.raises(ValueError, match=r"'expersq' is not 'exper \*\* 2' on 1 record\(s\): "
                       r"record 7 holds 5, its definition gives"):  # fmt: skip
        check_derived(bad, DERIVED, ["sex", "exper", "wage"])
    gap = f.copy()
    gap.loc[gap.wage.notna().idxmax(), "lwage"] = np.nan  # missing where the definition is not
    with pytest.raises(ValueError, match="'lwage' is not 'log\\(wage\\)'"):
        check_derived(gap, DERIVED, ["sex", "exper", "wage"])
    with pytest.raises(ValueError, match="cannot be evaluated"):  # a column it may not read
        check_derived(f, {"expersq": "exper ** 2 + age"}, ["sex", "exper", "wage"])
    with pytest.raises(ValueError, match="not numbers"):
        check_derived(f.assign(x=1.0), {"x": "sex"}, ["sex", "exper"])
    with pytest.raises(ValueError, match=r"holds (str|object) values; derived columns are"):
        check_derived(f, {"sex": "exper"}, ["exper"])


def test_declarations_and_plan():
    with pytest.raises(ValueError, match=r"\['expersq'\] are derived .* named in 'keep'"):
        Declarations.from_arguments(derived=DERIVED, keep=["expersq"])
    with pytest.raises(TypeError, match="expression string"):
        Declarations.from_arguments(derived={"expersq": 2})
    f = _frame()
    plan = make_plan(f, Declarations.from_arguments(derived=DERIVED))
    assert plan.order == ("sex", "exper", "wage") and plan.columns == tuple(f.columns)
    assert all("expersq" not in p.design.columns for p in plan.plans)
    rows = plan.choices().set_index("column")
    assert rows.loc["lwage", "role"] == "derived" and "log(wage)" in rows.loc["lwage", "reason"]
    # a dropped column is not an input
    with pytest.raises(ValueError, match="cannot be evaluated"):
        make_plan(f, Declarations.from_arguments(derived=DERIVED, drop=["exper"]))


def test_synthesize_computes_derived_columns():
    f = _frame()
    before = f.copy(deep=True)
    kw = dict(derived=DERIVED, draws=30, tune=30, chains=1, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pp.synthesize(f, **kw)
        again = pp.synthesize(f, **kw)
    pd.testing.assert_frame_equal(f, before)
    s = out.synthetic
    assert list(s.columns) == list(f.columns)
    assert s.expersq.dtype == f.expersq.dtype and s.lwage.dtype == np.float32
    np.testing.assert_array_equal(s.expersq, s.exper**2)
    np.testing.assert_allclose(s.lwage, np.log(s.wage).astype(np.float32))
    assert (s.lwage.isna() == s.wage.isna()).all()
    pd.testing.assert_frame_equal(s, again.synthetic)
    # further datasets too; and the derived columns are no model's parts
    other = out.synthesize(seed=9, weighted=False)
    np.testing.assert_array_equal(other.expersq, other.exper**2)
    assert not any(n.startswith(("expersq", "lwage")) for n in out.fit.datatree["posterior"])


def test_derive_keeps_integer_columns_integer_with_missing_cells():
    f = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": [1, 0, 9]})
    out = derive(f[["a"]], {"b": "a ** 2"}, {"b": np.dtype("int64")})
    assert str(out.b.dtype) == "Int64" and out.b.isna().tolist() == [False, True, False]
    assert out.b.dropna().tolist() == [1, 9]


def test_a_definition_floored_at_its_valid_range():
    """A codebook's definition with the range its column keeps: potential experience, age -
    educ - 6, is recorded 0 where the difference is negative; the plain definition is refused
    naming such a record, ``.clip(0)`` holds on every record and floors the synthetic values."""
    f = pd.DataFrame({"age": [21, 30, 18, 40], "educ": [16, 12, 13, 8]})
    f["exper"] = np.maximum(0, f.age - f.educ - 6)
    with pytest.raises(ValueError, match=r"'exper' is not 'age - educ - 6' on 2 record\(s\): "
                       r"record 0 holds 0, its definition gives -1.0. Correct the definition "
                       r"\(the column holds 0 where it gives less: "
                       r"'\(age - educ - 6\).clip\(0\)'\)"):  # fmt: skip
        check_derived(f, {"exper": "age - educ - 6"}, ["age", "educ"])
    capped = f.assign(weeks=np.minimum(52, 2 * f.age))  # a cap: the hint names the upper end
    with pytest.raises(ValueError, match=r"holds 52 where it gives more: "
                       r"'\(2 \* age\).clip\(upper=52\)'"):  # fmt: skip
        check_derived(capped, {"weeks": "2 * age"}, ["age"])
    with pytest.raises(ValueError, match=r"gives -1.0. Correct the definition, or model"):
        check_derived(f.assign(exper=f.exper + 0.5), {"exper": "age - educ - 6"}, ["age", "educ"])
    floored = {"exper": "(age - educ - 6).clip(0)"}
    check_derived(f, floored, ["age", "educ"])
    syn = pd.DataFrame({"age": [17, 25], "educ": [14, 12]})
    out = derive(syn, floored, {"exper": f.exper.dtype})
    assert out.exper.tolist() == [0, 7] and out.exper.dtype == f.exper.dtype


def _ratio_frame(n: int = 800, seed: int = 3) -> pd.DataFrame:
    """earnings, hours and a rate that the codebook defines as their ratio; ``high`` depends
    on the rate alone (a non-linear function of the two inputs)."""
    rng = np.random.default_rng(seed)
    hours = rng.integers(10, 61, n)
    earns = np.round(hours * np.exp(rng.normal(2.5, 0.5, n)))
    rate = earns / hours
    high = (rng.random(n) < 1 / (1 + np.exp(-4 * (np.log(rate) - 2.5)))).astype(int)
    return pd.DataFrame({"hours": hours, "earns": earns, "rate": rate, "gap": earns - hours,
                         "high": high})  # fmt: skip


RATIO = {"rate": "earns / hours", "gap": "earns - hours"}
GRID = {"hours": {"step": 1, "bounds": [0, 99]}, "earns": {"step": 5, "bounds": [0, 9999]}}


def test_a_derived_column_is_a_predictor_of_the_columns_after_its_inputs():
    """A derived column with public supports for its inputs enters the design of every
    column visited after its inputs, its value on the definition's span over those supports
    (clipped), its real values the definition's; an affine definition (the inputs' own terms
    span it), one with an input that has no public support and a column with a declared
    predictor_matrix row leave it out, and the choices table says why."""
    f = _ratio_frame()
    plan = make_plan(f, Declarations.from_arguments(derived=RATIO, grid=GRID))
    by = {p.name: p for p in plan.plans}
    assert "rate" not in by["hours"].design.columns and "rate" not in by["earns"].design.columns
    assert "rate" in by["high"].design.columns and "gap" not in by["high"].design.columns
    feat = by["high"].design._feature("rate")
    # the span: earns / hours over the grid of [0, 9999] x [0, 99] (x / 0 left out)
    assert feat.span == (0.0, 9999.0) and feat.clip
    X = by["high"].design.matrix(
        {c: (e.status, e.values) for c, e in
         {**{p.name: p.column for p in plan.plans}, **plan.derived_predictors}.items()},
        len(f),
    )  # fmt: skip
    col = by["high"].design.names.index("rate")
    np.testing.assert_allclose(X[:, col], np.clip(f.rate / 9999.0, 0, 1))
    rows = plan.choices().set_index("column")
    assert "a predictor of the columns visited after its inputs" in rows.loc["rate", "reason"]
    assert "affine in its inputs" in rows.loc["gap", "reason"]
    assert "rate" in rows.loc["high", "predictors"]
    # an input without a public support: not a predictor, said so
    bare = make_plan(f, Declarations.from_arguments(derived=RATIO))
    assert all("rate" not in p.design.columns for p in bare.plans)
    assert "no public numeric support" in bare.choices().set_index("column").loc["rate", "reason"]
    # a declared predictor_matrix row names its predictors: the derived column is not added
    pm = make_plan(f, Declarations.from_arguments(
        derived=RATIO, grid=GRID, predictor_matrix={"high": ["hours", "earns"]}))  # fmt: skip
    assert {p.name: p for p in pm.plans}["high"].design.columns == ("hours", "earns")


def test_a_derived_predictor_is_computed_from_the_synthetic_inputs():
    """In the synthesis a derived predictor is the definition of the synthetic inputs: the
    synthetic ``high`` follows the synthetic rate as the real one follows the real rate
    (the difference of its means above and below the median rate), which it would not if
    the design read the real rates; its hat functions sit at the definition's quartiles over
    the inputs' declared knots (the span over the supports, 0 to 9,999 an hour, is far wider
    than the rates); the same seed, the same file."""
    f = _ratio_frame()
    kw = dict(derived={"rate": "earns / hours"}, bounds={"hours": (0, 99), "earns": (0, 9999)},
              knots={"hours": [20, 40], "earns": [200, 400, 800]}, draws=60, tune=60, chains=1,
              seed=2)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pp.synthesize(f.drop(columns="gap"), **kw)
        again = pp.synthesize(f.drop(columns="gap"), **kw)
    pd.testing.assert_frame_equal(out.synthetic, again.synthetic)
    assert "rate (knots " in out.choices.set_index("column").loc["high", "predictors"]

    def gap(frame):
        above = frame.rate > frame.rate.median()
        return frame.high[above].mean() - frame.high[~above].mean()

    real, s = gap(f), out.synthesize(seed=4, weighted=False)
    np.testing.assert_allclose(s.rate, s.earns / s.hours)
    assert real > 0.4 and abs(gap(s) - real) < 0.12, (real, gap(s))
