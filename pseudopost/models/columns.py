"""How a frame's columns are held for modelling: float64 values or integer codes, and back.

:func:`encode_column` turns a column into float64 values (numeric) or codes 0..K-1 (categorical,
binary, ordinal) with a :class:`ColumnInfo` recording its kind, dtype and levels;
:func:`decode_column` is its inverse, so synthetic columns keep the input's dtype and categories.
Shared by the model registry (a column's default model), declared rules' schemas and the
mechanisms that decode their own draws (PRISM, REPS, the entropy mechanisms).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["ColumnInfo", "decode_column", "encode_column"]


@dataclass(frozen=True)
class ColumnInfo:
    """How a column is held: ``kind`` (continuous, integer, categorical, binary, ordinal), its
    original ``dtype``, its observed ``levels`` (code order) and its ``role`` in the release
    (``synthetic``, ``marginal`` or ``kept``)."""

    kind: str
    dtype: object
    levels: tuple = ()
    role: str = "kept"

    @property
    def categorical(self) -> bool:
        return self.kind in ("categorical", "binary", "ordinal")


def encode_column(
    series: pd.Series, name: str, *, as_categorical: bool = False
) -> tuple[np.ndarray, ColumnInfo]:
    """Float64 values of a numeric column, or integer codes (as float64) of a categorical one.

    Levels are the *observed* values only, in category order for a pandas ``Categorical`` and
    sorted otherwise, so no level absent from the data can be modelled or synthesized.
    ``as_categorical`` treats a numeric column as categorical (its distinct values as levels).
    """
    s = series
    if s.isna().any():
        i = int(np.flatnonzero(s.isna().to_numpy())[0])
        raise ValueError(
            f"Column '{name}' has missing values (row {s.index[i]!r}; {int(s.isna().sum())} in "
            f"all). Impute them or drop the rows/column before synthesis."
        )
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        used = set(np.unique(s.cat.codes.to_numpy()))
        levels = tuple(c for i, c in enumerate(dtype.categories) if i in used)
        kind = "ordinal" if dtype.ordered else "categorical"
    elif pd.api.types.is_bool_dtype(dtype):
        present = set(s.to_numpy(dtype=bool).tolist())
        levels = tuple(v for v in (False, True) if v in present)
        kind = "binary"
    elif pd.api.types.is_numeric_dtype(dtype) and as_categorical:
        levels = tuple(np.unique(s.to_numpy()).tolist())
        kind = "binary" if len(levels) == 2 else "categorical"
    elif pd.api.types.is_numeric_dtype(dtype):
        values = s.to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(values)):
            i = int(np.flatnonzero(~np.isfinite(values))[0])
            raise ValueError(f"Column '{name}' must be finite; row {s.index[i]!r} has {values[i]}.")
        kind = "integer" if pd.api.types.is_integer_dtype(dtype) else "continuous"
        return values.copy(), ColumnInfo(kind, dtype)
    elif pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
        levels = tuple(sorted(pd.unique(s.to_numpy(dtype=object)), key=lambda v: (str(v), v)))
        kind = "categorical"
    else:
        raise TypeError(
            f"Column '{name}' has dtype {dtype}, which sequential synthesis does not support "
            f"(numeric, bool, string/object or categorical are)."
        )
    codes = pd.Categorical(s.to_numpy(dtype=object), categories=list(levels)).codes
    return codes.astype(np.float64), ColumnInfo(kind, dtype, levels)


def decode_column(values: np.ndarray, info: ColumnInfo, index: pd.Index) -> pd.Series:
    """The inverse of :func:`encode_column`: a Series with the input's dtype (and categories)."""
    v = np.asarray(values)
    if info.categorical:
        codes = np.rint(v).astype(np.int64)
        labels = np.empty(len(codes), dtype=object)
        labels[:] = [info.levels[c] for c in codes] if len(codes) else []
        if isinstance(info.dtype, pd.CategoricalDtype):
            return pd.Series(pd.Categorical(labels, dtype=info.dtype), index=index)
        return pd.Series(labels, index=index).astype(info.dtype)
    if info.kind == "integer":
        return pd.Series(np.rint(v), index=index).astype(info.dtype)
    return pd.Series(v, index=index).astype(info.dtype)
