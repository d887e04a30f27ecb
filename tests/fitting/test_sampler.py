"""The one Sampler protocol: every adapter takes each fit's data explicitly and keeps none."""

import arviz as az
import numpy as np
import pymc as pm
import pytest

from pseudopost.fitting.sampler import (
    NutpieJaxSampler,
    NutpieSampler,
    PyMCSampler,
    Sampler,
    make_sampler,
    model_data,
)
from pseudopost.models.weighting import weighted_model

FIT = {"draws": 300, "tune": 300, "chains": 2, "seed": 3}


def _conjugate(n: int = 30):
    """y_i ~ N(mu, 1), mu ~ N(0, 10^2), weights alpha in pm.Data: closed-form pseudo posterior."""
    rng = np.random.default_rng(0)
    with pm.Model() as m:
        y = pm.Data("y", rng.normal(1.0, 1.0, n))
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("obs", mu, 1.0, observed=y, shape=y.shape)
    return weighted_model(m, "obs")


def _exact(y: np.ndarray, alpha: np.ndarray) -> tuple[float, float]:
    prec = 1 / 100 + alpha.sum()
    return float((alpha * y).sum() / prec), float(prec**-0.5)


@pytest.mark.parametrize(
    ("kind", "cls"),
    [("nutpie", NutpieSampler), ("nutpie-jax", NutpieJaxSampler), ("pymc", PyMCSampler)],
)
def test_every_adapter_samples_the_data_it_is_given_and_keeps_none(kind, cls):
    model = _conjugate()
    before = model_data(model)
    sampler = make_sampler(model, kind)
    assert isinstance(sampler, cls) and isinstance(sampler, Sampler) and sampler.kind == kind
    rng = np.random.default_rng(1)
    for shift in (5.0, -3.0):  # two fits on other data through the same sampler
        data = {"y": rng.normal(shift, 1.0, 30), "alpha": rng.uniform(0.2, 1.0, 30)}
        post = sampler.sample(data, **FIT)["posterior"]
        assert set(post.data_vars) == {"mu"}
        mean, sd = _exact(data["y"], data["alpha"])
        mcse = float(az.mcse(post["mu"]).item())
        assert abs(float(post["mu"].mean()) - mean) < 4 * mcse
        assert abs(float(post["mu"].std()) - sd) < 0.2 * sd
    after = model_data(model)  # the sampler's model still holds what it was built with
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])
    assert sampler.compilations == (1 if kind == "nutpie" else 2)


def test_data_must_name_every_data_variable_and_nothing_else(monkeypatch):
    import pymc

    monkeypatch.setattr(pymc, "sample", lambda *a, **k: pytest.fail("sampled"))
    sampler = make_sampler(_conjugate(), "pymc")
    y = np.zeros(30)
    with pytest.raises(ValueError, match=r"missing \['alpha'\], unknown \[\]"):
        sampler.sample({"y": y}, **FIT)
    with pytest.raises(ValueError, match=r"missing \[\], unknown \['w'\]"):
        sampler.sample({"y": y, "alpha": np.ones(30), "w": y}, **FIT)
    with pytest.raises(TypeError, match="mapping"):
        sampler.sample(np.ones(30), **FIT)


def test_factory_refuses_an_unknown_kind():
    with pytest.raises(ValueError, match="'sampler' parameter must be one of"):
        make_sampler(_conjugate(), "stan")


def test_nutpie_that_cannot_compile_falls_back_to_pymc(monkeypatch):
    import nutpie

    from pseudopost.fitting.sampler import SamplingWarning

    def broken(*a, **k):
        raise RuntimeError("no numba today")

    monkeypatch.setattr(nutpie, "compile_pymc_model", broken)
    with pytest.warns(SamplingWarning, match="no numba today"):
        sampler = make_sampler(_conjugate(), "nutpie")
    assert isinstance(sampler, PyMCSampler)
