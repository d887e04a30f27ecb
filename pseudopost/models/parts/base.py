r"""Column parts: one column's conditional model, fitted on its own from grouped statistics.

For fixed weights the pseudo posterior of a sequential model factorises over columns (guide:
*Whole files*): with disjoint parameters :math:`\theta_k` and independent priors,

.. math::
    \prod_i \prod_k p_k(x_{ik} \mid x_{i,<k}, \theta_k)^{\alpha_i}\, \pi(\theta_k)
    = \prod_k \Bigl[\prod_i p_k(x_{ik} \mid x_{i,<k}, \theta_k)^{\alpha_i}\, \pi(\theta_k)\Bigr].

A column with missing cells, codes or spikes is two *parts*: a status part (a categorical over
observed / missing / each code / spike) and a value part on the records whose status is
"observed". A record's log-likelihood is :math:`f(x_i) = \sum_{\text{parts } q} a_{iq}
f_q(x_i)` with :math:`a_{iq}` the part's ``active`` mask, so every part is fitted alone on the
weights :math:`w_i a_{iq}` and the accountant sums the parts of paired draws.

A :class:`Part` is a frozen spec (family, outcome, predictor names of the encoded design,
``prior_scale``, levels); its data are :class:`PartData` ``(y, X, active)``. Everything is
NumPy in, NumPy out:

* :attr:`Part.layout` (:class:`Layout`): the free parameters, their constrained shapes and
  transforms (``log`` for sigma/phi, ``ordered`` for cutpoints, ``simplex`` for
  probabilities), in the ready model's declaration order (PyMC's value variables match them by
  name: ``Param.value_name``); ``unpack``/``pack`` map the unconstrained vector to
  constrained values and back.
* :meth:`Part.statistics` ``(data, weights) -> Stats``: the exact grouped statistics of the
  weighted log-likelihood :math:`\sum_i w_i a_i f(x_i)` (records grouped by distinct design
  row, and by outcome where the family needs it: guide: *Whole files*). Statistics of
  record blocks *add*: ``stats(A) + stats(B)`` merges the pattern tables (union of patterns,
  per-pattern sums added; sums elsewhere), equal to ``stats(A ∪ B)`` up to floating-point
  rounding, so Dask can map blocks and reduce with ``+``.
* :meth:`Part.log_density` ``(stats)``: :class:`PartDensity` with ``logp_grad(x)``, the weighted
  log-likelihood + log prior + log-Jacobian on the unconstrained scale and its gradient, in
  NumPy, or in a cached Numba kernel for the large multinomial and logistic parts
  (:mod:`pseudopost.models.parts._fused`: one pass over the patterns, no temporaries); and,
  for the families with :attr:`Part.has_hessian` (multinomial logit, logistic, ordered
  logit), ``hessian(x)``, the exact Hessian from the same statistics. The nutpie model is built by
  :func:`pseudopost.fitting.parts.nutpie_model` ``(part, stats)`` (a function of the fitting
  layer, not a method: models sit below fitting and never import it).
* :meth:`Part.loglik` ``(draws, data, records)``: the per-record log-likelihood (0 where not
  active) of a block of draws, computed per distinct pattern and gathered per record.
* :meth:`Part.sample` ``(params, X, u)``: synthesis by inversion, the ready model's
  ``sample_outcome`` for the same uniforms.
* :meth:`Part.pymc_model` ``(data, weights)``: the reference PyMC model (the ready model on the
  active records, weighted with :func:`~pseudopost.models.weighting.weighted_model`), for tests.

Per-record evaluation has two kinds. ``lookup`` parts (discrete outcomes) group the active
records by (design row, outcome) *key*: :math:`f` is a table over keys per draw, looked up per
record. ``gauss`` parts (normal, log-normal) tabulate the linear predictor per design row and
finish per record: :math:`f_i = k_m + J_i - \tfrac12((y_i - \eta_{m,g(i)})/\sigma_m)^2` with
:math:`k_m = -\log\sigma_m - \tfrac12\log 2\pi` and :math:`J_i` the record's Jacobian
(:math:`-\log x_i` for the log-normal, 0 for the normal).
The fused accountant (:mod:`pseudopost.privacy.kernels.parts`) uses the same tables.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy import special

__all__ = [
    "Encoded",
    "Layout",
    "Param",
    "Part",
    "PartData",
    "PartDensity",
    "Stats",
    "group_keys",
    "group_rows",
    "row_keys",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_TRANSFORMS = ("none", "log", "ordered", "ordered_mid", "simplex")
#: statistics keyed by design row (first axis aligned with ``rows``)
ROW_FIELDS = ("w", "wy", "counts")
#: statistics keyed by distinct outcome value (aligned with ``values``)
VALUE_FIELDS = ("vweights",)
#: separator of part and parameter names in the accountant's draws
SEP = "::"


def dim_name(part: str, dim: str) -> str:
    """A part's own dimension in a whole file's DataTree as a plain identifier: ``"age.value"``
    and ``"predictor"`` give ``"age_value_predictor"`` (every character that is not a letter,
    a digit or ``_`` becomes ``_``), so ``az.summary``, ``.sel`` and plots read it."""
    return re.sub(r"\W", "_", f"{part}_{dim}")


# ------------------------------------------------------------------------------ data
@dataclass(frozen=True, eq=False)
class PartData:
    """One part's data: outcome ``y`` (n,), design ``X`` (n, p) and ``active`` mask (n,).

    ``y`` holds codes 0..K-1 (as float64) for categorical families and values otherwise; it is
    ignored where ``active`` is False (any value, NaN included). ``X`` is the encoded design
    without an intercept column (p may be 0); it must be finite on active records. Records
    that are not active contribute exactly 0 to the part's likelihood.
    """

    y: np.ndarray
    X: np.ndarray
    active: np.ndarray

    def __post_init__(self) -> None:
        y = np.asarray(self.y, dtype=np.float64)
        if y.ndim != 1:
            raise ValueError(f"'y' must be 1-d (one value per record); got shape {y.shape}.")
        n = y.shape[0]
        X = np.asarray(self.X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != n:
            raise ValueError(f"'X' must have shape ({n}, p) to match 'y'; got {X.shape}.")
        active = np.asarray(self.active)
        if active.dtype != np.bool_:
            raise TypeError(f"'active' must be a bool array; got dtype {active.dtype}.")
        if active.shape != (n,):
            raise ValueError(f"'active' must have shape ({n},) to match 'y'; got {active.shape}.")
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "active", active)

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    def take(self, records: slice | np.ndarray) -> PartData:
        """The data of ``records`` (a slice or an index array)."""
        if isinstance(records, slice):
            return PartData(self.y[records], self.X[records], self.active[records])
        idx = np.asarray(records)
        return PartData(self.y[idx], self.X[idx], self.active[idx])


#: integer values spanning fewer than this many codes are ranked by counting, not sorting
_COUNTING_SPAN = 2**22


def _rank(v: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of distinct values, each value's rank among them) of a 1-d array.

    Integer values within a span of :data:`_COUNTING_SPAN` (the codes of a discrete design)
    are ranked by counting, in O(n); others by sorting (``np.unique``).
    """
    if v.size:
        lo, hi = v.min(), v.max()
        span = hi - lo
        if np.isfinite(span) and span < _COUNTING_SPAN:
            iv = (v - lo).astype(np.int64)
            if np.array_equal(iv, v - lo):  # integer-valued
                present = np.bincount(iv, minlength=int(span) + 1) > 0
                rank = np.cumsum(present) - 1
                return int(rank[-1]) + 1, rank[iv]
    values, inv = np.unique(v, return_inverse=True)
    return int(values.size), inv.reshape(-1).astype(np.int64)


