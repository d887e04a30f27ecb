"""Vectorised evaluation of a condition: ``(value, known)`` masks over a frame's rows;
``known`` is False only for columns left out of a partial record (``allowed_levels``), where
Kleene's three-valued logic decides."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from pseudopost.models.rules.nodes import (
    And,
    Column,
    Compare,
    Expr,
    IsMissing,
    Member,
    Not,
    _same,
)
from pseudopost.models.status import column_kind, is_missing


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
