r"""Ordinal part: the ordered logit (:class:`OrdinalRegression`).

For K ordered levels and cutpoints :math:`c_0 < \dots < c_{K-2}`, :math:`\eta_i = z_i^\top\beta`
(no intercept: the cutpoints hold it),

.. math::
    P(y_i = k) = \sigma(c_k - \eta_i) - \sigma(c_{k-1} - \eta_i)
    \quad (c_{-1} = -\infty,\ c_{K-1} = \infty),

``cutpoints`` ~ N(k - (K-2)/2, (2s)^2) under PyMC's ordered transform (:math:`c_0 = x_0`,
:math:`c_k = c_{k-1} + e^{x_k}`, log-Jacobian :math:`\sum_{k \ge 1} x_k`), ``beta`` ~ N(0, s^2),
s = 2.5 by default. Grouped statistics: :math:`C_{gk}` per design row g and level k (design
notes section 9), :math:`\ell_w = \sum_{g,k} C_{gk} \log P_g(k)`. With :math:`a = c_k - \eta`,
:math:`b = c_{k-1} - \eta` (so :math:`a - b = c_k - c_{k-1} > 0`), the identity
:math:`\sigma(a) - \sigma(b) = \sigma(a)\,\sigma(-b)\,(1 - e^{b - a})` gives, finite in both
tails (the same three terms as the ready model's left/right forms),

.. math::
    \log P = \log\sigma(a) + \log\sigma(-b) + \log(1 - e^{-(a - b)}), \qquad
    \frac{\partial\log P}{\partial a} = \sigma(-a) + \frac{1}{e^{a-b} - 1}, \quad
    \frac{\partial\log P}{\partial b} = -\sigma(b) - \frac{1}{e^{a-b} - 1}

(for k = 0 only :math:`\log\sigma(a)`, for k = K-1 only :math:`\log\sigma(-b)`).
Second derivatives (exact Hessian; :math:`t = r(1 + r)`, :math:`r = 1/(e^{a-b} - 1)`):
:math:`\partial_a^2 = -\sigma(a)\sigma(-a) - t`, :math:`\partial_b^2 = -\sigma(b)\sigma(-b) - t`,
:math:`\partial_a\partial_b = t`; with :math:`A_g = c - \eta_g` the per-pattern Hessian in A is
tridiagonal with row sums :math:`-\sigma(A_j)\sigma(-A_j)(C_{gj} + C_{g,j+1})`, which give
the blocks in :math:`\beta` (:math:`\partial A/\partial\beta = -x_g`); the ordered transform
is applied by :meth:`Layout.hessian <pseudopost.models.parts.layout.Layout.hessian>`.
Inversion: the smallest k with
:math:`\sigma(c_k - \eta) \ge u`, as the ready model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from pseudopost.models.parts._fused import linear_rows
from pseudopost.models.parts._math import expit, log1mexp, log_sigmoid
from pseudopost.models.parts.base import Part
from pseudopost.models.parts.categorical import check_levels, code_support, level_counts
from pseudopost.models.parts.layout import Layout, Param

__all__ = ["OrdinalPart", "level_logp", "linear_blocks"]


def linear_blocks(coef: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``rows @ coef`` (B, U) for a block of coefficient draws ``coef`` (B, p), predictor by
    predictor (no BLAS: a row's value does not depend on the block, as :meth:`Part.eta_rows
    <pseudopost.models.parts.base.Part.eta_rows>`)."""
    if not rows.shape[1]:
        return np.zeros((coef.shape[0], rows.shape[0]))
    return linear_rows(rows, coef)  # the same sums over the non-zeros only


