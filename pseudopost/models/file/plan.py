r"""A whole file's plan: every column encoded, its model chosen, its design and its parts.

:func:`make_plan` reads a frame under its :class:`~pseudopost.models.file.declarations.
Declarations` and checks everything before any fitting: columns named by the declarations exist;
codes and spikes fit their columns' types (:func:`~pseudopost.models.status.split_status`);
spikes lie in the support of the column's model; rules and structural zeros name known columns
and levels, the data honour them and rules read only earlier columns
(:mod:`pseudopost.models.file.constraints`); value parts' outcomes are in their families'
support.

Parts of a synthesized column k (the record's log-likelihood is the sum of its parts' terms,
each zero where the part is not active; guide: *Whole files*):

* categorical: one part over the levels its active records hold (``dirichlet_categorical``
  without predictors, ``bernoulli`` with two levels, ``categorical`` otherwise;
  ``masked_categorical`` when a structural zero targets k), named ``k``;
* ordinal, numeric: a status part ``k.status`` over the statuses its active records hold
  (omitted when there is one), then, for a numeric column with declared heaps, a heap part
  ``k.heap`` over the heap labels its observed values hold (:mod:`pseudopost.models.file.heaps`),
  then a value part ``k.value`` (ordered logit, the cumulative part over the points of a declared
  bounded grid, or the numeric family) on the active records whose status is "observed". The
  cumulative and binned parts are location-scale (their predictors move the spread as well as
  the location) unless the column is declared ``shift_only``, or the structure stage's count of
  its values (``value_counts``, DP; else the number of records, an upper bound) gives fewer
  than :data:`SCALE_MIN_RECORDS` per predictor feature: then the spread's coefficients (one
  per feature) are barely identified, and the weighted posterior's wide draws of them make the
  accountant's Lipschitz bounds explode (UCI Adult's capital losses, a 2,000-record sample:
  about 110 amounts over 58 features gave a largest bound of 1e17, shift-only about 30).

A record is active in k's parts unless a rule fixes k there. A part whose records hold one
level only is omitted too (that level is then drawn with certainty).

**Aliased design columns.** A design column that is constant on a part's active records (for
example "age missing" in the value part of a column that is never observed when age is missing)
carries no likelihood information about its coefficient beyond the intercept's: its posterior
would be the prior alone, and a synthetic record with that predictor would get a value drawn
with the prior's spread (a height of -10 m). Such a column is left out of that part (its
coefficient fixed at 0, :attr:`PartPlan.inputs`); which columns are left out depends on the
data, like the levels present, and is listed in the choices table as a public choice.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from pseudopost.models.file.bin_points import BinPoints
from pseudopost.models.file.bins import Bins
from pseudopost.models.file.choice import MANY_LEVELS, ColumnChoice, choose
from pseudopost.models.file.constraints import check_rules, check_zeros, fixed_records, zero_mask
from pseudopost.models.file.declarations import Declarations, readers_and_pinned
from pseudopost.models.file.derived import (
    check_derived,
    definition_inputs,
    definition_knots,
    definition_span,
)
from pseudopost.models.file.design import ColumnFeatures, Design, interactions_for, public_span
from pseudopost.models.file.encoding import EncodedColumn, encode
from pseudopost.models.file.grid import Grid
from pseudopost.models.file.heaps import Heaps, position_features
from pseudopost.models.file.nesting import Nesting, TiltInput
from pseudopost.models.file.screen import screen_frame
from pseudopost.models.parts import Part, PartData, make_part
from pseudopost.models.rules import Rule, StructuralZero
from pseudopost.models.status import column_kind

__all__ = [
    "ColumnPlan",
    "FilePlan",
    "PartPlan",
    "grid_points",
    "informative_inputs",
    "make_plan",
    "trimmed_inputs",
    "value_support",
]

#: the most coefficients :math:`(K - 1)(p + 1)` the multinomial logit of an unordered
#: categorical column gets by default (:func:`trimmed_inputs`)
MAX_COEFFICIENTS = 400

#: families whose outcome is a non-negative (or positive) count or a positive amount
_SUPPORT = {
    "lognormal": (0.0, False),
    "poisson": (0.0, True),
    "negative_binomial": (0.0, True),
    "zero_truncated_negative_binomial": (0.0, True),
}


def value_support(family: str | None) -> tuple[float, bool]:
    """(lower bound, open) of a value family's support: ``(0, True)`` for the log-normal,
    ``(0, False)`` for the counts, ``(-inf, False)`` otherwise (the upper bound is infinite)."""
    if family not in _SUPPORT:
        return -np.inf, False
    return _SUPPORT[family][0], family == "lognormal"


@dataclass(frozen=True, eq=False)
class PartPlan:
    """One part of a column: ``role`` (``levels``, ``status``, ``value``, ``heap``, ``points`` or
    ``nested``), the part, and for a level or status part the column codes of its levels (level
    codes, or status codes; for an ordinal value part the column's level codes of its observed
    levels)."""

    role: str
    part: Part
    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: positions of the column's design columns the part uses (None: all of them)
    inputs: np.ndarray | None = None
    #: names of the design columns left out (constant on the part's active records)
    left_out: tuple[str, ...] = ()
    #: why the part takes a simpler form than its family's default (choices table), or ""
    note: str = ""

    @property
    def masked(self) -> bool:
        return self.part.family == "masked_categorical"

    def design(self, X: np.ndarray) -> np.ndarray:
        """The part's columns of its column's design matrix ``X`` (n, p)."""
        return X if self.inputs is None else X[:, self.inputs]


@dataclass(frozen=True, eq=False)
class ColumnPlan:
    """One synthesized column: encoding, model choice, design, rules, zeros and parts.

    ``constant`` holds the level (categorical) or status code every active record takes when
    the column needs no level or status part; ``value_constant`` the level code of an ordinal
    value with one observed level.
    """

    column: EncodedColumn
    choice: ColumnChoice
    design: Design
    rules: tuple[Rule, ...]
    zeros: tuple[StructuralZero, ...]
    fixed: np.ndarray
    parts: tuple[PartPlan, ...]
    constant: int | None = None
    value_constant: int | None = None
    mask: np.ndarray | None = None  # (n, K) allowed levels of the real records (zeros)
    grid: Grid | None = None  # the declared grid its synthetic values are snapped to
    heaps: Heaps | None = None  # the declared heaps (a heap part, or heap_constant)
    heap_constant: int | None = None  # the one heap label of its observed values (no part)
    points: np.ndarray | None = None  # a cumulative value part's levels: the grid's points
    bins: Bins | None = None  # a binned value part's declared bins
    #: inputs left out of a many-coefficient categorical's model (:func:`trimmed_inputs`)
    trimmed: tuple[str, ...] = ()
    #: a binned column's grid points inside its bins (the ``points`` part's levels)
    bin_points: BinPoints | None = None
    #: a hierarchy child's levels within its parent's (the ``nested`` part's levels)
    nesting: Nesting | None = None
    #: (input, its determinant) pairs left out as functions of another input
    #: (``rule_determinants``)
    determined: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return self.column.name

    def part(self, role: str) -> PartPlan | None:
        return next((p for p in self.parts if p.role == role), None)


@dataclass(frozen=True, eq=False)
class FilePlan:
    """The whole file: plans in visit order, kept and dropped columns, the frame's layout."""

    plans: tuple[ColumnPlan, ...]
    kept: dict[str, EncodedColumn]
    kept_series: dict[str, pd.Series]
    dropped: tuple[str, ...]
    columns: tuple[str, ...]
    index: pd.Index
    declarations: Declarations
    all_columns: tuple[str, ...] = ()
    #: many-level columns left out of later columns' predictors (:func:`many_level_columns`)
    unlinked: tuple[str, ...] = ()
    #: derived columns: definition, and the real column's dtype (:mod:`.derived`)
    derived: dict = field(default_factory=dict)
    derived_dtypes: dict = field(default_factory=dict)
    #: the derived columns that are predictors: their encodings on the real records; the
    #: others' reasons (why not a predictor)
    derived_predictors: dict = field(default_factory=dict)
    derived_why: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.index)

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.plans)

    @property
    def parts(self) -> list[Part]:
        return [pp.part for plan in self.plans for pp in plan.parts]

    def choices(self) -> pd.DataFrame:
        """One row per column of the frame: role, detected type, model, parts and why."""
        rows = []
        by = {p.name: p for p in self.plans}
        for c in self.all_columns or self.columns:
            if c in by:
                p = by[c]
                parts = ", ".join(f"{pp.part.name} ({_family_text(pp.part)})" for pp in p.parts)
                reason = p.choice.reason if p.nesting is None else p.nesting.describe()
                if p.rules:
                    reason += f"; fixed by {len(p.rules)} rule(s) on {int(p.fixed.sum())} records"
                if p.zeros:
                    reason += f"; {len(p.zeros)} structural zero(s)"
                g = self.declarations.grid.get(c)
                if p.bins is not None:
                    reason += f"; {p.bins.describe()} (declared)"
                if g is not None and p.points is not None:
                    reason += (
                        f"; its levels are the {p.points.size} points of the grid {g.describe()}"
                    )
                elif g is not None:
                    reason += (
                        f"; values snapped to the declared grid {g.describe()} (public; "
                        "post-processing)"
                        if p.grid is not None
                        else f"; declared grid {g.describe()} not needed (values are its levels)"
                    )
                if p.heaps is not None:
                    reason += f"; heaps at multiples of {p.heaps.describe()}"
                if p.bin_points is not None:
                    reason += f"; inside a bin, {p.bin_points.describe()}"
                left = [f"{pp.part.name}: {', '.join(pp.left_out)}" for pp in p.parts
                        if pp.left_out]  # fmt: skip
                if left:
                    reason += "; constant on the part's records, left out: " + "; ".join(left)
                for pp in p.parts:
                    if pp.note:
                        reason += "; " + pp.note
                if p.determined:
                    reason += "; " + ", ".join(
                        f"{y} left out of its predictors (a function of {x} by the declared "
                        f"rules; {x}'s levels carry it)" for y, x in p.determined
                    )
                if p.trimmed:
                    reason += (
                        f"; {', '.join(p.trimmed)} left out of its predictors (more than "
                        f"{MAX_COEFFICIENTS} coefficients otherwise; widest inputs first)"
                    )
                if c in self.unlinked and "left out of later" not in reason:
                    reason += _unlinked_text(p.column)
                rows.append(
                    (c, "synthetic", p.choice.detected, p.choice.model, parts or "-", reason,
                     ", ".join(_predictor_text(f) for f in p.design.inputs) or "-")
                )  # fmt: skip
            elif c in self.derived:
                role = ("a predictor of the columns visited after its inputs"
                        if c in self.derived_predictors else self.derived_why.get(c, ""))
                rows.append((c, "derived", "-", "derived", "-",
                             f"computed from the synthetic columns as {self.derived[c]} (its "
                             f"declared definition; post-processing, no budget); {role}",
                             "-"))  # fmt: skip
            elif c in self.kept:
                reason = "released as given"
                if c in self.unlinked:
                    reason += _unlinked_text(self.kept[c])
                rows.append((c, "kept", "-", "-", "-", reason, "-"))
            else:
                rows.append((c, "dropped", "-", "-", "-", "left out", "-"))
        return pd.DataFrame(
            rows, columns=["column", "role", "detected", "model", "parts", "reason", "predictors"]
        )


