"""Synthesis backends: simplex projection, naive Bayes, and the seeded PGM sampler."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pseudopost.mechanisms.prism.measure import measure_marginal
from pseudopost.mechanisms.prism.naive_bayes import fit_naive_bayes, project_simplex
from pseudopost.mechanisms.prism.pgm import _forward_sample


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=20))
def test_project_simplex_is_the_euclidean_projection(v):
    p = project_simplex(np.array(v))
    assert p.sum() == pytest.approx(1.0) and p.min() >= 0
    # optimality: no simplex vertex is closer to v than p along the segment (KKT check)
    g = p - np.array(v)
    support = p > 1e-12
    assert np.all(g[~support] >= g[support].max() - 1e-9)
    np.testing.assert_allclose(project_simplex(p), p, atol=1e-12)


def test_naive_bayes_recovers_conditionals_with_tiny_noise(rng):
    n = 20000
    y = rng.integers(0, 2, n)
    x = np.where(rng.random(n) < 0.8, y, 1 - y)
    z = rng.integers(0, 3, n)
    codes, sizes = {"x": x, "z": z, "y": y}, {"x": 2, "z": 3, "y": 2}
    ms = [
        measure_marginal(codes, c, sizes, 1e-6, epsilon=1, delta=1e-6, pool="t", seed=i)
        for i, c in enumerate([("x", "y"), ("y",), ("z",)])
    ]
    model = fit_naive_bayes(ms, "y", ["x", "z", "y"])
    np.testing.assert_allclose(model.conditionals["x"], [[0.8, 0.2], [0.2, 0.8]], atol=0.02)
    s = model.sample(20000, seed=0)
    assert abs(np.mean(s["x"] == s["y"]) - 0.8) < 0.02
    assert set(np.unique(s["z"])) == {0, 1, 2}


def test_forward_sampler_matches_brute_force_joint():
    """Junction-tree sampling of exp(sum of potentials) equals the normalised product."""
    import networkx as nx

    rng = np.random.default_rng(5)
    sizes = {"a": 2, "b": 3, "c": 2, "d": 2}
    pots = {
        ("a", "b"): rng.normal(size=(2, 3)),
        ("b", "c"): rng.normal(size=(3, 2)),
        ("c", "d"): rng.normal(size=(2, 2)),
        ("a",): rng.normal(size=2),
    }
    jtree = nx.Graph()
    jtree.add_edge(("a", "b"), ("b", "c"))
    jtree.add_edge(("b", "c"), ("c", "d"))
    joint = np.zeros((2, 3, 2, 2))
    for a, b, c, d in itertools.product(range(2), range(3), range(2), range(2)):
        joint[a, b, c, d] = np.exp(
            pots[("a", "b")][a, b]
            + pots[("b", "c")][b, c]
            + pots[("c", "d")][c, d]
            + pots[("a",)][a]
        )
    joint /= joint.sum()
    n = 40000
    out = _forward_sample(jtree, pots, sizes, ("a", "b", "c", "d"), n, np.random.default_rng(1))
    flat = np.ravel_multi_index((out["a"], out["b"], out["c"], out["d"]), (2, 3, 2, 2))
    counts = np.bincount(flat, minlength=24)
    assert stats.chisquare(counts, n * joint.ravel()).pvalue > 1e-3
    again = _forward_sample(jtree, pots, sizes, ("a", "b", "c", "d"), n, np.random.default_rng(1))
    assert all(np.array_equal(out[k], again[k]) for k in out)


def test_forward_sampler_on_a_junction_forest():
    import networkx as nx

    sizes = {"a": 2, "b": 2, "c": 3}
    pots = {("a", "b"): np.log(np.array([[0.4, 0.1], [0.1, 0.4]])), ("c",): np.log([0.2, 0.3, 0.5])}
    forest = nx.Graph()
    forest.add_nodes_from([("a", "b"), ("c",)])
    out = _forward_sample(forest, pots, sizes, ("a", "b", "c"), 30000, np.random.default_rng(2))
    assert abs(np.mean(out["a"] == out["b"]) - 0.8) < 0.015
    np.testing.assert_allclose(np.bincount(out["c"]) / 30000, [0.2, 0.3, 0.5], atol=0.015)


def _toy_measurements(rng):
    from pseudopost.mechanisms.prism.pgm import load_mbi

    mbi = load_mbi()
    dom = mbi.Domain(["a", "b", "c", "d"], [2, 3, 2, 4])
    cliques = [("a", "b"), ("b",), ("a", "b", "c"), ("c", "d"), ("d",), ("b", "a")]
    lms = [
        mbi.LinearMeasurement(rng.normal(100, 20, dom.size(c)), c, stddev=float(rng.uniform(1, 10)))
        for c in cliques
    ]
    return mbi, dom, lms


def test_closed_form_start_is_mbi_oracle_at_zero_potentials(rng):
    from pseudopost.mechanisms.prism.pgm import _estimator, stacked_loss

    mbi, dom, lms = _toy_measurements(rng)
    fold = stacked_loss(lms, dom)
    state = _estimator()()._init(dom, fold, 400.0)
    ref = mbi.estimation.MirrorDescent()._init(dom, fold, 400.0)
    assert float(state.alpha) == pytest.approx(float(ref.alpha), rel=1e-12)
    for c in fold.cliques:
        np.testing.assert_allclose(state.mu[c].values, ref.mu[c].values, rtol=1e-12)
        assert np.all(np.asarray(state.potentials[c].values) == 0.0)


def test_fit_pgm_stops_on_tolerance_and_reports_iterations(rng):
    from pseudopost.mechanisms.prism.pgm import fit_pgm

    n = 3000
    codes = {"x": rng.integers(0, 3, n), "y": rng.integers(0, 2, n)}
    sizes = {"x": 3, "y": 2}
    ms = [
        measure_marginal(codes, c, sizes, 0.01, epsilon=1, delta=1e-6, pool="t", seed=i)
        for i, c in enumerate([("x", "y"), ("x",)])
    ]
    loose = fit_pgm(ms, sizes, n, iters=1000, tol=0.5)
    full = fit_pgm(ms, sizes, n, iters=1000, tol=None)
    assert full.iters == 1000 and 100 <= loose.iters < 1000
