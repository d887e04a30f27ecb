r"""Step 7 of the structure stage: a many-level column's parent, chosen by the exponential mechanism.

A categorical column of more than :data:`PARENT_LEVELS` levels is drawn by the file model
without predictors and is no predictor (:mod:`pseudopost.models.file.choice`), so it keeps no
relation with the other columns, not even with its own recode. Unless declared otherwise, the
structure stage (:mod:`pseudopost.mechanisms.structure`) gives it a parent: one of the other
categorical columns of at most :data:`PARENT_LEVELS` public levels, or none, by the exponential
mechanism (``pseudopost.privacy.structure.dp_parent``: the conditional log-likelihood of the
column given the candidate, penalised by its cells; :data:`PARENT_EPSILON` each, pure DP for
add/remove one record). The column then becomes the parent's child in the file model's
``hierarchy`` (:mod:`pseudopost.models.file.nesting`), as a declared hierarchy would make it.
Which columns get a parent and which are candidates is decided from public facts only
(:func:`parent_candidates`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pseudopost.models.file.declarations import readers_and_pinned
from pseudopost.models.rules import Rule, StructuralZero
from pseudopost.models.status import cell_key
from pseudopost.privacy.structure import StructureCharge, dp_parent, parent_utility

__all__ = [
    "PARENT_EPSILON",
    "PARENT_LEVELS",
    "ParentStructure",
    "parent_candidates",
    "select_parent",
]

#: budget of each many-level column's parent selection (at most half the stage's budget in all)
PARENT_EPSILON = 0.05
#: a categorical column with more levels than this gets a parent (as the file model's
#: MANY_LEVELS); a candidate parent has at most this many
PARENT_LEVELS = 50


@dataclass(frozen=True)
class ParentStructure:
    """A many-level column's parent, chosen by the exponential mechanism among ``candidates``
    (module docstring); ``parent`` None: none chosen (or no candidate)."""

    column: str
    parent: str | None
    candidates: tuple[str, ...]
    charges: tuple[StructureCharge, ...] = ()

    @property
    def epsilon(self) -> float:
        return float(sum(c.epsilon for c in self.charges))

    def how(self) -> str:
        """How the choice was made: the mechanism, its epsilon and the candidates."""
        if not self.charges:
            return "no candidate"
        return (f"DP (exponential mechanism, epsilon {self.epsilon:.3g}) among "
                f"{', '.join(self.candidates)}")  # fmt: skip

    def describe(self) -> str:
        if self.parent is None:
            return f"no parent ({self.how()})"
        return f"nested in {self.parent!r} ({self.how()})"


def _group_codes(series: pd.Series, levels) -> tuple[np.ndarray, int] | None:
    """A column's level codes and its public number of levels (missing a level of its own), or
    None when its levels are not public: categorical dtype (its categories), booleans, a text
    column's released levels (a cell not released takes one level, as ``(other)``)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        k = len(series.cat.categories)
        codes = series.cat.codes.to_numpy(dtype=np.int64)
        return np.where(codes < 0, k, codes), k + 1
    if pd.api.types.is_bool_dtype(series.dtype) and not series.isna().any():
        return series.to_numpy(dtype=np.int64), 2
    if levels is not None:
        index = {cell_key(v): i for i, v in enumerate(levels.levels)}  # True is not "True"
        k = len(index)
        empty = series.isna().to_numpy()
        codes = np.array([index.get(cell_key(v), k) for v in series.astype(object)],
                         dtype=np.int64)  # fmt: skip
        return np.where(empty, k + 1, codes), k + 2
    return None


def select_parent(frame, column, candidates, levels, codes, epsilon, rng) -> ParentStructure:
    """The column's parent among the candidates whose levels are public and at most
    :data:`PARENT_LEVELS` (the exponential mechanism of ``pseudopost.privacy.structure.
    dp_parent`` at ``epsilon``; ``levels``: the stage's released text levels), or none."""
    child = _group_codes(frame[column], None)
    usable, groups = [], []
    for c in candidates:
        got = _group_codes(frame[c], levels.get(c))
        if got is not None and got[1] - 1 <= PARENT_LEVELS:
            usable.append(c)
            groups.append(got)
    if child is None or not usable:
        return ParentStructure(column, None, tuple(usable))
    u = parent_utility(child[0], [g for g, _ in groups], child[1], [k for _, k in groups])
    pick = dp_parent(u, epsilon, rng)
    charge = StructureCharge(f"{column}: parent", epsilon, 0.0,
                             "exponential mechanism (McSherry & Talwar 2007)")  # fmt: skip
    return ParentStructure(column, None if pick == 0 else usable[pick - 1], tuple(usable),
                           (charge,))  # fmt: skip


def parent_candidates(
    frame: pd.DataFrame,
    synthesized: Sequence[str],
    kept: Sequence[str] = (),
    *,
    declared: Sequence[str] = (),
    hierarchy: Mapping[str, str] | None = None,
    rules: Sequence = (),
    structural_zeros: Sequence = (),
    predictor_matrix: Mapping[str, Sequence[str]] | None = None,
    interactions: Sequence = (),
    order_declared: bool = False,
) -> dict[str, tuple[str, ...]]:
    """The many-level columns that get a parent by default and each one's candidates, from
    public facts only: a synthesized categorical column (its dtype's categories) with more than
    :data:`PARENT_LEVELS` levels, not in a declared ``hierarchy``, model (``declared``) or
    ``predictor_matrix`` row. Its candidates are the other synthesized and kept columns, not in
    the hierarchy as children; a later one only when the column, drawn right after it, still
    comes before every column whose rule or predictor row reads it, and none when it must keep
    its place (a declared ``order``; a structural zero or interaction naming it).
    """
    hier, pm, synthesized = dict(hierarchy or {}), dict(predictor_matrix or {}), list(synthesized)
    readers, pinned = readers_and_pinned(
        [Rule.from_spec(r) for r in rules], [StructuralZero.parse(z) for z in structural_zeros],
        pm, interactions,
    )  # fmt: skip
    children = [c for c in synthesized
                if isinstance(frame[c].dtype, pd.CategoricalDtype)
                and len(frame[c].cat.categories) > PARENT_LEVELS
                and c not in hier and c not in declared and c not in pm]  # fmt: skip
    at = {c: j for j, c in enumerate(synthesized)}
    out = {}
    for c in children:
        later = [] if order_declared or c in pinned else synthesized[at[c] + 1 :]
        # moved right after a later parent, the column must still precede its readers
        first = min((at[r] for r in readers.get(c, ()) if r in at), default=len(synthesized))
        pool = [*kept, *synthesized[: at[c]], *(x for x in later if at[x] < first)]
        out[c] = tuple(x for x in pool if x != c and x not in hier and x not in children)
    return out
