r"""Outcomes with K levels (binary, categorical, ordinal): codes, levels and the input's dtype.

A level outcome is modelled as integer codes :math:`0, \dots, K-1`; ``Prepared.categories``
keeps the K levels in code order and ``Prepared.dtypes`` the input's dtype, so synthetic output
has exactly the input's levels and dtype (a pandas ``Categorical`` keeps its categories and
order, even those the data do not use; a bool column stays bool; strings stay strings). Only
levels that occur in the data are modelled, unless the user lists them (``levels``), so no level
absent from both can ever be synthesized.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytensor.tensor as pt

from pseudopost._validation import check_columns, check_finite_numeric, check_frame
from pseudopost.models._glm import GLM
from pseudopost.models.base import Prepared

__all__ = ["LevelGLM", "decode_levels", "invert_cdf", "level_indicator"]


def _observed_levels(s: pd.Series, name: str, ordered_only: bool) -> tuple:
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if ordered_only and not dtype.ordered:
            raise ValueError(
                f"Column '{name}' is an unordered Categorical; pass 'levels' in order or make it "
                f"an ordered Categorical."
            )
        used = set(s.cat.codes.to_numpy().tolist())
        return tuple(c for i, c in enumerate(dtype.categories) if i in used)
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        return tuple(np.unique(s.to_numpy()).tolist())
    if ordered_only:
        raise ValueError(
            f"Column '{name}' has dtype {dtype}, whose order is unknown; pass 'levels' in order "
            f"(lowest first) or make it an ordered Categorical."
        )
    values = pd.unique(s.to_numpy(dtype=object))
    return tuple(sorted(values, key=lambda v: (type(v).__name__, str(v))))


def decode_levels(codes: np.ndarray, levels: Sequence, dtype: object, index: pd.Index) -> pd.Series:
    """Codes 0..K-1 back to the levels, as a Series of the input's ``dtype``."""
    k = np.rint(np.asarray(codes, dtype=np.float64)).astype(np.int64)
    if k.size and (k.min() < 0 or k.max() >= len(levels)):
        raise ValueError(f"Codes must lie in 0..{len(levels) - 1}; got {k.min()}..{k.max()}.")
    if isinstance(dtype, pd.CategoricalDtype):
        pos = dtype.categories.get_indexer(pd.Index(list(levels), dtype=object))
        return pd.Series(pd.Categorical.from_codes(pos[k], dtype=dtype), index=index)
    values = np.empty(len(levels), dtype=object)
    values[:] = list(levels)
    return pd.Series(values[k], index=index).astype(dtype)


def invert_cdf(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Smallest code k with F(k) >= u, from the CDF at codes 0..K-2 (shape (n, K-1))."""
    return (np.asarray(cdf) < np.asarray(u)[:, None]).sum(axis=1).astype(np.float64)


def level_indicator(value: pt.TensorVariable, k: int) -> pt.TensorVariable:
    """One-hot matrix (..., k) of integer codes ``value`` (all zeros outside 0..k-1)."""
    return pt.eq(pt.shape_padright(pt.cast(value, "int64")), pt.arange(k)).astype("float64")


class LevelGLM(GLM):
    """A GLM whose outcome has K >= 2 levels, held as codes 0..K-1."""

    discrete = True
    default_prior_scale = 2.5
    #: whether the levels' order is part of the model (ordinal)
    ordered = False
    #: the user's levels in order (None: the observed levels)
    levels: tuple | None = None

    def encode(self, data: pd.DataFrame) -> tuple[np.ndarray, tuple]:
        """Codes (float64) and levels of the outcome; errors name the row and value."""
        s, name = data[self.outcome], self.outcome
        missing = s.isna().to_numpy()
        if missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise ValueError(
                f"Column '{name}' has missing values for {type(self).__name__}; row "
                f"{data.index[i]!r} ({int(missing.sum())} in all)."
            )
        if self.levels is not None:
            levels = self.levels
        else:
            levels = _observed_levels(s, name, self.ordered)
        self.check_levels(levels, data)
        lookup = {v: k for k, v in enumerate(levels)}
        values = s.to_numpy(dtype=object)
        codes = np.array([lookup.get(v, -1) for v in values], dtype=np.int64)
        bad = codes < 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"Column '{name}' must take one of the levels {list(levels)} for "
                f"{type(self).__name__}; row {data.index[i]!r} has {values[i]!r} "
                f"({int(bad.sum())} such value(s))."
            )
        return codes.astype(np.float64), tuple(levels)

    def check_levels(self, levels: tuple, data: pd.DataFrame) -> None:
        if len(levels) < 2:
            raise ValueError(
                f"Column '{self.outcome}' has {len(levels)} level(s) {list(levels)}; "
                f"{type(self).__name__} needs at least 2."
            )

    def prepare(self, data: pd.DataFrame | None) -> Prepared:
        if data is None:
            raise ValueError(
                f"{type(self).__name__} needs a DataFrame with columns {self.columns}."
            )
        check_frame(data, "data", min_rows=2)
        check_columns(data, self.columns, "data")
        arrays = check_finite_numeric(data, self.predictors)
        arrays[self.outcome], levels = self.encode(data)
        return Prepared(
            arrays,
            len(data),
            data.index.copy(),
            {c: data[c].dtype for c in self.columns},
            {self.outcome: levels},
        )

    def n_levels(self, prepared: Prepared) -> int:
        return len(prepared.categories[self.outcome])

    def observed_codes(self, prepared: Prepared) -> pt.TensorVariable:
        import pymc as pm

        return pm.Data(f"{self.outcome}_data", prepared.arrays[self.outcome].astype(np.int64))

    def to_frame(self, prepared: Prepared, predictive: dict[str, np.ndarray]) -> pd.DataFrame:
        frame = pd.DataFrame(
            {p: prepared.arrays[p] for p in self.predictors}, index=prepared.index.copy()
        )
        for c in self.predictors:
            frame[c] = frame[c].astype(prepared.dtypes[c])
        frame[self.outcome] = decode_levels(
            predictive[self.outcome],
            prepared.categories[self.outcome],
            prepared.dtypes[self.outcome],
            frame.index,
        )
        return frame[self.columns]
