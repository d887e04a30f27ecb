r"""The public declarations of a whole-file synthesizer, checked for type before any data is read.

Everything here is public (guide: *Whole files*: it sits outside the accountant and must be
stated as such): the visit sequence ``order``, the ``predictor_matrix`` (which earlier columns
each column uses), a model name per column, the columns released as given (``keep``) or left out
(``drop``), missing ``codes`` and ``spikes`` per column, predictor ``transforms`` and spline
``knots``, ``interactions`` of categorical predictors, ``rules`` and ``structural_zeros``, and
a numeric column's recording precision (``grid``, :mod:`pseudopost.models.file.grid`), its
``heaps`` (:mod:`pseudopost.models.file.heaps`), and the grid or binned columns whose predictors
only shift the column's distribution (``shift_only``; by default they move its spread too:
:mod:`pseudopost.models.parts.cumulative`).
:class:`Declarations` normalises the arguments (lists to tuples, rule texts to
:class:`~pseudopost.models.rules.Rule`) and raises a ``TypeError``/``ValueError`` naming the
argument and the value; the checks against the data (unknown columns, codes of the wrong type,
rules the data contradict) are :mod:`pseudopost.models.file.model`'s, also before any fitting.

A :class:`~pseudopost.formats.Codebook` (SPSS/Stata metadata) supplies missing codes: its
:attr:`~pseudopost.formats.Codebook.missing_codes` are merged under the ones given explicitly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pseudopost.formats import Codebook
from pseudopost.models.families import FAMILIES, family
from pseudopost.models.file.bins import Bins
from pseudopost.models.file.derived import parse_derived
from pseudopost.models.file.grid import Grid
from pseudopost.models.file.heaps import parse_heaps
from pseudopost.models.rules import Rule, StructuralZero

__all__ = ["AUTO", "FILE_MODELS", "TRANSFORMS", "Declarations"]

#: the model name that asks for the automatic choice
AUTO = "auto"
#: named public transforms of a numeric predictor (``None``: as given)
TRANSFORMS = ("log", "log1p", "identity")
#: model names a whole-file column accepts: the families with a column part
#: (:data:`pseudopost.models.families.FAMILIES`: the ready models' less the mixture, and
#: ``grid_ordinal``: the cumulative part over a bounded grid's points, ``binned``: the binned
#: part over declared bins)
FILE_MODELS = (*sorted(f.name for f in FAMILIES.values() if f.part is not None), AUTO)


def _names(value: object, argument: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(
            f"'{argument}' must be a list of column names. Got {type(value).__name__}: {value!r}."
        )
    names = list(value)
    bad = [v for v in names if not isinstance(v, str) or not v]
    if bad:
        raise TypeError(f"'{argument}' must hold column names (non-empty str). Got {bad!r}.")
    dup = sorted({v for v in names if names.count(v) > 1})
    if dup:
        raise ValueError(f"'{argument}' lists column(s) {dup} more than once.")
    return tuple(names)


def _mapping(value: object, argument: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(
            f"'{argument}' must be a mapping column -> value. Got {type(value).__name__}."
        )
    bad = [k for k in value if not isinstance(k, str) or not k]
    if bad:
        raise TypeError(f"'{argument}' must be keyed by column names (str). Got {bad!r}.")
    return dict(value)


def _values(value: object, argument: str, column: str) -> tuple:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        value = [value]
    return tuple(value)


def _transform(column: str, t: object) -> object:
    if t is None or t == "identity":
        return None
    if isinstance(t, str):
        if t not in TRANSFORMS:
            raise ValueError(
                f"The transform of column {column!r} must be one of {list(TRANSFORMS)} or a "
                f"(centre, scale) pair of public constants. Got {t!r}."
            )
        return t
    if (
        isinstance(t, (tuple, list))
        and len(t) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in t)
        and all(math.isfinite(v) for v in t)
        and t[1] > 0
    ):
        return (float(t[0]), float(t[1]))
    raise ValueError(
        f"The transform of column {column!r} must be one of {list(TRANSFORMS)} or a "
        f"(centre, scale) pair of public constants with scale > 0. Got {t!r}."
    )


def _knots(column: str, k: object) -> tuple[tuple[float, ...], tuple[str, ...] | None]:
    """(knots, the columns whose designs get them, or None for every later column)."""
    if isinstance(k, Mapping):
        if set(k) != {"at", "columns"}:
            raise ValueError(
                f"The knots of column {column!r}, given as a table, need exactly 'at' (the "
                f"knots) and 'columns' (the later columns whose models get the spline terms). "
                f"Got the keys {sorted(k)}."
            )
        where = _names(k["columns"], f"knots[{column!r}]['columns']")
        if not where:
            raise ValueError(f"'knots[{column!r}]['columns']' names no column.")
        if column in where:
            raise ValueError(
                f"'knots[{column!r}]['columns']' names {column!r} itself; the knots shape how "
                f"{column!r} enters later columns' models."
            )
        return _knot_values(column, k["at"]), where
    return _knot_values(column, k), None


def _knot_values(column: str, k: object) -> tuple[float, ...]:
    if isinstance(k, (str, bytes)) or not isinstance(k, Sequence) or not k:
        raise TypeError(
            f"The knots of column {column!r} must be a non-empty list of numbers. Got {k!r}."
        )
    out = []
    for v in k:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"The knots of column {column!r} must be finite numbers. Got {v!r}.")
        out.append(float(v))
    if any(b <= a for a, b in itertools.pairwise(out)):
        raise ValueError(f"The knots of column {column!r} must increase strictly. Got {k!r}.")
    return tuple(out)


def _interactions(value: object) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"'interactions' must be a list of column pairs. Got {value!r}.")
    out = []
    for pair in value:
        if (
            isinstance(pair, (str, bytes))
            or not isinstance(pair, Sequence)
            or len(pair) != 2
            or not all(isinstance(c, str) and c for c in pair)
            or pair[0] == pair[1]
        ):
            raise ValueError(
                f"'interactions' must hold pairs of two different column names. Got {pair!r}."
            )
        out.append((pair[0], pair[1]))
    return tuple(out)


def _as_list(value: object, argument: str) -> list:
    if value is None:
        return []
    if isinstance(value, (str, Mapping, Rule, StructuralZero)):
        return [value]
    if not isinstance(value, Sequence):
        raise TypeError(f"'{argument}' must be a list. Got {type(value).__name__}.")
    return list(value)


@dataclass(frozen=True)
class Declarations:
    """A whole file's public declarations (module docstring), normalised.

    Attributes
    ----------
    order : tuple of str or None
        Columns to synthesize, in visit order (None: every column not kept or dropped, in the
        frame's order).
    predictor_matrix : dict
        Column -> tuple of the columns it is conditioned on (kept or earlier in ``order``);
        a column not listed uses every kept and earlier column.
    models : dict
        Column -> model name (:data:`pseudopost.models.registry.MODEL_NAMES`, or ``"auto"``).
    keep, drop : tuple of str
        Columns released as given / left out of the synthetic file.
    missing_codes, spikes : dict
        Column -> tuple of declared codes / spike values.
    transforms : dict
        Column -> ``"log"``, ``"log1p"``, ``(centre, scale)`` or None (as given): how a numeric
        column enters later columns' designs.
    knots : dict
        Column -> increasing public knots (original scale) of its linear-spline terms.
    knot_columns : dict
        Column -> the later columns whose designs get its spline terms; a column with knots
        that is not listed here gets them in every later column (the others take its value
        linearly). Given as ``knots={"age": {"at": [22, 26, 35], "columns": [...]}}``.
    interactions : tuple of (str, str)
        Pairs of categorical columns whose one-hot products enter every later column that uses
        both.
    rules : tuple of Rule
    structural_zeros : tuple of StructuralZero
    grid : dict
        Column -> :class:`~pseudopost.models.file.grid.Grid`: the public recording precision
        of a numeric column (a step, or ``values``: the list of amounts it takes); synthetic
        values are snapped to it (post-processing). With bounds (listed values have them), the
        column is modelled over the grid's points by default (``grid_ordinal``).
    heaps : dict
        Column -> multiples of its grid step where values heap, coarsest first (``(10, 5)``).
    bins : dict
        Column -> :class:`~pseudopost.models.file.bins.Bins`: public bin edges; the column is
        modelled by the binned part by default (a histogram density, ``binned``).
    max_levels : int
        A numeric column with at most this many distinct observed integer values is modelled as
        categorical (:func:`~pseudopost.models.registry.choose_model`'s ``max_levels``).
    shift_only : tuple of str
        Columns modelled over a grid's points or over bins (``grid_ordinal``, ``binned``) whose
        predictors shift the distribution only (the proportional-odds model); the others' move
        its spread too (location-scale, :mod:`pseudopost.models.parts.cumulative`).
    uniform_in_bins : tuple of str
        Binned columns whose value is uniform inside its bin (then rounded to the grid). A
        binned column on a stepped grid without declared heaps otherwise learns the shares of
        the grid points inside each bin (``pseudopost.models.file.bin_points``).
    derived : dict
        Column -> its codebook definition over the other columns (``"exper ** 2"``): not
        modelled, computed from the synthetic columns (:mod:`pseudopost.models.file.derived`).
    hierarchy : dict
        Child column -> parent column: the child is classified within, or assigned from, the
        parent (an occupation code within its major group; a prestige score from the
        occupation code), drawn after it from one Dirichlet per parent level, tilted by the
        earlier columns (:mod:`pseudopost.models.file.nesting`).
    value_counts : dict
        Column -> a released (DP) count of the values its value part models, from the structure
        stage (:attr:`~pseudopost.mechanisms.structure.ColumnStructure.values_count`). A
        location-scale part with fewer than
        :data:`~pseudopost.models.file.plan.SCALE_MIN_RECORDS` counted values per predictor
        feature is shift-only (:func:`~pseudopost.models.file.plan.make_plan`); for a column
        with no count the number of records stands in (an upper bound).
    truncate : dict
        Column -> a public support ``(low, high)`` (the structure stage's DP support): an
        observed value beyond it enters the later columns' designs as the nearer end; in the
        column's own model a binned value part censors it into the outermost bin of the
        support's interior (not the end point's own bin), and the grid-point, heap and
        grid_ordinal value parts leave it out (each record's term depends on its own value
        only). Coded to the end in its own model too, a tail cut by a DP support became a
        spike on the end that the data do not have (2 % of SLID's synthetic wages at 39.81).
    """

    order: tuple[str, ...] | None = None
    predictor_matrix: dict = field(default_factory=dict)
    models: dict = field(default_factory=dict)
    keep: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    missing_codes: dict = field(default_factory=dict)
    spikes: dict = field(default_factory=dict)
    transforms: dict = field(default_factory=dict)
    knots: dict = field(default_factory=dict)
    knot_columns: dict = field(default_factory=dict)
    interactions: tuple = ()
    rules: tuple = ()
    structural_zeros: tuple = ()
    grid: dict = field(default_factory=dict)
    heaps: dict = field(default_factory=dict)
    bins: dict = field(default_factory=dict)
    max_levels: int = 10
    shift_only: tuple[str, ...] = ()
    derived: dict = field(default_factory=dict)
    uniform_in_bins: tuple[str, ...] = ()
    hierarchy: dict = field(default_factory=dict)
    value_counts: dict = field(default_factory=dict)
    truncate: dict = field(default_factory=dict)

    @classmethod
    def from_arguments(
        cls,
        *,
        order: Sequence[str] | None = None,
        predictor_matrix: Mapping[str, Sequence[str]] | None = None,
        models: Mapping[str, str] | None = None,
        keep: Sequence[str] = (),
        drop: Sequence[str] = (),
        missing_codes: Mapping[str, Sequence] | Codebook | None = None,
        spikes: Mapping[str, Sequence[float]] | None = None,
        transforms: Mapping[str, object] | None = None,
        knots: Mapping[str, Sequence[float] | Mapping] | None = None,
        interactions: Sequence[tuple[str, str]] | None = None,
        rules: Sequence[Rule | str | Mapping] = (),
        structural_zeros: Sequence[StructuralZero | str | Mapping] = (),
        codebook: Codebook | None = None,
        grid: Mapping[str, Mapping | Grid] | None = None,
        heaps: Mapping[str, Sequence[int]] | None = None,
        bins: Mapping[str, Sequence[float]] | None = None,
        max_levels: int = 10,
        shift_only: Sequence[str] = (),
        derived: Mapping[str, str] | None = None,
        uniform_in_bins: Sequence[str] = (),
        hierarchy: Mapping[str, str] | None = None,
        value_counts: Mapping[str, float] | None = None,
        truncate: Mapping[str, Sequence[float]] | None = None,
    ) -> Declarations:
        """Check and normalise the arguments (types only; the data are checked later)."""
        if isinstance(missing_codes, Codebook):
            codebook, missing_codes = missing_codes, None
        if codebook is not None and not isinstance(codebook, Codebook):
            raise TypeError(f"'codebook' must be a Codebook. Got {type(codebook).__name__}.")
        order_t = None if order is None else _names(order, "order")
        keep_t, drop_t = _names(keep, "keep"), _names(drop, "drop")
        for a, b, x, y in (
            ("keep", "drop", keep_t, drop_t),
            ("order", "keep", order_t or (), keep_t),
            ("order", "drop", order_t or (), drop_t),
        ):
            both = sorted(set(x) & set(y))
            if both:
                raise ValueError(f"Column(s) {both} are in both '{a}' and '{b}'.")
        pm = {}
        for col, preds in _mapping(predictor_matrix, "predictor_matrix").items():
            pm[col] = _names(preds, f"predictor_matrix[{col!r}]")
            if col in pm[col]:
                raise ValueError(f"'predictor_matrix' conditions column {col!r} on itself.")
        mods = {}
        for col, name in _mapping(models, "models").items():
            if not isinstance(name, str):
                raise TypeError(
                    f"The model of column {col!r} must be a model name (one of "
                    f"{list(FILE_MODELS)}). Got {name!r}."
                )
            fam = AUTO if name.lower() == AUTO else family(name)
            if fam is None:
                raise ValueError(
                    f"Unknown model name {name!r} for column {col!r}; expected one of "
                    f"{list(FILE_MODELS)}."
                )
            if fam != AUTO and fam.part is None:
                raise ValueError(
                    f"The model {name!r} of column {col!r} has no column part in a whole-file "
                    f"synthesizer; choose one of {list(FILE_MODELS)}."
                )
            mods[col] = fam if fam == AUTO else fam.name
        codes = {}
        if codebook is not None:
            codes.update({c: tuple(v) for c, v in codebook.missing_codes.items()})
        for col, v in _mapping(missing_codes, "missing_codes").items():
            codes[col] = _values(v, "missing_codes", col)
        spk = {c: _values(v, "spikes", c) for c, v in _mapping(spikes, "spikes").items()}
        trans = {c: _transform(c, t) for c, t in _mapping(transforms, "transforms").items()}
        kn_where = {c: _knots(c, k) for c, k in _mapping(knots, "knots").items()}
        kn = {c: at for c, (at, _) in kn_where.items()}
        kn_cols = {c: where for c, (_, where) in kn_where.items() if where is not None}
        rules_t = tuple(Rule.from_spec(r) for r in _as_list(rules, "rules"))
        zeros_t = tuple(
            StructuralZero.parse(z) for z in _as_list(structural_zeros, "structural_zeros")
        )
        grids = {c: Grid.parse(g, c) for c, g in _mapping(grid, "grid").items()}
        heaps_d = {c: parse_heaps(h, c) for c, h in _mapping(heaps, "heaps").items()}
        no_grid = sorted(set(heaps_d) - set(grids))
        if no_grid:
            raise ValueError(
                f"'heaps' are multiples of a column's grid step; column(s) {no_grid} declare "
                f"heaps but no 'grid'."
            )
        listed = sorted(c for c in heaps_d if grids[c].listed)
        if listed:
            raise ValueError(
                f"'heaps' are multiples of a column's grid step; column(s) {listed} declare "
                f"heaps on a grid of listed values, which has no step (give each listed value "
                f"its own probability instead: the default model of listed values)."
            )
        bins_d = {c: Bins.parse(b, c) for c, b in _mapping(bins, "bins").items()}
        both = sorted(c for c in bins_d if c in grids and grids[c].bounds)
        if both:
            raise ValueError(
                f"Column(s) {both} declare bins and a bounded grid; a bounded grid is its own "
                f"model (every grid point a level): declare one."
            )
        if isinstance(max_levels, bool) or not isinstance(max_levels, int) or max_levels < 2:
            raise ValueError(f"'max_levels' must be an integer >= 2. Got {max_levels!r}.")
        der = parse_derived(derived)
        for arg, names in (("order", order_t or ()), ("keep", keep_t), ("drop", drop_t),
                           ("models", mods), ("grid", grids), ("bins", bins_d)):  # fmt: skip
            both = sorted(set(der) & set(names))
            if both:
                raise ValueError(
                    f"Column(s) {both} are derived (computed from the others by their "
                    f"definition) and also named in '{arg}'; a derived column is not modelled."
                )
        hier = _hierarchy(hierarchy)
        for arg, names in (("derived", der), ("models", mods), ("keep", keep_t),
                           ("predictor_matrix", pm), ("grid", {c: g for c, g in grids.items()
                                                              if not g.bounds})):  # fmt: skip
            both = sorted(set(hier) & set(names))
            if both:
                raise ValueError(
                    f"Column(s) {both} are children in the 'hierarchy' (modelled given their "
                    f"parent alone) and also named in '{arg}'; declare one."
                )
        return cls(
            order=order_t,
            predictor_matrix=pm,
            models=mods,
            keep=keep_t,
            drop=drop_t,
            missing_codes=codes,
            spikes=spk,
            transforms=trans,
            knots=kn,
            knot_columns=kn_cols,
            interactions=_interactions(interactions),
            rules=rules_t,
            structural_zeros=zeros_t,
            grid=grids,
            heaps=heaps_d,
            bins=bins_d,
            max_levels=max_levels,
            shift_only=_names(shift_only, "shift_only"),
            derived=der,
            uniform_in_bins=_names(uniform_in_bins, "uniform_in_bins"),
            hierarchy=hier,
            value_counts=_counts(value_counts),
            truncate=_supports(truncate),
        )

    def named_columns(self) -> dict[str, list[str]]:
        """Argument -> the columns it names (to check against the data)."""
        out = {
            "keep": list(self.keep),
            "drop": list(self.drop),
            "predictor_matrix": [*self.predictor_matrix]
            + [c for v in self.predictor_matrix.values() for c in v],
            "models": list(self.models),
            "missing_codes": list(self.missing_codes),
            "spikes": list(self.spikes),
            "transforms": list(self.transforms),
            "knots": list(self.knots) + [c for v in self.knot_columns.values() for c in v],
            "interactions": [c for pair in self.interactions for c in pair],
            "grid": list(self.grid),
            "heaps": list(self.heaps),
            "bins": list(self.bins),
            "shift_only": list(self.shift_only),
            "derived": list(self.derived),
            "uniform_in_bins": list(self.uniform_in_bins),
            "hierarchy": [*self.hierarchy, *self.hierarchy.values()],
            "value_counts": list(self.value_counts),
            "truncate": list(self.truncate),
        }
        if self.order is not None:
            out["order"] = list(self.order)
        return out


def _counts(counts: Mapping[str, float] | None) -> dict[str, float]:
    out = {}
    for c, v in _mapping(counts, "value_counts").items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v < 0:  # fmt: skip
            raise ValueError(
                f"The value count of column {c!r} must be a finite number >= 0. Got {v!r}."
            )
        out[c] = float(v)
    return out


def _supports(supports: Mapping[str, Sequence[float]] | None) -> dict[str, tuple[float, float]]:
    out = {}
    for c, v in _mapping(supports, "truncate").items():
        try:
            lo, hi = (float(x) for x in v)
        except (TypeError, ValueError):
            raise ValueError(
                f"The support of column {c!r} under 'truncate' must be a pair (low, high). "
                f"Got {v!r}."
            ) from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise ValueError(
                f"The support of column {c!r} under 'truncate' must be finite with low <= "
                f"high. Got {v!r}."
            )
        out[c] = (lo, hi)
    return out


def readers_and_pinned(
    rules: Sequence[Rule] = (),
    structural_zeros: Sequence[StructuralZero] = (),
    predictor_matrix: Mapping[str, Sequence[str]] | None = None,
    interactions: Sequence[tuple[str, str]] = (),
) -> tuple[dict[str, set[str]], set[str]]:
    """(readers, pinned): for each column, the columns whose rule condition or
    ``predictor_matrix`` row reads it; and the columns an interaction or structural zero names,
    which keep their place in the visit order (a hierarchy child's, a many-level column's)."""
    pinned = {x for pair in interactions for x in pair}
    for z in structural_zeros:
        pinned |= set(z.columns)
    readers: dict[str, set[str]] = {}
    for col, preds in (predictor_matrix or {}).items():
        for x in preds:
            readers.setdefault(x, set()).add(col)
    for r in rules:
        for x in r.condition_columns:
            readers.setdefault(x, set()).add(r.column)
    return readers, pinned


def _hierarchy(hierarchy: Mapping[str, str] | None) -> dict[str, str]:
    """``{child: parent}`` checked for types, self-reference and cycles."""
    out = {}
    for child, parent in _mapping(hierarchy, "hierarchy").items():
        if not isinstance(child, str) or not isinstance(parent, str):
            raise TypeError(
                f"'hierarchy' maps a column to its parent column (names), e.g. "
                f"{{'occ10': 'occrecode'}}; got {child!r}: {parent!r}."
            )
        if child == parent:
            raise ValueError(f"'hierarchy' nests column {child!r} in itself.")
        out[child] = parent
    for child in out:
        seen, c = [child], child
        while c in out:
            c = out[c]
            if c in seen:
                raise ValueError(
                    f"'hierarchy' has a cycle: {' -> '.join([*seen, c])} (each column is "
                    f"drawn after its parent)."
                )
            seen.append(c)
    return out
