"""Structural zeros: declared impossible combinations, and :func:`allowed_levels`, the levels
a record may take given its earlier columns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pseudopost.models.rules.evaluation import _check_frame, _evaluate, _Frame, _is_na, _show
from pseudopost.models.rules.nodes import (
    And,
    Column,
    Compare,
    Expr,
    IsMissing,
    Literal,
    Member,
    Not,
    Or,
    _check_name,
    _columns_of,
    _literals_of,
    _walk,
)
from pseudopost.models.rules.parser import parse_condition
from pseudopost.models.rules.schema import _check_compare, _check_expr, _check_value, _schema
from pseudopost.models.status import is_missing


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
    declarations and sit outside the accountant (guide: *Whole files*).
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
