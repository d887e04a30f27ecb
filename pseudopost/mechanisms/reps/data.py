r"""Datasets of the REPS paper (section 7.2, appendix B.1) and its 56/14/30 split.

Loaders read the files shipped in ``data/`` at the repository root; the simulator builds the
paper's controlled-outlier dataset. Every loader returns a :class:`TabularTask`: the frame, the
label column and which feature columns are numeric or categorical.

The paper gives the simulated design only in words (section 7.2): :math:`n = 6000`, 6 continuous
features from a 2-component Gaussian mixture with component means :math:`\mp 0.8`, 3 categorical
features, 2 % outliers with rare categories ("Z", "Q", "R") seen only in outliers and continuous
features shifted to mean 2.4, and a binary label from a logistic model using both kinds of
features. The remaining constants (unit variances, level sets, logistic coefficients) are ours
and are listed in :func:`simulate_outliers`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from pseudopost._rng import SeedLike, as_generator, spawn_seeds
from pseudopost._validation import check_frame, check_in_interval, check_positive_int
from pseudopost.datasets import DATA_DIR

__all__ = [
    "TabularTask",
    "load_adult",
    "load_breast_cancer",
    "load_german_credit",
    "simulate_outliers",
    "split_train_validation_test",
]


ADULT_NUMERIC = (
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
)
ADULT_CATEGORICAL = (
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
)


@dataclass(frozen=True)
class TabularTask:
    """A frame with a binary label, its feature types and (simulated data) true outlier flags."""

    name: str
    frame: pd.DataFrame
    label: str
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    is_outlier: np.ndarray | None = None

    @property
    def features(self) -> tuple[str, ...]:
        """Feature columns (numeric then categorical)."""
        return self.numeric + self.categorical


def load_adult() -> TabularTask:
    """UCI Adult, train and test files pooled, rows with a missing value dropped (n = 45,222).

    Six continuous and eight categorical features, label ``income`` (``<=50K`` / ``>50K``), as in
    the paper's section 7.2.
    """
    parts = [pd.read_csv(DATA_DIR / f) for f in ("adult_train.csv", "adult_test.csv")]
    frame = pd.concat(parts, ignore_index=True).dropna().reset_index(drop=True)
    for c in (*ADULT_CATEGORICAL, "income"):
        frame[c] = frame[c].astype(str).str.strip()
    return TabularTask("adult", frame, "income", ADULT_NUMERIC, ADULT_CATEGORICAL)


def load_german_credit() -> TabularTask:
    """UCI German Credit (n = 1,000): 7 numeric, 13 categorical features, label ``credit_risk``."""
    frame = pd.read_csv(DATA_DIR / "german_credit.csv")
    numeric = tuple(c for c in frame.columns if c != "credit_risk" and frame[c].dtype.kind in "if")
    categorical = tuple(c for c in frame.columns if c not in numeric and c != "credit_risk")
    for c in (*categorical, "credit_risk"):
        frame[c] = frame[c].astype(str)
    return TabularTask("german_credit", frame, "credit_risk", numeric, categorical)


def load_breast_cancer(seed: SeedLike = 0) -> TabularTask:
    """Breast Cancer Wisconsin (n = 569) with 3 random features binned into 5 quantile categories.

    The paper (section 7.2) turns 3 randomly chosen features into 5 quantile-based categories to
    make the data mixed-type; ``seed`` picks the 3 features.
    """
    frame = pd.read_csv(DATA_DIR / "breast_cancer_wdbc.csv")
    feats = [c for c in frame.columns if c != "diagnosis"]
    chosen = sorted(as_generator(seed).choice(len(feats), size=3, replace=False))
    binned = tuple(feats[j] for j in chosen)
    for c in binned:
        frame[c] = pd.qcut(frame[c], 5, labels=[f"q{k}" for k in range(1, 6)]).astype(str)
    numeric = tuple(c for c in feats if c not in binned)
    frame["diagnosis"] = frame["diagnosis"].astype(str)
    return TabularTask("breast_cancer", frame, "diagnosis", numeric, binned)


def simulate_outliers(
    n: int = 6000, outlier_fraction: float = 0.02, seed: SeedLike = None
) -> TabularTask:
    r"""The paper's simulated dataset with injected outliers (section 7.2).

    Inliers: component :math:`c \sim \text{Bernoulli}(1/2)`, six features
    :math:`x_j \sim N(\mu_c, 1)` with :math:`\mu_c \in \{-0.8, 0.8\}`; categorical ``cat1``,
    ``cat2``, ``cat3`` uniform over {A, B, C}, {D, E, F}, {G, H, I} (``cat1`` leans to A in
    component 0 and to C in component 1, probabilities 0.5/0.3/0.2). Outliers (a fraction
    ``outlier_fraction``, rounded): all six :math:`x_j \sim N(2.4, 1)` and the rare levels
    "Z", "Q", "R" in ``cat1..3``. Label :math:`y \sim \text{Bernoulli}(\text{logit}^{-1}(\eta))`,

    .. math:: \eta = 0.9x_1 - 0.7x_2 + 0.5x_3 + 0.8[\text{cat1}=A] - 0.6[\text{cat2}=E]
              + 0.7[\text{cat3} \in \{I, R\}] - 0.2.

    The ground-truth outlier flags are kept out of the columns, in ``TabularTask.is_outlier``.
    """
    n = check_positive_int(n, "n", minimum=20)
    frac = check_in_interval(outlier_fraction, "outlier_fraction", 0.0, 0.5, closed="left")
    rng = as_generator(seed)
    n_out = round(n * frac)
    is_out = np.zeros(n, dtype=bool)
    is_out[rng.choice(n, size=n_out, replace=False)] = True
    comp = rng.integers(0, 2, size=n)
    mu = np.where(is_out, 2.4, np.where(comp == 0, -0.8, 0.8))
    x = rng.normal(mu[:, None], 1.0, size=(n, 6))
    p1 = np.where(comp[:, None] == 0, [0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    cat1 = np.array(["A", "B", "C"])[(rng.random(n)[:, None] > p1.cumsum(1)).sum(1)]
    cat2 = rng.choice(np.array(["D", "E", "F"]), size=n)
    cat3 = rng.choice(np.array(["G", "H", "I"]), size=n)
    cat1[is_out], cat2[is_out], cat3[is_out] = "Z", "Q", "R"
    eta = (
        0.9 * x[:, 0]
        - 0.7 * x[:, 1]
        + 0.5 * x[:, 2]
        + 0.8 * (cat1 == "A")
        - 0.6 * (cat2 == "E")
        + 0.7 * np.isin(cat3, ["I", "R"])
        - 0.2
    )
    y = rng.random(n) < 1.0 / (1.0 + np.exp(-eta))
    frame = pd.DataFrame({f"x{j + 1}": x[:, j] for j in range(6)})
    frame["cat1"], frame["cat2"], frame["cat3"] = cat1, cat2, cat3
    frame["y"] = np.where(y, "1", "0")
    numeric = tuple(f"x{j + 1}" for j in range(6))
    return TabularTask("sim", frame, "y", numeric, ("cat1", "cat2", "cat3"), is_out)


def split_train_validation_test(
    frame: pd.DataFrame,
    label: str,
    shares: tuple[float, float, float] = (0.56, 0.14, 0.30),
    seed: SeedLike = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Stratified train/validation/test split (appendix B.1: 56 % / 14 % / 30 %)."""
    check_frame(frame, "frame", min_rows=10)
    if not np.isclose(sum(shares), 1.0) or min(shares) <= 0:
        raise ValueError(
            f"The 'shares' parameter must be 3 positive numbers summing to 1. Got {shares}."
        )
    s1, s2 = spawn_seeds(seed, 2)
    rest, test = train_test_split(
        frame, test_size=shares[2], stratify=frame[label], random_state=s1
    )
    train, val = train_test_split(
        rest, test_size=shares[1] / (shares[0] + shares[1]), stratify=rest[label], random_state=s2
    )
    return (
        train.reset_index(drop=True),
        val.reset_index(drop=True),
        test.reset_index(drop=True),
    )