def row_keys(X: np.ndarray) -> np.ndarray:
    """An int64 key per row of ``X`` (n, p) whose order is the rows' lexicographic order.

    Mixed radix over the ranks of each column's distinct values (``-0.0`` equals ``0.0``);
    when the radix would overflow, the key so far is replaced by its rank first, so any number
    of columns works. Cost: a count (integer codes) or a sort per column, never a structured
    ``np.unique(axis=0)``.
    """
    n, p = X.shape
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for j in range(p):
        k, inv = _rank(X[:, j])
        k = max(k, 1)
        if radix > (2**62) // k:
            radix, key = _rank(key)
        key = key * k + inv
        radix *= k
    return key


def group_keys(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a record of each distinct key, in sorted key order; each record's group index).

    Any member represents its group (they share the key), here the last one.
    """
    u, inv = _rank(key.astype(np.float64)) if key.size and key.max() < 2**53 else _rank(key)
    rep = np.empty(u, dtype=np.int64)
    rep[inv] = np.arange(key.size)
    return rep, inv


def group_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (lexicographic) distinct rows (U, p) of ``X`` and each record's row index (n,).

    With p = 0 every record shares one (empty) row. ``-0.0`` and ``0.0`` are one row.
    """
    n, p = X.shape
    if p == 0:
        return np.zeros((1 if n else 0, 0)), np.zeros(n, dtype=np.int64)
    if n == 0:
        return np.zeros((0, p)), np.zeros(0, dtype=np.int64)
    rep, inv = group_keys(row_keys(X))
    return X[rep] + 0.0, inv


def check_weights(weights: np.ndarray, n: int) -> np.ndarray:
    """Weights as float64 (n,), finite and >= 0 (error names the first bad record)."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"'weights' must have shape ({n},), one per record; got {w.shape}.")
    bad = ~(np.isfinite(w) & (w >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"'weights' must be finite and >= 0; record {i} has {float(w[i])!r}.")
    return w


# ------------------------------------------------------------------------------ layout
@dataclass(frozen=True)
class Param:
    """One free parameter: ``name``, constrained ``shape``, ``transform`` and ``prior``.

    Priors: ``("normal", mu, sd)`` (``mu`` a float or a tuple of the parameter's size),
    ``("halfnormal", s)``, ``("gamma", a, b)`` (shape a, rate b), ``("dirichlet", a)``.
    """

    name: str
    shape: tuple[int, ...]
    transform: str = "none"
    prior: tuple = ("normal", 0.0, 1.0)

    def __post_init__(self) -> None:
        if self.transform not in _TRANSFORMS:
            raise ValueError(f"'transform' must be one of {_TRANSFORMS}; got {self.transform!r}.")

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def free_size(self) -> int:
        """Unconstrained size (one less for a simplex)."""
        return self.size - 1 if self.transform == "simplex" else self.size

    @property
    def value_name(self) -> str:
        """PyMC's name of the unconstrained value variable."""
        return self.name if self.transform == "none" else f"{self.name}_{self.transform}__"

    @property
    def support_point(self) -> np.ndarray:
        """PyMC's default start (constrained): the prior's support point."""
        kind = self.prior[0]
        if kind == "normal":
            return np.broadcast_to(np.asarray(self.prior[1], np.float64), self.shape).copy()
        if kind == "halfnormal":
            return np.full(self.shape, float(self.prior[1]))
        if kind == "gamma":
            return np.full(self.shape, self.prior[1] / self.prior[2])
        a = np.broadcast_to(np.asarray(self.prior[1], np.float64), self.shape)
        return a / a.sum()

    # -- transforms ----------------------------------------------------------------------
    @property
    def anchor(self) -> int:
        """The free coordinate that is a cutpoint itself under ``ordered_mid`` (the middle)."""
        return (self.size - 1) // 2

    def backward(self, x: np.ndarray) -> np.ndarray:
        """Constrained value from the unconstrained ``x`` (..., free_size)."""
        lead = x.shape[:-1]
        if self.transform == "log":
            v = np.exp(x)
        elif self.transform == "ordered":
            v = np.cumsum(np.concatenate([x[..., :1], np.exp(x[..., 1:])], axis=-1), axis=-1)
        elif self.transform == "ordered_mid":
            a = self.anchor
            e = np.exp(x)
            up = x[..., a : a + 1] + np.cumsum(e[..., a + 1 :], axis=-1)
            down = x[..., a : a + 1] - np.cumsum(e[..., :a][..., ::-1], axis=-1)[..., ::-1]
            v = np.concatenate([down, x[..., a : a + 1], up], axis=-1)
        elif self.transform == "simplex":
            z = np.concatenate([x, -x.sum(axis=-1, keepdims=True)], axis=-1)
            v = special.softmax(z, axis=-1)
        else:
            v = x
        return v.reshape((*lead, *self.shape))

    def forward(self, value: np.ndarray) -> np.ndarray:
        """Unconstrained ``(..., free_size)`` from the constrained value."""
        v = np.asarray(value, dtype=np.float64)
        lead = v.shape[: v.ndim - len(self.shape)]
        v = v.reshape((*lead, self.size))
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.transform == "log":
                return np.log(v)
            if self.transform == "ordered":
                return np.concatenate([v[..., :1], np.log(np.diff(v, axis=-1))], axis=-1)
            if self.transform == "ordered_mid":
                a = self.anchor
                gaps = np.log(np.diff(v, axis=-1))  # gap k: c_{k+1} - c_k
                return np.concatenate([gaps[..., :a], v[..., a : a + 1], gaps[..., a:]], axis=-1)
            if self.transform == "simplex":
                lv = np.log(v)
                return lv[..., :-1] - lv.mean(axis=-1, keepdims=True)
        return v

    def log_prior_grad(self, v: np.ndarray) -> tuple[float, np.ndarray]:
        """Log prior density at the constrained value and its gradient (same shape)."""
        kind = self.prior[0]
        if kind == "normal":
            mu = np.asarray(self.prior[1], np.float64)
            mu = mu.reshape(self.shape) if mu.ndim else float(mu)
            sd = float(self.prior[2])
            d = (v - mu) / sd
            lp = -0.5 * float(np.sum(d * d)) - self.size * (math.log(sd) + _HALF_LOG_2PI)
            return lp, -d / sd
        if kind == "halfnormal":
            s = float(self.prior[1])
            lp = self.size * (0.5 * math.log(2.0 / math.pi) - math.log(s))
            return lp - 0.5 * float(np.sum(v * v)) / s**2, -v / s**2
        if kind == "gamma":
            a, b = float(self.prior[1]), float(self.prior[2])
            const = a * math.log(b) - math.lgamma(a)
            with np.errstate(divide="ignore"):
                lv = np.log(v)
            return self.size * const + float(np.sum((a - 1.0) * lv - b * v)), (a - 1.0) / v - b
        a = np.broadcast_to(np.asarray(self.prior[1], np.float64), self.shape)
        with np.errstate(divide="ignore"):
            lv = np.log(v)
        lp = special.gammaln(a.sum()) - special.gammaln(a).sum() + float(np.sum((a - 1.0) * lv))
        return float(lp), (a - 1.0) / v

    def chain(self, x: np.ndarray, v: np.ndarray, g: np.ndarray) -> tuple[float, np.ndarray]:
        """(log-Jacobian, gradient on x) from the gradient ``g`` on the constrained value."""
        g = np.asarray(g, np.float64).reshape(-1)
        if self.transform == "log":
            return float(x.sum()), v.reshape(-1) * g + 1.0
        if self.transform == "ordered":
            tail = np.cumsum(g[::-1])[::-1]  # sum_{j >= k} dL/dc_j
            out = tail.copy()
            out[1:] = np.exp(x[1:]) * tail[1:] + 1.0
            return float(x[1:].sum()), out
        if self.transform == "ordered_mid":
            a = self.anchor
            e = np.exp(x)
            out = np.empty_like(g)
            out[a] = g.sum()
            above = np.cumsum(g[::-1])[::-1]  # sum_{j >= i} dL/dc_j
            below = np.cumsum(g)  # sum_{j <= i} dL/dc_j
            out[a + 1 :] = e[a + 1 :] * above[a + 1 :] + 1.0
            out[:a] = -e[:a] * below[:a] + 1.0
            return float(x.sum() - x[a]), out
        if self.transform == "simplex":
            p = v.reshape(-1)
            k = p.size
            pg = p * g
            dz = pg - p * pg.sum() + (1.0 - k * p)  # softmax chain + d log|J| / dz
            with np.errstate(divide="ignore"):
                lj = math.log(k) + float(np.log(p).sum())
            return lj, dz[:-1] - dz[-1]
        return 0.0, g


@dataclass(frozen=True)
class Layout:
    """The free parameters of a part, in a fixed order (the ready model's declaration order).

    The unconstrained vector is the parameters' unconstrained values in that order. Parameters
    without a transform and with a normal prior (coefficients) are handled together in one
    vector operation per gradient; the others (sigma, phi, cutpoints, p) one by one.
    """

    params: tuple[Param, ...]

    def __post_init__(self) -> None:
        slices, start = [], 0
        for p in self.params:
            slices.append(slice(start, start + p.free_size))
            start += p.free_size
        plain = [
            (p, sl) for p, sl in zip(self.params, slices, strict=True)
            if p.transform == "none" and p.prior[0] == "normal"
        ]  # fmt: skip
        idx = np.concatenate([np.arange(sl.start, sl.stop) for _, sl in plain] or [np.zeros(0)])
        mu = np.concatenate(
            [np.broadcast_to(np.asarray(p.prior[1], np.float64), p.shape).ravel() for p, _ in plain]
            or [np.zeros(0)]
        )
        sd = np.concatenate([np.full(p.size, float(p.prior[2])) for p, _ in plain] or [np.zeros(0)])
        object.__setattr__(self, "_slices", slices)
        object.__setattr__(self, "_size", start)
        object.__setattr__(self, "_plain_idx", idx.astype(np.int64))
        object.__setattr__(self, "_plain_mu", mu)
        object.__setattr__(self, "_plain_ivar", 1.0 / sd**2 if sd.size else sd)
        object.__setattr__(self, "_plain_const", -float(np.sum(np.log(sd) + _HALF_LOG_2PI)))
        object.__setattr__(
            self,
            "_others",
            [(p, sl) for p, sl in zip(self.params, slices, strict=True) if (p, sl) not in plain],
        )

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        return [p.shape for p in self.params]

    @property
    def transforms(self) -> list[str]:
        return [p.transform for p in self.params]

    @property
    def size(self) -> int:
        """Length of the unconstrained vector."""
        return self._size

    @property
    def slices(self) -> dict[str, slice]:
        return {p.name: sl for p, sl in zip(self.params, self._slices, strict=True)}

    def __getitem__(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def unpack(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """Constrained values by name from unconstrained ``x`` of shape (..., size)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape[-1:] != (self._size,):
            raise ValueError(
                f"Expected a vector of length {self._size} (last axis); got {x.shape}."
            )
        lead = x.shape[:-1]
        out = {}
        for p, sl in zip(self.params, self._slices, strict=True):
            if p.transform == "none":
                out[p.name] = x[..., sl].reshape((*lead, *p.shape))
            else:
                out[p.name] = p.backward(x[..., sl])
        return out

    def pack(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        """The unconstrained vector (..., size) of constrained ``values`` (inverse of unpack)."""
        missing = [n for n in self.names if n not in values]
        if missing:
            raise ValueError(f"'values' lacks parameter(s) {missing}; expected {self.names}.")
        parts = [p.forward(values[p.name]) for p in self.params]
        return np.concatenate(parts, axis=-1) if parts else np.zeros(0)

    def log_prior_jacobian(
        self, x: np.ndarray, values: Mapping[str, np.ndarray], grads: Mapping[str, np.ndarray]
    ) -> tuple[float, np.ndarray]:
        """(log prior + log-Jacobian, gradient on x) given the log-likelihood's gradient on the
        constrained values (``grads``; a missing name counts as 0)."""
        out = np.empty(self._size)
        idx = self._plain_idx
        d = x[idx] - self._plain_mu
        out[idx] = -d * self._plain_ivar
        total = self._plain_const - 0.5 * float(d @ (d * self._plain_ivar))
        for p, sl in zip(self.params, self._slices, strict=True):
            if p.transform == "none" and p.name in grads:
                out[sl] += np.reshape(grads[p.name], -1)
        for p, sl in self._others:
            v = values[p.name]
            lp, gp = p.log_prior_grad(v)
            g = gp + grads[p.name] if p.name in grads else gp
            lj, gx = p.chain(x[sl], v, g)
            total += lp + lj
            out[sl] = gx
        return total, out

    def hessian(
        self,
        x: np.ndarray,
        values: Mapping[str, np.ndarray],
        grads: Mapping[str, np.ndarray],
        hess: np.ndarray,
    ) -> np.ndarray:
        r"""Hessian (size, size) of log-likelihood + log prior + log-Jacobian at unconstrained
        ``x``, from the log-likelihood's gradient ``grads`` and Hessian ``hess`` on the
        constrained values (flattened in layout order).

        With :math:`v = T(x)` (blockwise), :math:`G = \nabla_v(\ell + \log\pi)` and
        :math:`H_v = \nabla_v^2(\ell + \log\pi)`,

        .. math::
            \nabla_x^2 = J^\top H_v J + \sum_k G_k \nabla_x^2 v_k
            + \nabla_x^2 \log|J|,

        :math:`J = \partial v/\partial x`. Transforms: none (:math:`J = I`), ``log``
        (:math:`v = e^x`: :math:`J = \mathrm{diag}(e^x)`, :math:`\nabla^2 v_k = e^{x_k}` on
        the diagonal), ``ordered`` (:math:`c_k = x_0 + \sum_{1 \le i \le k} e^{x_i}`:
        :math:`J_{k0} = 1`, :math:`J_{ki} = e^{x_i}` for :math:`1 \le i \le k`, and
        :math:`\partial^2 c_k / \partial x_i^2 = e^{x_i}` for :math:`1 \le i \le k`) and
        ``ordered_mid`` (anchored at the middle a: :math:`c_a = x_a`, :math:`c_k = c_a +
        \sum_{a < i \le k} e^{x_i}` above, :math:`c_k = c_a - \sum_{k \le i < a} e^{x_i}`
        below; the same terms with signs); all log-Jacobians are linear in x. Priors: normal (:math:`-1/s^2`), half-normal
        (:math:`-1/s^2`), gamma (:math:`-(a-1)/v^2`), all diagonal. Simplex parameters raise
        ``NotImplementedError``.
        """
        d = self._size
        hv = np.array(hess, dtype=np.float64, copy=True).reshape(d, d)
        G = np.zeros(d)
        jac = np.zeros((d, d))
        second = np.zeros(d)
        identity = True
        for p, sl in zip(self.params, self._slices, strict=True):
            if p.transform == "simplex":
                raise NotImplementedError("No analytic Hessian under the simplex transform.")
            v = np.asarray(values[p.name], np.float64).reshape(-1)
            _, gp = p.log_prior_grad(values[p.name])
            g = np.reshape(gp, -1) + (np.reshape(grads[p.name], -1) if p.name in grads else 0.0)
            G[sl] = g
            kind = p.prior[0]
            if kind == "normal":
                hp = np.full(p.size, -1.0 / float(p.prior[2]) ** 2)
            elif kind == "halfnormal":
                hp = np.full(p.size, -1.0 / float(p.prior[1]) ** 2)
            elif kind == "gamma":
                hp = -(float(p.prior[1]) - 1.0) / v**2
            else:
                raise NotImplementedError(f"No analytic Hessian of the {kind} prior.")
            idx = np.arange(sl.start, sl.stop)
            hv[idx, idx] += hp
            xs = x[sl]
            if p.transform == "none":
                jac[idx, idx] = 1.0
            elif p.transform == "log":
                identity = False
                jac[idx, idx] = v
                second[idx] = v * g
            elif p.transform == "ordered_mid":  # gaps hang off the middle cutpoint
                identity = False
                a, m = p.anchor, xs.size
                e = np.exp(xs)
                rows = np.arange(m)[:, None]
                cols = np.arange(m)[None, :]
                block = np.where((cols > a) & (rows >= cols), e[None, :], 0.0)
                block = block - np.where((cols < a) & (rows <= cols), e[None, :], 0.0)
                block[:, a] = 1.0
                jac[sl, sl] = block
                above = np.cumsum(g[::-1])[::-1]
                below = np.cumsum(g)
                sec = np.zeros(m)
                sec[a + 1 :] = e[a + 1 :] * above[a + 1 :]
                sec[:a] = -e[:a] * below[:a]
                second[idx] = sec
            else:  # ordered
                identity = False
                e = np.exp(xs)
                block = np.tril(np.broadcast_to(e, (xs.size, xs.size)))
                block[:, 0] = 1.0
                jac[sl, sl] = block
                tail = np.cumsum(g[::-1])[::-1]  # sum_{k >= i} G_k
                second[idx[1:]] = e[1:] * tail[1:]
        if identity:
            return hv
        out = jac.T @ hv @ jac
        out[np.arange(d), np.arange(d)] += second
        return 0.5 * (out + out.T)

    def check_draws(self, draws: Mapping[str, np.ndarray], label: str = "") -> dict:
        """Draws by name as float64 with a common leading draw axis, shapes checked."""
        out, n_draws = {}, None
        for p in self.params:
            key = f"{label}{p.name}"
            if key not in draws:
                raise ValueError(f"The draws lack '{key}'; they have {sorted(draws)}.")
            a = np.asarray(draws[key], dtype=np.float64)
            if a.shape[1:] != p.shape:
                raise ValueError(
                    f"Draws of '{key}' must have shape (draws, *{p.shape}); got {a.shape}."
                )
            if n_draws is None:
                n_draws = a.shape[0]
            elif a.shape[0] != n_draws:
                raise ValueError(f"Draws of '{key}' have {a.shape[0]} draws, not {n_draws}.")
            out[p.name] = a
        return out


# ------------------------------------------------------------------------------ statistics
def _merge_keyed(keys: list[np.ndarray], fields: list[dict[str, np.ndarray]]):
    """Union of sorted key arrays (rows (U, p) or values (V,)) and per-key sums of fields."""
    allk = np.concatenate(keys, axis=0)
    if allk.ndim == 2 and allk.shape[1] == 0:
        uniq = np.zeros((1 if allk.shape[0] else 0, 0))
        inv = np.zeros(allk.shape[0], dtype=np.int64)
    elif allk.shape[0] == 0:
        uniq, inv = allk, np.zeros(0, dtype=np.int64)
    else:
        uniq, inv = group_rows(allk if allk.ndim == 2 else allk[:, None])
        uniq = uniq if allk.ndim == 2 else uniq[:, 0]
    merged = {}
    for name in fields[0]:
        stacked = np.concatenate([f[name] for f in fields], axis=0)
        out = np.zeros((uniq.shape[0], *stacked.shape[1:]))
        np.add.at(out, inv, stacked)
        merged[name] = out
    return uniq, merged


@dataclass(frozen=True, eq=False)
class Stats:
    """Exact grouped statistics of one part's weighted log-likelihood (float64 arrays).

    Keys by family (U distinct design rows ``rows`` (U, p), K levels, V distinct outcomes):

    ========================  ====================================================================
    bernoulli                 ``rows``, ``w`` (U) :math:`\\sum w_i`, ``wy`` (U) :math:`\\sum w_i y_i`
    categorical, ordinal      ``rows``, ``counts`` (U, K) :math:`\\sum w_i 1[y_i = k]`
    poisson                   ``rows``, ``w``, ``wy``, ``const`` :math:`-\\sum w_i \\log y_i!`
    (zero-truncated) neg.bin  ``rows``, ``w``, ``wy``, ``values`` (V), ``vweights`` (V), ``const``
    normal, lognormal         ``sw, swy, swyy, ztwz, ztwy, const``
                              (``pseudopost.fitting.sufficient.block_statistics``' keys)
    dirichlet_categorical     ``counts`` (K)
    ========================  ====================================================================

    ``a + b`` is the statistics of the union of the two blocks: ``rows`` (and ``values``) are
    united (sorted, distinct) and the per-row (per-value) sums added; every other array is
    added. Exact up to floating-point rounding of the sums.
    """

    family: str
    arrays: Mapping[str, np.ndarray] = field(repr=False)

    def __add__(self, other: Stats) -> Stats:
        if not isinstance(other, Stats):
            return NotImplemented
        if other.family != self.family or set(other.arrays) != set(self.arrays):
            raise ValueError(
                f"Cannot add statistics of '{other.family}' ({sorted(other.arrays)}) to "
                f"'{self.family}' ({sorted(self.arrays)})."
            )
        a, b = self.arrays, other.arrays
        out: dict[str, np.ndarray] = {}
        done = set()
        if "rows" in a:
            names = [k for k in ROW_FIELDS if k in a]
            out["rows"], merged = _merge_keyed(
                [a["rows"], b["rows"]], [{k: a[k] for k in names}, {k: b[k] for k in names}]
            )
            out.update(merged)
            done |= {"rows", *names}
        if "values" in a:
            names = [k for k in VALUE_FIELDS if k in a]
            out["values"], merged = _merge_keyed(
                [a["values"], b["values"]], [{k: a[k] for k in names}, {k: b[k] for k in names}]
            )
            out.update(merged)
            done |= {"values", *names}
        for k in a:
            if k not in done:
                out[k] = np.asarray(a[k] + b[k], dtype=np.float64)
        return Stats(self.family, out)

    @property
    def n_patterns(self) -> int:
        """Number of distinct design rows (1 for families without rows)."""
        return int(self.arrays["rows"].shape[0]) if "rows" in self.arrays else 1


# ------------------------------------------------------------------------------ encoding
@dataclass(frozen=True, eq=False)
class Encoded:
    """One part's records grouped for per-record evaluation (see the module docstring).

    ``index[i]`` is record i's key (lookup parts) or design row (gauss parts), -1 where the
    record is not active. Lookup parts: key k has design row ``key_row[k]`` and outcome
    ``key_y[k]``. Gauss parts: ``y`` the outcome on the modelling scale and ``aux`` the
    record's Jacobian :math:`J_i` (:math:`-\\log x_i` for the log-normal), 0 where not active.
    """

    n: int
    rows: np.ndarray
    index: np.ndarray
    key_row: np.ndarray
    key_y: np.ndarray
    y: np.ndarray
    aux: np.ndarray

    @property
    def n_keys(self) -> int:
        return int(self.key_row.shape[0])


# ------------------------------------------------------------------------------ the part
@dataclass(frozen=True)
class Part(ABC):
    """One column part (see the module docstring); subclasses are the families.

    Parameters
    ----------
    outcome
        The outcome's name (for messages and coords).
    predictors
        Names of the design's columns, in order (no intercept column).
    prior_scale
        s of the family's priors (fixed numbers, never from the data); default as the ready
        model (2.5 for level and count families, 10 for normal and log-normal).
    name
        The part's name (default ``outcome``), unique within a file: the accountant's draws
        are keyed ``"{name}::{param}"``.
    """

    outcome: str
    predictors: tuple[str, ...] = ()
    _: KW_ONLY
    prior_scale: float | None = None
    name: str | None = None

    family: ClassVar[str] = ""
    kind: ClassVar[str] = "lookup"
    default_prior_scale: ClassVar[float] = 2.5
    #: whether :meth:`exact_draws` samples the posterior exactly (conjugate family)
    conjugate: ClassVar[bool] = False
    #: whether :meth:`hessian` is analytic (else the Laplace preconditioner differences
    #: gradients)
    has_hessian: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not isinstance(self.outcome, str) or not self.outcome:
            raise TypeError(f"'outcome' must be a non-empty str. Got {self.outcome!r}.")
        preds = (self.predictors,) if isinstance(self.predictors, str) else self.predictors
        preds = tuple(preds)
        if any(not isinstance(p, str) for p in preds):
            raise TypeError(f"'predictors' must be names (str). Got {self.predictors!r}.")
        if len(set(preds)) != len(preds):
            raise ValueError(f"'predictors' has duplicates: {list(preds)}.")
        object.__setattr__(self, "predictors", preds)
        s = type(self).default_prior_scale if self.prior_scale is None else self.prior_scale
        if isinstance(s, bool) or not isinstance(s, int | float | np.floating | np.integer):
            raise TypeError(f"'prior_scale' must be a positive number. Got {s!r}.")
        if not (np.isfinite(s) and s > 0):
            raise ValueError(f"'prior_scale' must be a finite number > 0. Got {s!r}.")
        object.__setattr__(self, "prior_scale", float(s))
        name = self.outcome if self.name is None else self.name
        if not isinstance(name, str) or not name or SEP in name:
            raise ValueError(f"'name' must be a non-empty str without '{SEP}'. Got {name!r}.")
        object.__setattr__(self, "name", name)

    @property
    def p(self) -> int:
        return len(self.predictors)

    # -- spec ------------------------------------------------------------------------------
    @property
    @abstractmethod
    def layout(self) -> Layout:
        """The free parameters (names, constrained shapes, transforms, priors)."""

    def dims(self) -> dict[str, tuple[str, ...]]:
        """Dimension names of the non-scalar parameters (for nutpie/xarray)."""
        return {"beta": ("predictor",)} if self.p else {}

    def coords(self) -> dict[str, list]:
        return {"predictor": list(self.predictors)} if self.p else {}

    def initial_point(self, seed: int) -> np.ndarray:
        """PyMC's default start: the priors' support points on the unconstrained scale plus
        U(-1, 1) jitter (seeded)."""
        base = self.layout.pack({p.name: p.support_point for p in self.layout.params})
        return base + np.random.default_rng(seed).uniform(-1.0, 1.0, self.layout.size)

    # -- data ------------------------------------------------------------------------------
    def check_data(self, data: PartData) -> PartData:
        """``data`` checked against the part: p columns, outcome in the support on active
        records, finite design on active records."""
        if not isinstance(data, PartData):
            raise TypeError(f"'data' must be a PartData. Got {type(data).__name__}.")
        if data.X.shape[1] != self.p:
            raise ValueError(
                f"Part '{self.name}' has {self.p} predictor(s) {list(self.predictors)}; "
                f"'X' has {data.X.shape[1]} column(s)."
            )
        act = data.active
        Xa = data.X[act]
        if Xa.size and not np.isfinite(Xa).all():
            i = int(np.flatnonzero(act)[np.flatnonzero(~np.isfinite(Xa).all(axis=1))[0]])
            raise ValueError(f"Part '{self.name}': 'X' is not finite on active record {i}.")
        ya = data.y[act]
        bad = ~self._in_support(ya)
        if bad.any():
            i = int(np.flatnonzero(act)[np.flatnonzero(bad)[0]])
            raise ValueError(
                f"Part '{self.name}' ({self.family}): outcome '{self.outcome}' must be "
                f"{self.support} on active records; record {i} has {float(data.y[i])!r} "
                f"({int(bad.sum())} such value(s))."
            )
        return data

    support: ClassVar[str] = "finite"

    def _in_support(self, y: np.ndarray) -> np.ndarray:
        return np.isfinite(y)

    # -- statistics and density ------------------------------------------------------------
    def statistics(self, data: PartData, weights: np.ndarray) -> Stats:
        """Exact grouped statistics of :math:`\\sum_i w_i a_i f(x_i)` (see :class:`Stats`);
        records with weight 0 or not active are left out (they contribute exactly 0)."""
        data = self.check_data(data)
        w = check_weights(weights, data.n)
        keep = data.active & (w > 0)
        return Stats(self.family, self._statistics(data.y[keep], data.X[keep], w[keep]))

    @abstractmethod
    def _statistics(self, y: np.ndarray, X: np.ndarray, w: np.ndarray) -> dict:
        """The statistics' arrays of the given (active, weighted) records."""

    def empty_statistics(self) -> Stats:
        """Statistics of no records (the identity of ``+``)."""
        return Stats(self.family, self._statistics(np.zeros(0), np.zeros((0, self.p)), np.zeros(0)))

    def log_density(self, stats: Stats) -> PartDensity:
        """The part's weighted log posterior density on the unconstrained scale."""
        self._check_stats(stats)
        return PartDensity(self, stats)

    def _check_stats(self, stats: Stats) -> None:
        if not isinstance(stats, Stats) or stats.family != self.family:
            got = stats.family if isinstance(stats, Stats) else type(stats).__name__
            raise ValueError(f"Part '{self.name}' needs '{self.family}' statistics; got {got}.")

    def logp_grad(
        self, x: np.ndarray, arrays: Mapping[str, np.ndarray]
    ) -> tuple[float, np.ndarray]:
        """(log density, gradient) at unconstrained ``x`` given the statistics' ``arrays``."""
        x = np.asarray(x, dtype=np.float64)
        values = self.layout.unpack(x)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ll, grads = self._loglik_grad(values, arrays)
            lp, grad = self.layout.log_prior_jacobian(x, values, grads)
        return float(ll + lp), grad

    @abstractmethod
    def _loglik_grad(
        self, values: Mapping[str, np.ndarray], arrays: Mapping[str, np.ndarray]
    ) -> tuple[float, dict[str, np.ndarray]]:
        """Weighted log-likelihood and its gradient on the constrained values."""

    def derived(self, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Arrays computed once from the statistics' ``arrays`` that make :meth:`logp_grad`
        faster when passed beside them (the large multinomial and logistic parts: the design
        rows' non-zeros, ``sparse_rows``); none by
        default. The density is the same with or without them."""
        return {}

    def hessian(self, x: np.ndarray, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
        """Hessian (size, size) of the log density at unconstrained ``x`` given the
        statistics' ``arrays`` (exact, :meth:`Layout.hessian`); only where
        :attr:`has_hessian`."""
        if not self.has_hessian:
            raise NotImplementedError(f"The {self.family} part has no analytic Hessian.")
        x = np.asarray(x, dtype=np.float64)
        values = self.layout.unpack(x)
        plain = all(p.transform == "none" for p in self.layout.params)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            hess = self._loglik_hess(values, arrays)
            grads = {} if plain else self._loglik_grad(values, arrays)[1]
            return self.layout.hessian(x, values, grads, hess)

    def _loglik_hess(
        self, values: Mapping[str, np.ndarray], arrays: Mapping[str, np.ndarray]
    ) -> np.ndarray:
        """Hessian of the weighted log-likelihood on the constrained values (flattened in
        layout order); families with :attr:`has_hessian` define it."""
        raise NotImplementedError

    def nested(self) -> tuple[Part, Callable[[dict], dict]] | None:
        """A simpler part on the same statistics whose parameters are a subset of this one's,
        with the map from its values to this part's (the rest at their neutral values), or
        None: the preconditioner's mode search starts from the simpler part's mode."""
        return None

    def exact_draws(self, stats: Stats, n_draws: int, rng: np.random.Generator) -> dict:
        """Exact posterior draws (conjugate families only)."""
        raise NotImplementedError(f"The {self.family} part has no conjugate posterior.")

    # -- per-record evaluation -------------------------------------------------------------
    def encode(self, data: PartData) -> Encoded:
        """Group the active records by key (lookup) or design row (gauss)."""
        data = self.check_data(data)
        act = data.active
        rows, inv = group_rows(data.X[act])
        index = np.full(data.n, -1, dtype=np.int64)
        empty = np.zeros(0)
        if self.kind == "gauss":
            index[act] = inv
            y, aux = np.zeros(data.n), np.zeros(data.n)
            y[act], aux[act] = self._gauss_outcome(data.y[act])
            return Encoded(data.n, rows, index, np.arange(rows.shape[0]), empty, y, aux)
        ya = data.y[act]
        if not ya.size:
            return Encoded(data.n, rows, index, np.zeros(0, np.int64), empty, empty, empty)
        rep, kinv = group_keys(row_keys(np.column_stack([inv.astype(np.float64), ya])))
        index[act] = kinv
        return Encoded(data.n, rows, index, inv[rep], ya[rep], empty, empty)

    def _gauss_outcome(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def table(self, params: Mapping[str, np.ndarray], enc: Encoded):
        """Per-draw tables of a block of draws (``params`` checked, leading draw axis).

        Lookup parts: ``(B, n_keys)`` log-likelihood of each key. Gauss parts: ``(eta (B, U),
        inv_sigma (B,), const (B,))`` with :math:`f_i = \\text{const} + a_i -
        \\tfrac12((y_i - \\eta_{g(i)})\\,\\text{inv\\_sigma})^2`.
        """
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if self.kind == "gauss":
                return self._gauss_table(params, enc.rows)
            return self._key_table(params, enc.rows, enc.key_row, enc.key_y)

    def _key_table(self, params, rows, key_row, key_y) -> np.ndarray:
        raise NotImplementedError

    def _gauss_table(self, params, rows):
        raise NotImplementedError

    def eta_rows(self, params: Mapping[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        """Linear predictor (B, U) of ``intercept`` + rows @ ``beta`` for a block of draws.

        Accumulated predictor by predictor (no BLAS), so a row's value does not depend on
        which other rows or draws are in the block: per-record values are bit-identical
        whatever the record or draw blocking (the accountant's maxima combine exactly).
        """
        eta = np.repeat(params["intercept"][:, None], rows.shape[0], axis=1)
        for k in range(self.p):
            eta += params["beta"][:, k, None] * rows[:, k]
        return eta

    def loglik(
        self,
        draws: Mapping[str, np.ndarray],
        data: PartData,
        records: slice | np.ndarray = slice(None),
    ) -> np.ndarray:
        """Per-record log-likelihood (B, n_records) of a block of B draws (0 where not active),
        computed per distinct pattern and gathered per record."""
        params = self.layout.check_draws(draws)
        enc = self.encode(data.take(records))
        return self.gather(self.table(params, enc), enc)

    def gather(self, table, enc: Encoded) -> np.ndarray:
        """Per-record values (B, n) from :meth:`table`'s output."""
        act = enc.index >= 0
        if self.kind == "gauss":
            eta, inv, const = table
            out = np.zeros((eta.shape[0], enc.n))
            r = (enc.y[act] - eta[:, enc.index[act]]) * inv[:, None]
            out[:, act] = const[:, None] + enc.aux[act] - 0.5 * r * r
            return out
        out = np.zeros((table.shape[0], enc.n))
        out[:, act] = table[:, enc.index[act]]
        return out

    # -- synthesis -------------------------------------------------------------------------
    def check_sample_inputs(
        self, params: Mapping[str, np.ndarray], X: np.ndarray, u: np.ndarray
    ) -> tuple[dict, np.ndarray, np.ndarray]:
        """One draw's params by name, X (n, p) and u (n,) in (0, 1), checked."""
        u = np.asarray(u, dtype=np.float64)
        if u.ndim == 2 and u.shape[1] == 1:
            u = u[:, 0]
        if u.ndim != 1:
            raise ValueError(f"'u' must have shape (n,) or (n, 1); got {u.shape}.")
        if not np.all((u > 0) & (u < 1)):
            raise ValueError("'u' must hold uniforms strictly inside (0, 1).")
        X = np.asarray(X, dtype=np.float64)
        if X.shape != (u.size, self.p):
            raise ValueError(f"'X' must have shape ({u.size}, {self.p}); got {X.shape}.")
        out = {}
        for prm in self.layout.params:
            if prm.name not in params:
                raise ValueError(f"'params' lacks '{prm.name}'; it has {sorted(params)}.")
            v = np.asarray(params[prm.name], dtype=np.float64)
            if v.shape != prm.shape:
                raise ValueError(f"'{prm.name}' must have shape {prm.shape}; got {v.shape}.")
            out[prm.name] = v
        return out, X, u

    def linear(self, params: Mapping[str, np.ndarray], X: np.ndarray) -> np.ndarray:
        """One draw's linear predictor (n,), as the ready models' ``eta``."""
        out = np.full(X.shape[0], float(params["intercept"]))
        if self.p:
            out += X @ params["beta"]
        return out

    @abstractmethod
    def sample(self, params: Mapping[str, np.ndarray], X: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Outcomes (n,) by inversion from uniforms ``u`` under one draw's ``params``."""

    # -- reference -------------------------------------------------------------------------
    def ready_model(self):
        """The ready model with the same priors (outcome ``"y"``, predictors ``x0..``)."""
        raise NotImplementedError

    def pymc_model(self, data: PartData, weights: np.ndarray):
        """The reference PyMC model: the ready model on the active records, their likelihood
        weighted by ``weights`` (:func:`~pseudopost.models.weighting.weighted_model`)."""
        from pseudopost.models.base import Prepared
        from pseudopost.models.weighting import weighted_model

        data = self.check_data(data)
        w = check_weights(weights, data.n)
        act = data.active
        model = self.ready_model()
        arrays = {f"x{j}": data.X[act, j].copy() for j in range(self.p)}
        arrays["y"] = data.y[act].copy()
        n = int(act.sum())
        k = getattr(self, "n_levels", None)
        categories = {"y": tuple(range(k))} if k is not None else {}
        prepared = Prepared(arrays, n, pd.RangeIndex(n), {}, categories)
        return weighted_model(model.build(prepared), weights=w[act])


class PartDensity:
    """A part's log posterior density given statistics (:meth:`Part.log_density`).

    ``logp_grad(x)``: weighted log-likelihood + log prior + log-Jacobian at the unconstrained
    ``x`` and its gradient; ``logp_data(x, **arrays)``: the same with other statistics' arrays
    (nutpie's swappable shared data, with their :meth:`Part.derived` arrays); ``arrays``: the
    statistics' arrays and their derived ones.
    """

    def __init__(self, part: Part, stats: Stats) -> None:
        self.part = part
        self.stats = stats
        self.layout = part.layout
        self.ndim = part.layout.size
        self.arrays = {**stats.arrays, **part.derived(stats.arrays)}

    def logp_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        return self.part.logp_grad(x, self.arrays)

    def logp_data(self, x: np.ndarray, **arrays: np.ndarray) -> tuple[float, np.ndarray]:
        return self.part.logp_grad(x, arrays)

    @property
    def has_hessian(self) -> bool:
        return self.part.has_hessian

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """Hessian of the log density at unconstrained ``x`` (:meth:`Part.hessian`)."""
        return self.part.hessian(x, self.arrays)

    def expand(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """Constrained values by name."""
        return self.layout.unpack(x)

    def initial_point(self, seed: int) -> np.ndarray:
        return self.part.initial_point(seed)
