r"""The structure stage of a whole-file release: every choice read from the data, paid for.

Before the pseudo posterior mechanism runs, a whole-file synthesizer makes structural choices
about each numeric column: whether its values are integers, its support (bounds), whether zero
is a point mass, and the bins of its histogram density. Each choice is either **declared**
(a codebook: the dtype, a valid range such as "age 18-89, 89 means 89 or older", missing
codes, spikes) and costs nothing, or **estimated by a differentially private mechanism**
(``pseudopost.privacy.structure``) from the budget ``structure_epsilon``; nothing else is
read from the confidential values. The result, :class:`Structure`, becomes public declarations
of the file model (a bounded integer grid, bins, a spike) and records for every choice where it
came from.

For each synthesized numeric column with no declared model, grid or bins:

0. **A noisy count** of the column's observed values (Laplace), reused by the later steps.
1. **Recording grid.** An integer dtype is declared. A float column's grid is chosen among
   public candidates (whole units, halves, pounds stored in kilograms, quarters, tenths, inches
   stored in metres, hundredths): whole units by a Laplace count of the values off them, then
   the finer grids from a Laplace histogram of the other values by the first finer grid each
   lies on (``_recording_grid``): the
   coarsest grid that holds all but about :data:`INTEGER_SLACK` of its observed values (the few
   off-grid values are then rounded), hundredths all but :data:`FINEST_SLACK`; none holds
   them: continuous. Survey answers heap on their grid (whole years, whole
   dollars), which a density inside bins cannot follow and a CART propensity score sees at once.
2. **Support** :math:`[\ell, h]`. A declared range, or one Laplace histogram over public
   logarithmic cells (up to ten per decade, fewer when the budget and the noisy count are
   small; each integer its own cell below 10 for an integer column): the cells whose noisy
   count reaches :math:`\tau = (\ln K + 5)/\varepsilon` (K cells) and are connected to the
   bulk (or reach :math:`2\tau`), from the lowest to the highest, each end then growing into
   its tail while the next cell reaches
   :math:`(\ln 2 + 4)/\varepsilon` (a small integer of the other sign than the bulk, -1
   beside hours 0-99, only at :math:`\tau`; the small integers from 0 up to the support of a
   nonnegative integer column as one block; ``dp_support``), then
   the recording grid's points inside it. With a budget of a fraction of 1 per column a tail thinner than some :math:`\tau`
   records per cell cannot be seen; its values enter the later columns' designs as the
   support's edge (a DP top- and bottom-code, as agencies topcode ages and incomes), and in
   the column's own model a binned value censors them into its outermost inner bin while a
   grid_ordinal value leaves them out (the file model's ``truncate``: coded to the edge in its
   own model too, the tail became a spike on the edge, 2 % of SLID's synthetic wages at
   39.81), and where the widening overshoots, the
   support has an empty margin whose points the model gives little mass. The exponential
   mechanism's extreme quantiles (``dp_extreme``), which
   this replaced, fail less gracefully at such budgets: a bound lands anywhere among its
   candidates, inside the data (a 0/1 column coded to one value) as readily as far beyond it.
   Declare the codebook's range where one exists (``bounds``): it costs nothing and binds
   exactly. A real value outside a *declared* range is an error.
3. **Model over the support.** A column on a grid whose support holds at most
   ``max_grid_points`` grid points, declared or located (a guessed support, where no cell
   passed, is binned: its empty margin is then a bin or two rather than many levels whose
   cutpoint priors drag mass into it), is modelled over every point of it (the cumulative part,
   ``grid_ordinal``: any marginal shape, heaping included; every point of the support is a level
   whether or not the data hold it, so no level is read from the data). Any other column is a
   histogram density (``binned``) whose ``n_bins`` bins hold roughly equal shares of a noisy
   histogram of the observed values over the candidate grid inside the support (Laplace
   counts, sensitivity 1), plus edges at the outermost cells whose noisy count passes a
   threshold, so that an empty margin of the support is a bin of its own (uniform draws inside
   a bin never carry the last values into it); a gridded column's draws are then rounded to
   its grid (post-processing). On a grid, each end point of the support is a bin of its own
   (``_end_bins``): top- and bottom-codes pile records there.
4. **Zero as a spike** (binned columns whose support holds 0): zero is a point mass of its own
   (synthpop's ``semicont``) when the noisy count of exact zeros is at least
   :data:`SPIKE_SHARE` of the noisy count of observed values.
5. **Frequent values** (binned columns on a recording grid): single grid values that many
   records hold (amounts read off a tax table, a benefit rate, a price: Adult's capital gains
   of 15,024 and 7,688 hold a fifth of its nonzero gains) become spikes, point masses
   of their own (``_frequent_values``): Laplace partition selection over the observed grid
   values, :math:`(\varepsilon, \delta)`-DP with ``structure_delta``, so a value is released
   only when its count is of order :math:`\tau = 1 + \ln(1/(2\delta))/\varepsilon` (some
   330 records at Adult's per-column budget). The step runs only when :math:`\tau` is at most
   ``VALUES_MIN_SHARE`` of the noisy count of the column's other values (otherwise its
   budget stays with the bins). Inside a bin, uniform draws would spread such a pile over the
   bin, which a CART propensity score sees at once.
6. **Heaps** (binned columns on a recording grid): the multiples of the grid step where the
   values pile up (whole dollars on a cent grid, thousands in incomes), from one Laplace
   histogram of the values' heap labels (``_heaps``; a heap is judged against the values off
   the coarser heaps, so half years beside whole ones are found); the file model then has a
   heap part over the labels each bin holds and snaps each draw to a grid point of its drawn
   label inside its bin (``pseudopost.models.file.heaps``). The bins' edges move to the
   nearest boundaries between the finest heap's catchments (``_heap_edges``,
   post-processing), so that each bin holds whole catchments.

7. **A many-level column's parent** (``pseudopost.mechanisms.parents``; a categorical column of
   more than :data:`PARENT_LEVELS` levels, which the file model otherwise draws without
   predictors and cuts off from every other column; :func:`parent_candidates`): one of the other categorical columns of at most
   :data:`PARENT_LEVELS` public levels, or none, chosen by the exponential mechanism
   (``pseudopost.privacy.structure.dp_parent``, :data:`PARENT_EPSILON` each) scored by
   the conditional log-likelihood of the column given the candidate, penalised by its cells.
   An occupation code's recode into major groups, if the file holds one, wins by far (GSS
   wages: 533 codes in 11 groups). The column then becomes the candidate's child in the file
   model's ``hierarchy`` (:mod:`pseudopost.models.file.nesting`: drawn after it, one Dirichlet
   per parent level), as a declared hierarchy would make it (a declaration overrides).

**Inside a bin.** By default a binned column on a recording grid learns the shares of the grid
points inside each bin in the mechanism (``pseudopost.models.file.bin_points``: a Dirichlet
per bin, paid for by the mechanism's epsilon like any other term of a record's likelihood), so
heaps need no budget here and step 6 runs only for the columns named in ``uniform_in_bins``
(drawn uniformly inside each bin). Step 5 runs either way: a frequent value released as a spike
is a status level of its own, whose share follows the predictors (a pile one group holds),
where a bin's shares over its points do not.

**Privacy.** Every step is a pure :math:`\varepsilon`-DP release for add/remove neighbours
(Laplace counts and histograms: Dwork et al. 2006), so the
stage is :math:`\varepsilon_s`-DP with :math:`\varepsilon_s` the sum of its charges (basic
composition; each column in turn, those with a declared range first, gets the budget left
divided by the columns still to come, so what a column does not spend goes to the later ones,
and each column's is split over its steps). The mechanism's local :math:`\varepsilon_x` is computed given the chosen structure (the coded data
are a record-wise map of the data, so add/remove neighbours stay neighbours); the release's
statement is :math:`\varepsilon_s + \varepsilon_x` per synthetic dataset (sequential
composition; guide: *Whole files*). Categorical levels come from the dtype (pandas categories,
booleans: declared) or, for a text column, from **Laplace partition selection** over its sorted
observed levels (Gopi et al. 2020; Desfontaines et al. 2022): a level is released when its
noisy count passes a threshold, :math:`(\varepsilon, \delta)`-DP with ``structure_delta`` per
column; levels named in declared rules or structural zeros are public and always kept; a cell
holding a level not released takes the level ``"(other)"``. Levels are the cells as the column
holds them (an object column's ``True`` is not ``"True"``, its ``1`` not ``"1"``:
``cell_key``), and a declared missing code is no level: public, it costs nothing and its
cells stay the code.
Partition selection (text levels, frequent values) is the stage's only approximate-DP step:
its delta is the sum of the deltas of the columns that run it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pseudopost.mechanisms.parents import (
    PARENT_EPSILON,
    PARENT_LEVELS,
    ParentStructure,
    parent_candidates,
    select_parent,
)
from pseudopost.models.file.grid import STORAGE_TOLERANCE
from pseudopost.models.file.nesting import DECLARED
from pseudopost.models.file.plan import FilePlan
from pseudopost.models.status import cell_key, column_kind, integer_range, split_status
from pseudopost.privacy.structure import (
    SMALLEST_MAGNITUDE,
    SUPPORT_TAIL_MARGIN,
    StructureCharge,
    candidate_grid,
    compose,
    dp_support,
    noisy_count,
    partition_selection,
    partition_threshold,
    support_resolution,
    support_threshold,
)

__all__ = [
    "FINEST_SLACK",
    "INTEGER_SLACK",
    "MAX_GRID_POINTS",
    "N_BINS",
    "OTHER_LEVEL",
    "PARENT_EPSILON",
    "PARENT_LEVELS",
    "SPIKE_SHARE",
    "STRUCTURE_DELTA",
    "STRUCTURE_EPSILON",
    "ColumnStructure",
    "LevelStructure",
    "ParentStructure",
    "Structure",
    "StructureWarning",
    "estimate_structure",
    "parent_candidates",
]

#: default budget of the structure stage (pure epsilon, add/remove)
STRUCTURE_EPSILON = 1.0
#: delta of each text column's partition selection (the only approximate-DP step)
STRUCTURE_DELTA = 1e-7
#: a column recorded on a grid (integers, tenths, cents) with at most this many grid points in
#: its support is modelled over them (a score, a count, ages, years of schooling in tenths); a
#: wider one by bins, so that an empty margin between the data and a loose DP bound is a few wide
#: bins rather than many empty levels
#: public candidate recording grids of a float column, (step, decimals), coarsest first: whole
#: units, halves, pounds in kilograms, quarters, tenths, inches in metres, hundredths
_STEPS = ((1.0, 0), (0.5, 1), (0.4536, 2), (0.25, 2), (0.1, 1), (0.0254, 2), (0.01, 2))


def _on_grid(x: np.ndarray, step: float, digits: int) -> np.ndarray:
    """Each value's nearest point of the grid round(k * step, digits)."""
    return np.round(np.round(np.asarray(x, dtype=np.float64) / step) * step, digits)


