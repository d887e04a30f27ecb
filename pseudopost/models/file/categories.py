"""A codebook's answer categories applied to a frame: ``levels={"sex": ["female", "male"]}``.

A text column whose categories are declared becomes a pandas categorical of them (then its
declared missing codes, kept as categories so that they stay codes), so the structure stage
selects nothing for it (:mod:`pseudopost.mechanisms.structure`: no budget, no delta) and the
file model encodes it as any categorical column (``pseudopost.models.file.encoding``). A
cell holding neither a declared level nor a code is an error naming the column, the row and
the value, before any work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pseudopost.models.status import cell_key

__all__ = ["check_levels", "with_levels"]


def check_levels(levels: Mapping[str, Sequence] | None, argument: str = "levels") -> dict:
    """``{column: tuple of levels}``: each a non-empty sequence of distinct strings, numbers or
    booleans (an object column of Python bools has the levels ``[True, False]``)."""
    if levels is None:
        return {}
    if not isinstance(levels, Mapping):
        raise TypeError(
            f"'{argument}' must map columns to their answer categories. Got "
            f"{type(levels).__name__}."
        )
    out = {}
    for c, lv in levels.items():
        ok = (
            isinstance(lv, Sequence)
            and not isinstance(lv, str)
            and len(lv) > 0
            and all(isinstance(v, (str, int, float, bool, np.bool_)) for v in lv)
            and len(set(lv)) == len(lv)
        )
        if not ok:
            raise ValueError(
                f"The levels of column {c!r} must be a non-empty list of distinct strings, "
                f"numbers or booleans (the codebook's answer categories). Got {lv!r}."
            )
        out[c] = tuple(lv)
    return out


def with_levels(
    frame: pd.DataFrame,
    levels: Mapping[str, Sequence],
    codes: Mapping[str, Sequence] | None = None,
) -> pd.DataFrame:
    """A copy of ``frame`` whose columns named in ``levels`` are categoricals of the declared
    answer categories, then the column's declared missing ``codes`` (module docstring); an
    empty cell stays empty. ``frame`` is never modified."""
    out = frame.copy()
    codes = codes or {}
    for c, lv in levels.items():
        if c not in frame.columns:
            raise ValueError(
                f"Column {c!r} has declared levels but is not in the data (columns: "
                f"{list(frame.columns)})."
            )
        allowed = [*lv, *(k for k in codes.get(c, ()) if k not in lv)]
        s = frame[c]
        keys = {cell_key(v) for v in allowed}  # True is not 1, "1" is not 1 (pandas' isin: is)
        cells = s.to_numpy(dtype=object)
        held = np.fromiter((cell_key(v) in keys for v in cells), bool, len(cells))
        bad = s.notna().to_numpy() & ~held
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"Column {c!r}, row {i}: value {s.iloc[i]!r} is not among its declared levels "
                f"{list(lv)} (nor its missing codes); {int(bad.sum())} cell(s) like it. "
                "Correct the data or the levels."
            )
        out[c] = pd.Categorical(s, categories=allowed)
    return out
