"""The expression AST: frozen dataclasses whose ``str()`` is text that parses back to an equal
node, the :data:`MISSING` a rule may fix, and the checks and text of names and literals."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

_KEYWORDS = frozenset({"and", "or", "not", "in", "is", "missing", "when", "true", "false"})
_BOOLS = {"true": True, "True": True, "false": False, "False": False}
_IDENT = re.compile(r"[^\W\d]\w*")  # Unicode identifiers, as Python's
_OPS = ("==", "!=", "<=", ">=", "<", ">")


class _Missing:
    """The value a rule fixes when it fixes missingness (``is missing``)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self):
        return (_Missing, ())


MISSING = _Missing()


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"A column name must be a non-empty string. Got {name!r}.")
    if "`" in name or "\n" in name:
        raise ValueError(f"A column name in a rule cannot contain a backtick or newline: {name!r}.")
    return name


def _check_literal(value: object) -> object:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"A literal in a rule must be finite. Got {value!r}.")
        return float(value)
    if isinstance(value, str):
        return value
    raise TypeError(
        f"A literal in a rule is a string, number or true/false. Got {value!r} "
        f"({type(value).__name__})."
    )


def _name_text(name: str) -> str:
    if _IDENT.fullmatch(name) and name not in _KEYWORDS and name not in _BOOLS:
        return name
    return f"`{name}`"


def _literal_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(value)


@dataclass(frozen=True)
class Column:
    """A column named in a condition."""

    name: str

    def __post_init__(self):
        _check_name(self.name)

    def __str__(self) -> str:
        return _name_text(self.name)


@dataclass(frozen=True)
class Literal:
    """A string, integer, float or boolean constant."""

    value: str | int | float | bool

    def __post_init__(self):
        object.__setattr__(self, "value", _check_literal(self.value))

    def __str__(self) -> str:
        return _literal_text(self.value)


@dataclass(frozen=True)
class Compare:
    """``column op other``, ``other`` a literal or a column; ``op`` one of == != < <= > >=."""

    column: str
    op: str
    other: Literal | Column

    def __post_init__(self):
        _check_name(self.column)
        if self.op not in _OPS:
            raise ValueError(f"Unknown comparison {self.op!r}; expected one of {_OPS}.")
        if not isinstance(self.other, (Literal, Column)):
            raise TypeError(
                f"A comparison's right side is a Literal or Column. Got {self.other!r}."
            )

    def __str__(self) -> str:
        return f"{_name_text(self.column)} {self.op} {self.other}"


@dataclass(frozen=True)
class Member:
    """``column in (v1, v2, ...)``, or ``not in`` when ``negated``."""

    column: str
    values: tuple
    negated: bool = False

    def __post_init__(self):
        _check_name(self.column)
        vals = tuple(_check_literal(v) for v in self.values)
        if not vals:
            raise ValueError(f"Membership test on {self.column!r} needs at least one value.")
        object.__setattr__(self, "values", vals)

    def __str__(self) -> str:
        items = ", ".join(_literal_text(v) for v in self.values)
        if len(self.values) == 1:
            items += ","
        return f"{_name_text(self.column)} {'not in' if self.negated else 'in'} ({items})"


@dataclass(frozen=True)
class IsMissing:
    """``column is missing``, or ``is not missing`` when ``negated``."""

    column: str
    negated: bool = False

    def __str__(self) -> str:
        return f"{_name_text(self.column)} is {'not ' if self.negated else ''}missing"

    def __post_init__(self):
        _check_name(self.column)


@dataclass(frozen=True)
class Not:
    operand: Expr

    def __str__(self) -> str:
        inner = str(self.operand)
        return f"not {inner}" if isinstance(self.operand, Not) else f"not ({inner})"


def _group(op: str, operands: tuple) -> str:
    return f" {op} ".join(f"({o})" if isinstance(o, (And, Or)) else str(o) for o in operands)


@dataclass(frozen=True)
class And:
    operands: tuple

    def __post_init__(self):
        object.__setattr__(self, "operands", tuple(self.operands))
        if len(self.operands) < 2:
            raise ValueError("'and' needs at least two operands.")

    def __str__(self) -> str:
        return _group("and", self.operands)


@dataclass(frozen=True)
class Or:
    operands: tuple

    def __post_init__(self):
        object.__setattr__(self, "operands", tuple(self.operands))
        if len(self.operands) < 2:
            raise ValueError("'or' needs at least two operands.")

    def __str__(self) -> str:
        # an 'and' inside 'or' needs no parentheses to parse back the same; an 'or' does
        return " or ".join(f"({o})" if isinstance(o, Or) else str(o) for o in self.operands)


Expr = Compare | Member | IsMissing | Not | And | Or


def _columns_of(expr: Expr) -> list[str]:
    if isinstance(expr, Compare):
        return [expr.column] + ([expr.other.name] if isinstance(expr.other, Column) else [])
    if isinstance(expr, (Member, IsMissing)):
        return [expr.column]
    if isinstance(expr, Not):
        return _columns_of(expr.operand)
    return [c for o in expr.operands for c in _columns_of(o)]


def _literals_of(expr: Expr) -> list[tuple[str, object]]:
    if isinstance(expr, Compare):
        return [(expr.column, expr.other.value)] if isinstance(expr.other, Literal) else []
    if isinstance(expr, Member):
        return [(expr.column, v) for v in expr.values]
    if isinstance(expr, IsMissing):
        return []
    if isinstance(expr, Not):
        return _literals_of(expr.operand)
    return [p for o in expr.operands for p in _literals_of(o)]


def _walk(expr: Expr) -> Iterable[Expr]:
    yield expr
    if isinstance(expr, Not):
        yield from _walk(expr.operand)
    elif isinstance(expr, (And, Or)):
        for o in expr.operands:
            yield from _walk(o)


def _same(a: object, b: object) -> bool:
    """Equality that keeps 1 and True, '1' and 1 apart."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False
