"""A many-level column's parent chosen by the exponential mechanism: the score against its
formula by brute force, its sensitivity over random neighbours, the exact output distribution's
epsilon, the draws against it, which columns may be candidates, and the default synthesis that
nests a code in its recode at the stage's charge."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import pseudopost as pp
from pseudopost.mechanisms.structure import PARENT_EPSILON, estimate_structure, parent_candidates
from pseudopost.privacy.structure import (
    dp_parent,
    parent_probabilities,
    parent_sensitivity,
    parent_utility,
)


def _brute(y, g, K, G):
    """sum_{g,k} n_gk log(n_gk / n_g) - (K - 1)(G - 1), record by record."""
    total = 0.0
    for i in range(y.size):
        n_gk = np.sum((g == g[i]) & (y == y[i]))
        n_g = np.sum(g == g[i])
        total += math.log(n_gk / n_g)
    return total - (K - 1) * (G - 1)


def test_the_score_is_the_penalised_conditional_log_likelihood():
    rng = np.random.default_rng(0)
    y, g = rng.integers(0, 6, 80), rng.integers(0, 3, 80)
    u = parent_utility(y, [g, y % 2], 6, [3, 2])
    np.testing.assert_allclose(u, [_brute(y, np.zeros(80, int), 6, 1), _brute(y, g, 6, 3),
                                   _brute(y, y % 2, 6, 2)])  # fmt: skip
    assert u[2] > u[1]  # a function of the child explains it: its parity halves the choices


def test_the_score_moves_less_than_its_sensitivity_on_random_neighbours():
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(300):
        n = int(rng.integers(2, 60))
        y, g = rng.integers(0, 4, n), rng.integers(0, 3, n)
        i = int(rng.integers(0, n))
        u = parent_utility(y, [g], 4, [3])
        v = parent_utility(np.delete(y, i), [np.delete(g, i)], 4, [3])
        step = np.abs(u - v).max()
        assert step < math.log(n + 1) + 1
        worst = max(worst, step)
    assert worst > 1.0 and parent_sensitivity() > math.log(10**9)


def test_neighbours_output_distributions_are_within_exp_epsilon():
    rng = np.random.default_rng(2)
    eps = 0.7
    ratios = []
    for _ in range(100):
        n = int(rng.integers(5, 40))
        y = rng.integers(0, 5, n)
        cands = [rng.integers(0, 2, n), y // 2]
        p = parent_probabilities(parent_utility(y, cands, 5, [2, 3]), eps)
        i = int(rng.integers(0, n))
        q = parent_probabilities(
            parent_utility(np.delete(y, i), [np.delete(c, i) for c in cands], 5, [2, 3]), eps
        )
        ratios.append(np.abs(np.log(p / q)).max())
        assert np.isclose(p.sum(), 1.0)
    assert max(ratios) <= eps + 1e-12


def test_draws_follow_the_exact_distribution():
    u = np.array([0.0, 30.0, 45.0])
    p = parent_probabilities(u, 2.0)
    rng = np.random.default_rng(3)
    picks = np.bincount([dp_parent(u, 2.0, rng) for _ in range(6000)], minlength=3) / 6000
    np.testing.assert_allclose(picks, p, atol=0.025)
    with pytest.raises(ValueError, match="epsilon"):
        dp_parent(u, 0.0, rng)


def _coded(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 6, n)
    code = group * 10 + rng.integers(0, 10, n)  # 60 codes, 10 in each group
    sex = np.where(rng.random(n) < 0.3 + 0.1 * group, "f", "m")
    age = rng.integers(18, 70, n) + 2 * group
    return pd.DataFrame({
        "age": age,
        "code": pd.Categorical([f"c{k:02d}" for k in code],
                               categories=[f"c{k:02d}" for k in range(60)]),
        "group": pd.Categorical([f"g{k}" for k in group]),
        "sex": pd.Categorical(sex),
    })  # fmt: skip


def test_candidates_respect_the_visit_order_and_the_declarations():
    frame = _coded(200)
    cols = list(frame.columns)
    assert parent_candidates(frame, cols) == {"code": ("age", "group", "sex")}
    # a rule reading code fixes sex: code may move after group (before sex), not after sex
    assert parent_candidates(frame, cols, rules=["sex is missing when code is missing"]) == {
        "code": ("age", "group")
    }
    assert parent_candidates(frame, cols, order_declared=True) == {"code": ("age",)}
    assert parent_candidates(frame, cols, interactions=[("code", "sex")]) == {"code": ("age",)}
    assert parent_candidates(frame, cols, declared=["code"]) == {}
    assert parent_candidates(frame, cols, hierarchy={"code": "sex"}) == {}
    assert parent_candidates(frame, cols, predictor_matrix={"code": ["age"]}) == {}


def test_the_recode_is_chosen_and_charged():
    frame = _coded()
    parents = parent_candidates(frame, list(frame.columns))
    st = estimate_structure(frame, [], parents=parents, rng=np.random.default_rng(0))
    assert st.parents["code"].parent == "group"
    assert st.epsilon == pytest.approx(PARENT_EPSILON)
    assert st.declarations()["hierarchy"] == {"code": "group"}
    assert st.to_dict()["parents"]["code"]["parent"] == "group"


def test_default_synthesis_nests_a_many_level_code_in_its_recode():
    frame = _coded()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pp.synthesize(frame, seed=2, draws=60, tune=60, chains=1)
    syn = out.synthetic
    # every code lies in its group (10 codes a group); the prior leaks A / (n_g + A) per group
    same = np.mean([int(str(c)[1:]) // 10 == int(str(g)[1:])
                    for c, g in zip(syn.code, syn.group, strict=True)])  # fmt: skip
    assert same > 0.99
    reason = out.choices.set_index("column").loc["code", "reason"]
    assert "nested in 'group' (the structure stage: DP" in reason
    assert out.structure.parents["code"].parent == "group"
    assert out.choices.set_index("column").loc["code", "parts"] == "code.nested (tilted_levels)"
