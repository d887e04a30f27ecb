r"""Naive Bayes synthesis backend (PRISM appendix C.2).

Post-processing of the released marginals: with :math:`\Pi_\Delta` the Euclidean projection onto
the probability simplex (appendix A.2, Proposition A.1),

.. math:: \tilde P(Y) = \Pi_\Delta(\tilde p_Y), \qquad
          \tilde P(X_j \mid Y = y) = \frac{\Pi_\Delta(\tilde p_{X_j, Y})(\cdot, y)}
                                         {\sum_x \Pi_\Delta(\tilde p_{X_j, Y})(x, y)},
          \quad j \in S,

and records are drawn from :math:`\tilde P(Y)\prod_{j\in S}\tilde P(X_j\mid Y)`; every other
column is drawn independently from its projected noisy 1-way marginal. A column whose
conditional has an empty slice for some y falls back to its 1-way marginal there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive_int
from pseudopost.mechanisms.prism.measure import MarginalMeasurement

__all__ = ["NaiveBayesModel", "fit_naive_bayes", "project_simplex"]


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of a vector onto the probability simplex (Duchi et al. 2008)."""
    v = np.asarray(v, dtype=float).ravel()
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, v.size + 1)
    r = np.flatnonzero(u - css / idx > 0)[-1]
    return np.maximum(v - css[r] / (r + 1), 0.0)


@dataclass(frozen=True)
class NaiveBayesModel:
    """Projected prior, class conditionals and independent 1-way marginals."""

    target: str
    prior: np.ndarray
    conditionals: Mapping[str, np.ndarray]  # col -> (k_y, k_col), rows sum to 1
    marginals: Mapping[str, np.ndarray]  # col -> (k_col,), for columns outside S
    columns: tuple[str, ...]

    def sample(self, n: int, seed: SeedLike = None) -> dict[str, np.ndarray]:
        """``n`` records: Y from the prior, S given Y, the rest independently."""
        n = check_positive_int(n, "n")
        rng = as_generator(seed)
        out = {self.target: rng.choice(self.prior.size, size=n, p=self.prior)}
        for col in self.columns:
            if col == self.target:
                continue
            if col in self.conditionals:
                cdf = np.cumsum(self.conditionals[col], axis=1)[out[self.target]]
                k = cdf.shape[1]
                draw = (cdf < rng.random(n)[:, None]).sum(axis=1)
                out[col] = np.minimum(draw, k - 1)
            else:
                p = self.marginals[col]
                out[col] = rng.choice(p.size, size=n, p=p)
        return {c: out[c].astype(np.int64) for c in self.columns}


def _prior(measurements: Sequence[MarginalMeasurement], target: str) -> np.ndarray:
    r"""Inverse-variance combination of every unbiased estimate of P(Y), then projected.

    The 1-way measurement of Y has per-cell variance :math:`\sigma^2`; the Y-margin of a
    measured :math:`(X_j, Y)` table sums :math:`|X_j|` noisy cells, variance
    :math:`|X_j|\sigma_j^2`. Weighting each by its inverse variance is post-processing.
    """
    num, den = 0.0, 0.0
    for m in measurements:
        if target not in m.clique or len(m.clique) > 2:
            continue
        t = m.table()
        if len(m.clique) == 1:
            est, var = t, m.sigma**2
        else:
            axis = 1 - m.clique.index(target)
            est, var = t.sum(axis=axis), t.shape[axis] * m.sigma**2
        num, den = num + est / var, den + 1.0 / var
    if den == 0:
        raise ValueError(f"The naive Bayes backend needs a measurement involving '{target}'.")
    return project_simplex(num / den)


def fit_naive_bayes(
    measurements: Sequence[MarginalMeasurement], target: str, columns: Sequence[str]
) -> NaiveBayesModel:
    """Build the backend from (X_j, Y) measurements (j in S) and 1-way ones for the rest."""
    ones = {m.clique[0]: project_simplex(m.noisy) for m in measurements if len(m.clique) == 1}
    conds: dict[str, np.ndarray] = {}
    for m in measurements:
        if len(m.clique) != 2 or target not in m.clique:
            continue
        col = m.clique[0] if m.clique[1] == target else m.clique[1]
        joint = project_simplex(m.noisy).reshape(m.shape)
        if m.clique[0] == target:
            joint = joint.T  # (k_col, k_y)
        tot = joint.sum(axis=0)
        fallback = ones.get(col, joint.sum(axis=1))[:, None]
        cond = np.where(tot > 0, joint / np.where(tot > 0, tot, 1.0), fallback)
        conds[col] = cond.T
    missing = [c for c in columns if c not in conds and c != target and c not in ones]
    if missing:
        raise ValueError(f"The naive Bayes backend needs a 1-way measurement of {missing}.")
    marg = {c: ones[c] for c in columns if c not in conds and c != target}
    return NaiveBayesModel(target, _prior(measurements, target), conds, marg, tuple(columns))
