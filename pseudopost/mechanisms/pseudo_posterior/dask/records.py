r"""Records of a Dask DataFrame (or a Parquet file) as validated, block-chunked Dask arrays.

The pseudo posterior touches the data in passes (statistics, risk, accountant, synthesis); each
pass reads the records again, block by block, so memory is bounded by a few partitions whatever
n is. What is checked, and when:

* before any pass (from the frame's metadata): the model's columns exist and are numeric (not
  bool or object); then there are at least 2 records (the partition lengths, one read of one
  column);
* in the first pass (with the first statistics): every value finite and in the model's support
  (:meth:`GLM.check_outcome`), with the same ``ValueError`` as in memory, naming the column,
  the row label and the value.

:attr:`DaskRecords.matrix` holds the validated columns as float64, chunked in the canonical
blocks of :data:`~pseudopost.fitting.sufficient.STATS_BLOCK` records, so statistics summed block
by block in order are bit-identical to :func:`~pseudopost.fitting.sufficient.total_statistics`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd

from pseudopost._validation import check_finite_numeric
from pseudopost.fitting.sufficient import STATS_BLOCK
from pseudopost.models.base import SynthModel

__all__ = ["DaskRecords", "load_records"]


@dataclass(frozen=True)
class DaskRecords:
    """A model's columns of a Dask DataFrame: lazily validated, chunked over records."""

    frame: dd.DataFrame
    columns: tuple[str, ...]
    lengths: tuple[int, ...]
    dtypes: dict[str, object]
    matrix: da.Array

    @property
    def n(self) -> int:
        return int(sum(self.lengths))

    @property
    def offsets(self) -> np.ndarray:
        """First global record number of each partition of :attr:`frame`."""
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    @property
    def arrays(self) -> dict[str, da.Array]:
        """One float64 Dask array per column, chunks of ``STATS_BLOCK`` records."""
        return {c: self.matrix[:, j] for j, c in enumerate(self.columns)}

    def block_arrays(self) -> list:
        """Delayed ``(b, k)`` blocks of :attr:`matrix`, in record order."""
        return list(self.matrix.to_delayed().ravel())


def load_records(
    data: dd.DataFrame | str | os.PathLike, model: SynthModel, *, block: int = STATS_BLOCK
) -> DaskRecords:
    """Open ``data`` (a Dask DataFrame or a Parquet path) for ``model``; cheap checks now,
    value checks in the first pass (see the module docstring). ``data`` is never modified.

    ``block`` is the records per chunk of :attr:`DaskRecords.matrix`; keep the default
    :data:`STATS_BLOCK` for statistics bit-identical to the in-memory ones.
    """
    columns = tuple(model.columns)
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if not path.exists():
            raise ValueError(f"The Parquet path {str(path)!r} given as 'data' does not exist.")
        frame = dd.read_parquet(path, split_row_groups=True)
    elif isinstance(data, dd.DataFrame):
        frame = data
    else:
        raise TypeError(
            f"The 'data' argument must be a Dask DataFrame or a Parquet path. "
            f"Got {type(data).__name__}."
        )
    _check_schema(frame, columns)
    frame = frame[list(columns)]
    (lengths,) = dask.compute(frame[columns[0]].map_partitions(len))  # reads one column
    lengths = tuple(int(v) for v in np.asarray(lengths))
    if sum(lengths) < 2:
        raise ValueError(f"The 'data' DataFrame must have at least 2 rows. Got {sum(lengths)}.")
    if not isinstance(data, dd.DataFrame) and isinstance(frame._meta.index, pd.RangeIndex):
        # a Parquet file without a stored index: records are numbered 0..n-1, as pandas reads it
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        frame = frame.map_partitions(_renumber, starts, meta=frame._meta)
    meta = pd.DataFrame(
        {c: pd.Series(dtype=np.float64) for c in columns}, index=frame._meta.index[:0]
    )
    checked = frame.map_partitions(_validated, model, columns, meta=meta)
    matrix = checked.to_dask_array(lengths=list(lengths)).rechunk((int(block), len(columns)))
    dtypes = {c: frame.dtypes[c] for c in columns}
    return DaskRecords(frame, columns, lengths, dtypes, matrix)


def _check_schema(frame: dd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"Unknown column(s) {missing} in 'data'; available columns are {list(frame.columns)}."
        )
    for c in columns:
        dtype = frame.dtypes[c]
        if not (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)):
            raise TypeError(f"Column '{c}' must be numeric. Got dtype {dtype}.")


def _renumber(part: pd.DataFrame, starts: np.ndarray, partition_info=None) -> pd.DataFrame:
    start = int(starts[partition_info["number"]]) if partition_info else 0
    return part.set_axis(pd.RangeIndex(start, start + len(part)), axis=0)


def _validated(part: pd.DataFrame, model: SynthModel, columns: Sequence[str]) -> pd.DataFrame:
    """One partition's columns as float64 after the in-memory checks (finite, in support)."""
    arrays = check_finite_numeric(part, columns)
    check = getattr(model, "check_outcome", None)
    if check is not None and len(part):
        check(arrays[model.outcome], part)
    return pd.DataFrame(arrays, index=part.index)
