r"""The fused accountant: per-record Lipschitz bounds in one pass, without the n x M matrix.

The accountant (range-restricted paper eqs. 7 and 21; Savitsky, Williams & Hu 2022) needs, for
every record i and draw m of the fitted posterior, the sensitive part
:math:`g_{\theta_m}(x_i)` of a :class:`~pseudopost.privacy.decomposition.Decomposition`, and
reduces it to :math:`\max_m |g|` per record and :math:`\max_i |c_i g|` per draw
(:class:`~pseudopost.privacy.lipschitz.AbsReduction`), or to :math:`\sum_i c_i g` per draw
(calibration). For the ready models the log density has a closed form, so a Numba kernel
(:mod:`pseudopost.privacy.kernels.glm`) computes g and folds it into the reductions in the same
loop: no PyTensor compilation, no matrix, both cores. Up to :data:`DENSE_MAX` record-draws
(n = 2000 with 4000 draws) the same g and reductions run in NumPy on blocks
(:mod:`~pseudopost.privacy.kernels.dense`): a fraction of a second, where compiling the kernel
on a new machine costs several seconds. The choice depends on the problem's size only.

Two layers:

* :func:`block_kernel` ``(model, decomposition) -> BlockKernel | None``: a stateless kernel for
  one block of records given as column arrays (``Prepared.arrays`` names, float64), the contract
  the Dask backend maps over record partitions. Blocks combine by concatenating ``per_record``
  and taking the elementwise max of ``per_draw`` (sums add).
* :func:`record_function` ``(model, base)``: what the mechanism holds as its log-likelihood
  function: a :class:`FusedFunction` bound to the model's data when a kernel applies, else the
  generic :class:`~pseudopost.models.loglik.RecordFunction` (compiled lazily, on first use).
  :func:`~pseudopost.privacy.lipschitz.reduce_abs` and ``reduce_sum`` accept either.

Kernels exist for Normal, LogNormal, Poisson and negative-binomial regression and for every
decomposition: unrestricted and range-averaged (g = f), censored (clip(alpha f, -B, B)) and, for
the continuous families, range-truncated (f - log P(R) with log-CDFs in log space). Range
truncation of the count models uses the generic path (their regularised incomplete gamma/beta
log-CDFs are left to PyTensor). The privacy semantics are those of the decomposition; this module
only changes how the same numbers are computed (tested equal to brute-force SciPy).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pymc as pm
from scipy import special

from pseudopost.models.base import SynthModel
from pseudopost.models.families import FAMILIES, family
from pseudopost.models.weighting import value_of
from pseudopost.privacy.decomposition import (
    Censored,
    Decomposition,
    RangeAveraged,
    RangeTruncated,
    Unrestricted,
)
from pseudopost.privacy.kernels import dense, glm
from pseudopost.privacy.lipschitz import AbsReduction

__all__ = [
    "DENSE_MAX",
    "BlockKernel",
    "FusedFunction",
    "block_kernel",
    "dense_for",
    "fused_function",
    "record_function",
]

#: family name or alias -> its fused kernel (the ``kernel`` facet of the one family table)
_FAMILIES = {
    spelling: {"cont": glm.CONT, "poisson": glm.POISSON, "negbin": glm.NEGBIN}[f.kernel]
    for f in FAMILIES.values()
    if f.kernel is not None
    for spelling in (f.name, *f.aliases)
}
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)
_EMPTY = np.empty(0)
_LOCK = threading.Lock()
_TABLE_MAX = 2**22  # entries of the negative binomial's (draws x distinct counts) lgamma table
DENSE_MAX = 2**23  # record-draws up to which NumPy (kernels.dense) runs instead of Numba


@dataclass(frozen=True)
class BlockKernel:
    """The fused g of one ready model and decomposition, for a block of records.

    ``draws``: flat posterior draws by free-variable name (leading draw axis): ``intercept``,
    ``beta`` (draws, predictors), ``sigma`` (normal, log-normal), ``phi`` (negative binomial).
    ``arrays``: the block's columns (outcome and predictors) as in ``Prepared.arrays``.
    ``extras``: :meth:`Decomposition.extras` sliced to the block (``lower``/``upper`` for range
    truncation, ``alpha`` for censoring).
    """

    family: str
    outcome: str
    predictors: tuple[str, ...]
    variant: int
    bound: float = 0.0
    dense: bool | None = None  # NumPy (True) or Numba (False); None: by the call's size

    def use_dense(self, n: int, n_draws: int) -> bool:
        """Whether a call on n records and n_draws draws runs in NumPy (:mod:`.kernels.dense`):
        ``dense`` when set, else :func:`dense_for`. A chunked caller (Dask) sets ``dense`` from
        the whole problem, so every block takes the path the in-memory accountant takes."""
        return dense_for(n, n_draws) if self.dense is None else self.dense

    @property
    def log_scale(self) -> bool:
        """The outcome is modelled on the log scale (the family table's ``log_scale``)."""
        return family(self.family).log_scale

    @property
    def free_names(self) -> list[str]:
        names = ["intercept"] + (["beta"] if self.predictors else [])
        if _FAMILIES[self.family] == glm.CONT:
            names.append("sigma")
        elif _FAMILIES[self.family] == glm.NEGBIN:
            names.append("phi")
        return names

    @property
    def extra_names(self) -> tuple[str, ...]:
        return {glm.TRUNC: ("lower", "upper"), glm.CENSOR: ("alpha",)}.get(self.variant, ())

    # -- inputs ------------------------------------------------------------------------------
    def data(self, arrays: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        """(y, aux, Xt, idx, u): the per-record inputs that do not depend on the draws; for the
        negative binomial, the distinct counts u and each record's index into them."""
        missing = [c for c in (self.outcome, *self.predictors) if c not in arrays]
        if missing:
            raise ValueError(f"'arrays' lacks column(s) {missing}; it has {sorted(arrays)}.")
        x = np.ascontiguousarray(arrays[self.outcome], dtype=np.float64)
        if x.ndim != 1:
            raise ValueError(f"Column '{self.outcome}' must be 1-d; got shape {x.shape}.")
        cols = [np.asarray(arrays[p], dtype=np.float64) for p in self.predictors]
        bad = [p for p, c in zip(self.predictors, cols, strict=True) if c.shape != x.shape]
        if bad:
            raise ValueError(f"Column(s) {bad} must have the outcome's shape {x.shape}.")
        Xt = np.ascontiguousarray(np.stack(cols)) if cols else np.empty((0, x.size))
        none = np.empty(0, dtype=np.int64)
        if self.log_scale:
            with np.errstate(divide="ignore", invalid="ignore"):
                y = np.log(x)
            return y, -y, Xt, none, _EMPTY
        if _FAMILIES[self.family] == glm.CONT:
            return x, np.zeros_like(x), Xt, none, _EMPTY
        if _FAMILIES[self.family] == glm.NEGBIN:
            u, idx = np.unique(x, return_inverse=True)
            return x, -special.gammaln(x + 1.0), Xt, idx.astype(np.int64).reshape(-1), u
        return x, -special.gammaln(x + 1.0), Xt, none, _EMPTY

    def params(self, draws: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        """(b0, beta, q1, q2, q3): per-draw constants, computed once outside the record loop."""
        missing = [k for k in self.free_names if k not in draws]
        if missing:
            raise ValueError(f"Posterior draws lack the model's free variable(s) {missing}.")
        b0 = np.ascontiguousarray(draws["intercept"], dtype=np.float64).reshape(-1)
        m = b0.size
        p = len(self.predictors)
        beta = np.zeros((m, 0))
        if p:
            beta = np.ascontiguousarray(draws["beta"], dtype=np.float64).reshape(m, p)
        q1 = q2 = q3 = np.zeros(m)
        with np.errstate(divide="ignore", invalid="ignore"):
            if _FAMILIES[self.family] == glm.CONT:
                sigma = np.asarray(draws["sigma"], dtype=np.float64).reshape(m)
                q1, q2 = 1.0 / sigma, -np.log(sigma) - _HALF_LOG_2PI
            elif _FAMILIES[self.family] == glm.NEGBIN:
                phi = np.asarray(draws["phi"], dtype=np.float64).reshape(m)
                q1, q2, q3 = phi, special.gammaln(phi), np.log(phi)
        return b0, beta, *(np.ascontiguousarray(q) for q in (q1, q2, q3))

    def extra_arrays(self, n: int, extras: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        """(lo, hi, alpha) for the kernel: range bounds on the kernel's scale, or alpha."""
        missing = [k for k in self.extra_names if k not in extras]
        if missing:
            raise ValueError(f"The accountant needs per-record input(s) {missing}.")
        out = {k: np.asarray(extras[k], dtype=np.float64) for k in self.extra_names}
        for k, v in out.items():
            if v.shape != (n,):
                raise ValueError(f"'{k}' must have shape ({n},), one per record; got {v.shape}.")
        lo = hi = alpha = _EMPTY
        if self.variant == glm.TRUNC:
            lo, hi = out["lower"], out["upper"]
            if self.log_scale:  # P(a <= X <= b) = P(log a <= log X <= log b)
                with np.errstate(divide="ignore", invalid="ignore"):
                    lo = np.where(lo > 0, np.log(np.maximum(lo, 0)), -np.inf)
                    hi = np.where(hi > 0, np.log(np.maximum(hi, 0)), -np.inf)
            lo, hi = np.ascontiguousarray(lo), np.ascontiguousarray(hi)
        elif self.variant == glm.CENSOR:
            alpha = np.ascontiguousarray(out["alpha"])
        return lo, hi, alpha

    # -- the contract ------------------------------------------------------------------------
    def reduce_abs(
        self,
        draws: Mapping[str, np.ndarray],
        arrays: Mapping[str, np.ndarray],
        coefficient: np.ndarray,
        **extras: np.ndarray,
    ) -> AbsReduction:
        """``per_record[i] = max_m |g_m(x_i)|``, ``per_draw[m] = max_i |c_i g_m(x_i)|``."""
        return self._abs(self.data(arrays), draws, coefficient, extras)

    def reduce_sum(
        self,
        draws: Mapping[str, np.ndarray],
        arrays: Mapping[str, np.ndarray],
        coefficient: np.ndarray,
        **extras: np.ndarray,
    ) -> np.ndarray:
        """Per draw, :math:`\\sum_i c_i g_m(x_i)`."""
        return self._sum(self.data(arrays), draws, coefficient, extras)

    def values(
        self, draws: Mapping[str, np.ndarray], arrays: Mapping[str, np.ndarray], **extras
    ) -> np.ndarray:
        """The (draws, records) matrix of g (small blocks, checks)."""
        return self._values(self.data(arrays), draws, extras)

    # -- on prepared data --------------------------------------------------------------------
    def _inputs(self, data, draws, extras) -> tuple:
        """The kernel's arguments after (fam, var): data, extras, lgamma table and draws."""
        y, aux, Xt, idx, u = data
        lo, hi, alpha = self.extra_arrays(y.size, extras)
        params = self.params(draws)
        table = np.empty((0, 0))
        phi = params[2]
        if u.size and phi.size * u.size <= _TABLE_MAX and np.all(phi <= 1e10):
            # log Gamma(x + phi) - log Gamma(phi) once per (draw, distinct count)
            table = special.gammaln(u[None, :] + phi[:, None]) - params[3][:, None]
        return (y, aux, Xt, lo, hi, alpha, idx, table), params

    def _run(self, data, draws, coefficient, extras, want_sum):
        c = _coefficient(coefficient, data[0].size, signed=want_sum)
        inputs, params = self._inputs(data, draws, extras)
        if self.use_dense(data[0].size, params[0].size):  # by size only: no compile to pay
            return dense.abs_reduce(
                _FAMILIES[self.family], self.variant, *inputs, c, *params, float(self.bound),
                want_sum,
            )  # fmt: skip
        with _LOCK:  # one kernel at a time: each already uses every core (no oversubscription)
            return glm.abs_kernel(
                _FAMILIES[self.family], self.variant, *inputs, c, *params, float(self.bound),
                glm.chunks(data[0].size), want_sum,
            )  # fmt: skip

    def _abs(self, data, draws, coefficient, extras) -> AbsReduction:
        per_record, per_draw = self._run(data, draws, coefficient, extras, False)
        return AbsReduction(per_record, per_draw.max(axis=0))

    def _sum(self, data, draws, coefficient, extras) -> np.ndarray:
        return self._run(data, draws, coefficient, extras, True)[1].sum(axis=0)

    def _values(self, data, draws, extras) -> np.ndarray:
        inputs, params = self._inputs(data, draws, extras)
        if self.use_dense(data[0].size, params[0].size):
            return dense.values(_FAMILIES[self.family], self.variant, *inputs, *params, self.bound)
        with _LOCK:
            return glm.values_kernel(
                _FAMILIES[self.family], self.variant, *inputs, *params, float(self.bound)
            )


def dense_for(n: int, n_draws: int) -> bool:
    """True when n records x n_draws draws is at most :data:`DENSE_MAX` (NumPy's turn)."""
    return n * n_draws <= DENSE_MAX


def _coefficient(coefficient, n: int, signed: bool = False) -> np.ndarray:
    c = np.ascontiguousarray(coefficient, dtype=np.float64)
    if signed and c.shape == (n,):
        return c
    if c.shape != (n,) or np.any(c < 0):
        raise ValueError(f"'coefficient' must be {n} non-negative values; got shape {c.shape}.")
    return c


def block_kernel(model: SynthModel, decomposition: Decomposition) -> BlockKernel | None:
    """The fused kernel of a ready model under a decomposition; None when none applies (a
    user-written model, a new decomposition, or range truncation of a count model)."""
    name = getattr(model, "family", None)
    if name not in _FAMILIES or not hasattr(model, "predictors"):
        return None
    fam = _FAMILIES[name]
    if type(decomposition) in (Unrestricted, RangeAveraged):
        variant, bound = glm.F, 0.0
    elif type(decomposition) is RangeTruncated and fam == glm.CONT:
        variant, bound = glm.TRUNC, 0.0
    elif type(decomposition) is Censored:
        variant, bound = glm.CENSOR, float(decomposition.bound)
    else:
        return None
    return BlockKernel(name, model.outcome, tuple(model.predictors), variant, bound)


class FusedFunction:
    """A :class:`BlockKernel` bound to a built model's data: the fused stand-in for
    :class:`~pseudopost.models.loglik.RecordFunction` (same ``n``, ``refresh``, call interface).

    The data are read from the built model's data variables (``X`` and ``{outcome}_data``), so
    ``refresh()`` after ``pm.set_data`` picks up new data, as for the generic function.
    """

    fused = True
    record_chunking = True

    def __init__(self, kernel: BlockKernel, base: pm.Model) -> None:
        self.kernel = kernel
        self.base = base
        self.observed = [kernel.outcome]
        self.free_names = kernel.free_names
        self.extra_names = list(kernel.extra_names)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the record data from the model's data variables."""
        k = self.kernel
        y = value_of(self.base[f"{k.outcome}_data"])
        arrays = {k.outcome: y}
        if k.predictors:
            X = value_of(self.base["X"])
            arrays.update({p: X[:, j] for j, p in enumerate(k.predictors)})
        self._data = k.data(arrays)
        self.n = int(y.shape[0])

    def with_decomposition(self, decomposition: Decomposition) -> FusedFunction | None:
        """The same model's fused g under another decomposition (shares the data)."""
        k = self.kernel
        model = _Spec(k.family, k.outcome, k.predictors)
        kernel = block_kernel(model, decomposition)
        if kernel is None:
            return None
        out = object.__new__(FusedFunction)
        out.__dict__.update(self.__dict__)
        out.kernel = kernel
        out.extra_names = list(kernel.extra_names)
        return out

    def reduce_abs(self, draws, coefficient, **extras) -> AbsReduction:
        return self.kernel._abs(self._data, draws, coefficient, extras)

    def reduce_sum(self, draws, coefficient, **extras) -> np.ndarray:
        return self.kernel._sum(self._data, draws, coefficient, extras)

    def __call__(self, draws, records: slice = slice(None), **extras) -> np.ndarray:
        """Values for the given draws and records: shape (draws, records)."""
        y, aux, Xt, idx, u = self._data
        cut = lambda a: np.ascontiguousarray(a[..., records]) if a.size else a  # noqa: E731
        data = (cut(y), cut(aux), cut(Xt), cut(idx), u)
        ex = {k: np.asarray(extras[k])[records] for k in self.extra_names if k in extras}
        return self.kernel._values(data, draws, ex)


@dataclass(frozen=True)
class _Spec:
    family: str
    outcome: str
    predictors: tuple[str, ...]


def fused_function(
    model: SynthModel, base: pm.Model, decomposition: Decomposition | None = None
) -> FusedFunction | None:
    """The fused g of ``decomposition`` (default: the log-likelihood) bound to the built model's
    data, or None when no kernel applies or the model does not carry its data as
    ``X``/``{outcome}_data`` with the ready model's free variables."""
    kernel = block_kernel(model, Unrestricted() if decomposition is None else decomposition)
    if kernel is None:
        return None
    names = base.named_vars
    if (
        f"{kernel.outcome}_data" not in names
        or (kernel.predictors and "X" not in names)
        or {rv.name for rv in base.free_RVs} != set(kernel.free_names)
    ):
        return None
    return FusedFunction(kernel, base)


def record_function(model: SynthModel, base: pm.Model):
    """The per-record log-likelihood function of the accountant and the risk step: fused when a
    kernel applies, else the generic :class:`~pseudopost.models.loglik.RecordFunction`
    (compiled on first use)."""
    from pseudopost.models.loglik import RecordFunction

    fused = fused_function(model, base)
    return RecordFunction(base, model.observed) if fused is None else fused
