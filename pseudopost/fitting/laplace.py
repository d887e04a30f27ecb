r"""A Laplace preconditioner for a column part's posterior: the same posterior, sampled faster.

A part with many parameters and few records per parameter (a multinomial logit on the one-hot
levels of many earlier columns) has a posterior whose scales differ by orders of magnitude and
whose parameters are strongly correlated (each level's intercept with the coefficients of the
rare levels of the predictors). NUTS then needs many leapfrog steps per draw unless its mass
matrix matches that covariance, which a short warm-up cannot learn.

The fix is an affine change of variables that leaves the posterior unchanged: with
:math:`\hat x` the posterior mode (on the unconstrained scale; reached to within a small
fraction of the posterior's spread) and :math:`H` the Hessian of the negative log density there
(exact for the families with an analytic Hessian, which also reach the mode by true Newton
steps in a handful of iterations; forward differences of the gradient otherwise),
:math:`H = C C^\top`,

.. math::
    x = \hat x + L z, \qquad L = C^{-\top} \quad (L L^\top = H^{-1}),

and the sampler draws :math:`z` from :math:`p(\hat x + L z)\,|L|`, whose Jacobian is a constant:
the draws of :math:`x` are draws of the very same pseudo posterior (the transformation is exact,
not an approximation of it), only better conditioned (close to a standard normal when the
posterior is close to its Laplace approximation, as log-concave GLM posteriors are). The mode
and Hessian are computed from the fit's own statistics, like an adapted mass matrix: they change
how fast the sampler mixes, never what it samples, so they cost no privacy.

A part that nests a simpler one (:meth:`Part.nested
<pseudopost.models.parts.base.Part.nested>`: a location-scale part its shift-only model) starts
its mode search from that one's mode.

When Newton stops short of the mode (its step limit, or no step that decreases; a
near-deterministic column's location-scale part creeps towards a far mode) the last iterate and
the Hessian there (damped by Marquardt's :math:`\lambda D` until positive definite) still give
a dense preconditioner, flagged as not the Laplace approximation. When no Hessian can be formed
(a flat direction, a failed optimisation) the preconditioner falls back to the mode and the
inverse of the diagonal's absolute values, or, if that fails too, to none (the identity).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from scipy import linalg, optimize
from threadpoolctl import threadpool_limits

from pseudopost.models.parts import Part, Stats

__all__ = ["MAX_DIM", "laplace_approximation", "laplace_transform"]

#: parts above this many parameters get a diagonal preconditioner (the dense Hessian costs
#: dim gradient evaluations and a dim^3 Cholesky)
MAX_DIM = 1500

#: Newton iterations per round of :func:`_near_mode`, and the most rounds
_STEPS, _ROUNDS = 3, 10

#: most Newton iterations of :func:`_newton`, and the Newton decrement that stops them. A
#: near-deterministic column's location-scale part (cps91's experience, age - educ - 6 floored
#: at 0, when modelled; non-wife income, family income less the wife's earnings) needs about 180
#: damped steps from the unweighted mode (some 5 ms each); at 100 it stopped 455 and 146 nats
#: below the mode, and NUTS on that point's preconditioner took 24.0 and 12.6 s against 15.1
#: and 11.0 s from the mode (2 x 500 iterations)
_NEWTON_MAX, _DECREMENT = 500, 1e-8


def _near_mode(f, start: np.ndarray, d: int) -> np.ndarray:
    r"""A point within a small fraction of the posterior's spread from its mode.

    Newton-CG (Hessian-vector products from gradient differences) in rounds of a few
    iterations, stopped once a round raises the log density by less than
    :math:`\max(1, d/100)`: the typical set lies about :math:`d/2` below the mode, so the rest
    of the way to the exact mode (thousands of gradients in the last iterations' conjugate
    gradients) would not change how well the preconditioner fits. The start is returned when
    the optimiser fails (the identity-like fallback of the caller then applies).
    """
    x, fx = start, f(start)[0]
    enough = max(1.0, d / 100.0)
    with np.errstate(all="ignore"):
        for _ in range(_ROUNDS):
            res = optimize.minimize(f, x, jac=True, method="Newton-CG", options={"maxiter": _STEPS})
            if not (np.all(np.isfinite(res.x)) and np.isfinite(res.fun)) or res.fun > fx:
                break
            gain = fx - res.fun
            x, fx = res.x, res.fun
            if gain < enough:
                break
    return x


def _negative(density):
    """-log density and its gradient; +inf (zero gradient) where the density is undefined
    (an optimiser's wild step: sigma or phi underflowing to 0, whose ``math.log`` raises a
    ``ValueError``; an overflow)."""

    def f(x):
        try:
            lp, g = density.logp_grad(x)
        except (ZeroDivisionError, OverflowError, FloatingPointError, ValueError):
            return np.inf, np.zeros_like(x)
        if not (np.isfinite(lp) and np.all(np.isfinite(g))):
            return np.inf, np.zeros_like(x)
        return -lp, -g

    return f


def _newton(
    f, hessian, start: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool] | None:
    r"""The mode by damped Newton steps on the exact Hessian: ``(x, H, converged)``, H the
    Hessian at x.

    Each step solves :math:`(H + \lambda D)\,s = -g` (:math:`H` the Hessian of the negative
    log density, :math:`D` its diagonal's absolute values; :math:`\lambda = 0` while :math:`H`
    is positive definite, else raised until the Cholesky factorisation succeeds:
    :func:`_damped_solve`) and halves it until the objective decreases (Armijo);
    stopped when the Newton decrement :math:`g^\top s` falls below :data:`_DECREMENT` (the
    objective is then within about half of it from its minimum): ``converged``. When the
    iterations stop short (:data:`_NEWTON_MAX` steps, a step that no halving makes decrease,
    a non-finite Hessian) the last iterate and its Hessian are returned with ``converged``
    False: the best point reached, which the caller uses for preconditioning only. None when
    the start itself is not finite.
    """
    x = start
    fx, g = f(x)
    if not np.isfinite(fx):
        return None
    H = hessian(x)
    for _ in range(_NEWTON_MAX):
        if not np.all(np.isfinite(H)):
            return None
        step = _damped_solve(H, g)
        if step is None:
            return x, H, False
        dec = float(-g @ step)
        if dec < _DECREMENT:
            return x, H, True
        t = 1.0
        while True:
            xn = x + t * step
            fn, gn = f(xn)
            if np.isfinite(fn) and fn <= fx - 1e-4 * t * dec:
                break
            t *= 0.5
            if t < 1e-10:
                return x, H, False
        x, fx, g = xn, fn, gn
        H = hessian(x)
    return (x, H, False) if np.all(np.isfinite(H)) else None


def _damped_solve(H: np.ndarray, g: np.ndarray) -> np.ndarray | None:
    r"""-(H + lam D)^{-1} g, D = diag(|H_jj|) (Marquardt's scaling), with the smallest lam in
    0, 1e-6, 1e-4, ..., 1e4 that makes the matrix positive definite.

    The damping is relative to each parameter's own curvature, so a step is the same whatever
    the units of the predictors. Damping by a multiple of the largest diagonal entry instead
    (:math:`\lambda \max_j |H_{jj}|\, I`) froze the parameters of small curvature whenever
    one of large curvature was present: with raw fnlwgt (near 10^5, curvature 10^14) among
    Adult's capital-gain predictors, a non-concave point (eigenvalues -8.1 and -0.67) gave a
    decrement below 1e-8, so Newton stopped there, 96 log-density units below the mode, and the
    preconditioner fell back to the diagonal (63 leapfrog steps per draw against 15)."""
    D = np.diag(np.maximum(np.abs(np.diag(H)), 1e-12))
    for lam in (0.0, 1e-6, 1e-4, 1e-2, 1e-1, 1.0, 10.0, 1e2, 1e4):
        C = _cholesky(H + lam * D)
        if C is not None:
            return -linalg.cho_solve((C, True), g)
    return None


def _cholesky(H: np.ndarray) -> np.ndarray | None:
    """Lower Cholesky factor, None if H is not positive definite."""
    try:
        return np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        return None


_BLAS_LOCK = threading.Lock()
_BLAS_STATE: dict = {"users": 0, "limits": None}


@contextmanager
def _one_blas_thread() -> Iterator[None]:
    """BLAS/LAPACK on one thread while any preconditioner is computed, and around every
    per-column fit (:mod:`pseudopost.fitting.columns`, so that rounding never depends on the
    schedule); reference-counted, so parts computed in parallel threads restore the original
    limits once, at the last exit.
    A d = 441 Cholesky took 0.5 s with OpenBLAS's two threads on this shared, loaded 2-core
    machine (a thread waiting for the other to be scheduled) and 0.002-0.006 s on one."""
    with _BLAS_LOCK:
        if _BLAS_STATE["users"] == 0:
            _BLAS_STATE["limits"] = threadpool_limits(1, user_api="blas")
        _BLAS_STATE["users"] += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_STATE["users"] -= 1
            if _BLAS_STATE["users"] == 0:
                _BLAS_STATE["limits"].restore_original_limits()
                _BLAS_STATE["limits"] = None


def _damped_factor(H: np.ndarray) -> np.ndarray | None:
    r"""L with :math:`L L^\top = (H + \lambda D)^{-1}` for the smallest :math:`\lambda` of
    :func:`_damped_solve` that makes it positive definite: a dense preconditioner at a point
    short of the mode where the Hessian is not (a near-deterministic column's location-scale
    part: Newton still 6 log-density units per step from the mode after its 100 steps on
    cps91's exper, which then took 489 leapfrog steps per draw with the diagonal fallback)."""
    D = np.diag(np.maximum(np.abs(np.diag(H)), 1e-12))
    for lam in (1e-6, 1e-4, 1e-2, 1e-1, 1.0, 10.0, 1e2, 1e4):
        L = _factor(H + lam * D)
        if L is not None:
            return L
    return None


def _factor(H: np.ndarray) -> np.ndarray | None:
    """L with L L^T = H^{-1} (None if H is not positive definite)."""
    C = _cholesky(H)
    if C is None:
        return None
    return linalg.solve_triangular(C, np.eye(H.shape[0]), lower=True).T


def laplace_transform(
    part: Part, stats: Stats, *, max_dim: int = MAX_DIM, start: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(x0, L)`` with ``x = x0 + L z`` (module docstring): the mode and a square matrix with
    :math:`L L^\\top = H^{-1}` (dense up to ``max_dim`` parameters, else diagonal).

    ``start`` (packed parameters, optional) is where the mode search starts instead of
    :func:`_start`: the mode of the same part under other weights (the unweighted fit's, for
    a weighted refit) is a few Newton steps from this one. The mode found is the same to within
    the search's tolerance; a start where the density is not finite is ignored.

    Parts with an exact Hessian (:attr:`Part.has_hessian
    <pseudopost.models.parts.base.Part.has_hessian>`) and at most ``max_dim`` parameters reach
    the mode by Newton steps on it and use it there; the others by Newton-CG on gradient
    differences, H by forward differences (above ``max_dim`` the dense Hessian itself would
    cost more than the d differences of its diagonal: a (d, d) array updated per pattern).
    BLAS runs on one thread meanwhile (:func:`_one_blas_thread`).
    """
    return laplace_approximation(part, stats, max_dim=max_dim, start=start)[:2]


def laplace_approximation(
    part: Part, stats: Stats, *, max_dim: int = MAX_DIM, start: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, bool]:
    r"""``(x0, L, exact)``: :func:`laplace_transform`'s mode and factor, and whether they are
    the Laplace approximation :math:`N(\hat x, H^{-1})` of the posterior on the unconstrained
    scale: the mode reached by damped Newton steps on the exact Hessian (Newton decrement below
    :data:`_DECREMENT`) and that Hessian positive definite there. False: a point near the mode
    (Newton-CG on gradient differences, stopped early) or a fallback factor (the diagonal's),
    good for preconditioning only."""
    with _one_blas_thread():
        return _transform(part, stats, max_dim, start)


def _start(part: Part, stats: Stats, max_dim: int) -> np.ndarray:
    """Where the mode search starts: the prior's support point, or, for a part that nests a
    simpler one (:meth:`Part.nested <pseudopost.models.parts.base.Part.nested>`: a
    location-scale part its shift-only model, whose log density is concave), the simpler
    part's mode extended to this part's parameters, as ``ordinal::clm`` starts. From the support
    point, damped Newton on Adult's capital-loss given 58 predictors (fnlwgt near 10^5 among
    them) crossed the non-concave region so slowly that it stopped at its 100 iterations 2,000
    log-density units below the mode (the diagonal fallback then took 240 leapfrog steps per
    draw); from the shift-only mode it converges in a few."""
    nested = part.nested()
    if nested is None:
        return part.layout.pack({p.name: p.support_point for p in part.layout.params})
    inner, extend = nested
    x = _transform(inner, stats, max_dim)[0]
    return part.layout.pack(extend(inner.layout.unpack(x)))


def _transform(
    part: Part, stats: Stats, max_dim: int, start: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, bool]:
    density = part.log_density(stats)
    d = part.layout.size
    f = _negative(density)
    if start is not None:
        start = np.asarray(start, dtype=float)
        if start.shape != (d,):
            raise ValueError(f"'start' must have shape ({d},) for part {part.name!r}; got "
                             f"{start.shape}.")  # fmt: skip
        with np.errstate(all="ignore"):
            if not np.isfinite(f(start)[0]):
                start = None
    if start is None:
        start = _start(part, stats, max_dim)
        with np.errstate(all="ignore"):
            if not np.isfinite(f(start)[0]):  # a nested part's point short of its mode
                start = part.layout.pack({p.name: p.support_point for p in part.layout.params})
    if density.has_hessian and d <= max_dim:
        with np.errstate(all="ignore"):
            found = _newton(f, lambda x: -density.hessian(x), start)
        if found is not None:
            x0, H, converged = found
            L = _factor(0.5 * (H + H.T))
            if L is not None:
                return x0, L, converged
            L = _damped_factor(0.5 * (H + H.T))
            if L is not None:  # short of the mode, where H is not positive definite
                return x0, L, False
            return x0, _diagonal(np.abs(np.diag(H))), False
    x0 = _near_mode(f, start, d)
    h = 1e-5 * np.maximum(1.0, np.abs(x0))
    g0 = f(x0)[1]
    if d <= max_dim:
        H = np.empty((d, d))
        for j in range(d):
            e = np.zeros(d)
            e[j] = h[j]
            H[:, j] = (f(x0 + e)[1] - g0) / h[j]
        H = 0.5 * (H + H.T)
        if np.all(np.isfinite(H)):
            L = _factor(H)
            if L is not None:
                return x0, L, False  # near the mode only (_near_mode)
        diag = np.abs(np.diag(H))
    else:
        diag = np.empty(d)
        for j in range(d):
            e = np.zeros(d)
            e[j] = h[j]
            diag[j] = abs((f(x0 + e)[1][j] - g0[j]) / h[j])
    return x0, _diagonal(diag), False


def _diagonal(diag: np.ndarray) -> np.ndarray:
    """diag(1/sqrt(h)) where h is finite and > 0, else 1."""
    ok = np.isfinite(diag) & (diag > 0)
    scale = np.where(ok, 1.0 / np.sqrt(np.where(ok, diag, 1.0)), 1.0)
    return np.diag(scale)
