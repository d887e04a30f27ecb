r"""A declared hierarchy: a column modelled given one parent column alone, one Dirichlet per level.

A codebook often says that one column is classified *within* another (a 533-level occupation
code within its 11 major groups; an industry code within its sector) or is *assigned from* it
(an occupational prestige score looked up from the occupation code). Declared as
``hierarchy={"occ10": "occrecode", "prestg10": "occ10"}`` (child: parent), the child is drawn
right after its parent, given the parent alone:

.. math::
    \theta_{\cdot \mid g} \sim \mathrm{Dirichlet}(a \mathbf 1_K),\quad a = A / K, \qquad
    P(y = k \mid \text{parent} = g) = \theta_{k \mid g},

independently for each of the parent's G levels g, over the child's K levels k (a categorical
child: its levels, missing and codes included; a numeric child: its missing and code statuses,
then the points of its bounded grid, so no level is read from the data). ``concentration``
:math:`A` (1) pseudo-records are spread evenly over each group's levels. The parent carries the
child's relations with every other column (it is synthesized with its predictors as usual), so
a code nested in a group keeps the group's relations, and a column assigned from a code keeps
the assignment up to the prior's share :math:`A/(n_g + A)` of a group of :math:`n_g` records.
Without a declaration a column of more than 50 levels is modelled without predictors and keeps
no relation at all (:mod:`pseudopost.models.file.choice`).

**Part.** The group-level pairs are the bin-points part's bins and points
(:class:`~pseudopost.models.parts.BinPointsPart`): the (g, k) pairs some active record holds are
levels of their own, and each group's other levels are one *rest* level (Dirichlet aggregation),
drawn uniformly among them: exactly the posterior of the full G x K model, held sparsely.
Conjugate: the pseudo posterior of each group is :math:`\mathrm{Dirichlet}(a + C_{\cdot g})`
with the weighted counts :math:`C_{kg} = \sum_i w_i 1[y_i = k, \text{parent}_i = g]`, drawn
exactly (no MCMC).

**Privacy.** A record's log-likelihood gains :math:`\log\theta_{y_i \mid g_i}`, which the
accountant's Lipschitz bound takes as any other part's term (Savitsky, Williams & Hu 2022,
eq. 3); the declaration is public (a codebook fact) and reads nothing from the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pseudopost.models.file.encoding import EncodedColumn
from pseudopost.models.file.grid import Grid
from pseudopost.models.parts.bin_points import BinPointsPart

__all__ = ["CONCENTRATION", "DECLARED", "Nesting", "child_levels"]

#: how the choices table names a declared hierarchy (the structure stage's choice replaces it)
DECLARED = "hierarchy, declared"
#: pseudo-records of each parent level's symmetric Dirichlet prior over the child's levels
CONCENTRATION = 1.0


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
    """

    parent: EncodedColumn
    status: np.ndarray
    values: np.ndarray
    level_group: np.ndarray
    level_child: np.ndarray
    prior: np.ndarray
    index: np.ndarray
    real: np.ndarray

    @classmethod
    def build(
        cls,
        parent: EncodedColumn,
        child: EncodedColumn,
        points: np.ndarray | None,
        active: np.ndarray,
        concentration: float = CONCENTRATION,
    ) -> Nesting:
        """The part's levels from the real records' (parent level, child level) pairs."""
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
        return cls(parent, np.array([s for s, _ in levels], dtype=np.int64), values,
                   np.asarray(group, np.int64), np.asarray(kid, np.int64), np.asarray(prior),
                   index, real)  # fmt: skip

    @property
    def n_groups(self) -> int:
        return int(self.index.shape[0])

    def part(self, outcome: str, name: str) -> BinPointsPart:
        """The conjugate part over the (group, level) pairs and the groups' rests."""
        return BinPointsPart(
            outcome, name=name, n_levels=int(self.prior.size),
            groups=tuple(int(x) for x in self.level_group),
            prior=tuple(float(x) for x in self.prior),
        )  # fmt: skip

    def describe(self) -> str:
        parent = self.parent.name
        return (
            f"nested in {parent!r} ({DECLARED}): one Dirichlet over its {self.status.size} "
            f"levels per level of {parent!r} ({self.n_groups}), no other predictors"
        )

    def groups(self, parent_status: np.ndarray, parent_values: np.ndarray) -> np.ndarray:
        """The group (parent level code) of each record of a (synthetic) parent column."""
        return self.parent.level_codes(parent_status, parent_values)

    def draw(
        self, part: BinPointsPart, params, groups: np.ndarray, u: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(status, values) of the child given each record's group: a part level by inversion
        at ``u[:, 0]``, then, for a group's rest, the ``floor(u[:, 1] r)``-th of its r levels
        no real record holds."""
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
    out = np.full(status.shape[0], -1, dtype=np.int64)
    statuses = [s for s, _ in levels if s != 0]
    for j, s in enumerate(statuses):
        out[status == s] = j
    obs = status == 0
    if obs.any():
        v = np.asarray(values, dtype=np.float64)[obs]
        pts = np.asarray(points, dtype=np.float64)
        at = Grid.nearest(pts, v) if pts.size > 1 else np.zeros(v.size, np.int64)
        out[obs] = len(statuses) + at
    return out
