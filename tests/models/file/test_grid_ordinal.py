"""A numeric column on a declared *bounded* grid is modelled over the grid's points
(``grid_ordinal``: the cumulative part): the grid's points and bounds, the plan's choice and
outcome codes, a record's log-likelihood as status + cumulative value by hand with SciPy, the
accountant against brute force, synthetic values that are always points inside the bounds and
never a code, a small fit whose heaped shares match the real ones, and bad declarations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from pseudopost.models.file import Declarations, FileModel, make_plan
from pseudopost.models.file.grid import MAX_POINTS, Grid
from pseudopost.models.parts import GroupedData
from pseudopost.privacy.kernels.parts import PartAccountant

from .test_heaps import _pounds
from .test_synthesis import _synth

N = 240
GRID = {"step": 0.4536, "digits": 2, "bounds": [40, 90]}


def test_points_bounds_and_snapping():
    g = Grid.parse(GRID, "w")
    pts = g.points()
    assert pts[0] == 40.37 and pts[-1] == 89.81  # round(89 * 0.4536, 2) .. round(198 * 0.4536, 2)
    assert pts.size == 198 - 89 + 1 and np.all(np.diff(pts) > 0)
    assert "in [40, 90]" in g.describe() and g.to_dict()["bounds"] == [40.0, 90.0]
    assert Grid.parse(g.to_dict(), "w") == g
    np.testing.assert_array_equal(g.snap(np.array([10.0, 65.0, 500.0])), [40.37, 64.86, 89.81])
    np.testing.assert_array_equal(Grid.nearest(pts, pts), np.arange(pts.size))
    assert Grid(1.0, bounds=(0, 5)).points(forbidden=(3,)).tolist() == [0, 1, 2, 4, 5]
    for bad in ([5, 1], [1], ["a", 2], [0, math.inf], "0-5"):
        with pytest.raises(ValueError, match=r"'bounds' must be two finite numbers"):
            Grid.parse({"step": 1, "bounds": bad}, "w")
    with pytest.raises(ValueError, match=rf"more than {MAX_POINTS}"):
        Grid(0.01, bounds=(0, 1000)).points()
    with pytest.raises(ValueError, match=r"has no bounds"):
        Grid(1.0).points()


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(17)
    a = rng.choice(["x", "y", "z"], N).astype(object)
    a[rng.random(N) < 0.1] = None
    w = _pounds(rng, N)
    w = np.clip(w, 40.37, 89.81)
    w[rng.random(N) < 0.15] = np.nan
    w[rng.random(N) < 0.05] = -8.0  # a code: outside the bounds, but a status, not a value
    frame = pd.DataFrame({"a": pd.array(a, dtype=object), "w": w})
    model = FileModel(grid={"w": GRID}, missing_codes={"w": [-8]})
    prepared = model.prepare(frame)
    parts = model.parts(prepared)
    data = model.part_data(prepared)
    draws = {}
    for part in parts:
        x = part.initial_point(1) + rng.normal(scale=0.3, size=(5, part.layout.size))
        draws.update({f"{part.name}::{k}": v for k, v in part.layout.unpack(x).items()})
    return frame, model, prepared, parts, data, draws


def _by_hand(frame: pd.DataFrame, draws: dict, m: int) -> np.ndarray:
    p = {k: v[m] for k, v in draws.items()}
    a = frame.a.to_numpy(dtype=object)
    a_miss = pd.isna(frame.a).to_numpy()
    f = np.log(p["a::p"][np.select([a_miss, a == "x", a == "y", a == "z"], [3, 0, 1, 2])])
    Xa = np.column_stack([a == "y", a == "z", a_miss]).astype(float)
    w = frame.w.to_numpy()
    obs = ~np.isnan(w) & (w != -8)
    status = np.select([obs, np.isnan(w)], [0, 1], 2)  # observed, missing, -8
    logits = np.column_stack([np.zeros(N), p["w.status::intercept"] + Xa @ p["w.status::beta"]])
    f += special.log_softmax(logits, axis=1)[np.arange(N), status]
    # the value: the index of its point among round(k * 0.4536, 2) in [40, 90], k = 89..198
    k = np.rint(np.where(obs, w, 60) / 0.4536) - 89
    c = np.concatenate([[-np.inf], p["w.value::cutpoints"], [np.inf]])
    eta = Xa @ p["w.value::beta"]
    s = np.exp(-(Xa @ p["w.value::gamma"]))  # location-scale (the default)
    idx = k.astype(int)
    lv = np.log(stats.logistic.cdf((c[idx + 1] - eta) * s) - stats.logistic.cdf((c[idx] - eta) * s))
    return f + np.where(obs, lv, 0.0)


def test_plan_models_the_points(setup):
    frame, _, prepared, parts, data, _ = setup
    assert [p.name for p in parts] == ["a", "w.status", "w.value"]
    value = parts[2]
    assert value.family == "cumulative" and value.n_levels == 110
    obs = (frame.w.notna() & (frame.w != -8)).to_numpy()
    np.testing.assert_array_equal(data[2].active, obs)
    np.testing.assert_array_equal(data[2].y[obs], np.rint(frame.w[obs] / 0.4536) - 89)
    row = prepared.plan.choices().set_index("column").loc["w"]
    assert row["model"] == "grid_ordinal" and "the 110 points of the grid" in row["reason"]
    assert "w.value (cumulative, location-scale)" in row["parts"]
    assert value.has_scale and value.layout.names == ["cutpoints", "beta", "gamma"]


def test_shift_only_columns(setup, frame):
    """``shift_only`` keeps the proportional-odds model (no gamma) for the columns it names, and
    is refused, before any fitting, for a column not modelled over a grid's points or bins."""
    frame_w = setup[0]
    plan = make_plan(frame_w, Declarations.from_arguments(
        grid={"w": GRID}, missing_codes={"w": [-8]}, shift_only=["w"]))  # fmt: skip
    value = plan.parts[-1]
    assert value.name == "w.value" and not value.has_scale
    assert value.layout.names == ["cutpoints", "beta"]
    assert "w.value (cumulative)" in plan.choices().set_index("column").loc["w", "parts"]
    with pytest.raises(ValueError, match=r"Column 'age' is declared 'shift_only', but it is "
                                         r"modelled by 'negative_binomial'"):  # fmt: skip
        make_plan(frame, Declarations.from_arguments(shift_only=["age"]))
    with pytest.raises(ValueError, match=r"'shift_only' names column\(s\) \['nope'\]"):
        make_plan(frame, Declarations.from_arguments(shift_only=["nope"]))
    with pytest.raises(TypeError, match=r"'shift_only' must be a list of column names"):
        Declarations.from_arguments(shift_only="w")


