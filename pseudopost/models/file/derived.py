r"""Derived columns: a codebook's definitions (``expersq = exper ** 2``, ``lwage = log(hrwage)``).

An agency file often carries columns that its codebook defines from others: a square, a log, a
difference of ages, a ratio. Modelled as columns of their own they are costly and wrong: the
likelihood of a column that the earlier ones determine has no finite mode (its part's fit is
the slowest of the file, and its synthetic values scatter around the definition). Declared
(``derived={"expersq": "exper ** 2"}``), such a column is not modelled: it is computed from the
synthetic columns by its definition, as synthpop's *passive* synthesis does.

**Expressions** are pandas' ``DataFrame.eval`` syntax (arithmetic,
comparisons, ``log``, ``exp``, ``sqrt``, ``abs``, ...; a name with spaces or hyphens in
backticks) over the frame's synthesized and kept columns (not dropped or other derived ones).
A definition that the file keeps inside a valid range is written with ``.clip``: potential
experience, ``age - educ - 6`` in the codebook, is recorded 0 where that is negative,
``(age - educ - 6).clip(0)`` (the check below suggests it where the plain definition
fails that way). A non-finite result (``log(0)``, ``x / 0``) or one with a missing input is a
missing cell.

**Checked before any work** on the real frame: the expression evaluates, and it reproduces the
column on every record, up to storage rounding (:data:`RTOL`, :data:`ATOL`: a float32 column
holds about 7 digits), missing exactly where the column is; otherwise an error names the
column, the first record that differs, its value and the definition's, and, where every
record that differs holds the column's lowest (highest) value and the definition gives less
(more), the floored (capped) definition that holds.

**Privacy.** A derived column is a deterministic function of the synthetic columns: post-
processing, no budget; its real values enter nothing but the check above (an error, as for a
declared rule that the data break). It is left out of the other columns' predictors (its
inputs are there already) and of the structure stage.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["ATOL", "RTOL", "check_derived", "derive", "parse_derived"]

#: relative and absolute tolerance of the check on the real records (storage rounding)
RTOL, ATOL = 1e-6, 1e-9


def parse_derived(derived: Mapping[str, str] | None) -> dict[str, str]:
    """``{column: expression}`` checked for types (the data are checked by
    :func:`check_derived`)."""
    if derived is None:
        return {}
    if not isinstance(derived, Mapping):
        raise TypeError(
            f"'derived' must map column names to expressions, e.g. {{'expersq': 'exper ** 2'}}. "
            f"Got {type(derived).__name__}."
        )
    out = {}
    for col, expr in derived.items():
        if not isinstance(col, str) or not isinstance(expr, str) or not expr.strip():
            raise TypeError(
                f"'derived' maps a column name to an expression string; got {col!r}: {expr!r}."
            )
        out[col] = expr.strip()
    return out


def _evaluate(frame: pd.DataFrame, column: str, expr: str) -> np.ndarray:
    """The expression on ``frame`` as float64, non-finite results as NaN."""
    try:
        with np.errstate(all="ignore"):  # log(0), x / 0: missing cells, not warnings
            value = frame.eval(expr, engine="python")
    except Exception as exc:  # pandas raises several types for a bad expression
        raise ValueError(
            f"The definition of derived column {column!r}, {expr!r}, cannot be evaluated on "
            f"the columns it may read ({list(frame.columns)}): {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(value, pd.Series | np.ndarray) or np.ndim(value) != 1:
        raise ValueError(
            f"The definition of derived column {column!r}, {expr!r}, must give one value per "
            f"record (an expression, not an assignment)."
        )
    try:
        x = np.asarray(pd.to_numeric(pd.Series(np.asarray(value)), errors="raise"), dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"The definition of derived column {column!r}, {expr!r}, gives values that are not "
            f"numbers; derived columns are numeric."
        ) from None
    return np.where(np.isfinite(x), x, np.nan)


def _plain(v: object) -> object:
    """A NumPy scalar as the Python value it holds (for messages)."""
    return v.item() if isinstance(v, np.generic) else v


def check_derived(frame: pd.DataFrame, derived: Mapping[str, str], inputs: list[str]) -> None:
    """Each derived column of ``frame`` is numeric and reproduced by its definition over the
    ``inputs`` columns (module docstring).

    Raises
    ------
    ValueError
        Naming the column, the definition and the first record that differs.
    """
    for col, expr in derived.items():
        real = frame[col]
        if not (pd.api.types.is_numeric_dtype(real) or pd.api.types.is_bool_dtype(real)):
            raise ValueError(
                f"Derived column {col!r} holds {real.dtype} values; derived columns are numeric."
            )
        x = _evaluate(frame[inputs], col, expr)
        r = np.asarray(pd.to_numeric(real, errors="coerce"), dtype=float)
        both = ~np.isnan(r) & ~np.isnan(x)
        bad = (np.isnan(r) != np.isnan(x)) | (
            both & (np.abs(r - x) > ATOL + RTOL * np.abs(np.where(both, x, 0.0)))
        )
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"Derived column {col!r} is not {expr!r} on {int(bad.sum())} record(s): record "
                f"{frame.index[i]!r} holds {_plain(real.iloc[i])!r}, its definition gives "
                f"{'a missing value' if np.isnan(x[i]) else repr(float(x[i]))}. Correct the "
                f"definition{_clip_hint(expr, r, x, bad)}, or model the column (leave it out "
                f"of 'derived')."
            )


def _clip_hint(expr: str, real: np.ndarray, x: np.ndarray, bad: np.ndarray) -> str:
    """Where every record that breaks the definition holds the column's lowest (highest) value
    and the definition gives less (more), the definition floored (capped) there:
    ``" (the column holds 0 where it gives less: '(age - educ - 6).clip(0)')"``; else ``""``."""
    r, v = real[bad], x[bad]
    if np.isnan(r).any() or np.isnan(v).any():
        return ""
    lo, hi = np.nanmin(real), np.nanmax(real)
    for edge, side, beyond in ((lo, "lower", v < lo), (hi, "upper", v > hi)):
        if np.all(r == edge) and np.all(beyond):
            e = int(edge) if float(edge).is_integer() else float(edge)
            arg = f"{e!r}" if side == "lower" else f"upper={e!r}"
            word = "less" if side == "lower" else "more"
            return f" (the column holds {e!r} where it gives {word}: '({expr}).clip({arg})')"
    return ""


def derive(frame: pd.DataFrame, derived: Mapping[str, str], dtypes: Mapping) -> pd.DataFrame:
    """``frame`` with each derived column computed from the others, in the real column's dtype
    (integers where the real column holds integers and no value is missing)."""
    out = frame.copy()
    reads = [c for c in frame.columns if c not in derived]
    for col, expr in derived.items():
        x = _evaluate(frame[reads], col, expr)
        dtype = dtypes[col]
        if pd.api.types.is_bool_dtype(dtype) and not np.isnan(x).any():
            out[col] = x.astype(bool)
        elif pd.api.types.is_integer_dtype(dtype):
            whole = np.round(x)
            if not np.isnan(x).any() and isinstance(dtype, np.dtype):
                out[col] = whole.astype(dtype)
            else:
                out[col] = pd.array(np.where(np.isnan(x), None, whole), dtype="Int64")
        elif isinstance(dtype, np.dtype) and dtype.kind == "f":
            out[col] = x.astype(dtype)
        else:
            out[col] = x
    return out
