"""Aliased design columns: a design column constant on a part's active records carries no
likelihood information about its coefficient, so it is left out of that part (coefficient 0)
and listed in the choices table. Regression (YRBSS): "age missing" implies "height missing", so
height's value part never sees a record with age missing; its coefficient was prior-only and a
synthetic record with age missing got a height of -10 m."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from pseudopost.models.file import Declarations, FileModel, make_plan
from pseudopost.models.file.plan import informative_inputs
from pseudopost.models.loglik import stack_draws
from pseudopost.synthesis import synthesize


def _frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(14, 19, n).astype(float)
    sex = rng.choice(["female", "male"], n)
    height = np.round(1.55 + 0.02 * (age - 14) + 0.1 * (sex == "male") + rng.normal(0, 0.07, n), 2)
    age[rng.random(n) < 0.12] = np.nan
    height[np.isnan(age) | (rng.random(n) < 0.05)] = np.nan  # age missing => height missing
    return pd.DataFrame({"age": age, "sex": sex, "height": height})


def test_informative_inputs():
    X = np.array([[1.0, 0.0, 2.0], [1.0, 0.0, 3.0], [1.0, 5.0, 3.0]])
    np.testing.assert_array_equal(informative_inputs(X, np.array([True, True, True])), [1, 2])
    np.testing.assert_array_equal(informative_inputs(X, np.array([True, True, False])), [2])
    np.testing.assert_array_equal(informative_inputs(X, np.array([True, False, False])), [])
    assert informative_inputs(np.zeros((3, 0)), np.ones(3, bool)).size == 0


def test_constant_design_column_left_out_and_listed():
    frame = _frame()
    plan = make_plan(frame, Declarations.from_arguments(models={"height": "normal"}))
    height = next(p for p in plan.plans if p.name == "height")
    status, value = height.part("status"), height.part("value")
    assert "age:missing" in height.design.names
    # the status part sees records with age missing (all of them height-missing): kept
    assert "age:missing" in status.part.predictors and status.left_out == ()
    # the value part never does: "age missing" is 0 on all its records, left out
    assert "age:missing" not in value.part.predictors
    assert value.left_out == ("age:missing",)
    assert len(value.part.predictors) == len(height.design.names) - 1
    model = FileModel(models={"height": "normal"})
    prepared = model.prepare(frame)
    pdata = dict(zip([p.name for p in model.parts(prepared)], model.part_data(prepared),
                     strict=True))  # fmt: skip
    assert pdata["height.value"].X.shape[1] == len(value.part.predictors)
    X = pdata["height.value"].X[pdata["height.value"].active]
    assert np.all(X.min(axis=0) < X.max(axis=0))  # every column it keeps varies on its records
    reason = plan.choices().set_index("column").loc["height", "reason"]
    assert "left out: height.value: age:missing" in reason


@pytest.fixture(scope="module")
def fitted():
    frame = _frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the aliased-design rule of the data-read path (no structure stage): a declared normal
        # height is not snapped into a DP support, so its range rests on the rule alone
        out = synthesize(frame, models={"height": "normal"}, draws=200, tune=200, chains=1,
                         seed=3, progress=False, structure_epsilon=None)  # fmt: skip
    return frame, out


def test_height_of_a_record_with_age_missing_is_in_range(fitted):
    """Under every posterior draw, the mean height of a record with age missing (a synthetic
    record may have one) is of the observed heights' order (before: prior sd 10 m)."""
    _, out = fitted
    plan = out.result.prepared.plan
    p = next(q for q in plan.plans if q.name == "height")
    value = p.part("value")
    states = {q.name: (q.column.status, q.column.values) for q in plan.plans}
    age = states["age"]
    states["age"] = (np.ones_like(age[0]), np.full(age[1].shape, np.nan))  # every age missing
    X = value.design(p.design.matrix(states, plan.n))
    names = [f"height.value::{k}" for k in value.part.layout.names]
    for post in (out.result.posterior, out.result.datatree["risk_posterior"].to_dataset()):
        d = stack_draws(post, names)
        mu = d["height.value::intercept"][:, None] + d["height.value::beta"] @ X.T
        assert np.all((mu > 0.5) & (mu < 3.0)), (mu.min(), mu.max())


def test_synthetic_heights_in_range_for_any_seed(fitted):
    frame, out = fitted
    lo, hi = frame.height.min(), frame.height.max()
    for seed in range(8):
        for weighted in (True, False):
            h = out.synthesize(seed=seed, weighted=weighted).height.dropna()
            assert h.between(lo / 2, hi * 2).all(), (seed, h.min(), h.max())