def _family_text(part: Part) -> str:
    """A part's family, with "location-scale" where its predictors move the spread too."""
    return f"{part.family}, location-scale" if getattr(part, "has_scale", False) else part.family


def _unlinked_text(col: EncodedColumn) -> str:
    return (
        f"; {len(col.observed_levels)} levels, more than {MANY_LEVELS}: left out of later "
        f"columns' predictors"
    )


def _warn_cut_off(
    unlinked: tuple[str, ...], order: tuple[str, ...], inputs_of: dict, encoded: dict
) -> None:
    """Warn, naming them, of the synthesized columns a many-level column is cut off from: it
    is not among their predictors and they are not among its own, so the synthetic file keeps
    no relation between them (a recode of the column, such as an occupation group, will not
    match it: GSS wages' 533-level occupation code and its 11-level recode, S_pMSE 362 against
    synthpop's 1.10 in ``benchmarks/defaults.py``)."""
    for c in unlinked:
        cut = [x for x in order
               if x != c and c not in inputs_of[x] and x not in inputs_of.get(c, ())]  # fmt: skip
        if not cut:
            continue
        shown = ", ".join(repr(x) for x in cut[:5]) + (f" and {len(cut) - 5} more" if len(cut) > 5
                                                        else "")  # fmt: skip
        warnings.warn(
            f"Column {c!r} has {len(encoded[c].observed_levels)} levels (more than "
            f"{MANY_LEVELS}): by default it is no predictor of other columns and has none of its "
            f"own, so the synthetic file keeps no relation between it and {shown}; a column "
            f"recoded or assigned from it will not match it. Declare the codebook's "
            f"classification ('hierarchy': the column within its group, a column assigned "
            f"from it), name it in a column's 'predictor_matrix' row (one coefficient per "
            f"level), or leave such a column out.",
            UserWarning,
            stacklevel=3,
        )


