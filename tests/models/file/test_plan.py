"""The whole-file plan: how each column is encoded and split into parts, which records each part
sees, and every bad input refused before any fitting with a message naming what is wrong."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pseudopost.models.file import Declarations, FileModel, make_plan

RULE = "wage is missing when employed == 'no'"
ZERO = "employed == 'yes' and age < 18"


def _plan(frame, **kw):
    return make_plan(frame, Declarations.from_arguments(**kw))


def _by_name(plan):
    return {p.name: p for p in plan.plans}


def test_parts_of_each_kind_of_column(frame):
    plan = _plan(frame, missing_codes={"wage": [-9]}, rules=[RULE], structural_zeros=[ZERO])
    p = _by_name(plan)
    # a string column with empty cells: one categorical over its values and "missing"
    region = p["region"]
    assert [lv.label for lv in region.column.levels] == ["east", "north", "south", "missing"]
    assert [pp.part.family for pp in region.parts] == ["categorical"]
    assert region.parts[0].part.n_levels == 4
    # the first column has no predictors: the conjugate Dirichlet-categorical
    assert p["sex"].parts[0].part.family == "dirichlet_categorical"
    # a code and a rule: the rule's records leave the wage parts; status observed / -9
    wage = p["wage"]
    assert [pp.role for pp in wage.parts] == ["status", "value"]
    assert wage.choice.family == "lognormal"
    fixed = (frame.employed == "no").to_numpy()
    np.testing.assert_array_equal(wage.fixed, fixed)
    data = dict(
        zip(
            [q.name for q in plan.parts], FileModel.part_data(FileModel(), _prep(plan)), strict=True
        )
    )
    status, value = data["wage.status"], data["wage.value"]
    np.testing.assert_array_equal(status.active, ~fixed)
    np.testing.assert_array_equal(value.active, ~fixed & (frame.wage != -9).to_numpy())
    assert set(status.y[status.active]) == {0.0, 1.0}  # observed, the code -9
    np.testing.assert_array_equal(wage.parts[0].codes, [0, 2])  # status codes: observed, -9
    # zeros in a numeric amount: a spike at 0 and a log-normal on the positive values
    gains = p["gains"]
    assert gains.choice.model == "hurdle_lognormal" and gains.column.info.spikes == (0.0,)
    assert [pp.part.family for pp in gains.parts] == ["bernoulli", "lognormal"]
    # an ordered category: an ordinal on the observed levels (no status: none missing)
    assert [pp.part.family for pp in p["health"].parts] == ["ordinal"]
    # the zero's last column is employed: its part is masked
    assert p["employed"].parts[0].part.family == "masked_categorical"
    mask = p["employed"].mask
    young = (frame.age < 18).to_numpy()
    yes = list(p["employed"].parts[0].codes).index(
        [lv.value for lv in p["employed"].column.levels].index("yes")
    )
    assert not mask[young, yes].any() and mask[~young].all()


def _prep(plan):
    from pseudopost.models.file import FilePrepared

    return FilePrepared(plan, {})


def test_design_features_of_earlier_columns(frame):
    plan = _plan(
        frame, missing_codes={"wage": [-9]}, knots={"age": [30, 50]}, transforms={"age": (40, 10)},
        interactions=[("sex", "region")], predictor_matrix={"hours": ["sex", "region", "age", "wage"]},
    )  # fmt: skip
    names = _by_name(plan)["hours"].design.names
    assert names == [
        "sex=M", "region=north", "region=south", "region:missing",
        "(age - 40) / 10", "age>30", "age>50",
        "wage:missing", "wage:-9", "log(wage)",
        "sex=M&region=north", "sex=M&region=south", "sex=M&region:missing",
    ]  # fmt: skip
    X = _by_name(plan)["hours"].design.matrix(
        {c: (e.status, e.values) for c, e in ((p.name, p.column) for p in plan.plans)}, len(frame)
    )
    t = (frame.age.to_numpy() - 40) / 10
    np.testing.assert_allclose(X[:, 4], t)
    np.testing.assert_allclose(X[:, 5], np.maximum(t - (30 - 40) / 10, 0))
    np.testing.assert_allclose(X[:, 6], np.maximum(t - (50 - 40) / 10, 0))
    w = frame.wage.to_numpy()
    obs = ~np.isnan(w) & (w != -9)
    np.testing.assert_array_equal(X[:, 7], np.isnan(w))
    np.testing.assert_array_equal(X[:, 8], w == -9)
    np.testing.assert_allclose(X[:, 9], np.where(obs, np.log(np.where(obs, w, 1.0)), 0.0))
    np.testing.assert_array_equal(
        X[:, 10], (frame.sex == "M").to_numpy() & (frame.region == "north").to_numpy()
    )


def test_knots_on_a_public_support_enter_as_hat_functions(frame):
    """On a public support [16, 80] the knots' terms are hat functions of the unit value, each
    1 at its knot and 0 at the knots beside it: the same functions as the hinge basis (value
    and (x - knot)_+) but with coefficients that are effects at the knots, so a steep change
    over a short stretch (schooling between ages 17 and 21) is not a large slope under the
    prior. Without knots the value alone, in units of the support's width."""
    grid = {"age": {"step": 1, "bounds": [16, 80]}}
    with_knots = _by_name(_plan(frame, grid=grid, knots={"age": [20, 48]}))["hours"].design
    plain = _by_name(_plan(frame, grid=grid))["hours"].design
    assert [n for n in with_knots.names if n.startswith("age")] == ["age@20", "age@48", "age@high"]
    assert [n for n in plain.names if n.startswith("age")] == ["age"]
    states = {p.name: (p.column.status, p.column.values) for p in _plan(frame, grid=grid).plans}
    Xk = with_knots.matrix(states, len(frame))
    Xp = plain.matrix(states, len(frame))
    u = (frame.age.to_numpy() - 16) / 64
    at = [with_knots.names.index(n) for n in ("age@20", "age@48", "age@high")]
    np.testing.assert_allclose(Xp[:, plain.names.index("age")], u)
    hats = Xk[:, at]
    k1, k2 = 4 / 64, 32 / 64
    np.testing.assert_allclose(hats[:, 0], np.where(u <= k1, u / k1, np.maximum(0, (k2 - u) / (k2 - k1))))
    np.testing.assert_allclose(hats[:, 2], np.maximum(0, (u - k2) / (1 - k2)))
    np.testing.assert_allclose(hats.sum(axis=1)[u >= k1], 1.0)  # a partition of unity past 20
    # the hinge basis' functions lie in the hats' span, exactly
    hinge = np.column_stack([u, np.maximum(u - k1, 0), np.maximum(u - k2, 0)])
    coef, *_ = np.linalg.lstsq(hats, hinge, rcond=None)
    np.testing.assert_allclose(hats @ coef, hinge, atol=1e-12)
    assert np.linalg.matrix_rank(hats) == 3


