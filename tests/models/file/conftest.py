"""A small survey-like frame with every kind of cell: empty cells, codes, a spike at zero, a
rule-shaped skip pattern, strings, an ordered category and booleans."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def survey(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n)
    region = rng.choice(["north", "south", "east"], n, p=[0.5, 0.3, 0.2]).astype(object)
    region[rng.random(n) < 0.1] = None  # empty cells in a string column
    age = rng.integers(16, 80, n)
    employed = np.where(age < 18, "no", rng.choice(["yes", "no"], n, p=[0.7, 0.3]))
    wage = np.round(rng.lognormal(2.5 + 0.01 * (age - 40), 0.5, n), 2)
    wage = np.where(employed == "no", np.nan, wage)  # a skip: no wage without a job
    refused = (employed == "yes") & (rng.random(n) < 0.08)
    wage = np.where(refused, -9.0, wage)  # a code: refused
    gains = np.where(rng.random(n) < 0.6, 0.0, np.round(rng.lognormal(7, 1, n)))  # spike at 0
    hours = np.where(employed == "yes", rng.integers(10, 60, n), 0).astype(float)
    hours[rng.random(n) < 0.05] = np.nan
    health = pd.Categorical(
        rng.choice(["poor", "fair", "good"], n), categories=["poor", "fair", "good"], ordered=True
    )
    return pd.DataFrame(
        {
            "sex": sex,
            "region": pd.array(region, dtype=object),
            "age": age,
            "employed": employed,
            "wage": wage,
            "gains": gains,
            "hours": hours,
            "health": health,
        }
    )


@pytest.fixture
def frame() -> pd.DataFrame:
    return survey()
