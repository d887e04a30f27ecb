r"""Rules and structural zeros in a whole file: which records a rule fixes, which levels a zero
forbids, and the checks that tie them to the visit order.

A **rule** fixes column k on the records its condition selects. Its condition must read only
columns that exist before k is drawn (kept columns and columns earlier in the visit order), so
that synthesis can impose it right after drawing k. Records it fixes carry no information about
k: they are inactive in k's parts (:math:`f_k = 0`, exact for a deterministic rule), and at
generation k's drawn value is replaced by the rule's on those records.

A **structural zero** forbids a combination of columns. The column drawn last among them (its
*target*) must be modelled as one categorical part: its mask of allowed levels given the
earlier columns (:func:`~pseudopost.models.rules.allowed_levels`) enters the masked categorical
part (:mod:`pseudopost.models.parts.masked_categorical`), in the likelihood and in generation,
so no synthetic record falls in a zero. Masks are computed once per distinct combination of the
zero's earlier columns.

Both are checked against the data before any fitting (unknown column or level, a rule the data
contradict, a zero the data contain, a rule reading a column drawn after the one it fixes),
each error naming the rule or zero and the columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pseudopost.models.rules import Rule, StructuralZero, allowed_levels, impose

__all__ = ["check_rules", "check_zeros", "fixed_records", "impose_rules", "zero_mask"]


def _when(col: str, visit: Mapping[str, int]) -> str:
    v = visit.get(col)
    return "kept as given" if v is not None and v < 0 else f"number {v + 1} in the visit order"


def check_rules(
    rules: Sequence[Rule], frame: pd.DataFrame, visit: Mapping[str, int], dropped: Sequence[str]
) -> dict[str, tuple[Rule, ...]]:
    """Rules by the column they fix, each checked (module docstring).

    ``visit`` maps every column used to its position in the visit order, kept columns to -1.
    """
    out: dict[str, list[Rule]] = {}
    for r in rules:
        r.check_columns(frame, levels=True)
        named = [r.column, *r.condition_columns]
        gone = [c for c in named if c in dropped]
        if gone:
            raise ValueError(
                f"Rule {r.text!r} names the column(s) {gone}, which 'drop' leaves out of the "
                f"synthetic file."
            )
        k = visit[r.column]
        late = [c for c in r.condition_columns if c == r.column or visit[c] >= max(k, 0)]
        if k < 0 and late:
            raise ValueError(
                f"Rule {r.text!r} fixes the kept column {r.column!r} by a condition on the "
                f"synthesized column(s) {late}; a kept column is released as given, so its rules "
                f"may only read kept columns."
            )
        if late:
            raise ValueError(
                f"Rule {r.text!r} fixes column {r.column!r} ({_when(r.column, visit)}) by a "
                f"condition on {late} ({', '.join(_when(c, visit) for c in late)}); a rule may "
                f"only read kept columns and columns drawn before the one it fixes: change "
                f"'order' so that {late} come before {r.column!r}."
            )
        r.check_data(frame)
        if k >= 0:
            out.setdefault(r.column, []).append(r)
    return {c: tuple(v) for c, v in out.items()}


def fixed_records(rules: Sequence[Rule], frame: pd.DataFrame) -> np.ndarray:
    """Records any of ``rules`` applies to (their column is fixed there)."""
    mask = np.zeros(len(frame), dtype=bool)
    for r in rules:
        mask |= r.applies(frame)
    return mask


def impose_rules(series: pd.Series, frame: pd.DataFrame, rules: Sequence[Rule]) -> pd.Series:
    """``series`` (the column the rules fix) with each rule's value where its condition holds
    on ``frame`` (the columns drawn before it); dtypes as :func:`~pseudopost.models.rules.impose`
    gives them (a NumPy integer column made missing becomes nullable)."""
    cols = list(dict.fromkeys(c for r in rules for c in r.condition_columns))
    sub = frame[cols].copy() if cols else pd.DataFrame(index=frame.index)
    sub[series.name] = series
    return impose(sub, rules)[series.name]


def check_zeros(
    zeros: Sequence[StructuralZero],
    frame: pd.DataFrame,
    visit: Mapping[str, int],
    dropped: Sequence[str],
    one_part: Mapping[str, bool],
) -> dict[str, tuple[StructuralZero, ...]]:
    """Zeros by their target column (the last synthesized column among theirs), each checked.

    ``one_part[c]`` says whether synthesized column c is modelled as one categorical part.
    Zeros among kept columns only are checked against the data and need nothing else.
    """
    out: dict[str, list[StructuralZero]] = {}
    for z in zeros:
        z.check_columns(frame, levels=True)
        gone = [c for c in z.columns if c in dropped]
        if gone:
            raise ValueError(
                f"Structural zero {z.text!r} names the column(s) {gone}, which 'drop' leaves "
                f"out of the synthetic file."
            )
        z.check_data(frame)
        drawn = [c for c in z.columns if visit[c] >= 0]
        if not drawn:
            continue
        target = max(drawn, key=lambda c: visit[c])
        if not one_part[target]:
            raise ValueError(
                f"Structural zero {z.text!r}: its column drawn last, {target!r}, must be "
                f"modelled as categorical (one part over its levels) so that the zero's levels "
                f"get no mass; declare models={{{target!r}: 'categorical'}} or change 'order' "
                f"so that a categorical column of the zero comes last."
            )
        out.setdefault(target, []).append(z)
    return {c: tuple(v) for c, v in out.items()}


def zero_mask(
    zeros: Sequence[StructuralZero], frame: pd.DataFrame, target: str, cells: Sequence
) -> np.ndarray:
    """(n, K) allowed levels of ``target`` (level cell values ``cells``, None for a missing
    cell) given ``frame``'s earlier columns, once per distinct combination of them."""
    others = sorted({c for z in zeros for c in z.columns if c != target})
    n = len(frame)
    if not others:
        rep = pd.DataFrame(index=pd.RangeIndex(1))
        return np.repeat(allowed_levels(list(zeros), rep, target, list(cells)), n, axis=0)
    sub = frame[others]
    key = sub.groupby(others, dropna=False, sort=False, observed=True).ngroup().to_numpy()
    first = np.full(key.max() + 1 if n else 0, -1, dtype=np.int64)
    first[key[::-1]] = np.arange(n)[::-1]
    rep = sub.iloc[first].reset_index(drop=True)
    masks = allowed_levels(list(zeros), rep, target, list(cells))
    return masks[key]
