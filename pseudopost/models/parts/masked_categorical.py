r"""Masked categorical part: the multinomial logit over each record's *allowed* levels.

A declared structural zero (:class:`~pseudopost.models.rules.StructuralZero`) forbids some levels
of a categorical column given a record's earlier columns (:func:`~pseudopost.models.rules.
allowed_levels`). The model then gives them no mass: with :math:`m_{ik} \in \{0, 1\}` the
record's allowed-levels mask,

.. math::
    P(y_i = k) = \frac{m_{ik} e^{\eta_{ik}}}{\sum_j m_{ij} e^{\eta_{ij}}}, \qquad
    \eta_{i0} = 0, \quad \eta_{ik} = \beta_{0k} + z_i^\top\beta_{\cdot k}\ (k \ge 1),

the categorical part's probabilities renormalised over the allowed levels (a truncated
distribution), in the likelihood and in generation alike, so fitting and drawing agree. Priors
as :class:`~pseudopost.models.parts.categorical.CategoricalPart` (``intercept`` (K-1) ~
N(0, (2s)^2), ``beta`` (p, K-1) ~ N(0, s^2)).

Data. The mask travels in the design: ``X`` is ``(n, p + K)``, the p predictors followed by the K
mask columns (1 allowed, 0 forbidden), so grouping, statistics, per-record evaluation and the
accountant need nothing new: grouped statistics are keyed by (design row, mask),
:math:`C_{gk} = \sum_{i \in g} w_i 1[y_i = k]`, and

.. math::
    \ell_w = \sum_{g,k} C_{gk} \log P_g(k), \qquad
    \partial\ell_w/\partial\eta_{gk} = C_{gk} - W_g P_g(k),

:math:`P_g(k) = 0` at forbidden levels (whose counts are 0: an observed outcome must be allowed).
Inversion: the smallest code k with :math:`\sum_{l \le k} P(l) \ge u`, which never returns a
forbidden level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pseudopost.models.parts.categorical import CategoricalPart
from pseudopost.models.parts.data import PartData

__all__ = ["MaskedCategoricalPart", "masked_log_softmax"]


def masked_log_softmax(logits: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """log softmax over the last axis restricted to ``allowed`` (bool, broadcastable): ``-inf``
    at forbidden levels; every row needs at least one allowed level."""
    z = np.where(allowed, logits, -np.inf)
    z = z - z.max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


@dataclass(frozen=True)
class MaskedCategoricalPart(CategoricalPart):
    """Multinomial logit over each record's allowed levels (module docstring).

    ``predictors`` name the p real predictors; the data's ``X`` has p + ``n_levels`` columns,
    the last ``n_levels`` the allowed-levels mask. Parameters ``intercept`` (dims ``level``) and
    ``beta`` (dims ``predictor``, ``level``), as the unmasked part.
    """

    family = "masked_categorical"
    has_hessian = True  # its own (below): the unmasked kernels read no mask

    @property
    def width(self) -> int:
        """Columns of the design: predictors and mask."""
        return self.p + self.n_levels

    def check_data(self, data: PartData) -> PartData:
        """As :meth:`Part.check_data <pseudopost.models.parts.base.Part.check_data>`, with the
        mask: 0/1 values, at least one allowed level and the outcome allowed on every active
        record."""
        if not isinstance(data, PartData):
            raise TypeError(f"'data' must be a PartData. Got {type(data).__name__}.")
        if data.X.shape[1] != self.width:
            raise ValueError(
                f"Part '{self.name}' needs {self.p} predictor column(s) {list(self.predictors)} "
                f"followed by {self.n_levels} allowed-level columns; 'X' has "
                f"{data.X.shape[1]} column(s)."
            )
        act = data.active
        mask = data.X[act, self.p :]
        if mask.size and not np.isin(mask, (0.0, 1.0)).all():
            i = int(np.flatnonzero(act)[np.flatnonzero(~np.isin(mask, (0.0, 1.0)).all(1))[0]])
            raise ValueError(
                f"Part '{self.name}': the allowed-level mask of record {i} is not 0/1."
            )
        none = mask.sum(axis=1) == 0 if mask.size else np.zeros(0, bool)
        if none.any():
            i = int(np.flatnonzero(act)[np.flatnonzero(none)[0]])
            raise ValueError(f"Part '{self.name}': record {i} has no allowed level.")
        real = PartData(data.y, data.X[:, : self.p], data.active)
        super().check_data(real)
        ya = data.y[act].astype(np.int64)
        if ya.size and not mask[np.arange(ya.size), ya].all():
            j = int(np.flatnonzero(mask[np.arange(ya.size), ya] == 0)[0])
            i = int(np.flatnonzero(act)[j])
            raise ValueError(
                f"Part '{self.name}': record {i} has level {ya[j]}, which its mask forbids (a "
                f"structural zero the data contain)."
            )
        return data

    def derived(self, arrays):
        return {}  # its own NumPy density reads the dense rows

    def _split(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return rows[..., : self.p], rows[..., self.p :] > 0.5

    def _loglik_grad(self, values, arrays):
        rows, counts = arrays["rows"], arrays["counts"]
        design, allowed = self._split(rows)
        ls = masked_log_softmax(self._logits(values, design), allowed)
        ll = float(np.sum(np.where(counts > 0, counts * ls, 0.0)))
        d = counts[:, 1:] - counts.sum(axis=1, keepdims=True) * np.exp(ls[:, 1:])
        grads = {"intercept": d.sum(axis=0)}
        if self.p:
            grads["beta"] = design.T @ d
        return ll, grads

    def _loglik_hess(self, values, arrays):
        r"""Exact Hessian in layout order (``intercept``, then ``beta`` row by row): with
        :math:`\tilde z_g = (1, z_g)`, :math:`W_g` the group's total count and :math:`p_g` its
        masked probabilities of the levels 1..K-1 (0 at forbidden ones),

        .. math:: H = -\sum_g W_g\, (\tilde z_g \tilde z_g^\top) \otimes
                  (\mathrm{diag}\, p_g - p_g p_g^\top),

        the multinomial logit's, renormalised over the allowed levels."""
        rows, counts = arrays["rows"], arrays["counts"]
        design, allowed = self._split(rows)
        p = np.exp(masked_log_softmax(self._logits(values, design), allowed))[:, 1:]
        w = counts.sum(axis=1)
        z = np.column_stack([np.ones(rows.shape[0]), design])
        a = w[:, None, None] * (p[:, :, None] * np.eye(p.shape[1]) - p[:, :, None] * p[:, None, :])
        h = -np.einsum("gi,gj,gkl->ikjl", z, z, a, optimize=True)
        q = z.shape[1] * p.shape[1]
        return h.reshape(q, q)

    def _key_table(self, params, rows, key_row, key_y):
        design, allowed = self._split(rows)
        b = params["intercept"].shape[0]
        logits = np.zeros((b, rows.shape[0], self.n_levels))
        logits[:, :, 1:] = params["intercept"][:, None, :]
        for j in range(self.p):  # no BLAS: block-invariant values (Part.eta_rows)
            logits[:, :, 1:] += params["beta"][:, j, None, :] * design[None, :, j, None]
        return masked_log_softmax(logits, allowed[None])[:, key_row, key_y.astype(np.int64)]

    def check_sample_inputs(self, params, X, u):
        X = np.asarray(X, dtype=np.float64)
        uu = np.asarray(u, dtype=np.float64)
        n = uu.shape[0] if uu.ndim else 0
        if X.shape != (n, self.width):
            raise ValueError(
                f"'X' must have shape ({n}, {self.width}): {self.p} predictor(s) and "
                f"{self.n_levels} allowed-level columns; got {X.shape}."
            )
        params, _, u = super().check_sample_inputs(params, X[:, : self.p], u)
        mask = X[:, self.p :] > 0.5
        if n and not mask.any(axis=1).all():
            i = int(np.flatnonzero(~mask.any(axis=1))[0])
            raise ValueError(f"Part '{self.name}': record {i} has no allowed level to draw.")
        return params, X, u

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        design, allowed = self._split(X)
        n = u.size
        eta = np.tile(params["intercept"], (n, 1))
        if self.p:
            eta = eta + design @ params["beta"]
        probs = np.exp(masked_log_softmax(np.column_stack([np.zeros(n), eta]), allowed))
        cdf = np.cumsum(probs, axis=-1)
        # the last allowed level closes the cdf at exactly 1 (no rounding past it)
        last = self.n_levels - 1 - np.argmax(allowed[:, ::-1], axis=1)
        cdf[np.arange(self.n_levels)[None, :] >= last[:, None]] = np.inf
        return (cdf < u[:, None]).sum(axis=1).astype(np.float64)
