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
* **Location-scale** (``scaled=True``; the file models' default, McCullagh 1980, *Regression
  models for ordinal data*, JRSS B 42, eq. 4.1; ``ordinal::clm(scale = ~ z)``): the predictors
  move the spread as well as the location,

  .. math::
      P(y_i \le g_k \mid z_i) = \sigma\big((c_k - z_i^\top\beta)\, e^{-z_i^\top\gamma}\big),

  ``gamma`` ~ N(0, (0.4 s)^2) on the same design (no intercept: the cutpoints hold the overall
  spread). With :math:`a = (c_k - \eta) e^{-\zeta}`, :math:`b = (c_{k-1} - \eta) e^{-\zeta}`
  (:math:`\zeta = z^\top\gamma`, so :math:`a - b = (c_k - c_{k-1}) e^{-\zeta} > 0`) the
  three-term :math:`\log P` and its derivatives in a and b are the ordinal part's, and
  :math:`\partial a/\partial c_k = e^{-\zeta}`, :math:`\partial a/\partial\beta =
  -z e^{-\zeta}`, :math:`\partial a/\partial\gamma = -a z` (the same for b). A shift alone
  makes every group's distribution the same shape moved along the logit scale; where groups
  differ in spread (weights of tall and short pupils, hours of part-time and salaried
  occupations) a classifier tells the synthetic values from the real ones by it. The exact
  Hessian (:meth:`CumulativePart._loglik_hess`) lets the preconditioner find the mode by Newton
  steps (:mod:`pseudopost.fitting.laplace`); from gradient differences alone its start was so
  far from the mode (10^4 below it in log density for YRBSS weight) that NUTS took 67 leapfrog
  steps per draw instead of 15.
* **Centred spread** (``scale_centre`` :math:`z_0`, public): :math:`\zeta = (z -
  z_0)^\top\gamma`. The same family (at :math:`(c, \beta, \gamma)` it is the uncentred
  part at :math:`(c e^{z_0^\top\gamma}, \beta e^{z_0^\top\gamma}, \gamma)`); only the
  priors' meaning moves, to the spread at :math:`z_0`. A whole file's design holds, for each
  numeric predictor, hat functions that with its status indicators sum to 1 on nearly every
  record (:meth:`Design.scale_centre <pseudopost.models.file.design.Design.scale_centre>`),
  so uncentred, :math:`(c, \beta, \gamma) \to (e^g c, e^g \beta, \gamma + g v)` along
  that combination v barely changes the likelihood: a curved ridge that a Laplace whitening
  cannot straighten, where short-tree NUTS runs got stuck and were drawn twice. With
  :math:`z_0` at 1/h on each of a column's h hats, v leaves the likelihood unchanged and is
  left to its prior: in CPS 1991's whole-file fit (seed 1) the age and family income parts,
  drawn twice without mixing before (R-hat 1.05-1.06, least bulk ESS 32-34 of 500), mix in
  one short-tree run; its near-deterministic parts (experience, non-wife income) do not
  mix either way.
* **Inversion** by bisection: the smallest k with :math:`c_k \ge \eta + e^{\zeta}
  \mathrm{logit}(u)` (equivalently :math:`\sigma((c_k - \eta) e^{-\zeta}) \ge u`),
  :math:`O(\log K)` per record.

