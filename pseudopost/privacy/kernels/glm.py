r"""Fused Numba kernels of the accountant for the ready regression models.

One pass over (records x draws) computes, without the n x M matrix,

.. math::
    \text{per\_record}_i = \max_m |g_{\theta_m}(x_i)|, \qquad
    \text{per\_draw}_m = \max_i |c_i\, g_{\theta_m}(x_i)|, \qquad
    \text{sum}_m = \sum_i c_i\, g_{\theta_m}(x_i),

(:func:`~pseudopost.privacy.lipschitz.reduce_abs` and ``reduce_sum``). Records are split into
fixed chunks (``prange``; the chunking depends on n only, so sums are reproducible whatever the
thread count); each chunk walks blocks of ``BLOCK`` records that stay in L1 cache, and for every
draw fills the block's g values and folds them into the record maxima and the chunk's per-draw
maximum (merged across chunks at the end). A NaN log density counts as unbounded
(:math:`|g| = \infty`), as in the block reduction.

Families (the linear predictor :math:`\eta_{mi} = \beta_{0m} + z_i^\top\beta_m`):

=========  =====================================================================================
code       log density :math:`f` (per-draw constants precomputed outside the record loop)
=========  =====================================================================================
CONT       :math:`k_m + a_i - \tfrac12 ((y_i - \eta)/\sigma_m)^2`, :math:`k_m = -\log\sigma_m -
           \tfrac12\log 2\pi`; normal: :math:`y_i = x_i, a_i = 0`; log-normal: :math:`y_i = \log
           x_i, a_i = -\log x_i` (the density of x as given)
POISSON    :math:`x_i\eta - e^{\eta} - \log x_i!`
NEGBIN     :math:`\log\Gamma(x_i + \phi) - \log\Gamma(\phi) - \log x_i! + x_i(\eta - \ell) +
           \phi(\log\phi - \ell)`, :math:`\ell = \log(\phi + e^\eta)`; Poisson limit for
           :math:`\phi > 10^{10}` (as PyMC)
=========  =====================================================================================

Variants g: ``F`` (:math:`f`; unrestricted and range-averaged), ``TRUNC``
(:math:`f - \log P_\theta(R_i)`, normal and log-normal, via
:func:`~pseudopost.privacy.kernels.special.log_normal_range` on standardised bounds) and
``CENSOR`` (:math:`\mathrm{clip}(\alpha_i f, -B, B)`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from pseudopost.privacy.kernels.special import log_normal_range

__all__ = [
    "BLOCK",
    "CENSOR",
    "CONT",
    "NEGBIN",
    "POISSON",
    "TRUNC",
    "F",
    "abs_kernel",
    "chunks",
    "values_kernel",
]

CONT, POISSON, NEGBIN = 0, 1, 2
F, TRUNC, CENSOR = 0, 1, 2
BLOCK = 512
_MIN_CHUNK = 8192
_MAX_CHUNKS = 256


def chunks(n: int) -> int:
    """Number of record chunks: a function of n only (reproducible sums)."""
    size = max(_MIN_CHUNK, -(-n // _MAX_CHUNKS))
    return max(1, -(-n // size))


@njit(cache=True, fastmath=False)
def _fill(tmp, fam, var, i0, nb, m, y, aux, Xt, lo, hi, calpha, idx, table, b0, beta, q1, q2, q3,
          bound):  # fmt: skip
    """g of draw m for records i0 .. i0 + nb - 1 into tmp[:nb]. ``table[m, idx[i]]``, when
    given, holds :math:`\\log\\Gamma(x_i + \\phi_m) - \\log\\Gamma(\\phi_m)` (negative binomial)."""
    c0 = b0[m]
    for j in range(nb):
        tmp[j] = c0
    for k in range(Xt.shape[0]):
        bk = beta[m, k]
        for j in range(nb):
            tmp[j] += bk * Xt[k, i0 + j]
    if fam == CONT:
        invs = q1[m]
        const = q2[m]
        if var == TRUNC:
            for j in range(nb):
                i = i0 + j
                eta = tmp[j]
                r = (y[i] - eta) * invs
                f = const + aux[i] - 0.5 * r * r
                tmp[j] = f - log_normal_range((lo[i] - eta) * invs, (hi[i] - eta) * invs)
        else:
            for j in range(nb):
                i = i0 + j
                r = (y[i] - tmp[j]) * invs
                tmp[j] = const + aux[i] - 0.5 * r * r
    elif fam == POISSON:
        for j in range(nb):
            i = i0 + j
            eta = tmp[j]
            tmp[j] = y[i] * eta - math.exp(eta) + aux[i]
    else:
        phi = q1[m]
        lg_phi = q2[m]
        log_phi = q3[m]
        if phi > 1e10:  # PyMC's Poisson limit of the negative binomial
            for j in range(nb):
                i = i0 + j
                eta = tmp[j]
                tmp[j] = y[i] * eta - math.exp(eta) + aux[i]
        else:
            tabulated = table.shape[1] > 0
            for j in range(nb):
                i = i0 + j
                eta = tmp[j]
                ell = _logaddexp(log_phi, eta)
                yi = y[i]
                tail = yi * (eta - ell) if yi != 0.0 else 0.0
                lg = table[m, idx[i]] if tabulated else math.lgamma(yi + phi) - lg_phi
                tmp[j] = lg + aux[i] + tail + phi * (log_phi - ell)
    if var == CENSOR:
        for j in range(nb):
            v = calpha[i0 + j] * tmp[j]
            if v > bound:
                v = bound
            elif v < -bound:
                v = -bound
            tmp[j] = v


@njit(cache=True, fastmath=False)
def _logaddexp(a, b):
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@njit(parallel=True, cache=True, fastmath=False)
def abs_kernel(
    fam, var, y, aux, Xt, lo, hi, calpha, idx, table, coef, b0, beta, q1, q2, q3, bound, n_chunks,
    want_sum,
):  # fmt: skip
    """(per_record, per_draw[n_chunks, M]) of |g| (or, with ``want_sum``, per-chunk sums of c g
    in per_draw and an unused per_record).

    The per-draw maximum of the non-negative :math:`|c_i g|` is taken on the IEEE-754 bit
    patterns as int64 (monotone for non-negative doubles; a NaN, sign cleared, is above
    infinity and so propagates as in numpy's max): an integer max reduction vectorises without
    fast-math, a float one does not.
    """
    n = y.size
    n_draws = b0.size
    per_record = np.zeros(n)
    per_draw = np.zeros((n_chunks, n_draws))
    bits = per_draw.view(np.int64)
    size = (n + n_chunks - 1) // n_chunks
    for t in prange(n_chunks):
        start = t * size
        stop = min(n, start + size)
        tmp = np.empty(BLOCK)
        vb = np.empty(BLOCK)
        vi = vb.view(np.int64)
        for i0 in range(start, stop, BLOCK):
            nb = min(BLOCK, stop - i0)
            for m in range(n_draws):
                _fill(tmp, fam, var, i0, nb, m, y, aux, Xt, lo, hi, calpha, idx, table, b0, beta,
                      q1, q2, q3, bound)  # fmt: skip
                if want_sum:
                    s = per_draw[t, m]
                    for j in range(nb):
                        s += coef[i0 + j] * tmp[j]
                    per_draw[t, m] = s
                    continue
                for j in range(nb):
                    i = i0 + j
                    a = abs(tmp[j])
                    a = np.inf if a != a else a  # an undefined log density is unbounded risk
                    pr = per_record[i]
                    per_record[i] = a if a > pr else pr
                    vb[j] = abs(coef[i] * a)  # 0 * inf is NaN: it propagates, as numpy's max
                mx = bits[t, m]
                for j in range(nb):
                    v = vi[j]
                    mx = v if v > mx else mx
                bits[t, m] = mx
    return per_record, per_draw


@njit(parallel=True, cache=True, fastmath=False)
def values_kernel(
    fam, var, y, aux, Xt, lo, hi, calpha, idx, table, b0, beta, q1, q2, q3, bound
):  # fmt: skip
    """The (M, n) matrix of g (for small checks and the ``RecordFunction`` call interface)."""
    n = y.size
    n_draws = b0.size
    out = np.empty((n_draws, n))
    for m in prange(n_draws):
        tmp = np.empty(BLOCK)
        for i0 in range(0, n, BLOCK):
            nb = min(BLOCK, n - i0)
            _fill(tmp, fam, var, i0, nb, m, y, aux, Xt, lo, hi, calpha, idx, table, b0, beta,
                  q1, q2, q3, bound)  # fmt: skip
            out[m, i0 : i0 + nb] = tmp[:nb]
    return out
