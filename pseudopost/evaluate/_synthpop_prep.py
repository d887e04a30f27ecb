r"""Cells as synthpop reads them: missing cells, special codes, levels and grouped numerics.

Shared by the measures that follow synthpop's definitions (:mod:`.propensity`,
:mod:`.table_utility`, :mod:`.disclosure_tables`), so that every one of them treats a frame the
same way:

* a **missing cell** is NaN, None, ``pd.NA``, ``pd.NaT`` or the empty string ``""``;
* a column is **numeric** when its dtype is numeric and not boolean, **categorical** otherwise
  (object, string, category, bool), as R's ``read.csv`` would type it;
* a **code** (synthpop's ``cont.na``, e.g. ``-8`` = "not applicable") is a value of a numeric
  column that means a status, not an amount; it is given per column in ``missing_codes``;
* a categorical column's levels are its distinct values; its missing cells are one more level;
* numeric columns are grouped, when a measure needs categories, by synthpop's ``group_num``:
  breaks from ``classInt::classIntervals`` (style ``"quantile"``, R's type-7 quantiles; style
  ``"equal"`` when that gives fewer than three levels; one class per distinct value when there
  are no more distinct values than groups) over the real and synthetic values that are neither
  missing nor codes, intervals closed on the left (``cut(..., right = FALSE,
  include.lowest = TRUE)``); each code is a level of its own and missing cells one more.

The arithmetic of the breaks is R's, operation for operation, so that values on a break fall in
the same group as in synthpop.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pseudopost._validation import check_frame, check_positive_int

__all__ = [
    "MISSING_LABEL",
    "Grouped",
    "category_values",
    "check_missing_codes",
    "check_pair",
    "check_variables",
    "factor_codes",
    "group_numeric",
    "is_numeric",
    "missing_mask",
    "numeric_values",
]

MISSING_LABEL = "NA"
"""The label of the level that holds the missing cells."""


def check_pair(real: object, synthetic: object) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both arguments DataFrames with at least one row each."""
    return check_frame(real, "real", min_rows=1), check_frame(synthetic, "synthetic", min_rows=1)


def check_variables(
    variables: Sequence[str] | None, real: pd.DataFrame, synthetic: pd.DataFrame, name: str
) -> list[str]:
    """``variables`` checked against both frames; default: the columns of ``synthetic``.

    As synthpop (``vars <- names(syn)``), the default compares every synthetic column, each of
    which must also be a column of ``real``.
    """
    if variables is None:
        cols = list(synthetic.columns)
    elif isinstance(variables, str):
        raise TypeError(
            f"The '{name}' argument must be a sequence of column names, not the string "
            f"{variables!r}; use [{variables!r}]."
        )
    else:
        cols = list(variables)
    if not cols:
        raise ValueError(f"The '{name}' argument must name at least one column. Got [].")
    if len(set(cols)) != len(cols):
        dup = sorted({c for c in cols if cols.count(c) > 1}, key=str)
        raise ValueError(f"The '{name}' argument names column(s) {dup} more than once.")
    for frame, fname in ((real, "real"), (synthetic, "synthetic")):
        absent = [c for c in cols if c not in frame.columns]
        if absent:
            raise ValueError(
                f"Column(s) {absent} of '{name}' are not in '{fname}'; its columns are "
                f"{list(frame.columns)}."
            )
    for c in cols:
        if is_numeric(real[c]) != is_numeric(synthetic[c]):
            raise TypeError(
                f"Column {c!r} is {'numeric' if is_numeric(real[c]) else 'categorical'} in "
                f"'real' (dtype {real[c].dtype}) but not in 'synthetic' (dtype "
                f"{synthetic[c].dtype}); give it the same kind of dtype in both."
            )
    return cols


def is_numeric(series: pd.Series) -> bool:
    """A numeric, non-boolean dtype (R's ``is.numeric`` after ``read.csv``)."""
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def missing_mask(series: pd.Series) -> np.ndarray:
    """True where a cell is missing: NaN, None, pd.NA, pd.NaT or the empty string."""
    mask = np.asarray(series.isna(), dtype=bool)
    if not is_numeric(series):
        values = series.to_numpy(dtype=object)
        mask = mask | np.array([isinstance(v, str) and v == "" for v in values], dtype=bool)
    return mask


def numeric_values(series: pd.Series, column: str, frame: str) -> np.ndarray:
    """Float64 copy of a numeric column, NaN at missing cells; infinite values are an error."""
    values = series.to_numpy(dtype=float, na_value=np.nan)
    bad = np.isinf(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"Column {column!r} of '{frame}' holds {values[i]} at row {series.index[i]!r}; "
            f"numeric cells must be finite or missing."
        )
    return values.copy()


