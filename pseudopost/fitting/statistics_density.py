r"""The statistics model's log density and gradient, written out for nutpie: no compilation.

:func:`~pseudopost.fitting.sufficient.statistics_model` is a PyMC model with two to a dozen
parameters whose likelihood is a few weighted sums. Compiling its PyTensor graph is what costs
time on a new machine: numba compiles every op (about a minute on an empty cache), JAX compiles
in a fraction of a second but costs about 250 us per gradient call through nutpie. Here the same
density is written in NumPy (about 10 us per call, nothing to compile) and handed to nutpie
through :func:`nutpie.from_pyfunc`; the PyMC model stays the reference it is tested against
(log density and gradient equal PyMC's ``compile_logp``/``compile_dlogp`` at random points).

Unconstrained coordinates, in PyMC's value-variable order:
:math:`\theta = (\beta_0, \beta_1, \dots, \beta_p[, u])` with :math:`u = \log\sigma` (PyMC's
log transform of the half-normal ``sigma``). With prior scales :math:`s_j` of the coefficients
(:math:`s_0` of the intercept) and :math:`s` of sigma, the log density on that scale is

.. math::
    \log\pi(\theta) = \sum_j \log N(\beta_j\mid 0, s_j)
        + [\log \mathrm{HalfNormal}(e^u\mid s) + u] + \ell_w(\theta),

with :math:`\ell_w` of :mod:`pseudopost.fitting.sufficient` (range-restricted paper eq. 1 with
:math:`w = \alpha^*`). Gradients (:math:`Q = S_{wyy} - 2b^\top Z^\top Wy + b^\top Z^\top WZ b`,
:math:`D = [1, \text{rows}]`, :math:`e = \exp(Db)`):

.. math::
    \text{normal: } \partial_b = -b/s^2 + (Z^\top Wy - Z^\top WZ\,b)/\sigma^2,\quad
    \partial_u = 1 - \sigma^2/s^2 - S_w + Q/\sigma^2; \qquad
    \text{Poisson: } \partial_b = -b/s^2 + Z^\top Wy - D^\top (W_u \circ e).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from pseudopost.models.base import SynthModel
from pseudopost.models.counts import PoissonRegression

__all__ = ["StatisticsDensity"]

_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)
_HALF_LOG_2_OVER_PI = 0.5 * np.log(2.0 / np.pi)


class StatisticsDensity:
    """Log density and gradient of the statistics model of ``model`` on the unconstrained scale.

    ``data`` keys are the statistics' names with ``prefix`` (as the PyMC statistics model's
    ``pm.Data``): Gaussian ``sw, swyy, ztwz, ztwy, const``; Poisson ``ztwy, const,
    row_weights, rows``.
    """

    def __init__(self, model: SynthModel, prefix: str = "") -> None:
        self.poisson = isinstance(model, PoissonRegression)
        self.predictors = tuple(model.predictors)
        p = len(self.predictors)
        s = float(model.prior_scale)
        s0 = 2.0 * s if self.poisson else s  # the ready models' intercept scales
        self.scales = np.array([s0] + [s] * p)
        self.sigma_scale = s
        self.n_coef = p + 1
        self.ndim = self.n_coef + (0 if self.poisson else 1)
        self.prefix = prefix
        self._inv_var = 1.0 / self.scales**2
        self._inv_sigma_var = 1.0 / s**2
        self._prior_const = -float(np.sum(_HALF_LOG_2PI + np.log(self.scales)))
        if not self.poisson:
            self._prior_const += _HALF_LOG_2_OVER_PI - np.log(s)

    # -- nutpie ----------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Names of the expanded (constrained) variables, as PyMC's free variables."""
        return (
            ["intercept"]
            + (["beta"] if self.predictors else [])
            + ([] if self.poisson else ["sigma"])
        )

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        return (
            [()]
            + ([(len(self.predictors),)] if self.predictors else [])
            + ([] if self.poisson else [()])
        )

    def logp(self, x: np.ndarray, **data: np.ndarray) -> tuple[float, np.ndarray]:
        """(log density, gradient) at the unconstrained point ``x`` (one Python call per
        gradient: scalars go through ``math``, vectors through as few NumPy calls as possible)."""
        d = self.prefix
        k = self.n_coef
        b = x[:k]
        ztwy = data[d + "ztwy"]
        if self.poisson:
            rows = data[d + "rows"]
            with np.errstate(over="ignore", invalid="ignore"):
                e = np.exp(b[0] + rows @ b[1:]) * data[d + "row_weights"]
            se = float(e.sum())
            grad = ztwy - self._inv_var * b
            grad[0] -= se
            grad[1:] -= e @ rows
            lp = float(ztwy @ b - 0.5 * (self._inv_var @ (b * b))) - se
            return lp + self._prior_const + float(data[d + "const"]), grad
        u = float(x[k])
        inv_s2 = math.exp(-2.0 * u)
        zb = data[d + "ztwz"] @ b
        quad = float(data[d + "swyy"]) + float(b @ zb - 2.0 * (ztwy @ b))
        sw = float(data[d + "sw"])
        ratio = self._inv_sigma_var / inv_s2  # sigma^2 / s^2
        grad = np.empty(self.ndim)
        grad[:k] = (ztwy - zb) * inv_s2 - self._inv_var * b
        grad[k] = 1.0 - ratio - sw + quad * inv_s2
        lp = self._prior_const - 0.5 * float(self._inv_var @ (b * b))
        lp += -0.5 * ratio + u  # half-normal prior on sigma, log-transform Jacobian
        lp += -sw * (_HALF_LOG_2PI + u) - 0.5 * quad * inv_s2 + float(data[d + "const"])
        return lp, grad

    def expand(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The constrained values by name (``sigma = exp(u)``)."""
        k = self.n_coef
        out = {"intercept": np.array(x[0])}
        if self.predictors:
            out["beta"] = np.array(x[1:k])
        if not self.poisson:
            out["sigma"] = np.array(np.exp(x[k]))
        return out

    def initial_point(self, seed: int) -> np.ndarray:
        """PyMC's default start: the support point (0 for coefficients, ``s`` for sigma) on the
        unconstrained scale, plus U(-1, 1) jitter."""
        base = np.zeros(self.ndim)
        if not self.poisson:
            base[-1] = np.log(self.sigma_scale)
        return base + np.random.default_rng(seed).uniform(-1.0, 1.0, self.ndim)

    def compiled(self, data: Mapping[str, np.ndarray]):
        """A nutpie model (``nutpie.from_pyfunc``) with ``data`` as its swappable shared data."""
        from nutpie.compiled_pyfunc import from_pyfunc

        def make_logp():
            return self.logp

        def make_expand(seed1, seed2, chain):
            return lambda x, **_: self.expand(x)

        dims = {"beta": ("predictor",)} if self.predictors else {}
        coords = {"predictor": list(self.predictors)} if self.predictors else {}
        return from_pyfunc(
            ndim=self.ndim,
            make_logp_fn=make_logp,
            make_expand_fn=make_expand,
            make_initial_point_fn=self.initial_point,
            expanded_dtypes=[np.dtype("float64")] * len(self.names),
            expanded_shapes=self.shapes,
            expanded_names=self.names,
            shared_data={k: np.asarray(v, dtype=np.float64) for k, v in data.items()},
            dims=dims,
            coords=coords,
        )
