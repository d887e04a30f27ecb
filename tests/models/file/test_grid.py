"""Declared grids (a column's public recording precision): snapping is idempotent, lands inside
the support and off the codes and spikes, and is the nearest such grid point (brute force over
the grid's points); bad grids are refused before any fitting; a whole file's synthetic values
lie on their grids and the real ones are checked (a warning naming the column and the share)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pseudopost.models.file import Declarations, FileModel, make_plan
from pseudopost.models.file.grid import Grid

from .test_synthesis import _synth

grids = st.builds(
    # the origin on the recording precision (round(5, -1) is 0: an origin between the
    # precision's points makes grid points collapse, which no recorded grid does)
    lambda step, digits, origin: Grid(
        max(step, 10.0**-digits) if digits is not None else step, digits,
        origin if digits is None else round(origin, digits),
    ),
    st.floats(0.001, 50.0),
    st.one_of(st.none(), st.integers(-1, 4)),
    st.floats(-5.0, 5.0),
)
values = st.lists(st.floats(-500.0, 500.0), min_size=1, max_size=20).map(np.array)


def _brute(grid: Grid, x: float, ok, low: float = -math.inf) -> float:
    """The nearest allowed grid point to x among a wide window of k around x, or around the
    support's lower end when x is below it (ties: the lower one)."""
    k0 = float(grid.index(np.array([max(x, low)]))[0])
    ks = np.arange(k0 - 3000, k0 + 3001)
    g = grid.point(ks)
    g = g[ok(g)]
    d = np.abs(g - x)
    return float(g[d == d.min()].min())


@settings(max_examples=150, deadline=None)
@given(grids, values)
def test_snap_is_the_nearest_grid_point_and_idempotent(grid, x):
    y = grid.snap(x)
    for xi, yi in zip(x, y, strict=True):
        assert yi == _brute(grid, xi, lambda g: np.ones(g.shape, bool))
    np.testing.assert_array_equal(grid.snap(y), y)
    assert grid.share_off(y) == 0.0


@settings(max_examples=150, deadline=None)
@given(grids, values, st.floats(-50.0, 50.0), st.booleans(), st.integers(0, 3))
def test_snap_inside_support_and_off_codes(grid, x, low, low_open, n_bad):
    # forbid the points nearest to the first values (codes or spikes)
    near = grid.snap(x[:n_bad], low, low_open=low_open)
    forbidden = tuple(float(v) for v in near)
    y = grid.snap(x, low, low_open=low_open, forbidden=forbidden)

    def ok(g):
        inside = g > low if low_open else g >= low
        return inside & ~np.isin(g, np.array(forbidden))

    assert ok(y).all()
    for xi, yi in zip(x, y, strict=True):
        assert yi == _brute(grid, xi, ok, low)
    np.testing.assert_array_equal(grid.snap(y, low, low_open=low_open, forbidden=forbidden), y)


@settings(max_examples=150, deadline=None)
@given(grids, values, st.integers(0, 4), st.sampled_from([None, 2, 3, 5]), st.floats(-50.0, 50.0))
def test_snap_past_excluded_points_and_indices(grid, x, n_near, multiple, low):
    """Adversarial exclusions: the ``n_near`` points nearest to x[0] are codes, and (with
    ``multiple``) indices that are multiples of it are excluded (heaps)."""
    ks = grid.index(x[:1]) + np.array([0, -1, 1, -2, 2])[:n_near]
    forbidden = tuple(float(v) for v in grid.point(ks))
    index_ok = None if multiple is None else (lambda k: np.mod(k, multiple) != 0)
    y = grid.snap(x, low, forbidden=forbidden, index_ok=index_ok)

    def ok(g):
        k = grid.index(g)
        out = (g >= low) & ~np.isin(g, np.array(forbidden))
        return out if index_ok is None else out & index_ok(k)

    for xi, yi in zip(x, y, strict=True):
        assert yi == _brute(grid, xi, ok, low)


def test_grid_examples():
    height = Grid(0.0254, 2)
    np.testing.assert_array_equal(height.snap(np.array([1.7, 1.71, 1.2699])), [1.7, 1.7, 1.27])
    assert height.snap(np.array([-3.0]), 0.0, low_open=True)[0] == 0.03
    assert Grid.parse({"digits": 1}, "x") == Grid(0.1, 1)
    assert Grid.parse({"digits": -1}, "x").snap(np.array([44.0, 46.0])).tolist() == [40, 50]
    assert Grid(0.4536, 2).share_off(np.array([29.94, 30.0, 180.99, np.nan])) == pytest.approx(
        1 / 3
    )
    assert Grid(5, origin=1).integral and not Grid(0.5).integral
    with pytest.raises(ValueError, match="No point of the grid"):
        Grid(1.0).snap(np.array([0.5]), 0.2, 0.8)


