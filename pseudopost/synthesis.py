r"""``pseudopost.synthesize``: a whole file as agencies hold it, with defaults that work.

One call reads the frame as it is (empty cells anywhere, declared missing codes, spikes, rules
and structural zeros), plans a sequential model of every column
(:class:`~pseudopost.models.file.FileModel`: each column's status and value conditioned on the
earlier columns, synthpop's ``cont.na`` and ``semicont`` made Bayesian), runs the risk-weighted
pseudo posterior mechanism on it (:class:`~pseudopost.PseudoPosterior`: one weight per record,
one accountant over the whole record, every part fitted alone from its grouped statistics and
their draws paired) and returns the synthetic frame(s), the table of choices and the fitted
mechanism.

Defaults, each public and listed in the choices table: the visit order is the frame's column
order; every column is conditioned on all earlier ones. Before any work the frame is screened
(:func:`~pseudopost.models.file.screen.screen_frame`: duplicate names, identifier columns,
values no model can start from). Then the **structure stage**
(:mod:`pseudopost.mechanisms.structure`, ``structure_epsilon``, default 1) releases, by
differentially private mechanisms, what a codebook does not declare: each numeric column's
integer-ness, support, zero spike and bins, and each text column's levels; numeric columns are
modelled over their support (every integer of it, ``grid_ordinal``, or a histogram density,
``binned``), so no synthetic value leaves it. Categorical, boolean and text columns are
categorical, missing cells and codes levels of their own; a column of more than 50 levels has
no predictors and is no predictor (shrinkage, :mod:`pseudopost.models.file.choice`).
``structure_epsilon=None`` reads a numeric column's family from its observed values instead
(:mod:`pseudopost.models.file.choice`, pseudopost 0.1's defaults), not covered by any budget.

Recording precision: a declared ``grid`` per numeric column (heights in whole inches stored as
metres to 2 decimals) snaps the synthetic values to the grid the real ones are recorded on, a
public fact and post-processing (:mod:`pseudopost.models.file.grid`); declared ``heaps``
(weights heaped at multiples of 5 and 10 lb) add a heap part per column
(:mod:`pseudopost.models.file.heaps`). A grid with public ``bounds`` (the survey's edit range)
leaves the column finitely many values, and it is then modelled over them by default
(``grid_ordinal``: an ordered logit over the grid's points, :mod:`pseudopost.models.parts.
cumulative`), which follows any marginal shape, heaping included.

Flexibility (see :mod:`pseudopost.models.file.design`): ``knots`` add linear-spline terms of a
continuous predictor at public knots and ``interactions`` the products of two categorical
predictors' levels, the two places where CART beats a plain GLM; both are fixed before the data
are seen, so the model's only contact with the data is its likelihood, which the accountant
covers. ``weight_floor`` keeps every level of every categorical part present
(:func:`~pseudopost.risk.weights.level_floor`).

**Privacy**: the structure stage is global DP (pure epsilon, plus partition selection's delta
for text levels and frequent values), paid once per release; the mechanism's local epsilon is
computed given the structure; :attr:`SynthesisResult.privacy_statement` states both and charges
:math:`m\varepsilon_x + \varepsilon_s` for m datasets. What stays read from the data and
uncovered: which statuses (missing cells, codes) a column has, and, with
``structure_epsilon=None``, the families and levels.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from pseudopost._cards import diagnostics_verdict, html_card, text_card, timings_text
from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_frame, check_positive_int
from pseudopost.fitting.columns import part_samplers, samplers_text
from pseudopost.formats import Codebook
from pseudopost.mechanisms.pseudo_posterior import PseudoPosterior, PseudoPosteriorResult
from pseudopost.mechanisms.pseudo_posterior.core import (
    FILE_CHAINS,
    FILE_DRAWS,
    FILE_PART_RAKE,
    FILE_RAKE_MIN_WEIGHT,
    FILE_RISK_FIT,
    FILE_TUNE,
    FILE_WEIGHT_FLOOR,
    FILE_WEIGHTED_FIT,
)
from pseudopost.mechanisms.structure import (
    STRUCTURE_EPSILON,
    Structure,
    check_bounds_columns,
    estimate_structure,
    parent_candidates,
)
from pseudopost.models.file import FileModel
from pseudopost.models.file.categories import check_levels, with_levels
from pseudopost.models.file.derived import check_derived, derive, parse_derived
from pseudopost.models.file.screen import screen_frame
from pseudopost.models.registry import Choice, choose_model, model_class
from pseudopost.models.rules import Rule, StructuralZero, named_levels
from pseudopost.models.status import split_status

__all__ = ["Choice", "SynthesisResult", "choose_model", "model_class", "synthesize"]

#: default weight floor of :func:`synthesize` (see :func:`~pseudopost.risk.weights.level_floor`)
WEIGHT_FLOOR = FILE_WEIGHT_FLOOR
#: default smallest total weight of :func:`synthesize`'s raking (:func:`~pseudopost.risk.
#: weights.level_rake`)
RAKE_MIN_WEIGHT = FILE_RAKE_MIN_WEIGHT
#: default part raking of :func:`synthesize` (see :func:`~pseudopost.risk.weights.part_rake`)
PART_RAKE = FILE_PART_RAKE
#: default sampling of every part (see :func:`synthesize`'s ``draws``)
DRAWS, TUNE, CHAINS = FILE_DRAWS, FILE_TUNE, FILE_CHAINS


def _draw_count(post) -> int:
    """chains x draws of a posterior group."""
    return int(post.sizes.get("chain", 1)) * int(post.sizes.get("draw", 1))


def _forward(name: str) -> property:
    """The fitted mechanism's ``name`` (``SynthesisResult.result.name``)."""
    return property(lambda self: getattr(self.result, name), doc=f"``result.{name}``.")


