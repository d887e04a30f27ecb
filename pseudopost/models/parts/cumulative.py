r"""Cumulative part: the ordered logit over the K points of a declared bounded grid (a
cumulative probability model, CPM).

A numeric column recorded on a public grid with public bounds (heights in whole inches between
1.0 and 2.3 m) takes only the K points :math:`g_0 < \dots < g_{K-1}` of that grid. Its value
part is then the ordered logit of :mod:`~pseudopost.models.parts.ordinal` over those points,

.. math::
    P(y_i \le g_k \mid z_i) = \sigma(c_k - z_i^\top\beta), \qquad k = 0, \dots, K-2,

a semi-parametric *transformation model*: :math:`\sigma^{-1}(P(y \le g_k)) = c_k - z^\top\beta`
with a free monotone :math:`c`, so the column's marginal shape (skew, heavy tails, heaping on
whole tens of pounds, a favourite height) is whatever the data say, while the predictors shift
it on the logit scale (Liu, Shepherd, Li and Harrell 2017, *Modeling continuous response
variables using ordinal regression*, Statistics in Medicine 36, eq. 1; Harrell's ``orm``).
Parametric families cannot follow such shapes, and a classifier (synthpop's CART propensity
score) tells their draws from real values by them; a tree synthesizer reproduces them by
resampling real values, which the CPM does through probabilities under the accountant.

Differences from :class:`~pseudopost.models.parts.ordinal.OrdinalPart` (same likelihood, same
three-term :math:`\log P`, same gradient and exact Hessian):

* **Prior centres** :math:`\mu_k = \mathrm{logit}((k+1)/K)`: equal probabilities of the K points
  at :math:`z^\top\beta = 0`, so the prior spans :math:`\pm\log K` on the logit scale whatever
  K is (the ordinal part's centres :math:`k - (K-2)/2` would span :math:`\pm K/2`, hundreds of
  logits for a grid of hundreds of points). ``cutpoints`` ~ N(mu, (2s)^2) under the ordered
  transform, ``beta`` ~ N(0, s^2), s = 2.5 by default. Grid points no record holds get their
  probability from the prior and the ordering alone: small, and never zero.
* **Sparse statistics.** A record holds one point, so the grouped statistics are keyed by
  (design row, point): ``rows`` (U, p + 1), the design row with the point's index appended,
  and ``w`` (U) the weights summed per key. Cost follows the number of occupied keys, not
  (design rows x K); blocks add like every part's (:class:`~pseudopost.models.parts.base.
  Stats`).
* **Cutpoints hang off the middle** (transform ``ordered_mid``): the free coordinates are the
  middle cutpoint :math:`c_a` and the log-gaps away from it, :math:`c_k = c_a + \sum_{a<i\le k}
  e^{x_i}` above and :math:`c_k = c_a - \sum_{k\le i<a} e^{x_i}` below (log-Jacobian
  :math:`\sum_{i \ne a} x_i`). Under the usual ordered transform (:math:`c_k = x_0 +
  \sum_{i \le k} e^{x_i}`) every cutpoint the data pin is a sum through the lowest one, so the
  gaps of empty tail points, which the likelihood leaves to the prior, form a curved ridge with
  them (390 leapfrog steps per draw for YRBSS height on [1.0, 2.3] m); anchored in the middle,
  the tails' gaps move only the tails' cutpoints (13 steps).
* **Inversion** by bisection: the smallest k with :math:`c_k \ge \eta + \mathrm{logit}(u)`
  (equivalently :math:`\sigma(c_k - \eta) \ge u`), :math:`O(\log K)` per record.

**Privacy.** The grid and its bounds are declared (a codebook's facts), so the K points are
public; a record enters only through its likelihood term :math:`\log P(y_i)\le 0`, which the
risk step and the accountant use as for every part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from scipy import sparse, special

from pseudopost.models.parts._fused import cumulative_loglik_grad, sparse_rows
from pseudopost.models.parts._math import expit, log1mexp, log_sigmoid
from pseudopost.models.parts.base import group_rows
from pseudopost.models.parts.ordinal import OrdinalPart

__all__ = ["FUSED_KEYS", "BinnedPart", "CumulativePart"]

#: keys from which the log-likelihood and gradient run in one Numba pass
FUSED_KEYS = 2_000


def _key_logp(cut: np.ndarray, eta: np.ndarray, lev: np.ndarray) -> np.ndarray:
    """log P(level ``lev``) (B, U) for cutpoints ``cut`` (B, K-1), ``eta`` (B, U) and levels
    ``lev`` (U), one level per key (the three-term form of the ordinal part's module docstring)."""
    m = cut.shape[-1]
    first, last = lev == 0, lev == m
    hi = np.minimum(lev, m - 1)  # a = c_k - eta (level k < m)
    lo = np.maximum(lev - 1, 0)  # b = c_{k-1} - eta (level k > 0)
    a = np.take(cut, hi, axis=-1) - eta
    b = np.take(cut, lo, axis=-1) - eta
    gap = np.take(cut, hi, axis=-1) - np.take(cut, lo, axis=-1)
    inner = log_sigmoid(a) + log_sigmoid(-b) + log1mexp(-np.where(first | last, 1.0, gap))
    return np.where(first, log_sigmoid(a), np.where(last, log_sigmoid(-b), inner))


@dataclass(frozen=True)
class CumulativePart(OrdinalPart):
    """Ordered logit over the ``n_levels`` points of a bounded grid (module docstring).
    Parameters ``cutpoints`` (K-1, ordered), ``beta``; outcome: the point's index 0..K-1."""

    #: Numba kernel (True), NumPy (False) or by size (None: from FUSED_KEYS keys)
    fused: bool | None = field(default=None, kw_only=True, compare=False)

    family = "cumulative"
    has_hessian = True
    cut_transform: ClassVar[str] = "ordered_mid"  # the middle cutpoint, gaps hang off it

    @property
    def centres(self) -> np.ndarray:
        k = self.n_levels
        return special.logit(np.arange(1, k) / k)

    def _statistics(self, y, X, w) -> dict:
        rows, inv = group_rows(np.column_stack([X, y]))
        return {"rows": rows, "w": np.bincount(inv, weights=w, minlength=rows.shape[0])}

    def _terms(self, values, arrays):
        """Per key: (count, design row, a, b, first, last, gap, level k or m-1, k-1 or 0)."""
        rows, cnt = arrays["rows"], arrays["w"]
        c = values["cutpoints"]
        m = c.size
        X = rows[:, : self.p]
        lev = rows[:, self.p].astype(np.int64)
        eta = X @ values["beta"] if self.p else np.zeros(rows.shape[0])
        first, last = lev == 0, lev == m
        hi, lo = np.minimum(lev, m - 1), np.maximum(lev - 1, 0)
        a, b = c[hi] - eta, c[lo] - eta
        gap = np.where(first | last, 1.0, c[hi] - c[lo])
        return cnt, X, a, b, first, last, gap, hi, lo

    def _use_fused(self, arrays) -> bool:
        return self.fused if self.fused is not None else arrays["w"].size >= FUSED_KEYS

    def derived(self, arrays):
        """The design's non-zeros (:func:`~pseudopost.models.parts._fused.sparse_rows`) when
        the Numba kernel runs."""
        return sparse_rows(arrays["rows"][:, : self.p]) if self._use_fused(arrays) else {}

    def _loglik_grad(self, values, arrays):
        if self._use_fused(arrays):
            beta = values["beta"] if self.p else np.zeros(0)
            ll, gc, gb = cumulative_loglik_grad(
                arrays["rows"], arrays["w"], values["cutpoints"], beta,
                sparse=arrays if "rows_ptr" in arrays else None,
            )  # fmt: skip
            return ll, ({"cutpoints": gc, "beta": gb} if self.p else {"cutpoints": gc})
        cnt, X, a, b, first, last, gap, hi, lo = self._terms(values, arrays)
        m = values["cutpoints"].size
        ls_a, ls_nb = log_sigmoid(a), log_sigmoid(-b)
        logp = np.where(first, ls_a, np.where(last, ls_nb, ls_a + ls_nb + log1mexp(-gap)))
        ll = float(np.sum(cnt * logp))
        r = np.where(first | last, 0.0, 1.0 / np.expm1(gap))
        da = np.where(last, 0.0, expit(-a) + r) * cnt  # d log P / d a  (a = c_k - eta)
        db = np.where(first, 0.0, -expit(b) - r) * cnt  # d log P / d b  (b = c_{k-1} - eta)
        g = np.bincount(hi, weights=da, minlength=m) + np.bincount(lo, weights=db, minlength=m)
        grads = {"cutpoints": g}
        if self.p:
            grads["beta"] = -(da + db) @ X
        return ll, grads

    def _loglik_hess(self, values, arrays):
        cnt, X, a, b, first, last, gap, hi, lo = self._terms(values, arrays)
        m, p = values["cutpoints"].size, self.p
        r = np.where(first | last, 0.0, 1.0 / np.expm1(gap))
        t = r * (1.0 + r)
        haa = np.where(last, 0.0, -expit(a) * expit(-a) - t) * cnt
        hbb = np.where(first, 0.0, -expit(b) * expit(-b) - t) * cnt
        hab = t * cnt  # zero unless the level is inner
        H = np.zeros((m + p, m + p))
        hcc = np.diag(np.bincount(hi, weights=haa, minlength=m)
                      + np.bincount(lo, weights=hbb, minlength=m))  # fmt: skip
        inner = ~(first | last)
        off = np.bincount(hi[inner], weights=hab[inner], minlength=m)  # (k, k-1) pairs
        k = np.arange(1, m)
        hcc[k, k - 1] += off[1:]
        hcc[k - 1, k] += off[1:]
        H[:m, :m] = hcc
        if p:
            # d a/d beta = d b/d beta = -x: rows of c_k get -(haa + hab) x, of c_{k-1} -(hab + hbb) x
            n = cnt.size
            Sa = sparse.csr_matrix((-(haa + hab), (hi, np.arange(n))), shape=(m, n))
            Sb = sparse.csr_matrix((-(hab + hbb), (lo, np.arange(n))), shape=(m, n))
            H[:m, m:] = np.asarray((Sa + Sb) @ X)
            H[m:, :m] = H[:m, m:].T
            H[m:, m:] = X.T @ (X * (haa + 2.0 * hab + hbb)[:, None])
        return H

    def _key_table(self, params, rows, key_row, key_y):
        eta = self.eta_blocks(params, rows)
        return _key_logp(params["cutpoints"], eta[:, key_row], key_y.astype(np.int64))

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        eta = X @ params["beta"] if self.p else np.zeros(u.size)
        # sigma(c_k - eta) >= u  <=>  c_k >= eta + logit(u): the first such k (K-1 if none)
        return np.searchsorted(params["cutpoints"], eta + special.logit(u), side="left").astype(
            np.float64
        )

    def ready_model(self):
        raise NotImplementedError(
            "The cumulative part has no ready model (its prior centres differ from the ordinal "
            "model's); its density is checked against the ordinal part's likelihood."
        )


@dataclass(frozen=True)
class BinnedPart(CumulativePart):
    r"""A histogram density over public bins: the cumulative part over B declared bins
    :math:`[e_j, e_{j+1})`, uniform inside each,

    .. math::
        f(y \mid z) = \frac{P(y \in [e_j, e_{j+1}) \mid z)}{e_{j+1} - e_j},
        \qquad \log f = \log P(\text{bin}) - \log w_j,

    with :math:`P(\text{bin})` the ordered logit of :class:`CumulativePart` (prior, sparse
    statistics, gradient and Hessian unchanged: :math:`-\log w_j` is a constant of the data).
    For near-continuous columns whose shape no parametric family follows (a survey's sampling
    weight, amounts that take a few hundred values): the bins' probabilities are free, the
    predictors shift them. Outcome: the bin's index; synthesis draws the bin, then a uniform
    position in it (:mod:`pseudopost.models.file.plan`). ``log_widths``: :math:`\log w_j`.
    """

    log_widths: tuple = field(default=(), kw_only=True)

    family = "binned"

    def __post_init__(self) -> None:
        super().__post_init__()
        lw = np.asarray(self.log_widths, dtype=np.float64)
        if lw.shape != (self.n_levels,) or not np.all(np.isfinite(lw)):
            raise ValueError(
                f"Part '{self.name}': 'log_widths' must hold {self.n_levels} finite numbers (one "
                f"per bin). Got {self.log_widths!r}."
            )

    def _loglik_grad(self, values, arrays):
        ll, grads = super()._loglik_grad(values, arrays)
        lev = arrays["rows"][:, self.p].astype(np.int64)
        return ll - float(arrays["w"] @ np.asarray(self.log_widths)[lev]), grads

    def _key_table(self, params, rows, key_row, key_y):
        table = super()._key_table(params, rows, key_row, key_y)
        return table - np.asarray(self.log_widths)[key_y.astype(np.int64)]
