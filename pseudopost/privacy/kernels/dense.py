r"""The fused kernels' g and reductions in NumPy, for problems too small to pay for compiling.

:mod:`~pseudopost.privacy.kernels.glm` compiles one Numba kernel for every family and variant;
on a machine whose Numba cache is empty that costs several seconds, more than NumPy needs for a
few million record-draws (n = 2000 records x 2000 draws: about 0.05 s). These functions compute
the same g (same families, variants and per-draw constants; see :mod:`.glm`) on
(draws x records) blocks of at most :data:`BLOCK_CELLS` values with SciPy's special functions, and
the same reductions (a NaN log density counts as unbounded; NaN in ``per_draw`` propagates).
:func:`pseudopost.privacy.fused.BlockKernel` chooses this path by problem size only (never by the
state of a cache), so a release does not depend on what was compiled before.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from pseudopost.privacy.kernels.glm import CENSOR, CONT, NEGBIN, POISSON, TRUNC

__all__ = ["BLOCK_CELLS", "abs_reduce", "values"]

BLOCK_CELLS = 2**19
_SQRT_HALF = np.sqrt(0.5)


def _logdiffexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(e^a - e^b) for a >= b (a where b = -inf), as :func:`.special.logdiffexp`."""
    d = b - a
    with np.errstate(divide="ignore", invalid="ignore"):
        out = a + np.where(d > -np.log(2.0), np.log(-np.expm1(d)), np.log1p(-np.exp(d)))
    return np.where(b == -np.inf, a, out)


def log_normal_range(za: np.ndarray, zb: np.ndarray) -> np.ndarray:
    r""":math:`\log(\Phi(z_b) - \Phi(z_a))` elementwise, with the tail rule of
    :func:`.special.log_normal_range`: from the tail the range lies in (by symmetry,
    :math:`\Phi(z_b) - \Phi(z_a) = \Phi(-z_a) - \Phi(-z_b)`, the left tail is the right tail of
    :math:`(a, b) = (-z_b, -z_a)`), as an erfc difference while the nearer endpoint is within
    30 sd, in log space (only for those elements) beyond."""
    right = za > 0.0
    a = np.where(right, za, -zb)
    b = np.where(right, zb, -za)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(0.5 * (special.erfc(a * _SQRT_HALF) - special.erfc(b * _SQRT_HALF)))
        far = a >= 30.0
        if far.any():
            out[far] = _logdiffexp(special.log_ndtr(-a[far]), special.log_ndtr(-b[far]))
    return out


def values(
    fam, var, y, aux, Xt, lo, hi, calpha, idx, table, b0, beta, q1, q2, q3, bound
) -> np.ndarray:
    """The (draws, records) matrix of g for the draws given (arguments as ``glm.values_kernel``)."""
    eta = np.repeat(b0[:, None], y.size, axis=1)
    for k in range(Xt.shape[0]):  # in the Numba kernel's order (no BLAS: block-invariant)
        eta += beta[:, k, None] * Xt[k]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if fam == CONT:
            inv = q1[:, None]
            r = (y - eta) * inv
            g = q2[:, None] + aux - 0.5 * r * r
            if var == TRUNC:
                g = g - log_normal_range((lo - eta) * inv, (hi - eta) * inv)
        elif fam == POISSON:
            g = y * eta - np.exp(eta) + aux
        elif fam == NEGBIN:
            phi, lg_phi, log_phi = q1[:, None], q2[:, None], q3[:, None]
            ell = np.logaddexp(log_phi, eta)
            lg = table[:, idx] if table.shape[1] else special.gammaln(y + phi) - lg_phi
            tail = np.where(y != 0.0, y * (eta - ell), 0.0)
            g = lg + aux + tail + phi * (log_phi - ell)
            big = q1 > 1e10  # PyMC's Poisson limit
            if big.any():
                g[big] = y * eta[big] - np.exp(eta[big]) + aux
        else:
            raise ValueError(f"Unknown family code {fam}.")
        if var == CENSOR:
            g = np.clip(calpha * g, -bound, bound)
    return g


def abs_reduce(
    fam, var, y, aux, Xt, lo, hi, calpha, idx, table, coef, b0, beta, q1, q2, q3, bound, want_sum
) -> tuple[np.ndarray, np.ndarray]:
    """(per_record, per_draw[1, M]) as ``glm.abs_kernel`` with one chunk: max_m |g|, and
    max_i |c_i g| (or, with ``want_sum``, sum_i c_i g) per draw."""
    n, n_draws = y.size, b0.size
    per_record = np.zeros(n)
    per_draw = np.zeros((1, n_draws))
    step = max(1, BLOCK_CELLS // max(n, 1))
    for m0 in range(0, n_draws, step):
        s = slice(m0, min(n_draws, m0 + step))
        per = (b0[s], beta[s], q1[s], q2[s], q3[s])
        tab = table[s] if table.shape[1] else table
        g = values(fam, var, y, aux, Xt, lo, hi, calpha, idx, tab, *per, bound)
        if want_sum:
            with np.errstate(invalid="ignore"):
                per_draw[0, s] = g @ coef
            continue
        a = np.abs(g)
        a[np.isnan(a)] = np.inf  # an undefined log density is unbounded risk
        np.maximum(per_record, a.max(axis=0), out=per_record)
        with np.errstate(invalid="ignore"):
            per_draw[0, s] = np.abs(coef * a).max(axis=1)  # 0 * inf is NaN: it propagates
    return per_record, per_draw
