"""PRISM speed work: the stacked loss is mbi's L2 loss, and the junction-tree cap holds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pseudopost.mechanisms.prism import PRISM
from pseudopost.mechanisms.prism.measure import measure_marginal
from pseudopost.mechanisms.prism.workload import junction_tree_cells, triple_queries


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


def _toy(rng):
    from pseudopost.mechanisms.prism.pgm import load_mbi

    mbi = load_mbi()
    dom = mbi.Domain(["a", "b", "c", "d", "e"], [2, 3, 2, 4, 3])
    # a cycle a-b-c (the junction tree joins it into one clique), nested, repeated and
    # non-canonical attribute orders
    cliques = [("a", "b"), ("b",), ("b", "c"), ("c", "a"), ("d", "c"), ("d",), ("b", "a")]
    cliques += [("e", "d")]
    lms = [
        mbi.LinearMeasurement(rng.normal(100, 20, dom.size(c)), c, stddev=float(rng.uniform(1, 10)))
        for c in cliques
    ]
    return mbi, dom, lms


def _consistent_marginals(mbi, dom, cliques, rng):
    """Marginals of one random joint distribution (counts 400) on each clique."""
    import jax.numpy as jnp

    joint = rng.random(dom.shape)
    joint *= 400.0 / joint.sum()
    attrs = list(dom.attributes)

    def marg(c):
        keep = tuple(attrs.index(a) for a in c)
        t = joint.sum(axis=tuple(i for i in range(len(attrs)) if i not in keep))
        # t has axes in domain order; put them in the clique's order
        order = sorted(keep)
        return np.transpose(t, [order.index(attrs.index(a)) for a in c])

    return mbi.CliqueVector(
        dom, cliques, {c: mbi.Factor(dom.project(c), jnp.asarray(marg(c))) for c in cliques}
    )


def test_stacked_loss_is_mbi_l2_loss(rng):
    """Same value on consistent marginals, same Lipschitz, gradient = lift of mbi's gradient."""
    import jax

    from pseudopost.mechanisms.prism.pgm import model_cliques, stacked_loss

    mbi, dom, lms = _toy(rng)
    ref = mbi.marginal_loss.from_linear_measurements(lms, dom)
    st = stacked_loss(lms, dom)
    assert st.cliques == model_cliques(ref.cliques, dom)
    assert ("a", "b", "c") in st.cliques and ("a", "b", "c") not in ref.cliques
    assert st.lipschitz == ref.lipschitz
    mu_ref = _consistent_marginals(mbi, dom, ref.cliques, rng.spawn(1)[0])
    mu_st = _consistent_marginals(mbi, dom, st.cliques, rng.spawn(1)[0])
    # same joint (same seed stream): both are projections of one distribution
    assert float(st(mu_st)) == pytest.approx(float(ref(mu_st.contract(ref.cliques))), rel=1e-12)
    g_st = jax.grad(st)(mu_st)
    g_ref = jax.grad(ref)(mu_st.contract(ref.cliques))
    # <grad_D, nu_D> summed over D equals <grad_C, P nu> summed over C for any consistent nu
    nu = _consistent_marginals(mbi, dom, st.cliques, np.random.default_rng(7))
    lhs = sum(float(g_st[c].dot(nu[c])) for c in st.cliques)
    rhs = sum(float(g_ref[c].dot(nu.project(c))) for c in ref.cliques)
    assert lhs == pytest.approx(rhs, rel=1e-10)
    del mu_ref


def _joint(model, dom):
    """The normalised joint table of a fitted model, from its potentials (axes: domain order)."""
    attrs = list(dom.attributes)
    logp = np.zeros(dom.shape)
    for c in model.potentials.cliques:
        f = model.potentials[c]
        t = np.asarray(f.values)
        names = list(f.domain.attributes)
        t = np.transpose(t, sorted(range(len(names)), key=lambda i: attrs.index(names[i])))
        keep = sorted(attrs.index(a) for a in names)
        logp = logp + t.reshape([dom.shape[i] if i in keep else 1 for i in range(len(attrs))])
    p = np.exp(logp - logp.max())
    return p / p.sum()


def test_stacked_loss_gives_mbi_mirror_descent_iterates(rng):
    """mbi's own MirrorDescent on its own loss and ours on the stacked loss: same model."""
    from pseudopost.mechanisms.prism.pgm import _estimator, stacked_loss

    mbi, dom, lms = _toy(rng)
    m1 = mbi.estimation.MirrorDescent().estimate(dom, lms, known_total=400.0, iters=150)
    m2 = _estimator()().estimate(dom, stacked_loss(lms, dom), known_total=400.0, iters=150)
    assert set(m2.potentials.cliques) != set(m1.potentials.cliques)  # re-parameterised
    np.testing.assert_allclose(_joint(m2, dom), _joint(m1, dom), rtol=1e-9, atol=1e-12)
    # and the check can fail: a shorter run is a different model
    m3 = _estimator()().estimate(dom, stacked_loss(lms, dom), known_total=400.0, iters=50)
    assert np.abs(_joint(m3, dom) - _joint(m1, dom)).max() > 1e-4


