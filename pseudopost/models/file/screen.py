r"""Screening a frame before any work: the columns agencies' files carry that cannot be modelled.

:func:`screen_frame` runs first (in :func:`~pseudopost.synthesize` and at the top of
:func:`~pseudopost.models.file.plan.make_plan`, so the spec-file release path screens too) and
refuses, naming the column, the row (the frame's index label) and the value, and saying how to
fix it:

* **duplicate column names** (``frame[c]`` would be a frame, not a column);
* **column names** that are not strings (``TypeError``), empty, or hold ``"::"`` (the separator
  of the parts' parameter names, :data:`~pseudopost.models.parts.SEP`): each breaks the parts'
  names downstream;
* **numbers out of range**: a value of a numeric column that is infinite or of magnitude above
  :data:`OUTER_BOUND` (a sentinel such as ``1e300`` makes every family's initial point fail);
* **record identifiers**: a text column (not a pandas Categorical, not kept or dropped) whose
  distinct non-empty values are more than half of its non-empty cells *and* more than
  :data:`ID_MIN_DISTINCT` in number, or a numeric column of serial numbers: more than
  :data:`ID_MIN_DISTINCT` whole numbers, each held once, that fill a run of consecutive
  integers (row numbers 1 to n, a person number) (:func:`looks_like_identifier`).

Columns in ``drop`` are only checked for duplicate names; kept columns are checked for numbers
out of range (they enter later columns' designs) but not as identifiers (the user asked for
them as given). The frame is never modified.

**Why this identifier rule.** A categorical column is learnt from levels that repeat: when most
of its non-empty cells hold a value seen once, there is nothing to learn about the level of a
record beyond "a new string", and a model over the values would either draw the real strings
back into the synthetic file (an identifier released) or cost one parameter per record. "More
than half distinct" catches unique keys (household and person IDs, names, addresses, free
text) and keys repeated by a few members (a household ID on a person file, about 2-3 persons
per household); the floor of more than 50 distinct values spares the small code columns of a
small file (a 60-record file whose 40 states are mostly distinct). A genuine code column with
hundreds of levels on a small file (an occupation code on 300 records) is told apart by
declaring it: a pandas Categorical lists its levels, is never screened as an identifier, and
is modelled as a many-level categorical (:mod:`pseudopost.models.file.choice`). A numeric
column is flagged only as a run of serial numbers: a quantity whose values are all distinct
(incomes in cents on a small file) seldom fills a run of consecutive integers, while a serial
number always does; synthesized, row numbers 1 to 400 raised a 400-record file's weighted
epsilon from 27 to 40 and released a model of the record order. A time series with one record
per year is flagged too: keep its year as given (``keep``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pseudopost.models.parts import SEP

__all__ = ["ID_MIN_DISTINCT", "OUTER_BOUND", "looks_like_identifier", "screen_frame"]

#: numbers of magnitude above this (or infinite) are refused; the structure stage's public
#: outer range (``pseudopost.privacy.structure.OUTER_BOUND``) is this value, so every number
#: that passes the screen lies inside it.
OUTER_BOUND = 1e15

#: a text column needs more than this many distinct non-empty values to look like an identifier
ID_MIN_DISTINCT = 50


def _names(keep: Sequence[str] | str) -> set:
    """A set of column names from a sequence (a lone string is one name, not its letters)."""
    if isinstance(keep, str):
        return {keep}
    return set(keep)


def _shown(v: object) -> str:
    """A cell or index label as the message shows it (NumPy scalars as Python ones)."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def _text_column(series: pd.Series) -> bool:
    """Text: object or string dtype, not a pandas Categorical, bool or numbers."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return False
    return pd.api.types.is_object_dtype(series.dtype) or pd.api.types.is_string_dtype(series.dtype)


def _non_empty(series: pd.Series) -> pd.Series:
    """The cells that are not empty (NaN, None, ``pd.NA``, ``""``)."""
    s = series[series.notna()]
    return s[s.map(lambda v: not (isinstance(v, str) and v == ""))]


def _serial_numbers(series: pd.Series) -> bool:
    """More than :data:`ID_MIN_DISTINCT` whole numbers of a numeric (not boolean) column, each
    held once, filling the run of integers from their least to their largest."""
    if isinstance(series.dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(series.dtype):
        return False
    if not pd.api.types.is_numeric_dtype(series.dtype):
        return False
    x = np.asarray(series[series.notna()], dtype=np.float64)
    if x.size <= ID_MIN_DISTINCT or not np.all(np.isfinite(x)) or np.any(x != np.round(x)):
        return False
    return bool(x.max() - x.min() + 1 == x.size and np.unique(x).size == x.size)


def looks_like_identifier(series: pd.Series) -> tuple[bool, int, int]:
    """Whether a text column looks like a record identifier (module docstring), with its number
    of distinct non-empty values and of non-empty cells.

    Parameters
    ----------
    series
        One column (never modified).

    Returns
    -------
    flagged : bool
        More than half of the non-empty cells distinct, and more than :data:`ID_MIN_DISTINCT`
        distinct values, for a text column; serial numbers (module docstring) for a numeric
        one; False otherwise.
    distinct, cells : int
    """
    if _serial_numbers(series):
        n = int(series.notna().sum())
        return True, n, n
    if not _text_column(series):
        return False, 0, 0
    cells = _non_empty(series)
    try:
        distinct = int(cells.nunique())
    except TypeError:  # unhashable cells (lists): not an identifier this rule can read
        return False, 0, len(cells)
    flagged = distinct > ID_MIN_DISTINCT and 2 * distinct > len(cells)
    return flagged, distinct, len(cells)


def _check_column_names(frame: pd.DataFrame) -> None:
    cols = list(frame.columns)
    dup = list(dict.fromkeys(c for c in frame.columns[frame.columns.duplicated(keep=False)]))
    if dup:
        raise ValueError(
            f"Column name(s) {dup} occur more than once in the frame; every column needs its own "
            f"name (rename or remove the copies, e.g. frame.loc[:, ~frame.columns.duplicated()])."
        )
    bad = [c for c in cols if not isinstance(c, str)]
    if bad:
        raise TypeError(
            f"Column names of the frame must be strings; got {bad!r} (e.g. "
            f"frame.columns = frame.columns.astype(str))."
        )
    empty = [j for j, c in enumerate(cols) if c.strip() == ""]
    if empty:
        raise ValueError(
            f"The column(s) at position(s) {empty} have an empty name {[cols[j] for j in empty]!r}; "
            f"give every column a name."
        )
    sep = [c for c in cols if SEP in c]
    if sep:
        raise ValueError(
            f"Column name(s) {sep} contain {SEP!r}, which separates the names of the model's "
            f"parameters; rename the column(s)."
        )


def _check_numbers(frame: pd.DataFrame, name: str) -> None:
    s = frame[name]
    if pd.api.types.is_bool_dtype(s.dtype) or not pd.api.types.is_numeric_dtype(s.dtype):
        return
    if isinstance(s.dtype, pd.CategoricalDtype):
        return
    x = s.to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore", over="ignore"):
        bad = np.isinf(x) | (np.abs(x) > OUTER_BOUND)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"Column {name!r} holds {s.iloc[i]} in row {_shown(frame.index[i])} "
            f"({int(bad.sum())} value(s) of the column are infinite or of magnitude above "
            f"{OUTER_BOUND:g}); numbers must be finite and within +-{OUTER_BOUND:g}. Correct the "
            f"value(s), make them empty cells (NaN) if they stand for a missing answer, or drop "
            f"the column (drop=[{name!r}])."
        )


def _check_identifier(frame: pd.DataFrame, name: str) -> None:
    s = frame[name]
    flagged, distinct, cells = looks_like_identifier(s)
    if not flagged:
        return
    nonempty = _non_empty(s)
    counts = nonempty.value_counts(sort=False)
    once = nonempty[nonempty.map(counts) == 1]
    example = once if len(once) else nonempty
    label, value = example.index[0], example.iloc[0]
    if not _text_column(s):
        x = np.asarray(nonempty, dtype=np.float64)
        raise ValueError(
            f"Column {name!r} looks like a record identifier: serial numbers, the {cells} whole "
            f"numbers from {x.min():g} to {x.max():g} each held once (e.g. {_shown(value)} in row "
            f"{_shown(label)}); an identifier cannot be synthesized and must not be released. "
            f"Drop it (drop=[{name!r}]), or, if it is public (a year in a time series, one "
            f"record each), release it as given (keep=[{name!r}])."
        )
    raise ValueError(
        f"Column {name!r} looks like a record identifier: {distinct} distinct values in its "
        f"{cells} non-empty cells (e.g. {_shown(value)} in row {_shown(label)}); an identifier cannot be "
        f"synthesized and must not be released. Drop it (drop=[{name!r}]), or, if it really is "
        f"a code with levels (an occupation or industry code), declare its levels by making it "
        f"a pandas Categorical (frame[{name!r}] = frame[{name!r}].astype('category'), or "
        f"pd.Categorical(values, categories=codebook_levels))."
    )


def screen_frame(
    frame: pd.DataFrame, *, keep: Sequence[str] = (), drop: Sequence[str] = ()
) -> None:
    """Refuse a frame with columns the synthesizer cannot take (module docstring).

    Parameters
    ----------
    frame
        The confidential data (never modified).
    keep, drop
        Columns released as given (screened for numbers out of range only) and left out
        (screened for duplicate names only).

    Raises
    ------
    ValueError
        Duplicate, empty or ``"::"``-holding column names; a number that is infinite or of
        magnitude above :data:`OUTER_BOUND`; a text column that looks like a record
        identifier. The message names the column, the row (index label) and the value, and how
        to fix it.
    TypeError
        A column name that is not a string.
    """
    _check_column_names(frame)
    kept, dropped = _names(keep), _names(drop)
    for name in frame.columns:
        if name in dropped:
            continue
        _check_numbers(frame, name)
        if name not in kept:
            _check_identifier(frame, name)
