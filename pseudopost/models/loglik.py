r"""Per-record functions of the posterior draws, compiled once and vectorised over draws.

The accountant and the risk step need :math:`f_{\theta_m}(x_i) = \log p(x_i\mid\theta_m)` for
every record i and posterior draw m. :class:`RecordFunction` builds the model's per-record graph
once, replaces the free random variables by placeholders with a leading draw axis
(``vectorize_graph``) and compiles it, so one call evaluates a block of draws for a block of
records. Data with a leading record axis (``pm.Data`` and observed values) become inputs, so the
same function serves any slice of records: the accountant reduces over chunks of records and
draws and never holds the n x M matrix when it would exceed its memory budget.

Record chunking needs record data whose shape is not pinned by ``dims`` (a ``dims="record"``
data variable carries a shape check). A model where slicing does not reproduce the full result is
detected by a trial evaluation and handled by chunking over draws only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import xarray as xr
from pytensor.graph.replace import graph_replace, vectorize_graph

from pseudopost.models.weighting import n_records, observed_names, record_logp, value_of

__all__ = ["RecordFunction", "stack_draws"]


def stack_draws(posterior: xr.Dataset, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Posterior values of ``names`` with (chain, draw) flattened into one leading axis."""
    out = {}
    for name in names:
        da = posterior[name]
        other = [d for d in da.dims if d not in ("chain", "draw")]
        arr = da.transpose("chain", "draw", *other).to_numpy()
        out[name] = arr.reshape((-1, *arr.shape[2:]))
    return out