def test_location_scale_parts_centre_the_spread_on_the_hats(frame):
    """A location-scale value part's log-spread design is centred at 1/h on each of a column's
    h hat functions (0 elsewhere), so along the hats' sum, 1 past the first knot, the spread
    no longer trades against the cutpoints' scale; the centre comes from the names alone."""
    grid = {"age": {"step": 1, "bounds": [16, 80]}, "hours": {"step": 1, "bounds": [0, 99]}}
    plan = _by_name(_plan(frame, grid=grid, knots={"age": [20, 48]}))
    value = next(pp.part for pp in plan["hours"].parts if pp.role == "value")
    assert value.family == "cumulative" and value.has_scale
    names = list(value.predictors)
    hats = [names.index(n) for n in ("age@20", "age@48", "age@high")]
    expected = np.zeros(len(names))
    expected[hats] = 1 / 3
    np.testing.assert_allclose(value.centre, expected)
    assert plan["hours"].design.scale_centre(names) == value.scale_centre
    # a design without hats has no centre to take
    assert not any(_by_name(_plan(frame, grid=grid))["hours"].design.scale_centre(names))
    states = {c: (p.column.status, p.column.values) for c, p in plan.items()}
    design = plan["hours"].design
    X = design.matrix(states, len(frame))[:, [design.names.index(n) for n in names]]
    past = (frame.age >= 20).to_numpy()
    np.testing.assert_allclose((X - value.centre)[past][:, hats].sum(axis=1), 0.0, atol=1e-12)


def test_knots_at_or_beyond_a_public_supports_ends_add_no_hat(frame):
    """A declared knot at or past an end of the public support (a codebook's band edge beyond
    a declared range) would be a hinge that is linear or zero there: as hat functions it adds
    nothing, so it is left out, and the design is the one without it."""
    grid = {"age": {"step": 1, "bounds": [16, 80]}}
    inside = _by_name(_plan(frame, grid=grid, knots={"age": [20, 48]}))["hours"].design
    wide = _by_name(_plan(frame, grid=grid, knots={"age": [10, 16, 20, 48, 80, 95]}))
    design = wide["hours"].design
    assert design.names == inside.names
    states = {c: (p.column.status, p.column.values) for c, p in wide.items()}
    np.testing.assert_array_equal(design.matrix(states, len(frame)),
                                  inside.matrix(states, len(frame)))  # fmt: skip