**Privacy.** The grid and its bounds are declared (a codebook's facts), so the K points are
public; a record enters only through its likelihood term :math:`\log P(y_i)\le 0`, which the
risk step and the accountant use as for every part.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar

import numpy as np
from scipy import sparse, special

from pseudopost.models.parts._fused import cumulative_loglik_grad, sparse_rows
from pseudopost.models.parts._math import expit, log1mexp, log_sigmoid
from pseudopost.models.parts.data import group_rows
from pseudopost.models.parts.layout import Layout, Param
from pseudopost.models.parts.ordinal import OrdinalPart, linear_blocks

__all__ = ["FUSED_KEYS", "BinnedPart", "CumulativePart"]

#: keys from which the log-likelihood and gradient run in one Numba pass: every part with
#: records (as :data:`~pseudopost.models.parts._fused.FUSED_MIN`, and for the same reason)
FUSED_KEYS = 1


def _key_logp(
    cut: np.ndarray, eta: np.ndarray, lev: np.ndarray, scale: np.ndarray | float = 1.0
) -> np.ndarray:
    """log P(level ``lev``) (B, U) for cutpoints ``cut`` (B, K-1), ``eta`` (B, U), levels
    ``lev`` (U), one level per key, and ``scale`` :math:`e^{-\\zeta}` (B, U) (the three-term form
    of the ordinal part's module docstring in the scaled a and b)."""
    m = cut.shape[-1]
    first, last = lev == 0, lev == m
    hi = np.minimum(lev, m - 1)  # a = (c_k - eta) e^{-zeta} (level k < m)
    lo = np.maximum(lev - 1, 0)  # b = (c_{k-1} - eta) e^{-zeta} (level k > 0)
    a = (np.take(cut, hi, axis=-1) - eta) * scale
    b = (np.take(cut, lo, axis=-1) - eta) * scale
    gap = (np.take(cut, hi, axis=-1) - np.take(cut, lo, axis=-1)) * scale
    inner = log_sigmoid(a) + log_sigmoid(-b) + log1mexp(-np.where(first | last, 1.0, gap))
    return np.where(first, log_sigmoid(a), np.where(last, log_sigmoid(-b), inner))


@dataclass(frozen=True)
class CumulativePart(OrdinalPart):
    """Ordered logit over the ``n_levels`` points of a bounded grid (module docstring).
    Parameters ``cutpoints`` (K-1, ordered), ``beta`` and, when ``scaled`` and there are
    predictors, ``gamma`` (the log-spread's coefficients); outcome: the point's index 0..K-1."""

    #: Numba kernel (True), NumPy (False) or by size (None: from FUSED_KEYS keys)
    fused: bool | None = field(default=None, kw_only=True, compare=False)
    #: location-scale: the predictors move the spread too (module docstring)
    scaled: bool = field(default=False, kw_only=True)
    #: the log-spread's design centre :math:`z_0` (p values, public; empty: 0), so that
    #: :math:`\zeta = (z - z_0)^\top\gamma` (module docstring, *Centred spread*)
    scale_centre: tuple[float, ...] = field(default=(), kw_only=True)

    family = "cumulative"
    has_hessian = True
    cut_transform: ClassVar[str] = "ordered_mid"  # the middle cutpoint, gaps hang off it
    #: gamma's prior sd in multiples of ``prior_scale`` (1 by default: one unit of a predictor
    #: widens the spread by e at one sd; a level held by a handful of records cannot)
    gamma_scale: ClassVar[float] = 0.4

    def __post_init__(self) -> None:
        super().__post_init__()
        c = self.scale_centre
        if len(c) and (len(c) != self.p or not np.all(np.isfinite(np.asarray(c, dtype=float)))):
            raise ValueError(
                f"Part '{self.name}': scale_centre must hold {self.p} finite values (one per "
                f"predictor) or none. Got {list(c)}."
            )

    @property
    def has_scale(self) -> bool:
        """Whether the part has ``gamma`` (``scaled`` and at least one predictor)."""
        return self.scaled and self.p > 0

    @property
    def centre(self) -> np.ndarray:
        """:math:`z_0` (p,) of :attr:`scale_centre`, zeros when none is set."""
        c = self.scale_centre
        return np.asarray(c, dtype=np.float64) if len(c) else np.zeros(self.p)

    def _zeta(self, X: np.ndarray, gamma: np.ndarray) -> np.ndarray:
        r""":math:`(z - z_0)^\top\gamma` of design rows ``X`` (n, p) and ``gamma`` (p,)."""
        return X @ gamma - self.centre @ gamma

    @property
    def centres(self) -> np.ndarray:
        k = self.n_levels
        return special.logit(np.arange(1, k) / k)

    @cached_property
    def layout(self) -> Layout:
        base = super().layout
        if not self.has_scale:
            return base
        gamma = Param(
            "gamma", (self.p,), prior=("normal", 0.0, self.gamma_scale * self.prior_scale)
        )
        return Layout((*base.params, gamma))

    def dims(self):
        out = super().dims()
        return {**out, "gamma": ("predictor",)} if self.has_scale else out

    def nested(self):
        """The shift-only part (gamma = 0), whose log density is concave: the location-scale
        mode search starts from its mode."""
        if not self.has_scale:
            return None
        zero = np.zeros(self.p)
        return replace(self, scaled=False), lambda values: {**values, "gamma": zero}

    def _statistics(self, y, X, w) -> dict:
        rows, inv = group_rows(np.column_stack([X, y]))
        return {"rows": rows, "w": np.bincount(inv, weights=w, minlength=rows.shape[0])}

    def _terms(self, values, arrays):
        """Per key: (count, design row, a, b, first, last, gap = a - b, level k or m-1, k-1 or
        0, scale e^{-zeta}) (module docstring; scale 1 without ``gamma``)."""
        rows, cnt = arrays["rows"], arrays["w"]
        c = values["cutpoints"]
        m = c.size
        X = rows[:, : self.p]
        lev = rows[:, self.p].astype(np.int64)
        eta = X @ values["beta"] if self.p else np.zeros(rows.shape[0])
        s = np.exp(-self._zeta(X, values["gamma"])) if self.has_scale else 1.0
        first, last = lev == 0, lev == m
        hi, lo = np.minimum(lev, m - 1), np.maximum(lev - 1, 0)
        a, b = (c[hi] - eta) * s, (c[lo] - eta) * s
        gap = np.where(first | last, 1.0, (c[hi] - c[lo]) * s)
        return cnt, X, a, b, first, last, gap, hi, lo, s

    def _use_fused(self, arrays) -> bool:
        return self.fused if self.fused is not None else arrays["w"].size >= FUSED_KEYS

    def derived(self, arrays):
        """The design's non-zeros (``sparse_rows``) when
        the Numba kernel runs."""
        return sparse_rows(arrays["rows"][:, : self.p]) if self._use_fused(arrays) else {}

    def _loglik_grad(self, values, arrays):
        if self._use_fused(arrays):
            beta = values["beta"] if self.p else np.zeros(0)
            gamma = values["gamma"] if self.has_scale else np.zeros(0)
            ll, gc, gb, gg = cumulative_loglik_grad(
                arrays["rows"], arrays["w"], values["cutpoints"], beta, gamma,
                sparse=arrays if "rows_ptr" in arrays else None,
                centre=self.centre if self.has_scale else None,
            )  # fmt: skip
            grads = {"cutpoints": gc, "beta": gb, "gamma": gg}
            return ll, {k: grads[k] for k in self.layout.names}
        cnt, X, a, b, first, last, gap, hi, lo, s = self._terms(values, arrays)
        m = values["cutpoints"].size
        ls_a, ls_nb = log_sigmoid(a), log_sigmoid(-b)
        logp = np.where(first, ls_a, np.where(last, ls_nb, ls_a + ls_nb + log1mexp(-gap)))
        ll = float(np.sum(cnt * logp))
        r = np.where(first | last, 0.0, 1.0 / np.expm1(gap))
        da = np.where(last, 0.0, expit(-a) + r) * cnt  # d log P / d a
        db = np.where(first, 0.0, -expit(b) - r) * cnt  # d log P / d b
        g = np.bincount(hi, weights=da * s, minlength=m) + np.bincount(
            lo, weights=db * s, minlength=m
        )
        grads = {"cutpoints": g}
        if self.p:
            grads["beta"] = -((da + db) * s) @ X
        if self.has_scale:  # d a / d gamma = -a (z - z0) (a, b finite: clipped levels)
            grads["gamma"] = -(da * a + db * b) @ (X - self.centre)
        return ll, grads

    def _loglik_hess(self, values, arrays):
        """Exact Hessian in (cutpoints, beta, gamma): with :math:`G_a`, :math:`G_b` the
        gradients of a and b, :math:`\\sum [\\ell_{aa} G_a G_a^\\top + \\ell_{bb} G_b G_b^\\top +
        \\ell_{ab}(G_a G_b^\\top + G_b G_a^\\top)] + \\ell_a \\nabla^2 a + \\ell_b \\nabla^2 b`
        (:math:`\\nabla^2 a` is non-zero in the gamma rows only: :math:`\\partial^2 a /
        \\partial c_k \\partial\\gamma = -s z`, :math:`\\partial^2 a / \\partial\\beta
        \\partial\\gamma = s z z^\\top`, :math:`\\partial^2 a / \\partial\\gamma^2 = a z z^\\top`)."""
        cnt, X, a, b, first, last, gap, hi, lo, s = self._terms(values, arrays)
        m, p = values["cutpoints"].size, self.p
        r = np.where(first | last, 0.0, 1.0 / np.expm1(gap))
        t = r * (1.0 + r)
        haa = np.where(last, 0.0, -expit(a) * expit(-a) - t) * cnt
        hbb = np.where(first, 0.0, -expit(b) * expit(-b) - t) * cnt
        hab = t * cnt  # zero unless the level is inner
        s2 = s * s
        q = 2 * p if self.has_scale else p
        H = np.zeros((m + q, m + q))
        hcc = np.diag(np.bincount(hi, weights=haa * s2, minlength=m)
                      + np.bincount(lo, weights=hbb * s2, minlength=m))  # fmt: skip
        inner = ~(first | last)
        off = np.bincount(hi[inner], weights=(hab * s2)[inner], minlength=m)  # (k, k-1) pairs
        k = np.arange(1, m)
        hcc[k, k - 1] += off[1:]
        hcc[k - 1, k] += off[1:]
        H[:m, :m] = hcc
        if not p:
            return H
        n = cnt.size

        def rows_of(w_hi, w_lo, M=X):  # sum over keys of w_hi e_hi m^T + w_lo e_lo m^T
            S = sparse.csr_matrix((w_hi, (hi, np.arange(n))), shape=(m, n))
            S = S + sparse.csr_matrix((w_lo, (lo, np.arange(n))), shape=(m, n))
            return np.asarray(S @ M)

        def gram(w, left=X, right=X):
            return left.T @ (right * w[:, None])

        # d a/d beta = d b/d beta = -s x
        B = slice(m, m + p)
        H[:m, B] = rows_of(-(haa + hab) * s2, -(hab + hbb) * s2)
        H[B, B] = gram((haa + 2.0 * hab + hbb) * s2)
        if self.has_scale:  # d a/d gamma = -a (x - x0), d b/d gamma = -b (x - x0)
            da = np.where(last, 0.0, expit(-a) + r) * cnt
            db = np.where(first, 0.0, -expit(b) - r) * cnt
            G = slice(m + p, m + 2 * p)
            Xc = X - self.centre
            H[:m, G] = rows_of(-s * (haa * a + hab * b + da), -s * (hbb * b + hab * a + db), Xc)
            H[B, G] = gram(s * (haa * a + hbb * b + hab * (a + b) + da + db), X, Xc)
            H[G, G] = gram(haa * a * a + hbb * b * b + 2.0 * hab * a * b + da * a + db * b, Xc, Xc)
            H[G, :m] = H[:m, G].T
            H[G, B] = H[B, G].T
        H[B, :m] = H[:m, B].T
        return H

    def _key_table(self, params, rows, key_row, key_y):
        eta = self.eta_blocks(params, rows)
        if self.has_scale:  # e^{-zeta} per row, zeta = (z - z0)^T gamma (block-invariant)
            zeta = linear_blocks(params["gamma"], rows) - (params["gamma"] @ self.centre)[:, None]
            scale = np.exp(-zeta)[:, key_row]
        else:
            scale = 1.0
        return _key_logp(params["cutpoints"], eta[:, key_row], key_y.astype(np.int64), scale)

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        eta = X @ params["beta"] if self.p else np.zeros(u.size)
        t = special.logit(u)
        if self.has_scale:
            t = t * np.exp(self._zeta(X, params["gamma"]))
        # sigma((c_k - eta) e^{-zeta}) >= u  <=>  c_k >= eta + e^{zeta} logit(u): the first such
        # k (K-1 if none)
        return np.searchsorted(params["cutpoints"], eta + t, side="left").astype(np.float64)

@dataclass(frozen=True)
class BinnedPart(CumulativePart):
    r"""A histogram density over public bins: the cumulative part over B declared bins
    :math:`[e_j, e_{j+1})`, uniform inside each,

    .. math::
        f(y \mid z) = \frac{P(y \in [e_j, e_{j+1}) \mid z)}{e_{j+1} - e_j},

    with :math:`P(\text{bin})` the ordered logit of :class:`CumulativePart` (prior, sparse
    statistics, gradient and Hessian unchanged). For near-continuous columns whose shape no
    parametric family follows (a survey's sampling weight, amounts that take a few hundred
    values): the bins' probabilities are free, the predictors shift them. Outcome: the bin's
    index; synthesis draws the bin, then a uniform position in it (``pseudopost.models.file.
    plan``).

    **The record's log-likelihood is the bin's log mass** :math:`\log P(\text{bin} \mid z)`,
    not the log density :math:`\log P(\text{bin}) - \log w_j`. The posterior and the synthetic
    data depend on a record's value only through its bin (the position in a bin is drawn
    uniformly, whatever the data), so the mechanism is one on the binned data, a record-wise map
    under which add/remove neighbours stay neighbours; and the pseudo posterior's privacy loss
    (Savitsky, Williams & Hu 2022, Theorem 1: the log ratio of the weighted posteriors of
    neighbours) is unchanged by a factor of :math:`p(x_i \mid \theta)` free of
    :math:`\theta`, which cancels between the weighted likelihood and its normaliser. The
    accountant's bound :math:`\sup_\theta |\alpha_i f_\theta(x_i)|` holds for either version
    and is tighter for the mass (:math:`\le 0`); with the density, :math:`-\log w_j` of a wide
    tail bin (9 to 11 nats for amounts in the tens of thousands) entered every record's risk and
    bound as if it were disclosure, so the risk weights pushed the records of wide bins towards 0
    and their mass into the narrow bins beside them. ``log_widths`` (:math:`\log w_j`) are kept
    for the density, :meth:`log_density_values`.
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

    def log_density_values(self, loglik: np.ndarray, y: np.ndarray) -> np.ndarray:
        r"""The log density :math:`\log P(\text{bin}) - \log w_j` of values in bins ``y`` from
        their log mass ``loglik`` (the part's :meth:`loglik`; class docstring)."""
        return np.asarray(loglik) - np.asarray(self.log_widths)[np.asarray(y, dtype=np.int64)]
