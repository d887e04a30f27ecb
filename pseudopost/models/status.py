"""A column's status (observed, missing, a declared code, a spike) apart from its value.

Survey files hold more than values: empty cells, several distinct missing *codes* ("-8 not
applicable", "-9 refused") and point masses ("0 income", "40 hours"). A whole-file synthesizer
models column :math:`k` in two parts (guide: *Whole files*; synthpop's ``cont.na`` and
``semicont`` made Bayesian):

.. math::

    f_k(x_{ik}) = \\log p(S_{ik} \\mid x_{i,<k})
                  + 1[S_{ik} = \\text{observed}] \\log p(x_{ik} \\mid x_{i,<k}),
    \\qquad S_{ik} \\in \\{\\text{observed}, \\text{missing}, c_1, \\dots, c_C,
                            s_1, \\dots, s_P\\},

a categorical status :math:`S_{ik}` and, for observed records only, the value. This module is
the encoding only (no model): :func:`split_status` turns a column into status codes
``0..S-1`` and a value array (NaN where the value is not observed), and :func:`join_status` is
its exact inverse, keeping the column's dtype.

Status levels are fixed by the declarations alone, never by the data: ``observed`` (0),
``missing`` (1), one level per declared code in the order given, then ``spike:<v>`` per spike.
Empty cells are NaN, None, ``pd.NA`` and, in string, object and categorical columns, the empty
string ``""`` (:func:`is_missing`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "MISSING_LEVEL",
    "OBSERVED_LEVEL",
    "StatusInfo",
    "cell_key",
    "column_kind",
    "integer_range",
    "is_missing",
    "join_status",
    "split_status",
]

OBSERVED_LEVEL = "observed"
MISSING_LEVEL = "missing"
_SPIKE_PREFIX = "spike:"
_EXACT_INT = 2**53  # integers beyond this are not held exactly by float64


def column_kind(series: pd.Series) -> str:
    """How a column's cells are compared: ``bool``, ``integer``, ``float``, ``category``,
    ``string`` or ``object``.

    ``integer`` and ``float`` include pandas' nullable ``Int64``/``Float64`` dtypes, ``bool`` the
    nullable ``boolean``; an object column whose non-missing cells are all ``str`` is
    ``string``. Datetime and other dtypes raise ``TypeError``.
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return "category"
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_integer_dtype(dtype):
        return "integer"
    if pd.api.types.is_float_dtype(dtype):
        return "float"
    if isinstance(dtype, pd.StringDtype):
        return "string"
    if pd.api.types.is_object_dtype(dtype):
        inferred = pd.api.types.infer_dtype(series, skipna=True)
        return "string" if inferred in ("string", "empty") else "object"
    raise TypeError(
        f"Column {series.name!r} has dtype {dtype}; numeric, bool, string/object or categorical "
        f"columns are supported."
    )


def _is_na_scalar(v: object) -> bool:
    if v is None or v is pd.NA:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def is_missing(series: pd.Series) -> np.ndarray:
    """Boolean mask of empty cells: NaN, None, ``pd.NA``, and ``""`` in string, object and
    categorical columns."""
    mask = series.isna().to_numpy(dtype=bool)
    kind = column_kind(series)
    if kind == "string":
        cells = series.to_numpy(dtype=object)
        empty = np.zeros(len(cells), dtype=bool)
        empty[~mask] = cells[~mask] == ""  # present cells are all str
        mask = mask | empty
    elif kind == "object":
        cells = series.to_numpy(dtype=object)
        mask = mask | np.fromiter((isinstance(v, str) and v == "" for v in cells), bool, len(cells))
    elif kind == "category":
        cats = series.cat.categories
        if "" in cats:
            mask = mask | (series.cat.codes.to_numpy() == cats.get_loc(""))
    return mask


def _same(a: object, b: object) -> bool:
    """Cell equality that keeps strings, booleans and numbers apart ('1' != 1, True != 1):
    their :func:`cell_key` agree (one definition of a cell's identity)."""
    return cell_key(a) == cell_key(b)