def _off_grid(x: np.ndarray, step: float, digits: int) -> int:
    """How many values are not on the grid round(k * step, digits) (decimals stored in single
    precision count as on it: ``STORAGE_TOLERANCE``)."""
    on = _on_grid(x, step, digits)
    return int(np.count_nonzero(np.abs(on - x) > STORAGE_TOLERANCE * np.maximum(1.0, np.abs(x))))


#: the finer decimal grids (nested but for quarters and tenths, which share only the halves)
#: and the unit-conversion grids (pounds in kilograms, inches in metres), among :data:`_STEPS`
_DECIMAL = ((0.5, 1), (0.25, 2), (0.1, 1), (0.01, 2))
_CONVERSION = ((0.4536, 2), (0.0254, 2))


def _first_decimal(x: np.ndarray) -> np.ndarray:
    """Each value's category among :data:`_DECIMAL`: the index of the first grid it lies on,
    or ``len(_DECIMAL)`` for none (a value off the integers: halves, quarters off the halves,
    tenths off the halves, other hundredths, finer)."""
    cat = np.full(x.size, len(_DECIMAL), dtype=np.int64)
    left = np.ones(x.size, dtype=bool)
    for k, (step, digits) in enumerate(_DECIMAL):
        on = left & (np.abs(_on_grid(x, step, digits) - x)
                     <= STORAGE_TOLERANCE * np.maximum(1.0, np.abs(x)))  # fmt: skip
        cat[on] = k
        left &= ~on
    return cat


def _inside(fine: tuple, coarse: tuple) -> bool:
    """Whether every point of grid ``fine`` (step, digits) lies on grid ``coarse`` (checked on
    its first 2,000 points: public facts)."""
    pts = _on_grid(np.arange(-1000, 1000) * fine[0], *fine)
    return _off_grid(pts, *coarse) == 0


def _recording_grid(x, noisy_n, epsilon, rng) -> tuple[int | None, float | None]:
    r"""A float column's recording grid among :data:`_STEPS`, from two Laplace releases that
    spend ``epsilon`` together (pure DP, add/remove one record; Dwork et al. 2006).

    1. **Whole units** (an integer column stored as floats, as a CSV with empty cells gives
       it): a Laplace count :math:`\tilde o` of the values off the integer grid (sensitivity
       1) at :data:`INTEGER_TEST_SHARE` of ``epsilon`` (scale :math:`b_1`), taken when
       :math:`\tilde o \le \kappa\tilde n + m b_1` (:math:`\kappa` = :data:`INTEGER_SLACK`,
       :math:`\tilde n` the column's noisy count, m = :data:`INTEGER_MARGIN`): an integer
       column read as floats keeps its integers with probability at least
       :math:`1 - \tfrac12 e^{-m}` = 93 %, whatever its budget.
    2. Otherwise, with the rest of ``epsilon``, one Laplace vector (L1 sensitivity 3: a record
       is in at most one of the first five cells and off each conversion grid or not): the
       values off the integers by the first of halves, quarters, tenths and hundredths each
       lies on (or none), and the values off each unit-conversion grid (pounds in kilograms,
       inches in metres, which the decimal grids do not nest). As post-processing each finer
       grid's off-grid count is the noisy cells of the decimal grids not inside it, or its own
       noisy count, and the coarsest grid whose count is at most :math:`\kappa\tilde n` is
       taken (hundredths: with :data:`FINEST_MARGIN` noise scales more and the slack
       :data:`FINEST_SLACK`, against "continuous"); none: continuous.

    One vector of all seven off-grid counts (L1 sensitivity 7), which this replaced, put noise
    of scale :math:`7/\varepsilon` on the whole-units test: on a file of 2,044 records and
    five columns (openintro ``gss2010``, about 1,150 observed values a column at 0.04) it took
    the integers of all three of its integer-valued columns for grids of 0.1, 0.25 and 0.4536,
    and their synthetic values were not whole numbers (59 % kept per column; 93 % now). A grid
    missing values is rarely taken (its values would be rounded onto it), at the price of a
    finer grid than needed, or none, when the budget is small."""
    e1 = INTEGER_TEST_SHARE * epsilon
    b1 = 1.0 / e1
    step0, digits0 = _STEPS[0]
    off = np.abs(_on_grid(x, step0, digits0) - x) > STORAGE_TOLERANCE * np.maximum(1.0, np.abs(x))
    noisy_off = float(np.count_nonzero(off)) + rng.laplace(0.0, b1)
    if noisy_off <= INTEGER_SLACK * noisy_n + INTEGER_MARGIN * b1:
        return digits0, step0
    b2 = (len(_CONVERSION) + 1) / (epsilon - e1)
    cells = np.bincount(_first_decimal(x[off]), minlength=len(_DECIMAL) + 1).astype(np.float64)
    counts = np.concatenate([cells, [_off_grid(x, *g) for g in _CONVERSION]])
    noisy = counts + rng.laplace(0.0, b2, size=counts.size)
    for step, digits in _STEPS[1:]:
        grid = (step, digits)
        if grid in _CONVERSION:
            found = noisy[len(_DECIMAL) + 1 + _CONVERSION.index(grid)]
        else:
            outside = [k for k, g in enumerate(_DECIMAL) if not _inside(g, grid)]
            found = float(noisy[[*outside, len(_DECIMAL)]].sum())
        finest = grid == _STEPS[-1]
        threshold = (FINEST_SLACK if finest else INTEGER_SLACK) * noisy_n
        margin = FINEST_MARGIN * b2 if finest else 0.0
        if found <= threshold + margin:
            return digits, step
    return None, None


MAX_GRID_POINTS = 301
#: bins of a histogram-density column
N_BINS = 32
#: a float column is integer-valued when at most this share of its observed values is not
INTEGER_SLACK = 0.03
#: the share of the recording grid's budget that the whole-units test spends (the finer grids'
#: histogram gets the rest)
INTEGER_TEST_SHARE = 0.5
#: noise scales added to the whole-units test's threshold: an integer column read as floats
#: stays integer with probability at least 1 - e^{-2}/2 = 93 % however small its budget, while
#: a column with more than the slack plus two noise scales off the integers is not rounded
INTEGER_MARGIN = 2.0
#: noise scales added to the finest candidate grid's threshold (against "continuous"); the
#: other finer grids get none (rounding values onto a grid they are not on costs more than a
#: finer grid than needed)
FINEST_MARGIN = 2.0
#: the share of the observed values that may lie off the finest candidate grid (hundredths)
#: when it is taken: its alternative is "continuous", which loses every heap, while rounding a
#: value onto hundredths moves it by at most 0.005. A household income in thousands (COUNT
#: ``rwm1984``, 3,874 records) holds 81 % of its values on tenths and 10 % off hundredths (a
#: few computed ones); as continuous its draws spread uniformly inside bins, its heaps at 3.0,
#: 2.0 and 2.5 (267, 240 and 220 records) were gone and its one-way S_pMSE was 60.6 (the
#: file's 21.8); on hundredths the bin-points part keeps them: 7.6 (the file's 3.97)
FINEST_SLACK = 0.15


class StructureWarning(UserWarning):
    """A choice of the structure stage that may miss the data (a support no cell located)."""


#: appended to a support's source when no cell passed (:class:`~pseudopost.privacy.structure.
#: SupportBounds`)
UNLOCATED = "; no cell passed: the largest noisy run of cells, a guess"
#: zero is a spike when at least this share of the observed values are exact zeros
SPIKE_SHARE = 0.02
#: shares of a numeric column's budget: noisy count, recording grid, support, zero spike, heaps;
#: a binned column's knots and bins get the rest (a grid column's knots get it)
_SHARES = {"count": 0.05, "integer": 0.2, "support": 0.45, "spike": 0.05, "heaps": 0.1}
#: the share of a binned column's budget left after its heaps and knots that its frequent
#: values take (the bins get the rest)
VALUES_SHARE = 0.5
#: the frequent-values step runs only when a value holding this share of the column's other
#: values (its noisy count) would pass partition selection's threshold
VALUES_MIN_SHARE = 0.2
#: candidate heaps of a binned column on a recording grid, in grid steps, coarsest first: each
#: divides the one before, so every grid point has one label (its coarsest multiple)
HEAP_MULTIPLES = (100000, 50000, 10000, 5000, 1000, 500, 100, 50, 10, 5)
#: a heap is kept when its noisy count passes this many times the count a smooth density puts
#: on its points among the values off the coarser kept heaps (``_heaps``), at least
#: :data:`HEAP_MIN_SHARE` of the values, by :data:`HEAP_MARGIN` noise scales
HEAP_RATIO = 1.5
HEAP_MIN_SHARE = 0.01
HEAP_MARGIN = 3.0


