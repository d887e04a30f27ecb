"""Declared rules between columns and structural zeros, parsed as data.

A **rule** fixes one column's value, or its missingness, on the records a condition selects::

    wages is missing when employed == 'no'
    marital == 'single' when age < 16
    hours == 0 when status in ('retired', 'student') and not (age < 18)
    income == -8 when employed == 'no'          # a declared missing code

A **structural zero** is a declared impossible combination, e.g. ``marital == 'married' and
age < 16`` or the table ``{"marital": "married", "age_group": "0-15"}``.

Rules and zeros are public (DESIGN.md section 9): records a rule fixes carry no information
about that column (its likelihood term is 0 for them, exact for a deterministic rule) and the
rule is imposed when synthesizing; a structural zero gets no mass in the model and is never
generated. Both may come from someone else's spec file, so their text is parsed as data by a
small hand-written tokenizer and recursive-descent parser into a frozen AST; nothing is ever
handed to ``eval``, ``DataFrame.query`` or ``pandas.eval``. The grammar (precedence as in
Python: ``not`` binds tighter than ``and``, ``and`` than ``or``)::

    rule       := column ( "is" "missing" | "==" literal ) "when" condition
    condition  := and ( "or" and )*
    and        := not ( "and" not )*
    not        := "not" not | atom
    atom       := "(" condition ")"
                | operand op operand             (at least one a column; no chains)
                | column ["not"] "in" list
                | column "is" ["not"] "missing"
    op         := "==" | "!=" | "<" | "<=" | ">" | ">="
    list       := "(" literal ("," literal)* [","] ")" | "[" ... "]"
    literal    := 'string' | "string" | integer | float | true | false
    column     := identifier (Unicode, as Python's) | `any name in backticks`

Anything else (function calls, attributes, arithmetic, ``=``, chained comparisons, unknown
words) is a :class:`RuleSyntaxError` naming the text and the position of the offending token.

Evaluation is vectorised and two-valued: a comparison or membership test with a missing cell
(:func:`pseudopost.models.status.is_missing`: NaN, None, ``pd.NA``, ``""``) is False,
``is missing`` is True, and ``not`` negates what its operand gave, so
``not (age < 18)`` holds for a record whose age is missing while ``age >= 18`` does not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pseudopost.models.columns import ColumnInfo
from pseudopost.models.status import column_kind, is_missing

__all__ = [
    "MISSING",
    "And",
    "Column",
    "Compare",
    "IsMissing",
    "Literal",
    "Member",
    "Not",
    "Or",
    "Rule",
    "RuleSyntaxError",
    "StructuralZero",
    "allowed_levels",
    "impose",
    "parse_condition",
]

_KEYWORDS = frozenset({"and", "or", "not", "in", "is", "missing", "when", "true", "false"})
_BOOLS = {"true": True, "True": True, "false": False, "False": False}
_IDENT = re.compile(r"[^\W\d]\w*")  # Unicode identifiers, as Python's
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_OPS = ("==", "!=", "<=", ">=", "<", ">")
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_ORDERING = ("<", "<=", ">", ">=")
_MAX_DEPTH = 100  # nested 'not' and '(' levels; keeps recursion far from Python's limit


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


class RuleSyntaxError(ValueError):
    """A rule or condition that is not in the grammar; names the text and the position."""

    def __init__(self, text: str, pos: int, message: str):
        self.text, self.pos = text, pos
        caret = " " * pos + "^"
        super().__init__(
            f"Cannot parse rule {text!r}: {message} at position {pos}.\n    {text}\n    {caret}"
        )


# ---------------------------------------------------------------------------------------------
# The AST: frozen dataclasses; str() of any node is text that parses back to an equal node.


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


# ---------------------------------------------------------------------------------------------
# Tokenizer and parser


@dataclass(frozen=True)
class _Token:
    kind: str  # NAME, KEYWORD, STRING, NUMBER, BOOL, OP, PUNCT, END
    value: object
    pos: int


def _tokenize(text: str) -> list[_Token]:
    """The tokens of ``text``; a lexical error becomes a final ERROR token, raised by the
    parser only when it gets there, so the leftmost offending token is the one reported."""
    if not isinstance(text, str):
        raise TypeError(f"A rule or condition must be a string. Got {type(text).__name__}.")
    tokens: list[_Token] = []
    try:
        _lex(text, tokens)
    except RuleSyntaxError as err:
        tokens.append(_Token("ERROR", err, err.pos))
    return tokens


def _lex(text: str, tokens: list[_Token]) -> None:
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "()[],":
            tokens.append(_Token("PUNCT", ch, i))
            i += 1
        elif text.startswith(_OPS[:4], i):
            tokens.append(_Token("OP", text[i : i + 2], i))
            i += 2
        elif ch in "<>":
            tokens.append(_Token("OP", ch, i))
            i += 1
        elif ch == "=":
            raise RuleSyntaxError(text, i, "'=' is not an operator (use '==' to compare)")
        elif ch in "'\"":
            i = _read_string(text, i, tokens)
        elif ch == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise RuleSyntaxError(text, i, "unterminated `quoted` column name")
            if end == i + 1:
                raise RuleSyntaxError(text, i, "empty `` column name")
            tokens.append(_Token("NAME", text[i + 1 : end], i))
            i = end + 1
        elif ch.isdigit() or (ch in "-." and i + 1 < n and (text[i + 1].isdigit())):
            m = _NUMBER.match(text, i)
            if m is None:
                raise RuleSyntaxError(text, i, f"unexpected character {ch!r}")
            end = m.end()
            if end < n and (text[end].isalnum() or text[end] in "_."):
                raise RuleSyntaxError(text, end, f"malformed number {text[i : end + 1]!r}")
            s = m.group()
            value = int(s) if re.fullmatch(r"-?\d+", s) else float(s)
            if isinstance(value, float) and not math.isfinite(value):
                raise RuleSyntaxError(text, i, f"number {s!r} is not finite")
            tokens.append(_Token("NUMBER", value, i))
            i = end
        elif (m := _IDENT.match(text, i)) is not None:
            word = m.group()
            if word in _BOOLS:
                tokens.append(_Token("BOOL", _BOOLS[word], i))
            elif word in _KEYWORDS:
                tokens.append(_Token("KEYWORD", word, i))
            else:
                tokens.append(_Token("NAME", word, i))
            i = m.end()
        else:
            what = {
                ".": "attribute access is not allowed",
                "+": "arithmetic is not allowed",
                "-": "arithmetic is not allowed",
                "*": "arithmetic is not allowed",
                "/": "arithmetic is not allowed",
                "%": "arithmetic is not allowed",
                "!": "'!' is not an operator (use 'not' or '!=')",
                "&": "use 'and'",
                "|": "use 'or'",
                "~": "use 'not'",
            }.get(ch, "not part of the rule language")
            raise RuleSyntaxError(text, i, f"unexpected character {ch!r} ({what})")
    tokens.append(_Token("END", None, n))


def _read_string(text: str, i: int, tokens: list[_Token]) -> int:
    quote, j, out = text[i], i + 1, []
    while j < len(text):
        c = text[j]
        if c == "\\" and j + 1 < len(text):
            out.append(text[j + 1])
            j += 2
        elif c == quote:
            tokens.append(_Token("STRING", "".join(out), i))
            return j + 1
        else:
            out.append(c)
            j += 1
    raise RuleSyntaxError(text, i, "unterminated string")


def _describe(tok: _Token) -> str:
    if tok.kind == "END":
        return "end of text"
    if tok.kind == "STRING":
        return f"string {_literal_text(tok.value)}"
    if tok.kind == "NAME":
        return f"column {_name_text(tok.value)}"
    return repr(tok.value) if tok.kind != "BOOL" else _literal_text(tok.value)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> _Token:
        t = self.tokens[self.i]
        if t.kind == "ERROR":
            raise t.value
        return t

    def peek(self, k: int = 1) -> _Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        t = self.tok
        self.i += 1
        return t

    def error(self, message: str, tok: _Token | None = None) -> RuleSyntaxError:
        tok = self.tok if tok is None else tok
        return RuleSyntaxError(self.text, tok.pos, message)

    def is_(self, kind: str, value: object = None) -> bool:
        t = self.tok
        return t.kind == kind and (value is None or t.value == value)

    def expect_keyword(self, word: str, context: str) -> None:
        if not self.is_("KEYWORD", word):
            raise self.error(f"expected '{word}' {context}, found {_describe(self.tok)}")
        self.advance()

    # rule := column ("is" "missing" | "==" literal) "when" condition
    def rule(self) -> tuple[str, object, Expr]:
        if self.tok.kind != "NAME":
            raise self.error(f"a rule starts with the column it fixes, found {_describe(self.tok)}")
        target = self.advance().value
        if self.is_("PUNCT", "("):
            raise self.error("function calls are not allowed")
        if self.is_("KEYWORD", "is"):
            self.advance()
            if self.is_("KEYWORD", "not"):
                raise self.error(
                    "a rule fixes a value ('== literal') or missingness ('is missing'); "
                    "'is not missing' fixes neither"
                )
            self.expect_keyword("missing", "after 'is'")
            fixed = MISSING
        elif self.is_("OP", "=="):
            self.advance()
            fixed = self.literal("after '=='")
        else:
            raise self.error(
                f"expected '== literal' or 'is missing' after the column {_name_text(target)}, "
                f"found {_describe(self.tok)}"
            )
        self.expect_keyword("when", "after the fixed value")
        cond = self.condition()
        self.end()
        return target, fixed, cond

    def end(self) -> None:
        if self.tok.kind == "OP":
            raise self.error(f"chained comparisons are not allowed ({self.tok.value!r})")
        if self.tok.kind == "PUNCT" and self.tok.value == ")":
            raise self.error("unbalanced parentheses: ')' without '('")
        if self.tok.kind != "END":
            raise self.error(f"unexpected {_describe(self.tok)}")

    def condition(self) -> Expr:
        parts = [self.conjunction()]
        while self.is_("KEYWORD", "or"):
            self.advance()
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def conjunction(self) -> Expr:
        parts = [self.negation()]
        while self.is_("KEYWORD", "and"):
            self.advance()
            parts.append(self.negation())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def nest(self) -> None:
        """Count one more level of 'not' or '(' (deep nesting is refused, not a crash)."""
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.error(f"nesting deeper than {_MAX_DEPTH} levels")

    def negation(self) -> Expr:
        if self.is_("KEYWORD", "not"):
            self.nest()
            self.advance()
            inner = Not(self.negation())
            self.depth -= 1
            return inner
        return self.atom()

    def atom(self) -> Expr:
        t = self.tok
        if t.kind == "PUNCT" and t.value == "(":
            self.nest()
            self.advance()
            inner = self.condition()
            if not self.is_("PUNCT", ")"):
                if self.tok.kind == "END":
                    raise self.error("unbalanced parentheses: '(' is never closed", t)
                if self.tok.kind == "OP":
                    raise self.error(f"chained comparisons are not allowed ({self.tok.value!r})")
                raise self.error(f"expected ')', found {_describe(self.tok)}")
            self.advance()
            self.depth -= 1
            return inner
        if t.kind == "NAME":
            return self.column_test()
        if t.kind in ("STRING", "NUMBER", "BOOL"):
            lit = self.advance().value
            if self.tok.kind != "OP":
                raise self.error(
                    f"expected a comparison after the literal {_literal_text(lit)}, found "
                    f"{_describe(self.tok)}"
                )
            op = self.advance().value
            if self.tok.kind != "NAME":
                raise self.error(
                    f"a comparison needs a column on one side, found {_describe(self.tok)}"
                )
            col = self.advance().value
            if self.is_("PUNCT", "("):
                raise self.error("function calls are not allowed")
            return Compare(col, _FLIP[op], Literal(lit))
        if t.kind == "KEYWORD" and t.value == "missing":
            raise self.error("'missing' is tested with 'column is missing'")
        if t.kind == "PUNCT" and t.value == ")":
            raise self.error("unbalanced parentheses: ')' without '('")
        raise self.error(f"expected a column, 'not' or '(', found {_describe(t)}")

    def column_test(self) -> Expr:
        name = self.advance().value
        t = self.tok
        if t.kind == "PUNCT" and t.value == "(":
            raise self.error("function calls are not allowed")
        if t.kind == "OP":
            op = self.advance().value
            nxt = self.tok
            if nxt.kind == "NAME":
                self.advance()
                if self.is_("PUNCT", "("):
                    raise self.error("function calls are not allowed")
                return Compare(name, op, Column(nxt.value))
            if nxt.kind == "KEYWORD" and nxt.value == "missing":
                raise self.error("compare with missing by 'column is missing'")
            return Compare(name, op, Literal(self.literal(f"after {op!r}")))
        if t.kind == "KEYWORD" and t.value == "in":
            self.advance()
            return Member(name, self.literal_list(), False)
        if (
            t.kind == "KEYWORD"
            and t.value == "not"
            and self.peek().kind == "KEYWORD"
            and (self.peek().value == "in")
        ):
            self.advance()
            self.advance()
            return Member(name, self.literal_list(), True)
        if t.kind == "KEYWORD" and t.value == "is":
            self.advance()
            negated = False
            if self.is_("KEYWORD", "not"):
                self.advance()
                negated = True
            self.expect_keyword("missing", "after 'is'" + (" not" if negated else ""))
            return IsMissing(name, negated)
        raise self.error(
            f"expected a comparison (== != < <= > >=), 'in', 'not in' or 'is [not] missing' "
            f"after the column {_name_text(name)}, found {_describe(t)}"
        )

    def literal(self, context: str) -> object:
        t = self.tok
        if t.kind in ("STRING", "NUMBER", "BOOL"):
            self.advance()
            return t.value
        if t.kind == "NAME" and self.peek().kind == "PUNCT" and self.peek().value == "(":
            raise self.error("function calls are not allowed")
        raise self.error(
            f"expected a literal (string, number, true/false) {context}, found {_describe(t)}"
        )

    def literal_list(self) -> tuple:
        t = self.tok
        if not (t.kind == "PUNCT" and t.value in "(["):
            raise self.error(f"expected a list '(...)' or '[...]' after 'in', found {_describe(t)}")
        close = ")" if t.value == "(" else "]"
        self.advance()
        values = []
        while True:
            if self.is_("PUNCT", close) and values:
                break
            values.append(self.literal("in the list"))
            if self.is_("PUNCT", ","):
                self.advance()
                continue
            if not self.is_("PUNCT", close):
                if self.tok.kind == "END":
                    raise self.error(f"unbalanced brackets: {t.value!r} is never closed", t)
                raise self.error(
                    f"expected ',' or {close!r} in the list, found {_describe(self.tok)}"
                )
        self.advance()
        return tuple(values)


def parse_condition(text: str) -> Expr:
    """The AST of a condition (the part of a rule after ``when``)."""
    p = _Parser(text)
    expr = p.condition()
    p.end()
    return expr


# ---------------------------------------------------------------------------------------------
# Column schema and type checks


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


def _walk(expr: Expr) -> Iterable[Expr]:
    yield expr
    if isinstance(expr, Not):
        yield from _walk(expr.operand)
    elif isinstance(expr, (And, Or)):
        for o in expr.operands:
            yield from _walk(o)


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
                f"one of its levels {list(spec.levels)}."
            )


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


# ---------------------------------------------------------------------------------------------
# Vectorised evaluation: (value, known) masks; `known` is False only for columns left out of a
# partial record (allowed_levels), where Kleene's three-valued logic decides.


class _Frame:
    """A frame's columns as arrays for evaluation; columns not in the frame are unknown."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame
        self.n = len(frame)
        self._cache: dict[str, tuple] = {}

    def forget(self, name: str) -> None:
        """Drop a column's cached arrays after it changed."""
        self._cache.pop(name, None)

    def has(self, name: str) -> bool:
        return name in self.frame.columns

    def column(self, name: str) -> tuple[str, np.ndarray, np.ndarray, pd.Series]:
        if name not in self._cache:
            s = self.frame[name]
            kind = column_kind(s)
            miss = is_missing(s)
            if kind in ("integer", "float"):
                vals = s.to_numpy(dtype=np.float64, na_value=np.nan)
            elif kind == "category":
                vals = s.cat.codes.to_numpy()
            else:
                vals = s.to_numpy(dtype=object)
            self._cache[name] = (kind, vals, miss, s)
        return self._cache[name]


