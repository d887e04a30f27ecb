r"""A declared hierarchy: a column modelled within one parent column, one Dirichlet per level,
tilted by the other columns.

A codebook often says that one column is classified *within* another (a 533-level occupation
code within its 11 major groups; an industry code within its sector) or is *assigned from* it
(an occupational prestige score looked up from the occupation code). Declared as
``hierarchy={"occ10": "occrecode", "prestg10": "occ10"}`` (child: parent), the child is drawn
after its parent, from

.. math::
    \theta_{\cdot \mid g} \sim \mathrm{Dirichlet}(a \mathbf 1_K),\quad a = A / K, \qquad
    P(y = k \mid \text{parent} = g, x) \propto \theta_{k \mid g} \prod_j \phi_{j, k, x_j},

independently for each of the parent's G levels g, over the child's K levels k (a categorical
child: its levels, missing and codes included; a numeric child: its missing and code statuses,
then the points of its bounded grid, so no level is read from the data). ``concentration``
:math:`A` (1) pseudo-records are spread evenly over each group's levels. The parent carries the
child's relations with the other columns as a group; the *tilt* :math:`\phi_j` (naive Bayes,
:class:`~pseudopost.models.parts.TiltedLevelsPart`) carries the child's own, inside its group,
with each earlier column :math:`x_j` of at most :data:`MAX_TILT_CODES` public codes (a
categorical's levels; a number's statuses and its bins between its knots, declared or placed
by the structure stage's DP quantiles: :class:`TiltInput`). So that the tilt reads every other
column, a child is drawn last (after the columns outside the hierarchy), unless another
column's rule or predictor row reads it or an interaction or structural zero names it: then
right after its parent (``pseudopost.models.file.plan``'s visit order). A column assigned from
a code keeps the assignment up to the prior's share :math:`A/(n_g + A)` of a group of
:math:`n_g` records. Without a hierarchy a column of more than 50 levels is modelled without
predictors and keeps no relation at all (:mod:`pseudopost.models.file.choice`); the structure
stage gives it a parent by DP (step 7 of :mod:`pseudopost.mechanisms.structure`).

**Part.** The group-level pairs are the bin-points part's bins and points
(:class:`~pseudopost.models.parts.BinPointsPart`): the (g, k) pairs some active record holds are
levels of their own, and each group's other levels are one *rest* level (Dirichlet aggregation),
drawn uniformly among them: exactly the posterior of the full G x K model, held sparsely (with
a tilt, a rest's share is split evenly over its levels before the tilt weighs them).
Conjugate: the pseudo posterior of each group is :math:`\mathrm{Dirichlet}(a + C_{\cdot g})`
with the weighted counts :math:`C_{kg} = \sum_i w_i 1[y_i = k, \text{parent}_i = g]`, and of
each tilt row :math:`\mathrm{Dirichlet}(b + D_{j,k,\cdot})` (:data:`TILT_CONCENTRATION` b = 1),
drawn exactly (no MCMC).

**Privacy.** A record's log-likelihood gains :math:`\log\theta_{y_i \mid g_i} + \sum_j
\log\phi_{j, y_i, x_{ij}}`, which the accountant's Lipschitz bound takes as any other part's
term (Savitsky, Williams & Hu 2022, eq. 3); the declaration is public (a codebook fact), and the
tilt inputs' codes are public levels or DP knots, so nothing is read from the data outside the
budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pseudopost.models.file.encoding import EncodedColumn
from pseudopost.models.file.grid import Grid
from pseudopost.models.parts import BinPointsPart, TiltedLevelsPart

__all__ = [
    "CONCENTRATION",
    "DECLARED",
    "MAX_TILT_CODES",
    "TILT_CONCENTRATION",
    "Nesting",
    "TiltInput",
    "child_levels",
]

#: how the choices table names a declared hierarchy (the structure stage's choice replaces it)
DECLARED = "hierarchy, declared"
#: pseudo-records of each parent level's symmetric Dirichlet prior over the child's levels
CONCENTRATION = 1.0
#: pseudo-records of each cell of an input's tilt (per child level and input code)
TILT_CONCENTRATION = 1.0
#: an earlier column tilts a child when it has at most this many codes (levels, or a number's
#: statuses and knot bins)
MAX_TILT_CODES = 20


@dataclass(frozen=True, eq=False)
class TiltInput:
    """An earlier column as a coded input of a child's tilt
    (:class:`~pseudopost.models.parts.TiltedLevelsPart`): a categorical's level, or a number's
    status (missing, each code) or its bin between ``edges`` (its knots: declared, or placed by
    the structure stage's DP quantiles; public either way)."""

    column: EncodedColumn
    edges: tuple[float, ...] = ()

    @classmethod
    def of(cls, column: EncodedColumn, knots: tuple = ()) -> TiltInput | None:
        """The input, or None where it has no public coding of at most :data:`MAX_TILT_CODES`
        codes (a number without knots, a categorical of more levels)."""
        if not (column.categorical or column.ordered) and 0 in column.statuses and not knots:
            return None
        out = cls(column, tuple(float(k) for k in knots))
        return out if out.n_codes <= MAX_TILT_CODES else None

    @property
    def numeric(self) -> bool:
        return not (self.column.categorical or self.column.ordered)

    @property
    def n_codes(self) -> int:
        c = self.column
        if not self.numeric:
            return len(c.levels)
        return len(c.statuses) + (len(self.edges) if 0 in c.statuses else 0)

    def codes(self, status: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Each record's code (int64): level, or status position then knot bin."""
        c = self.column
        if not self.numeric:
            out = c.level_codes(status, values)
        else:
            out = _status_codes(c.other_statuses, status)
            obs = status == 0
            if obs.any():
                v = np.asarray(values, dtype=np.float64)[obs]
                out[obs] = len(c.other_statuses) + np.searchsorted(self.edges, v, side="right")
        if np.any(out < 0):
            i = int(np.flatnonzero(out < 0)[0])
            raise ValueError(
                f"Column {c.name!r} holds a level or status its encoding lacks at record {i} "
                f"(a tilt input of a hierarchy child)."
            )
        return out


def child_levels(child: EncodedColumn, points: np.ndarray | None) -> tuple[tuple, ...]:
    """The child's levels as (status, value) pairs: a categorical child's levels; a numeric
    child's other statuses (missing, codes), then the ``points`` of its bounded grid."""
    if child.categorical or child.ordered:
        return tuple((lv.status, lv.value if lv.status == 0 else np.nan) for lv in child.levels)
    if points is None:
        raise ValueError(
            f"Column {child.name!r} is declared in a 'hierarchy' but is numeric without a "
            f"bounded grid; a child of a hierarchy is categorical, or an integer column whose "
            f"valid range is declared ('bounds') or estimated by the structure stage."
        )
    return (*((s, np.nan) for s in child.other_statuses), *((0, float(x)) for x in points))


@dataclass(frozen=True, eq=False)
class Nesting:
    """A child column's levels within each level of its parent (module docstring).

    Attributes
    ----------
    parent : EncodedColumn
        The parent column (categorical or ordinal), whose level codes are the groups.
    status, values : numpy.ndarray
        (K,) the status and value of each of the child's levels (:func:`child_levels`).
    level_group, level_child : numpy.ndarray
        (L,) each part level's group and child level (-1 for a group's rest).
    prior : numpy.ndarray
        (L,) each part level's Dirichlet concentration.
    index : numpy.ndarray
        (G, K) the part level of each (group, child level) pair.
    real : numpy.ndarray
        (n,) the part level of each real record, NaN where the part is not active.
    tilts : tuple of TiltInput
        The earlier columns tilting the child's shares (none: the parent alone).
    tilt_real : numpy.ndarray
        (n, J) the real records' codes of the tilt inputs.
    """

    parent: EncodedColumn
    status: np.ndarray
    values: np.ndarray
    level_group: np.ndarray
    level_child: np.ndarray
    prior: np.ndarray
    index: np.ndarray
    real: np.ndarray
    tilts: tuple[TiltInput, ...] = ()
    tilt_real: np.ndarray | None = None

    @classmethod
    def build(
        cls,
        parent: EncodedColumn,
        child: EncodedColumn,
        points: np.ndarray | None,
        active: np.ndarray,
        tilts: tuple[TiltInput, ...] = (),
        concentration: float = CONCENTRATION,
    ) -> Nesting:
        """The part's levels from the real records' (parent level, child level) pairs, and the
        real records' codes of the ``tilts``."""
        levels = child_levels(child, points)
        G, K = len(parent.levels), len(levels)
        g = parent.level_codes(parent.status, parent.values)
        k = _codes(child, levels, child.status, child.values, points)
        held = np.zeros((G, K), dtype=bool)
        held[g[active], k[active]] = True
        a = concentration / K
        index = np.zeros((G, K), dtype=np.int64)
        group, kid, prior = [], [], []
        for j in range(G):
            for kk in np.flatnonzero(held[j]):
                index[j, kk] = len(group)
                group.append(j), kid.append(int(kk)), prior.append(a)
            rest = K - int(held[j].sum())
            if rest:
                index[j, ~held[j]] = len(group)
                group.append(j), kid.append(-1), prior.append(a * rest)
        real = np.full(child.n, np.nan)
        real[active] = index[g[active], k[active]]
        values = np.empty(K, dtype=np.float64 if child.numeric else object)
        values[:] = [v for _, v in levels]
        tilt_real = np.zeros((child.n, len(tilts)))
        for j, t in enumerate(tilts):
            tilt_real[active, j] = t.codes(t.column.status[active], t.column.values[active])
        return cls(parent, np.array([s for s, _ in levels], dtype=np.int64), values,
                   np.asarray(group, np.int64), np.asarray(kid, np.int64), np.asarray(prior),
                   index, real, tuple(tilts), tilt_real)  # fmt: skip

    @property
    def n_groups(self) -> int:
        return int(self.index.shape[0])

    def part(self, outcome: str, name: str) -> BinPointsPart:
        """The conjugate part over the (group, level) pairs and the groups' rests, tilted by
        the inputs where there are any (:class:`~pseudopost.models.parts.TiltedLevelsPart`)."""
        levels = dict(n_levels=int(self.prior.size),
                      groups=tuple(int(x) for x in self.level_group),
                      prior=tuple(float(x) for x in self.prior))  # fmt: skip
        if not self.tilts:
            return BinPointsPart(outcome, name=name, **levels)
        return TiltedLevelsPart(
            outcome, tuple(t.column.name for t in self.tilts), name=name, **levels,
            child=tuple(int(k) for k in self.level_child), n_child=int(self.status.size),
            n_codes=tuple(t.n_codes for t in self.tilts), concentration=TILT_CONCENTRATION,
        )  # fmt: skip

    def describe(self) -> str:
        parent = self.parent.name
        tilt = (
            f", tilted by {[t.column.name for t in self.tilts]} (naive Bayes, one Dirichlet "
            f"per level and input)"
            if self.tilts
            else ", no other predictors"
        )
        return (
            f"nested in {parent!r} ({DECLARED}): one Dirichlet over its {self.status.size} "
            f"levels per level of {parent!r} ({self.n_groups}){tilt}"
        )

    def tilt_codes(self, frame) -> np.ndarray:
        """(n, J) the tilt inputs' codes of a (synthetic) frame's records."""
        out = np.zeros((len(frame), len(self.tilts)))
        for j, t in enumerate(self.tilts):
            out[:, j] = t.codes(*t.column.split(frame[t.column.name]))
        return out

    def group_log_shares(self, log_p: np.ndarray) -> np.ndarray:
        """(G, K) each group's log share of each child level: a held pair's own, a rest's
        share split evenly over the group's levels no record holds (its mean given the rest's
        share; the exact within-rest split is exchangeable)."""
        size = np.bincount(self.index.ravel(), minlength=self.prior.size)
        return log_p[self.index] - np.log(size[self.index])

    def groups(self, parent_status: np.ndarray, parent_values: np.ndarray) -> np.ndarray:
        """The group (parent level code) of each record of a (synthetic) parent column."""
        return self.parent.level_codes(parent_status, parent_values)

    def draw(
        self, part: BinPointsPart, params, groups: np.ndarray, u: np.ndarray, frame=None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(status, values) of the child given each record's group: a part level by inversion
        at ``u[:, 0]``, then, for a group's rest, the ``floor(u[:, 1] r)``-th of its r levels
        no real record holds; tilted, the child level by inversion at ``u[:, 0]`` of its
        conditional given the group and the ``frame``'s tilt inputs."""
        if self.tilts:
            table = self.group_log_shares(np.asarray(params["log_p"], np.float64))
            k = part.sample_tilted(params, table, groups, self.tilt_codes(frame), u[:, 0])
            return self.status[k], self.values[k]
        level = part.sample_in_bins(params, groups, u[:, 0])
        k = self.level_child[level].copy()
        rest = k < 0
        for g in np.unique(groups[rest]):  # the group's levels no real record holds
            at = rest & (groups == g)
            free = np.flatnonzero(self.index[g] == level[at][0])  # its rest level's children
            k[at] = free[np.minimum((u[at, 1] * free.size).astype(np.int64), free.size - 1)]
        return self.status[k], self.values[k]


def _codes(child, levels, status, values, points) -> np.ndarray:
    """Each record's child level (:func:`child_levels`' order)."""
    if child.categorical or child.ordered:
        return child.level_codes(status, values)
    statuses = [s for s, _ in levels if s != 0]
    out = _status_codes(statuses, status)
    obs = status == 0
    if obs.any():
        v = np.asarray(values, dtype=np.float64)[obs]
        pts = np.asarray(points, dtype=np.float64)
        at = Grid.nearest(pts, v) if pts.size > 1 else np.zeros(v.size, np.int64)
        out[obs] = len(statuses) + at
    return out


def _status_codes(statuses, status: np.ndarray) -> np.ndarray:
    """Each record's position among the non-observed ``statuses`` (int64; -1 where observed)."""
    out = np.full(status.shape[0], -1, dtype=np.int64)
    for j, s in enumerate(statuses):
        out[status == s] = j
    return out
