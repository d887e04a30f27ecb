r"""Categorical part: the multinomial logit (:class:`CategoricalRegression`); status parts too.

For K levels (codes 0..K-1, level 0 the reference),

.. math::
    P(y_i = k) = \mathrm{softmax}(\eta_i)_k, \quad \eta_{i0} = 0, \quad
    \eta_{ik} = \beta_{0k} + z_i^\top\beta_{\cdot k}\ (k \ge 1),

``intercept`` (K-1) ~ N(0, (2s)^2), ``beta`` (p, K-1) ~ N(0, s^2), s = 2.5 by default.
Grouped statistics: :math:`C_{gk} = \sum_{i \in g} w_i 1[y_i = k]` per design row g and level k
(guide: *Whole files*), :math:`W_g = \sum_k C_{gk}`, :math:`p_g = \mathrm{softmax}(\eta_g)`:

.. math::
    \ell_w = \sum_{g,k} C_{gk} \log p_{gk}, \qquad
    \partial\ell_w/\partial\eta_{gk} = C_{gk} - W_g\,p_{gk}, \qquad
    \partial^2\ell_w/\partial\eta_{gk}\partial\eta_{gl} = -W_g(p_{gk}\delta_{kl} - p_{gk}p_{gl})

(computed in one fused pass over the patterns: :mod:`pseudopost.models.parts._fused`).

Inversion: the smallest code k with :math:`\sum_{l \le k} p_l \ge u`, as the ready model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import special

from pseudopost.models.parts._fused import (
    categorical_hessian,
    categorical_loglik_grad,
    categorical_table,
    sparse_rows,
    use_fused,
    use_fused_table,
)
from pseudopost.models.parts.base import Part
from pseudopost.models.parts.data import group_rows
from pseudopost.models.parts.layout import Layout, Param

__all__ = ["CategoricalPart", "check_levels", "code_support", "level_counts", "log_softmax"]


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis: z - log sum exp z with z = logits - max (NumPy's
    vectorised exp and log)."""
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def check_levels(part: Part, k: object) -> None:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise ValueError(f"Part '{part.name}': 'n_levels' must be an integer >= 2. Got {k!r}.")


def code_support(y: np.ndarray, k: int) -> np.ndarray:
    """Whether each y is an integer code in 0..k-1."""
    return (y >= 0) & (y <= k - 1) & (y == np.round(y))


def level_counts(X: np.ndarray, y: np.ndarray, w: np.ndarray, k: int) -> dict:
    """``rows`` and ``counts`` (U, k): weights summed per (design row, level)."""
    rows, inv = group_rows(X)
    u = rows.shape[0]
    flat = np.bincount(inv * k + y.astype(np.int64), weights=w, minlength=u * k)
    return {"rows": rows, "counts": flat.astype(np.float64).reshape(u, k)}


@dataclass(frozen=True)
class CategoricalPart(Part):
    """Multinomial logit part with ``n_levels`` levels (see the module docstring).
    Parameters ``intercept`` (dims ``level``), ``beta`` (dims ``predictor``, ``level``)."""

    n_levels: int = field(default=2, kw_only=True)

    family = "categorical"
    has_hessian = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_levels(self, self.n_levels)

    @property
    def support(self) -> str:
        return f"an integer code in 0..{self.n_levels - 1}"

    def _in_support(self, y):
        return code_support(y, self.n_levels)

    @cached_property
    def layout(self) -> Layout:
        s, m = self.prior_scale, self.n_levels - 1
        params = [Param("intercept", (m,), prior=("normal", 0.0, 2.0 * s))]
        if self.p:
            params.append(Param("beta", (self.p, m), prior=("normal", 0.0, s)))
        return Layout(tuple(params))

    def dims(self):
        out = {"intercept": ("level",)}
        if self.p:
            out["beta"] = ("predictor", "level")
        return out

    def coords(self):
        return {**super().coords(), "level": [str(k) for k in range(1, self.n_levels)]}

    def _statistics(self, y, X, w) -> dict:
        return level_counts(X, y, w, self.n_levels)

    def _logits(self, values, rows):
        eta = np.zeros((rows.shape[0], self.n_levels))
        eta[:, 1:] = values["intercept"]
        if self.p:
            eta[:, 1:] += rows @ values["beta"]
        return eta

    def derived(self, arrays):
        rows = arrays["rows"]
        return sparse_rows(rows) if use_fused(rows, self.n_levels, None) else {}

    def _loglik_grad(self, values, arrays):
        ll, g_int, g_beta = categorical_loglik_grad(
            arrays["rows"], arrays["counts"], values["intercept"], values.get("beta"),
            sparse=arrays if "rows_ptr" in arrays else None,
        )  # fmt: skip
        grads = {"intercept": g_int}
        if self.p:
            grads["beta"] = g_beta
        return ll, grads

    def _loglik_hess(self, values, arrays):
        return categorical_hessian(
            arrays["rows"], arrays["counts"], values["intercept"], values.get("beta"),
            sparse=arrays if "rows_ptr" in arrays else None,
        )  # fmt: skip

    def _key_table(self, params, rows, key_row, key_y):
        if self.p and use_fused_table(self.p, self.n_levels):
            return categorical_table(
                rows, params["intercept"], params["beta"], key_row, key_y.astype(np.int64)
            )
        b = params["intercept"].shape[0]
        logits = np.zeros((b, rows.shape[0], self.n_levels))
        logits[:, :, 1:] = params["intercept"][:, None, :]
        for j in range(self.p):  # no BLAS: block-invariant values (Part.eta_rows)
            logits[:, :, 1:] += params["beta"][:, j, None, :] * rows[None, :, j, None]
        return log_softmax(logits)[:, key_row, key_y.astype(np.int64)]

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        n = u.size
        eta = np.tile(params["intercept"], (n, 1))
        if self.p:
            eta = eta + X @ params["beta"]
        probs = special.softmax(np.column_stack([np.zeros(n), eta]), axis=1)
        cdf = np.cumsum(probs, axis=-1)[..., :-1]
        return (cdf < u[:, None]).sum(axis=1).astype(np.float64)