_CMP = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def _literal_array(kind: str, s: pd.Series, value: object) -> object:
    if kind == "category":
        cats = s.cat.categories
        hits = [i for i, c in enumerate(cats) if _same(value, c)]
        return hits[0] if hits else -2  # -2: no category, never equal
    return value


def _compare(node: Compare, fr: _Frame) -> tuple[np.ndarray, np.ndarray]:
    n = fr.n
    if not fr.has(node.column) or (isinstance(node.other, Column) and not fr.has(node.other.name)):
        return np.zeros(n, bool), np.zeros(n, bool)
    kind, vals, miss, s = fr.column(node.column)
    if isinstance(node.other, Column):
        _, ovals, omiss, os_ = fr.column(node.other.name)
        if kind == "category":  # same levels, checked; compare by position
            ovals = pd.Categorical(os_, categories=s.cat.categories).codes
        rhs, present = ovals, ~(miss | omiss)
    else:
        rhs, present = _literal_array(kind, s, node.other.value), ~miss
    out = np.zeros(n, bool)
    if present.any():
        a = vals[present]
        b = rhs[present] if isinstance(rhs, np.ndarray) else rhs
        if kind in ("string", "object", "bool") and node.op in ("==", "!="):
            if kind == "string" and (isinstance(b, str) or isinstance(b, np.ndarray)):
                eq = np.asarray(a == b, dtype=bool)  # present cells of both are all str
            else:
                eq = np.fromiter((_same(x, y) for x, y in _pairs(a, b)), bool, len(a))
            out[present] = eq if node.op == "==" else ~eq
        else:
            out[present] = _CMP[node.op](a, b)
    return out, np.ones(n, bool)


