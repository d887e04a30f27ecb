"""A declared hierarchy: the nested levels against a hand enumeration, the conjugate posterior
against its closed form, rest draws uniform over the levels no record holds, the visit order
and the refusals, and a whole-file synthesis that keeps a code inside its group and a score
assigned from the code."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pseudopost as pp
from pseudopost.models.file import Declarations
from pseudopost.models.file.encoding import encode
from pseudopost.models.file.nesting import CONCENTRATION, Nesting
from pseudopost.models.file.plan import _visit_order, make_plan
from pseudopost.models.parts import PartData


def _nesting():
    parent = encode(pd.Series(["A", "A", "A", "B", "B"]), "g", 0, categorical=True)
    child = encode(pd.Series(["x", "x", "y", "z", "z"]), "c", 1, categorical=True)
    return Nesting.build(parent, child, None, np.ones(5, bool))


def test_levels_priors_and_records_match_a_hand_enumeration():
    nest = _nesting()
    # groups A, B; child levels x, y, z: A holds x and y (rest z), B holds z (rest x, y)
    a = CONCENTRATION / 3
    np.testing.assert_array_equal(nest.level_group, [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(nest.level_child, [0, 1, -1, 2, -1])
    np.testing.assert_allclose(nest.prior, [a, a, a, a, 2 * a])
    np.testing.assert_array_equal(nest.index, [[0, 1, 2], [4, 4, 3]])
    np.testing.assert_array_equal(nest.real, [0, 0, 1, 3, 3])


def test_exact_draws_are_each_groups_closed_form_dirichlet_posterior():
    nest = _nesting()
    part = nest.part("c", "c.nested")
    data = PartData(nest.real, np.zeros((5, 0)), np.ones(5, bool))
    w = np.array([1.0, 0.5, 1.0, 1.0, 0.25])
    draws = part.exact_draws(part.statistics(data, w), 40_000, np.random.default_rng(3))
    p = np.exp(draws["log_p"])
    a = CONCENTRATION / 3
    # group A: Dirichlet(a + 1.5, a + 1, a); group B: Dirichlet(a + 1.25, 2a)
    np.testing.assert_allclose(p.mean(axis=0)[:3], np.array([a + 1.5, a + 1, a]) / (3 * a + 2.5),
                               atol=4e-3)  # fmt: skip
    np.testing.assert_allclose(p.mean(axis=0)[3:], np.array([a + 1.25, 2 * a]) / (3 * a + 1.25),
                               atol=4e-3)  # fmt: skip
    np.testing.assert_allclose(p[:, :3].sum(axis=1), 1.0)


def test_a_groups_rest_is_drawn_uniformly_among_the_levels_no_record_holds():
    nest = _nesting()
    part = nest.part("c", "c.nested")
    log_p = np.log(np.array([0.5, 0.3, 0.2, 1e-12, 1.0 - 1e-12]))
    rng = np.random.default_rng(0)
    n = 20_000
    u = rng.uniform(0.001, 0.999, size=(n, 2))
    status, values = nest.draw(part, {"log_p": log_p}, np.ones(n, dtype=np.int64), u)
    assert set(values) == {"x", "y"}  # group B's rest: x and y, never z (held)
    assert abs(np.mean(values == "x") - 0.5) < 0.02
    status, values = nest.draw(part, {"log_p": log_p}, np.zeros(n, dtype=np.int64), u)
    shares = [np.mean(values == v) for v in ("x", "y", "z")]
    np.testing.assert_allclose(shares, [0.5, 0.3, 0.2], atol=0.015)
    assert (status == 0).all()


def _frame(n=1500, seed=0) -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(seed)
    grp = rng.choice(["A", "B", "C"], n, p=[0.5, 0.3, 0.2])
    code = np.array([f"{g}{rng.integers(0, 3 if g != 'C' else 12)}" for g in grp])
    score_of = {c: 20 + (sum(map(ord, c)) % 40) for c in np.unique(code)}
    score = np.array([score_of[c] for c in code], dtype=float)
    age = rng.integers(18, 80, n) + 5 * (grp == "A")
    frame = pd.DataFrame({"age": age, "code": pd.Categorical(code), "grp": pd.Categorical(grp),
                          "score": score})  # fmt: skip
    frame.loc[:30, ["code", "grp", "score"]] = np.nan
    return frame, score_of


def test_the_child_comes_last_unless_another_column_reads_it_and_has_one_nested_part():
    frame, _ = _frame(300)
    decl = Declarations.from_arguments(hierarchy={"code": "grp"})
    plan = make_plan(frame, decl)
    assert plan.order == ("age", "grp", "score", "code")  # tilted by age, score
    read = Declarations.from_arguments(
        hierarchy={"code": "grp"}, rules=["score is missing when code is missing"]
    )
    assert make_plan(frame, read).order == ("age", "grp", "code", "score")
    chain = Declarations.from_arguments(hierarchy={"code": "grp", "score": "code"})
    assert _visit_order(frame, chain) == ("age", "grp", "code", "score")
    pinned = Declarations.from_arguments(
        hierarchy={"code": "grp", "score": "code"}, interactions=[("score", "age")]
    )
    assert _visit_order(frame, pinned) == ("age", "grp", "code", "score")
    solo = Declarations.from_arguments(hierarchy={"code": "grp"}, interactions=[("code", "age")])
    assert _visit_order(frame, solo) == ("age", "grp", "code", "score")
    code = next(p for p in plan.plans if p.name == "code")
    assert [pp.role for pp in code.parts] == ["nested"]
    assert code.design.inputs == ()
    assert "nested in 'grp'" in plan.choices().set_index("column").loc["code", "reason"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hierarchy": {"code": "code"}}, "nests column 'code' in itself"),
        ({"hierarchy": {"code": "grp", "grp": "code"}}, "cycle: code -> grp -> code"),
        ({"hierarchy": {"code": "age"}}, "'age', which is numeric; a parent is a categorical"),
        ({"hierarchy": {"code": "grp"}, "drop": ["grp"]}, "'grp', which is dropped"),
        ({"hierarchy": {"code": "grp"}, "order": ["age", "code", "grp", "score"]},
         "'grp', which comes after it in 'order'"),
        ({"hierarchy": {"code": "grp"}, "models": {"code": "categorical"}},
         r"children in the 'hierarchy'.*also named in 'models'"),
        ({"hierarchy": {"age": "grp"}}, "'age' is declared in a 'hierarchy' but is numeric"),
        ({"hierarchy": {"code": 3}}, "maps a column to its parent column"),
        ({"hierarchy": {"code": "nope"}}, r"'hierarchy' names column\(s\) \['nope'\]"),
    ],
)  # fmt: skip
def test_a_bad_hierarchy_is_refused_naming_the_columns(kwargs, message):
    frame, _ = _frame(200)
    with pytest.raises((TypeError, ValueError), match=message):
        make_plan(frame, Declarations.from_arguments(**kwargs))


def test_synthesis_keeps_the_code_in_its_group_and_the_score_assigned_from_the_code():
    frame, score_of = _frame()
    before = frame.copy()
    kw = dict(hierarchy={"code": "grp", "score": "code"}, bounds={"score": (20, 60)},
              rules=["code is missing when grp is missing",
                     "score is missing when code is missing"],
              draws=60, tune=60, chains=1)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pp.synthesize(frame, seed=4, **kw)
        again = pp.synthesize(frame, seed=4, **kw)
    pd.testing.assert_frame_equal(frame, before)
    pd.testing.assert_frame_equal(out.synthetic, again.synthetic)
    syn = out.synthetic.dropna(subset=["code"])
    assert len(syn) > 1000
    in_group = np.mean([str(c)[0] == str(g) for c, g in zip(syn.code, syn.grp, strict=True)])
    assigned = np.mean([score_of[str(c)] == s for c, s in zip(syn.code, syn.score, strict=True)])
    # the prior's share A / (n_g + A) of each group leaks to levels it does not hold
    assert in_group > 0.99 and assigned > 0.95
    assert out.synthetic.loc[out.synthetic.code.isna(), "score"].isna().all()
    x = out.synthetic.score.dropna()
    assert x.between(20, 60).all() and np.isfinite(out.epsilon)
    parts = out.choices.set_index("column").parts
    # code is tilted by age (its DP knots' bins), score by age and grp
    assert parts["code"] == "code.nested (tilted_levels)" and "score.nested" in parts["score"]
