"""Shipped data (``data/``) and the papers' simulators."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._rng import SeedLike, as_generator
from ._validation import check_positive_int

__all__ = ["DATA_DIR", "load_fatigue", "simulate_lognormal"]

DATA_DIR = Path(__file__).resolve().parents[1] / "data"


def _read(name: str) -> pd.DataFrame:
    path = DATA_DIR / name
    if not path.exists():
        raise FileNotFoundError(
            f"Shipped dataset {path} is missing: reinstall from the repository."
        )
    return pd.read_csv(path)


def load_fatigue() -> pd.DataFrame:
    """Low-cycle fatigue data (22 x 2: ``stress`` float, ``cycle`` int); range-restricted paper
    section 5 models log(cycle) on stress (a log-normal regression)."""
    return _read("fatigue.csv")


def simulate_lognormal(n: int = 2000, seed: SeedLike = None) -> pd.DataFrame:
    r"""Range-restricted paper section 4.1: :math:`z \sim N(2, 1)`,
    :math:`x \sim \mathrm{LogNormal}(z + 1, 1)` (columns ``z`` and ``x``)."""
    n = check_positive_int(n, "n", minimum=2)
    rng = as_generator(seed)
    z = rng.normal(2.0, 1.0, size=n)
    x = rng.lognormal(z + 1.0, 1.0)
    return pd.DataFrame({"z": z, "x": x})