def _pairs(a: np.ndarray, b: object) -> Iterable[tuple]:
    if isinstance(b, np.ndarray):
        return zip(a, b, strict=True)
    return ((x, b) for x in a)


def _member(node: Member, fr: _Frame) -> tuple[np.ndarray, np.ndarray]:
    n = fr.n
    if not fr.has(node.column):
        return np.zeros(n, bool), np.zeros(n, bool)
    kind, vals, miss, s = fr.column(node.column)
    present = ~miss
    hit = np.zeros(n, bool)
    if kind in ("integer", "float"):
        nums = [float(v) for v in node.values if not isinstance(v, (bool, str))]
        hit = np.isin(vals, nums) if nums else hit
    elif kind == "category":
        codes = [_literal_array(kind, s, v) for v in node.values]
        hit = np.isin(vals, codes)
    else:
        strings = {v for v in node.values if isinstance(v, str)}
        if kind == "string":  # str cells against str values: a hash lookup
            hit = np.fromiter(
                (p and x in strings for x, p in zip(vals, present, strict=True)), bool, n
            )
        else:
            hit = np.fromiter((any(_same(x, v) for v in node.values) for x in vals), bool, n)
    out = present & (~hit if node.negated else hit)
    return out, np.ones(n, bool)


def _evaluate(expr: Expr, fr: _Frame) -> tuple[np.ndarray, np.ndarray]:
    """(value, known) of ``expr`` on every row."""
    if isinstance(expr, Compare):
        return _compare(expr, fr)
    if isinstance(expr, Member):
        return _member(expr, fr)
    if isinstance(expr, IsMissing):
        if not fr.has(expr.column):
            return np.zeros(fr.n, bool), np.zeros(fr.n, bool)
        miss = fr.column(expr.column)[2]
        return (~miss if expr.negated else miss.copy()), np.ones(fr.n, bool)
    if isinstance(expr, Not):
        v, k = _evaluate(expr.operand, fr)
        return ~v & k, k
    parts = [_evaluate(o, fr) for o in expr.operands]
    if isinstance(expr, And):
        false = np.logical_or.reduce([~v & k for v, k in parts])
        true = np.logical_and.reduce([v & k for v, k in parts])
        return true, true | false
    true = np.logical_or.reduce([v & k for v, k in parts])
    false = np.logical_and.reduce([~v & k for v, k in parts])
    return true, true | false