@pytest.mark.parametrize(
    ("grid", "match"),
    [
        ({"step": 0}, r"'step' must be a finite number > 0. Got 0"),
        ({"step": -1.0}, r"'step' must be a finite number > 0"),
        ({"step": math.inf}, r"'step' must be a finite number > 0"),
        ({"digits": 1.5}, r"'digits' must be an integer"),
        ({"digits": True}, r"'digits' must be an integer"),
        ({"digits": 40}, r"'digits' must be an integer in \[-12, 12\]"),
        ({"step": 0.001, "digits": 2}, r"must be at least 10\*\*-digits"),
        ({"origin": 1.0}, r"needs a 'step', 'digits' or 'values'"),
        ({"step": 1, "unit": "kg"}, r"unknown key\(s\) \['unit'\]"),
    ],
)
def test_bad_grids(grid, match):
    with pytest.raises(ValueError, match=match):
        Declarations.from_arguments(grid={"x": grid})


def test_bad_grid_types_and_columns(frame):
    with pytest.raises(TypeError, match=r"grid of column 'x' must be a mapping"):
        Declarations.from_arguments(grid={"x": 0.5})
    with pytest.raises(TypeError, match=r"'grid' must be a mapping"):
        Declarations.from_arguments(grid=[0.5])
    decl = Declarations.from_arguments
    with pytest.raises(ValueError, match=r"'grid' names column\(s\) \['nope'\]"):
        make_plan(frame, decl(grid={"nope": {"digits": 2}}))
    with pytest.raises(TypeError, match=r"grid .* column 'region' .* numeric"):
        make_plan(frame, decl(grid={"region": {"digits": 2}}))
    with pytest.raises(ValueError, match=r"column 'age' .* integers"):
        make_plan(frame, decl(grid={"age": {"digits": 1}}))
    with pytest.raises(ValueError, match=r"grid .* dropped column 'wage'"):
        make_plan(frame, decl(grid={"wage": {"digits": 2}}, drop=["wage"]))


def test_off_grid_real_values_warn(frame):
    with pytest.warns(UserWarning, match=r"column 'wage'.* 9\d(\.\d)?% of its observed values"):
        make_plan(frame, Declarations.from_arguments(grid={"wage": {"step": 0.7, "digits": 1}},
                                                     missing_codes={"wage": [-9]}))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = make_plan(
            frame, Declarations.from_arguments(grid={"wage": {"digits": 2}}, missing_codes={
                "wage": [-9]})
        )  # fmt: skip
    reason = plan.choices().set_index("column").loc["wage", "reason"]
    assert "grid round(k * 0.01, 2)" in reason


def test_synthetic_values_on_their_grid(frame):
    rng = np.random.default_rng(0)
    frame = frame.assign(gains=np.where(frame.gains > 0, np.round(frame.gains / 25) * 25, 0.0))
    model = FileModel(
        missing_codes={"wage": [-9]},
        grid={"wage": {"step": 0.25, "digits": 2}, "gains": {"step": 25}, "hours": {"step": 5}},
        models={"hours": "normal"},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hours are off the 5-grid in the test frame
        out = _synth(model, frame, rng, m=3)
    for syn in out:
        w = syn.wage[(syn.wage != -9) & syn.wage.notna()]
        assert len(w) > 0 and (w > 0).all()
        np.testing.assert_allclose(w, np.round(np.round(w / 0.25) * 0.25, 2), atol=0)
        g = syn.gains[syn.gains != 0]
        assert len(g) > 0 and (g > 0).all()  # the spike at 0 is a status; values stay > 0
        np.testing.assert_array_equal(np.rint(g / 25) * 25, g)  # huge draws: % is inexact
        h = syn.hours.dropna()
        np.testing.assert_array_equal(h % 5, 0)
        assert set(syn.wage[syn.wage < 0]) <= {-9.0}


def test_grid_keeps_values_off_spikes():
    rng = np.random.default_rng(2)
    x = np.where(rng.random(400) < 0.3, 40.0, np.round(rng.normal(40, 1.0, 400)))
    frame = pd.DataFrame({"s": rng.choice(["a", "b"], 400), "x": x})
    model = FileModel(spikes={"x": [40]}, grid={"x": {"step": 1}}, models={"x": "normal"})
    # status "spike" has probability ~0 and values are drawn around 40: every value that would
    # snap to the spike goes to 39 or 41 instead, so no synthetic record is 40
    fix = {"x.status::intercept": -60.0, "x.status::beta": 0.0, "x.value::intercept": 40.0,
           "x.value::sigma": 0.7, "x.value::beta": 0.0}  # fmt: skip
    for syn in _synth(model, frame, rng, m=3, fix=fix):
        assert (syn.x != 40).all()
        assert ((syn.x == 39) | (syn.x == 41)).mean() > 0.5
        np.testing.assert_array_equal(syn.x % 1, 0)


def test_synthesize_refuses_a_bad_grid_before_fitting(frame):
    from pseudopost.synthesis import synthesize

    with pytest.raises(TypeError, match=r"grid of column 'region' needs a numeric column"):
        synthesize(frame, grid={"region": {"digits": 1}}, draws=10, tune=10)
    with pytest.raises(ValueError, match=r"'step' must be a finite number > 0"):
        synthesize(frame, grid={"wage": {"step": 0.0}}, draws=10, tune=10)
