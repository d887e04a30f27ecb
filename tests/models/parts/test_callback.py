"""The compiled callback of a part's whitened density: equal to the part's own log density and
gradient through the whitening, for every family it serves (with and without predictors, a
scaled cumulative part, zero-weight keys); refused for the others; and the NUTS draws nutpie
makes with it equal, draw for draw, those of the Python density."""

from __future__ import annotations

import numpy as np
import pytest

from pseudopost.models.parts import PartData, make_part
from pseudopost.models.parts.callback import (
    SLOTS,
    callback_arrays,
    has_callback,
    table,
    whitened_logp,
)

CASES = [
    ("categorical", ["a", "b", "c"], {"n_levels": 4}),
    ("categorical", [], {"n_levels": 3}),
    ("bernoulli", ["a", "b", "c"], {}),
    ("bernoulli", [], {}),
    ("cumulative", ["a", "b"], {"n_levels": 6}),
    ("cumulative", ["a", "b", "c"], {"n_levels": 5, "scaled": True}),
    ("cumulative", ["a", "b", "c"], {"n_levels": 5, "scaled": True,
                                     "scale_centre": (0.5, 0.25, -0.5)}),
    ("cumulative", [], {"n_levels": 4}),
    ("binned", ["a"], {"n_levels": 4, "log_widths": (0.0, 1.0, 0.5, 2.0)}),
]


def _fitted(family, preds, kw, seed=5, n=240):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 2, n), rng.normal(size=n)])
    X = X[:, : len(preds)].astype(float)
    y = rng.integers(0, kw.get("n_levels", 2), n).astype(float)
    active = rng.random(n) < 0.85
    part = make_part(family, "y", preds, **kw)
    w = rng.uniform(0, 2, n) * (rng.random(n) < 0.9)  # some records weigh nothing
    return part, part.statistics(PartData(np.where(active, y, np.nan), X, active), w), rng


@pytest.mark.parametrize(("family", "preds", "kw"), CASES)
def test_callback_equals_the_part_density_through_the_whitening(family, preds, kw):
    part, stats, rng = _fitted(family, preds, kw)
    assert has_callback(part)
    density = part.log_density(stats)
    d = part.layout.size
    for _ in range(3):
        x0 = rng.normal(scale=0.5, size=d)
        L = np.tril(rng.normal(scale=0.1, size=(d, d))) + np.diag(rng.uniform(0.2, 1.0, d))
        arrays = callback_arrays(part, density.arrays, x0, L)
        assert list(arrays) == list(SLOTS)
        z = rng.normal(size=d)
        lp, grad = whitened_logp(z, table(arrays))
        lp0, g0 = density.logp_grad(x0 + L @ z)
        assert lp == pytest.approx(lp0, rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(grad, L.T @ g0, rtol=1e-10, atol=1e-9)


def test_callback_reads_the_statistics_it_is_given():
    """Swapped statistics (other weights) change the callback's value as they change the
    density's: the table points to the new arrays, not to copies of the first."""
    part, stats, rng = _fitted("categorical", ["a", "b"], {"n_levels": 3})
    other = part.statistics(
        PartData(np.zeros(50), np.ones((50, 2)), np.ones(50, bool)), np.full(50, 2.0)
    )
    d = part.layout.size
    z, x0, L = rng.normal(size=d), np.zeros(d), np.eye(d)
    values = []
    for s in (stats, other):
        density = part.log_density(s)
        lp, _ = whitened_logp(z, table(callback_arrays(part, density.arrays, x0, L)))
        assert lp == pytest.approx(density.logp_grad(z)[0], rel=1e-12)
        values.append(lp)
    assert values[0] != pytest.approx(values[1])


def test_other_families_have_no_callback():
    assert not has_callback(make_part("ordinal", "y", ["a"], n_levels=3))  # its own likelihood
    assert not has_callback(make_part("normal", "y", ["a"]))
    part = make_part("poisson", "y", ["a"])
    with pytest.raises(ValueError, match="no compiled callback"):
        callback_arrays(part, {}, np.zeros(part.layout.size), np.eye(part.layout.size))


@pytest.mark.parametrize(("family", "kw"), [("categorical", {"n_levels": 3}),
                                            ("cumulative", {"n_levels": 5})])  # fmt: skip
def test_nuts_draws_with_the_callback_equal_those_of_the_python_density(family, kw, monkeypatch):
    import pseudopost.fitting.parts as FP

    part, stats, _ = _fitted(family, ["a", "b"], kw, n=400)
    trees = []
    for compiled in (True, False):
        monkeypatch.setattr(FP, "has_callback", lambda p, c=compiled: c)
        sampler = FP.PartSampler(part, stats)
        assert type(sampler.compiled).__name__ == ("CallbackModel" if compiled else "PyFuncModel")
        trees.append(sampler.sample(stats, draws=40, tune=40, chains=2, seed=11))
    for name in part.layout.names:
        a, b = (t["posterior"][name].to_numpy() for t in trees)
        assert a.shape == (2, 40, *part.layout[name].shape)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