@dataclass(repr=False)
class SynthesisResult:
    """What :func:`synthesize` returns.

    Attributes
    ----------
    synthetic : DataFrame or list of DataFrame
        The synthetic data (one frame for ``m == 1``).
    choices : DataFrame
        One row per column of the input: ``column``, ``role`` (synthetic, kept, dropped),
        ``detected``, ``model``, ``parts`` (each part and its family), ``reason`` and
        ``predictors`` (the columns it is conditioned on).
    result : PseudoPosteriorResult
        The fitted mechanism (``epsilon``, ``lipschitz``, ``alpha``, ``datatree``,
        ``diagnostics``, ``privacy_statement``, ...); also ``fit``. ``datasets`` is the list
        of synthetic frames whatever ``m``.
    model : FileModel
    """

    synthetic: pd.DataFrame | list[pd.DataFrame]
    choices: pd.DataFrame
    result: PseudoPosteriorResult
    model: FileModel
    structure: Structure | None = None

    epsilon = _forward("epsilon")
    unweighted_epsilon = _forward("unweighted_epsilon")
    global_epsilon = _forward("global_epsilon")
    lipschitz = _forward("lipschitz")
    alpha = _forward("alpha")
    diagnostics = _forward("diagnostics")

    @property
    def fit(self) -> PseudoPosteriorResult:
        """The fitted mechanism (the same object as ``result``): ``out.fit.datatree``,
        ``out.fit.diagnostics``."""
        return self.result

    @property
    def datasets(self) -> list[pd.DataFrame]:
        """The synthetic datasets as a list, whatever ``m`` was (``synthetic`` is one frame
        when ``m == 1``)."""
        return list(self.synthetic) if isinstance(self.synthetic, list) else [self.synthetic]

    @property
    def structure_epsilon(self) -> float:
        """The structure stage's epsilon (global, pure, add/remove; paid once per release), 0
        when every structural choice was declared or read from the data (``structure_epsilon=
        None``, not covered)."""
        return 0.0 if self.structure is None else self.structure.epsilon

    @property
    def total_epsilon(self) -> float:
        r"""What one synthetic dataset costs in all: :math:`\varepsilon_s + \varepsilon_x`, or
        with ``censor_epsilon`` :math:`\varepsilon_s + 2B` (sequential composition)."""
        eps = self.global_epsilon
        return self.structure_epsilon + (self.epsilon if eps is None else eps)

    @property
    def privacy_statement(self):
        """The mechanism's statement with the structure stage added (:attr:`structure_epsilon`,
        paid once per release; :meth:`~pseudopost.privacy.statement.PrivacyStatement.charge`)."""
        statement = self.result.privacy_statement
        if self.structure is None:
            return replace(
                statement,
                assumptions=(
                    *statement.assumptions,
                    "the file's structure (bounds, bins, spikes, levels, families) was read from "
                    "the data outside the budget (structure_epsilon=None): not covered",
                    self._draws_used(),
                ),
            )
        return replace(
            statement,
            structure_epsilon=self.structure.epsilon,
            structure_delta=self.structure.spent_delta,
            assumptions=(*statement.assumptions, self._draws_used()),
        )

    def _draws_used(self) -> str:
        tree = self.result.datatree
        m = _draw_count(tree["posterior"])
        text = (
            f"epsilon_x is the maximum over the M = {m} posterior draws of the weighted fit "
            f"(more draws can only raise it, slowly: synthesize's 'draws')"
        )
        if "risk_posterior" in tree.children:
            text += (
                f"; the risks that set the weights, and the unweighted epsilon, over the "
                f"{_draw_count(tree['risk_posterior'])} draws of the risk step"
            )
        return text

    @property
    def epsilon_without_floor(self) -> float | None:
        """The weighted epsilon before the weight floor when ``floor_cost`` was asked for (the
        same as :attr:`epsilon` when the floor raised no weight), else None."""
        value = self.result.datatree["privacy"].attrs.get("epsilon_without_floor")
        return None if value is None else float(value)

    @property
    def synthetic_columns(self) -> list[str]:
        return list(self.choices.loc[self.choices.role == "synthetic", "column"])

    @property
    def kept_columns(self) -> list[str]:
        return list(self.choices.loc[self.choices.role == "kept", "column"])

    def _card_lines(self) -> list[tuple[str, str]]:
        frames = self.datasets
        rows, cols = frames[0].shape
        synth = self.synthetic_columns
        lines = [
            ("synthetic", f"{len(frames)} dataset(s) of {rows:,} records x {cols} columns "
                          f"({len(synth)} synthesized, {len(self.kept_columns)} kept)"),
            ("epsilon", f"{self.total_epsilon:.4g} per dataset in all: mechanism "
                        + (f"{self.global_epsilon:.4g} (censored, "
                           f"{self.result.privacy_statement.scope}; local {self.epsilon:.4g}; "
                           if self.global_epsilon is not None else f"{self.epsilon:.4g} (local, "
                           "weighted; ") + "unweighted "
                        f"{self.unweighted_epsilon:.4g}) + structure "
                        f"{self.structure_epsilon:.3g}"),
            ("privacy", self.result.privacy_statement.describe().split("; assumes")[0]),
            ("diagnostics", diagnostics_verdict(self.diagnostics)),
            ("timings", timings_text(self.result.timings)),
            ("parts drawn", samplers_text(part_samplers(self.result.datatree)) or "-"),
            ("models", ", ".join(f"{c}: {m}" for c, m in
                                 zip(self.choices["column"], self.choices["model"], strict=True))),
        ]  # fmt: skip
        return lines

    def __repr__(self) -> str:
        return text_card("SynthesisResult", self._card_lines())

    def _repr_html_(self) -> str:
        frames = self.datasets
        keep = [c for c in ("column", "role", "model", "parts", "predictors", "structure")
                if c in self.choices.columns]  # fmt: skip
        folds = [
            ("the choices (every column's model and why)", self.choices[keep].to_html(index=False)),
            ("the first synthetic records", frames[0].head(10).to_html()),
            ("the privacy statement in full", f"<p>{html.escape(self.privacy_statement.describe())}</p>"),
        ]  # fmt: skip
        tree = getattr(self.result.datatree, "_repr_html_", None)
        if tree is not None:
            folds.append(("the DataTree (posterior draws, weights, bounds)", tree()))
        return html_card("SynthesisResult", self._card_lines(), folds)

    def synthesize(self, m: int | None = None, seed: SeedLike = None, *, weighted: bool = True):
        """One more synthetic dataset (a DataFrame) from the weighted posterior, or
        (``weighted=False``) from the unweighted posterior of the risk step: the unweighted
        synthesizer, whose privacy loss is ``unweighted_epsilon``, for comparison. ``m`` is
        deprecated (:meth:`PseudoPosteriorResult.synthesize`); use :meth:`synthesize_datasets`.
        """
        return self.result.synthesize(m, seed, weighted=weighted)

    def synthesize_datasets(
        self, m: int, seed: SeedLike = None, *, weighted: bool = True
    ) -> list[pd.DataFrame]:
        """``m`` more synthetic datasets, each under its own posterior draw (weighted, or the
        unweighted synthesizer with ``weighted=False``); they compose to ``m`` times the
        epsilon of one."""
        return self.result.synthesize_datasets(m, seed, weighted=weighted)


