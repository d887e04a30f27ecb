"""Files as agencies hold them: SPSS ``.sav``, Stata ``.dta``, CSV and Parquet, with a codebook.

:func:`read_file` returns the frame and a :class:`Codebook`: per column its variable label,
value labels, declared missing values and original format. Labelled categorical columns become
pandas categories (the labels); SPSS user-missing values (discrete values and ranges) and Stata
extended missing values (``.a`` to ``.z``) become declared missing **codes**, kept apart from
both values and empty cells, with their labels (:attr:`Codebook.missing_codes` is the
``missing_codes=`` argument of a whole-file synthesizer). :func:`write_file` writes a (synthetic)
frame back in the same format with the same value labels, variable labels and missing-value
definitions, atomically. SPSS and Stata files are read and written with pyreadstat.

How codes appear in the frame
-----------------------------
* SPSS numeric column: the code's own value (``-8.0``); string column: the string.
* Stata numeric column: extended missing ``.a`` ... ``.z`` have no number a reader can type,
  so they are held as Stata's own stored doubles (:data:`STATA_MISSING`: ``.a`` is
  :math:`2^{1023}(1 + 2^{-12})` and each next letter :math:`2^{1023-52+40}` above), which are
  larger than any value a Stata file can hold, so a code never collides with a value.
* Labelled categorical column: the code's label (or, unlabelled, its value as text, ``".a"``
  for Stata), a category like the others.

A column is a labelled categorical when it has value labels for values that are not codes and
SPSS says it is nominal or ordinal (ordinal gives ordered categories), or, with no measure (Stata,
or SPSS ``unknown``), when every value it holds other than codes is labelled. Categories are its
labelled values and the values it holds, in value order (unlabelled ones as text), then its
codes. If two values share a label the column stays numeric (labels kept in the codebook).

The codebook is plain data (this module sits below ``models``): nothing in it is drawn from a
model. Which codes a column declares is public metadata; for an SPSS missing *range* the codes
are the range's labelled values and the values the file holds inside it.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from pseudopost._extras import require
from pseudopost._io import atomic_write

__all__ = [
    "STATA_MISSING",
    "Codebook",
    "MissingRange",
    "Variable",
    "read_file",
    "write_file",
]

_FORMATS = {".sav": "sav", ".zsav": "sav", ".dta": "dta", ".csv": "csv", ".parquet": "parquet"}
_FORMATS[".pq"] = "parquet"


def _stata_missing() -> dict[str, float]:
    """Stata's stored doubles for ``.a`` ... ``.z`` (Stata [U] 12.2.1; the table pandas'
    ``StataMissingValue`` reads): ``.`` is 0x7FE0000000000000 and each letter 2**40 above."""
    base = 0x7FE0000000000000
    return {
        chr(96 + i): struct.unpack("<d", struct.pack("<q", base + i * 2**40))[0]
        for i in range(1, 27)
    }


#: letter -> the double Stata stores for ``.letter``; the frame's numeric code for it.
STATA_MISSING: dict[str, float] = _stata_missing()
_STATA_LETTER = {v: k for k, v in STATA_MISSING.items()}


@dataclass(frozen=True)
class MissingRange:
    """An SPSS user-missing range ``low`` .. ``high`` (both included)."""

    low: float
    high: float

    def __contains__(self, value: object) -> bool:
        return isinstance(value, (int, float)) and self.low <= value <= self.high


@dataclass(frozen=True)
class Variable:
    """One column's codebook entry.

    Attributes
    ----------
    name : str
    label : str or None
        The variable label.
    storage : str or None
        How the file stored it (pyreadstat's type: ``double``, ``string``, ``int8``, ... or the
        pandas dtype of a CSV/Parquet column).
    format : str or None
        The original display format (``F8.2``, ``A8``, ``%10.0g``).
    measure : str or None
        SPSS measure: ``nominal``, ``ordinal``, ``scale`` or ``unknown``.
    value_labels : dict
        File value -> label, as in the file (codes' labels included; Stata letters as ``"a"``).
    missing_values : tuple
        SPSS discrete user-missing values (file values).
    missing_ranges : tuple of MissingRange
        SPSS user-missing ranges.
    codes : dict
        The declared missing codes as they appear in the frame -> their label (or None).
    categories : dict
        For a labelled categorical column: file value -> category in the frame (codes included).
    ordered : bool
        Whether the categories are ordered (SPSS ordinal).
    valid_range : (float, float) or None
        The codebook's valid range of a numeric column's values (codes apart), e.g. ``(18, 89)``
        for ages where 89 means "89 or older" (a topcode): a whole-file synthesizer keeps its
        synthetic values inside it and spends no budget on the column's bounds.
    """

    name: str
    label: str | None = None
    storage: str | None = None
    format: str | None = None
    measure: str | None = None
    value_labels: dict = field(default_factory=dict)
    missing_values: tuple = ()
    missing_ranges: tuple[MissingRange, ...] = ()
    codes: dict = field(default_factory=dict)
    categories: dict = field(default_factory=dict)
    ordered: bool = False
    valid_range: tuple[float, float] | None = None

    @property
    def categorical(self) -> bool:
        return bool(self.categories)


@dataclass(frozen=True)
class Codebook:
    """A file's metadata: its ``format`` (``sav``, ``dta``, ``csv``, ``parquet``), its
    ``file_label`` and one :class:`Variable` per column."""

    format: str
    variables: dict[str, Variable] = field(default_factory=dict)
    file_label: str | None = None

    @property
    def missing_codes(self) -> dict[str, list]:
        """``{column: [codes as in the frame]}`` for columns that declare codes: the
        ``missing_codes=`` argument of a whole-file synthesizer."""
        return {n: list(v.codes) for n, v in self.variables.items() if v.codes}

    @property
    def valid_ranges(self) -> dict[str, tuple[float, float]]:
        """``{column: (low, high)}`` for columns whose valid range is declared: the ``bounds=``
        argument of a whole-file synthesizer."""
        return {n: v.valid_range for n, v in self.variables.items() if v.valid_range is not None}

    @property
    def code_labels(self) -> dict[str, dict]:
        """``{column: {code: label}}`` for columns that declare codes."""
        return {n: dict(v.codes) for n, v in self.variables.items() if v.codes}

    @property
    def variable_labels(self) -> dict[str, str]:
        return {n: v.label for n, v in self.variables.items() if v.label}

    @property
    def value_labels(self) -> dict[str, dict]:
        return {n: dict(v.value_labels) for n, v in self.variables.items() if v.value_labels}


def _format_of(path: str | os.PathLike, argument: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"The '{argument}' argument must be a path. Got {type(path).__name__}.")
    suffix = Path(path).suffix.lower()
    if suffix not in _FORMATS:
        raise ValueError(
            f"The '{argument}' argument {str(path)!r} has suffix {suffix!r}; expected one of "
            f"{sorted(_FORMATS)}."
        )
    return _FORMATS[suffix]


def _text(v: object) -> str:
    """A file value as category text: integral numbers without a decimal point."""
    if isinstance(v, str):
        return v
    f = float(v)
    return str(int(f)) if f.is_integer() and abs(f) < 2**53 else repr(f)


def _is_empty(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


# ---------------------------------------------------------------------------------------------
# Reading


def read_file(path: str | os.PathLike) -> tuple[pd.DataFrame, Codebook]:
    """Read ``.sav``, ``.zsav``, ``.dta``, ``.csv`` or ``.parquet``: the frame and its codebook.

    SPSS user-missing values are read as declared codes (not emptied), Stata extended missing
    values as codes held by :data:`STATA_MISSING`; labelled categorical columns become pandas
    categories. CSV and Parquet files carry no labels: their codebook records only dtypes.

    Raises
    ------
    ValueError
        An unsupported suffix. ``FileNotFoundError`` if the file does not exist.
    """
    fmt = _format_of(path, "path")
    if not Path(path).is_file():
        raise FileNotFoundError(f"No file at {str(path)!r}.")
    if fmt == "csv":
        return _plain(pd.read_csv(path), fmt)
    if fmt == "parquet":
        return _plain(pd.read_parquet(path), fmt)
    pyreadstat = require("pyreadstat", "Reading and writing SPSS and Stata files")

    reader = pyreadstat.read_sav if fmt == "sav" else pyreadstat.read_dta
    raw, meta = reader(str(path), user_missing=True)
    frame, variables = {}, {}
    for i, name in enumerate(meta.column_names):
        frame[name], variables[name] = _read_column(raw[name], meta, i, fmt)
    out = pd.DataFrame(frame, index=raw.index)
    return out, Codebook(fmt, variables, meta.file_label or None)


def _plain(frame: pd.DataFrame, fmt: str) -> tuple[pd.DataFrame, Codebook]:
    variables = {str(c): Variable(str(c), storage=str(frame[c].dtype)) for c in frame.columns}
    return frame, Codebook(fmt, variables)


def _read_column(s: pd.Series, meta: object, i: int, fmt: str) -> tuple[pd.Series, Variable]:
    name = s.name
    labels = dict(meta.variable_value_labels.get(name, {}))
    storage = meta.readstat_variable_types.get(name)
    numeric = storage not in (None, "string") and not _is_dates(s)
    stata_numeric = numeric and fmt == "dta"
    discrete, ranges = [], []
    for entry in meta.missing_ranges.get(name, []) if fmt == "sav" else []:
        lo, hi = entry["lo"], entry["hi"]
        if lo == hi:
            discrete.append(lo)
        else:
            ranges.append(MissingRange(float(lo), float(hi)))
    if numeric:
        values = _numbers(s)
        held = set(np.unique(values[~np.isnan(values)]).tolist())
        held = {_STATA_LETTER.get(v, v) for v in held} if stata_numeric else held
    else:
        values = s
        cells = s.to_numpy(dtype=object)
        held = {v for v in pd.unique(cells[~s.isna().to_numpy()]) if not v == ""}
    if stata_numeric:  # every letter is missing in Stata: the ones held or labelled are codes
        code_values = sorted({v for v in held | set(labels) if isinstance(v, str)})
    else:
        in_range = {v for v in held | set(labels) if any(v in r for r in ranges)}
        code_values = sorted(set(discrete) | in_range)

    def frame_code(v):  # a file value as the frame holds it
        return STATA_MISSING[v] if stata_numeric and isinstance(v, str) else v

    measure = meta.variable_measure.get(name) if fmt == "sav" else None
    var = Variable(
        name=name,
        label=meta.column_labels[i] if meta.column_labels else None,
        storage=storage,
        format=meta.original_variable_types.get(name),
        measure=measure,
        value_labels=labels,
        missing_values=tuple(discrete),
        missing_ranges=tuple(ranges),
    )
    categories = _categories(held, labels, code_values, measure, stata_numeric)
    code_label = {c: labels.get(c) for c in code_values}
    if categories:
        ordered = measure == "ordinal"
        lookup = {frame_code(k): c for k, c in categories.items()}
        named = pd.Series(values, index=s.index).map(lookup)  # empty cells and "" -> NaN
        dtype = pd.CategoricalDtype(list(categories.values()), ordered=ordered)
        col = pd.Series(pd.Categorical(named, dtype=dtype), index=s.index, name=name)
        codes = {categories[c]: code_label[c] for c in code_values}
        return col, replace(var, codes=codes, categories=categories, ordered=ordered)
    codes = {frame_code(c): code_label[c] for c in code_values}
    col = pd.Series(values, index=s.index, name=name) if numeric else s.copy()
    return col, replace(var, codes=codes)


def _is_dates(s: pd.Series) -> bool:
    if pd.api.types.is_datetime64_any_dtype(s.dtype) or pd.api.types.is_timedelta64_dtype(s):
        return True
    if s.dtype == object:
        return pd.api.types.infer_dtype(s, skipna=True) in ("date", "datetime", "time")
    return False


def _numbers(s: pd.Series) -> np.ndarray:
    """A numeric column as float64; Stata's letters (object cells) as :data:`STATA_MISSING`."""
    if s.dtype != object:
        return s.to_numpy(dtype=np.float64, na_value=np.nan)
    cells = s.to_numpy(dtype=object)
    return np.array(
        [STATA_MISSING[v] if isinstance(v, str) else (np.nan if v is None else v) for v in cells],
        dtype=np.float64,
    )


def _categories(held: set, labels: dict, code_values: list, measure, stata_numeric) -> dict:
    """File value -> category text for a labelled categorical column, else ``{}``.

    ``held`` are the distinct file values the column holds (Stata codes as letters)."""
    codes = set(code_values)
    value_labels = {k: v for k, v in labels.items() if k not in codes}
    if not value_labels or measure == "scale":
        return {}
    held = held - codes
    if measure not in ("nominal", "ordinal") and not held <= set(value_labels):
        return {}
    cats = {v: value_labels.get(v, _text(v)) for v in sorted(set(value_labels) | held)}
    for c in code_values:
        unlabelled = f".{c}" if stata_numeric else _text(c)
        cats[c] = labels.get(c) if labels.get(c) is not None else unlabelled
    if len(set(cats.values())) != len(cats):
        return {}
    return cats


# ---------------------------------------------------------------------------------------------
# Writing


def write_file(
    frame: pd.DataFrame, path: str | os.PathLike, codebook: Codebook | None = None
) -> Path:
    """Write ``frame`` to ``path`` in the format its suffix names, whole or not at all.

    For ``.sav``/``.dta`` the codebook's variable labels, value labels, missing-value
    definitions (SPSS discrete values and ranges, Stata extended missing), measures and numeric
    formats are written for the frame's columns; labelled categorical columns go back to their
    file values and codes to their file representation. Columns the codebook does not list are
    written as they are. CSV and Parquet hold no labels: the frame is written as it is.

    Raises
    ------
    TypeError, ValueError
        Before anything is written: ``frame`` not a DataFrame, an unsupported suffix, a
        ``codebook`` that is not a :class:`Codebook`, or a category with no file value in the
        codebook (naming the column and the value).
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(
            f"The 'frame' argument must be a pandas DataFrame. Got {type(frame).__name__}."
        )
    fmt = _format_of(path, "path")
    if codebook is not None and not isinstance(codebook, Codebook):
        raise TypeError(
            f"The 'codebook' argument must be a Codebook. Got {type(codebook).__name__}."
        )
    if fmt == "csv":
        return atomic_write(path, lambda p: frame.to_csv(p, index=False))
    if fmt == "parquet":
        return atomic_write(path, lambda p: frame.to_parquet(p, index=False))
    pyreadstat = require("pyreadstat", "Reading and writing SPSS and Stata files")

    variables = codebook.variables if codebook is not None else {}
    data, options = {}, _Options()
    for name in frame.columns:
        var = variables.get(name)
        data[name] = _write_column(frame[name], var, fmt, options)
    out = pd.DataFrame(data, index=range(len(frame)))
    kwargs = {
        "file_label": (codebook.file_label or "") if codebook is not None else "",
        "column_labels": options.labels,
        "variable_value_labels": options.value_labels,
        "variable_format": options.formats,
    }
    if fmt == "sav":
        kwargs["missing_ranges"] = options.ranges
        kwargs["variable_measure"] = options.measures
        kwargs["compress"] = Path(path).suffix.lower() == ".zsav"
        return atomic_write(path, lambda p: pyreadstat.write_sav(out, str(p), **kwargs))
    kwargs["missing_user_values"] = options.letters
    return atomic_write(path, lambda p: pyreadstat.write_dta(out, str(p), **kwargs))


@dataclass
class _Options:
    labels: dict = field(default_factory=dict)
    value_labels: dict = field(default_factory=dict)
    formats: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    measures: dict = field(default_factory=dict)
    letters: dict = field(default_factory=dict)


def _write_column(s: pd.Series, var: Variable | None, fmt: str, opt: _Options) -> pd.Series:
    name = s.name
    s = s.reset_index(drop=True)
    if var is None:
        return _plain_column(s)
    if var.label:
        opt.labels[name] = var.label
    if var.value_labels:
        opt.value_labels[name] = dict(var.value_labels)
    if fmt == "sav":
        if var.measure in ("nominal", "ordinal", "scale"):
            opt.measures[name] = var.measure
        miss = [*var.missing_values, *({"lo": r.low, "hi": r.high} for r in var.missing_ranges)]
        if miss:
            opt.ranges[name] = miss
    numeric_file = var.storage not in (None, "string")
    if var.categorical:
        inverse = {c: v for v, c in var.categories.items()}
        cells = s.to_numpy(dtype=object)
        out = []
        for i, c in enumerate(cells):
            if _is_empty(c) or (isinstance(c, str) and c == ""):
                out.append(np.nan if numeric_file else "")
            elif c in inverse:
                out.append(inverse[c])
            else:
                raise ValueError(
                    f"Column {name!r} holds {c!r} (row {i}), which has no value in the "
                    f"codebook's categories {list(inverse)}."
                )
        s = pd.Series(out, dtype=object)
        if numeric_file and fmt == "sav":
            s = s.astype(np.float64)
    if fmt == "dta" and numeric_file:
        letters = sorted(
            {v for v in var.value_labels if isinstance(v, str)}
            | {_STATA_LETTER[c] for c in var.codes if c in _STATA_LETTER}
            | {c for c in var.categories if isinstance(c, str)}
        )
        if letters:
            opt.letters[name] = letters
        s = _stata_cells(s, integer=str(var.storage).startswith("int"), letters=bool(letters))
    elif (
        numeric_file
        and pd.api.types.is_numeric_dtype(s.dtype)
        and not pd.api.types.is_bool_dtype(s.dtype)
    ):
        s = s.astype(np.float64)
    if var.format and numeric_file and _is_number_format(var.format):
        opt.formats[name] = var.format
    return _plain_column(s)


def _stata_cells(s: pd.Series, *, integer: bool, letters: bool) -> pd.Series:
    """A Stata numeric column as pyreadstat writes it: codes as their letters, numbers as
    floats, or as ints for an integer-stored column.

    pyreadstat 1.3.7 writes an empty cell of an integer column that also holds letters as 0,
    so such a column is written as double (its values are unchanged).
    """
    cells = [
        v if isinstance(v, str) else _STATA_LETTER.get(float(v), float(v))
        for v in s.to_numpy(dtype=object)
    ]
    has_letter = any(isinstance(v, str) for v in cells)
    empty = [not isinstance(v, str) and math.isnan(v) for v in cells]
    numbers = [v for v, e in zip(cells, empty, strict=True) if not e and not isinstance(v, str)]
    as_int = integer and all(float(v).is_integer() for v in numbers)
    if as_int and has_letter and any(empty):
        as_int = False
    if as_int:
        cells = [
            v if isinstance(v, str) or e else int(v) for v, e in zip(cells, empty, strict=True)
        ]
    if not letters:
        return pd.Series(cells, dtype=object if as_int else np.float64)
    return pd.Series(cells, dtype=object)


def _is_number_format(f: str) -> bool:
    """Plain numeric display formats (not dates or times), which are safe to write back."""
    f = f.upper()
    if f.startswith("%"):
        return f[-1] in "GFE" and "T" not in f
    return f.startswith(("F", "N", "COMMA", "DOT", "DOLLAR", "PCT", "E"))


def _plain_column(s: pd.Series) -> pd.Series:
    """NumPy dtypes pyreadstat writes: nullable numbers to float64 (NA -> NaN)."""
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return s.astype(object).where(s.notna(), np.nan)
    if pd.api.types.is_extension_array_dtype(dtype) and pd.api.types.is_numeric_dtype(dtype):
        if pd.api.types.is_bool_dtype(dtype):
            return s.astype(object).where(s.notna(), np.nan)
        return s.astype(np.float64)
    return s