@dataclass(frozen=True)
class ColumnStructure:
    """The structure of one numeric column and where each choice came from.

    ``support`` is the closed interval its synthetic values lie in; ``model`` the file model's
    family (``grid_ordinal`` over the integers of the support, or ``binned`` over ``bins``);
    ``sources`` maps each choice (``integer``, ``support``, ``spike``, ``bins``) to
    ``"declared"`` or ``"DP (epsilon e)"``; ``charges`` the DP releases made for it.
    """

    column: str
    integer: bool
    support: tuple[float, float]
    model: str
    bins: tuple[float, ...] = ()
    spikes: tuple[float, ...] = ()
    sources: dict = field(default_factory=dict)
    charges: tuple[StructureCharge, ...] = ()
    #: the recording precision: values on the grid of ``step`` rounded to ``digits`` decimals
    #: (0: integers; None: none)
    digits: int | None = None
    step: float | None = None
    #: knots of the column's linear-spline terms in later columns' models (noisy quantiles)
    knots: tuple[float, ...] = ()
    #: multiples of the grid step where the values heap (digit preference), coarsest first
    heaps: tuple[int, ...] = ()
    #: the noisy count of the values its value part models (observed, neither a code nor a
    #: spike: the first step's count less a DP spike's, post-processing; frequent values found
    #: later are not taken off), None when no count was released
    values_count: float | None = None

    @property
    def epsilon(self) -> float:
        return float(sum(c.epsilon for c in self.charges))

    def declarations(self) -> dict:
        """The column's public declarations for the file model: ``grid``, ``bins``, ``spikes``."""
        out: dict = {}
        d = 0 if self.integer and self.digits is None else self.digits
        step = self.step if self.step is not None else (None if d is None else 10.0**-d)
        grid = None
        if d == 0 and step == 1.0:
            grid = {"step": 1}
        elif d is not None:
            grid = {"step": step, "digits": d}
        if self.model == "grid_ordinal":
            out["grid"] = {**(grid or {"step": 1}), "bounds": [self.support[0], self.support[1]]}
        else:
            out["bins"] = list(self.bins)
            if grid is not None:
                out["grid"] = grid  # draws rounded to the recording grid (post-processing)
        if self.spikes:
            out["spikes"] = list(self.spikes)
        if self.knots:
            out["knots"] = list(self.knots)
        if self.heaps:
            out["heaps"] = list(self.heaps)
        if self.values_count is not None:
            out["value_counts"] = self.values_count
        return out

    def describe(self) -> str:
        lo, hi = self.support
        what = ("integers" if self.integer and (self.step or 1.0) == 1.0 else
                "values" if self.digits is None else f"values on a grid of {self.step:g}")  # fmt: skip
        body = (
            f"{what} in [{lo:g}, {hi:g}], each grid point a level"
            if self.model == "grid_ordinal"
            else f"{what} in [{lo:g}, {hi:g}], histogram density of {len(self.bins) - 1} bins"
        )
        if self.spikes:
            body += "; spikes at " + ", ".join(f"{v:g}" for v in self.spikes)
        if self.heaps:
            body += "; heaps at multiples of " + ", ".join(
                f"{m * (self.step or 1.0):g}" for m in self.heaps
            )
        if self.knots:
            body += "; knots at " + ", ".join(f"{k:g}" for k in self.knots)
        return body


#: the level a text column's cells take when their own level was not released
OTHER_LEVEL = "(other)"
#: the share of the records above which partition selection's threshold makes the stage warn
#: (``_warn_coarse_levels``): a column of ten equally common levels may then lose every one
COARSE_LEVELS_SHARE = 0.1


def _span(a: float, b: float, spec: str) -> str:
    """``a-b`` in the format ``spec``, or ``a`` alone when both read the same."""
    lo, hi = format(a, spec), format(b, spec)
    return lo if lo == hi else f"{lo}-{hi}"


#: the share of the records above which the DP support's tail threshold makes the stage warn
#: (``_warn_thin_tails``)
THIN_TAIL_SHARE = 0.01


def _thin_tails(epsilon: float, n: int) -> bool:
    """Whether a DP support at ``epsilon`` can miss a tail whose cell beside the data holds
    more than :data:`THIN_TAIL_SHARE` of the ``n`` records."""
    return n > 0 and epsilon > 0 and (
        support_threshold(2, epsilon, SUPPORT_TAIL_MARGIN) > THIN_TAIL_SHARE * n)


def _warn_thin_tails(thin: list, n: int) -> None:
    r"""One :class:`StructureWarning` naming the numeric columns whose DP support
    (:func:`~pseudopost.privacy.structure.dp_support`) grows into a tail only where the tail's
    cell holds about :math:`(\ln 2 + m)/\varepsilon` records
    (:data:`~pseudopost.privacy.structure.SUPPORT_TAIL_MARGIN`), more than
    :data:`THIN_TAIL_SHARE` of the ``n`` records: a thinner tail is cut (censored into the
    outermost inner bin or left out of the column's model, coded to the edge in the later
    columns' designs). Public facts only (the budgets and the number of records). On an
    800-record sample of the German credit file (no codebook) the threshold was about 210
    records, and the 29 records with 3 or 4 existing credits were cut (2 in the later
    columns' designs)."""
    taus = [support_threshold(2, e, SUPPORT_TAIL_MARGIN) for _, e in thin]
    names = ", ".join(repr(c) for c, _ in thin)
    shares = _span(min(min(taus) / n, 1.0), min(max(taus) / n, 1.0), ".0%")
    warnings.warn(
        f"{len(thin)} numeric column(s) have a support budget too small for thin tails: a tail "
        f"whose cell holds fewer than about {_span(min(taus), max(taus), '.0f')} records "
        f"({shares} of the {n} records) may "
        f"be cut (no synthetic value beyond the support's edge): {names}. Declare their codebook "
        f"ranges (bounds={{column: (low, high)}}: no budget), or raise structure_epsilon.",
        StructureWarning,
        stacklevel=3,
    )


def _coarse(epsilon: float, delta: float, n: int) -> bool:
    """Whether partition selection at ``epsilon`` can release only levels held by more than
    :data:`COARSE_LEVELS_SHARE` of the ``n`` records."""
    return n > 0 and delta > 0 and epsilon > 0 and (
        partition_threshold(epsilon, delta) > COARSE_LEVELS_SHARE * n)


def _warn_coarse_levels(coarse: list, delta: float, n: int) -> None:
    r"""One :class:`StructureWarning` naming the text columns whose partition selection could
    release only levels held by more than :data:`COARSE_LEVELS_SHARE` of the ``n`` records
    (:func:`_coarse`; its threshold :math:`\tau`,
    :func:`~pseudopost.privacy.structure.partition_threshold`), so that every rarer level's
    cells became :data:`OTHER_LEVEL`, with the number of levels each released. Public facts
    only: the budgets, delta, the number of records (the synthetic file's size) and the
    released levels. On an 800-record sample of the German credit file (21 columns, no
    codebook) the threshold was 292 records, and 12 of its 14 text columns released one level
    or none."""
    taus = [partition_threshold(e, delta) for _, e in coarse]
    eps = [e for _, e in coarse]
    each = ", ".join(f"{g.column!r} {len(g.levels)}" for g, _ in coarse)
    at = _span(min(eps), max(eps), ".3g")
    warnings.warn(
        f"{len(coarse)} text column(s) have a structure budget too small for their levels: "
        f"at epsilon {at} each (delta {delta:.3g}) partition "
        f"selection releases only levels held by more than about {min(taus):.0f} records "
        f"({min(min(taus) / n, 1.0):.0%} of the {n} records), and every other cell becomes "
        f"{OTHER_LEVEL!r}. Levels released: {each}. Declare their levels (a pandas "
        f"Categorical, or the codebook's value labels: no budget), or raise structure_epsilon.",
        StructureWarning,
        stacklevel=3,
    )


@dataclass(frozen=True)
class LevelStructure:
    """The levels of a text column released by partition selection (module docstring):
    ``levels`` sorted, the levels named in declared rules and zeros among them; a cell holding
    another level takes :data:`OTHER_LEVEL` before the mechanism runs. Each level is held as
    the column holds it (a string, a bool, a number: ``cell_key``'s canonical form), not as its
    text, so that an object column of booleans or integers keeps its released levels."""

    column: str
    levels: tuple
    charges: tuple[StructureCharge, ...] = ()

    @property
    def epsilon(self) -> float:
        return float(sum(c.epsilon for c in self.charges))