def test_record_loglik_is_status_and_cumulative_value(setup):
    frame, _, _, parts, data, draws = setup
    F = PartAccountant(parts, data)(draws)
    for m in range(F.shape[0]):
        np.testing.assert_allclose(F[m], _by_hand(frame, draws, m), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("grouped", [False, True], ids=["records", "grouped"])
def test_accountant_equals_brute_force(setup, grouped):
    frame, _, _, parts, data, draws = setup
    if grouped:
        data = [GroupedData.of(p, d) for p, d in zip(parts, data, strict=True)]
    F = np.array([_by_hand(frame, draws, m) for m in range(5)])
    c = np.random.default_rng(4).uniform(0, 1, N)
    red = PartAccountant(parts, data).reduce_abs(draws, c)
    np.testing.assert_allclose(red.per_record, np.abs(F).max(axis=0), rtol=1e-10)
    np.testing.assert_allclose(red.per_draw, np.abs(c * F).max(axis=1), rtol=1e-10)


def test_synthetic_values_are_points_inside_the_bounds(setup):
    frame, model, _, _, _, _ = setup
    pts = Grid.parse(GRID, "w").points()
    seen_code = False
    for syn in _synth(model, frame, np.random.default_rng(3), m=3, scale=2.0):
        w = syn.w.dropna().to_numpy()
        seen_code |= bool((w == -8).any())
        values = w[w != -8]
        assert values.size and np.isin(values, pts).all()
    assert seen_code  # the code comes out as the code (a status), never as a drawn value


def test_bad_declarations(frame):
    with pytest.raises(ValueError, match=r"'grid_ordinal' of column 'wage' needs a declared grid "
                                         r"with bounds"):  # fmt: skip
        make_plan(frame, Declarations.from_arguments(models={"wage": "grid_ordinal"},
                                                     missing_codes={"wage": [-9]}))  # fmt: skip
    decl = Declarations.from_arguments(grid={"age": {"step": 1, "bounds": [18, 80]}})
    with pytest.raises(ValueError, match=r"Column 'age' holds the value 16.*outside the bounds "
                                         r"\[18, 80\]"):  # fmt: skip
        make_plan(frame, decl)
    decl = Declarations.from_arguments(grid={"age": {"step": 1, "bounds": [16, 80]}},
                                       heaps={"age": [5]})  # fmt: skip
    with pytest.raises(ValueError, match=r"'age' declares heaps, but its model \(grid_ordinal\)"):
        make_plan(frame, decl)
    decl = Declarations.from_arguments(grid={"wage": {"step": 1e-3, "bounds": [0, 100]}},
                                       missing_codes={"wage": [-9]})  # fmt: skip
    with pytest.raises(ValueError, match=r"Column 'wage': .* more than 5000"):
        make_plan(frame, decl)
    plan = make_plan(frame, Declarations.from_arguments(
        grid={"age": {"step": 1, "bounds": [16, 80]}}, models={"age": "negative_binomial"}))  # fmt: skip
    assert plan.plans[plan.order.index("age")].choice.model == "negative_binomial"  # declared


def test_fitted_heap_shares_within_monte_carlo_error():
    """A small fit: the shares of multiples of 10 and of 5 lb come out as the real ones within
    Monte Carlo error (binomial sd of both samples, 4 sd) with no heaps declared: the cumulative
    part gives every point its own probability."""
    from pseudopost.synthesis import synthesize

    rng = np.random.default_rng(11)
    n = 600
    frame = pd.DataFrame({"sex": rng.choice(["f", "m"], n),
                          "w": np.clip(_pounds(rng, n, 0.35, 0.25), 40.37, 89.81)})  # fmt: skip
    out = synthesize(frame, grid={"w": GRID}, draws=100, tune=100, chains=1, seed=5,
                     progress=False)  # fmt: skip
    assert out.choices.set_index("column").loc["w", "model"] == "grid_ordinal"
    real = np.rint(frame.w / 0.4536)
    syn = pd.concat([out.synthesize(seed=s, weighted=False) for s in range(3)])
    lb = np.rint(syn.w / 0.4536)
    assert syn.w.between(40, 90).all()
    for share_real, share_syn, m in (
        ((real % 10 == 0).mean(), (lb % 10 == 0).mean(), len(lb)),
        (((real % 5 == 0) & (real % 10 != 0)).mean(), ((lb % 5 == 0) & (lb % 10 != 0)).mean(),
         len(lb)),
    ):  # fmt: skip
        sd = math.sqrt(share_real * (1 - share_real) * (1 / n + 1 / m))
        assert abs(share_syn - share_real) < 4 * sd + 0.02, (share_real, share_syn)
    assert out.epsilon < out.unweighted_epsilon


def test_few_counted_values_per_predictor_make_a_part_shift_only(setup):
    """A released count of a column's values (``value_counts``, the structure stage's) below
    SCALE_MIN_RECORDS per predictor feature drops the spread's coefficients, says so in the
    choices table, and changes nothing at or above it; with no count the number of records
    stands in; bad counts are refused."""
    from pseudopost.models.file.plan import SCALE_MIN_RECORDS

    frame_w = setup[0]

    def plan_with(counts):
        return make_plan(frame_w, Declarations.from_arguments(
            grid={"w": GRID}, missing_codes={"w": [-8]}, value_counts=counts))  # fmt: skip

    none = plan_with(None)  # no count: the number of records stands in, an upper bound
    p, n = none.parts[-1].p, len(frame_w)
    assert p >= 1
    assert none.parts[-1].has_scale == (n >= SCALE_MIN_RECORDS * p)
    if n < SCALE_MIN_RECORDS * p:
        assert (f"about {n} values (the number of records, an upper bound)" in
                none.choices().set_index("column").loc["w", "reason"])  # fmt: skip
    at = plan_with({"w": SCALE_MIN_RECORDS * p})
    assert at.parts[-1].has_scale and "shift-only" not in at.choices().reason.str.cat()
    below = plan_with({"w": SCALE_MIN_RECORDS * p - 1})
    value = below.parts[-1]
    assert value.name == "w.value" and not value.has_scale
    assert value.layout.names == ["cutpoints", "beta"]
    row = below.choices().set_index("column").loc["w"]
    assert "w.value (cumulative)" in row["parts"]
    assert (f"w.value shift-only: about {SCALE_MIN_RECORDS * p - 1} values (DP count) for {p} "
            f"predictor features, fewer than {SCALE_MIN_RECORDS} each") in row["reason"]
    for bad in (-1, math.nan, "12", True):
        with pytest.raises(ValueError, match=r"The value count of column 'w' must be a finite"):
            Declarations.from_arguments(value_counts={"w": bad})
    with pytest.raises(ValueError, match=r"'value_counts' names column\(s\) \['nope'\]"):
        make_plan(frame_w, Declarations.from_arguments(value_counts={"nope": 5.0}))


def test_level_groups_add_small_value_parts_only_when_asked():
    """``values`` > 0 adds each value part over at most that many points (a 0/1 or 0-7
    answer on its bounded grid), each record's point index, -1 where the value is not
    observed; a grid of more points only with ``runs``, each record's run of consecutive
    points (by grid position), and a normal part never. The default keeps only the level,
    status and heap parts (the weight floor's groups)."""
    rng = np.random.default_rng(4)
    n = 200
    frame = pd.DataFrame({
        "days": rng.integers(0, 8, n).astype(float),
        "score": rng.integers(0, 60, n).astype(float),
        "x": rng.normal(size=n),
    })  # fmt: skip
    frame.loc[::9, "days"] = np.nan
    model = FileModel(
        grid={"days": {"step": 1, "bounds": [0, 7]}, "score": {"step": 1, "bounds": [0, 59]}},
        models={"x": "normal"},
    )
    prepared = model.prepare(frame)
    plain = model.level_groups(prepared)
    wide = model.level_groups(prepared, values=20)
    assert "days.value" not in plain and "days.status" in plain
    assert set(wide) - set(plain) == {"days.value"}
    days = wide["days.value"]
    observed = frame["days"].notna().to_numpy()
    np.testing.assert_array_equal(days[~observed], -1)
    np.testing.assert_array_equal(days[observed], frame["days"][observed].astype(int))
    assert "score.value" not in model.level_groups(prepared, values=59)
    assert "score.value" in model.level_groups(prepared, values=60)
    # a wider grid over runs of consecutive points: 60 points in 20 runs of 3, by position
    runs = model.level_groups(prepared, values=20, runs=20)
    assert set(runs) - set(wide) == {"score.value"} and "x.value" not in runs
    np.testing.assert_array_equal(runs["score.value"], frame["score"].to_numpy().astype(int) // 3)
    np.testing.assert_array_equal(runs["days.value"], days)  # a small grid: point by point
    # more runs than points: point by point
    many = model.level_groups(prepared, values=20, runs=100)
    np.testing.assert_array_equal(many["score.value"], frame["score"].to_numpy().astype(int))