def _show(v: object) -> str:
    """A cell or index label as a reader writes it (``3.0``, not ``np.float64(3.0)``)."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def _is_na(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _check_frame(frame: object, what: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{what} needs a pandas DataFrame. Got {type(frame).__name__}.")
    return frame


# ---------------------------------------------------------------------------------------------
# Rules


@dataclass(frozen=True)
class Rule:
    """``column <assignment> when <condition>``: a declared rule that fixes one column.

    Attributes
    ----------
    column : str
        The column the rule fixes.
    value : object
        The literal it fixes the column to, or :data:`MISSING` (``is missing``). A declared
        missing code is fixed as a literal (``income == -8 when ...``).
    condition : Expr
        Which records the rule applies to.
    text : str
        The rule as written (for messages); not part of equality.

    Notes
    -----
    ``str(rule)`` is the canonical text; ``Rule.parse(str(rule)) == rule``. For a whole-file
    synthesizer (DESIGN.md section 9) a rule is public: the records it applies to contribute
    :math:`f_k = 0` to column :math:`k`'s likelihood and :func:`impose` sets their value at
    generation.
    """

    column: str
    value: object
    condition: Expr
    text: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        _check_name(self.column)
        if self.value is not MISSING:
            object.__setattr__(self, "value", _check_literal(self.value))
        if not isinstance(self.condition, (Compare, Member, IsMissing, Not, And, Or)):
            raise TypeError(
                f"A rule's condition must be an expression node. Got {self.condition!r}."
            )
        if not self.text:
            object.__setattr__(self, "text", str(self))

    def __str__(self) -> str:
        fix = "is missing" if self.value is MISSING else f"== {_literal_text(self.value)}"
        return f"{_name_text(self.column)} {fix} when {self.condition}"

    @classmethod
    def parse(cls, text: str) -> Rule:
        """Parse ``"<column> (== literal | is missing) when <condition>"``.

        Raises
        ------
        RuleSyntaxError
            (a ``ValueError``) naming the text and the position of the offending token.
        """
        column, value, cond = _Parser(text).rule()
        return cls(column, value, cond, text)

    @classmethod
    def from_spec(cls, spec: str | Mapping | Rule) -> Rule:
        """A rule from a spec file: its text, or a table
        ``{column = "wages", value = "missing", when = "employed == 'no'"}``.

        In the table, ``value`` is a TOML string, number or boolean, the string ``"missing"``
        meaning missingness (``missing = true`` says the same); to fix the *string*
        ``"missing"`` write the rule as text (``col == 'missing' when ...``).
        """
        if isinstance(spec, Rule):
            return spec
        if isinstance(spec, str):
            return cls.parse(spec)
        if not isinstance(spec, Mapping):
            raise TypeError(f"A rule is a string or a table. Got {type(spec).__name__}: {spec!r}.")
        allowed = {"column", "value", "missing", "when"}
        extra = sorted(set(spec) - allowed)
        if extra:
            raise ValueError(
                f"Rule table {dict(spec)!r} has unknown keys {extra}; expected {sorted(allowed)}."
            )
        for key in ("column", "when"):
            if key not in spec:
                raise ValueError(f"Rule table {dict(spec)!r} has no {key!r}.")
        column, when = spec["column"], spec["when"]
        if not isinstance(column, str) or not column:
            raise TypeError(f"Rule table {dict(spec)!r}: 'column' must be a non-empty string.")
        if not isinstance(when, str):
            raise TypeError(f"Rule table {dict(spec)!r}: 'when' must be a condition string.")
        has_value, has_missing = "value" in spec, "missing" in spec
        if has_value == has_missing:
            raise ValueError(
                f"Rule table {dict(spec)!r} needs exactly one of 'value' or 'missing = true'."
            )
        if has_missing:
            if spec["missing"] is not True:
                raise ValueError(f"Rule table {dict(spec)!r}: 'missing' can only be true.")
            value = MISSING
        else:
            value = spec["value"]
            value = MISSING if value == "missing" and isinstance(value, str) else value
            try:
                value = value if value is MISSING else _check_literal(value)
            except (TypeError, ValueError) as err:
                raise type(err)(f"Rule table {dict(spec)!r}: {err}") from None
        text = (
            f"{_name_text(column)} "
            + ("is missing" if value is MISSING else f"== {_literal_text(value)}")
            + f" when {when}"
        )
        try:
            cond = parse_condition(when)
        except RuleSyntaxError as err:
            raise RuleSyntaxError(
                when, err.pos, f"in the 'when' of rule table {dict(spec)!r}: {_reason(err)}"
            ) from None
        return cls(column, value, cond, text)

    @property
    def fixed_value(self) -> object:
        """The value the rule fixes, or :data:`MISSING`."""
        return self.value

    @property
    def fixes_missing(self) -> bool:
        return self.value is MISSING

    @property
    def condition_columns(self) -> tuple[str, ...]:
        """Columns the condition reads, in order of first mention."""
        return tuple(dict.fromkeys(_columns_of(self.condition)))

    def _what(self) -> str:
        return f"Rule {self.text!r}"

    def check_columns(
        self, frame_or_schema: pd.DataFrame | Mapping, *, levels: bool = True
    ) -> None:
        """Raise ``ValueError`` if the rule does not fit the columns.

        Parameters
        ----------
        frame_or_schema : DataFrame or mapping
            The data, or a schema ``{column: dtype | ColumnInfo | [levels]}`` (a list of
            levels is a categorical column).
        levels : bool
            Check literals of string/object columns against the levels the frame holds (a
            categorical column's categories are always checked). ``applies``, ``check_data``
            and ``impose`` check types only, since a synthetic frame need not hold every level.

        Raises
        ------
        ValueError
            An unknown column or level (naming the rule and the name), a literal not of its
            column's type, an ordering on an unordered column, or a fixed value that cannot
            be held (a non-integer in an integer column).
        """
        schema = _schema(frame_or_schema, observed_levels=levels)
        what = self._what()
        if self.column not in schema:
            raise ValueError(
                f"{what} fixes the column {self.column!r}, which is not in the data "
                f"(columns: {sorted(schema)})."
            )
        _check_expr(self.condition, schema, what)
        if self.value is not MISSING:
            spec = schema[self.column]
            _check_value(spec, self.column, self.value, what)
            if spec.kind == "integer" and not float(self.value).is_integer():
                raise ValueError(
                    f"{what} fixes the integer column {self.column!r} to "
                    f"{self.value!r}, which is not an integer."
                )

    def applies(self, frame: pd.DataFrame) -> np.ndarray:
        """Boolean mask of the records the rule applies to (its condition holds).

        Vectorised; a comparison with a missing cell is False, ``is missing`` True.
        """
        frame = _check_frame(frame, self._what())
        self.check_columns(frame, levels=False)
        return _evaluate(self.condition, _Frame(frame))[0]

    def holds(self, frame: pd.DataFrame) -> np.ndarray:
        """Boolean mask of records whose fixed column already has the rule's value."""
        frame = _check_frame(frame, self._what())
        self.check_columns(frame, levels=False)
        return _holds(self, _Frame(frame))

    def violations(self, frame: pd.DataFrame) -> np.ndarray:
        """Boolean mask of records the rule applies to that break it."""
        frame = _check_frame(frame, self._what())
        self.check_columns(frame, levels=False)
        fr = _Frame(frame)
        return _evaluate(self.condition, fr)[0] & ~_holds(self, fr)

    def check_data(self, frame: pd.DataFrame) -> None:
        """Raise ``ValueError`` naming the rule and the first offending row if the data break it."""
        bad = self.violations(frame)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            cell = frame[self.column].iloc[i]
            fix = "missing" if self.value is MISSING else _literal_text(self.value)
            raise ValueError(
                f"{self._what()} is contradicted by the data: row {_show(frame.index[i])} has "
                f"{self.column} = {_show(cell)} where the rule fixes it to {fix} "
                f"({int(bad.sum())} such rows)."
            )


def _reason(err: RuleSyntaxError) -> str:
    return str(err).split(": ", 1)[1].rsplit(" at position", 1)[0]


def _holds(rule: Rule, fr: _Frame) -> np.ndarray:
    kind, vals, miss, s = fr.column(rule.column)
    if rule.value is MISSING:
        return miss.copy()
    if kind in ("integer", "float"):
        return ~miss & (vals == float(rule.value))
    if kind == "category":
        return ~miss & (vals == _literal_array(kind, s, rule.value))
    out = np.zeros(fr.n, dtype=bool)
    if kind == "string" and isinstance(rule.value, str):
        out[~miss] = vals[~miss] == rule.value
        return out
    return ~miss & np.fromiter((_same(x, rule.value) for x in vals), bool, fr.n)


def _assign(s: pd.Series, mask: np.ndarray, value: object) -> pd.Series:
    """``s`` with ``value`` (or an empty cell) where ``mask``; a NumPy int/bool column that
    receives empty cells becomes pandas' nullable Int/boolean."""
    dtype = s.dtype
    if value is MISSING:
        if isinstance(dtype, np.dtype) and dtype.kind in "iub":
            kind = (
                "boolean"
                if dtype.kind == "b"
                else (("UInt" if dtype.kind == "u" else "Int") + str(dtype.itemsize * 8))
            )
            s = s.astype(kind)
        return s.mask(mask)
    kind = column_kind(s)
    if kind == "integer":
        value = int(value)
    elif kind == "category":
        value = next(c for c in s.cat.categories if _same(value, c))
    if isinstance(dtype, np.dtype) and dtype.kind != "O":
        arr = s.to_numpy(copy=True)
        arr[mask] = value
        return pd.Series(arr, index=s.index, name=s.name)
    return s.mask(mask, value)


def _as_rules(rules: object) -> list[Rule]:
    if isinstance(rules, (Rule, str, Mapping)):
        rules = [rules]
    if not isinstance(rules, Iterable):
        raise TypeError(f"'rules' must be a list of rules. Got {type(rules).__name__}.")
    return [Rule.from_spec(r) for r in rules]


def impose(frame: pd.DataFrame, rules: Iterable[Rule | str | Mapping]) -> pd.DataFrame:
    """A new frame in which every rule holds (the input is not modified).

    Each pass sets, rule by rule, the fixed column of every record a rule applies to; passes
    repeat until nothing changes, so a rule whose condition reads a column another rule fixes
    is honoured whatever the order. A NumPy integer or bool column that a rule makes missing
    becomes pandas' nullable ``Int``/``boolean``.

    Raises
    ------
    ValueError
        A rule that does not fit the frame (:meth:`Rule.check_columns`), or rules that
        contradict one another (after ``len(rules) + 1`` passes some rule still fails: named
        with its first offending row).
    """
    frame = _check_frame(frame, "impose")
    rules = _as_rules(rules)
    for r in rules:
        r.check_columns(frame, levels=False)
    out = frame.copy()
    fr = _Frame(out)
    for _ in range(len(rules) + 1):
        changed = False
        for r in rules:
            todo = _evaluate(r.condition, fr)[0] & ~_holds(r, fr)
            if todo.any():
                out[r.column] = _assign(out[r.column], todo, r.value)
                fr.forget(r.column)
                changed = True
        if not changed:
            return out
    for r in rules:
        bad = r.violations(out)
        if bad.any():
            raise ValueError(
                f"The rules contradict one another: after {len(rules) + 1} passes "
                f"{r._what()} still fails on row {_show(out.index[int(np.flatnonzero(bad)[0])])}."
            )
    return out  # pragma: no cover  (changed on the last pass yet every rule holds)


# ---------------------------------------------------------------------------------------------
# Structural zeros


def _cells_condition(cells: Mapping) -> Expr:
    if not cells:
        raise ValueError("A structural zero needs at least one column.")
    parts: list[Expr] = []
    for col, v in cells.items():
        if not isinstance(col, str):
            raise TypeError(
                f"Structural zero {dict(cells)!r}: column names are strings; got {col!r}."
            )
        if isinstance(v, (list, tuple)):
            parts.append(Member(col, tuple(v)))
        else:
            parts.append(Compare(col, "==", Literal(v)))
    return parts[0] if len(parts) == 1 else And(tuple(parts))


@dataclass(frozen=True)
class StructuralZero:
    """A declared impossible combination: records meeting ``condition`` cannot exist.

    The model must put no mass on these cells and generation must never produce them: when a
    sequential synthesizer draws column :math:`k` given the earlier columns it multiplies the
    level probabilities by :func:`allowed_levels` and renormalises,
    :math:`p'_\\ell = p_\\ell m_\\ell / \\sum_j p_j m_j`, and its likelihood uses the same
    renormalised (truncated) probabilities so fitting and drawing agree. Real records never fall
    in a zero (:meth:`check_data`), so no observed record is lost. Zeros are public
    declarations and sit outside the accountant (DESIGN.md section 9).
    """

    condition: Expr
    text: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.condition, (Compare, Member, IsMissing, Not, And, Or)):
            raise TypeError(
                f"A structural zero's condition must be an expression node. Got {self.condition!r}."
            )
        if not self.text:
            object.__setattr__(self, "text", str(self.condition))

    def __str__(self) -> str:
        return str(self.condition)

    @classmethod
    def parse(cls, spec: str | Mapping | StructuralZero) -> StructuralZero:
        """From a condition (``"marital == 'married' and age < 16"``) or a table of cells
        (``{"marital": "married", "age_group": "0-15"}``; a list value means any of them)."""
        if isinstance(spec, StructuralZero):
            return spec
        if isinstance(spec, str):
            return cls(parse_condition(spec), spec)
        if isinstance(spec, Mapping):
            cond = _cells_condition(spec)
            return cls(cond, str(cond))
        raise TypeError(
            f"A structural zero is a condition string or a table of cells. Got "
            f"{type(spec).__name__}: {spec!r}."
        )

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(_columns_of(self.condition)))

    def _what(self) -> str:
        return f"Structural zero {self.text!r}"

    def check_columns(
        self, frame_or_schema: pd.DataFrame | Mapping, *, levels: bool = True
    ) -> None:
        """As :meth:`Rule.check_columns`: unknown column or level, or a literal of the wrong type."""
        _check_expr(self.condition, _schema(frame_or_schema, levels), self._what())

    def violations(self, frame: pd.DataFrame) -> np.ndarray:
        """Boolean mask of records that fall in the impossible cell."""
        frame = _check_frame(frame, self._what())
        self.check_columns(frame, levels=False)
        return _evaluate(self.condition, _Frame(frame))[0]

    def check_data(self, frame: pd.DataFrame) -> None:
        """Raise ``ValueError`` naming the zero and the first row that falls in it."""
        bad = self.violations(frame)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            cells = ", ".join(f"{c} = {_show(frame[c].iloc[i])}" for c in self.columns)
            raise ValueError(
                f"{self._what()} is declared impossible, but the data contain it: row "
                f"{_show(frame.index[i])} has {cells} ({int(bad.sum())} such rows)."
            )


