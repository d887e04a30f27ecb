r"""Fused log-likelihood, gradient and Hessian of the grouped GLM parts (NumPy and Numba).

One pass over the design patterns g computes, for the multinomial logit (level 0 the
reference, :math:`\tilde x_g = (1, x_g)`, :math:`B` the (p+1, K-1) coefficients),

.. math::
    \eta_{gk} = \tilde x_g^\top B_{\cdot k}, \quad
    \mathrm{lse}_g = \log\Bigl(1 + \sum_{k \ge 1} e^{\eta_{gk}}\Bigr), \quad
    \ell = \sum_g \Bigl[\sum_{k \ge 1} C_{gk}\eta_{gk} - W_g\,\mathrm{lse}_g\Bigr], \quad
    \frac{\partial\ell}{\partial B_{jk}} = \sum_g \tilde x_{gj}\,(C_{gk} - W_g\,p_{gk}),

and the Hessian

.. math::
    \frac{\partial^2\ell}{\partial B_{ak}\,\partial B_{bl}}
    = -\sum_g W_g\,\tilde x_{ga}\tilde x_{gb}\,(p_{gk}\delta_{kl} - p_{gk}p_{gl});

for the logistic regression (:math:`Y_g` the weighted successes)
:math:`\ell = \sum_g [Y_g\eta_g - W_g\,\mathrm{softplus}(\eta_g)]`, gradient
:math:`\sum_g \tilde x_g (Y_g - W_g\sigma(\eta_g))`, Hessian
:math:`-\sum_g W_g\sigma(\eta_g)\sigma(-\eta_g)\,\tilde x_g\tilde x_g^\top`.

The Numba kernels hold no (U, K) temporaries and read the design's non-zeros only (one-hot
levels of earlier columns make most of a row zero; :func:`sparse_rows`, computed once per
statistics and passed beside them), so their cost follows the non-zeros; they run on every
part with records (:data:`FUSED_MIN`; ``cache=True``: a fresh process loads the compiled
kernels from disk). The NumPy code below is the reference they are tested against.
Both are sequential: the same input gives the same sums on every run, whatever the number of
threads. The kernels release the GIL (``nogil``), so parts fitted in parallel threads
(:class:`~pseudopost.fitting.columns.ColumnSampler`) evaluate their gradients at the same time;
they do not use Numba's ``prange`` (its default ``workqueue`` threading layer aborts when two
threads launch parallel kernels at once).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Mapping

import numpy as np
from numba import njit
from scipy.special import expit as _expit

__all__ = [
    "FUSED_MIN",
    "SPARSE_KEYS",
    "TABLE_MIN",
    "bernoulli_hessian",
    "bernoulli_loglik_grad",
    "categorical_hessian",
    "categorical_loglik_grad",
    "categorical_table",
    "cumulative_loglik_grad",
    "linear_rows",
    "sparse_rows",
    "use_fused",
    "use_fused_table",
]

#: patterns x (columns + 1) x levels above which the Numba kernels run: all parts with
#: records. They were kept for parts above 20,000 once, but the NumPy code holds the GIL, and
#: with nutpie's chains and the parts on threads a GIL-bound gradient runs one at a time: on
#: the German credit file (800 records, 20 parts of 20 to 161 parameters, each 0.2 to 0.6 ms
#: a gradient in NumPy, 0.1 to 0.3 ms in Numba) the whole synthesis took 80 s by size and 47 s
#: with the kernels throughout (and 65 s by size on one worker, faster than on two)
FUSED_MIN = 0
#: predictors x (levels - 1) from which a multinomial logit's per-key tables run in Numba
TABLE_MIN = 64


def use_fused(rows: np.ndarray, n_levels: int, fused: bool | None) -> bool:
    """Whether to run the Numba kernel (``fused`` None: by size, :data:`FUSED_MIN`)."""
    if fused is not None:
        return bool(fused)
    return rows.shape[0] * (rows.shape[1] + 1) * n_levels > FUSED_MIN


# ------------------------------------------------------------------------- sparse rows
#: names of the design rows' non-zeros among a density's arrays (:func:`sparse_rows`)
SPARSE_KEYS = ("rows_ptr", "rows_col", "rows_val")


@njit(cache=True, nogil=True)
def _csr(rows):  # pragma: no cover - compiled
    u, p = rows.shape
    ptr = np.zeros(u + 1)
    n = 0
    for g in range(u):
        for j in range(p):
            if rows[g, j] != 0.0:
                n += 1
        ptr[g + 1] = n
    col = np.empty(n)
    val = np.empty(n)
    t = 0
    for g in range(u):
        for j in range(p):
            if rows[g, j] != 0.0:
                col[t] = j
                val[t] = rows[g, j]
                t += 1
    return ptr, col, val


def sparse_rows(rows: np.ndarray) -> dict[str, np.ndarray]:
    """The non-zeros of ``rows`` (U, p) by row (compressed sparse rows, all float64 so that they
    travel as nutpie shared data): ``rows_ptr`` (U + 1) offsets, ``rows_col`` column indices and
    ``rows_val`` values (row g's are at ``rows_ptr[g]:rows_ptr[g + 1]``, columns increasing)."""
    ptr, col, val = _csr(np.ascontiguousarray(rows, dtype=np.float64))
    return dict(zip(SPARSE_KEYS, (ptr, col, val), strict=True))


#: the non-zeros of read-only design rows, by the array's identity (a weak reference checks it
#: is the same array): an accountant evaluates the same encoded rows (read-only,
#: :meth:`Part.encode <pseudopost.models.parts.base.Part.encode>`) for every block of draws,
#: one draw a block on Adult, where scanning 39,000 rows x 60 to 130 predictors for their
#: non-zeros cost as much as the table itself
_SPARSE_CACHE: dict[int, tuple[weakref.ref, tuple]] = {}
_SPARSE_LOCK = threading.Lock()


def _sparse(rows, sparse):
    if sparse is not None:
        return tuple(np.ascontiguousarray(sparse[k], dtype=np.float64) for k in SPARSE_KEYS)
    if rows.flags.writeable or not (rows.flags.c_contiguous and rows.dtype == np.float64):
        return _csr(np.ascontiguousarray(rows, dtype=np.float64))
    key = id(rows)
    with _SPARSE_LOCK:
        hit = _SPARSE_CACHE.get(key)
    if hit is not None and hit[0]() is rows:
        return hit[1]
    value = _csr(rows)
    for v in value:
        v.flags.writeable = False
    ref = weakref.ref(rows, lambda _, key=key: _SPARSE_CACHE.pop(key, None))
    with _SPARSE_LOCK:
        _SPARSE_CACHE[key] = (ref, value)
    return value


# ------------------------------------------------------------------------- exp in lanes
#: the lanes the multinomial kernel works in: its K - 1 linear predictors padded to a multiple
#: of this, so that every loop over them has a whole number of vector widths
LANES = 8
#: the least number of levels besides the reference at which the lanes run (one whole width)
LANES_MIN = 8
_LOG2E = 1.4426950408889634
#: ln 2 split in a high part whose products with |k| <= 1100 are exact, and the rest
_LN2_HI, _LN2_LO = 0.6931471803691238, 1.9082149292705877e-10
#: below this exp underflows (exp(-708.39) is the least normal double)
_EXP_LOW = -708.0
#: 1 / j! for j = 0, ..., 12 (the Taylor coefficients of e^r below the last)
_INV_FACTORIAL = (1.0, 1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0,
                  1.0 / 40320.0, 1.0 / 362880.0, 1.0 / 3628800.0, 1.0 / 39916800.0,
                  1.0 / 479001600.0)  # fmt: skip


@njit(cache=True, nogil=True, inline="always")
def _exp_lanes(x, out, bits):  # pragma: no cover - compiled
    r"""``out[c] = exp(x[c])`` for :math:`x_c \le 0` (a NaN stays NaN; below
    :data:`_EXP_LOW` the value of :data:`_EXP_LOW`, under 3.4e-308), written so that the
    compiler vectorises it (``math.exp`` is a scalar call per lane): :math:`e^x = 2^k e^r` with
    :math:`k = \mathrm{round}(x / \ln 2)`, :math:`|r| \le \ln 2 / 2` (Cody and Waite's split
    of :math:`\ln 2`), :math:`e^r` its Taylor polynomial of degree 13 (truncation below
    :math:`5 \cdot 10^{-18}` relative) and :math:`2^k` built in the exponent bits (``bits``, an
    int64 scratch of ``out``'s size). Within 2.3e-16 relative of ``math.exp``."""
    fb = bits.view(np.float64)
    for c in range(x.shape[0]):
        xc = x[c]
        xc = _EXP_LOW if xc < _EXP_LOW else xc
        kf = np.floor(xc * _LOG2E + 0.5)
        kf = kf if kf >= -1100.0 else -1100.0  # a NaN: any finite k (its r is NaN)
        r = (xc - kf * _LN2_HI) - kf * _LN2_LO
        bits[c] = (np.int64(kf) + 1023) << 52
        q = 1.0 / 6227020800.0  # Horner: sum of r^j / j! for j = 13, ..., 0
        for j in range(12, -1, -1):
            q = q * r + _INV_FACTORIAL[j]
        out[c] = q
    for c in range(x.shape[0]):
        out[c] *= fb[c]


# ------------------------------------------------------------------------- categorical
@njit(cache=True, nogil=True)
def _categorical_scalar(ptr, col, val, counts, intercept, beta):  # pragma: no cover - compiled
    """The multinomial kernel level by level (fewer than :data:`LANES_MIN` levels besides
    the reference)."""
    u = counts.shape[0]
    k = counts.shape[1]
    m = k - 1
    p = beta.shape[0]
    g_int = np.zeros(m)
    g_beta = np.zeros((p, m))
    eta = np.empty(m)
    e = np.empty(m)
    ll = 0.0
    for g in range(u):
        w = 0.0
        for c in range(k):
            w += counts[g, c]
        if w == 0.0:
            continue
        for c in range(m):
            eta[c] = intercept[c]
        lo, hi = int(ptr[g]), int(ptr[g + 1])
        for t in range(lo, hi):
            j = int(col[t])
            xj = val[t]
            for c in range(m):
                eta[c] += xj * beta[j, c]
        mx = 0.0
        for c in range(m):
            if eta[c] > mx:
                mx = eta[c]
        s = math.exp(-mx)
        for c in range(m):
            e[c] = math.exp(eta[c] - mx)
            s += e[c]
        lse = mx + math.log(s)
        if counts[g, 0] > 0.0:
            ll -= counts[g, 0] * lse
        ws = w / s
        for c in range(m):
            cg = counts[g, c + 1]
            if cg > 0.0:
                ll += cg * (eta[c] - lse)
            eta[c] = cg - ws * e[c]  # eta now holds d ll / d eta = C - W p
            g_int[c] += eta[c]
        for t in range(lo, hi):
            j = int(col[t])
            xj = val[t]
            for c in range(m):
                g_beta[j, c] += xj * eta[c]
    return ll, g_int, g_beta


@njit(cache=True, nogil=True)
def _categorical_kernel(ptr, col, val, counts, intercept, beta):  # pragma: no cover - compiled
    """(ll, gradient on the intercepts (K-1), on beta (p, K-1)) of the multinomial logit: in
    lanes (:func:`_categorical_lanes`) from :data:`LANES_MIN` levels besides the reference,
    level by level below (where the lanes' padding and their vector exponential cost more than
    they save: Adult's capital-gain status, 3 levels, 4.6 -> 6.4 ms a gradient in lanes;
    education, 16 levels, 6.2 -> 4.6 ms)."""
    if counts.shape[1] - 1 >= LANES_MIN:
        return _categorical_lanes(ptr, col, val, counts, intercept, beta)
    return _categorical_scalar(ptr, col, val, counts, intercept, beta)


@njit(cache=True, nogil=True)
def _categorical_lanes(ptr, col, val, counts, intercept, beta):  # pragma: no cover - compiled
    r"""(ll, gradient on the intercepts (K-1), on beta (p, K-1)) in one pass over the patterns.

    The K - 1 linear predictors of a pattern are held in ``W`` lanes (K - 1 rounded up to
    :data:`LANES`; the padded coefficients are 0 and the padded lanes masked out of every sum),
    and every per-pattern step is a loop over the lanes without branches: the linear
    predictors, their maximum, their exponentials (:func:`_exp_lanes`), the log-sum-exp and
    the residuals :math:`C_{gk} - W_g p_{gk}`, so that the compiler turns each into vector
    instructions (the scalar loop with ``math.exp`` and a branch per level cost 2.2 ms a
    gradient on YRBSS's hours of sleep, 10,780 patterns x 8 levels x 54 predictors, 6.9 ms on
    Adult's education, 36,372 x 16 x 20). The pattern's log-likelihood
    :math:`\sum_k C_{gk}\eta_{gk} - W_g\,\mathrm{lse}_g` (:math:`\eta_{g0} = 0`) and every
    other sum over patterns run in the patterns' order, as before; the sums over levels in
    lane order."""
    u = counts.shape[0]
    k = counts.shape[1]
    m = k - 1
    p = beta.shape[0]
    lanes = ((m + LANES - 1) // LANES) * LANES
    b0 = np.zeros(lanes)
    b0[:m] = intercept
    bt = np.zeros((p, lanes))
    bt[:, :m] = beta
    mask = np.zeros(lanes)
    mask[:m] = 1.0
    g_int = np.zeros(lanes)
    g_beta = np.zeros((p, lanes))
    eta = np.empty(lanes)
    e = np.empty(lanes)
    bits = np.empty(lanes, np.int64)
    cnt = np.zeros(lanes)
    ll = 0.0
    for g in range(u):
        w = counts[g, 0]
        for c in range(m):
            cnt[c] = counts[g, c + 1]
            w += cnt[c]
        if w == 0.0:
            continue
        for c in range(lanes):
            eta[c] = b0[c]
        lo, hi = int(ptr[g]), int(ptr[g + 1])
        for t in range(lo, hi):
            j = int(col[t])
            xj = val[t]
            for c in range(lanes):
                eta[c] += xj * bt[j, c]
        mx = 0.0  # the reference level's eta; the padded lanes' are 0 too
        for c in range(lanes):
            mx = eta[c] if eta[c] > mx else mx
        for c in range(lanes):
            e[c] = eta[c] - mx
        _exp_lanes(e, e, bits)
        s = math.exp(-mx)
        dot = 0.0
        for c in range(lanes):
            e[c] *= mask[c]
            s += e[c]
            dot += cnt[c] * eta[c]
        lse = mx + math.log(s)
        ll += dot - w * lse
        ws = w / s
        for c in range(lanes):
            eta[c] = cnt[c] - ws * e[c]  # eta now holds d ll / d eta = C - W p
            g_int[c] += eta[c]
        for t in range(lo, hi):
            j = int(col[t])
            xj = val[t]
            for c in range(lanes):
                g_beta[j, c] += xj * eta[c]
    return ll, g_int[:m].copy(), g_beta[:, :m].copy()


@njit(cache=True, nogil=True)
def _categorical_hessian_kernel(ptr, col, val, counts, intercept, beta):  # pragma: no cover
    u = counts.shape[0]
    k = counts.shape[1]
    m = k - 1
    p = beta.shape[0]
    d = (p + 1) * m
    H = np.zeros((d, d))
    eta = np.empty(m)
    nz = np.empty(p + 1, np.int64)  # column 0: the intercept
    xv = np.empty(p + 1)
    for g in range(u):
        w = 0.0
        for c in range(k):
            w += counts[g, c]
        if w == 0.0:
            continue
        for c in range(m):
            eta[c] = intercept[c]
        nz[0] = 0
        xv[0] = 1.0
        q = 1
        for t in range(int(ptr[g]), int(ptr[g + 1])):
            j = int(col[t])
            xj = val[t]
            nz[q] = j + 1
            xv[q] = xj
            q += 1
            for c in range(m):
                eta[c] += xj * beta[j, c]
        mx = 0.0
        for c in range(m):
            if eta[c] > mx:
                mx = eta[c]
        s = math.exp(-mx)
        for c in range(m):
            eta[c] = math.exp(eta[c] - mx)
            s += eta[c]
        for c in range(m):
            eta[c] /= s  # probabilities of levels 1..K-1
        for ta in range(q):
            a = nz[ta]
            for tb in range(ta, q):
                b = nz[tb]
                wab = w * xv[ta] * xv[tb]
                for c in range(m):
                    row = a * m + c
                    for e in range(m):
                        # W x_a x_b (p_c delta_ce - p_c p_e): exactly symmetric in (c, e)
                        pce = eta[c] * eta[e]
                        H[row, b * m + e] -= wab * ((eta[c] if c == e else 0.0) - pce)
    # mirror the blocks a < b computed above into b > a
    for a in range(p + 1):
        for b in range(a + 1, p + 1):
            for c in range(m):
                for e in range(m):
                    H[b * m + e, a * m + c] = H[a * m + c, b * m + e]
    return H


@njit(cache=True, nogil=True)
def _categorical_table_kernel(
    ptr, col, val, rows, intercept, beta, key_row, key_y
):  # pragma: no cover
    n_draws, m = intercept.shape
    u, p = rows.shape
    k = m + 1
    n_keys = key_row.shape[0]
    out = np.empty((n_draws, n_keys))
    tab = np.empty((u, k))
    eta = np.empty(k)
    for b in range(n_draws):
        finite = True
        for j in range(p):
            for c in range(m):
                if not math.isfinite(beta[b, j, c]):
                    finite = False
        for g in range(u):
            eta[0] = 0.0
            for c in range(m):
                eta[c + 1] = intercept[b, c]
            if finite:  # the zeros add exactly nothing
                for t in range(int(ptr[g]), int(ptr[g + 1])):
                    j = int(col[t])
                    xj = val[t]
                    for c in range(m):
                        eta[c + 1] += beta[b, j, c] * xj
            else:  # 0 * inf is NaN, as in the dense sum
                for j in range(p):
                    xj = rows[g, j]
                    for c in range(m):
                        eta[c + 1] += beta[b, j, c] * xj
            mx = eta[0]
            for c in range(1, k):
                if eta[c] > mx or math.isnan(eta[c]):
                    mx = eta[c]
            s = 0.0
            for c in range(k):
                eta[c] -= mx
                s += math.exp(eta[c])
            ls = math.log(s)
            for c in range(k):
                tab[g, c] = eta[c] - ls
        for q in range(n_keys):
            out[b, q] = tab[key_row[q], key_y[q]]
    return out


@njit(cache=True, nogil=True)
def _linear_rows_kernel(ptr, col, val, rows, coef, base):  # pragma: no cover - compiled
    n_draws, p = coef.shape
    u = rows.shape[0]
    out = np.empty((n_draws, u))
    for b in range(n_draws):
        finite = True
        for j in range(p):
            if not math.isfinite(coef[b, j]):
                finite = False
        for g in range(u):
            acc = base[b]
            if finite:  # the zeros add exactly nothing
                for t in range(int(ptr[g]), int(ptr[g + 1])):
                    acc += coef[b, int(col[t])] * val[t]
            else:  # 0 * inf is NaN, as in the dense sum
                for j in range(p):
                    acc += coef[b, j] * rows[g, j]
            out[b, g] = acc
    return out


def linear_rows(rows: np.ndarray, coef: np.ndarray, base: np.ndarray | None = None) -> np.ndarray:
    """``base[:, None] + coef @ rows.T`` (B, U) for a block of B coefficient draws ``coef``
    (B, p) and design rows ``rows`` (U, p), each entry summed predictor by predictor in
    increasing order over the row's non-zeros (the dense sum's order: the zeros it skips add
    exactly nothing, and a draw with a non-finite coefficient takes the dense sum, whose
    ``0 * inf`` is NaN). So an entry depends on its draw and row only, never on the block (no
    BLAS), and equals the NumPy loop ``out += coef[:, j, None] * rows[:, j]`` bit for bit; its
    cost follows the non-zeros, not p (the accountant's tables of Adult's parts of 39,000 rows
    and 60 to 130 predictors, 10 to 15 of them non-zero per row: 5 to 14 s each in NumPy)."""
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    base = np.zeros(coef.shape[0]) if base is None else np.ascontiguousarray(base, np.float64)
    return _linear_rows_kernel(*_sparse(rows, None), rows, coef, base)


def use_fused_table(p: int, n_levels: int) -> bool:
    """Whether the per-key tables of a multinomial logit run in Numba: by the part's shape
    only (p (K - 1) at least :data:`TABLE_MIN`), never by the number of records or draws, so
    that every record or draw block of one part takes the same kernel (the accountant's blocks
    combine exactly)."""
    return p * (n_levels - 1) >= TABLE_MIN


def categorical_table(
    rows: np.ndarray,
    intercept: np.ndarray,
    beta: np.ndarray,
    key_row: np.ndarray,
    key_y: np.ndarray,
) -> np.ndarray:
    """Per-key log-likelihood (B, keys) of the multinomial logit for a block of B draws:
    :math:`\\log\\mathrm{softmax}(\\eta_{b,g})_y` at each key's design row g and level y, with
    ``intercept`` (B, K-1), ``beta`` (B, p, K-1); one row's (U, K) table per draw, no (B, U, K)
    temporary. Each value depends only on its draw and row (the sum over predictors in
    increasing order, log-softmax as ``z - log sum exp z`` with ``z = eta - max eta``)."""
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    sp = _sparse(rows, None)
    return _categorical_table_kernel(
        *sp, rows, np.ascontiguousarray(intercept, dtype=np.float64),
        np.ascontiguousarray(beta, dtype=np.float64),
        np.ascontiguousarray(key_row, dtype=np.int64), np.ascontiguousarray(key_y, dtype=np.int64),
    )  # fmt: skip


def _design(rows: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(rows.shape[0]), rows])


def _probabilities(rows, intercept, beta):
    eta = np.zeros((rows.shape[0], intercept.size + 1))
    eta[:, 1:] = intercept
    if rows.shape[1]:
        eta[:, 1:] += rows @ beta
    z = eta - eta.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def categorical_loglik_grad(
    rows: np.ndarray,
    counts: np.ndarray,
    intercept: np.ndarray,
    beta: np.ndarray | None,
    *,
    fused: bool | None = None,
    sparse: Mapping[str, np.ndarray] | None = None,
) -> tuple[float, np.ndarray, np.ndarray]:
    """(ll, d ll/d intercept (K-1), d ll/d beta (p, K-1)) of the multinomial logit from the
    statistics ``rows`` (U, p) and ``counts`` (U, K) (module docstring); ``beta`` None when
    p = 0. ``fused``: Numba (True), NumPy (False) or by size (None); ``sparse``: the rows'
    :func:`sparse_rows` if already computed (the Numba kernel reads them, not ``rows``)."""
    p, m = rows.shape[1], counts.shape[1] - 1
    b = np.zeros((p, m)) if beta is None else np.ascontiguousarray(beta, dtype=np.float64)
    if use_fused(rows, m + 1, fused):
        ll, gi, gb = _categorical_kernel(
            *_sparse(rows, sparse), np.ascontiguousarray(counts, dtype=np.float64),
            np.ascontiguousarray(intercept, dtype=np.float64), b,
        )  # fmt: skip
        return float(ll), gi, gb
    eta = np.zeros((rows.shape[0], m + 1))
    eta[:, 1:] = intercept
    if p:
        eta[:, 1:] += rows @ b
    z = eta - eta.max(axis=1, keepdims=True)
    ls = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    ll = float(np.sum(np.where(counts > 0, counts * ls, 0.0)))
    d = counts[:, 1:] - counts.sum(axis=1, keepdims=True) * np.exp(ls[:, 1:])
    return ll, d.sum(axis=0), rows.T @ d


def categorical_hessian(
    rows: np.ndarray,
    counts: np.ndarray,
    intercept: np.ndarray,
    beta: np.ndarray | None,
    *,
    fused: bool | None = None,
    sparse: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Hessian ((p+1)(K-1), (p+1)(K-1)) of the multinomial logit's log-likelihood in the
    order (intercept, beta row-major) of :class:`~pseudopost.models.parts.CategoricalPart`'s
    layout (module docstring); ``fused`` and ``sparse`` as :func:`categorical_loglik_grad`."""
    p, m = rows.shape[1], counts.shape[1] - 1
    b = np.zeros((p, m)) if beta is None else np.ascontiguousarray(beta, dtype=np.float64)
    if use_fused(rows, m + 1, fused):
        return _categorical_hessian_kernel(
            *_sparse(rows, sparse), np.ascontiguousarray(counts, dtype=np.float64),
            np.ascontiguousarray(intercept, dtype=np.float64), b,
        )  # fmt: skip
    P = _probabilities(rows, intercept, b)[:, 1:]
    W = counts.sum(axis=1)
    Xt = _design(rows)
    # M_g[k, l] = W_g (p_k delta_kl - p_k p_l)
    M = -W[:, None, None] * P[:, :, None] * P[:, None, :]
    M[:, np.arange(m), np.arange(m)] += W[:, None] * P
    H = np.einsum("ga,gb,gkl->akbl", Xt, Xt, M, optimize=True).reshape((p + 1) * m, -1)
    return -0.5 * (H + H.T)


# ------------------------------------------------------------------------- bernoulli
@njit(cache=True, nogil=True)
def _bernoulli_kernel(ptr, col, val, w, wy, intercept, beta):  # pragma: no cover - compiled
    u = w.shape[0]
    p = beta.shape[0]
    g_int = 0.0
    g_beta = np.zeros(p)
    ll = 0.0
    for g in range(u):
        if w[g] == 0.0:
            continue
        eta = intercept
        lo, hi = int(ptr[g]), int(ptr[g + 1])
        for t in range(lo, hi):
            eta += val[t] * beta[int(col[t])]
        # softplus(eta) = log(1 + e^eta), finite in both tails
        if eta > 0.0:
            sp_pos = eta + math.log1p(math.exp(-eta))
            sig = 1.0 / (1.0 + math.exp(-eta))
        else:
            ex = math.exp(eta)
            sp_pos = math.log1p(ex)
            sig = ex / (1.0 + ex)
        sp_neg = sp_pos - eta  # softplus(-eta)
        ll -= wy[g] * sp_neg + (w[g] - wy[g]) * sp_pos
        dg = wy[g] - w[g] * sig
        g_int += dg
        for t in range(lo, hi):
            g_beta[int(col[t])] += val[t] * dg
    return ll, g_int, g_beta


def bernoulli_loglik_grad(
    rows: np.ndarray,
    w: np.ndarray,
    wy: np.ndarray,
    intercept: float,
    beta: np.ndarray | None,
    *,
    fused: bool | None = None,
    sparse: Mapping[str, np.ndarray] | None = None,
) -> tuple[float, float, np.ndarray]:
    """(ll, d ll/d intercept, d ll/d beta (p,)) of the logistic regression from the statistics
    ``rows`` (U, p), ``w`` and ``wy`` (U,) (module docstring); ``fused`` and ``sparse`` as
    :func:`categorical_loglik_grad`."""
    p = rows.shape[1]
    b = np.zeros(p) if beta is None else np.ascontiguousarray(beta, dtype=np.float64)
    if use_fused(rows, 1, fused):
        ll, gi, gb = _bernoulli_kernel(
            *_sparse(rows, sparse), np.ascontiguousarray(w, dtype=np.float64),
            np.ascontiguousarray(wy, dtype=np.float64), float(intercept), b,
        )  # fmt: skip
        return float(ll), float(gi), gb
    eta = float(intercept) + (rows @ b if p else 0.0)
    eta = np.broadcast_to(eta, w.shape)
    ll = -float(wy @ np.logaddexp(0.0, -eta) + (w - wy) @ np.logaddexp(0.0, eta))
    d = wy - w * _expit(eta)
    return ll, float(d.sum()), d @ rows


def bernoulli_hessian(
    rows: np.ndarray, w: np.ndarray, intercept: float, beta: np.ndarray | None
) -> np.ndarray:
    """Hessian (p+1, p+1) of the logistic regression's log-likelihood in the order
    (intercept, beta) (module docstring; one BLAS product)."""
    p = rows.shape[1]
    eta = float(intercept) + (rows @ np.asarray(beta) if p else np.zeros(rows.shape[0]))
    v = w * _expit(eta) * _expit(-eta)
    Xt = _design(rows)
    return -(Xt.T @ (Xt * v[:, None]))


# ------------------------------------------------------------------ cumulative (ordered logit)
@njit(cache=True, nogil=True, inline="always")
def _log_sigmoid_and_sigmoid_of_minus(x):  # pragma: no cover - compiled
    """(log sigma(x), sigma(-x)) from one exp and one log1p."""
    e = math.exp(-abs(x))
    if x > 0.0:
        return -math.log1p(e), e / (1.0 + e)
    return x - math.log1p(e), 1.0 / (1.0 + e)


@njit(cache=True, nogil=True, inline="always")
def _log1mexp_of_minus(gap):  # pragma: no cover - compiled
    """log(1 - e^{-gap}) for gap >= 0 (Maechler 2012)."""
    return math.log(-math.expm1(-gap)) if gap < math.log(2.0) else math.log1p(-math.exp(-gap))


@njit(cache=True, nogil=True, error_model="numpy")  # a gap of 0: r = inf, log(0) = -inf
def _cumulative_kernel(ptr, col, val, lev, cnt, cut, beta, gamma, centre):  # pragma: no cover
    m = cut.shape[0]
    p = beta.shape[0]
    scaled = gamma.shape[0] > 0
    # zeta = (z - centre)^T gamma: the centre's share, once
    shift = 0.0
    for j in range(gamma.shape[0]):
        shift += centre[j] * gamma[j]
    # per inner level k (1..m-1): log(1 - e^{-gap}) and r = 1 / (e^{gap} - 1), gap = c_k - c_{k-1}
    # (shift only; with a scale the gap is (c_k - c_{k-1}) e^{-zeta}, per key)
    inner = np.zeros(m)
    r = np.zeros(m)
    if not scaled:
        for k in range(1, m):
            gap = cut[k] - cut[k - 1]
            inner[k] = _log1mexp_of_minus(gap)
            r[k] = 1.0 / math.expm1(gap)
    ll = 0.0
    gcut = np.zeros(m)
    gbeta = np.zeros(p)
    ggamma = np.zeros(gamma.shape[0])
    gsum = 0.0
    for i in range(lev.shape[0]):
        eta = 0.0
        zeta = -shift
        for t in range(int(ptr[i]), int(ptr[i + 1])):
            eta += val[t] * beta[int(col[t])]
            if scaled:
                zeta += val[t] * gamma[int(col[t])]
        sc = math.exp(-zeta) if scaled else 1.0
        k = int(lev[i])
        w = cnt[i]
        da = 0.0
        db = 0.0
        a = 0.0
        b = 0.0
        if k < m:  # a = (c_k - eta) e^{-zeta}: log sigma(a), d/da = sigma(-a) (+ r inside)
            a = (cut[k] - eta) * sc
            ls_a, s_na = _log_sigmoid_and_sigmoid_of_minus(a)
            ll += w * ls_a
            da = w * s_na
        if k > 0:  # b = (c_{k-1} - eta) e^{-zeta}: log sigma(-b), d/db = -sigma(b) (- r inside)
            b = (cut[k - 1] - eta) * sc
            ls_nb, s_b = _log_sigmoid_and_sigmoid_of_minus(-b)
            ll += w * ls_nb
            db = -w * s_b
        if 0 < k < m:
            if scaled:  # one expm1: log(1 - e^{-gap}) and r = e^{-gap} / (1 - e^{-gap})
                em = math.expm1(-(cut[k] - cut[k - 1]) * sc)
                ll += w * math.log(-em)
                rk = -(1.0 + em) / em
            else:
                ll += w * inner[k]
                rk = r[k]
            da += w * rk
            db -= w * rk
        if k < m:
            gcut[k] += da * sc
        if k > 0:
            gcut[k - 1] += db * sc
        s = (da + db) * sc
        g = da * a + db * b  # d/dzeta = -(da a + db b)
        gsum += g
        for t in range(int(ptr[i]), int(ptr[i + 1])):
            gbeta[int(col[t])] -= s * val[t]
            if scaled:
                ggamma[int(col[t])] -= g * val[t]
    for j in range(gamma.shape[0]):  # d zeta / d gamma_j = z_j - centre_j
        ggamma[j] += gsum * centre[j]
    return ll, gcut, gbeta, ggamma


def cumulative_loglik_grad(
    rows, cnt, cut, beta, gamma=None, sparse=None, centre=None
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    r"""Weighted log-likelihood of the ordered logit over one level per key and its gradient
    in the cutpoints, beta and gamma (the log-spread's coefficients, on the design less
    ``centre``: :math:`\zeta = (z - z_0)^\top\gamma`; empty for a shift only)
    (:mod:`pseudopost.models.parts.cumulative`), in one Numba pass over the keys: ``rows``
    (U, p + 1) the design rows with the level appended, ``cnt`` (U) the weights; ``sparse`` the
    design's non-zeros (:func:`sparse_rows` of ``rows[:, :p]``)."""
    p = rows.shape[1] - 1
    ptr, col, val = _sparse(rows[:, :p], sparse)
    gamma = np.zeros(0) if gamma is None else gamma
    centre = np.zeros(gamma.shape[0]) if centre is None else centre
    if np.shape(centre) != np.shape(gamma):
        raise ValueError(f"centre must have gamma's shape {np.shape(gamma)}. Got {np.shape(centre)}.")
    return _cumulative_kernel(
        ptr, col, val, np.ascontiguousarray(rows[:, p], dtype=np.float64),
        np.ascontiguousarray(cnt, dtype=np.float64), np.ascontiguousarray(cut, dtype=np.float64),
        np.ascontiguousarray(beta, dtype=np.float64), np.ascontiguousarray(gamma, dtype=np.float64),
        np.ascontiguousarray(centre, dtype=np.float64),
    )  # fmt: skip