@dataclass(frozen=True)
class Structure:
    """The structure stage's output (module docstring): per numeric column a
    :class:`ColumnStructure`, per text column a :class:`LevelStructure`, the budget and what
    was spent."""

    columns: dict[str, ColumnStructure]
    budget: float
    levels: dict[str, LevelStructure] = field(default_factory=dict)
    delta: float = 0.0
    parents: dict[str, ParentStructure] = field(default_factory=dict)

    @property
    def charges(self) -> tuple[StructureCharge, ...]:
        return tuple(c for s in (*self.columns.values(), *self.levels.values(),
                                 *self.parents.values()) for c in s.charges)  # fmt: skip

    @property
    def epsilon(self) -> float:
        """The stage's epsilon: the sum of its charges (basic composition), at most the budget."""
        return float(compose(self.charges)[0]) if self.charges else 0.0

    @property
    def spent_delta(self) -> float:
        """The stage's delta: the sum of its charges' (partition selection's) deltas."""
        return float(compose(self.charges)[1]) if self.charges else 0.0

    def declarations(self) -> dict[str, dict]:
        """``grid``, ``bins``, ``spikes``, ``knots``, ``heaps`` and ``hierarchy`` declarations of
        every column (file-model form), and ``value_counts``: the released counts of each
        column's modelled values (:attr:`ColumnStructure.values_count`)."""
        out: dict[str, dict] = {"grid": {}, "bins": {}, "spikes": {}, "knots": {}, "heaps": {},
                                "hierarchy": {}, "value_counts": {}}  # fmt: skip
        for c, s in self.columns.items():
            for key, value in s.declarations().items():
                out[key][c] = value
        for c, p in self.parents.items():
            if p.parent is not None:
                out["hierarchy"][c] = p.parent
        return out

    def apply(
        self, frame: pd.DataFrame, codes: Mapping[str, Sequence] | None = None,
        numeric: bool = True,
    ) -> pd.DataFrame:  # fmt: skip
        """A copy of ``frame`` with each text column's unreleased levels coded to
        :data:`OTHER_LEVEL` and (``numeric``) each numeric column's observed values coded into
        its support (values below or above a DP bound become the bound); codes, spikes and
        empty cells untouched. ``frame`` is never modified. The whole-file synthesizer leaves
        the numbers to the file model's ``truncate`` (:meth:`supports`) instead, which keeps a
        tail beyond a bound out of the column's own model rather than piling it on the bound."""
        out = frame.copy()
        codes = codes or {}
        for c, lv in self.levels.items():
            col = out[c]
            # cells and levels compared by their keys: True is not "True" nor 1, 1 is not "1"
            keep = {cell_key(v) for v in (*lv.levels, *codes.get(c, ()))}
            cells = col.to_numpy(dtype=object)
            blank = np.fromiter((isinstance(v, str) and v == "" for v in cells), bool, len(cells))
            empty = col.isna().to_numpy() | blank
            pairs = zip(cells, empty, strict=True)
            held = np.fromiter((e or cell_key(v) in keep for v, e in pairs), bool, len(cells))
            drop = ~empty & ~held
            if drop.any():
                out[c] = col.where(~drop, OTHER_LEVEL)  # the column keeps its dtype
        for c, s in self.columns.items() if numeric else ():
            col = out[c]
            v = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            code_mask = np.isin(v, np.asarray(list(codes.get(c, ())), dtype=np.float64))
            lo, hi = s.support
            low, high = (v < lo) & ~code_mask, (v > hi) & ~code_mask
            if not (low.any() or high.any()):
                continue
            v = np.where(low, lo, np.where(high, hi, v))
            if pd.api.types.is_integer_dtype(col.dtype):
                out[c] = pd.array(np.where(np.isnan(v), 0, v).astype(np.int64),
                                  dtype=col.dtype)  # fmt: skip
                if col.isna().any():
                    out.loc[col.isna(), c] = pd.NA
            else:
                out[c] = v.astype(col.dtype if col.dtype.kind == "f" else np.float64)
        return out

    def untouched(
        self, codes: Mapping[str, Sequence], spikes: Mapping[str, Sequence]
    ) -> dict[str, list]:
        """The cells :meth:`apply` leaves as they are, per column it codes: a numeric column's
        declared codes and spikes, a text column's declared codes (public: no level of
        partition selection, never :data:`OTHER_LEVEL`)."""
        out = {c: [*codes.get(c, ()), *spikes.get(c, ())] for c in self.columns}
        return out | {c: list(codes.get(c, ())) for c in self.levels}

    def supports(self) -> dict[str, tuple[float, float]]:
        """Numeric column -> its support (declared or DP), the file model's ``truncate``."""
        return {c: tuple(s.support) for c, s in self.columns.items()}

    def table(self) -> pd.DataFrame:
        """One row per numeric column: the support, the model and the source of each choice."""
        rows = []
        for c, s in self.columns.items():
            rows.append(
                {
                    "column": c,
                    "structure": s.describe(),
                    "integer": s.sources.get("integer", ""),
                    "support": s.sources.get("support", ""),
                    "spike": s.sources.get("spike", ""),
                    "values": s.sources.get("values", ""),
                    "bins": s.sources.get("bins", ""),
                    "knots": s.sources.get("knots", ""),
                    "heaps": s.sources.get("heaps", ""),
                    "structure epsilon": s.epsilon,
                }
            )
        for c, lv in self.levels.items():
            rows.append(
                {
                    "column": c,
                    "structure": f"{len(lv.levels)} levels released (others: {OTHER_LEVEL!r})",
                    "levels": f"DP partition selection (epsilon {lv.epsilon:.3g}, "
                    f"delta {sum(ch.delta for ch in lv.charges):.3g})",
                    "structure epsilon": lv.epsilon,
                }
            )
        for c, p in self.parents.items():
            rows.append({"column": c, "structure": p.describe(), "parent": p.describe(),
                         "structure epsilon": p.epsilon})  # fmt: skip
        names = ["column", "structure", "integer", "support", "spike", "values", "bins", "knots",
                 "heaps", "levels", "parent", "structure epsilon"]  # fmt: skip
        return pd.DataFrame(rows, columns=names)

    def annotate(self, choices: pd.DataFrame, plan: FilePlan) -> pd.DataFrame:
        """The file model's ``choices`` with this stage's :meth:`table` merged in and each
        reason saying what the stage chose (its model of a numeric column, its spikes, its bins
        as DP rather than declared, a parent chosen by the exponential mechanism); the plan's
        notes kept. ``plan``: the file model's plan of the coded records (its column plans by
        name). One text for :func:`pseudopost.synthesize` and the whole-file release alike."""
        plans = {p.name: p for p in plan.plans}
        out = choices.merge(self.table(), on="column", how="left")
        for c, s in self.columns.items():
            at = out.column == c
            if not at.any():
                continue
            old, plan = out.loc[at, "reason"].iloc[0], plans.get(c)
            why = _STRUCTURE_REASON[s.model] + (
                "; spikes (DP) at " + ", ".join(f"{v:g}" for v in s.spikes) if s.spikes else "")
            if plan is not None and plan.nesting is not None:  # its model the nesting
                why = "the structure stage: its support and grid; " + old
            elif plan is not None and old.startswith(plan.choice.reason):  # the notes kept
                why += old[len(plan.choice.reason):]
                dp = s.sources.get("bins", "")
                if plan.bins is not None and dp.startswith("DP"):  # the stage's, not declared
                    text = plan.bins.describe()
                    why = why.replace(f"{text} (declared)", f"{text} ({dp})")
            out.loc[at, "reason"] = why
        for c, par in self.parents.items():
            at = out.column == c
            reason = out.loc[at, "reason"].iloc[0]
            if par.parent is not None:  # chosen, not declared (declared ones are no candidates)
                reason = reason.replace(f"({DECLARED})", f"(the structure stage: {par.how()})")
            else:
                reason += f"; parent: {par.describe()}"
            out.loc[at, "reason"] = reason
        return out

    def to_dict(self) -> dict:
        return {
            "budget": self.budget,
            "epsilon": self.epsilon,
            "neighbouring": "add/remove one record",
            "accounting": ("basic composition over the charges (sum of epsilons, sum of deltas); "
                           "every charge pure epsilon-DP but partition selection's (epsilon, delta)"),
            "delta": self.spent_delta,
            "levels": {
                c: {
                    "levels": [str(v) for v in lv.levels],
                    "charges": [ch.to_dict() for ch in lv.charges],
                }
                for c, lv in self.levels.items()
            },
            "parents": {
                c: {
                    "parent": p.parent,
                    "candidates": list(p.candidates),
                    "charges": [ch.to_dict() for ch in p.charges],
                }
                for c, p in self.parents.items()
            },
            "columns": {
                c: {
                    "structure": s.describe(),
                    "support": list(s.support),
                    "integer": s.integer,
                    "model": s.model,
                    "sources": dict(s.sources),
                    "charges": [ch.to_dict() for ch in s.charges],
                }
                for c, s in self.columns.items()
            },
        }


def _dp(epsilon: float, delta: float = 0.0) -> str:
    return f"DP (epsilon {epsilon:.3g}" + (f", delta {delta:g})" if delta else ")")


def _observed(series: pd.Series, codes: tuple, spikes: tuple, name: str) -> np.ndarray:
    status, values, _ = split_status(series, codes, spikes, name=name)
    return np.asarray(values, dtype=np.float64)[status == 0]


def _declared_range(name: str, value: object) -> tuple[float, float]:
    """A declared valid range ``(low, high)``; one end may be open (``None`` or an infinity:
    ``(16, None)``, "16 and over"), the other then estimated with the support (:func:`_column`).
    """
    def end(v, sign):
        if v is None:
            return sign * math.inf
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            return None
        v = float(v)
        return v if math.isfinite(v) or v == sign * math.inf else None

    ends = (end(value[0], -1), end(value[1], 1)) if (
        isinstance(value, (tuple, list)) and len(value) == 2) else (None, None)  # fmt: skip
    ok = (
        None not in ends
        and (math.isfinite(ends[0]) or math.isfinite(ends[1]))
        and ends[0] < ends[1]
    )
    if not ok:
        raise ValueError(
            f"The bounds of column {name!r} must be a (low, high) pair of numbers with low < high "
            f"(the codebook's valid range); one end may be open (None or an infinity: (16, None) "
            f"for '16 and over'), not both. Got {value!r}."
        )
    return ends


def _one_sided(declared: tuple[float, float] | None) -> bool:
    """Whether a declared range has an open end (the other estimated with the support)."""
    return declared is not None and not (math.isfinite(declared[0]) and math.isfinite(declared[1]))


#: how the messages name a column kind that bounds do not apply to
_NOT_NUMERIC = {
    "string": "a text column",
    "object": "a text column",
    "category": "a categorical column (a pandas Categorical, whose levels are its values)",
    "bool": "a boolean column",
}


def check_bounds_columns(frame: pd.DataFrame, bounds: Mapping | None) -> None:
    """Refuse ``bounds`` naming a column of ``frame`` that is not numeric: a valid range
    ``(low, high)`` bounds a numeric column's values, and the structure stage would otherwise
    ignore it in silence (a text column's levels are selected, a categorical or boolean
    column's are declared by its dtype). Columns not in the frame are left to the caller's own
    check.

    Raises
    ------
    ValueError
        Naming the column, its kind and dtype, what bounds apply to and the fix.
    """
    found = bounds_not_numeric(frame, bounds)
    if found is not None:
        c, what = found
        raise ValueError(
            f"'bounds' declares a valid range for column {c!r}, which is {what}; bounds apply "
            f"only to numeric columns (integer or float values: the codebook's range of their "
            f"values). Remove {c!r} from bounds (a text column's levels are declared by "
            f"levels={{{c!r}: [...]}} or by making it a pandas Categorical), or give the column "
            f"its numeric values."
        )


def bounds_not_numeric(frame: pd.DataFrame, bounds: Mapping | None) -> tuple[str, str] | None:
    """The first column named by ``bounds`` that is in ``frame`` but not numeric, with its kind
    and dtype as a message says them (``"a text column (dtype object)"``); None if none."""
    for c in dict(bounds or {}):
        if c not in frame.columns:
            continue
        kind = column_kind(frame[c])
        if kind not in ("integer", "float"):
            what = _NOT_NUMERIC.get(kind, f"a {kind} column")
            return c, f"{what} (dtype {frame[c].dtype})"
    return None


#: a float column is refused when at least half of its nonzero values are of magnitude below
#: this, a decade above the public cells' resolution (``SMALLEST_MAGNITUDE``, 1e-6)
RESOLUTION_FLOOR = 10.0 * SMALLEST_MAGNITUDE


