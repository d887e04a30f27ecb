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
