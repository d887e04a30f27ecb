r"""The PRISM paper's benchmark data (appendix C.1, C.5) and the Adult loader.

* SCM (C.1): parents :math:`A, B \sim U\{0,1,2\}`,
  :math:`Y \sim \mathrm{Bernoulli}(\sigma(0.9(A-1) + 0.9(B-1) + \eta))` with
  :math:`\eta \sim \mathcal N(0, 0.5)` (read as variance 0.5), ten spurious children
  :math:`S_j = Y \oplus \mathrm{Bernoulli}(p_{flip})` and ten noise columns
  :math:`N_j \sim U\{0,..,3\}`: d = 22, :math:`|Pa(Y)| = 2`, :math:`|MB(Y)| = 12`.
  Spurious shift: :math:`p_{flip}` 0.10 in training, 0.50 at test. Marginal shift:
  :math:`P(A, B)` moves towards higher values at test (each parent drawn with probabilities
  0.1/0.3/0.6), :math:`p_{flip} = 0.15` throughout.
* Allocation wins (C.5): :math:`Y \sim \mathrm{Bernoulli}(0.5)`, 20 binary features,
  independent given Y; four strong (0.9 vs 0.1), sixteen weak (0.55 vs 0.45).
* Adult (C.1): Private-PGM's coded Adult without ``fnlwgt`` and ``native-country``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost.datasets import DATA_DIR as _DATA

__all__ = [
    "SCM_DAG",
    "adult_pgm",
    "allocation_wins",
    "allocation_wins_weights",
    "scm_marginal_shift",
    "scm_spurious_shift",
]

_CHILDREN = [f"S{j}" for j in range(1, 11)]
_NOISE = [f"N{j}" for j in range(1, 11)]

#: The SCM's DAG as {node: parents}: A -> Y <- B, Y -> S_j; N_j isolated.
SCM_DAG: dict[str, list[str]] = {
    "Y": ["A", "B"],
    **{s: ["Y"] for s in _CHILDREN},
    **{v: [] for v in _NOISE},
}


def _scm(n: int, p_flip: float, parent_p: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    a = rng.choice(3, size=n, p=parent_p)
    b = rng.choice(3, size=n, p=parent_p)
    eta = rng.normal(0.0, np.sqrt(0.5), size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.9 * (a - 1) + 0.9 * (b - 1) + eta)))).astype(np.int64)
    cols: dict[str, np.ndarray] = {"A": a, "B": b}
    for s in _CHILDREN:
        cols[s] = y ^ (rng.random(n) < p_flip).astype(np.int64)
    for v in _NOISE:
        cols[v] = rng.integers(0, 4, size=n)
    cols["Y"] = y
    return pd.DataFrame(cols)


def scm_spurious_shift(
    n_train: int = 5000, n_test: int = 5000, seed: SeedLike = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train (flip 0.10) and test (flip 0.50) frames of the SCM benchmark."""
    rng = as_generator(seed)
    uni = np.full(3, 1 / 3)
    return _scm(n_train, 0.10, uni, rng), _scm(n_test, 0.50, uni, rng)


def scm_marginal_shift(
    n_train: int = 5000, n_test: int = 5000, seed: SeedLike = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train (uniform parents) and test (parents skewed high) frames, flip 0.15 throughout."""
    rng = as_generator(seed)
    return (
        _scm(n_train, 0.15, np.full(3, 1 / 3), rng),
        _scm(n_test, 0.15, np.array([0.1, 0.3, 0.6]), rng),
    )


def allocation_wins(
    n_train: int = 400, n_test: int = 2000, seed: SeedLike = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train and test frames of the allocation-wins naive Bayes benchmark (appendix C.5)."""
    rng = as_generator(seed)
    hi = np.array([0.9] * 4 + [0.55] * 16)
    lo = np.array([0.1] * 4 + [0.45] * 16)

    def draw(n: int) -> pd.DataFrame:
        y = (rng.random(n) < 0.5).astype(np.int64)
        p = np.where(y[:, None] == 1, hi, lo)
        x = (rng.random((n, 20)) < p).astype(np.int64)
        frame = pd.DataFrame(x, columns=[f"X{j}" for j in range(1, 21)])
        frame["Y"] = y
        return frame

    return draw(n_train), draw(n_test)


def allocation_wins_weights() -> dict[str, float]:
    """Oracle task weights :math:`(P(X=1|Y=1) - P(X=1|Y=0))^2` of appendix C.5."""
    return {f"X{j}": (0.8**2 if j <= 4 else 0.1**2) for j in range(1, 21)}


def adult_pgm() -> tuple[pd.DataFrame, dict[str, int]]:
    """Private-PGM's coded Adult (48,842 rows) minus ``fnlwgt`` and ``native-country``.

    Returns the frame and its public domain sizes (codes are 0..size-1).
    """
    frame = pd.read_csv(_DATA / "adult_pgm.csv").drop(columns=["fnlwgt", "native-country"])
    dom = json.loads((_DATA / "adult_pgm-domain.json").read_text())
    return frame, {c: int(dom[c]) for c in frame.columns}