def _check_resolution(series: pd.Series, codes: tuple, spikes: tuple, name: str) -> None:
    """Refuse a float column at least half of whose nonzero values are of magnitude below
    :data:`RESOLUTION_FLOOR` (1e-5), before any release. The public support cells and
    candidate grids stop at :data:`~pseudopost.privacy.structure.SMALLEST_MAGNITUDE` (1e-6):
    one cell :math:`[-10^{-6}, 10^{-6})` holds 0 and every value below it, and the
    whole-units test reads such values as integers (their distance to 0 is within the storage
    tolerance), so a column of values of 1e-6, 1e-9 or 1e-12 was released as zeros; one a
    decade above shares its support with that cell, whose grid point 0 a recording grid taken
    by noise kept as the whole support (values of 2e-6 drawn as 0). A check on the data that
    refuses, as :func:`~pseudopost.models.file.screen.screen_frame` refuses numbers above
    1e15; modelling such values would need public cells below 1e-6."""
    status, values, _ = split_status(series, codes, spikes, name=name)
    x = np.asarray(values, dtype=np.float64)
    nonzero = (status == 0) & (x != 0.0) & np.isfinite(x)
    tiny = nonzero & (np.abs(x) < RESOLUTION_FLOOR)
    k, m = int(np.count_nonzero(tiny)), int(np.count_nonzero(nonzero))
    if k == 0 or 2 * k < m:
        return
    i = int(np.flatnonzero(tiny)[0])
    typical = float(np.median(np.abs(x[nonzero])))
    factor = 10.0 ** max(6, math.ceil(-math.log10(typical)))
    shown = series.index[i]
    shown = shown.item() if isinstance(shown, np.generic) else shown
    raise ValueError(
        f"Column {name!r} holds {x[i]:g} in row {shown!r} ({k} of its {m} nonzero value(s) "
        f"are of magnitude below {RESOLUTION_FLOOR:g}); numbers this small are below the "
        f"structure stage's numeric resolution: its public grids and support cells hold every "
        f"value in [-{SMALLEST_MAGNITUDE:g}, {SMALLEST_MAGNITUDE:g}) as 0, so the column would "
        f"be released as (nearly) constant zeros. Rescale the column before synthesis (multiply by {factor:g}: "
        f"frame[{name!r}] * {factor:g}, and divide the synthetic values by it), round it "
        f"(frame[{name!r}].round(6)) if these values are rounding noise around 0, or drop the "
        f"column (drop=[{name!r}])."
    )


def _check_declared(series: pd.Series, x_all: np.ndarray, mask: np.ndarray, lo, hi, name):
    """A real observed value outside a declared range is an error naming its row."""
    bad = mask & ((x_all < lo) | (x_all > hi))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"Column {name!r} holds {x_all[i]:g} in row {series.index[i]!r}, outside its declared "
            f"range [{lo:g}, {hi:g}] ({int(bad.sum())} value(s) outside in all); correct the "
            f"value, declare it a missing code, or widen the range."
        )


#: the start of a numeric column's reason in the choices when the stage chose its model
_STRUCTURE_REASON = {
    "grid_ordinal": "the structure stage: integers, each integer of the support a level "
    "(ordered logit over them)",
    "binned": "the structure stage: a histogram density over the support's bins (ordered logit "
    "over the bins, uniform inside each)",
}


#: the probabilities of the knots of a numeric predictor: its noisy quartiles, and the 5 % and
#: 95 % quantiles, where the life course bends (schooling ends by the early twenties, work by
#: the sixties); with the hat basis of :mod:`pseudopost.models.file.design` a later column's
#: model can change steeply between the support's end and the outer knot. Adult at defaults:
#: synthetic 17-year-olds past high school 315 -> 47 (real 15); fit 580 s (611 s with quartiles)
KNOT_PROBS = (0.05, 0.25, 0.5, 0.75, 0.95)


#: the narrowest cell of a float column's noisy histogram, as a share of its support's width
#: (:func:`_noisy_cdf`): 256 cells of the support's width, eight to each of at most 32 bins
CELL_SHARE = 1.0 / 256.0


def _wide_cells(cells: np.ndarray, width: float) -> np.ndarray:
    """``cells`` (increasing, ends kept) without the inner edges closer than ``width`` to the
    last kept one (nor to the upper end): public edges only, no data."""
    if width <= 0.0 or cells.size < 3:
        return cells
    keep = [float(cells[0])]
    for c in cells[1:-1]:
        if c - keep[-1] >= width and cells[-1] - c >= width:
            keep.append(float(c))
    return np.asarray([*keep, float(cells[-1])])


def _noisy_cdf(x, lo, hi, integer, epsilon, rng, noisy_n=math.inf, unit=None):
    """(cells, noisy counts) of ``x`` (coded into [lo, hi]) over the candidate grid's cells
    inside the support: Laplace(1/epsilon) counts, L1 sensitivity 1 under add/remove (each
    record in one cell), pure epsilon-DP. Counts below 2/epsilon are set to 0
    (post-processing), so the noise of many empty cells does not add up to a share of the data.

    An integer column's candidates are every integer up to 2,000 (:func:`candidate_grid`);
    when its ``noisy_n`` values (a released count), spread evenly over those unit cells, would
    hold fewer than 2/epsilon each, every cell but the piles would be zeroed, so the cells are
    the logarithmic grid's (steps of about 5 %) rounded to integers instead (public facts and a
    released count: no budget). Adult's capital losses (2,300 nonzero values, a bins budget of
    0.025) otherwise had three cells left (the piles at 1,887, 1,902 and 1,977) and one bin from
    1,944 to the top of the support, over which the synthetic values spread.

    A float column's cells are at least :data:`CELL_SHARE` of the support wide, and at least
    its recording step ``unit`` (public; merged from the logarithmic grid's, post-processing):
    the grid's 48 cells a decade crowd towards 0 (288 of them between 1e-6 and 1), and a
    Laplace count passes 2/epsilon in 6.8 % of empty cells, so on SLID's education (support
    0-25.11, a bins budget of 0.017) some twenty noise-only cells below 1 held a third of the
    noisy mass and 15 of its 31 bins fell below 1.5 years (85 of 7,176 records)."""
    cand = candidate_grid(integer, lo, hi)
    if integer:
        units = np.count_nonzero(np.abs(cand) <= 2000)
        if noisy_n * epsilon < 2.0 * units:
            cand = np.unique(np.concatenate([np.round(candidate_grid(False, lo, hi)), [lo, hi]]))
            cand = cand[(cand >= lo) & (cand <= hi)]
    cells = np.unique(np.concatenate([[lo], cand[(cand > lo) & (cand < hi)], [hi]]))
    if not integer:
        cells = _wide_cells(cells, max((hi - lo) * CELL_SHARE, 0.0 if unit is None else unit))
    if integer:  # cells between integers, so that an integer is never on an edge
        inner = cells[1:-1] - 0.5
        cells = np.unique(np.concatenate([[lo], inner[(inner > lo) & (inner < hi)], [hi]]))
    xc = np.clip(x, lo, hi)
    j = np.clip(np.searchsorted(cells, xc, side="right") - 1, 0, cells.size - 2)
    counts = np.bincount(j, minlength=cells.size - 1).astype(np.float64)
    noisy = counts + rng.laplace(0.0, 1.0 / epsilon, size=counts.size)
    return cells, np.where(noisy >= 2.0 / epsilon, noisy, 0.0)


def _at_shares(cells, noisy, shares) -> np.ndarray:
    """The cell edges at the given shares of the noisy histogram (post-processing), with a
    floor of mass per cell between its first and last nonzero cells that keeps them spread
    where the noisy histogram is empty."""
    w = noisy.copy()
    seen = np.flatnonzero(noisy > 0)
    a, b = (seen[0], seen[-1] + 1) if seen.size else (0, noisy.size)
    w[a:b] += max(noisy.sum(), 1.0) / (4.0 * (b - a))
    cdf = np.concatenate([[0.0], np.cumsum(w)])
    cdf /= cdf[-1]
    k = np.searchsorted(cdf, np.asarray(shares, dtype=np.float64))
    return cells[np.clip(k, 1, cells.size - 2)]


def _extent(noisy, epsilon) -> tuple[int, int]:
    """The first and one past the last cell whose noisy count reaches (ln K + 1)/epsilon: the
    data's noisy extent (post-processing); the whole range when none does."""
    seen = np.flatnonzero(noisy >= (math.log(noisy.size) + 1.0) / epsilon)
    return (int(seen[0]), int(seen[-1]) + 1) if seen.size else (0, noisy.size)


#: equal-width cells of the histogram a grid column's knots are read from
KNOT_CELLS = 16
#: knots only for a column whose noisy count of observed values is at least this: each knot
#: adds a coefficient to every later column's model, which a small file cannot pin down
KNOT_MIN_N = 1000
#: knots only for the first this many numeric columns in the visit order (the predictors of
#: the most later columns): on a wide file every knot is a coefficient in each later part's
#: model, times its levels, and the fit's cost grows with them (cps91, 24 columns: 296 s at
#: 1 chain x 100 draws without knots, over 20 minutes with them on every numeric column)
KNOT_MAX_COLUMNS = 4


def _grid_knots(x, lo, hi, unit, epsilon, rng, log: bool = False) -> tuple[float, ...]:
    r"""Knots of a grid column as a predictor: the noisy quantiles (:data:`KNOT_PROBS`) of a
    Laplace histogram over :data:`KNOT_CELLS` equal-width cells of its support (L1 sensitivity
    1 under add/remove, pure epsilon-DP), read within the data's noisy extent and by linear
    interpolation inside a cell, then rounded to the grid (post-processing). Few wide cells:
    the noise of a cumulative share grows with the number of cells, and an empty margin's
    cells would pull the knots outwards. ``log``: the cells are equal-width in
    :math:`\log(1 + x)` (a nonnegative binned column: incomes, amounts)."""
    if not KNOT_PROBS:
        return ()
    f, g = (np.log1p, np.expm1) if log else ((lambda v: v), (lambda v: v))
    half = 0.0 if log or unit is None else unit / 2.0
    edges = g(np.linspace(f(lo) - half, f(hi) + half, KNOT_CELLS + 1))
    j = np.clip(np.searchsorted(edges, np.clip(x, lo, hi), side="right") - 1, 0, KNOT_CELLS - 1)
    noisy = np.bincount(j, minlength=KNOT_CELLS) + rng.laplace(0.0, 1.0 / epsilon, KNOT_CELLS)
    noisy = np.where(noisy >= 2.0 / epsilon, noisy, 0.0)
    a, b = _extent(noisy, epsilon)
    noisy[:a], noisy[b:] = 0.0, 0.0
    if noisy.sum() <= 0:
        return ()
    cdf = np.concatenate([[0.0], np.cumsum(noisy)]) / noisy.sum()
    k = g(np.interp(KNOT_PROBS, cdf, f(edges)))
    if unit is not None:
        k = np.round(np.round((k - lo) / unit) * unit + lo, 10)
    return tuple(float(v) for v in np.unique(k[(k > lo) & (k < hi)]))


