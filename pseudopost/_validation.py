"""Input checks that run before any work and name the argument, the value and what was expected.

Each helper returns the cleaned value (scikit-learn's ``check_array`` habit); none modifies its
input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "check_columns",
    "check_finite_numeric",
    "check_frame",
    "check_in_interval",
    "check_positive",
    "check_positive_int",
    "check_probability",
    "check_real",
]


def _as_float(value: float, name: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"The '{name}' parameter must be a real number. Got {value!r}.") from None


def check_real(value: float, name: str) -> float:
    """A real number, not NaN (infinite allowed)."""
    v = _as_float(value, name)
    if np.isnan(v):
        raise ValueError(f"The '{name}' parameter must not be NaN. Got {value!r}.")
    return v


def check_positive(value: float, name: str, *, strict: bool = True) -> float:
    """A finite real > 0 (or >= 0 with ``strict=False``)."""
    v = _as_float(value, name)
    ok = np.isfinite(v) and (v > 0 if strict else v >= 0)
    if not ok:
        bound = "(0, inf)" if strict else "[0, inf)"
        raise ValueError(
            f"The '{name}' parameter must be a finite float in {bound}. Got {value!r}."
        )
    return v


def check_in_interval(
    value: float, name: str, low: float, high: float, *, closed: str = "both"
) -> float:
    """A real in the interval from ``low`` to ``high``; ``closed`` in {both, left, right, neither}."""
    v = _as_float(value, name)
    lo_ok = v >= low if closed in ("both", "left") else v > low
    hi_ok = v <= high if closed in ("both", "right") else v < high
    if not (np.isfinite(v) and lo_ok and hi_ok):
        lb = "[" if closed in ("both", "left") else "("
        rb = "]" if closed in ("both", "right") else ")"
        raise ValueError(
            f"The '{name}' parameter must be in the interval {lb}{low}, {high}{rb}. Got {value!r}."
        )
    return v


def check_probability(value: float, name: str) -> float:
    """A probability strictly inside (0, 1), e.g. delta."""
    return check_in_interval(value, name, 0.0, 1.0, closed="neither")


def check_positive_int(value: int, name: str, *, minimum: int = 1) -> int:
    """An integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"The '{name}' parameter must be an integer. Got {value!r}.")
    if value < minimum:
        raise ValueError(f"The '{name}' parameter must be an integer >= {minimum}. Got {value}.")
    return int(value)


def check_frame(data: object, name: str = "data", *, min_rows: int = 2) -> pd.DataFrame:
    """A pandas DataFrame with at least ``min_rows`` rows (returned as is, never modified)."""
    if not isinstance(data, pd.DataFrame):
        raise TypeError(
            f"The '{name}' argument must be a pandas DataFrame. Got {type(data).__name__}."
        )
    if len(data) < min_rows:
        raise ValueError(
            f"The '{name}' DataFrame must have at least {min_rows} rows. Got {len(data)}."
        )
    return data


def check_columns(data: pd.DataFrame, columns: Iterable[str], name: str = "data") -> list[str]:
    """Every name in ``columns`` is a column of ``data``."""
    cols = list(columns)
    missing = [c for c in cols if c not in data.columns]
    if missing:
        raise ValueError(
            f"Unknown column(s) {missing} in '{name}'; available columns are {list(data.columns)}."
        )
    return cols


def check_finite_numeric(data: pd.DataFrame, columns: Sequence[str]) -> dict[str, np.ndarray]:
    """Each column numeric (not bool/object) with only finite values; returns float64 copies."""
    out: dict[str, np.ndarray] = {}
    for c in columns:
        s = data[c]
        if not (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)):
            raise TypeError(f"Column '{c}' must be numeric. Got dtype {s.dtype}.")
        v = s.to_numpy(dtype=float, na_value=np.nan)
        bad = ~np.isfinite(v)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"Column '{c}' must hold finite values; row {data.index[i]!r} has {float(v[i])} "
                f"({int(bad.sum())} non-finite value(s) in all)."
            )
        out[c] = v.copy()
    return out
