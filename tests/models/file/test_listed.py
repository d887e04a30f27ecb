"""A numeric column declared to take one of a list of values (``grid={"g": {"values": [...]}}``,
a form's amounts): the listed grid's points, bounds, snapping and errors; the plan models the
values by the cumulative part over them, with the zero a spike; a record's value term by hand
with SciPy; the accountant against brute force; synthetic values are listed values or the
spike; a numeric family's draws are snapped to the list; bad declarations name the column."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pseudopost.models.file import Declarations, FileModel, make_plan
from pseudopost.models.file.grid import MAX_POINTS, Grid
from pseudopost.privacy.kernels.parts import PartAccountant

from .test_synthesis import _synth

AMOUNTS = [114.0, 401.0, 594.0, 2174.0, 7688.0, 15024.0, 99999.0]
N = 300


def test_listed_points_bounds_and_snapping():
    g = Grid.parse({"values": [7688, 114, 99999, 401, 594, 2174, 15024, 401]}, "g")
    assert g.listed and g.values == tuple(AMOUNTS) and g.bounds == (114.0, 99999.0)
    assert g.points().tolist() == AMOUNTS and g.integral
    assert g.describe() == "7 listed values from 114 to 99999"
    assert Grid.parse(g.to_dict(), "g") == g and g.to_dict() == {"values": AMOUNTS}
    np.testing.assert_array_equal(
        g.snap(np.array([0.0, 257.5, 258.0, 500.0, 1e6])), [114, 114, 401, 594, 99999]
    )  # ties go to the lower value
    np.testing.assert_array_equal(g.snap(np.array([120.0]), forbidden=(114,)), [401])
    np.testing.assert_array_equal(g.snap(np.array([120.0]), 114, low_open=True), [401])
    assert g.points(forbidden=(99999,)).tolist() == AMOUNTS[:-1]
    assert g.share_off(np.array([114.0, 115.0, np.nan, 99999.0])) == pytest.approx(1 / 3)
    assert not Grid(values=(0.5, 1)).integral
    with pytest.raises(ValueError, match=r"has no step, so no grid indices"):
        g.index(np.array([1.0]))
    for bad in ([1], [1, 1], [0, math.inf], "12", [1, "a"]):
        with pytest.raises(ValueError, match=r"Column 'g': A grid's 'values' must be at least 2"):
            Grid.parse({"values": bad}, "g")
    with pytest.raises(ValueError, match=r"'values' .* cannot be combined with 'step'"):
        Grid.parse({"values": [1, 2], "step": 1}, "g")
    with pytest.raises(ValueError, match=rf"lists {MAX_POINTS + 1} values, more than"):
        Grid(values=range(MAX_POINTS + 1))


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(23)
    a = rng.choice(["x", "y"], N).astype(object)
    g = np.where(
        rng.random(N) < 0.6, 0.0, rng.choice(AMOUNTS, N, p=[0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1])
    )
    g[rng.random(N) < 0.1] = np.nan
    frame = pd.DataFrame({"a": pd.array(a, dtype=object), "g": g})
    model = FileModel(grid={"g": {"values": AMOUNTS}}, spikes={"g": [0]})
    prepared = model.prepare(frame)
    parts = model.parts(prepared)
    data = model.part_data(prepared)
    draws = {}
    for part in parts:
        x = part.initial_point(1) + rng.normal(scale=0.3, size=(4, part.layout.size))
        draws.update({f"{part.name}::{k}": v for k, v in part.layout.unpack(x).items()})
    return frame, model, prepared, parts, data, draws


def test_plan_models_the_listed_values(setup):
    frame, _, prepared, parts, data, _ = setup
    assert [p.name for p in parts] == ["a", "g.status", "g.value"]
    value = parts[2]
    assert value.family == "cumulative" and value.n_levels == len(AMOUNTS)
    obs = (frame.g > 0).to_numpy()
    np.testing.assert_array_equal(data[2].active, obs)
    np.testing.assert_array_equal(data[2].y[obs], np.searchsorted(AMOUNTS, frame.g[obs]))
    row = prepared.plan.choices().set_index("column").loc["g"]
    assert row["model"] == "grid_ordinal"
    assert "its levels are the 7 points of the grid 7 listed values from 114" in row["reason"]


def test_value_term_by_hand_and_accountant_equals_brute_force(setup):
    """The value part's per-record log-likelihood is log[F((c_{k+1} - eta) s) - F((c_k - eta) s)]
    at the listed value's index k (logistic F, s = exp(-x'gamma): location-scale), and the accountant's reduction of the whole record
    equals the brute-force maximum over draws."""
    frame, _, _, parts, data, draws = setup
    obs = (frame.g > 0).to_numpy()
    k = np.searchsorted(AMOUNTS, np.where(obs, frame.g, AMOUNTS[0]))
    Xa = np.column_stack([frame.a == "y"]).astype(float)
    full = PartAccountant(parts, data)(draws)
    value = PartAccountant(parts[2:], data[2:])(draws)
    for m in range(4):
        c = np.concatenate([[-np.inf], draws["g.value::cutpoints"][m], [np.inf]])
        eta = Xa @ draws["g.value::beta"][m]
        sc = np.exp(-(Xa @ draws["g.value::gamma"][m]))
        lv = np.log(
            stats.logistic.cdf((c[k + 1] - eta) * sc) - stats.logistic.cdf((c[k] - eta) * sc)
        )
        np.testing.assert_allclose(value[m], np.where(obs, lv, 0.0), rtol=1e-10, atol=1e-12)
    w = np.random.default_rng(5).uniform(0, 1, N)
    red = PartAccountant(parts, data).reduce_abs(draws, w)
    np.testing.assert_allclose(red.per_record, np.abs(full).max(axis=0), rtol=1e-10)
    np.testing.assert_allclose(red.per_draw, np.abs(w * full).max(axis=1), rtol=1e-10)


def test_synthetic_values_are_listed_or_the_spike(setup):
    frame, model, _, _, _, _ = setup
    seen = set()
    for syn in _synth(model, frame, np.random.default_rng(3), m=3, scale=1.0):
        g = syn.g.dropna().to_numpy()
        assert g.size and np.isin(g, [0.0, *AMOUNTS]).all()
        seen |= set(g.tolist())
    assert 0.0 in seen and len(seen) >= 4


def test_numeric_family_is_snapped_to_the_list(setup):
    frame, _, _, _, _, _ = setup
    model = FileModel(grid={"g": {"values": AMOUNTS}}, spikes={"g": [0]},
                      models={"g": "lognormal"})  # fmt: skip
    for syn in _synth(model, frame, np.random.default_rng(4), m=2):
        g = syn.g.dropna().to_numpy()
        assert np.isin(g, [0.0, *AMOUNTS]).all() and (g > 0).any()


def test_bad_declarations(setup):
    frame = setup[0]
    with pytest.raises(ValueError, match=r"Column 'g' holds the value 0, outside the bounds "
                                         r"\[114, 99999\].*list the value, declare it a spike"):  # fmt: skip
        make_plan(frame, Declarations.from_arguments(grid={"g": {"values": AMOUNTS}}))
    with pytest.raises(ValueError, match=r"column\(s\) \['g'\] declare heaps on a grid of listed"):
        Declarations.from_arguments(grid={"g": {"values": AMOUNTS}}, heaps={"g": [5]})
    with pytest.warns(UserWarning, match=r"Grid of column 'g': .*% of its observed values are "
                                         r"not on the declared grid 6 listed values"):  # fmt: skip
        make_plan(frame, Declarations.from_arguments(
            grid={"g": {"values": [a for a in AMOUNTS if a != 401]}}, spikes={"g": [0]}))  # fmt: skip