def _equal_share_edges(x, lo, hi, integer, n_bins, epsilon, rng, noisy_n=math.inf, unit=None):
    """Bin edges holding roughly equal shares of a noisy histogram (:func:`_noisy_cdf`), plus
    edges at the data's noisy extent: post-processing of the noisy counts and public cells."""
    cells, noisy = _noisy_cdf(x, lo, hi, integer, epsilon, rng, noisy_n, unit)
    if cells.size < 3:  # a narrow support: two bins
        return (float(lo), float(lo + (hi - lo) / 2.0), float(hi))
    if cells.size <= n_bins + 1:
        return tuple(float(v) for v in cells)
    # the data's noisy extent: an empty margin of the support gets bins of its own, so a bin's
    # uniform draws never spread the last values into it
    a, b = _extent(noisy, epsilon)
    extent = [cells[a], cells[b]]
    inner = _at_shares(cells, noisy, np.linspace(0.0, 1.0, n_bins + 1)[1:-1])
    edges = np.unique(np.concatenate([[lo], inner, extent, [hi]]))
    if edges.size < 3:
        edges = np.array([lo, lo + (hi - lo) / 2.0, hi])
    return tuple(float(v) for v in edges)


def _declared_end(lo: float, hi: float, declared: tuple[float, float], unit: float | None,
                  digits: int | None) -> tuple[float, float]:
    """The support ``[lo, hi]`` with a one-sided declared range's finite end in place of the
    estimated one (post-processing of a public fact): on a recording grid, the first grid
    point inside the declared end. An estimated end beyond the declared one's side (a DP
    upper end below a declared lower end) leaves one grid step (or unit) above it."""
    a, b = declared
    if math.isfinite(a):
        lo = a if unit is None else round(math.ceil(round(a / unit, 6)) * unit, digits)
        if hi <= lo:
            hi = lo + (1.0 if unit is None else unit)
    else:
        hi = b if unit is None else round(math.floor(round(b / unit, 6)) * unit, digits)
        if lo >= hi:
            lo = hi - (1.0 if unit is None else unit)
    return lo, hi


def _column(
    series: pd.Series,
    name: str,
    codes: tuple,
    spikes: tuple,
    declared: tuple[float, float] | None,
    epsilon: float,
    rng: np.random.Generator,
    max_grid_points: int,
    n_bins: int,
    named: tuple = (),
    want_knots: bool = True,
    delta: float = 0.0,
    uniform: bool = False,
) -> ColumnStructure:
    """One column's structure from its budget ``epsilon``. The steps run in turn, each
    charged what it spends; which later steps run depends only on earlier DP outputs and
    public facts (adaptive composition: the charges still add up). Shares (:data:`_SHARES`):
    count, recording grid (an integer dtype's share goes to the support), support, then for a
    binned column spike and bins; a column modelled over its grid points leaves the rest
    unspent."""
    kind = column_kind(series)
    x = _observed(series, codes, spikes, name)
    sources, charges = {}, []
    left = [float(epsilon)]

    def charge(what: str, e: float, d: float = 0.0) -> float:
        e = min(e, left[0])
        left[0] -= e
        charges.append(StructureCharge(f"{name}: {what}", e, d, _MECHANISM[what]))
        return e

    # one noisy count of the observed values, reused by every later step (post-processing),
    # released only when a DP step follows
    want_knots = want_knots and bool(KNOT_PROBS)
    e_n, noisy_n = 0.0, 0.0
    half = _one_sided(declared)  # one end declared, the other estimated with the support
    if half:
        open_ends, declared = declared, None
    if kind != "integer" or declared is None or want_knots:
        e_n = charge("count", _SHARES["count"] * epsilon)
        noisy_n = max(noisy_count(int(x.size), e_n, rng), 0.0)
    if kind == "integer":
        digits: int | None = 0
        step = 1.0
        sources["integer"] = "declared (integer dtype)"
    else:
        e = charge("integer", _SHARES["integer"] * epsilon)
        digits, step = _recording_grid(x, noisy_n, e, rng)
        sources["integer"] = _dp(e + e_n)
    integer = digits == 0
    unit = step if step is not None else 1.0

    def points(a: float, b: float) -> float:
        return (b - a) / unit + 1

    if declared is not None:
        lo, hi = declared
        on_grid = digits is not None and abs(lo / unit - round(lo / unit)) < 1e-9
        grid = on_grid and points(lo, hi) <= max_grid_points
        sources["support"] = "declared"
        located = True
    else:
        # an integer dtype leaves the recording grid's share to the support
        share = _SHARES["support"] + (_SHARES["integer"] if kind == "integer" else 0.0)
        e = charge("support", share * epsilon)
        # cells [lo, hi), as fine as the budget and the noisy count allow; post-processing below
        found = dp_support(x, e, rng, per_decade=support_resolution(noisy_n, e),
                           integer=integer)  # fmt: skip
        lo, hi = found
        if digits is not None:  # the support's grid points: inside [lo, hi)
            lo = round(math.ceil(round(lo / unit, 6)) * unit, digits)
            hi = round((math.ceil(round(hi / unit, 6)) - 1) * unit, digits)
            if hi < lo and not integer:
                # no point of the recording grid inside the DP support (values of 1e-5 on
                # hundredths, taken by the noise of a small budget): rounded onto it, every
                # value would leave the support (a support [0.01, 0.02] above values of at
                # most 1e-5, all drawn 0.01); continuous instead (post-processing)
                digits, step, unit = None, None, 1.0
                lo, hi = found
                sources["integer"] += "; no grid point in the support: continuous"
        if half:  # the declared end replaces the estimated one (the other is DP)
            lo, hi = _declared_end(lo, hi, open_ends, unit if digits is not None else None,
                                   digits)  # fmt: skip
        if hi <= lo:  # a constant column: a support of two grid points (or one unit)
            hi = lo + 1.0 if digits is None else round((round(lo / unit) + 1) * unit, digits)
        # a guessed support (no cell passed) is binned, never a grid: the guess is often far
        # wider than the data, and over a grid each empty point is a level whose cutpoint prior
        # drags mass into the margin (a 0-10 score of 400 records guessed [0, 99]: 8-15 % of
        # the weighted release above 10), where bins make the margin a bin or two of prior mass
        located = found.located
        grid = digits is not None and points(lo, hi) <= max_grid_points and located
        sources["support"] = _dp(e)
        if half:
            side = "low" if math.isfinite(open_ends[0]) else "high"
            sources["support"] = f"declared {side} end; the other {sources['support']}"
        if not found.located:  # the largest noisy run of cells: a guess (SupportBounds)
            sources["support"] += UNLOCATED
            warnings.warn(
                f"Column {name!r}: no cell of its support reached the threshold at epsilon "
                f"{e:.3g} (too few observed values for the budget), so its DP support "
                f"[{lo:g}, {hi:g}] is the run of cells of the largest noisy count, a guess "
                f"that may miss the data (values outside it are left out of its model). Declare the "
                f"codebook's valid range (bounds={{{name!r}: (low, high)}}).",
                StructureWarning,
                stacklevel=2,
            )
    if named and declared is None:
        # values named by declared rules lie strictly inside the support, so coding a value to
        # a bound never moves it across a rule's threshold (public facts: post-processing); on
        # a recording grid the support's ends stay grid points, one step beyond the named values
        if digits is not None:
            lo = min(lo, round((math.floor(round(min(named) / unit, 6)) - 1) * unit, digits))
            hi = max(hi, round((math.ceil(round(max(named) / unit, 6)) + 1) * unit, digits))
        else:
            lo = min(lo, float(np.nextafter(min(named), -np.inf)))
            hi = max(hi, float(np.nextafter(max(named), np.inf)))
        grid = digits is not None and points(lo, hi) <= max_grid_points and located
    if codes and declared is None:  # post-processing of public facts: no budget
        lo, hi = _clear_of_codes(lo, hi, unit if digits is not None else None, digits, codes)
        grid = digits is not None and points(lo, hi) <= max_grid_points and located
    if half:  # values named by rules or codes never move a declared end
        lo, hi = _declared_end(lo, hi, open_ends, unit if digits is not None else None, digits)
        grid = digits is not None and points(lo, hi) <= max_grid_points and located
    if kind == "integer":  # the dtype's range is public: a uint8 column holds 0-255 only
        a, b = integer_range(series.dtype)
        if lo < a or hi > b:
            lo, hi = max(lo, float(a)), min(hi, float(b))
            if hi <= lo:
                hi = min(lo + 1.0, float(b))
                lo = hi - 1.0
            sources["support"] += f"; inside the {series.dtype} range [{a}, {b}]"
            grid = digits is not None and points(lo, hi) <= max_grid_points and located
    if grid:
        knots: tuple[float, ...] = ()
        if want_knots and noisy_n >= KNOT_MIN_N and points(lo, hi) >= 6 and left[0] > 0:
            e = charge("knots", left[0])
            knots = _grid_knots(x, lo, hi, unit, e, rng)
            sources["knots"] = _dp(e)
        return ColumnStructure(
            name,
            integer,
            (lo, hi),
            "grid_ordinal",
            (),
            (),
            sources,
            tuple(charges),
            digits,
            step,
            knots,
            values_count=noisy_n if e_n > 0 else None,
        )
    spike_out: tuple[float, ...] = ()
    noisy_z = 0.0
    if lo <= 0.0 <= hi and not any(float(s) == 0.0 for s in (*spikes, *codes)):
        e = charge("spike", _SHARES["spike"] * epsilon)
        noisy_z = noisy_count(int(np.count_nonzero(x == 0.0)), e, rng)
        if noisy_z >= SPIKE_SHARE * noisy_n and noisy_z > 0:
            spike_out = (0.0,)
        sources["spike"] = _dp(e)
    rest = x[x != 0.0] if spike_out else x
    noisy_rest = noisy_n - noisy_z if spike_out else noisy_n  # post-processing
    heaps: tuple[int, ...] = ()
    if digits is not None and step is not None and uniform:
        e = charge("heaps", _SHARES["heaps"] * epsilon)
        heaps = _heaps(np.clip(rest, lo, hi), lo, hi, unit, noisy_n, e, rng)
        sources["heaps"] = _dp(e)
    knots: tuple[float, ...] = ()
    if want_knots and noisy_n >= KNOT_MIN_N:
        e = charge("knots", left[0] / 3.0)
        knots = _grid_knots(rest, lo, hi, step, e, rng, log=lo >= 0.0)
        sources["knots"] = _dp(e)
    # only where a value holding VALUES_MIN_SHARE of the values could pass the threshold
    # (public facts and released counts: otherwise the budget goes to the bins)
    if (digits is not None and delta > 0 and left[0] > 0 and partition_threshold(
            VALUES_SHARE * left[0], delta) <= VALUES_MIN_SHARE * noisy_rest):  # fmt: skip
        e = charge("values", VALUES_SHARE * left[0], delta)
        found = _frequent_values(rest, lo, hi, unit, digits, e, delta, rng,
                                 taken=(*spikes, *codes, *named))  # fmt: skip
        sources["values"] = _dp(e, delta)
        if found:
            spike_out = (*spike_out, *found)
            rest = rest[~np.isin(_on_grid(rest, unit, digits), found)]
    e = charge("bins", left[0])
    edges = _equal_share_edges(rest, lo, hi, integer, n_bins, e, rng, noisy_rest, step)
    if heaps:  # bins made of whole catchments of the finest heap's points (post-processing)
        edges = _heap_edges(edges, lo, hi, unit, min(heaps))
    if digits is not None:  # the support's end points, bins of their own (public: no budget)
        edges = _end_bins(edges, lo, hi, unit, skip=spike_out)
    sources["bins"] = _dp(e)
    return ColumnStructure(
        name,
        integer,
        (lo, hi),
        "binned",
        edges,
        spike_out,
        sources,
        tuple(charges),
        digits,
        step,
        knots,
        heaps,
        values_count=max(noisy_rest, 0.0) if e_n > 0 else None,
    )