def _numeric_scalar(v: object) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def cell_key(v: object) -> tuple:
    """A hashable key of a present cell (two cells are the same when their keys are equal:
    :func:`_same`): strings, booleans and numbers apart (``"1"``, ``True`` and ``1`` are three
    keys, as pandas' hashing, for which ``True == 1``, would not keep them), numbers by value
    (``1``, ``1.0`` and ``np.int64(1)`` one key, ``("number", 1)``). ``key[1]`` is the cell in
    a canonical form: the string, the Python bool, an int for an integral number, else a
    float. A level released by the structure stage is held as such a value, and a cell is one
    of its levels when their keys agree."""
    if isinstance(v, str):
        return ("str", str(v))
    if isinstance(v, (bool, np.bool_)):
        return ("bool", bool(v))
    if _numeric_scalar(v):
        if isinstance(v, numbers.Integral):
            return ("number", int(v))
        f = float(v)
        return ("number", int(f) if f.is_integer() and abs(f) < _EXACT_INT else f)
    try:
        hash(v)
    except TypeError:
        return ("other", repr(v))
    return ("other", v)


def _label(v: object) -> str:
    """A status level's name for a code: integers and integral floats without a decimal point
    (``-8``), other floats by ``repr``, strings as they are."""
    if isinstance(v, str):
        return v
    if _numeric_scalar(v):
        f = float(v)
        if float(f).is_integer() and abs(f) < _EXACT_INT:
            return str(int(f))
        return repr(f)
    return repr(v)


@dataclass(frozen=True)
class StatusInfo:
    """How a column was split by :func:`split_status`, enough to invert it.

    Attributes
    ----------
    name : str
        The column.
    levels : tuple of str
        Status level names: ``("observed", "missing", <codes>..., "spike:<v>"...)``; status
        code ``s`` is ``levels[s]``.
    codes, spikes : tuple
        The declared missing codes and spikes, in level order (numeric ones normalised to
        ``int`` for integer columns and ``float`` for float columns).
    kind : str
        :func:`column_kind` of the column.
    dtype : object
        The column's dtype, restored by :func:`join_status`.
    na_value : object
        What :func:`join_status` writes in missing cells: the column's own marker when all its
        empty cells used one (``""``, ``None``, NaN or ``pd.NA``), else the dtype's default.
    """

    name: str
    levels: tuple[str, ...]
    codes: tuple = ()
    spikes: tuple = ()
    kind: str = "float"
    dtype: object = np.dtype(np.float64)
    na_value: object = np.nan

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    def code_status(self, code: object) -> int:
        """The status code of a declared missing code."""
        for j, c in enumerate(self.codes):
            if c == code:
                return 2 + j
        raise KeyError(f"{code!r} is not a declared code of column {self.name!r}: {self.codes}.")

    def spike_status(self, spike: float) -> int:
        """The status code of a declared spike."""
        for j, s in enumerate(self.spikes):
            if s == spike:
                return 2 + len(self.codes) + j
        raise KeyError(f"{spike!r} is not a declared spike of column {self.name!r}.")


def _as_sequence(values: object, what: str, name: str) -> tuple:
    if values is None:
        return ()
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(
            f"The {what} of column {name!r} must be a list or tuple of values. Got {values!r}."
        )
    return tuple(values.tolist() if isinstance(values, np.ndarray) else values)


def integer_range(dtype: object) -> tuple[int, int]:
    """The values an integer dtype can hold, ``(min, max)`` (NumPy or pandas nullable: ``uint8``
    -> (0, 255)): a public fact of the column, like its dtype."""
    np_dtype = dtype.numpy_dtype if hasattr(dtype, "numpy_dtype") else np.dtype(dtype)
    info = np.iinfo(np_dtype)
    return int(info.min), int(info.max)


def _check_number(v: object, what: str, name: str, kind: str, dtype: object) -> int | float:
    if not _numeric_scalar(v):
        raise TypeError(
            f"The {what} {v!r} of column {name!r} must be a number: the column is {kind} "
            f"({dtype}). Got {type(v).__name__}."
        )
    f = float(v)
    if not math.isfinite(f):
        raise ValueError(
            f"The {what} {v!r} of column {name!r} must be finite (empty cells are missing, not "
            f"a {what})."
        )
    if kind == "integer":
        if not f.is_integer():
            raise ValueError(
                f"The {what} {v!r} of column {name!r} is not an integer, so it cannot occur in "
                f"the integer column ({dtype})."
            )
        lo, hi = integer_range(dtype)
        iv = int(v)
        if not lo <= iv <= hi:
            raise ValueError(
                f"The {what} {v!r} of column {name!r} is outside the range [{lo}, {hi}] of its "
                f"dtype {dtype}."
            )
        return iv
    return f