def category_values(series: pd.Series) -> np.ndarray:
    """Object array of a column's values with ``None`` at missing cells."""
    values = series.to_numpy(dtype=object).copy()
    values[missing_mask(series)] = None
    return values


def check_missing_codes(
    missing_codes: Mapping[str, Sequence[float]] | None,
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
) -> dict[str, tuple[float, ...]]:
    """Validated codes of the numeric columns, ``{column: (code, ...)}`` (first seen order).

    Codes of categorical columns are accepted and dropped: their values are levels already.
    """
    if missing_codes is None:
        return {}
    if not isinstance(missing_codes, Mapping):
        raise TypeError(
            f"The 'missing_codes' argument must be a mapping from column name to a list of "
            f"codes, e.g. {{'income': [-8, -9]}}. Got {type(missing_codes).__name__}."
        )
    out: dict[str, tuple[float, ...]] = {}
    for column, codes in missing_codes.items():
        for frame, fname in ((real, "real"), (synthetic, "synthetic")):
            if column not in frame.columns:
                raise ValueError(
                    f"The 'missing_codes' argument names column {column!r}, which is not in "
                    f"'{fname}'; its columns are {list(frame.columns)}."
                )
        if isinstance(codes, (str, bytes)) or not isinstance(codes, (Sequence, np.ndarray, set)):
            raise TypeError(
                f"The codes of column {column!r} in 'missing_codes' must be a list, e.g. "
                f"[{codes!r}]. Got {codes!r}."
            )
        if not is_numeric(real[column]):
            continue
        clean: list[float] = []
        for code in codes:
            if isinstance(code, (bool, np.bool_)) or not isinstance(code, (int, float, np.number)):
                raise TypeError(
                    f"Column {column!r} is numeric, so its codes in 'missing_codes' must be "
                    f"numbers; got {code!r} of type {type(code).__name__}."
                )
            if not np.isfinite(float(code)):
                raise ValueError(
                    f"The codes of column {column!r} in 'missing_codes' must be finite "
                    f"numbers (missing cells are recognised without a code); got {code!r}."
                )
            if float(code) not in clean:
                clean.append(float(code))
        out[column] = tuple(clean)
    return out


def _sort_key(value: object) -> str:
    return str(value)


def factor_codes(
    first: np.ndarray, second: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[object]]:
    """Integer codes of two object arrays (``None`` = missing) over their joint levels.

    Levels are ordered as R's ``rbind`` of two factors orders them: the sorted levels of
    ``first``, then the sorted levels found only in ``second``, then :data:`MISSING_LABEL` when
    either array has a missing cell (synthpop's ``addNA``).
    """
    seen_first = {v for v in first if v is not None}
    seen_second = {v for v in second if v is not None}
    levels: list[object] = sorted(seen_first, key=_sort_key)
    levels += sorted(seen_second - seen_first, key=_sort_key)
    index = {v: i for i, v in enumerate(levels)}
    has_missing = any(v is None for v in first) or any(v is None for v in second)
    na_code = len(levels)
    if has_missing:
        levels.append(MISSING_LABEL)

    def encode(values: np.ndarray) -> np.ndarray:
        return np.fromiter(
            (na_code if v is None else index[v] for v in values), dtype=np.int64, count=len(values)
        )

    return encode(first), encode(second), levels


# --------------------------------------------------------------------------------------------
# Grouping of numeric columns: synthpop's group_num over classInt::classIntervals
# --------------------------------------------------------------------------------------------


