"""The nutpie path of the sufficient statistics: the family part's log density on the statistics
model's data (``part_statistics``) equals PyMC's statistics model, value and gradient."""

import numpy as np
import pandas as pd
import pytest

from pseudopost.fitting import sufficient as S
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


def _density(model, stats):
    """The family part's density on the statistics model's data, as the nutpie path uses it."""
    part = S.family_part(model)
    return part, part.log_density(S.part_statistics(part, S.statistics_data(model, stats)))


def _check_equal_to_pymc(model, stats, rng, points=20):
    ref = S.statistics_model(model, stats)
    logp = ref.compile_logp(mode="FAST_COMPILE")
    dlogp = ref.compile_dlogp(mode="FAST_COMPILE")
    names = [v.name for v in ref.value_vars]
    start = ref.initial_point()
    sizes = [int(np.prod(start[k].shape)) for k in names]
    part, density = _density(model, stats)
    assert density.ndim == sum(sizes)
    assert part.layout.names == [rv.name for rv in ref.free_RVs]
    assert [p.value_name for p in part.layout.params] == names
    for _ in range(points):
        x = rng.normal(scale=1.5, size=density.ndim)
        point = dict(zip(names, np.split(x, np.cumsum(sizes)[:-1]), strict=True))
        point = {k: v.reshape(start[k].shape) for k, v in point.items()}
        value, grad = density.logp_grad(x)
        # PyMC's half-normal normalising constant is 6.4e-8 off the exact (mpmath) one
        assert value == pytest.approx(float(logp(point)), rel=1e-12, abs=1e-7)
        np.testing.assert_allclose(grad, dlogp(point), rtol=1e-10, atol=1e-8)
        expanded = density.expand(x)
        if "sigma" in expanded:
            assert expanded["sigma"] == pytest.approx(np.exp(point["sigma_log__"]))
        np.testing.assert_array_equal(expanded["intercept"], point["intercept"])
        if "beta" in expanded:
            np.testing.assert_array_equal(expanded["beta"], point["beta"])


@pytest.mark.parametrize("model", MODELS, ids=repr)
def test_log_density_and_gradient_equal_pymc(model, frame):
    rng = np.random.default_rng(1)
    prepared = model.prepare(frame)
    stats = S.total_statistics(model, prepared.arrays, rng.uniform(0.1, 1.0, prepared.n))
    _check_equal_to_pymc(model, stats, rng)


def test_poisson_with_no_weighted_counts_equals_pymc(frame):
    """S_wy = 0 (every weighted count zero): the part's extra row sits at 0 with Y = 0."""
    model = PoissonRegression("c", ["g", "a"])
    zero = frame.assign(c=0)
    prepared = model.prepare(zero)
    stats = S.total_statistics(model, prepared.arrays, np.ones(prepared.n))
    assert float(stats["ztwy"][0]) == 0.0
    _check_equal_to_pymc(model, stats, np.random.default_rng(2), points=5)


def test_part_statistics_keep_the_unique_rows_and_their_weights(frame):
    model = PoissonRegression("c", ["g"])
    prepared = model.prepare(frame)
    w = np.random.default_rng(3).uniform(0.0, 1.0, prepared.n)
    stats = S.total_statistics(model, prepared.arrays, w)
    part = S.family_part(model)
    arrays = S.part_statistics(part, S.statistics_data(model, stats)).arrays
    u = stats["rows"].shape[0]
    np.testing.assert_array_equal(arrays["rows"][:u], stats["rows"])
    np.testing.assert_array_equal(arrays["w"], np.append(stats["row_weights"], 0.0))
    # the extra row carries D'Wy: its Y times (1, row) is ztwy
    np.testing.assert_allclose(arrays["wy"] @ np.column_stack([np.ones(u + 1), arrays["rows"]]),
                               stats["ztwy"], rtol=1e-14)  # fmt: skip


def test_family_part_has_the_ready_models_priors_and_labels():
    for model, s0 in [
        (NormalRegression("y", ["a", "b"], prior_scale=3.0), 3.0),
        (LogNormalRegression("x", ["a"]), 10.0),
        (PoissonRegression("c", ["g"], prior_scale=1.5), 3.0),
    ]:
        part = S.family_part(model)
        assert part.family == model.family
        assert part.predictors == model.predictors
        assert part.coords() == model.coords()
        assert part.layout["intercept"].prior == ("normal", 0.0, s0)
        assert part.layout["beta"].prior == ("normal", 0.0, model.prior_scale)
        if "sigma" in part.layout.names:
            assert part.layout["sigma"].prior == ("halfnormal", model.prior_scale)


def test_gradient_matches_finite_differences_far_from_the_mode(frame):
    """A check independent of PyMC: central differences of the part's density."""
    model = LogNormalRegression("x", ["a"])
    prepared = model.prepare(frame)
    _, density = _density(model, S.total_statistics(model, prepared.arrays, np.ones(prepared.n)))
    x = np.array([3.0, -2.0, 1.2])
    _, grad = density.logp_grad(x)
    h = 1e-6
    fd = [
        (density.logp_grad(x + h * e)[0] - density.logp_grad(x - h * e)[0]) / (2 * h)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


def test_initial_point_is_pymcs_support_point_with_seeded_jitter():
    part = S.family_part(NormalRegression("y", ["a"], prior_scale=4.0))
    a, b = part.initial_point(7), part.initial_point(7)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, part.initial_point(8))
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


def test_poisson_sampler_takes_another_number_of_rows(frame):
    """The nutpie model swaps statistics whose unique rows differ from the ones it was built
    for (the part's extra row included)."""
    model = PoissonRegression("c", ["g"])
    prepared = model.prepare(frame)
    keep = prepared.arrays["g"] < 1.0
    few = {k: v[keep] for k, v in prepared.arrays.items()}
    small = S.total_statistics(model, few, np.ones(int(keep.sum())))
    sampler = S.sufficient_sampler(model, small)
    stats = S.total_statistics(model, prepared.arrays, np.ones(prepared.n))
    assert small["rows"].shape[0] == 1 < stats["rows"].shape[0]
    tree = sampler.sample(S.statistics_data(model, stats), draws=50, tune=50, chains=1, seed=3)
    post = tree["posterior"]
    assert set(post.data_vars) == {"intercept", "beta"}
    assert post["beta"].shape == (1, 50, 1)