def many_level_columns(encoded: dict[str, EncodedColumn], decl: Declarations) -> tuple[str, ...]:
    """The columns left out of later columns' predictors by default: categorical or ordinal
    columns with more than :data:`~pseudopost.models.file.choice.MANY_LEVELS` observed levels
    (each would add one design column per level to every later column's model), unless a
    declared interaction names them. A declared ``predictor_matrix`` row may still name them.

    Parameters
    ----------
    encoded
        The kept and synthesized columns, encoded.
    decl
        The declarations.

    Returns
    -------
    tuple of str
        The columns, in the order of ``encoded``.
    """
    declared = {x for pair in decl.interactions for x in pair}
    return tuple(
        c for c, col in encoded.items()
        if (col.categorical or col.ordered) and len(col.observed_levels) > MANY_LEVELS
        and c not in declared
    )  # fmt: skip


def _predictor_text(f: ColumnFeatures) -> str:
    """A predictor's name, with the knots of its spline terms in this column's model."""
    if not f.knots:
        return f.column.name
    return f"{f.column.name} (knots {', '.join(f'{k:g}' for k in f.knots)})"


def _check_names(frame: pd.DataFrame, decl: Declarations) -> None:
    cols = list(frame.columns)
    for argument, names in decl.named_columns().items():
        unknown = [c for c in names if c not in cols]
        if unknown:
            raise ValueError(
                f"'{argument}' names column(s) {sorted(set(unknown))} that are not in the frame "
                f"(columns: {cols})."
            )


def _visit_order(frame: pd.DataFrame, decl: Declarations) -> tuple[str, ...]:
    """The declared order, or the frame's with the hierarchy's children moved after their
    synthesized parents (:mod:`pseudopost.models.file.nesting`): to the end, where their tilt
    reads every earlier column (:func:`late_children`), or right after the parent where
    another column's rule or predictor row reads them, or an interaction or structural zero
    names them."""
    cols = [str(c) for c in frame.columns]
    hier = decl.hierarchy
    for child, parent in hier.items():
        if parent in decl.drop or parent in decl.derived:
            raise ValueError(
                f"'hierarchy' nests column {child!r} in {parent!r}, which is "
                f"{'dropped' if parent in decl.drop else 'derived'}; a parent is synthesized "
                f"or kept."
            )
        if child in decl.drop:
            raise ValueError(f"'hierarchy' names the dropped column {child!r} as a child.")
    if decl.order is None:
        base = [c for c in cols if c not in decl.keep and c not in decl.drop]
        late = late_children(decl)
        out: list[str] = []

        def place(c: str, pool: list[str]) -> None:
            out.append(c)
            for x in pool:
                if hier.get(x) == c:
                    place(x, pool)

        for pool in ([c for c in base if c not in late], [c for c in base if c in late]):
            for c in pool:
                if hier.get(c) not in pool:
                    place(c, pool)
        return tuple(out)
    rest = [c for c in cols if c not in decl.order and c not in decl.keep and c not in decl.drop]
    if rest:
        raise ValueError(
            f"Column(s) {rest} are neither in 'order' nor in 'keep' or 'drop'; say what happens "
            f"to them (synthesize, release as given, or leave out)."
        )
    for child, parent in hier.items():
        if parent in decl.order and decl.order.index(parent) > decl.order.index(child):
            raise ValueError(
                f"'hierarchy' nests column {child!r} in {parent!r}, which comes after it in "
                f"'order'; a child is drawn after its parent."
            )
    return decl.order


def late_children(decl: Declarations) -> set[str]:
    """The hierarchy's children drawn after every other column (:func:`_visit_order`): those
    no interaction or structural zero names, whose readers (the columns whose rule or
    ``predictor_matrix`` row reads them) are all late children too, and whose children are."""
    hier = decl.hierarchy
    readers, pinned = readers_and_pinned(decl.rules, decl.structural_zeros,
                                         decl.predictor_matrix, decl.interactions)  # fmt: skip
    late = {c for c in hier if c not in pinned}
    changed = True
    while changed:  # a child read by a column that is not late stays in place, and so on
        keep = {c for c in late if any(r not in late for r in readers.get(c, ()))}
        keep |= {hier[c] for c in hier if c not in late and hier[c] in late}  # its parent
        changed = bool(keep)
        late -= keep
    return late


def _inputs(
    col: str, order: tuple, kept: tuple, decl: Declarations, unlinked: tuple = ()
) -> tuple[str, ...]:
    before = [*kept, *order[: order.index(col)]]
    if col not in decl.predictor_matrix:
        return tuple(c for c in before if c not in unlinked)
    given = decl.predictor_matrix[col]
    late = [c for c in given if c not in before]
    if late:
        raise ValueError(
            f"'predictor_matrix' conditions column {col!r} on {late}, which are neither kept nor "
            f"earlier in the visit order {list(order)}."
        )
    return given


def rule_determinants(
    rules: Mapping[str, tuple[Rule, ...]], encoded: Mapping[str, EncodedColumn],
    frame: pd.DataFrame,
) -> dict[str, str]:
    r"""``{y: x}``: the columns ``y`` that their declared rules fix on every level of one
    categorical column ``x``, the only column their conditions read, so that ``y`` is a
    function of ``x`` (Adult: education-num by education, 16 rules).

    Such a ``y`` adds nothing to a later column's design that holds ``x``: ``x`` enters as
    the one-hot of its levels (:mod:`.design`), whose span holds every function of ``x``, so
    ``y``'s features are exactly collinear with them (education-num's six spline features: six
    coefficients per level of a later categorical column, and a posterior ridge for NUTS).
    Reads the rules and ``x``'s levels (the codebook's, or the structure stage's), never the
    records: the rules are evaluated on one row per level, so no budget."""
    out = {}
    for y, rs in rules.items():
        reads = {c for r in rs for c in r.condition_columns}
        if len(reads) != 1:
            continue
        (x,) = reads
        col = encoded.get(x)
        if col is None or not (col.categorical or col.ordered) or not col.levels:
            continue
        cells = pd.Series([lv.cell for lv in col.levels], dtype=object, name=x)
        if y not in frame:
            continue
        try:  # the frame's dtype, where its levels allow (a nullable or object column)
            cells = cells.astype(frame[x].dtype)
        except (TypeError, ValueError):
            pass
        levels = cells.to_frame()  # y's column for the rules' check: no value read
        levels[y] = frame[y].iloc[:0].reindex(range(len(levels)))
        if fixed_records(rs, levels).all():
            out[y] = x
    return out