def test_knots_for_listed_columns_only(frame):
    """Knots declared for some later columns: those get the spline terms, the others the value
    alone, and the design's columns are the same functions of the data either way."""
    everywhere = _by_name(_plan(frame, knots={"age": [30, 50]}))
    listed = _by_name(_plan(frame, knots={"age": {"at": [30, 50], "columns": ["hours"]}}))
    states = {c: (p.column.status, p.column.values) for c, p in listed.items()}
    later = ["employed", "wage", "hours", "health", "gains"]
    for c in later:
        full = everywhere[c].design
        assert {"age>30", "age>50"} <= set(full.names)
        got = listed[c].design
        if c == "hours":
            assert got.names == full.names
        else:
            assert got.names == [n for n in full.names if n not in ("age>30", "age>50")]
        keep = [full.names.index(n) for n in got.names]
        np.testing.assert_array_equal(
            got.matrix(states, len(frame)), full.matrix(states, len(frame))[:, keep]
        )
    # the description names the knots where they are used
    plan = _plan(frame, knots={"age": {"at": [30, 50], "columns": ["hours"]}})
    text = plan.choices().set_index("column")["predictors"]
    assert "age (knots 30, 50)" in text["hours"]
    assert "age," in text["wage"] and "knots" not in text["wage"]


@pytest.mark.parametrize(
    ("knots", "error", "match"),
    [
        ({"age": {"at": [30], "columns": ["region"]}}, ValueError,
         r"knots of column 'age' are declared for column 'region', whose model is not "
         r"conditioned on 'age'"),
        ({"age": {"at": [30], "columns": ["nope"]}}, ValueError, r"names column\(s\) \['nope'\]"),
        ({"age": {"at": [30], "columns": ["age"]}}, ValueError, r"names 'age' itself"),
        ({"age": {"at": [30]}}, ValueError, r"need exactly 'at' .* and 'columns'"),
        ({"age": {"at": [50, 30], "columns": ["hours"]}}, ValueError, r"must increase strictly"),
        ({"age": {"at": [30], "columns": []}}, ValueError, r"names no column"),
    ],
)  # fmt: skip
def test_listed_knots_refused_before_any_fitting(frame, knots, error, match):
    with pytest.raises(error, match=match):
        FileModel(knots=knots, missing_codes={"wage": [-9]}).prepare(frame)


def test_the_frame_is_never_modified(frame):
    before = frame.copy(deep=True)
    model = FileModel(missing_codes={"wage": [-9]}, rules=[RULE], structural_zeros=[ZERO])
    prepared = model.prepare(frame)
    model.part_data(prepared)
    pd.testing.assert_frame_equal(frame, before)


