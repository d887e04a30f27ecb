"""Synthesis of a whole file under given parameter draws (no MCMC here): codes come out as the
codes and never as drawn values, rules and structural zeros always hold (Hypothesis over random
rules and zeros on small frames), dtypes, categories and column order are the input's, kept
columns are as given and dropped ones absent, and one seed gives one file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pseudopost.models.file import FileModel
from pseudopost.models.rules import impose

RULE = "wage is missing when employed == 'no'"
ZERO = "employed == 'yes' and age < 18"


def _posterior(parts, rng, m=4, scale=0.5, fix=None):
    """A posterior Dataset of m random draws (chain 1) around the parts' start points (spread
    ``scale`` for level parts; 0.05 for the others, whose values must stay finite)."""
    data = {}
    for part in parts:
        s = scale if "categorical" in part.family or part.family == "bernoulli" else 0.05
        x = part.initial_point(0) + rng.normal(scale=s, size=(m, part.layout.size))
        for k, v in part.layout.unpack(x).items():
            key = f"{part.name}::{k}"
            v = np.asarray(fix[key] if fix and key in fix else v, dtype=float)
            v = np.broadcast_to(v, (m, *part.layout[k].shape))
            dims = [f"{key}_dim_{j}" for j in range(v.ndim - 1)]
            data[key] = (("chain", "draw", *dims), v[None])
    return xr.Dataset(data)


def _synth(model, frame, rng, m=2, seed=11, **kw):
    prepared = model.prepare(frame)
    post = _posterior(model.parts(prepared), rng, **kw)
    return model.simulate(prepared, None, post, np.arange(m), seed)


def test_types_order_kept_dropped_and_rules(frame):
    model = FileModel(
        missing_codes={"wage": [-9]}, rules=[RULE], structural_zeros=[ZERO], keep=["sex"],
        drop=["gains"],
    )  # fmt: skip
    before = frame.copy(deep=True)
    out = _synth(model, frame, np.random.default_rng(1))
    pd.testing.assert_frame_equal(frame, before)
    for syn in out:
        assert list(syn.columns) == [c for c in frame.columns if c != "gains"]
        assert (syn.dtypes == frame.drop(columns="gains").dtypes).all()
        assert syn.health.cat.categories.tolist() == ["poor", "fair", "good"]
        pd.testing.assert_series_equal(syn.sex, frame.sex)
        assert syn.wage[syn.employed == "no"].isna().all()
        assert not ((syn.employed == "yes") & (syn.age < 18)).any()
        assert set(syn.region.dropna()) <= {"north", "south", "east"}
        assert syn.attrs["kept_columns"] == ["sex"]
    # two datasets from two draws differ; the same seed gives the same frames
    assert not out[0].equals(out[1])
    again = _synth(model, frame, np.random.default_rng(1))
    for a, b in zip(out, again, strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_codes_come_out_only_as_codes():
    rng = np.random.default_rng(2)
    n = 400
    g = rng.choice(["a", "b"], n)
    x = rng.integers(-3, 3, n)
    x[rng.random(n) < 0.2] = -8
    frame = pd.DataFrame({"g": g, "x": x})
    model = FileModel(models={"x": "normal"}, missing_codes={"x": [-8]})
    prepared = model.prepare(frame)
    parts = model.parts(prepared)
    assert [p.name for p in parts] == ["g", "x.status", "x.value"]
    # the value part centred on the code, the code almost never drawn as a status
    fix = {
        "x.status::intercept": -30.0, "x.status::beta": [0.0],
        "x.value::intercept": -8.0, "x.value::beta": [0.0], "x.value::sigma": 0.6,
    }  # fmt: skip
    syn = model.simulate(prepared, None, _posterior(parts, rng, fix=fix), np.array([0]), 3)[0]
    assert (syn.x != -8).all()
    assert syn.x.dtype == frame.x.dtype
    assert ((syn.x == -7) | (syn.x == -9)).mean() > 0.3  # moved to the nearest other integers
    # and drawn as a code, it is the code itself
    fix["x.status::intercept"] = 30.0
    syn = model.simulate(prepared, None, _posterior(parts, rng, fix=fix), np.array([0]), 3)[0]
    assert (syn.x == -8).all()


def test_spikes_are_the_spike_values_and_values_avoid_them():
    rng = np.random.default_rng(3)
    n = 500
    hours = np.where(rng.random(n) < 0.4, 40.0, np.round(rng.normal(35, 8, n), 1))
    frame = pd.DataFrame({"g": rng.choice(["a", "b"], n), "hours": hours})
    model = FileModel(models={"hours": "normal"}, spikes={"hours": [40]})
    prepared = model.prepare(frame)
    fix = {"hours.status::intercept": 0.0, "hours.status::beta": [0.0],
           "hours.value::intercept": 40.0, "hours.value::beta": [0.0],
           "hours.value::sigma": 1e-9}  # fmt: skip
    post = _posterior(model.parts(prepared), rng, fix=fix)
    syn = model.simulate(prepared, None, post, np.array([0]), 5)[0]
    spike = syn.hours == 40.0
    assert 0.35 < spike.mean() < 0.65  # the status part's 1/2, as the spike value
    assert (np.abs(syn.hours[~spike] - 40.0) < 1e-6).all()  # values near, never equal to, 40


@pytest.mark.parametrize("seed", [0, 1])
def test_zeros_never_generated_even_under_wild_draws(frame, seed):
    zeros = [ZERO, {"region": "east", "health": "poor"}]
    model = FileModel(missing_codes={"wage": [-9]}, rules=[RULE], structural_zeros=zeros,
                      models={"health": "categorical"}, order=["sex", "age", "employed", "region", "health", "wage", "gains", "hours"])  # fmt: skip
    bad = (frame.region == "east") & (frame.health == "poor")
    data = frame[~bad].reset_index(drop=True)
    for syn in _synth(model, data, np.random.default_rng(seed), scale=4.0):
        assert not ((syn.employed == "yes") & (syn.age < 18)).any()
        assert not ((syn.region == "east") & (syn.health == "poor")).any()


LEVELS = ["p", "q", "r"]


@st.composite
def small_files(draw):
    """3-4 categorical columns, random rules 'c_k == v when c_j == u' (j < k) and random
    two-cell zeros; the frame is made to honour them (rules imposed, zero cells dropped)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    k = draw(st.integers(3, 4))
    n = 60
    cols = [f"c{j}" for j in range(k)]
    frame = pd.DataFrame({c: rng.choice(LEVELS, n) for c in cols})
    rules = []
    for _ in range(draw(st.integers(0, 2))):
        j = draw(st.integers(0, k - 2))
        t = draw(st.integers(j + 1, k - 1))
        rules.append(
            f"{cols[t]} == '{draw(st.sampled_from(LEVELS))}' when {cols[j]} == "
            f"'{draw(st.sampled_from(LEVELS))}'"
        )
    try:
        frame = impose(frame, rules) if rules else frame
    except ValueError:  # rules that contradict one another: keep the first only
        rules = rules[:1]
        frame = impose(frame, rules)
    zeros = []
    for _ in range(draw(st.integers(0, 2))):
        a, b = draw(st.lists(st.sampled_from(cols), min_size=2, max_size=2, unique=True))
        cell = {a: draw(st.sampled_from(LEVELS)), b: draw(st.sampled_from(LEVELS))}
        zeros.append(cell)
        frame = frame[~((frame[a] == cell[a]) & (frame[b] == cell[b]))]
    frame = frame.reset_index(drop=True)
    return frame, rules, zeros, draw(st.integers(0, 1000))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_files())
