"""The statistics model's log density written out in NumPy equals PyMC's, value and gradient."""

import numpy as np
import pandas as pd
import pytest

from pseudopost.fitting import sufficient as S
from pseudopost.fitting.statistics_density import StatisticsDensity
from pseudopost.models import LogNormalRegression, NormalRegression, PoissonRegression

MODELS = [
    NormalRegression("y"),
    NormalRegression("y", ["a", "b"], prior_scale=3.0),
    LogNormalRegression("x", ["a"]),
    PoissonRegression("c"),
    PoissonRegression("c", ["g", "a"], prior_scale=1.5),
]


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 200
    a, g = rng.normal(size=n), rng.integers(0, 3, n).astype(float)
    return pd.DataFrame(
        {
            "a": a,
            "b": rng.normal(size=n),
            "g": g,
            "y": 1.0 + 2.0 * a + rng.normal(size=n),
            "x": np.exp(0.5 + a + 0.3 * rng.normal(size=n)),
            "c": rng.poisson(np.exp(0.3 + 0.2 * g)),
        }
    )


@pytest.mark.parametrize("model", MODELS, ids=repr)
def test_log_density_and_gradient_equal_pymc(model, frame):
    rng = np.random.default_rng(1)
    prepared = model.prepare(frame)
    stats = S.total_statistics(model, prepared.arrays, rng.uniform(0.1, 1.0, prepared.n))
    ref = S.statistics_model(model, stats)
    logp = ref.compile_logp(mode="FAST_COMPILE")
    dlogp = ref.compile_dlogp(mode="FAST_COMPILE")
    names = [v.name for v in ref.value_vars]
    sizes = [int(np.prod(ref.initial_point()[k].shape)) for k in names]
    density = StatisticsDensity(model, S.PREFIX)
    data = {S.PREFIX + k: v for k, v in S._data_values(model, stats).items()}
    assert density.ndim == sum(sizes)
    assert density.names == [rv.name for rv in ref.free_RVs]
    for _ in range(20):
        x = rng.normal(scale=1.5, size=density.ndim)
        point = dict(zip(names, np.split(x, np.cumsum(sizes)[:-1]), strict=True))
        point = {k: v.reshape(ref.initial_point()[k].shape) for k, v in point.items()}
        value, grad = density.logp(x, **data)
        # PyMC's half-normal normalising constant is 6.4e-8 off the exact (mpmath) one
        assert value == pytest.approx(float(logp(point)), rel=1e-12, abs=1e-7)
        np.testing.assert_allclose(grad, dlogp(point), rtol=1e-10, atol=1e-8)
        expanded = density.expand(x)
        if "sigma" in expanded:
            assert expanded["sigma"] == pytest.approx(np.exp(point["sigma_log__"]))
        np.testing.assert_array_equal(expanded["intercept"], point["intercept"])


def test_gradient_matches_finite_differences_far_from_the_mode(frame):
    """A check independent of PyMC: central differences of the written-out density."""
    model = LogNormalRegression("x", ["a"])
    prepared = model.prepare(frame)
    stats = S.total_statistics(model, prepared.arrays, np.ones(prepared.n))
    density = StatisticsDensity(model)
    data = S._data_values(model, stats)
    x = np.array([3.0, -2.0, 1.2])
    _, grad = density.logp(x, **data)
    h = 1e-6
    fd = [
        (density.logp(x + h * e, **data)[0] - density.logp(x - h * e, **data)[0]) / (2 * h)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


def test_initial_point_is_pymcs_support_point_with_seeded_jitter():
    density = StatisticsDensity(NormalRegression("y", ["a"], prior_scale=4.0))
    a, b = density.initial_point(7), density.initial_point(7)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, density.initial_point(8))
    np.testing.assert_array_less(np.abs(a - [0.0, 0.0, np.log(4.0)]), 1.0)


def test_default_sampler_compiles_nothing(frame, monkeypatch):
    """The default fast path never calls nutpie's or PyTensor's compilers."""
    import nutpie
    import pytensor

    fail = lambda *a, **k: pytest.fail("compiled")  # noqa: E731
    monkeypatch.setattr(nutpie, "compile_pymc_model", fail)
    monkeypatch.setattr(pytensor, "function", fail)
    model = LogNormalRegression("x", ["a"])
    prepared = model.prepare(frame)
    stats = S.total_statistics(model, prepared.arrays, np.ones(200))
    sampler = S.sufficient_sampler(model, stats)
    tree = sampler.sample(S.statistics_data(model, stats), draws=50, tune=50, chains=1, seed=3)
    post = tree["posterior"]
    assert set(post.data_vars) == {"intercept", "beta", "sigma"}
    assert post["beta"].dims == ("chain", "draw", "predictor")
    assert list(post["predictor"].values) == ["a"]
    assert float(post["sigma"].min()) > 0