def synthesize_unweighted(result: PseudoPosteriorResult, m: int = 1, seed: SeedLike = None):
    """Deprecated: ``result.synthesize_datasets(m, seed, weighted=False)`` (a list) or
    ``result.synthesize(seed=seed, weighted=False)`` (one DataFrame). Returns what it did in
    pseudopost 0.1 (a DataFrame for ``m == 1``, else a list), with a ``DeprecationWarning``."""
    warnings.warn(
        "synthesize_unweighted(result, m, seed) is deprecated and will be removed in "
        "pseudopost 0.3; use result.synthesize_datasets(m, seed=..., weighted=False).",
        DeprecationWarning,
        stacklevel=2,
    )
    with warnings.catch_warnings():  # one warning, this one
        warnings.simplefilter("ignore", DeprecationWarning)
        return result.synthesize(m, seed, weighted=False)


def _deprecated_options(frame, sampler, unmodelled, order, keep, drop, predictor_matrix):
    """``order``, ``keep`` and ``predictor_matrix`` after pseudopost 0.1's ``sampler`` and
    ``unmodelled`` (see :func:`synthesize`), each with a ``DeprecationWarning``."""
    if sampler is not None:
        warnings.warn(
            "synthesize(sampler=...) is deprecated and ignored (removed in pseudopost 0.3): "
            "every column part is sampled by nutpie on its written-out density.",
            DeprecationWarning,
            stacklevel=3,
        )
    if unmodelled is None:
        return order, keep, predictor_matrix
    if unmodelled not in ("keep", "marginal"):
        raise ValueError(f"'unmodelled' must be 'keep' or 'marginal'. Got {unmodelled!r}.")
    warnings.warn(
        "synthesize(unmodelled=...) is deprecated (removed in pseudopost 0.3): name the columns "
        "in 'keep', or in 'order' with an empty row of 'predictor_matrix'.",
        DeprecationWarning,
        stacklevel=3,
    )
    if order is None:
        return order, keep, predictor_matrix
    named = set(order) | set(keep) | set(drop)
    rest = [c for c in frame.columns if c not in named]
    if unmodelled == "keep":
        return order, [*keep, *rest], predictor_matrix
    return [*order, *rest], keep, {**(predictor_matrix or {}), **{c: [] for c in rest}}