def test_no_synthetic_record_breaks_a_rule_or_a_zero(case):
    from pseudopost.models.rules import Rule, StructuralZero

    frame, rules, zeros, seed = case
    if len(frame) < 2 or any(frame[c].nunique() < 1 for c in frame):
        return
    model = FileModel(rules=rules, structural_zeros=zeros)
    try:
        prepared = model.prepare(frame)
    except ValueError as err:  # zero removal can contradict a rule or empty a level it names
        assert any(
            m in str(err)
            for m in ("contradicted by the data", "declared impossible", "not one of its levels")
        ), err
        return
    post = _posterior(model.parts(prepared), np.random.default_rng(seed), scale=3.0)
    try:
        frames = model.simulate(prepared, None, post, np.arange(3), seed)
    except ValueError as err:  # a zero an earlier draw makes impossible to escape
        assert "no allowed level" in str(err) or "contradict each other" in str(err)
        return
    for syn in frames:
        for r in rules:
            assert not Rule.parse(r).violations(syn).any()
        for z in zeros:
            assert not StructuralZero.parse(z).violations(syn).any()
        assert list(syn.columns) == list(frame.columns)


def test_ordinal_column_with_missing_cells_draws_its_levels_and_its_missing_cells():
    """An ordered categorical column with empty cells has a status part and an ordinal value
    part: the value part draws the levels of the observed records and the status part which
    records are missing (its first part, the status part, once drew the levels: every record
    took the lowest level or the next, and none was missing)."""
    rng = np.random.default_rng(3)
    n = 400
    levels = ["none", "low", "mid", "high", "top"]
    y = pd.Categorical.from_codes(rng.integers(0, 5, n), levels, ordered=True)
    frame = pd.DataFrame({"x": rng.normal(size=n).round(2), "y": y})
    frame.loc[rng.random(n) < 0.3, "y"] = np.nan
    model = FileModel(models={"x": "normal"})
    prepared = model.prepare(frame)
    assert [p.name for p in model.parts(prepared)][-2:] == ["y.status", "y.value"]
    for syn in _synth(model, frame, np.random.default_rng(4), scale=0.2):
        assert syn.y.cat.ordered and syn.y.cat.categories.tolist() == levels
        assert 0.1 < syn.y.isna().mean() < 0.9
        assert set(syn.y.dropna()) == set(levels)