class RecordFunction:
    """A per-record quantity of a PyMC model as a compiled function of (draws, records).

    Parameters
    ----------
    model
        The (unweighted) PyMC model.
    observed
        Observed variables that make up a record (default: all).
    graph
        ``graph(model, observed, extras) -> TensorVariable`` of shape (n,) in terms of the
        model's random variables; default: the per-record log-likelihood. ``extras`` are extra
        per-record symbolic inputs (e.g. range bounds), created from ``extra_inputs``.
    extra_inputs
        Names of extra per-record float vectors passed to ``__call__`` as keyword arguments.
    """

    def __init__(
        self,
        model: pm.Model,
        observed: Sequence[str] | None = None,
        graph: Callable | None = None,
        extra_inputs: Sequence[str] = (),
    ) -> None:
        self.observed = observed_names(model, observed)
        self.n = n_records(model, self.observed)
        self.free_names = [rv.name for rv in model.free_RVs]
        self.extra_names = list(extra_inputs)
        self._model = model
        self._graph_fn = graph
        self._record_data = self._find_record_data(model)
        self._data_values = [value_of(v) for v in self._record_data]
        self._compiled = None
        self._reducers: dict[str, Callable] = {}
        self.record_chunking = False  # set by check_chunking once draws are available

    @property
    def _fn(self) -> Callable:
        """The compiled function, built on first use (a fused accountant never pays for it)."""
        if self._compiled is None:
            inputs, out = self._graph()
            self._compiled = pytensor.function(inputs, out, on_unused_input="ignore")
        return self._compiled

    def _graph(self) -> tuple[list, pt.TensorVariable]:
        """Inputs (batched draws, record data, extras) and the (draws, records) output."""
        model = self._model
        extras = {name: pt.vector(name, dtype="float64") for name in self.extra_names}
        graph = self._graph_fn or (lambda m, o, e: record_logp(m, o))
        out = graph(model, self.observed, extras)
        # an observed variable that is a parameter of another (b ~ N(a, 1), a observed) enters
        # at its observed value, not as a random draw
        out = graph_replace(
            out, {rv: model.rvs_to_values[rv] for rv in model.observed_RVs}, strict=False
        )
        placeholders = [rv.type() for rv in model.free_RVs]
        replace = dict(zip(model.free_RVs, placeholders, strict=True))
        sym_data = [
            pt.tensor(dtype=v.dtype, shape=(None,) + (None,) * (v.ndim - 1))
            for v in self._record_data
        ]
        replace.update(zip(self._record_data, sym_data, strict=True))
        out = graph_replace(out, replace, strict=False)
        batched = [pt.tensor(dtype=p.dtype, shape=(None, *p.type.shape)) for p in placeholders]
        out = vectorize_graph(out, replace=dict(zip(placeholders, batched, strict=True)))
        return [*batched, *sym_data, *extras.values()], out

    def _reducer(self, kind: str) -> Callable:
        r"""The block reductions compiled into the graph (no (draws, records) array returned):
        ``"abs"``: (:math:`\max_m |g|` per record, :math:`\max_i |c_i g|` per draw), a NaN
        :math:`g` counting as :math:`\infty`; ``"sum"``: :math:`\sum_i c_i g` per draw."""
        if kind not in self._reducers:
            inputs, out = self._graph()
            c = pt.vector("coefficient", dtype="float64")
            if kind == "abs":
                a = pt.abs(out)
                a = pt.switch(pt.isnan(a), np.inf, a)
                outputs = [a.max(axis=0), (c * a).max(axis=1)]
            else:
                outputs = [pt.dot(out, c)]
            self._reducers[kind] = pytensor.function(
                [*inputs, c], outputs, on_unused_input="ignore"
            )
        return self._reducers[kind]

    def reduce_block(
        self,
        kind: str,
        draws: Mapping[str, np.ndarray],
        records: slice,
        coefficient: np.ndarray,
        **extras: np.ndarray,
    ) -> list[np.ndarray]:
        """The ``kind`` reductions (see ``_reducer``) of one block of draws and records;
        ``coefficient`` holds the block's records' values."""
        theta = self._theta(draws)
        full = records.indices(self.n)[:2] == (0, self.n)
        if not (full or self.record_chunking):
            g = self(draws, records, **extras)  # the model cannot be sliced: reduce in numpy
            if kind == "sum":
                return [g @ coefficient]
            a = np.abs(g)
            a[np.isnan(a)] = np.inf
            return [a.max(axis=0), (coefficient * a).max(axis=1)]
        data = [v[records] for v in self._data_values]
        ex = [np.asarray(extras[k], float)[records] for k in self.extra_names]
        out = self._reducer(kind)(*theta, *data, *ex, np.asarray(coefficient, dtype=np.float64))
        return [np.asarray(o) for o in out]

    def _theta(self, draws: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        missing = [k for k in self.free_names if k not in draws]
        if missing:
            raise ValueError(f"Posterior draws lack the model's free variable(s) {missing}.")
        return [np.asarray(draws[k], dtype=np.float64) for k in self.free_names]

    def _find_record_data(self, model: pm.Model) -> list:
        found = []
        for var in [*model.data_vars, *(model.rvs_to_values[model[o]] for o in self.observed)]:
            if not (hasattr(var, "get_value") or hasattr(var, "data")):
                continue  # an expression of data (e.g. a cast): its data input is found instead
            shape = np.shape(value_of(var))
            if len(shape) >= 1 and shape[0] == self.n and all(var is not f for f in found):
                found.append(var)
        return found

    def refresh(self) -> None:
        """Re-read the record data from the model's data variables (after ``pm.set_data``)."""
        self._data_values = [value_of(v) for v in self._record_data]

    def __call__(
        self,
        draws: Mapping[str, np.ndarray],
        records: slice = slice(None),
        **extras: np.ndarray,
    ) -> np.ndarray:
        """Values for the given draws (leading axis) and records: shape (draws, records)."""
        theta = self._theta(draws)
        if records != slice(None) and not self.record_chunking:
            full = self._fn(
                *theta,
                *self._data_values,
                *(np.asarray(extras[k], float) for k in self.extra_names),
            )
            return np.asarray(full)[:, records]
        data = [v[records] for v in self._data_values]
        ex = [np.asarray(extras[k], float)[records] for k in self.extra_names]
        return np.asarray(self._fn(*theta, *data, *ex))

    def check_chunking(self, draws: Mapping[str, np.ndarray], **extras: np.ndarray) -> bool:
        """Enable record chunking if a sliced evaluation equals the full one on one draw."""
        one = {k: np.asarray(v)[:1] for k, v in draws.items()}
        self.record_chunking = False
        ones = np.ones(self.n)
        full = self.reduce_block("abs", one, slice(None), ones, **extras)[0]
        k = min(self.n, 3)
        tail = slice(self.n - k, self.n)
        try:
            self.record_chunking = True
            part = self.reduce_block("abs", one, tail, ones[tail], **extras)[0]
            self.record_chunking = bool(np.allclose(part, full[tail], equal_nan=True))
        except Exception:
            self.record_chunking = False
        return self.record_chunking

    def blocks(self, n_draws: int, max_bytes: int) -> Iterator[tuple[slice, slice]]:
        """(records, draws) blocks whose float64 values fit in ``max_bytes``."""
        cells = max(1, int(max_bytes) // 8)
        if self.n <= cells or not self.record_chunking:
            rec = self.n
            dr = max(1, min(n_draws, cells // self.n))
        else:
            rec, dr = cells, 1
        for i in range(0, self.n, rec):
            for j in range(0, n_draws, dr):
                yield slice(i, min(i + rec, self.n)), slice(j, min(j + dr, n_draws))
