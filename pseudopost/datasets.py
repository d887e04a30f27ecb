"""Shipped data (``data/``) and the papers' simulators."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive_int

__all__ = [
    "DATA_DIR",
    "load_adult",
    "load_breast_cancer",
    "load_fatigue",
    "load_german_credit",
    "load_slid",
    "load_yrbss",
    "simulate_lognormal",
]

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


def load_adult(split: str = "train") -> pd.DataFrame:
    """UCI Adult, raw mixed types (``split`` = "train" 32,561 rows, "test" 16,281, or "all").

    Missing values (UCI "?") are NaN in workclass, occupation and native-country."""
    if split not in ("train", "test", "all"):
        raise ValueError(f"'split' must be 'train', 'test' or 'all'. Got {split!r}.")
    if split == "all":
        return pd.concat([_read("adult_train.csv"), _read("adult_test.csv")], ignore_index=True)
    return _read(f"adult_{split}.csv")


def load_german_credit() -> pd.DataFrame:
    """Statlog German Credit (1,000 x 21; target ``credit_risk`` good/bad)."""
    return _read("german_credit.csv")


def load_breast_cancer() -> pd.DataFrame:
    """Breast Cancer Wisconsin Diagnostic (569 x 31; target ``diagnosis`` M/B)."""
    return _read("breast_cancer_wdbc.csv")


def load_slid() -> pd.DataFrame:
    """Survey of Labour and Income Dynamics, Ontario 1994 (7,425 x 5), a real file with gaps.

    Columns ``wages`` (composite hourly wage, CAD), ``education`` (years), ``age``, ``sex`` and
    ``language``; empty cells are NaN (wages 3,278, a skip pattern; education 249; language
    121).

    Source: Statistics Canada's public-use SLID, via the R package carData (``carData::SLID``,
    GPL). See ``data/README.md``.
    """
    return _read("slid.csv")


def load_yrbss() -> pd.DataFrame:
    """Youth Risk Behavior Surveillance System (13,583 x 13), a real survey with missing answers.

    Age, gender, grade, race, height (m), weight (kg) and answers on helmets, texting while
    driving, activity, TV and sleep, some mixing numbers and text answers ("did not drive");
    9,476 empty cells are NaN.

    Source: the CDC's YRBSS, via the R package openintro (``openintro::yrbss``). See
    ``data/README.md``.
    """
    return _read("yrbss.csv")


def simulate_lognormal(n: int = 2000, seed: SeedLike = None) -> pd.DataFrame:
    r"""Range-restricted paper section 4.1: :math:`z \sim N(2, 1)`,
    :math:`x \sim \mathrm{LogNormal}(z + 1, 1)` (columns ``z`` and ``x``)."""
    n = check_positive_int(n, "n", minimum=2)
    rng = as_generator(seed)
    z = rng.normal(2.0, 1.0, size=n)
    x = rng.lognormal(z + 1.0, 1.0)
    return pd.DataFrame({"z": z, "x": x})
