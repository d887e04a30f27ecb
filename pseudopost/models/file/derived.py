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

**As a predictor.** A derived column enters the design of every modelled column visited after
all its inputs (:func:`definition_inputs`; not a column with a declared ``predictor_matrix``
row), as a numeric column with its status (missing where the definition gives none) and its
value in units of a public span: the definition's range over a grid of its inputs' public
supports (:func:`definition_span`: declared or DP bounds, bins, listed values), its value
clipped to that span (a ratio's extremes between the grid's points saturate at its edges),
as hat functions at knots placed where its inputs' declared or DP knots put it
(:func:`definition_knots`).
The model then sees what a tree sees: potential experience, ``(age - educ - 6).clip(0)``,
bends where a linear model in age and education cannot. In the synthesis it is computed from
the synthetic inputs before the first column whose design reads it. A derived column with an
input that has no public support (a text column, a kept one) stays out of the predictors, as
the choices table says.

**Privacy.** A derived column is a deterministic function of the synthetic columns: post-
processing, no budget; its real values enter nothing but the check above (an error, as for a
declared rule that the data break) and, as a predictor, a function of the record's own
inputs (like a spline of them: each record's likelihood term still reads its own values only).
Its span comes from public supports alone. It is left out of the structure stage.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "ATOL",
    "RTOL",
    "check_derived",
    "definition_inputs",
    "definition_knots",
    "definition_span",
    "derive",
    "derive_column",
    "parse_derived",
]

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


def derive_column(frame: pd.DataFrame, column: str, expr: str, dtype: object) -> pd.Series:
    """The derived column ``column`` computed by ``expr`` from ``frame``'s columns, in the real
    column's dtype (integers where the real column holds integers and no value is missing)."""
    x = _evaluate(frame, column, expr)
    if pd.api.types.is_bool_dtype(dtype) and not np.isnan(x).any():
        values = x.astype(bool)
    elif pd.api.types.is_integer_dtype(dtype):
        whole = np.round(x)
        if not np.isnan(x).any() and isinstance(dtype, np.dtype):
            values = whole.astype(dtype)
        else:
            values = pd.array(np.where(np.isnan(x), None, whole), dtype="Int64")
    elif isinstance(dtype, np.dtype) and dtype.kind == "f":
        values = x.astype(dtype)
    else:
        values = x
    return pd.Series(values, index=frame.index, name=column)


def derive(frame: pd.DataFrame, derived: Mapping[str, str], dtypes: Mapping) -> pd.DataFrame:
    """``frame`` with each derived column computed from the others (:func:`derive_column`)."""
    out = frame.copy()
    reads = [c for c in frame.columns if c not in derived]
    for col, expr in derived.items():
        out[col] = derive_column(frame[reads], col, expr, dtypes[col])
    return out


def definition_inputs(expr: str, columns: Sequence[str]) -> tuple[str, ...]:
    """The columns among ``columns`` that the definition ``expr`` names (as a whole word, or
    in backticks), in ``columns``' order."""
    out = []
    for c in columns:
        plain = re.search(rf"(?<![\w.`]){re.escape(c)}(?![\w`])", expr)
        if f"`{c}`" in expr or (plain is not None and c.isidentifier()):
            out.append(c)
    return tuple(out)


#: points of each input's support at which :func:`definition_span` evaluates a definition
#: (its ends, three interior points and, on a support at least 2 wide, the points 1 inside
#: each end: x / hours at hours = 1); the corners alone for more than :data:`SPAN_GRID_INPUTS`
SPAN_GRID_INPUTS = 4


def definition_span(
    column: str, expr: str, supports: Mapping[str, tuple[float, float]]
) -> tuple[float, float] | None:
    """The range of the definition over a grid of its inputs' public supports (``supports``:
    input -> (low, high)), or None when it has no finite positive width there, or when the
    definition is affine in its inputs on that grid (``husage - huseduc - 6``: a predictor
    that the inputs' own value terms already span, only a flat direction more for the
    sampler). Public supports in, a public span out: no record is read."""
    grid, x = _on_grid(column, expr, supports)
    if grid is None:
        return None
    ok = np.isfinite(x)
    x, grid = x[ok], grid[ok]
    if not x.size or not x.max() > x.min():
        return None
    design = np.column_stack([np.ones(len(grid)), grid.to_numpy(dtype=float)])
    fitted = design @ np.linalg.lstsq(design, x, rcond=None)[0]
    if np.max(np.abs(fitted - x)) <= 1e-9 * (x.max() - x.min()):
        return None
    return float(x.min()), float(x.max())


def definition_knots(
    column: str, expr: str, points: Mapping[str, Sequence[float]], span: tuple[float, float]
) -> tuple[float, ...]:
    """Knots of a derived predictor: the quartiles of the definition over the grid of its
    inputs' public points (``points``: input -> its support's ends and its declared or DP
    knots), those strictly inside ``span``; none when no input has knots. Where the inputs'
    knots lie, in the bulk of their data, so do the derived column's (a ratio's span over
    the supports reaches far beyond its values: earnings of 9,999 in one hour)."""
    if all(len(v) <= 2 for v in points.values()):
        return ()
    grid = pd.DataFrame(list(itertools.product(*points.values())), columns=list(points))
    x = _evaluate(grid, column, expr)
    x = x[np.isfinite(x) & (x > span[0]) & (x < span[1])]
    if not x.size:
        return ()
    return tuple(float(v) for v in np.unique(np.quantile(x, [0.25, 0.5, 0.75])))


def _on_grid(
    column: str, expr: str, supports: Mapping[str, tuple[float, float]]
) -> tuple[pd.DataFrame | None, np.ndarray]:
    """The grid of :func:`definition_span` and the definition on it."""
    names = list(supports)
    if not names:
        return None, np.zeros(0)
    axes = []
    for c in names:
        lo, hi = (float(v) for v in supports[c])
        if len(names) > SPAN_GRID_INPUTS:
            axes.append([lo, hi])
            continue
        pts = list(np.linspace(lo, hi, 5))
        if hi - lo >= 2:
            pts += [lo + 1, hi - 1]
        axes.append(sorted(set(pts)))
    grid = pd.DataFrame(list(itertools.product(*axes)), columns=names)
    return grid, _evaluate(grid, column, expr)
