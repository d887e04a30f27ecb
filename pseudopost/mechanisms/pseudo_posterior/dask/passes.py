r"""The passes of the pseudo posterior over Dask records: statistics, accountant, weights.

Each function builds a Dask graph over the canonical record blocks of
:class:`~pseudopost.mechanisms.pseudo_posterior.dask.records.DaskRecords` and either computes a small result
(statistics, per-draw maxima, global min/max) or returns a lazy per-record Dask array with the
blocks' chunks (risk, weights, Lipschitz bounds). Nothing n-long is gathered in memory.

* Statistics (:func:`statistics`): :func:`~pseudopost.fitting.sufficient.block_statistics` per
  block, then the ordered sum ``np.sum(np.stack(per_block), axis=0)`` on the client, exactly as
  :func:`~pseudopost.fitting.sufficient.total_statistics` does in memory (bit-identical).
* Accountant (:func:`abs_reduction`): the one accountant's block function
  (:func:`pseudopost.privacy.accountant.account_block`) per block, the posterior draws broadcast
  (one key in the graph, so a distributed cluster ships them once per worker), the blocks joined
  by :func:`~pseudopost.privacy.accountant.combine_blocks`.
* Weights (:func:`risk_weights`): :math:`\alpha_i = \mathrm{clip}(c(1 - r_i) + g, 0, 1)` by the
  one weights function :func:`pseudopost.risk.weights.weights_from_risk` on each block, given
  the global :class:`~pseudopost.risk.weights.RiskSummary` of the risk (min and range, or mean
  and sd), a reduction computed first.
"""

from __future__ import annotations

from collections.abc import Mapping

import dask
import dask.array as da
import numpy as np

from pseudopost.fitting.sufficient import MAX_UNIQUE_ROWS, block_statistics, design_rows, merge_rows
from pseudopost.mechanisms.pseudo_posterior.dask.kernels import kernel_for
from pseudopost.mechanisms.pseudo_posterior.dask.records import DaskRecords
from pseudopost.models.base import SynthModel
from pseudopost.models.counts import PoissonRegression
from pseudopost.privacy.accountant import account_block, combine_blocks
from pseudopost.privacy.decomposition import Decomposition
from pseudopost.risk.weights import RiskSummary, weights_from_risk

__all__ = ["abs_reduction", "design_rows_of", "risk_weights", "statistics"]


def _split(block: np.ndarray, columns) -> dict[str, np.ndarray]:
    return {c: np.ascontiguousarray(block[:, j]) for j, c in enumerate(columns)}


def _block_stats(model, columns, block, weights, rows):
    w = np.ones(block.shape[0]) if weights is None else weights
    return block_statistics(model, _split(block, columns), w, rows=rows)


def _block_rows(model, columns, block):
    return design_rows(model, _split(block, columns))


def design_rows_of(records: DaskRecords, model: SynthModel) -> np.ndarray | None:
    """Poisson: the sorted unique predictor rows of all records (merged per block); else None.

    This is the first pass for Poisson (it validates every value); other models validate in
    the first :func:`statistics` pass. Blocks are merged a batch at a time, and more than
    :data:`~pseudopost.fitting.sufficient.MAX_UNIQUE_ROWS` unique rows stop the pass with a
    ``NotImplementedError`` (the compressed design would grow with n).
    """
    if not isinstance(model, PoissonRegression):
        return None
    blocks = records.block_arrays()
    rows = None
    for i in range(0, len(blocks), _BATCH):
        parts = [
            dask.delayed(_block_rows)(model, records.columns, b) for b in blocks[i : i + _BATCH]
        ]
        found = dask.compute(*parts)
        rows = merge_rows(*found) if rows is None else merge_rows(rows, *found)
        if rows.shape[0] > MAX_UNIQUE_ROWS:
            raise NotImplementedError(
                f"The Poisson design has more than {MAX_UNIQUE_ROWS} unique predictor rows; "
                "the Dask backend needs the compressed sufficient statistics (round or bin "
                f"the predictors {list(model.predictors)}), or use the in-memory mechanism."
            )
    return rows


_BATCH = 16


def statistics(
    records: DaskRecords,
    model: SynthModel,
    weights: da.Array | None = None,
    rows: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Weighted sufficient statistics of all records (bit-identical to ``total_statistics``)."""
    blocks = records.block_arrays()
    wb = [None] * len(blocks) if weights is None else _aligned(weights, records).to_delayed()
    parts = [
        dask.delayed(_block_stats)(model, records.columns, b, w, rows)
        for b, w in zip(blocks, wb, strict=True)
    ]
    per_block = dask.compute(*parts)
    out = {k: np.sum(np.stack([b[k] for b in per_block]), axis=0) for k in per_block[0]}
    if rows is not None:
        out["rows"] = rows
    return out


def _aligned(x: da.Array, records: DaskRecords) -> da.Array:
    chunks = records.matrix.chunks[0]
    return x if x.chunks[0] == chunks else x.rechunk((chunks,))


def _reduce(kernel, columns, draws, block, coefficient, extras):
    return account_block(kernel, draws, _split(block, columns), coefficient, extras)


def _per_record(red):
    return red.per_record


def _per_draw(red):
    return red.per_draw


def _combine(*per_draw):
    return combine_blocks(per_draw)


def abs_reduction(
    records: DaskRecords,
    model: SynthModel,
    decomposition: Decomposition,
    draws: Mapping[str, np.ndarray],
    coefficient: da.Array | None = None,
    extras: Mapping[str, da.Array] | None = None,
):
    """Lazy ``(per_record, per_draw)``: a Dask array of :math:`\\max_m |g_m(x_i)|` (record
    blocks) and a Delayed vector of :math:`\\max_i |c_i g_m(x_i)|` (one value per draw)."""
    # NumPy or Numba as the in-memory accountant would choose for all records and draws
    kernel = kernel_for(model, decomposition, records.n, int(np.asarray(draws["intercept"]).size))
    shared = dask.delayed({k: np.asarray(draws[k]) for k in kernel.free_names}, traverse=False)
    blocks = records.block_arrays()
    n_blocks = len(blocks)
    coef = [None] * n_blocks if coefficient is None else _aligned(coefficient, records).to_delayed()
    ex_blocks = [{} for _ in range(n_blocks)]
    for name, arr in (extras or {}).items():
        for k, d in enumerate(_aligned(arr, records).to_delayed()):
            ex_blocks[k][name] = d
    reds = [
        dask.delayed(_reduce)(kernel, records.columns, shared, b, c, e)
        for b, c, e in zip(blocks, coef, ex_blocks, strict=True)
    ]
    sizes = records.matrix.chunks[0]
    per_record = da.concatenate(
        [
            da.from_delayed(dask.delayed(_per_record)(r), shape=(s,), dtype=np.float64)
            for r, s in zip(reds, sizes, strict=True)
        ]
    )
    # each block's per-draw maxima first, so a block's per-record values can be freed at once
    per_draw = dask.delayed(_combine)(*[dask.delayed(_per_draw)(r) for r in reds])
    return per_record, per_draw


def risk_weights(risk: da.Array, summary: RiskSummary, scale: float, shift: float) -> da.Array:
    """Lazy :math:`\\alpha` from the risk and its global ``summary``
    (:func:`~pseudopost.risk.weights.weights_from_risk` on each block)."""
    return risk.map_blocks(weights_from_risk, summary, scale, shift, dtype=np.float64)