def _r_quantile7(x: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """R's ``quantile(x, probs, type = 7)``, with R's interpolation formula."""
    xs = np.sort(x)
    n = xs.size
    index = 1.0 + max(n - 1, 0) * probs
    lo = np.floor(index).astype(np.int64)
    hi = np.ceil(index).astype(np.int64)
    qs = xs[lo - 1].copy()
    upper = xs[hi - 1]
    inner = (index > lo) & (upper != qs)
    h = (index - lo)[inner]
    qs[inner] = (1.0 - h) * qs[inner] + h * upper[inner]
    return qs


def _class_breaks(var: np.ndarray, n: int, style: str) -> np.ndarray:
    """``unique(classIntervals(var, n, style)$brks)`` for styles quantile and equal."""
    distinct = np.unique(var)
    nobs = distinct.size
    if nobs == 1:  # classInt stops ("single unique value"); one closed class here
        return np.array([distinct[0], distinct[0]])
    n = min(n, nobs)
    if n == nobs:  # classInt's "unique" style: a class per distinct value
        ds = np.diff(distinct)
        half = float(np.mean(ds)) / 2
        brks = np.concatenate([[distinct[0] - half], distinct[:-1] + ds / 2, [distinct[-1] + half]])
    elif style == "quantile":
        probs = np.minimum(np.arange(n + 1) * (1.0 / n), 1.0)  # seq(0, 1, 1/n)
        brks = _r_quantile7(var, probs)
    else:  # "equal": seq(min, max, length.out = n + 1)
        lo, hi = float(np.min(var)), float(np.max(var))
        brks = np.concatenate([[lo], lo + np.arange(1, n) * ((hi - lo) / n), [hi]])
    return np.unique(brks)


def _cut_left_closed(x: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """R's ``cut(x, breaks, right = FALSE, include.lowest = TRUE)`` as 0-based codes."""
    if breaks.size == 2 and breaks[0] == breaks[1]:
        return np.zeros(x.size, dtype=np.int64)
    codes = np.searchsorted(breaks, x, side="right") - 1
    codes[x == breaks[-1]] = breaks.size - 2
    if ((codes < 0) | (codes > breaks.size - 2)).any():  # pragma: no cover - breaks span x
        raise AssertionError("a value lies outside the grouping breaks")
    return codes


@dataclass(frozen=True)
class Grouped:
    """A numeric column grouped as synthpop's ``group_num``.

    Attributes
    ----------
    real, synthetic : numpy.ndarray
        0-based level codes per record.
    levels : list of str
        Interval labels ``[a,b)`` (the last ``[a,b]``), then the codes, then
        :data:`MISSING_LABEL` if a cell is missing in either frame.
    breaks : numpy.ndarray
        The interval breaks.
    style : str
        ``"quantile"`` or ``"equal"`` (the fallback when quantiles give fewer than 3 levels).
    """

    real: np.ndarray
    synthetic: np.ndarray
    levels: list[str]
    breaks: np.ndarray
    style: str


def group_numeric(
    x_real: np.ndarray,
    x_synthetic: np.ndarray,
    ngroups: int,
    codes: Sequence[float],
    column: str,
) -> Grouped:
    """Group a numeric column as synthpop's ``group_num`` (module docstring).

    Parameters
    ----------
    x_real, x_synthetic : numpy.ndarray
        Float values with NaN at missing cells.
    ngroups : int
        Target number of groups (>= 2); fewer when there are fewer distinct values.
    codes : sequence of float
        Codes of the column; each becomes a level of its own.
    column : str
        Column name, for messages.
    """
    ngroups = check_positive_int(ngroups, "ngroups", minimum=2)
    codes = tuple(codes)
    code_arr = np.asarray(codes, dtype=float)

    def plain(x: np.ndarray) -> np.ndarray:
        return ~np.isnan(x) & ~np.isin(x, code_arr)

    ok_real, ok_syn = plain(x_real), plain(x_synthetic)
    if not ok_syn.any():
        raise ValueError(
            f"Column {column!r} has no value in 'synthetic' other than missing cells and codes, "
            f"so it cannot be grouped (synthpop stops here too)."
        )
    var = np.concatenate([x_real[ok_real], x_synthetic[ok_syn]])
    style = "quantile"
    breaks = _class_breaks(var, ngroups, style)
    if breaks.size - 1 + len(codes) < 3:
        style = "equal"
        breaks = _class_breaks(var, ngroups, style)
    n_int = breaks.size - 1
    labels = [f"[{a:.8g},{b:.8g})" for a, b in itertools.pairwise(breaks)]
    labels[-1] = labels[-1][:-1] + "]"  # the last interval is closed
    labels += [f"{c:g}" for c in codes]
    has_missing = bool(np.isnan(x_real).any() or np.isnan(x_synthetic).any())
    if has_missing:
        labels.append(MISSING_LABEL)

    def encode(x: np.ndarray, ok: np.ndarray) -> np.ndarray:
        out = np.full(x.size, n_int + len(codes), dtype=np.int64)  # missing level
        out[ok] = _cut_left_closed(x[ok], breaks)
        for j, c in enumerate(codes):
            out[x == c] = n_int + j
        return out

    return Grouped(
        real=encode(x_real, ok_real),
        synthetic=encode(x_synthetic, ok_syn),
        levels=labels,
        breaks=breaks,
        style=style,
    )