def test_stacked_loss_detects_a_wrong_measurement(rng):
    """The equality above can fail: perturbing one measured value changes the loss."""
    from pseudopost.mechanisms.prism.pgm import stacked_loss

    mbi, dom, lms = _toy(rng)
    st = stacked_loss(lms, dom)
    bad = list(lms)
    y = np.array(bad[3].noisy_measurement, dtype=float)
    y[1] += 5.0
    bad[3] = mbi.LinearMeasurement(y, bad[3].clique, stddev=bad[3].stddev)
    mu = _consistent_marginals(mbi, dom, st.cliques, rng)
    assert float(stacked_loss(bad, dom)(mu)) != pytest.approx(float(st(mu)), rel=1e-9)


def test_triple_queries_respect_the_junction_tree_cap():
    """Hand-made case: the best pair would join two big columns into a big clique."""
    sizes = {"y": 2, "a": 10, "b": 10, "c": 3, "d": 3}
    base = [("a", "y"), ("b", "y"), ("c", "y"), ("d", "y")]
    cmi = {("a", "b"): 0.9, ("c", "d"): 0.5, ("a", "c"): 0.4, ("b", "d"): 0.3}
    free = triple_queries(cmi, "y", sizes, m3=4, base_cliques=base)
    assert [q.clique for q in free][:2] == [("a", "b", "y"), ("c", "d", "y")]
    start = junction_tree_cells(base, sizes)
    cap = 150.0  # (a, b, y) alone has 200 cells
    capped = triple_queries(cmi, "y", sizes, m3=4, base_cliques=base, max_model_cells=cap)
    chosen = [q.clique for q in capped]
    assert ("a", "b", "y") not in chosen and ("c", "d", "y") in chosen
    assert start <= cap
    assert junction_tree_cells([*base, *chosen], sizes) <= cap
    # every skipped pair really would have broken the cap
    for pair in cmi:
        trial = (*pair, "y")
        if trial not in chosen:
            assert junction_tree_cells([*base, *chosen, trial], sizes) > cap


def _frame(rng, n=3000):
    x = rng.integers(0, 4, size=(n, 5))
    y = ((x[:, 0] + x[:, 1] + rng.integers(0, 3, n)) > 4).astype(int)
    return pd.DataFrame({**{f"x{i}": x[:, i] for i in range(5)}, "y": y})


def test_fitted_pgm_model_stays_within_max_model_cells(rng):
    from pseudopost.mechanisms.prism.pgm import model_cliques

    frame = _frame(rng)
    kw = {"target": "y", "regime": "predictive", "k": 4, "joint_cells": 0, "iters": 50, "seed": 3}

    def cells(fit):
        rel = fit.release_
        return junction_tree_cells([q.clique for q in rel.workload.queries], rel.encoding.sizes)

    def n3(fit):
        return sum(q.kind == "3way" for q in fit.release_.workload.queries)

    base = PRISM(1.0, m3=0, **kw).fit(frame)
    loose = PRISM(1.0, max_model_cells=1e9, **kw).fit(frame)
    assert n3(loose) == 6 and cells(loose) > cells(base)
    cap = (cells(base) + cells(loose)) / 2
    capped = PRISM(1.0, max_model_cells=cap, **kw).fit(frame)
    assert cells(capped) <= cap and 0 < n3(capped) < n3(loose)
    # the fitted model is parameterised on that junction tree
    model = capped.release_.model.model
    assert sum(model.domain.size(c) for c in model_cliques(model.cliques, model.domain)) <= cap
    # the cap is post-processing: selection and the released scores do not depend on it
    assert capped.release_.features == loose.release_.features
    assert capped.release_.released_scores == loose.release_.released_scores
    # and the whole budget is still spent (Theorem 6.3 re-allocates over the admitted set)
    for fit in (base, loose, capped):
        assert fit.release_.ledger.epsilon == pytest.approx(1.0, rel=1e-9)


def test_stacked_fit_samples_reproducibly(rng):
    from pseudopost.mechanisms.prism.pgm import fit_pgm

    n = 2000
    codes = {"x": rng.integers(0, 3, n), "y": rng.integers(0, 2, n), "z": rng.integers(0, 4, n)}
    sizes = {"x": 3, "y": 2, "z": 4}
    ms = [
        measure_marginal(codes, c, sizes, 0.01, epsilon=1, delta=1e-6, pool="t", seed=i)
        for i, c in enumerate([("x", "y"), ("y", "z"), ("x",)])
    ]
    model = fit_pgm(ms, sizes, n, iters=200, tol=None)
    a, b = model.sample(500, seed=5), model.sample(500, seed=5)
    for c in sizes:
        np.testing.assert_array_equal(a[c], b[c])
    # the fitted (x, y) marginal is close to the measured one (sigma = 0.01 is small)
    np.testing.assert_allclose(model.marginal(("x", "y")).ravel(), ms[0].noisy, atol=0.03)


def test_stacked_loss_falls_back_to_mbi_without_measurements():
    from pseudopost.mechanisms.prism.pgm import load_mbi, stacked_loss

    mbi = load_mbi()
    dom = mbi.Domain(["x", "y"], [3, 2])
    loss = stacked_loss([], dom)
    assert tuple(loss.cliques) == () and loss.loss_fn is mbi.marginal_loss._l2_loss