def _clear_of_codes(lo, hi, unit, digits, codes) -> tuple[float, float]:
    """Support ends that are not missing codes, with at least two values between them that are
    not codes either: a value coded to an end must stay a value, and a grid needs two points.
    A DP support from a few records can land anywhere (the largest noisy cell when none passes:
    [-9, -8] beside the code -8, found by Hypothesis); on a grid the low end moves down and the
    high end up a step at a time, off the grid the ends move to the next float."""
    bad = {float(c) for c in codes if isinstance(c, int | float | np.integer | np.floating)
           and not isinstance(c, bool) and math.isfinite(float(c))}  # fmt: skip
    if not bad:
        return lo, hi
    if unit is None:
        while lo in bad:
            lo = float(np.nextafter(lo, -np.inf))
        while hi in bad:
            hi = float(np.nextafter(hi, np.inf))
        return lo, hi

    def free(a: float, b: float) -> int:  # grid points in [a, b] that are not codes
        on_grid = [c for c in bad if a <= c <= b and abs(c / unit - round(c / unit)) < 1e-9]
        return round((b - a) / unit) + 1 - len(on_grid)

    while lo in bad:
        lo = round(lo - unit, digits)
    while hi in bad or free(lo, hi) < 2:
        hi = round(hi + unit, digits)
    return lo, hi


def _heap_edges(edges, lo, hi, unit, m) -> tuple[float, ...]:
    r"""``edges`` moved to the nearest boundary between the catchments of the points of a heap
    of ``m`` grid steps of ``unit`` (the grid points nearest each multiple :math:`kmu`): the
    edge :math:`(k + \tfrac12)mu`, less half a grid step when that is a grid point itself, so
    that every bin is a union of whole catchments and a draw snapped to the heap's nearest
    point stays in its bin (education in years and tenths: whole years hold 77 % of SLID's
    values, and a bin from 12.1 to 12.7 held none of them, so its draws labelled "whole year"
    went to 12 or 13 by snapping). Post-processing of released edges and heaps: no budget."""
    w = m * unit
    shift = unit / 2.0 if m % 2 == 0 else 0.0
    e = np.asarray(edges, dtype=np.float64)
    inner = (np.floor(e[1:-1] / w) + 0.5) * w - shift
    inner = np.where(np.abs(inner + w - e[1:-1]) < np.abs(inner - e[1:-1]), inner + w, inner)
    inner = inner[(inner > lo) & (inner < hi)]
    out = np.unique(np.concatenate([[e[0]], inner, [e[-1]]]))
    return tuple(float(v) for v in out) if out.size >= 3 else tuple(float(v) for v in e)


def _end_bins(edges, lo, hi, unit, skip=()) -> tuple[float, ...]:
    r"""``edges`` with an edge half a grid step inside each end of the support :math:`[\ell, h]`
    of a column recorded on a grid of ``unit``, so that each end point is a bin of its own,
    :math:`[\ell, \ell + u/2)` and :math:`[h - u/2, h]`, holding that grid point alone (an end
    that is a spike in ``skip`` is left alone: its records are not in the bins).

    Records pile up at the ends of a support: a codebook's range is often a top- or bottom-code
    (Adult's capital gains of 99,999 mean "99,999 or more", 195 of 39,074 records; CPS weekly
    earnings topcoded at 1,923, 64 of 5,634), and values beyond a DP support are coded to its
    edge. Inside a wide bin the pile's records would be spread uniformly (Adult: 68, 82 and 73
    synthetic records in the 40-60k, 60-80k and 80-100k fifths of the range against 3, 0 and
    195 real ones, a one-way S_pMSE near 100); in a bin of its own its probability is fitted and
    every draw there is the end point. The end points are public (declared, or the structure
    stage's DP output), so the edges are post-processing and cost no budget; an empty end bin
    costs one cutpoint, and the bins' log widths stay finite (half a grid step)."""
    half = unit / 2.0
    extra = [v for v, end in ((lo + half, lo), (hi - half, hi))
             if lo < v < hi and not any(float(s) == end for s in skip)]  # fmt: skip
    out = np.unique(np.concatenate([np.asarray(edges, dtype=np.float64), extra]))
    return tuple(float(v) for v in out)


def _frequent_values(x, lo, hi, unit, digits, epsilon, delta, rng, taken=()) -> tuple[float, ...]:
    r"""The grid values strictly inside the support :math:`(\ell, h)` that many records hold:
    Laplace partition selection (:func:`~pseudopost.privacy.structure.partition_selection`)
    over the sorted observed values (rounded to the recording grid of ``unit``, ``digits``),
    :math:`(\varepsilon, \delta)`-DP under add/remove (each record holds one value). The ends
    of the support are bins of their own already (:func:`_end_bins`) and ``taken`` values
    (declared spikes, codes, values named by rules) are left out. Released values become
    spikes: point masses with a status level of their own, which the raking keeps at their
    share."""
    if x.size == 0:
        return ()
    v = _on_grid(x, unit, digits)
    keys, counts = np.unique(v[(v > lo) & (v < hi)], return_counts=True)
    out = set(float(t) for t in taken if isinstance(t, (int, float)) and not isinstance(t, bool))
    ordered = {float(k): int(c) for k, c in zip(keys, counts, strict=True) if float(k) not in out}
    return tuple(sorted(partition_selection(ordered, epsilon, delta, rng)))


def _heaps(x, lo, hi, step, noisy_n, epsilon, rng) -> tuple[int, ...]:
    r"""The heaps (digit preference) of a binned column on a recording grid of ``step``
    (``pseudopost.models.file.heaps``): one Laplace histogram of the observed values'
    labels over the candidate multiples :data:`HEAP_MULTIPLES` that fit four times in the
    support (each value's label is its grid index's coarsest candidate multiple, or "off the
    heaps": one count per record, L1 sensitivity 1 under add/remove, pure epsilon-DP), then,
    as post-processing from the coarsest, a multiple m is kept when its noisy count c (with the
    counts of the multiples passed over since the last kept one, j counts in all) reaches

    .. math::
        \max\Bigl(\rho\,\tilde r\,\frac{1/m - 1/m'}{1 - 1/m'},\ \kappa\tilde n\Bigr)
        + \mu\sqrt{j}/\varepsilon,

    m' the last kept multiple, :math:`\tilde r` the noisy count of the values not on a kept
    coarser heap (:math:`\tilde n` less the kept counts), :math:`\rho` = :data:`HEAP_RATIO`,
    :math:`\kappa` = :data:`HEAP_MIN_SHARE`, :math:`\mu` = :data:`HEAP_MARGIN`: a smooth
    density puts the share :math:`(1/m - 1/m')/(1 - 1/m')` of the values off the coarser heaps
    on the multiples of m that are not multiples of m'. Whole dollars in a wage column on a
    cent grid, thousands in an income column, half years of schooling beside whole ones (SLID:
    whole years hold 77 % of the values, and halves 62 % of the rest, where a smooth density
    puts 11 %), which bins of uniform density cannot follow and a CART propensity score sees at
    once."""
    cand = [m for m in HEAP_MULTIPLES if 4 * m * step <= hi - lo]
    if not cand:
        return ()
    k = np.rint(x / step)
    label = np.full(k.shape, len(cand), dtype=np.int64)
    todo = np.ones(k.shape, dtype=bool)
    for j, m in enumerate(cand):
        hit = todo & (np.mod(k, m) == 0)
        label[hit] = j
        todo &= ~hit
    counts = np.bincount(label, minlength=len(cand) + 1)[: len(cand)].astype(np.float64)
    noisy = counts + rng.laplace(0.0, 1.0 / epsilon, size=counts.size)
    kept, carry, merged, last, rest = [], 0.0, 0, math.inf, float(noisy_n)
    for m, c in zip(cand, noisy, strict=True):
        c += carry
        merged += 1
        smooth = (1.0 / m - 1.0 / last) / (1.0 - 1.0 / last)
        need = (max(HEAP_RATIO * rest * smooth, HEAP_MIN_SHARE * noisy_n)
                + HEAP_MARGIN * math.sqrt(merged) / epsilon)  # fmt: skip
        if c >= need:
            kept.append(m)
            carry, merged, last, rest = 0.0, 0, m, rest - c
        else:
            carry = c
    return tuple(kept)


