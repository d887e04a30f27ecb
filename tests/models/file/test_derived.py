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