def synthesize(
    frame: pd.DataFrame,
    *,
    missing_codes: Mapping[str, Sequence] | Codebook | None = None,
    spikes: Mapping[str, Sequence[float]] | None = None,
    rules: Sequence[Rule | str | Mapping] = (),
    structural_zeros: Sequence[StructuralZero | str | Mapping] = (),
    derived: Mapping[str, str] | None = None,
    hierarchy: Mapping[str, str] | None = None,
    order: Sequence[str] | None = None,
    predictor_matrix: Mapping[str, Sequence[str]] | None = None,
    models: Mapping[str, str] | None = None,
    keep: Sequence[str] = (),
    drop: Sequence[str] = (),
    transforms: Mapping[str, object] | None = None,
    knots: Mapping[str, Sequence[float] | Mapping] | None = None,
    interactions: Sequence[tuple[str, str]] | None = None,
    codebook: Codebook | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    structure_epsilon: float | None = STRUCTURE_EPSILON,
    grid: Mapping[str, Mapping[str, float]] | None = None,
    heaps: Mapping[str, Sequence[int]] | None = None,
    bins: Mapping[str, Sequence[float]] | None = None,
    max_levels: int = 10,
    shift_only: Sequence[str] = (),
    uniform_in_bins: Sequence[str] = (),
    m: int = 1,
    scale: float = 1.0,
    shift: float = 0.0,
    weight_floor: float = WEIGHT_FLOOR,
    rake_min_weight: float | None = RAKE_MIN_WEIGHT,
    part_rake: bool = PART_RAKE,
    floor_cost: bool = False,
    target_epsilon: float | None = None,
    censor_epsilon: float | None = None,
    risk_fit: str = FILE_RISK_FIT,
    weighted_fit: str = FILE_WEIGHTED_FIT,
    draws: int = DRAWS,
    tune: int = TUNE,
    chains: int = CHAINS,
    workers: int | None = None,
    seed: SeedLike = None,
    progress: bool | None = None,
    sampler: str | None = None,
    unmodelled: str | None = None,
) -> SynthesisResult:
    r"""Synthesize a whole file with the risk-weighted pseudo posterior (module docstring).

    Parameters
    ----------
    frame
        The confidential data (never modified): empty cells (NaN, None, ``pd.NA``, ``""``) are
        allowed in every column; at least two rows.
    missing_codes
        Column -> declared codes kept apart from values (``{"income": [-8, -9]}``); or a
        :class:`~pseudopost.formats.Codebook` (its SPSS/Stata missing values).
    spikes
        Column -> point masses of a numeric column (``{"hours": [40]}``).
    rules
        Declared public rules (``"wages is missing when employed == 'no'"``, or tables): the
        records a rule fixes leave that column's likelihood, and the rule is imposed on the
        synthetic data (:class:`~pseudopost.models.rules.Rule`).
    structural_zeros
        Declared impossible combinations, never generated
        (:class:`~pseudopost.models.rules.StructuralZero`).
    derived
        Column -> its codebook definition over the other columns, in pandas' ``eval`` syntax
        (``{"expersq": "exper ** 2", "lwage": "log(hrwage)"}``): not modelled, computed from
        the synthetic columns (synthpop's passive synthesis; post-processing, no budget),
        checked on the real records before any work, and a predictor of the columns visited
        after its inputs where they have public supports
        (:mod:`pseudopost.models.file.derived`).
    hierarchy
        Column -> its parent column, a codebook's classification: the column is classified
        within the parent (``{"occ10": "occrecode"}``: an occupation code within its major
        group) or assigned from it (``{"prestg10": "occ10"}``: a prestige score looked up from
        the occupation code). The child is drawn after its parent (last, unless another
        column's rule reads it) from one Dirichlet over its levels per parent level, tilted by
        the earlier columns' public codes (naive Bayes; conjugate, exact draws;
        :mod:`pseudopost.models.file.nesting`), so a many-level code keeps its group's
        relations with the other columns, and its own inside the group, and a column assigned
        from it stays consistent. The
        parent is categorical; the child categorical, or an integer column with a bounded range.
    order
        Columns to synthesize in visit order (default: every column not kept or dropped, in the
        frame's order); every other column must be in ``keep`` or ``drop``.
    predictor_matrix
        Column -> the kept or earlier columns it is conditioned on (default: all of them).
    models
        Column -> model name (:data:`~pseudopost.models.registry.MODEL_NAMES`, or ``"auto"``).
    keep, drop
        Columns released as given / left out.
    transforms, knots, interactions
        Public predictor transforms (``"log"``, ``"log1p"``, ``(centre, scale)``), spline knots
        and interactions of categorical columns (:mod:`pseudopost.models.file.design`). Knots
        go to every later column (``{"age": [22, 26, 35]}``) or to the listed ones only
        (``{"age": {"at": [22, 26, 35], "columns": ["income"]}}``; the others take age
        linearly), which keeps many-level columns' models small.
    codebook
        A :class:`~pseudopost.formats.Codebook`: its missing codes, under ``missing_codes``, and
        its valid ranges, under ``bounds``.
    bounds
        Column -> the codebook's valid range ``(low, high)`` of a numeric column (``{"age":
        (18, 89)}``, 89 meaning "89 or older"): its synthetic values stay inside, no budget is
        spent on its support, and a real value outside is an error naming its row. One end may
        be open (``None`` or an infinity: ``{"age": (16, None)}``, "16 and over"): that end is
        the declared one, the other is the DP support's (paid as without a declaration).
    levels
        Column -> the codebook's answer categories of a text column (``{"sex": ["female",
        "male"]}``): the column becomes a categorical of them, the structure stage selects
        nothing for it (no budget; undeclared text columns' levels are released by partition
        selection, which on a small file keeps only the common ones), and a cell outside them
        (and its missing codes) is an error naming its row. A categorical dtype declares them
        too (:mod:`pseudopost.models.file.categories`).
    structure_epsilon
        The budget of the structure stage (:mod:`pseudopost.mechanisms.structure`; default 1):
        every numeric column with no declared model, grid or bins gets its integer-ness, its
        support (unless declared in ``bounds``), a zero spike and its bins from differentially
        private releases (pure epsilon, add/remove; each column in turn gets the budget left
        over the columns still to come, the columns with a declared range first); a value
        beyond a DP bound enters the later columns as the bound, and its own column's model
        censors it into the outermost bin inside (binned) or leaves it out (a grid's points:
        truncated), so no synthetic value piles on the bound. The column
        is then modelled over its support (every integer of it, or a histogram density), so no
        synthetic value leaves it. ``None`` reads
        these choices from the data instead (pseudopost 0.1's automatic families), which the
        privacy statement flags as not covered.
    grid
        Column -> the public recording precision of a numeric column,
        ``{"step": s, "digits": d, "origin": o}`` (values ``round(k * s + o, d)``, e.g. heights
        in inches as metres: ``{"height": {"step": 0.0254, "digits": 2}}``), or
        ``{"digits": d}`` alone. Synthetic observed values are snapped to the nearest grid
        point inside the column's support (codes and spikes untouched): post-processing of the
        posterior draws, at no privacy cost (:mod:`pseudopost.models.file.grid`). A warning
        names a column whose real observed values are not all on its grid. With
        ``"bounds": [low, high]`` (a public range; a real value outside it is an error) the
        column is modelled by default over the grid's points in it (``grid_ordinal``, at most
        5,000 points); declare another model in ``models`` to keep a numeric family.
        ``{"values": [v_1, ..., v_K]}`` lists the amounts a column takes instead (a form's
        amounts; bounds ``[v_1, v_K]``), modelled over them by default: the list is public
        structure like a categorical column's levels, so declare it from a codebook, not from
        the confidential values (:mod:`pseudopost.models.file.grid`).
    heaps
        Column -> multiples of its grid step where answers heap (digit preference), e.g.
        ``{"weight": [10, 5]}``: the column gains a heap part, a categorical over "multiple of
        10 steps", "multiple of 5 steps" and "off the heaps" on its observed records, and each
        synthetic value is snapped to the grid points of its drawn heap
        (:mod:`pseudopost.models.file.heaps`). Needs the column's ``grid``.
    bins
        Column -> public bin edges, e.g. ``{"fnlwgt": np.geomspace(1e4, 1.5e6, 201).tolist()}``:
        the column's observed values are modelled by a histogram density (``binned``: an
        ordered logit over the bins on the earlier columns, uniform inside each bin,
        :mod:`pseudopost.models.file.bins`), which follows any shape at the bins' resolution.
        Real observed values must lie within the edges.
    max_levels
        Numbers with at most this many distinct observed integer values are categorical.
    shift_only
        Columns modelled over a grid's points or over bins whose predictors only shift their
        distribution (the proportional-odds model). By default the predictors of such a column
        move its spread as well as its location (location-scale, McCullagh 1980: the weights
        of tall and short pupils differ in spread, not only in centre;
        :mod:`pseudopost.models.parts.cumulative`).
    uniform_in_bins
        Binned columns drawn uniformly inside each bin, with heaps from the structure stage. By default a binned column on a recording grid learns the shares of
        the grid points inside each bin (a Dirichlet per bin,
        ``pseudopost.models.file.bin_points``): heaps, a minimum wage, bracket midpoints
        come back at their shares, paid for by the mechanism's epsilon (a value few records
        hold has a small share, so a large log-likelihood bound and a small weight).
    m
        Number of synthetic datasets (composing to :math:`m\,\varepsilon`).
    scale, shift, target_epsilon
        The mechanism's weights :math:`\alpha_i = \mathrm{clip}(c(1 - r_i) + g)` and its
        calibration (:class:`~pseudopost.PseudoPosterior`).
    censor_epsilon
        Global DP for the whole file (guide: *Whole files*): each part's weighted contribution
        of every record censored to :math:`[-B_k, B_k]`, :math:`\sum_k B_k = B =`
        ``censor_epsilon`` / 2 split equally over the parts, so one synthetic file is
        ``censor_epsilon``-DP (add/remove) on top of the structure stage's
        ``structure_epsilon`` (``total_epsilon``; ``pseudopost.privacy.decomposition.
        PartsCensored`` states the composition). The statement is ``"global given the
        weights"`` always, even with ``shift >= 1`` (every weight 1: the floor and the raking
        are then skipped): the file model's plan (which levels, statuses and predictors each
        part has) is read from the data, and the statement names it. Needs a structure stage
        (not ``structure_epsilon=None``); each part drawn by NUTS on its censored density
        (``weighted_fit`` not used), for small files.
    weight_floor
        Every level of every categorical part keeps at least this share of its weighted share
        (0: the papers' weights; 1: shares kept exactly); ``floor_cost`` also fits without the
        floor and records the epsilon it would have had (``result.epsilon_without_floor``).
    rake_min_weight
        Then lower (never raise) weights so that every level of every categorical, status and
        heap part has its share in the data again (raking downwards: the risk weights move the
        margins towards the typical records; :func:`~pseudopost.risk.weights.level_rake`),
        stopping before the total weight, the weighted likelihood's effective number of records,
        falls below this (``None``, the default: no raking; 0: to convergence). Lowering
        weights lowers the epsilon, and the utility with it: raking to the shares leaves a small
        total (Adult: about 2,000 of 39,074 records, epsilon 56.8 -> 14.2, the weighted
        release's CI overlap 0.652 -> 0.218); ``result.datatree["privacy"].attrs`` has the
        totals (``weight_total_before_rake``, ``weight_total``).
    part_rake
        Give each categorical, status and heap part, and each value part over at most 20
        points (a 0/1 or 0-7 answer), its own weights, the record weights lowered (never
        raised) inside that part alone so that its weighted level shares are the data's
        (default True; :func:`~pseudopost.risk.weights.part_rake`). The risk weights move the
        margins towards the typical records: without it the weighted SLID release has wages
        for 46 % of its records against the data's 56 %. Each part loses only its own levels'
        spread of weights (unlike ``rake_min_weight``, which lowers one weight per record for
        every part at once), and the accountant bounds each record's term of that pseudo
        likelihood, :math:`\alpha_i \max_m |\sum_q r_{iq} f_q|`.
    risk_fit
        How the risk step draws the unweighted posterior whose log-likelihoods score each
        record's risk: ``"laplace"`` (default: each part's Laplace approximation,
        importance-resampled where the Pareto k-hat allows, else its split-normal form's own
        draws (Geweke 1989; a rare level's skewed posterior), at the cost of its mode, Hessian
        and a few log densities per draw: :func:`~pseudopost.fitting.parts.laplace_draws`;
        NUTS for a part whose mode Newton's method did not reach and for a part of fewer than
        ``APPROXIMATE_MIN_PATTERNS`` distinct records per parameter) or ``"nuts"`` (MCMC for
        every part, as the papers). The risk scores only choose
        the weights, which the accountant takes as given, so the approximation changes which
        weights are chosen, never what the stated epsilon means; ``unweighted_epsilon`` and
        ``synthesize(weighted=False)`` describe the approximation. The weighted fit, whose
        draws the accountant and the synthetic data use, is exact MCMC either way
        (``weighted_fit``).
    weighted_fit
        How the weighted pseudo posterior is drawn: ``"imh"`` (default: each part's
        independence Metropolis-Hastings chain proposing from its Laplace approximation, an
        exact MCMC kernel at one log density per draw; NUTS for a part whose approximation is
        too far from its posterior, ``pseudopost.fitting.parts.independence_draws``) or
        ``"nuts"`` (every part; :class:`~pseudopost.PseudoPosterior`).
    draws, tune, chains, workers, seed, progress
        Sampling of every part (threads: ``workers``; Dask tasks when a ``distributed`` client
        is active); one ``seed`` drives fitting and synthesis. The defaults (2 chains x 250
        draws after 100 tuning steps: :data:`DRAWS`, :data:`TUNE`, :data:`CHAINS`) are sized
        for what the mechanism needs from the draws. A part drawn by NUTS is sampled in the
        variables its Laplace approximation whitens, where 100 tuning steps settle the step
        size and trees of at most 7 leapfrog steps decorrelate the draws; a run that has not
        mixed (R-hat above 1.1 or a bulk ESS below 10 % of the draws) is drawn again with a
        low-rank mass matrix and longer tuning
        (``pseudopost.fitting.parts.PartSampler``; the tree's ``sample_stats`` say
        ``rerun``). Synthesis needs one draw per synthetic dataset. The accountant's
        :math:`\Delta_i = \max_m |\alpha_i f(x_i \mid \theta_m)|` is a maximum over the
        weighted fit's M = chains x draws draws; the risk scores
        :math:`L_i = \max_m |f(x_i \mid \theta_m)|`, which only rank the records for the
        weights, over the risk step's chains x min(draws, 100) (``pseudopost.mechanisms.
        pseudo_posterior.core.RISK_DRAWS``). Such maxima grow with M, slowly: for a record whose
        log-likelihood is roughly normal over the posterior with sd :math:`s_i`, the expected
        maximum sits about :math:`s_i \sqrt{2 \ln M}` above its mean (M = 500 -> 3.5
        :math:`s_i`, M = 2000 -> 3.9 :math:`s_i`), so quadrupling the draws raises
        :math:`\varepsilon_x` by well under 10 % on files of thousands of records, where
        :math:`s_i` is small beside the mean. The M used is stated in the privacy statement.
        Each part's R-hat and ESS stay in ``result.diagnostics``.
    sampler, unmodelled
        Deprecated (pseudopost 0.1's whole-record model; removed in 0.3). ``sampler`` is
        ignored: every part is sampled by nutpie on its written-out density. ``unmodelled``:
        columns named in neither ``order``, ``keep`` nor ``drop`` are, with ``"keep"``, released
        as given (``keep``) and, with ``"marginal"``, synthesized from a model with no
        predictors (their row of ``predictor_matrix`` empty).

    Returns
    -------
    SynthesisResult

    Notes
    -----
    Privacy: ``result.epsilon`` is the local :math:`\varepsilon_x = 2\max_i\Delta_i` of the
    whole record (add/remove one record; range-restricted paper eqs. 1-2, 7), every column's
    parts under the record's one weight, per synthetic dataset; the declarations and the
    automatic choices are public (module docstring).
    """
    check_frame(frame, "frame", min_rows=2)
    if censor_epsilon is not None and structure_epsilon is None:
        raise ValueError(
            f"censor_epsilon={censor_epsilon} is a global guarantee only if the file's structure "
            "(bounds, bins, levels) is covered too; structure_epsilon=None reads it from the data "
            "outside any budget. Give a structure_epsilon (the default is 1) or declare the "
            "structure."
        )
    screen_frame(frame, keep=keep, drop=drop)  # names, identifiers, unreachable values
    m = check_positive_int(m, "m")
    order, keep, predictor_matrix = _deprecated_options(
        frame, sampler, unmodelled, order, keep, drop, predictor_matrix
    )
    if isinstance(missing_codes, Codebook):
        codebook, missing_codes = missing_codes, None
    declared_levels = check_levels(levels)
    if declared_levels:  # a copy: the input is never modified
        frame = with_levels(frame, declared_levels, _codes(codebook, missing_codes))
    derived_d = parse_derived(derived)
    if derived_d:  # the definitions hold on the real records, before any work
        named = {*drop, *derived_d}
        check_derived(frame, derived_d, [c for c in frame.columns if c not in named])
    rng = as_generator(seed)
    fit_seed, synth_seed, structure_seed = (int(s) for s in rng.integers(0, 2**31 - 1, size=3))
    structure, data, value_counts = None, frame, {}
    if structure_epsilon is not None:
        structure = _structure(frame, codebook, missing_codes, spikes, bounds, models, grid, bins,
                               order, keep, [*drop, *(derived or {})], structure_epsilon,
                               structure_seed, rules, structural_zeros, knots,
                               uniform_in_bins, hierarchy, predictor_matrix,
                               interactions)  # fmt: skip
        declared = structure.declarations()
        hierarchy = {**declared["hierarchy"], **(hierarchy or {})}
        grid = {**declared["grid"], **(grid or {})}
        bins = {**declared["bins"], **(bins or {})}
        knots_declared = dict(knots or {})
        knots = {**declared["knots"], **knots_declared}
        heaps = {**declared["heaps"], **(heaps or {})}
        value_counts = declared["value_counts"]
        spikes = {**(spikes or {})}
        for c, v in declared["spikes"].items():
            spikes[c] = [*spikes.get(c, ()), *v]
        untouched = structure.untouched(_codes(codebook, missing_codes), spikes)
        # the stage's knots of a column whose every value is a code or a spike have no number
        # to act on (a year that is 2013 on every record, released as a spike): that column
        # enters later columns by its statuses alone, as the plan reads from the data
        knots = {c: v for c, v in knots.items()
                 if c in (knots_declared or {}) or c not in structure.columns
                 or np.any(split_status(frame[c], tuple(untouched[c]), (), name=c)[0] == 0)}  # fmt: skip
        data = structure.apply(frame, untouched, numeric=False)
        if derived_d:  # recomputed from their inputs as the structure stage coded them
            data = derive(data, derived_d, {c: frame[c].dtype for c in derived_d})
    elif bounds:
        raise ValueError(
            "'bounds' are kept by the structure stage; with structure_epsilon=None the choices "
            "are read from the data. Give a structure_epsilon (the default is 1)."
        )
    model = FileModel(
        order=order,
        predictor_matrix=predictor_matrix,
        models=models,
        keep=keep,
        drop=drop,
        missing_codes=missing_codes,
        spikes=spikes,
        transforms=transforms,
        knots=knots,
        interactions=interactions,
        rules=rules,
        structural_zeros=structural_zeros,
        derived=derived,
        hierarchy=hierarchy,
        codebook=codebook,
        grid=grid,
        heaps=heaps,
        bins=bins,
        max_levels=max_levels,
        shift_only=shift_only,
        uniform_in_bins=uniform_in_bins,
        value_counts=value_counts,
        truncate=structure.supports() if structure is not None else None,
    )
    mechanism = PseudoPosterior(
        model,
        scale,
        shift,
        target_epsilon=target_epsilon,
        censor_epsilon=censor_epsilon,
        weight_floor=weight_floor,
        floor_cost=floor_cost,
        workers=workers,
        risk_fit=risk_fit,
        weighted_fit=weighted_fit,
        rake_min_weight=rake_min_weight,
        part_rake=part_rake,
    )
    result = mechanism.fit(
        data, draws=draws, tune=tune, chains=chains, seed=fit_seed, progress=progress
    )
    frames = result.synthesize_datasets(m, seed=synth_seed)
    choices = model.choices(result.prepared)
    if structure is not None:
        choices = structure.annotate(choices, result.prepared.plan)
    return SynthesisResult(frames[0] if m == 1 else frames, choices, result, model, structure)


