"""The compiled layout transforms against the NumPy reference (``Param.backward``,
``Param.log_prior_grad``, ``Param.chain``) for every transform and prior they cover."""

from __future__ import annotations

import numpy as np
import pytest

from pseudopost.models.parts.layout import Layout, Param


def _numpy(layout: Layout, x: np.ndarray, grads: dict) -> tuple[dict, float, np.ndarray]:
    values = {
        p.name: p.backward(x[sl]) if p.transform != "none" else x[sl].reshape(p.shape)
        for p, sl in zip(layout.params, layout._slices, strict=True)
    }
    lp, g = layout._log_prior_jacobian(x, values, grads)
    return values, lp, g


LAYOUTS = {
    "ordered_mid and coefficients": (
        Param("cutpoints", (7,), "ordered_mid", ("normal", tuple(np.linspace(-2, 2, 7)), 1.5)),
        Param("beta", (3,)),
        Param("gamma", (2, 3), prior=("normal", 0.5, 0.3)),
    ),
    "ordered, log with half-normal and gamma priors": (
        Param("c", (4,), "ordered", ("normal", 0.0, 2.0)),
        Param("sigma", (), "log", ("halfnormal", 2.0)),
        Param("phi", (), "log", ("gamma", 2.0, 0.1)),
    ),
    "short cutpoints (anchor at 0) and an empty coefficient vector": (
        Param("one", (1,), "ordered_mid", ("normal", 0.0, 1.0)),
        Param("two", (2,), "ordered_mid", ("normal", (0.0, 1.0), 1.0)),
        Param("three", (1,), "ordered", ("normal", 0.0, 1.0)),
        Param("beta", (0,)),
        Param("none", (0,), "ordered", ("normal", 0.0, 1.0)),  # empty: writes nothing
        Param("sigma", (), "log", ("halfnormal", 1.0)),
    ),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_compiled_transforms_equal_the_numpy_reference(name):
    layout = Layout(LAYOUTS[name])
    assert layout._compiled is not None
    rng = np.random.default_rng(3)
    for _ in range(5):
        x = rng.normal(scale=1.5, size=layout.size)
        values = layout.unpack(x)
        grads = {p.name: rng.normal(size=p.shape) for p in layout.params[::2]}  # some missing
        ref, lp_ref, g_ref = _numpy(layout, x, grads)
        for p in layout.params:
            assert values[p.name].shape == p.shape
            np.testing.assert_allclose(values[p.name], ref[p.name], rtol=1e-13, atol=1e-13)
        lp, g = layout.log_prior_jacobian(x, values, grads)
        np.testing.assert_allclose(lp, lp_ref, rtol=1e-12)
        np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12)


def test_compiled_gradient_equals_differences():
    """Not only equal to the reference: the gradient of log prior + log-Jacobian is the
    derivative of its value (central differences)."""
    layout = Layout(LAYOUTS["ordered, log with half-normal and gamma priors"]
                    + LAYOUTS["ordered_mid and coefficients"][:1])  # fmt: skip

    def f(x):
        return layout.log_prior_jacobian(x, layout.unpack(x), {})[0]

    x = np.random.default_rng(5).normal(size=layout.size)
    h = 1e-6
    fd = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)]
    np.testing.assert_allclose(layout.log_prior_jacobian(x, layout.unpack(x), {})[1], fd,
                               rtol=1e-6, atol=1e-6)  # fmt: skip


def test_a_simplex_or_dirichlet_layout_keeps_the_numpy_path():
    simplex = Layout((Param("p", (4,), "simplex", ("dirichlet", 1.0)),))
    free = Layout((Param("log_p", (3,), "none", ("dirichlet", 1.0)),))
    assert simplex._compiled is None and free._compiled is None
    x = np.array([0.2, -0.1, 0.4])
    values = simplex.unpack(x)
    assert values["p"].shape == (4,) and np.isclose(values["p"].sum(), 1.0)
    lp, g = simplex.log_prior_jacobian(x, values, {})
    assert np.isfinite(lp) and g.shape == (3,)


def test_a_batch_of_vectors_unpacks_as_one_at_a_time():
    layout = Layout(LAYOUTS["ordered_mid and coefficients"])
    x = np.random.default_rng(1).normal(size=(4, layout.size))
    batch = layout.unpack(x)
    for i in range(4):
        one = layout.unpack(x[i])
        for k in one:
            np.testing.assert_allclose(batch[k][i], one[k], rtol=1e-13, atol=1e-13)
