"""The :class:`Rule`: one column fixed on the records a condition selects, checked against
the data, and :func:`impose`, which makes every rule hold in a frame."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pseudopost.models.rules.evaluation import (
    _check_frame,
    _evaluate,
    _Frame,
    _literal_array,
    _show,
)
from pseudopost.models.rules.nodes import (
    MISSING,
    And,
    Compare,
    Expr,
    IsMissing,
    Member,
    Not,
    Or,
    _check_literal,
    _check_name,
    _columns_of,
    _literal_text,
    _name_text,
    _same,
)
from pseudopost.models.rules.parser import RuleSyntaxError, _Parser, parse_condition
from pseudopost.models.rules.schema import _check_expr, _check_value, _schema
from pseudopost.models.status import column_kind


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
    synthesizer (guide: *Whole files*) a rule is public: the records it applies to contribute
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