def _check_codes(codes: tuple, name: str, kind: str, dtype: object) -> tuple:
    out = []
    for c in codes:
        if kind in ("integer", "float"):
            out.append(_check_number(c, "code", name, kind, dtype))
        elif kind == "bool":
            raise TypeError(
                f"Column {name!r} is boolean; it cannot hold a missing code such as {c!r}."
            )
        elif kind == "string":
            if not isinstance(c, str):
                raise TypeError(
                    f"The code {c!r} of column {name!r} must be a string: the column holds "
                    f"strings. Got {type(c).__name__}."
                )
            if c == "":
                raise ValueError(
                    f'The code "" of column {name!r} is an empty cell (missing), not a code.'
                )
            out.append(c)
        elif kind == "category":
            if _is_na_scalar(c) or c not in dtype.categories:
                raise ValueError(
                    f"The code {c!r} of column {name!r} is not one of its categories "
                    f"{list(dtype.categories)}."
                )
            if c == "":
                raise ValueError(
                    f'The code "" of column {name!r} is an empty cell (missing), not a code.'
                )
            out.append(c)
        else:  # object
            if _is_na_scalar(c) or (isinstance(c, str) and c == ""):
                raise ValueError(f"The code {c!r} of column {name!r} is an empty cell, not a code.")
            out.append(c)
    if len(set(out)) != len(out):
        dup = next(codes[i] for i, c in enumerate(out) if c in out[:i])
        raise ValueError(f"The code {dup!r} is declared twice for column {name!r}.")
    return tuple(out)


def _check_spikes(
    spikes: tuple, codes: tuple, name: str, kind: str, dtype: object, support: object
) -> tuple:
    if spikes and kind not in ("integer", "float"):
        raise TypeError(
            f"Spikes are point masses of a numeric column; column {name!r} is {kind} ({dtype}), "
            f"so the spike {spikes[0]!r} has no place in it."
        )
    lo, hi = -math.inf, math.inf
    if support is not None:
        try:
            lo, hi = (float(support[0]), float(support[1]))
        except (TypeError, ValueError, IndexError):
            raise TypeError(
                f"The 'support' of column {name!r} must be a pair (low, high). Got {support!r}."
            ) from None
        if not lo <= hi:
            raise ValueError(
                f"The 'support' of column {name!r} must have low <= high. Got {support!r}."
            )
    out = []
    for s in spikes:
        v = _check_number(s, "spike", name, kind, dtype)
        if not lo <= v <= hi:
            raise ValueError(
                f"The spike {s!r} of column {name!r} is outside the column's support [{lo}, {hi}]."
            )
        if v in codes:
            raise ValueError(
                f"The value {s!r} of column {name!r} is declared both as a missing code and as "
                f"a spike; it must be one or the other."
            )
        out.append(v)
    if len(set(out)) != len(out):
        dup = next(spikes[i] for i, c in enumerate(out) if c in out[:i])
        raise ValueError(f"The spike {dup!r} is declared twice for column {name!r}.")
    return tuple(out)


def _levels(codes: tuple, spikes: tuple, name: str) -> tuple[str, ...]:
    levels = [OBSERVED_LEVEL, MISSING_LEVEL]
    for c in codes:
        lab = _label(c)
        if lab in levels or lab.startswith(_SPIKE_PREFIX):
            raise ValueError(
                f"The code {c!r} of column {name!r} would be named {lab!r}, which clashes with "
                f"another status level of the column {levels}."
            )
        levels.append(lab)
    levels.extend(f"{_SPIKE_PREFIX}{_label(s)}" for s in spikes)
    return tuple(levels)


def _na_value(series: pd.Series, missing: np.ndarray, kind: str) -> object:
    """The column's own empty-cell marker if its empty cells all use one, else its default."""
    default = getattr(series.dtype, "na_value", np.nan)
    if kind in ("integer", "float", "bool"):
        return pd.NA if default is pd.NA else np.nan
    if kind == "category":
        cells = series.to_numpy(dtype=object)[missing]
        if len(cells) and all(isinstance(v, str) and v == "" for v in cells):
            return ""
        return np.nan
    cells = series.to_numpy(dtype=object)[missing]
    if len(cells) == 0:
        return default
    first = cells[0]
    same = all(
        (v is first)
        or (isinstance(v, str) and isinstance(first, str) and v == first)
        or (
            isinstance(v, float)
            and isinstance(first, float)
            and math.isnan(v)
            and math.isnan(first)
        )
        for v in cells
    )
    if not same:
        return default
    if isinstance(first, float):
        return np.nan
    return first