@pytest.mark.parametrize(
    ("kw", "error", "match"),
    [
        ({"missing_codes": {"wage": ["-9"]}}, TypeError, r"code '-9' of column 'wage' must be a number"),
        ({"missing_codes": {"age": [-1.5]}}, ValueError, r"code -1.5 of column 'age' is not an integer"),
        ({"rules": ["wage is missing when job == 'no'"]}, ValueError, r"names the column 'job'"),
        ({"rules": ["wage is missing when employed == 'maybe'"]}, ValueError,
         r"names the level 'maybe' of column 'employed'"),
        ({"rules": ["employed == 'no' when hours == 0"]}, ValueError,
         r"Rule .* fixes column 'employed' \(number 4 in the visit order\) by a condition on "
         r"\['hours'\] \(number 7"),
        ({"rules": ["wage is missing when sex == 'F'"]}, ValueError,
         r"contradicted by the data: row \d+ has wage ="),
        ({"structural_zeros": ["employed == 'no' and age > 60"]}, ValueError,
         r"declared impossible, but the data contain it: row \d+"),
        ({"structural_zeros": ["region == 'east' and wage > 100"]}, ValueError,
         r"drawn last, 'wage', must be modelled as categorical"),
        ({"spikes": {"gains": [-5]}}, ValueError, r"spike -5.0 of column 'gains' is outside the "
         r"support of its model \(hurdle_lognormal"),
        ({"models": {"gains": "lognormal"}}, ValueError,
         r"Part 'gains.value' \(lognormal\): outcome 'gains' must be strictly positive"),
        ({"models": {"sex": "normal"}}, ValueError, r"model 'normal' of column 'sex' is numeric"),
        ({"models": {"age": "mixture"}}, ValueError, r"'mixture' of column 'age' has no column part"),
        ({"models": {"age": "gamma"}}, ValueError, r"Unknown model name 'gamma' for column 'age'"),
        ({"order": ["sex", "age"]}, ValueError, r"neither in 'order' nor in 'keep' or 'drop'"),
        ({"keep": ["nope"]}, ValueError, r"'keep' names column\(s\) \['nope'\]"),
        ({"predictor_matrix": {"age": ["hours"]}}, ValueError,
         r"conditions column 'age' on \['hours'\], which are neither kept nor earlier"),
        ({"transforms": {"sex": "log"}}, ValueError, r"Column 'sex' has a transform but enters "),
        ({"transforms": {"hours": "log"}}, ValueError, r"transform 'log' of column 'hours' needs "
         r"observed values > 0"),
        ({"interactions": [("sex", "age")]}, ValueError, r"names column 'age', which is numeric"),
        ({"keep": ["sex"], "drop": ["sex"]}, ValueError, r"in both 'keep' and 'drop'"),
        ({"rules": ["wage is missing when employed == 'no'"], "drop": ["employed"]}, ValueError,
         r"names the column\(s\) \['employed'\], which 'drop' leaves out"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_before_any_fitting(frame, kw, error, match):
    if "rules" not in kw and kw.get("missing_codes", {}).get("wage") is None:
        kw = {**kw, "missing_codes": {**kw.get("missing_codes", {}), "wage": [-9]}}
    with pytest.raises(error, match=match):
        FileModel(**kw).prepare(frame)


def test_declared_codes_and_a_codebook():
    from pseudopost.formats import Codebook, Variable

    frame = pd.DataFrame({"x": [1.0, -8.0, 2.0, np.nan, 3.0, -8.0], "g": list("ababab")})
    book = Codebook("sav", {"x": Variable("x", codes={-8.0: "not applicable"})})
    plan = make_plan(frame, Declarations.from_arguments(codebook=book))
    x = _by_name(plan)["x"]
    assert x.column.info.codes == (-8.0,)
    assert [x.column.status_label(s) for s in x.column.statuses] == ["observed", "missing", "-8"]
    # the codebook is the same as missing_codes=
    again = make_plan(frame, Declarations.from_arguments(missing_codes=book))
    assert _by_name(again)["x"].column.info.codes == (-8.0,)


def test_kept_and_dropped_columns(frame):
    plan = _plan(frame, keep=["sex"], drop=["region"], missing_codes={"wage": [-9]})
    assert "sex" in plan.kept and "region" not in plan.columns
    assert plan.order[0] == "age"
    # kept columns condition every synthesized column
    assert all(p.design.columns[0] == "sex" for p in plan.plans)
    table = plan.choices().set_index("column")
    assert table.loc["sex", "role"] == "kept" and table.loc["region", "role"] == "dropped"


def test_truncate_codes_a_value_beyond_to_the_end_and_leaves_it_out_of_its_own_model():
    """``truncate`` (the structure stage's DP supports): an observed value beyond the support
    holds the nearer end in the column's values (the later columns' designs) and is marked
    ``beyond``; a binned value part censors it into the outermost bin of positive width (not
    the end point's own bin), its grid-point part and a grid_ordinal value part leave it out.
    The input frame is not changed."""
    rng = np.random.default_rng(5)
    n = 200
    x = rng.uniform(0.0, 10.0, n).round(2)
    x[:6] = [12.5, 30.0, 99.0, -3.0, -1.0, 55.0]
    k = rng.integers(0, 9, n)
    k[6:9] = [20, 40, -5]
    frame = pd.DataFrame({"x": x, "k": k, "y": rng.choice(["a", "b"], n)})
    before = frame.copy(deep=True)
    edges = [0.0, 2.5, 5.0, 7.5, 9.995, 10.0]  # the last bin holds the end point 10 alone
    model = FileModel(grid={"x": {"step": 0.01, "digits": 2}, "k": {"step": 1, "bounds": [0, 8]}},
                      bins={"x": edges}, truncate={"x": (0, 10), "k": (0, 8)})  # fmt: skip
    prepared = model.prepare(frame)
    pd.testing.assert_frame_equal(frame, before)
    cols = _by_name(prepared.plan)
    cx, ck = cols["x"].column, cols["k"].column
    np.testing.assert_array_equal(cx.values[:6], [10, 10, 10, 0, 0, 10])
    np.testing.assert_array_equal(cx.beyond, np.arange(n) < 6)
    np.testing.assert_array_equal(ck.values[6:9], [8, 8, 0])
    np.testing.assert_array_equal(ck.beyond, (np.arange(n) >= 6) & (np.arange(n) < 9))
    data = dict(zip([p.name for p in model.parts(prepared)], model.part_data(prepared), strict=True))
    value = data["x.value"]
    assert value.active[:6].all()
    np.testing.assert_array_equal(value.y[:6], [3, 3, 3, 0, 0, 3])  # not bin 4, [9.995, 10]
    assert not data["x.points"].active[:6].any() and data["x.points"].active[6:].all()
    assert not data["k.value"].active[6:9].any() and data["k.value"].active[9:].all()
    with pytest.raises(ValueError, match=r"'truncate' must be a pair"):
        Declarations.from_arguments(truncate={"x": 3})
    with pytest.raises(ValueError, match=r"finite with low <= high"):
        Declarations.from_arguments(truncate={"x": (5, 1)})
