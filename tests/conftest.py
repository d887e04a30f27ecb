import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("PYTENSOR_FLAGS", "")

from pseudopost.datasets import simulate_lognormal


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


@pytest.fixture(scope="session")
def sim_small():
    """Range-restricted paper section 4.1 simulation, small n for fast tests."""
    return simulate_lognormal(400, seed=11)


@pytest.fixture(scope="session")
def sim_result(sim_small):
    """One fitted pseudo posterior on the simulation, shared by the mechanism tests."""
    from pseudopost import PseudoPosterior
    from pseudopost.models import LogNormalRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PseudoPosterior(LogNormalRegression("x", ["z"])).fit(
            sim_small, draws=400, tune=400, chains=2, seed=7
        )