def split_status(
    series: pd.Series,
    codes: Sequence = (),
    spikes: Sequence = (),
    *,
    name: str | None = None,
    support: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray, StatusInfo]:
    """A column's status codes, its values where observed, and how to invert them.

    Parameters
    ----------
    series : pandas.Series
        The column (never modified).
    codes : sequence
        Declared missing codes, kept apart from values: numbers for a numeric column (integers
        for an integer column), strings for a string column, categories for a categorical one.
        A boolean column takes none.
    spikes : sequence of float
        Declared point masses of a numeric column (synthpop's ``semicont``): each becomes a
        status level and is removed from the value array.
    name : str, optional
        The column's name in messages; defaults to ``series.name``.
    support : (float, float), optional
        The closed interval of values the column's model can take (e.g. ``(0, inf)`` for a
        count); a spike outside it is an error.

    Returns
    -------
    status : numpy.ndarray of int64
        ``0`` observed, ``1`` missing (empty cell), ``2 + j`` the j-th code, ``2 + C + j`` the
        j-th spike.
    values : numpy.ndarray
        float64 for numeric columns, object otherwise; NaN where ``status != 0``.
    info : StatusInfo
        Levels, codes, spikes, kind, dtype and empty-cell marker.

    Raises
    ------
    TypeError, ValueError
        Before any work, naming the column and value: a code not of the column's type (a
        non-numeric code for a numeric column, a non-string code for a string column, a code
        outside a categorical column's categories, any code for a boolean column), a code or
        spike that cannot occur in an integer column, a spike in a non-numeric column or outside
        ``support``, a value declared both as code and spike, a duplicate, a code whose level
        name clashes with ``observed``/``missing``; integers beyond 2**53 that float64 cannot
        hold exactly.
    """
    if not isinstance(series, pd.Series):
        raise TypeError(f"split_status needs a pandas Series. Got {type(series).__name__}.")
    name = str(series.name) if name is None else name
    kind = column_kind(series)
    dtype = series.dtype
    codes_t = _check_codes(_as_sequence(codes, "codes", name), name, kind, dtype)
    spikes_t = _check_spikes(
        _as_sequence(spikes, "spikes", name), codes_t, name, kind, dtype, support
    )
    levels = _levels(codes_t, spikes_t, name)

    missing = is_missing(series)
    n = len(series)
    status = np.zeros(n, dtype=np.int64)
    status[missing] = 1
    present = ~missing
    if kind in ("integer", "float"):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        if kind == "integer":
            raw = series.to_numpy(dtype=object)[present]
            big = [v for v in raw if abs(int(v)) > _EXACT_INT]
            if big:
                raise ValueError(
                    f"Column {name!r} holds the integer {big[0]}, beyond 2**53, which float64 "
                    f"values cannot hold exactly."
                )
        targets = [*codes_t, *spikes_t]
        for j, t in enumerate(targets):
            status[present & (values == float(t))] = 2 + j
        values = values.copy()
    else:
        cells = series.to_numpy(dtype=object)
        values = np.empty(n, dtype=object)
        values[:] = cells
        for j, c in enumerate(codes_t):
            hit = np.fromiter(
                (bool(p) and _same(v, c) for v, p in zip(cells, present, strict=True)), bool, n
            )
            status[present & hit] = 2 + j
    values[status != 0] = np.nan
    info = StatusInfo(
        name=name,
        levels=levels,
        codes=codes_t,
        spikes=spikes_t,
        kind=kind,
        dtype=dtype,
        na_value=_na_value(series, missing, kind),
    )
    return status, values, info


def _nullable(dtype: object) -> object:
    """The pandas nullable dtype holding a NumPy integer or bool dtype with missing cells."""
    if isinstance(dtype, np.dtype):
        if dtype.kind == "b":
            return pd.BooleanDtype()
        if dtype.kind in "iu":
            return pd.api.types.pandas_dtype(
                ("UInt" if dtype.kind == "u" else "Int") + str(dtype.itemsize * 8)
            )
    return dtype


