r"""Bin-points part: a binned column's value among the grid points of its bin (conjugate).

A binned column (:mod:`pseudopost.models.file.bins`) draws a bin :math:`j` from its ordered
logit; on a recording grid, the value inside the bin is one of the bin's grid points
:math:`\mathcal G_j`. Instead of uniform, each bin has its own shares over them,

.. math::
    \theta_{\cdot \mid j} \sim \mathrm{Dirichlet}(a_j \mathbf 1_{|\mathcal G_j|}),\quad
    a_j = A / |\mathcal G_j|, \qquad P(y = g \mid j) = \theta_{g \mid j},

so heaps (whole dollars, a minimum wage of 6.70, bracket midpoints) are learnt by the
mechanism's likelihood rather than read from the data outside the budget. The prior spreads
``concentration`` :math:`A` pseudo-records evenly over each bin's grid points.

**Levels.** Only the grid points some record holds carry counts; by the Dirichlet aggregation
property the bin's other :math:`U_j` points are one level (the bin's *rest*) with concentration
:math:`a_j U_j`, and a point drawn from it is uniform among them (exchangeable under the
symmetric prior): exactly the posterior of the full model over every grid point, held
sparsely. Levels are ordered by bin; ``groups[l]`` is level l's bin and ``prior[l]`` its
concentration (:math:`a_j` for a held point, :math:`a_j U_j` for a rest).

**Conjugacy.** With weighted counts :math:`C_l = \sum_i w_i 1[y_i = l]` the pseudo posterior
of each bin is :math:`\mathrm{Dirichlet}(\text{prior} + C)` independently (the weighted
likelihood :math:`\prod_l \theta_l^{C_l}` keeps the Dirichlet kernel for real
:math:`C_l \ge 0`), drawn exactly as normalised Gammas. The parameter is ``log_p`` (the log
shares, normalised within each bin), kept on the log scale because a share whose
concentration is tiny (a point held only by records of weight near 0) underflows: its log is
drawn as :math:`\log G_{s+1} + \log U / s` (:math:`G_s \sim \mathrm{Gamma}(s)`; Marsaglia &
Tsang 2000's boost), so :math:`w_i \log\theta` stays finite for the accountant.

**Privacy.** A record's log-likelihood gains :math:`\log \theta_{y_i \mid j_i}`; the
accountant's Lipschitz bound (Savitsky, Williams & Hu 2022, eq. 3) takes it as any other part's
term, so the mechanism's epsilon pays for what this part learns (a point held by one record
has a small share, hence a large :math:`|\log\theta|`, and a small risk weight).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from pseudopost.models.parts.dirichlet_categorical import ConjugateLevelsPart
from pseudopost.models.parts.layout import Layout, Param

__all__ = ["BinPointsPart", "log_dirichlet"]


def log_dirichlet(shape: np.ndarray, groups: np.ndarray, n_draws: int, rng) -> np.ndarray:
    r"""``n_draws`` draws (n_draws, L) of the log shares of independent Dirichlet vectors, one
    per group of the sorted ``groups``, with concentrations ``shape`` (all > 0): normalised
    Gammas on the log scale, :math:`\log G_s = \log G_{s+1} + \log U / s`."""
    s = np.asarray(shape, dtype=np.float64)
    g = rng.gamma(s + 1.0, size=(n_draws, s.size))
    u = rng.random(size=(n_draws, s.size))
    logg = np.log(g) + np.log1p(-u) / s  # 1 - u in (0, 1]: log finite
    starts = np.flatnonzero(np.r_[True, np.diff(groups) != 0])
    top = np.maximum.reduceat(logg, starts, axis=1)
    sizes = np.diff(np.r_[starts, s.size])
    top_l = np.repeat(top, sizes, axis=1)
    norm = np.log(np.add.reduceat(np.exp(logg - top_l), starts, axis=1)) + top
    return logg - np.repeat(norm, sizes, axis=1)


@dataclass(frozen=True)
class BinPointsPart(ConjugateLevelsPart):
    """Shares of the grid points inside each bin (module docstring): ``n_levels`` levels,
    ``groups`` (each level's bin, non-decreasing) and ``prior`` (each level's Dirichlet
    concentration, > 0). No predictors. Parameter ``log_p`` (dims ``level``)."""

    groups: tuple[int, ...] = field(default=(), kw_only=True)
    prior: tuple[float, ...] = field(default=(), kw_only=True)

    family = "bin_points"

    def __post_init__(self) -> None:
        super().__post_init__()
        g = np.asarray(self.groups, dtype=np.int64)
        a = np.asarray(self.prior, dtype=np.float64)
        if g.shape != (self.n_levels,) or a.shape != (self.n_levels,):
            raise ValueError(
                f"Part '{self.name}': 'groups' and 'prior' need one entry per level "
                f"({self.n_levels}); got {g.size} and {a.size}."
            )
        if np.any(np.diff(g) < 0):
            raise ValueError(f"Part '{self.name}': 'groups' must be non-decreasing bins.")
        if not np.all(np.isfinite(a) & (a > 0)):
            raise ValueError(f"Part '{self.name}': every 'prior' concentration must be > 0.")

    @cached_property
    def layout(self) -> Layout:
        return Layout((Param("log_p", (self.n_levels,), "none", ("dirichlet", self.prior)),))

    def dims(self):
        return {"log_p": ("level",)}

    def _loglik_grad(self, values, arrays):
        lp, counts = values["log_p"], arrays["counts"]
        used = counts > 0
        return float(np.sum(np.where(used, counts * lp, 0.0))), {"log_p": counts.copy()}

    def _key_table(self, params, rows, key_row, key_y):
        return params["log_p"][:, key_y.astype(np.int64)]

    def _exact(self, counts, n_draws, rng) -> dict:
        r"""Draws of each bin's :math:`\mathrm{Dirichlet}(\text{prior} + C)` (log shares)."""
        shape = np.asarray(self.prior) + counts
        return {"log_p": log_dirichlet(shape, np.asarray(self.groups), n_draws, rng)}

    def sample(self, params, X, u):
        """Levels by inversion over all levels as one categorical (the bins' shares summing to
        the number of bins): use :meth:`sample_in_bins`, which draws inside a given bin."""
        raise NotImplementedError(
            f"Part '{self.name}' draws a level inside a given bin: use sample_in_bins."
        )

    def sample_in_bins(self, params, bins: np.ndarray, u: np.ndarray) -> np.ndarray:
        """A level (n,) of each record's bin ``bins`` by inversion of the bin's shares at
        ``u`` in (0, 1) (the smallest level whose cumulative share in the bin reaches u)."""
        lp = np.asarray(params["log_p"], dtype=np.float64)
        g = np.asarray(self.groups, dtype=np.int64)
        j = np.asarray(bins, dtype=np.int64)
        u = np.asarray(u, dtype=np.float64)
        first = np.searchsorted(g, j, side="left")
        end = np.searchsorted(g, j, side="right")
        if np.any(first == end):
            bad = int(j[np.flatnonzero(first == end)[0]])
            raise ValueError(f"Part '{self.name}' has no level in bin {bad}.")
        p = np.exp(lp)
        csum = np.cumsum(p)
        base = np.where(first > 0, csum[np.maximum(first - 1, 0)], 0.0)
        total = csum[end - 1] - base
        target = base + u * total
        k = np.searchsorted(csum, target, side="left")
        return np.clip(k, first, end - 1)
