"""Schema checks: the columns a rule names, its literals' types and levels, and which
comparisons a column allows, against a frame or a declared schema."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from pseudopost.models.columns import ColumnInfo
from pseudopost.models.rules.nodes import (
    Column,
    Compare,
    Expr,
    _columns_of,
    _literal_text,
    _literals_of,
    _same,
    _walk,
)
from pseudopost.models.status import column_kind, is_missing

_ORDERING = ("<", "<=", ">", ">=")


@dataclass(frozen=True)
class _Spec:
    kind: str  # bool, integer, float, category, string, object
    levels: tuple | None = None  # categories, or observed values of a string/object column
    ordered: bool = False
    declared: bool = False  # levels declared (category dtype, schema) rather than observed

    @property
    def numeric(self) -> bool:
        return self.kind in ("integer", "float")


def _spec_of_series(s: pd.Series, observed_levels: bool) -> _Spec:
    kind = column_kind(s)
    if kind == "category":
        return _Spec("category", tuple(s.cat.categories), bool(s.cat.ordered), True)
    if kind in ("string", "object") and observed_levels:
        cells = s.to_numpy(dtype=object)[~is_missing(s)]
        return _Spec(kind, tuple(pd.unique(cells)))
    return _Spec(kind)


def _spec_of_schema(name: str, entry: object) -> _Spec:
    if isinstance(entry, ColumnInfo):
        if entry.categorical:
            return _Spec("category", tuple(entry.levels), entry.kind == "ordinal", True)
        return _Spec("integer" if entry.kind == "integer" else "float")
    if isinstance(entry, (list, tuple)):
        return _Spec("category", tuple(entry), False, True)
    try:
        dtype = pd.api.types.pandas_dtype(entry)
    except TypeError:
        raise TypeError(
            f"The schema entry for column {name!r} must be a dtype, a ColumnInfo or a list of "
            f"levels. Got {entry!r}."
        ) from None
    return _spec_of_series(pd.Series([], dtype=dtype, name=name), observed_levels=False)


class _FrameSchema(Mapping):
    """A frame's column specs, each worked out when a rule first asks for it."""

    def __init__(self, frame: pd.DataFrame, observed_levels: bool):
        self.frame, self.observed_levels = frame, observed_levels
        self.names = [str(c) for c in frame.columns]
        self._specs: dict[str, _Spec] = {}

    def __getitem__(self, name: str) -> _Spec:
        if name not in self._specs:
            if name not in self.frame.columns:
                raise KeyError(name)
            self._specs[name] = _spec_of_series(self.frame[name], self.observed_levels)
        return self._specs[name]

    def __contains__(self, name: object) -> bool:
        return name in self.frame.columns

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def _schema(frame_or_schema: object, observed_levels: bool) -> Mapping[str, _Spec]:
    if isinstance(frame_or_schema, pd.DataFrame):
        return _FrameSchema(frame_or_schema, observed_levels)
    if isinstance(frame_or_schema, Mapping):
        return {str(k): _spec_of_schema(str(k), v) for k, v in frame_or_schema.items()}
    raise TypeError(
        f"Expected a pandas DataFrame or a mapping of column -> dtype/levels. Got "
        f"{type(frame_or_schema).__name__}."
    )


def _literal_fits(spec: _Spec, value: object) -> bool:
    if spec.kind == "bool":
        return isinstance(value, bool)
    if spec.numeric:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if spec.kind == "string":
        return isinstance(value, str)
    return True  # category/object: checked against levels


def _check_expr(expr: Expr, schema: Mapping[str, _Spec], what: str) -> None:
    """Raise if ``expr`` names an unknown column or level or mixes types."""
    for name in _columns_of(expr):
        if name not in schema:
            raise ValueError(
                f"{what} names the column {name!r}, which is not in the data "
                f"(columns: {sorted(schema)})."
            )
    for name, value in _literals_of(expr):
        _check_value(schema[name], name, value, what)
    for node in _walk(expr):
        if isinstance(node, Compare):
            _check_compare(node, schema, what)


def _check_value(spec: _Spec, name: str, value: object, what: str) -> None:
    if not _literal_fits(spec, value):
        raise ValueError(
            f"{what} compares the {spec.kind} column {name!r} with {_literal_text(value)}, a "
            f"{type(value).__name__}; expected a "
            f"{'number' if spec.numeric else 'true/false' if spec.kind == 'bool' else 'string'}."
        )
    if spec.levels is not None and spec.kind in ("category", "string", "object"):
        if not any(_same(value, lv) for lv in spec.levels):
            raise ValueError(
                f"{what} names the level {_literal_text(value)} of column {name!r}, which is not "
                f"one of its levels {list(spec.levels)}. If the codebook lists it and no "
                f"record holds it, declare the column's levels (a pandas categorical, or "
                f"levels=); otherwise correct the rule."
            )


def _check_compare(node: Compare, schema: Mapping[str, _Spec], what: str) -> None:
    spec = schema[node.column]
    ordering = node.op in _ORDERING
    if isinstance(node.other, Column):
        other = schema[node.other.name]
        same_kind = (
            (spec.numeric and other.numeric)
            or (spec.kind == other.kind and spec.kind in ("bool", "string", "object"))
            or (spec.kind == other.kind == "category" and spec.levels == other.levels)
        )
        if not same_kind:
            raise ValueError(
                f"{what} compares column {node.column!r} ({spec.kind}) with column "
                f"{node.other.name!r} ({other.kind}); only columns of one type (numbers, or "
                f"categories with the same levels) can be compared."
            )
    if ordering and not (spec.numeric or (spec.kind == "category" and spec.ordered)):
        raise ValueError(
            f"{what} orders ({node.op}) the {'unordered ' if spec.kind == 'category' else ''}"
            f"{spec.kind} column {node.column!r}; '<', '<=', '>', '>=' need a numeric or an "
            f"ordered categorical column."
        )
