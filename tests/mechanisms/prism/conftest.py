"""Small fixtures for the PRISM tests."""

import numpy as np
import pandas as pd
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


@pytest.fixture
def small_frame(rng):
    """600 rows: Y depends on A (parent); C is a child of Y; N is noise; Z is numeric."""
    n = 600
    a = rng.integers(0, 3, n)
    y = (rng.random(n) < 0.2 + 0.25 * a).astype(int)
    c = np.where(rng.random(n) < 0.85, y, 1 - y)
    return pd.DataFrame(
        {
            "A": a,
            "C": np.array(["no", "yes"])[c],
            "N": rng.integers(0, 4, n),
            "Z": rng.normal(50.0, 10.0, n).round(1),
            "Y": y,
        }
    )