def _codes(codebook: Codebook | None, missing_codes) -> dict:
    out = dict(codebook.missing_codes) if codebook is not None else {}
    out.update({c: list(v) if isinstance(v, (list, tuple)) else [v]
                for c, v in (missing_codes or {}).items()})  # fmt: skip
    return out


def _structure(frame, codebook, missing_codes, spikes, bounds, models, grid, bins, order, keep,
               drop, structure_epsilon, seed, rules=(), structural_zeros=(),
               knots=None, uniform_in_bins=(), hierarchy=None, predictor_matrix=None,
               interactions=None) -> Structure:  # fmt: skip
    """The structure stage on the synthesized columns with no declared model, grid or bins."""
    check_bounds_columns(frame, bounds)  # before any work: bounds of a text column refused
    ranges = dict(codebook.valid_ranges) if codebook is not None else {}
    ranges.update(dict(bounds or {}))
    named = set(keep) | set(drop)
    columns = list(order) if order is not None else [c for c in frame.columns if c not in named]
    declared = {c for c, v in (models or {}).items() if str(v).lower() != "auto"}
    declared |= set(grid or {}) | set(bins or {})
    free = [c for c in columns if c in frame.columns and c not in declared]
    bound_but_declared = sorted(set(bounds or {}) & declared)
    if bound_but_declared:
        raise ValueError(
            f"'bounds' names column(s) {bound_but_declared}, which declare a model, grid or bins "
            f"of their own; a declared grid takes its range as grid={{c: {{'step': ..., "
            f"'bounds': [low, high]}}}}, and a declared model is not kept inside bounds. Drop "
            f"the declaration (the structure stage then models the column over its range) or "
            f"the bounds."
        )
    parents = parent_candidates(
        frame, [c for c in columns if c in frame.columns], list(keep), declared=list(declared),
        hierarchy=hierarchy, rules=rules, structural_zeros=structural_zeros,
        predictor_matrix=predictor_matrix, interactions=interactions or (),
        order_declared=order is not None,
    )  # fmt: skip
    return estimate_structure(
        frame, free, missing_codes=_codes(codebook, missing_codes), spikes=spikes, bounds=ranges,
        structure_epsilon=structure_epsilon, named_levels=named_levels(rules, structural_zeros),
        rng=as_generator(seed), declared_knots=tuple(knots or ()),
        uniform_in_bins=tuple(uniform_in_bins), parents=parents,
    )  # fmt: skip