def allowed_levels(
    zero: StructuralZero | str | Mapping | list | tuple,
    partial_record: Mapping | pd.DataFrame,
    column: str,
    levels: Sequence | pd.CategoricalDtype,
) -> np.ndarray:
    """Which levels of ``column`` a record may take given its earlier columns.

    Parameters
    ----------
    zero : StructuralZero, str or mapping, or a list of them
        The impossible combination(s); with several, a level must escape all of them.
    partial_record : mapping or DataFrame
        The columns drawn so far: one record as ``{column: value}``, or ``n`` records as a
        DataFrame. Columns absent are not yet drawn.
    column : str
        The column being drawn.
    levels : sequence or pandas.CategoricalDtype
        Its levels (a missing level is ``None``/NaN); a ``CategoricalDtype`` also gives the
        order an ordered column is compared in (a mapping record holds plain values, so an
        ordered comparison on an earlier column needs the records as a DataFrame).

    Returns
    -------
    numpy.ndarray of bool
        Shape ``(len(levels),)`` for one record, ``(n, len(levels))`` for a frame: False where
        taking that level puts the record in the zero.

    Notes
    -----
    A level is forbidden when the zero's condition is *certainly* true with ``column`` at that
    level: columns not yet drawn are unknown and combine by Kleene's three-valued logic (false
    ``and`` unknown is false, true ``or`` unknown is true). When ``column`` is the last of the
    zero's columns in the visit sequence every cell is decided, so the mask is exact; the model
    must then give those levels no mass (multiply and renormalise, in the likelihood too).
    A row with no allowed level means an earlier draw entered a cell that only the later
    column could complete: the synthesizer must treat it as an error (or declare the zero on
    the earlier columns' levels).
    """
    if isinstance(zero, (list, tuple)):
        if not zero:
            raise ValueError("allowed_levels needs at least one structural zero.")
        masks = [allowed_levels(z, partial_record, column, levels) for z in zero]
        return np.logical_and.reduce(masks)
    zero = StructuralZero.parse(zero)
    _check_name(column)
    dtype = levels if isinstance(levels, pd.CategoricalDtype) else None
    levels = list(dtype.categories) if dtype is not None else list(levels)
    if not levels:
        raise ValueError(f"allowed_levels needs the levels of column {column!r}; got none.")
    single = not isinstance(partial_record, pd.DataFrame)
    if single:
        if not isinstance(partial_record, Mapping):
            raise TypeError(
                f"'partial_record' must be a mapping or a DataFrame. Got "
                f"{type(partial_record).__name__}."
            )
        part = pd.DataFrame(
            {
                k: pd.Series([v], dtype=object if isinstance(v, str) or v is None else None)
                for k, v in partial_record.items()
            }
        )
    else:
        part = partial_record
    n, k = len(part), len(levels)
    rep = part.iloc[np.repeat(np.arange(n), k)].reset_index(drop=True)
    rep = rep.drop(columns=[column], errors="ignore")
    drawn = np.empty(n * k, dtype=object)
    drawn[:] = levels * n
    if dtype is not None:
        rep[column] = pd.Categorical(drawn, dtype=dtype)
    elif all(isinstance(v, str) or _is_na(v) for v in levels):
        rep[column] = pd.Series(drawn, dtype=object)
    else:
        rep[column] = pd.Series(drawn.tolist())
    # columns wholly empty in the partial record are not type-checked: their tests are False
    known = [c for c in zero.columns if c in rep.columns and not is_missing(rep[c]).all()]
    schema = _schema(rep[known], observed_levels=False)
    for name, value in _literals_of(zero.condition):
        if name in schema:
            _check_value(schema[name], name, value, zero._what())
    for node in _walk(zero.condition):
        if (
            isinstance(node, Compare)
            and node.column in schema
            and (not isinstance(node.other, Column) or node.other.name in schema)
        ):
            _check_compare(node, schema, zero._what())
    value, certain = _evaluate(zero.condition, _Frame(rep))
    forbidden = (value & certain).reshape(n, k)
    allowed = ~forbidden
    return allowed[0] if single else allowed