def level_logp(cut: np.ndarray, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log P(level k) of shape (..., U, K), A = c - eta of shape (..., U, K-1)) for cutpoints
    ``cut`` (..., K-1) and ``eta`` (..., U) (module docstring's three-term form)."""
    m = cut.shape[-1]
    A = cut[..., None, :] - eta[..., :, None]
    ls_a, ls_na = log_sigmoid(A), log_sigmoid(-A)
    out = np.empty((*A.shape[:-1], m + 1))
    out[..., 0] = ls_a[..., 0]
    out[..., m] = ls_na[..., m - 1]
    inner = log1mexp(-np.diff(cut, axis=-1))  # log(1 - e^{-(c_k - c_{k-1})})
    out[..., 1:m] = ls_a[..., 1:] + ls_na[..., :-1] + inner[..., None, :]
    return out, A


@dataclass(frozen=True)
class OrdinalPart(Part):
    """Ordered logit part with ``n_levels`` levels (see the module docstring). Parameters
    ``cutpoints`` (K-1, ordered), ``beta``."""

    n_levels: int = field(default=2, kw_only=True)

    family = "ordinal"
    has_hessian = True
    #: the cutpoints' transform and prior sd (in multiples of ``prior_scale``)
    cut_transform: ClassVar[str] = "ordered"
    cut_scale: ClassVar[float] = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_levels(self, self.n_levels)

    @property
    def support(self) -> str:
        return f"an integer code in 0..{self.n_levels - 1}"

    def _in_support(self, y):
        return code_support(y, self.n_levels)

    @property
    def centres(self) -> np.ndarray:
        m = self.n_levels - 1
        return np.arange(m) - (m - 1) / 2.0

    @cached_property
    def layout(self) -> Layout:
        s, m = self.prior_scale, self.n_levels - 1
        prior = ("normal", tuple(self.centres.tolist()), self.cut_scale * s)
        params = [Param("cutpoints", (m,), self.cut_transform, prior)]
        if self.p:
            params.append(Param("beta", (self.p,), prior=("normal", 0.0, s)))
        return Layout(tuple(params))

    def dims(self):
        return {"cutpoints": ("cutpoint",), **super().dims()}

    def coords(self):
        k = self.n_levels
        return {**super().coords(), "cutpoint": [f"{j}|{j + 1}" for j in range(k - 1)]}

    def _statistics(self, y, X, w) -> dict:
        return level_counts(X, y, w, self.n_levels)

    def _loglik_grad(self, values, arrays):
        rows, counts = arrays["rows"], arrays["counts"]
        c = values["cutpoints"]
        m = c.size  # K - 1
        eta = rows @ values["beta"] if self.p else np.zeros(rows.shape[0])
        logp, A = level_logp(c, eta)  # A: a of levels 0..m-1, b of levels 1..m
        gap = np.diff(c)  # c_k - c_{k-1} = a - b of the inner levels
        ll = float(np.sum(np.where(counts > 0, counts * logp, 0.0)))
        r = 1.0 / np.expm1(gap)
        da = expit(-A)  # d log P / da of levels 0..m-1
        da[:, 1:] += r
        db = -expit(A)  # d log P / db of levels 1..m
        db[:, :-1] -= r
        g = counts[:, :m] * da + counts[:, 1:] * db  # gradient on A
        grads = {"cutpoints": g.sum(axis=0)}
        if self.p:
            grads["beta"] = -g.sum(axis=1) @ rows
        return ll, grads

    def _loglik_hess(self, values, arrays):
        rows, counts = arrays["rows"], arrays["counts"]
        c = values["cutpoints"]
        m = c.size
        eta = rows @ values["beta"] if self.p else np.zeros(rows.shape[0])
        A = c[None, :] - eta[:, None]
        V = expit(A) * expit(-A) * (counts[:, :m] + counts[:, 1:])  # -(T_g 1)_j
        r = 1.0 / np.expm1(np.diff(c))
        t = r * (1.0 + r) * counts[:, 1:m].sum(axis=0)  # inner levels 1..m-1
        H = np.zeros((m + self.p, m + self.p))
        hcc = np.diag(-V.sum(axis=0))
        k = np.arange(1, m)
        hcc[k, k] -= t
        hcc[k - 1, k - 1] -= t
        hcc[k, k - 1] += t
        hcc[k - 1, k] += t
        H[:m, :m] = hcc
        if self.p:
            H[:m, m:] = V.T @ rows
            H[m:, :m] = H[:m, m:].T
            H[m:, m:] = -(rows.T @ (rows * V.sum(axis=1)[:, None]))
        return H

    def eta_blocks(self, params, rows) -> np.ndarray:
        """Linear predictor (B, U) of a block of draws without an intercept, predictor by
        predictor (no BLAS: block-invariant values, as :meth:`Part.eta_rows`)."""
        if not self.p:
            return np.zeros((params["cutpoints"].shape[0], rows.shape[0]))
        return linear_blocks(params["beta"], rows)

    def _key_table(self, params, rows, key_row, key_y):
        cut = params["cutpoints"]  # (B, K-1)
        eta = self.eta_blocks(params, rows)
        logp, _ = level_logp(cut, eta)  # per design row and level, then gathered per key
        return logp[:, key_row, key_y.astype(np.int64)]

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        eta = X @ params["beta"] if self.p else np.zeros(u.size)
        cdf = expit(params["cutpoints"][None, :] - eta[:, None])
        return (cdf < u[:, None]).sum(axis=1).astype(np.float64)