def nesting_tilts(
    col: str, order: tuple, kept: tuple, decl: Declarations, encoded: dict, unlinked: tuple
) -> tuple[TiltInput, ...]:
    """A hierarchy child's tilt inputs (:mod:`pseudopost.models.file.nesting`): the kept and
    earlier synthesized columns (a declared ``predictor_matrix`` row: those it names), its
    parent and many-level columns aside, each coded by its levels or by its statuses and knot
    bins (its declared or DP knots), those with at most
    :data:`~pseudopost.models.file.nesting.MAX_TILT_CODES` codes."""
    skip = {decl.hierarchy[col], *unlinked}
    out = []
    for x in _inputs(col, order, kept, decl, unlinked):
        if x in skip:
            continue
        t = TiltInput.of(encoded[x], tuple(decl.knots.get(x, ())))
        if t is not None:
            out.append(t)
    return tuple(out)


def trimmed_inputs(
    inputs: tuple[str, ...], widths: dict[str, int], n_levels: int, cap: int = MAX_COEFFICIENTS
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    r"""``(kept, left out)``: the inputs of an unordered categorical column with ``n_levels``
    levels such that its multinomial logit has at most ``cap`` coefficients
    :math:`(K - 1)(p + 1)`, :math:`p` the summed design ``widths`` of the kept inputs.

    The widest inputs (most design columns: the categorical predictors with most levels) are
    left out first, the latest in the visit order among equally wide ones, so that as many
    inputs as possible stay. Why a cap: the part's cost grows with its coefficients (NUTS in
    :math:`d` dimensions, a :math:`d \times d` Hessian for the preconditioner and the Laplace
    draws), and beyond a few hundred coefficients a rare level's are mostly prior. Adult's
    native-country (42 levels after 13 columns of 72 design columns): 2,960 coefficients, a fit
    that had not ended after 50 minutes. The rule reads the level counts and the design's
    widths only (the codebook's categories, or the structure stage's), never the data's
    values; a declared ``predictor_matrix`` row overrides it."""
    kept = list(inputs)
    left = []
    while kept and (n_levels - 1) * (1 + sum(widths[x] for x in kept)) > cap:
        widest = max(widths[x] for x in kept)
        x = [y for y in kept if widths[y] == widest][-1]
        kept.remove(x)
        left.append(x)
    return tuple(kept), tuple(left)


def thinned_knots(knots: tuple[float, ...], j: int) -> tuple[float, ...]:
    """At most ``j`` of the (sorted) ``knots``, evenly spread over them and the outermost
    left out first: 5 knots keep their 2nd, 3rd and 4th (``j = 3``), 2nd and 4th (2), middle
    one (1), none (0); one fewer than there are (``j = k - 1``, where the even spread would
    round two picks to one knot) leaves the last out: 3 knots keep their 1st and 2nd. Always
    ``min(j, k)`` distinct knots. Post-processing of public knots (declared or DP): no budget."""
    k = len(knots)
    if k <= j:
        return tuple(knots)
    if j == k - 1:
        return tuple(knots[:j])
    picks = np.round(np.linspace(0, k - 1, j + 2)[1:-1]).astype(int)
    return tuple(knots[i] for i in picks)


def knots_fitting(
    inputs: tuple[str, ...], features: dict, n_levels: int, cap: int = MAX_COEFFICIENTS
) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
    r"""``(j, kept, left out)``: the most knots ``j`` per numeric input (:func:`thinned_knots`)
    and the inputs :func:`trimmed_inputs` keeps at those widths, for an unordered categorical
    column with ``n_levels`` levels within ``cap`` coefficients :math:`(K - 1)(p + 1)`: the
    inputs kept with all knots, and more where fewer knots keep more of them besides those (the
    fewest left out, then the most knots). ``features``: each input's :class:`ColumnFeatures`
    as it would enter.

    So the spline terms of the numeric inputs are thinned, all alike, before an input is left
    out, and as far as that spares one: a knot only bends an effect that the input's value
    term keeps, while an input left out loses its whole main effect. On Adult, occupation (15
    levels) lost workclass besides education, and the synthetic file's workclass-by-occupation
    table had S_pMSE 35.9 against synthpop's 2.1, to keep five knots each of age, the survey
    weight fnlwgt and education-num; with three each it keeps workclass. Reads the knots (public)
    and the design's widths only."""
    most = max((len(features[x].knots) for x in inputs), default=0)
    best = None
    for j in range(most, -1, -1):
        widths = {x: _thinned(features[x], j).width for x in inputs}
        kept, left = trimmed_inputs(inputs, widths, n_levels, cap)
        if best is None or (len(left) < len(best[2]) and set(best[1]) <= set(kept)):
            best = (j, kept, left)
        if not left:
            break
    return best


def _thinned(f: ColumnFeatures, j: int) -> ColumnFeatures:
    knots = thinned_knots(f.knots, j)
    return f if knots == f.knots else replace(f, knots=knots)


def _check_spikes(choice: ColumnChoice, col: EncodedColumn) -> None:
    if choice.family not in _SUPPORT:
        return
    low, integer = _SUPPORT[choice.family]
    for s in col.info.spikes:
        if s < low or (integer and float(s) != round(float(s))):
            where = "a non-negative integer" if integer else f"a value >= {low:g}"
            raise ValueError(
                f"The spike {s!r} of column {col.name!r} is outside the support of its model "
                f"({choice.model}: {where})."
            )


def _level_part(name, outcome, preds, k, masked) -> Part:
    if masked:
        return make_part("masked_categorical", outcome, preds, n_levels=k, name=name)
    if not preds:
        return make_part("dirichlet_categorical", outcome, (), n_levels=k, name=name)
    if k == 2:
        return make_part("bernoulli", outcome, preds, name=name)
    return make_part("categorical", outcome, preds, n_levels=k, name=name)


def _check_support(part: Part, y: np.ndarray, active: np.ndarray, column: str) -> None:
    """The outcome's support on the active records, before any fitting (no design needed)."""
    plain = make_part(part.family, column, (), name=part.name, **_options(part))
    plain.check_data(PartData(y, np.zeros((y.shape[0], 0)), active))


def _options(part: Part) -> dict:
    out = {}
    if hasattr(part, "n_levels"):
        out["n_levels"] = part.n_levels
    return out


def informative_inputs(X: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Positions of the columns of ``X`` that are not constant on the ``active`` records (the
    others are aliased with the intercept: module docstring)."""
    if X.shape[1] == 0 or not active.any():
        return np.zeros(0, dtype=np.int64)
    Xa = X[active]
    return np.flatnonzero(Xa.min(axis=0) != Xa.max(axis=0)).astype(np.int64)


def _selected(names: list[str], X: np.ndarray, active: np.ndarray):
    """(inputs or None, the part's predictor names, the names left out)."""
    keep = informative_inputs(X, active)
    if keep.size == len(names):
        return None, tuple(names), ()
    kept = set(keep.tolist())
    return (
        keep,
        tuple(names[j] for j in keep),
        tuple(n for j, n in enumerate(names) if j not in kept),
    )


def heap_position(col, bins) -> tuple[np.ndarray, tuple[str, ...]]:
    """The position features of a binned column's real values (heaps module): its heap part's
    predictors after the column's design."""
    x = np.nan_to_num(np.asarray(col.values, dtype=np.float64), nan=bins.edges[0])
    return position_features(col.name, bins.n_bins, bins.index(x))


def heap_mask(heaps, bins, codes, bin_index, labels=None) -> np.ndarray:
    """(n, K) allowed labels of a binned column's heap part (``codes``: the part's labels):
    those its bin holds a grid point of (:meth:`~pseudopost.models.file.heaps.Heaps.bin_labels`;
    public edges and grid), and with ``labels`` each real record's own label (a real value off
    its grid lies in a bin that may hold no point of its nearest one's label); a row with none
    allows every label."""
    codes = np.asarray(codes, dtype=np.int64)
    allowed = heaps.bin_labels(bins.edges)[:, codes][np.asarray(bin_index, dtype=np.int64)]
    if labels is not None:
        allowed |= np.asarray(labels, dtype=np.int64)[:, None] == codes[None, :]
    allowed[~allowed.any(axis=1)] = True
    return allowed


def _bin_points(col, bins, grid, heaps, active) -> BinPoints | None:
    """The grid points inside a binned column's bins (``pseudopost.models.file.bin_points``): a binned column on
    a stepped recording grid without declared heaps (declared heaps keep the heap part)."""
    if bins is None or grid is None or grid.listed or heaps is not None:
        return None
    observed = active & col.valued
    x = np.asarray(col.values, dtype=np.float64)[observed]
    return BinPoints.build(bins, grid, x, forbidden=(*col.info.codes, *col.info.spikes))


#: counted values per predictor feature a cumulative or binned value part needs to be
#: location-scale (module docstring): its 2p coefficients then have at least 10 values each.
#: The six larger files of ``benchmarks/defaults.py`` hold at least 26 per feature in every
#: such part; German credit (800 records) has two parts below it
SCALE_MIN_RECORDS = 20


def _counted(decl: Declarations, column: str, n: int) -> tuple[float, str]:
    """A public count of a column's modelled values: the structure stage's DP count
    (``value_counts``), else the number of records ``n``, an upper bound (public: the synthetic
    file's size)."""
    if column in decl.value_counts:
        return decl.value_counts[column], "DP count"
    return float(n), "the number of records, an upper bound"


def _column_parts(
    col,
    choice,
    design,
    X,
    active,
    masked,
    heaps=None,
    points=None,
    bins=None,
    scaled=True,
    bin_points=None,
    counted=None,
) -> tuple[tuple, int | None, int | None, int | None]:
    """The parts of one column (module docstring) given its design ``X`` on the real records,
    its constant level or status, its constant ordinal value and its constant heap label
    (``scaled``: a cumulative or binned value part is location-scale, unless ``counted``, a
    count of its values and what it is (:func:`_counted`), gives fewer than
    :data:`SCALE_MIN_RECORDS` per predictor)."""
    name, names = col.name, list(design.names)
    if choice.categorical:
        codes = col.level_codes(col.status, col.values)
        present = np.unique(codes[active])
        if present.size >= 2:
            inputs, preds, left = _selected(names, X, active)
            part = _level_part(name, name, preds, int(present.size), masked)
            return (PartPlan("levels", part, present, inputs, left),), None, None, None
        return (), (int(present[0]) if present.size else None), None, None
    parts = []
    present = np.unique(col.status[active])
    constant = None
    if present.size >= 2:
        inputs, preds, left = _selected(names, X, active)
        part = _level_part(f"{name}.status", name, preds, present.size, False)
        parts.append(PartPlan("status", part, present, inputs, left))
    elif present.size == 1:
        constant = int(present[0])
    observed = active & col.valued
    value_constant = heap_constant = None
    if heaps is not None and observed.any():
        labels = heaps.labels(np.asarray(col.values, dtype=np.float64)[observed])
        held = np.unique(labels)
        if held.size >= 2:
            Xh, names_h, binned = X, names, bins is not None and choice.family == "binned"
            if binned:  # the value's position too, and a mask of the bin's labels
                F, fnames = heap_position(col, bins)
                Xh, names_h = np.concatenate([X, F], axis=1), [*names, *fnames]
            inputs, preds, left = _selected(names_h, Xh, observed)
            part = _level_part(f"{name}.heap", name, preds, int(held.size), binned)
            parts.append(PartPlan("heap", part, held, inputs, left))
        else:
            heap_constant = int(held[0])
    if choice.ordered:
        codes = col.level_codes(col.status, col.values)
        held = np.unique(codes[observed])
        if held.size >= 2:
            inputs, preds, left = _selected(names, X, observed)
            part = make_part("ordinal", name, preds, n_levels=int(held.size), name=f"{name}.value")
            parts.append(PartPlan("value", part, held, inputs, left))
        elif held.size == 1:
            value_constant = int(held[0])
    elif observed.any():
        inputs, preds, left = _selected(names, X, observed)
        # two levels: one cutpoint, whose location and scale a logit cannot tell apart well
        options = {} if points is None else {"n_levels": int(points.size),
                                             "scaled": scaled and points.size > 2}  # fmt: skip
        if bins is not None and choice.family == "binned":
            options = {"n_levels": bins.n_bins, "log_widths": bins.log_widths, "scaled": scaled}
        note = ""
        if options.get("scaled") and counted is not None and counted[0] < SCALE_MIN_RECORDS * len(
                preds):  # fmt: skip
            options["scaled"] = False
            note = (f"{name}.value shift-only: about {counted[0]:.0f} values ({counted[1]}) for "
                    f"{len(preds)} predictor features, fewer than {SCALE_MIN_RECORDS} each")
        if options.get("scaled") and preds:  # the log-spread's design centred (design module)
            options["scale_centre"] = design.scale_centre(preds)
        part = make_part(choice.family, name, preds, name=f"{name}.value", **options)
        parts.append(PartPlan("value", part, inputs=inputs, left_out=left, note=note))
        if bin_points is not None:  # the grid point inside the drawn bin (bin_points module)
            part = bin_points.part(name, f"{name}.points")
            parts.append(PartPlan("points", part, inputs=np.zeros(0, dtype=np.int64)))
    return tuple(parts), constant, value_constant, heap_constant


def make_plan(frame: pd.DataFrame, decl: Declarations) -> FilePlan:
    """Encode, choose and check every column of ``frame`` (module docstring); nothing is fitted.

    Raises
    ------
    TypeError, ValueError
        Naming the argument, column, rule or zero, and the value (module docstring).
    """
    screen_frame(frame, keep=decl.keep, drop=decl.drop)
    _check_names(frame, decl)
    derived = dict(decl.derived)
    if derived:  # computed, not modelled: out of every model, checked on the real records
        decl = replace(decl, drop=(*decl.drop, *derived))
        check_derived(frame, derived, [c for c in frame.columns if c not in decl.drop])
    order = _visit_order(frame, decl)
    if not order:
        raise ValueError("There is no column to synthesize: every column is kept or dropped.")
    kept_names = tuple(c for c in frame.columns if c in decl.keep)
    unused = [c for c in decl.models if c not in order]
    if unused:
        raise ValueError(
            f"'models' gives a model for column(s) {unused}, which are not synthesized."
        )
    visit = {c: -1 for c in kept_names} | {c: j for j, c in enumerate(order)}
    position = {c: j for j, c in enumerate(frame.columns)}

    choices, encoded = {}, {}
    for c in [*kept_names, *order]:
        s = frame[c]
        column_kind(s)  # unsupported dtypes, before anything else
        codes = tuple(decl.missing_codes.get(c, ()))
        spikes = tuple(decl.spikes.get(c, ()))
        inputs_known = bool(kept_names) or order.index(c) > 0 if c in order else True
        conditioned = inputs_known and (
            c not in decl.predictor_matrix or bool(decl.predictor_matrix[c])
        )
        bounded = c in decl.grid and decl.grid[c].bounds is not None
        ch = choose(s, c, declared=decl.models.get(c, "auto"), codes=codes, spikes=spikes,
                    conditioned=conditioned, max_levels=decl.max_levels,
                    bounded_grid=bounded, binned=c in decl.bins,
                    many_levels=None if decl.predictor_matrix.get(c) else MANY_LEVELS)  # fmt: skip
        col = encode(s, c, position[c], codes=codes, spikes=ch.spikes,
                     categorical=ch.categorical or ch.ordered, ordered=ch.ordered)  # fmt: skip
        if c in decl.truncate and col.numeric and not col.categorical:
            col = col.truncated(*decl.truncate[c])
        if c in order:
            _check_spikes(ch, col)
        choices[c], encoded[c] = ch, col
    for a, b in decl.interactions:
        for x in (a, b):
            if x in encoded and not (encoded[x].categorical or encoded[x].ordered):
                raise ValueError(
                    f"The interaction ({a!r}, {b!r}) names column {x!r}, which is numeric; "
                    f"interactions are of categorical columns (their one-hot levels)."
                )
            if x in decl.drop:
                raise ValueError(f"The interaction ({a!r}, {b!r}) names the dropped column {x!r}.")

    for child, parent in decl.hierarchy.items():
        if not (encoded[parent].categorical or encoded[parent].ordered):
            raise ValueError(
                f"'hierarchy' nests column {child!r} in {parent!r}, which is numeric; a parent "
                f"is a categorical column (its levels are the groups)."
            )
    grids = _check_grids(decl, encoded, choices, order)
    _check_bins(decl, encoded, choices, order)
    for c in decl.shift_only:
        family = choices[c].family if c in order else None
        if family not in ("cumulative", "binned"):
            raise ValueError(
                f"Column {c!r} is declared 'shift_only', but it is "
                + (f"modelled by {choices[c].model!r}" if c in order else "not synthesized")
                + "; 'shift_only' applies to columns modelled over a bounded grid's points or "
                "over bins (grid_ordinal, binned)."
            )
    rules = check_rules(decl.rules, frame, visit, decl.drop)
    one_part = {c: choices[c].categorical for c in order}
    zeros = check_zeros(decl.structural_zeros, frame, visit, decl.drop, one_part)
    fixed = {c: fixed_records(rules.get(c, ()), frame) for c in order}
    for c in order:  # the value families' support, before the designs' transforms
        ch, col = choices[c], encoded[c]
        if ch.family is not None and ch.family not in ("cumulative", "binned"):  # _check_grids
            observed = ~fixed[c] & (col.status == 0)
            part = make_part(ch.family, c, name=f"{c}.value")
            _check_support(part, np.where(observed, col.values, np.nan), observed, c)
    transforms = {c: decl.transforms.get(c, _default_transform(choices[c])) for c in encoded}
    features = {
        c: ColumnFeatures(encoded[c], transforms[c], decl.knots.get(c, ()),
                          _span(c, decl, transforms[c]))
        for c in encoded
    }  # fmt: skip
    for c in [*decl.transforms, *decl.knots]:
        if c in decl.drop:
            raise ValueError(f"A transform or knots are declared for the dropped column {c!r}.")
    # a column whose knots go to some later columns only enters the others linearly
    linear = {
        c: ColumnFeatures(encoded[c], features[c].transform, span=features[c].span)
        for c in decl.knot_columns
    }
    unlinked = many_level_columns(encoded, decl)
    inputs_of = {c: _inputs(c, order, kept_names, decl, unlinked) for c in order}
    no_inputs = set()
    for c in order:  # an automatic Dirichlet-categorical (many levels) has no predictors
        if (choices[c].model == "dirichlet_categorical" and c not in decl.models
                and c not in decl.predictor_matrix) or c in decl.hierarchy:  # fmt: skip
            inputs_of[c] = ()  # a hierarchy child: its parent alone (nesting module)
            no_inputs.add(c)
    derived_features, derived_inputs, derived_why = (
        _derived_predictors(frame, derived, decl, position, encoded) if derived else ({}, {}, {})
    )
    features.update(derived_features)
    for c in order:  # a derived column: a predictor of the columns visited after its inputs
        if c in no_inputs or c in decl.predictor_matrix:
            continue
        before = {*kept_names, *order[: order.index(c)]}
        inputs_of[c] = (*inputs_of[c], *(d for d, names in derived_inputs.items()
                                         if set(names) <= before))  # fmt: skip
    nested = {*decl.hierarchy, *decl.hierarchy.values()}
    _warn_cut_off(tuple(c for c in unlinked if c not in nested), order, inputs_of, encoded)
    def _entering(x: str, c: str) -> ColumnFeatures:  # x's features in c's design
        return linear[x] if x in linear and c not in decl.knot_columns[x] else features[x]

    # an input that the rules make a function of another input: left out beside it
    determinant = rule_determinants(rules, encoded, frame)
    in_interactions = {x for pair in decl.interactions for x in pair}
    full_inputs, determined = dict(inputs_of), {}
    for c in order:
        if c in decl.predictor_matrix:
            continue
        determined[c] = tuple(
            (y, determinant[y]) for y in inputs_of[c]
            if determinant.get(y) in inputs_of[c] and y not in in_interactions
            and c not in decl.knot_columns.get(y, ())
        )  # fmt: skip
        gone = {y for y, _ in determined[c]}
        inputs_of[c] = tuple(x for x in inputs_of[c] if x not in gone)

    trimmed, thin = {}, {}
    declared_for = {c2 for where in decl.knot_columns.values() for c2 in where}
    for c in order:  # a many-coefficient multinomial logit: its widest inputs left out
        if (choices[c].categorical and choices[c].model != "dirichlet_categorical"
                and c not in decl.predictor_matrix and c not in declared_for
                and len(encoded[c].levels) > 2):  # fmt: skip
            fit = knots_fitting(inputs_of[c], {x: _entering(x, c) for x in full_inputs[c]},
                                len(encoded[c].levels))  # fmt: skip
            back = {y for y, x in determined[c] if x in fit[2]}
            if back:  # its determinant left out: the determined input may stand for it
                determined[c] = tuple((y, x) for y, x in determined[c] if y not in back)
                inputs_of[c] = tuple(x for x in full_inputs[c]
                                     if x in inputs_of[c] or x in back)  # fmt: skip
                fit = knots_fitting(inputs_of[c], {x: _entering(x, c) for x in inputs_of[c]},
                                    len(encoded[c].levels))  # fmt: skip
            j, inputs_of[c], trimmed[c] = fit
            thin[c] = {x: _thinned(_entering(x, c), j) for x in inputs_of[c]}
    for x, where in decl.knot_columns.items():
        for c in where:
            if c not in inputs_of or x not in inputs_of[c]:
                raise ValueError(
                    f"The knots of column {x!r} are declared for column {c!r}, whose model is "
                    f"not conditioned on {x!r} (it is kept, dropped or earlier in the visit "
                    f"order, or its predictor_matrix leaves {x!r} out)."
                )

    plans = []
    states = {c: (e.status, e.values) for c, e in encoded.items()}
    states.update({d: (f.column.status, f.column.values) for d, f in derived_features.items()})
    for c in order:
        inputs = inputs_of[c]
        design = Design(
            tuple(
                thin[c][x] if c in thin else _entering(x, c)
                for x in inputs
            ),
            interactions_for(inputs, decl.interactions),
        )
        X = design.matrix(states, len(frame))
        heaps = Heaps(grids[c], decl.heaps[c]) if c in decl.heaps and c in grids else None
        points = grid_points(grids[c], encoded[c]) if choices[c].family == "cumulative" else None
        bins = decl.bins.get(c) if choices[c].family == "binned" else None
        uniform = c in decl.uniform_in_bins
        bin_points = None if uniform else _bin_points(encoded[c], bins, grids.get(c), heaps,
                                                      ~fixed[c])  # fmt: skip
        nesting = None
        if c in decl.hierarchy:  # one Dirichlet per level of its parent (nesting module)
            if c in zeros or heaps is not None:
                raise ValueError(
                    f"Column {c!r} is a child in the 'hierarchy' (drawn within its parent) and "
                    f"has {'structural zeros' if c in zeros else 'heaps'}; declare one."
                )
            tilts = nesting_tilts(c, order, kept_names, decl, encoded, unlinked)
            nesting = Nesting.build(encoded[decl.hierarchy[c]], encoded[c], points, ~fixed[c],
                                    tilts)  # fmt: skip
            part = nesting.part(c, f"{c}.nested")
            parts = (PartPlan("nested", part, inputs=np.zeros(0, dtype=np.int64)),)
            constant = value_constant = heap_constant = None
            bin_points = None
        else:
            parts, constant, value_constant, heap_constant = _column_parts(
                encoded[c], choices[c], design, X, ~fixed[c], c in zeros, heaps, points, bins,
                scaled=c not in decl.shift_only, bin_points=bin_points,
                counted=_counted(decl, c, len(frame)),
            )  # fmt: skip
        del X
        mask = None
        if c in zeros and parts:
            cells = [encoded[c].levels[k].cell for k in parts[0].codes]
            mask = zero_mask(zeros[c], frame, c, cells)
        plans.append(
            ColumnPlan(encoded[c], choices[c], design, rules.get(c, ()), zeros.get(c, ()),
                       fixed[c], parts, constant, value_constant, mask, grids.get(c), heaps,
                       heap_constant, points, bins, trimmed.get(c, ()), bin_points, nesting,
                       determined.get(c, ()))
        )  # fmt: skip
    names = [pp.part.name for p in plans for pp in p.parts]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(
            f"Part names {dup} clash (a column named like another column's '.status' or "
            f"'.value' part); rename the column."
        )
    return FilePlan(
        plans=tuple(plans),
        kept={c: encoded[c] for c in kept_names},
        kept_series={c: frame[c] for c in kept_names},
        dropped=tuple(c for c in frame.columns if c in decl.drop and c not in derived),
        columns=tuple(c for c in frame.columns if c not in decl.drop or c in derived),
        index=frame.index,
        declarations=decl,
        all_columns=tuple(frame.columns),
        unlinked=unlinked,
        derived=derived,
        derived_dtypes={c: frame[c].dtype for c in derived},
        derived_predictors={d: f.column for d, f in derived_features.items()},
        derived_why=derived_why,
    )


def _check_grids(decl: Declarations, encoded, choices, order) -> dict[str, Grid]:
    """The declared grids of the synthesized numeric columns with a value family (categorical
    and ordinal columns draw their observed levels), checked: numeric columns only, integer
    grids for integer columns and counts, a warning when real observed values are off the
    grid."""
    out = {}
    for c, g in decl.grid.items():
        if c in decl.drop or c in decl.keep:
            what = "dropped" if c in decl.drop else "kept"
            raise ValueError(
                f"A grid is declared for the {what} column {c!r}; only synthesized columns are "
                f"snapped to a grid."
            )
        col, ch = encoded[c], choices[c]
        if not col.numeric:
            raise TypeError(
                f"The grid of column {c!r} needs a numeric column; it is {col.info.kind} "
                f"({col.info.dtype})."
            )
        count = ch.family in _SUPPORT and _SUPPORT[ch.family][1]
        if (col.info.kind == "integer" or count) and not g.integral:
            why = "holds integers" if col.info.kind == "integer" else f"is a count ({ch.model})"
            raise ValueError(
                f"The grid {g.describe()} of column {c!r} has points that are not integers, but "
                f"the column {why}: declare an integer step and origin (its values are integers)."
            )
        x = np.asarray(col.values, dtype=np.float64)[col.status == 0]
        if g.bounds is not None:
            out_of = (x < g.bounds[0]) | (x > g.bounds[1])
            if out_of.any():
                fix = (
                    "list the value, declare it a spike or a code, or correct it"
                    if g.listed
                    else "correct the bounds (the column's public range) or the value"
                )
                raise ValueError(
                    f"Column {c!r} holds the value {float(x[out_of][0]):g}, outside the bounds "
                    f"[{g.bounds[0]:g}, {g.bounds[1]:g}] of its declared grid; {fix}."
                )
        if ch.family == "cumulative":
            if c in decl.heaps:
                raise ValueError(
                    f"Column {c!r} declares heaps, but its model (grid_ordinal) gives every point "
                    f"of its bounded grid its own probability, heaps included; drop the heaps "
                    f"or declare a numeric model."
                )
            grid_points(g, col)  # too many or too few points: an error before fitting
        off = g.share_off(x)
        if off > 0:
            warnings.warn(
                f"Grid of column {c!r}: {100 * off:.3g}% of its observed values are not on the "
                f"declared grid {g.describe()}; synthetic values will all be on it.",
                UserWarning,
                stacklevel=4,
            )
        if c in order and ch.family is not None:
            out[c] = g
        elif c in decl.heaps:
            raise ValueError(
                f"Column {c!r} declares heaps but is modelled {ch.model} (its values are levels "
                f"drawn as they are); heaps need a numeric value family (declare its model)."
            )
    return out


def _check_bins(decl: Declarations, encoded, choices, order) -> None:
    """Declared bins: synthesized numeric columns only, every real observed value within the
    edges, and the binned model (another declared model would ignore them)."""
    for c, b in decl.bins.items():
        if c not in order:
            raise ValueError(f"Bins are declared for column {c!r}, which is not synthesized.")
        col = encoded[c]
        if not col.numeric or choices[c].family is None:
            raise ValueError(
                f"Bins are declared for column {c!r}, which is modelled {choices[c].model}; bins "
                f"need a numeric column (declare its model 'binned')."
            )
        if choices[c].family != "binned":
            raise ValueError(
                f"Column {c!r} declares bins but its model is {choices[c].model!r}; declare "
                f"'binned' or drop the bins."
            )
        x = np.asarray(col.values, dtype=np.float64)[col.status == 0]
        out_of = (x < b.edges[0]) | (x > b.edges[-1])
        if out_of.any():
            raise ValueError(
                f"Column {c!r} holds the value {float(x[out_of][0]):g}, outside its declared "
                f"bins [{b.edges[0]:g}, {b.edges[-1]:g}]; widen the bins or correct the value."
            )


def grid_points(g: Grid, col: EncodedColumn) -> np.ndarray:
    """The levels of a cumulative value part: the points of the column's bounded grid that are
    not its codes or spikes (:meth:`Grid.points`), errors naming the column."""
    try:
        return g.points(forbidden=(*col.info.codes, *col.info.spikes))
    except ValueError as exc:
        raise ValueError(f"Column {col.name!r}: {exc}") from None


def _support(c: str, decl: Declarations) -> tuple[float, float] | None:
    """The public support [low, high] of column ``c``: a declared or DP grid's bounds or
    listed values, or its bins' outer edges; None without one."""
    g, b = decl.grid.get(c), decl.bins.get(c)
    if b is not None:
        return float(b.edges[0]), float(b.edges[-1])
    if g is not None and g.bounds is not None:
        return float(g.bounds[0]), float(g.bounds[1])
    if g is not None and g.listed:
        return float(g.values[0]), float(g.values[-1])
    return None


def _span(c: str, decl: Declarations, transform: object) -> tuple[float, float] | None:
    """The public support of column ``c`` (:func:`_support`) as its features' unit
    (:func:`~pseudopost.models.file.design.public_span`); None without one."""
    support = _support(c, decl)
    return None if support is None else public_span(transform, *support)


def _derived_predictors(
    frame: pd.DataFrame, derived: Mapping[str, str], decl: Declarations, position: dict,
    encoded: dict,
) -> tuple[dict[str, ColumnFeatures], dict[str, tuple[str, ...]], dict[str, str]]:
    """The derived columns that can be predictors (:mod:`.derived`, *As a predictor*): their
    features (status and clipped value on the definition's public span, hat functions at
    knots from the inputs' knots, :func:`~pseudopost.models.file.derived.definition_knots`),
    their inputs, and for the others why not."""
    features, inputs, why = {}, {}, {}
    candidates = [c for c in frame.columns if c not in derived and c not in decl.drop]
    for d, expr in derived.items():
        names = definition_inputs(expr, candidates)
        supports = {x: _support(x, decl) for x in names}
        lacking = [x for x, v in supports.items() if v is None or encoded[x].categorical
                   or encoded[x].ordered]  # fmt: skip
        span = None if lacking else definition_span(d, expr, supports)
        if span is None:
            why[d] = (f"not a predictor: its input(s) {lacking} have no public numeric support"
                      if lacking else "not a predictor: affine in its inputs (their own terms "
                      "span it) or no finite range over their supports")  # fmt: skip
            continue
        points = {x: (v[0], *decl.knots.get(x, ()), v[1]) for x, v in supports.items()}
        knots = definition_knots(d, expr, points, span)
        col = encode(frame[d], d, position[d], categorical=False)
        features[d] = ColumnFeatures(col, None, knots, public_span(None, *span), clip=True)
        inputs[d] = names
    return features, inputs, why


def _default_transform(ch: ColumnChoice) -> object:
    """``log`` for a log-normal value (its observed values are positive), else as given."""
    return "log" if ch.family == "lognormal" else None
