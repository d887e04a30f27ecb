"""The tilted-levels part (a nested column's shares tilted by coded inputs, naive Bayes): its
statistics and per-record log-likelihood against a record-by-record enumeration, its exact
draws against the closed-form Dirichlet posteriors, and its synthesis draws against the exact
conditional; the tilt inputs' codes by hand; and a whole-file synthesis in which a code's
relation to an earlier column inside its group survives only with the tilt."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pseudopost as pp
from pseudopost.models.file.encoding import encode
from pseudopost.models.file.nesting import Nesting, TiltInput
from pseudopost.models.parts import PartData
from pseudopost.models.parts.tilted_levels import TiltedLevelsPart


def _nesting():
    """Groups A, B; child x, y, z (A holds x, y; B holds z); input s (2 levels) tilting it."""
    parent = encode(pd.Series(["A", "A", "A", "A", "B", "B"]), "g", 0, categorical=True)
    child = encode(pd.Series(["x", "x", "y", "y", "z", "z"]), "c", 1, categorical=True)
    sex = encode(pd.Series(["m", "m", "f", "m", "f", "f"]), "s", 2, categorical=True)
    tilt = TiltInput.of(sex)
    return Nesting.build(parent, child, None, np.ones(6, bool), (tilt,))


def _data(nest):
    return PartData(nest.real, nest.tilt_real, np.ones(nest.real.size, bool))


def test_statistics_and_record_loglik_match_an_enumeration():
    nest = _nesting()
    part = nest.part("c", "c.nested")
    assert isinstance(part, TiltedLevelsPart) and part.n_codes == (2,)
    w = np.array([1.0, 0.5, 0.25, 1.0, 0.75, 2.0])
    st = part.statistics(_data(nest), w).arrays
    # levels: A:x, A:y, A:rest(z), B:z, B:rest(x, y); sex codes f=0, m=1
    np.testing.assert_allclose(st["counts"], [1.5, 1.25, 0, 2.75, 0])
    np.testing.assert_allclose(st["tilt_0"], [[0, 1.5], [0.25, 1.0], [2.75, 0]])
    rng = np.random.default_rng(1)
    draws = part.exact_draws(part.statistics(_data(nest), w), 5, rng)
    ll = part.loglik(draws, _data(nest))
    kid, x = nest.level_child[nest.real.astype(int)], nest.tilt_real[:, 0].astype(int)
    for b in range(5):
        for i in range(6):
            want = draws["log_p"][b, int(nest.real[i])] + draws["log_phi_0"][b, kid[i], x[i]]
            assert ll[b, i] == pytest.approx(want)


def test_exact_draws_are_the_closed_form_dirichlets():
    nest = _nesting()
    part = nest.part("c", "c.nested")
    w = np.array([1.0, 0.5, 0.25, 1.0, 0.75, 2.0])
    draws = part.exact_draws(part.statistics(_data(nest), w), 40_000, np.random.default_rng(3))
    phi = np.exp(draws["log_phi_0"]).mean(axis=0)
    d = np.array([[0, 1.5], [0.25, 1.0], [2.75, 0]]) + 1.0  # b = 1 per cell
    np.testing.assert_allclose(phi, d / d.sum(axis=1, keepdims=True), atol=5e-3)
    np.testing.assert_allclose(np.exp(draws["log_phi_0"]).sum(axis=2), 1.0)


def test_synthesis_draws_follow_the_exact_conditional():
    nest = _nesting()
    part = nest.part("c", "c.nested")
    log_p = np.log([0.6, 0.3, 0.1, 0.8, 0.2])
    log_phi = np.log([[0.2, 0.8], [0.7, 0.3], [0.5, 0.5]])
    params = {"log_p": log_p, "log_phi_0": log_phi}
    n = 60_000
    rng = np.random.default_rng(2)
    u = rng.uniform(0.001, 0.999, size=(n, 4))
    for g, s in ((0, "f"), (0, "m"), (1, "m")):
        frame = pd.DataFrame({"s": pd.Series([s] * n, dtype=object)})
        _, values = nest.draw(part, params, np.full(n, g), u, frame)
        # exact: theta_{k|g} (a rest's share split over its levels) times phi_{k, s}
        theta = np.exp(nest.group_log_shares(log_p))[g]
        want = theta * np.exp(log_phi[:, 0 if s == "f" else 1])
        want /= want.sum()
        got = [np.mean(values == v) for v in ("x", "y", "z")]
        np.testing.assert_allclose(got, want, atol=0.01)
    np.testing.assert_allclose(
        np.exp(nest.group_log_shares(log_p)), [[0.6, 0.3, 0.1], [0.1, 0.1, 0.8]]
    )


def test_tilt_input_codes_of_a_number_are_its_statuses_then_knot_bins():
    col = encode(pd.Series([1.0, np.nan, 5.0, 10.0, -8.0, 20.0]), "v", 0, codes=(-8.0,),
                 categorical=False)  # fmt: skip
    t = TiltInput.of(col, (4.0, 12.0))
    assert t.n_codes == 2 + 3  # missing, -8, then (<4, 4-12, >=12)
    codes = t.codes(col.status, col.values)
    order = [s for s in col.statuses if s != 0]
    missing, code = order.index(1), 1 - order.index(1)
    np.testing.assert_array_equal(codes, [2, missing, 3, 3, code, 4])
    assert TiltInput.of(col) is None  # a number without knots has no public coding
    many = encode(pd.Series([f"l{i}" for i in range(30)]), "m", 0, categorical=True)
    assert TiltInput.of(many) is None


def _file(n=2000, seed=0):
    """Inside each group, the code depends on sex: women hold the even codes, men the odd."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["f", "m"], n)
    grp = rng.choice(["A", "B"], n)
    j = 2 * rng.integers(0, 3, n) + (sex == "m")
    code = np.char.add(grp.astype(str), j.astype(str))
    return pd.DataFrame({"sex": pd.Categorical(sex), "grp": pd.Categorical(grp),
                         "code": pd.Categorical(code)})  # fmt: skip


def test_the_tilt_keeps_a_codes_relation_to_an_earlier_column_inside_its_group():
    frame = _file()
    kw = dict(hierarchy={"code": "grp"}, draws=50, tune=50, chains=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pp.synthesize(frame, seed=3, **kw)
    syn = out.synthetic
    code = syn.code.astype(str)
    parity = code.str[1].astype(int) % 2
    kept = np.mean(parity == (syn.sex == "m").astype(int))
    in_group = np.mean(code.str[0] == syn.grp.astype(str))
    assert kept > 0.97 and in_group > 0.97  # without the tilt: about 0.5
    reason = out.choices.set_index("column").loc["code", "reason"]
    assert "tilted by ['sex']" in reason
