"""Per-record log-likelihood of the parts: equal to SciPy record by record and to PyMC's
``compute_log_likelihood`` on the reference model; 0 where a part is not active."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

from ..._reference.part_models import pymc_model


def _draws(part, rng, b=5):
    """b draws (constrained, leading draw axis) around the priors' support point."""
    x = part.initial_point(0) + rng.normal(scale=0.5, size=(b, part.layout.size))
    return part.layout.unpack(x)


def test_loglik_equals_scipy_per_record(case, reference):
    part, data = case.part, case.data
    draws = _draws(part, np.random.default_rng(7))
    got = part.loglik(draws, data)
    assert got.shape == (5, data.n)
    np.testing.assert_array_equal(got[:, ~data.active], 0.0)
    act = data.active
    for m in range(5):
        params = {k: v[m] for k, v in draws.items()}
        ref = reference["loglik"](part, params, data.y[act], data.X[act])
        np.testing.assert_allclose(got[m, act], ref, rtol=1e-12, atol=1e-13)


def test_loglik_of_records_is_the_columns_of_the_whole(case):
    part, data = case.part, case.data
    draws = _draws(part, np.random.default_rng(8), b=3)
    whole = part.loglik(draws, data)
    np.testing.assert_array_equal(part.loglik(draws, data, slice(10, 47)), whole[:, 10:47])
    idx = np.array([5, 99, 3, 3, 60])
    np.testing.assert_array_equal(part.loglik(draws, data, idx), whole[:, idx])


FAMILY_CASES = [
    "bernoulli", "categorical", "ordinal", "normal", "lognormal", "poisson", "negative_binomial",
    "zero_truncated_negative_binomial", "dirichlet_categorical",
]  # fmt: skip


@pytest.mark.parametrize("name", FAMILY_CASES)
def test_loglik_equals_pymc_compute_log_likelihood(name, reference):
    """One case per family (PyMC compiles each): the reference model's unweighted per-record
    log-likelihood of the active records."""
    case = reference["build_case"](name)
    part, data = case.part, case.data
    draws = _draws(part, np.random.default_rng(9), b=4)
    dims = part.dims()
    post = xr.Dataset({k: (("chain", "draw", *dims.get(k, ())), v[None]) for k, v in draws.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pymc_model(part, data, np.ones(data.n))
        ll = pm.compute_log_likelihood(
            xr.DataTree.from_dict({"posterior": post}),
            model=model,
            extend_inferencedata=False,
            progressbar=False,
        )
    ref = ll["y"].to_numpy()[0]  # (draws, active records)
    got = part.loglik(draws, data)[:, data.active]
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_loglik_checks_the_draws(case):
    part, data = case.part, case.data
    draws = _draws(part, np.random.default_rng(10), b=2)
    name = part.layout.names[0]
    with pytest.raises(ValueError, match=f"lack '{name}'"):
        part.loglik({k: v for k, v in draws.items() if k != name}, data)
    bad = dict(draws)
    bad[name] = np.zeros((2, 99))
    with pytest.raises(ValueError, match="must have shape"):
        part.loglik(bad, data)
