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
* :meth:`Part.sample` ``(params, X, u)``: synthesis by inversion; a ready model's
  ``sample_outcome`` is its family part's (:data:`pseudopost.models.families.FAMILIES`).

The reference each part is checked against, its family's ready model built as a weighted PyMC
model on the part's active records, lives with the tests (``tests/_reference/part_models.py``).

Per-record evaluation has two kinds. ``lookup`` parts (discrete outcomes) group the active
records by (design row, outcome) *key*: :math:`f` is a table over keys per draw, looked up per
record. ``gauss`` parts (normal, log-normal) tabulate the linear predictor per design row and
finish per record: :math:`f_i = k_m + J_i - \tfrac12((y_i - \eta_{m,g(i)})/\sigma_m)^2` with
:math:`k_m = -\log\sigma_m - \tfrac12\log 2\pi` and :math:`J_i` the record's Jacobian
(:math:`-\log x_i` for the log-normal, 0 for the normal).
The fused accountant (:mod:`pseudopost.privacy.kernels.parts`) uses the same tables.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import ClassVar

import numpy as np

from pseudopost.models.parts._fused import linear_rows
from pseudopost.models.parts.data import (
    PartData,
    check_weights,
    group_keys,
    group_rows,
    row_keys,
)
from pseudopost.models.parts.layout import Layout, Param
from pseudopost.models.parts.statistics import Stats

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

#: separator of part and parameter names in the accountant's draws
SEP = "::"


def dim_name(part: str, dim: str) -> str:
    """A part's own dimension in a whole file's DataTree as a plain identifier: ``"age.value"``
    and ``"predictor"`` give ``"age_value_predictor"`` (every character that is not a letter,
    a digit or ``_`` becomes ``_``), so ``az.summary``, ``.sel`` and plots read it."""
    return re.sub(r"\W", "_", f"{part}_{dim}")


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

    @property
    def width(self) -> int:
        """Columns of the design ``X``: the p predictors (a part whose records carry more, such
        as the masked categorical's allowed levels, says so)."""
        return self.p

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
        empty = self._statistics(np.zeros(0), np.zeros((0, self.width)), np.zeros(0))
        return Stats(self.family, empty)

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
        """Group the active records by key (lookup) or design row (gauss); the design rows are
        read-only (the tables' kernels keep their non-zeros by the array's identity,
        :mod:`pseudopost.models.parts._fused`)."""
        data = self.check_data(data)
        act = data.active
        rows, inv = group_rows(data.X[act])
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        rows.flags.writeable = False  # evaluated block after block: its non-zeros are cached
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
        whatever the record or draw blocking (the accountant's maxima combine exactly); over
        the rows' non-zeros only (:func:`~pseudopost.models.parts._fused.linear_rows`, the
        same sums).
        """
        if not self.p:
            return np.repeat(params["intercept"][:, None], rows.shape[0], axis=1)
        return linear_rows(rows, params["beta"], params["intercept"])

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
