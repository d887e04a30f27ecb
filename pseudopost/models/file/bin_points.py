r"""The grid points inside a binned column's bins: what the bin-points part is over.

A binned column on a recording grid (a step, or whole units) draws its bin from the binned part
and then a grid point of the bin from the bin-points part
(:class:`~pseudopost.models.parts.BinPointsPart`: each bin's Dirichlet shares over
its grid points). :class:`BinPoints` holds the geometry: bin :math:`j`'s grid indices
:math:`k_{lo}(j) \dots k_{hi}(j)` (the points :math:`g_k = \mathrm{round}(k s + o, d)` with
:math:`e_j \le g_k < e_{j+1}`, the last bin closed), the points excluded from it (declared codes
and spikes are statuses, not values), the levels (the points the real records hold, then one
*rest* level per bin for its other points) and each level's prior concentration. Drawing the
rest gives the :math:`r`-th point not held, :math:`r` uniform: exact under the symmetric prior
(module docstring of the part).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pseudopost.models.file.bins import Bins
from pseudopost.models.file.grid import Grid
from pseudopost.models.parts.bin_points import BinPointsPart

__all__ = ["CONCENTRATION", "BinPoints"]

#: pseudo-records of each bin's symmetric Dirichlet prior, spread evenly over its grid points
CONCENTRATION = 1.0
_TOL = 1e-9
#: relative error of a single-precision value printed to 15 significant digits
_SINGLE_PRINTED = 1e-12


@dataclass(frozen=True, eq=False)
class BinPoints:
    """Levels of a binned column's points inside its bins (module docstring)."""

    bins: Bins
    grid: Grid
    k_lo: np.ndarray  # (B,) first grid index of each bin
    k_hi: np.ndarray  # (B,) last grid index of each bin (k_hi < k_lo: no point)
    excluded: tuple[np.ndarray, ...]  # per bin: sorted grid indices held or forbidden
    n_points: np.ndarray  # (B,) grid points of each bin, forbidden ones left out
    level_bin: np.ndarray  # (L,) each level's bin
    level_k: np.ndarray  # (L,) each level's grid index; -1 for a bin's rest
    prior: np.ndarray  # (L,) each level's concentration
    #: (L,) a held level's value as the records store it (a decimal in single precision), or
    #: its grid point when the records are off it; NaN for a rest
    value: np.ndarray

    @classmethod
    def build(
        cls, bins: Bins, grid: Grid, x: np.ndarray, forbidden: tuple = (),
        concentration: float = CONCENTRATION,
    ) -> BinPoints:  # fmt: skip
        """The levels of the observed values ``x`` (on the grid, inside the bins)."""
        e = np.asarray(bins.edges, dtype=np.float64)
        s, o = float(grid.step), float(grid.origin)
        k_lo = np.ceil((e[:-1] - o) / s - _TOL)
        k_hi = np.ceil((e[1:] - o) / s - _TOL) - 1
        k_hi[-1] = math.floor((e[-1] - o) / s + _TOL)
        x = np.asarray(x, dtype=np.float64)
        j_obs = bins.index(x)
        k_obs = np.clip(grid.index(x), k_lo[j_obs], np.maximum(k_hi[j_obs], k_lo[j_obs]))
        # a bin holding no grid point: its value's nearest point may lie beyond the support's
        # end (declared bounds 0-10 on a 0.0254 grid: 10 -> 10.01); keep it a point inside
        k_obs = np.clip(k_obs, k_lo[0], max(k_hi[-1], k_lo[0]))
        if x.size:
            held, first = np.unique(np.column_stack([j_obs, k_obs]), axis=0, return_index=True)
            stored, point = x[first], grid.point(held[:, 1])
            # released as stored only when it is the point's single-precision storage (2.8 as
            # 2.7999999523, as a CSV of float32 prints it); any other value (off the grid, or
            # within the grid's storage tolerance but not float32's rounding: 2000.99923 on whole units,
            # found by Hypothesis) is released as the point
            single = point.astype(np.float32).astype(np.float64)
            off = np.abs(stored - single) > _SINGLE_PRINTED * np.maximum(1.0, np.abs(point))
            stored = np.where(off, point, stored)
        else:
            held, stored = np.zeros((0, 2)), np.zeros(0)
        forb: list[list[float]] = [[] for _ in range(bins.n_bins)]
        for f in forbidden:
            f = float(f)
            kf = float(grid.index(np.array([f]))[0])
            if not (e[0] <= f <= e[-1]) or abs(float(grid.point(np.array([kf]))[0]) - f) > 1e-9:
                continue
            jf = int(bins.index(np.array([f]))[0])
            if k_lo[jf] <= kf <= k_hi[jf]:
                forb[jf].append(kf)
        excluded, n_points = [], np.zeros(bins.n_bins)
        level_bin, level_k, prior, value = [], [], [], []
        for j in range(bins.n_bins):
            ks = held[held[:, 0] == j, 1] if held.size else np.zeros(0)
            value += stored[held[:, 0] == j].tolist() if held.size else []
            fj = np.unique(np.asarray(forb[j], dtype=np.float64))
            n_j = max(k_hi[j] - k_lo[j] + 1 - fj.size, 0.0)
            n_points[j] = n_j
            excluded.append(np.unique(np.concatenate([ks, fj])))
            a = concentration / max(n_j, 1.0)
            rest = n_j - ks.size
            level_bin += [j] * ks.size
            level_k += ks.tolist()
            prior += [a] * ks.size
            if rest > 0 or ks.size == 0:  # a bin without any point still needs a level
                level_bin.append(j)
                level_k.append(-1.0)
                prior.append(a * rest if rest > 0 else concentration)
                value.append(np.nan)
        return cls(bins, grid, k_lo, k_hi, tuple(excluded), n_points, np.asarray(level_bin),
                   np.asarray(level_k), np.asarray(prior, dtype=np.float64),
                   np.asarray(value, dtype=np.float64))  # fmt: skip

    @property
    def n_levels(self) -> int:
        return int(self.level_bin.size)

    def part(self, outcome: str, name: str) -> BinPointsPart:
        return BinPointsPart(
            outcome, (), name=name, n_levels=self.n_levels,
            groups=tuple(int(j) for j in self.level_bin), prior=tuple(self.prior.tolist()),
        )  # fmt: skip

    def levels(self, x: np.ndarray) -> np.ndarray:
        """The level of each observed value ``x`` (the grid point it is on, in its bin)."""
        x = np.asarray(x, dtype=np.float64)
        j = self.bins.index(x)
        k = np.clip(self.grid.index(x), self.k_lo[j], np.maximum(self.k_hi[j], self.k_lo[j]))
        big = 2.0**40
        lb = self.level_bin
        own = np.where(self.level_k < 0, big - 1, self.level_k - self.k_lo[lb])
        pos = np.searchsorted(lb * big + own, j * big + (k - self.k_lo[j]))
        return np.clip(pos, 0, self.n_levels - 1).astype(np.int64)

    def values(self, levels: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The value of each drawn level: a held point as its records store it (24.2 stored in
        single precision stays so), a rest level's point the r-th of its bin's grid points not
        held, r = floor(u U_j) (``u`` in (0, 1))."""
        levels = np.asarray(levels, dtype=np.int64)
        k = self.level_k[levels].astype(np.float64)
        rest = k < 0
        for j in np.unique(self.level_bin[levels[rest]]):
            at = rest & (self.level_bin[levels] == j)
            ex = self.excluded[j]
            free = self.k_hi[j] - self.k_lo[j] + 1 - ex.size
            if free <= 0:  # no grid point inside the bin: the one nearest its middle, inside
                e = self.bins.edges  # the support
                mid = float(self.grid.index(np.array([(e[j] + e[j + 1]) / 2]))[0])
                k[at] = min(max(mid, self.k_lo[0]), max(self.k_hi[-1], self.k_lo[0]))
                continue
            r = np.minimum(np.floor(np.asarray(u)[at] * free), free - 1)
            d = ex - self.k_lo[j] - np.arange(ex.size)  # points not held before each excluded
            k[at] = self.k_lo[j] + r + np.searchsorted(d, r, side="right")
        out = self.grid.point(k)
        return np.where(rest, out, self.value[levels])

    def describe(self) -> str:
        return (
            f"each bin's shares over its grid points (Dirichlet, {CONCENTRATION:g} "
            f"pseudo-record per bin)"
        )