_MECHANISM = {
    "count": "Laplace count of observed values",
    "integer": "Laplace count of values off the integer grid, then a Laplace histogram of the "
    "others by the first finer public recording grid they lie on",
    "support": "thresholded Laplace histogram over public logarithmic cells",
    "spike": "Laplace count of zeros",
    "bins": "Laplace histogram over the candidate grid",
    "knots": "Laplace histogram over equal-width cells of the support (noisy quantiles)",
    "heaps": "Laplace histogram of the values' heap labels (multiples of the grid step)",
    "values": "Laplace partition selection of frequent grid values (spikes)",
}


def estimate_structure(
    frame: pd.DataFrame,
    columns: Sequence[str],
    *,
    missing_codes: Mapping[str, Sequence] | None = None,
    spikes: Mapping[str, Sequence[float]] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    structure_epsilon: float = STRUCTURE_EPSILON,
    structure_delta: float = STRUCTURE_DELTA,
    named_levels: Mapping[str, Sequence] | None = None,
    rng: np.random.Generator,
    max_grid_points: int = MAX_GRID_POINTS,
    n_bins: int = N_BINS,
    declared_knots: Sequence[str] = (),
    uniform_in_bins: Sequence[str] = (),
    parents: Mapping[str, Sequence[str]] | None = None,
) -> Structure:
    r"""The structure of the numeric columns among ``columns`` (module docstring).

    Parameters
    ----------
    frame
        The confidential data (never modified).
    columns
        The synthesized columns with no declared model, grid or bins; a text column's levels are
        selected (module docstring), categorical and boolean columns' are declared by the dtype.
    missing_codes, spikes
        Declared codes and spikes: kept apart from the values whose structure is estimated.
    bounds
        Declared valid ranges ``{column: (low, high)}`` (a codebook's): no budget is spent on
        them, and a real value outside one is an error.
    structure_epsilon
        The stage's budget: each column in turn (numeric with a declared range, the other
        numeric, then text) gets what is left divided
        by the columns still to come, so what one spends short of its share (a 0/1 column's
        support alone) goes to the later ones; a column whose every
        choice is declared spends nothing.
    structure_delta
        The delta of each text column's partition selection (the stage's delta is their sum).
    named_levels
        Column -> values named by declared rules and structural zeros: public. A text column
        keeps the named levels; a numeric column's DP support is widened to hold the named
        numbers strictly inside, so coding a value to a bound never crosses a rule's threshold.
    rng
        The randomness of every DP release.
    declared_knots
        Columns whose spline knots are declared: no knots are estimated for them. Knots are
        estimated for the first ``KNOT_MAX_COLUMNS`` numeric columns only.
    uniform_in_bins
        Binned columns drawn uniformly inside each bin: their heaps are estimated here (step
        6). By default a binned column on a recording grid learns its grid points' shares
        inside each bin in the mechanism instead (``pseudopost.models.file.bin_points``), and
        spends none of this budget on heaps.
    parents
        Many-level column -> its candidate parents (:func:`parent_candidates`): each gets one
        chosen by the exponential mechanism (step 7), from :data:`PARENT_EPSILON` each, set
        aside first (at most half the budget in all).
    """
    if isinstance(structure_epsilon, bool) or not isinstance(structure_epsilon, (int, float)):
        raise TypeError(f"'structure_epsilon' must be a number. Got {structure_epsilon!r}.")
    if not (math.isfinite(structure_epsilon) and structure_epsilon > 0):
        raise ValueError(f"'structure_epsilon' must be finite and > 0. Got {structure_epsilon!r}.")
    codes = dict(missing_codes or {})
    spk = dict(spikes or {})
    declared = {c: _declared_range(c, v) for c, v in dict(bounds or {}).items()}
    unknown = sorted(set(declared) - set(frame.columns))
    if unknown:
        raise ValueError(f"'bounds' names column(s) {unknown} that are not in the frame.")
    if not (isinstance(structure_delta, (int, float)) and 0 < structure_delta <= 0.5):
        raise ValueError(f"'structure_delta' must be in (0, 0.5]. Got {structure_delta!r}.")
    numeric, text = [], []
    for c in columns:
        kind = column_kind(frame[c])
        if kind in ("integer", "float"):
            numeric.append(c)
        elif kind in ("string", "object"):
            text.append(c)
    for c in numeric:  # before any release: values below the numeric resolution are refused
        if column_kind(frame[c]) == "float":
            _check_resolution(frame[c], tuple(codes.get(c, ())), tuple(spk.get(c, ())), c)
    for c in numeric:
        if c in declared:
            s = frame[c]
            status, values, _ = split_status(s, tuple(codes.get(c, ())), (), name=c)
            _check_declared(s, np.asarray(values, dtype=np.float64), status == 0, *declared[c], c)
    out: dict[str, ColumnStructure] = {}
    numbers = {c: tuple(float(v) for v in vs if isinstance(v, (int, float)) and not
                        isinstance(v, bool) and math.isfinite(float(v)))
               for c, vs in dict(named_levels or {}).items()}  # fmt: skip
    named = {c: set(vs) for c, vs in dict(named_levels or {}).items()}
    levels: dict[str, LevelStructure] = {}
    # each column's share is what is left over the columns still to come: a column that
    # spends less than its share (declared, or a 0/1 column's support alone) leaves the rest to
    # the later ones (which columns spend what depends only on earlier DP outputs and public
    # facts: adaptive composition, the charges add up to at most the budget). On cps91 (24
    # columns) an equal split left 0.20 of 1 unspent; spent, it raised quality from 0.959 to
    # 0.977 and the weighted CI overlap from 0.15 to 0.55, and the local epsilon from 52 to 155
    # (weighted): the last columns' finer bins sharpened their models, and with them the worst
    # record's Lipschitz bound (one record whose hours were coded to the support's edge)
    parents = {c: tuple(v) for c, v in dict(parents or {}).items()}
    per_parent = min(PARENT_EPSILON, 0.5 * structure_epsilon / len(parents)) if parents else 0.0
    # the columns with a declared range first: they spend little or nothing (no support; no
    # knots on a small file), so their shares go to the columns whose support and bins are
    # released (public facts fix the order). German credit: 4 of its 7 numeric columns declared
    # 1-4 or 1-2 came after the others, and 0.56 of the budget of 1 went unspent
    first = [c for c in numeric if c in declared and not _one_sided(declared[c])]
    order = [*first, *(c for c in numeric if c not in first), *text]
    left = float(structure_epsilon) - per_parent * len(parents)
    # knots for the first KNOT_MAX_COLUMNS numeric columns that can carry them: not an integer
    # column whose declared range holds fewer than 6 integers (a 1-4 rating gets no knots, so it
    # must not take a place: German credit's four such columns took two of the four, and age,
    # the fifth numeric column, entered every later model linearly); a float column's range says
    # nothing of how many values it holds (heights in metres, 1.27-2.11)
    small = {c for c in numeric if c in declared and column_kind(frame[c]) == "integer"
             and declared[c][1] - declared[c][0] < 5}  # fmt: skip
    knotted = set([c for c in numeric if c not in small][:KNOT_MAX_COLUMNS]) - set(declared_knots)
    coarse: list[tuple[LevelStructure, float]] = []
    thin: list[tuple[str, float]] = []
    for i, c in enumerate(order):
        share = left / (len(order) - i)
        if c in numeric:
            got: ColumnStructure | LevelStructure = _column(
                frame[c], c, tuple(codes.get(c, ())), tuple(spk.get(c, ())), declared.get(c),
                share, rng, max_grid_points, n_bins, numbers.get(c, ()),
                c in knotted, float(structure_delta), c in set(uniform_in_bins))  # fmt: skip
            out[c] = got
            spent = [ch.epsilon for ch in got.charges if ch.name == f"{c}: support"]
            if spent and _thin_tails(spent[0], len(frame)):
                thin.append((c, spent[0]))
        else:
            got = _levels(frame[c], c, tuple(codes.get(c, ())), share, structure_delta, rng,
                          named.get(c, set()))  # fmt: skip
            levels[c] = got
            if _coarse(share, float(structure_delta), len(frame)):
                coarse.append((got, share))
        left = max(left - got.epsilon, 0.0)
    out = {c: out[c] for c in numeric}  # the frame's order
    if coarse:
        _warn_coarse_levels(coarse, float(structure_delta), len(frame))
    if thin:
        _warn_thin_tails(thin, len(frame))
    chosen = {c: select_parent(frame, c, cands, levels, tuple(codes.get(c, ())), per_parent, rng)
              for c, cands in parents.items()}  # fmt: skip
    spent = compose([ch for part in (*out.values(), *levels.values(), *chosen.values())
                     for ch in part.charges])  # fmt: skip
    return Structure(out, float(structure_epsilon), levels, spent[1], chosen)


def _levels(series, name, codes, epsilon, delta, rng, named=frozenset()) -> LevelStructure:
    """A text column's levels by Laplace partition selection over its sorted observed levels
    (codes and empty cells apart, the public ``named`` levels kept without selection, held by a
    record or not):
    (epsilon, delta)-DP for add/remove, each record holding one level
    (:func:`~pseudopost.privacy.structure.partition_selection`)."""
    status, values, _ = split_status(series, codes, (), name=name)
    counts: dict[tuple, int] = {}
    for v in np.asarray(values, dtype=object)[status == 0]:
        k = cell_key(v)  # a level as the column holds it (True, 1 and "1" three levels)
        counts[k] = counts.get(k, 0) + 1
    # a named level is public: kept whether or not a record holds it (keeping it only when one
    # does would release its occurrence outside every budget)
    public = {cell_key(v) for v in named if not (isinstance(v, float) and math.isnan(v))}
    public -= {cell_key(v) for v in codes}  # a named missing code stays a code
    order = sorted(counts, key=_level_order)  # by the levels' text, as before: data-free
    ordered = {k: counts[k] for k in order if k not in public}
    kept = {*partition_selection(ordered, epsilon, delta, rng), *public}
    charge = StructureCharge(f"{name}: levels", epsilon, delta, "Laplace partition selection")
    return LevelStructure(name, tuple(k[1] for k in sorted(kept, key=_level_order)), (charge,))


def _level_order(key: tuple) -> tuple[str, str]:
    """A level key's place in partition selection's order: its text, then its kind (a total
    order over any cells, fixed by the levels alone)."""
    return (str(key[1]), key[0])