def join_status(
    status: np.ndarray,
    values: np.ndarray,
    info: StatusInfo,
    index: pd.Index | None = None,
) -> pd.Series:
    """The inverse of :func:`split_status`: a column with ``info``'s dtype.

    Observed records take ``values``; missing records the column's empty-cell marker; code and
    spike records their declared value. Integer columns round values to the nearest integer
    (as :func:`pseudopost.models.columns.decode_column` does); a NumPy integer or bool column
    that receives missing cells becomes pandas' nullable ``Int``/``boolean`` of the same width.

    Raises
    ------
    ValueError
        ``status`` not integers in ``0..S-1``, lengths that differ, or an observed record whose
        value is empty, not finite, or not a category of the column.
    """
    st = np.asarray(status)
    vals = np.asarray(values, dtype=object if info.kind not in ("integer", "float") else None)
    if st.ndim != 1 or vals.ndim != 1 or len(st) != len(vals):
        raise ValueError(
            f"Column {info.name!r}: status and values must be 1-d of the same length. Got "
            f"shapes {st.shape} and {vals.shape}."
        )
    if len(st) and (not np.issubdtype(st.dtype, np.integer)):
        if not (np.issubdtype(st.dtype, np.floating) and np.all(st == np.rint(st))):
            raise ValueError(
                f"Column {info.name!r}: status codes must be integers. Got {st.dtype}."
            )
    st = st.astype(np.int64)
    if len(st) and (st.min() < 0 or st.max() >= info.n_levels):
        bad = int(st[(st < 0) | (st >= info.n_levels)][0])
        raise ValueError(
            f"Column {info.name!r}: status code {bad} is outside 0..{info.n_levels - 1} "
            f"({info.levels})."
        )
    n = len(st)
    index = pd.RangeIndex(n) if index is None else index
    if len(index) != n:
        raise ValueError(f"Column {info.name!r}: index has {len(index)} entries for {n} records.")
    obs = st == 0
    miss = st == 1
    if info.kind in ("integer", "float"):
        return _join_numeric(st, np.asarray(values, dtype=np.float64), obs, miss, info, index)
    return _join_cells(st, vals, obs, miss, info, index)


def _first_bad(mask: np.ndarray, index: pd.Index) -> object:
    return index[int(np.flatnonzero(mask)[0])]


def _join_numeric(st, vals, obs, miss, info, index) -> pd.Series:
    bad = obs & ~np.isfinite(vals)
    if bad.any():
        raise ValueError(
            f"Column {info.name!r}: the observed record {_first_bad(bad, index)!r} has no "
            f"finite value."
        )
    out = np.where(obs, vals, np.nan)
    for j, t in enumerate([*info.codes, *info.spikes]):
        out[st == 2 + j] = float(t)
    dtype = info.dtype
    if info.kind == "integer":
        out = np.rint(out)
        lo, hi = integer_range(dtype)
        off = ~np.isnan(out) & ((out < lo) | (out > hi))
        if off.any():
            raise ValueError(
                f"Column {info.name!r}: record {_first_bad(off, index)!r} has value "
                f"{out[off][0]}, outside the range of {dtype}."
            )
        if miss.any():
            dtype = _nullable(dtype)
        if isinstance(dtype, np.dtype):
            return pd.Series(out.astype(dtype), index=index, name=info.name)
    return pd.Series(out, index=index, name=info.name).astype(dtype)


def _join_cells(st, vals, obs, miss, info, index) -> pd.Series:
    empty = (
        np.fromiter(
            (_is_na_scalar(v) or (isinstance(v, str) and v == "") for v in vals), bool, len(vals)
        )
        if len(vals)
        else np.zeros(0, bool)
    )
    bad = obs & empty
    if bad.any():
        raise ValueError(
            f"Column {info.name!r}: the observed record {_first_bad(bad, index)!r} has an empty "
            f"value."
        )
    out = np.empty(len(st), dtype=object)
    out[:] = [info.na_value] * len(st)
    out[obs] = vals[obs]
    for j, c in enumerate(info.codes):
        out[st == 2 + j] = c
    dtype = info.dtype
    if info.kind == "category":
        cats = dtype.categories
        unknown = obs & ~np.fromiter((v in cats for v in out), bool, len(out)) if len(out) else obs
        if unknown.any():
            i = int(np.flatnonzero(unknown)[0])
            raise ValueError(
                f"Column {info.name!r}: record {index[i]!r} has value {out[i]!r}, not one of "
                f"its categories {list(cats)}."
            )
        if info.na_value != "":
            out[miss] = np.nan
        return pd.Series(pd.Categorical(out, dtype=dtype), index=index, name=info.name)
    if info.kind == "bool":
        dtype = _nullable(dtype) if miss.any() else dtype
        if isinstance(dtype, np.dtype):
            return pd.Series(out.astype(bool), index=index, name=info.name)
        return pd.Series(pd.array(out, dtype=dtype), index=index, name=info.name)
    if isinstance(dtype, np.dtype):  # object
        return pd.Series(out, index=index, name=info.name, dtype=object)
    return pd.Series(out, index=index, name=info.name).astype(dtype)
