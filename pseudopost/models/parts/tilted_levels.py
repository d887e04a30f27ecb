r"""Tilted-levels part: a nested column's group shares tilted by its relation to other columns.

The bin-points part gives a child column's levels :math:`k` one Dirichlet per level :math:`g`
of its parent (:mod:`pseudopost.models.file.nesting`). Given the parent alone, a 538-level
occupation code keeps its major group's relations with the other columns but loses its own
(within a group, a code held mostly by women, or by high earners). The tilted-levels part adds
a naive-Bayes factor per coded input :math:`x_j` (an earlier column's level, or a number's bin):

.. math::
    \theta_{\cdot \mid g} \sim \mathrm{Dirichlet}(a_g), \qquad
    \phi_{j, k, \cdot} \sim \mathrm{Dirichlet}(b \mathbf 1_{L_j}), \qquad
    p(y = k, x \mid g) = \theta_{k \mid g} \prod_j \phi_{j, k, x_j},

so each record's log-likelihood is :math:`\log\theta_{y_i \mid g_i} + \sum_j
\log\phi_{j, y_i, x_{ij}}` and synthesis draws the child from the conditional

.. math::
    P(y = k \mid g, x) \propto \theta_{k \mid g} \prod_j \phi_{j, k, x_j}

(naive Bayes: the inputs are taken as independent given the child level, so the tilt
overstates their joint evidence where they are correlated; the prior's :math:`b` pseudo-records
per cell keep a rare level's tilt small).

**Levels.** The part's levels are the bin-points part's (held (group, child level) pairs and one
rest per group, ``groups`` and ``prior``); ``child[l]`` is level l's child level, -1 for a rest.
Records only ever hold held levels, so a record's child level is ``child[y]``.

**Conjugacy.** With weighted counts :math:`C_l` of the levels and
:math:`D_{j,k,v} = \sum_i w_i 1[\text{child}_i = k, x_{ij} = v]`, the pseudo posterior
factorises: :math:`\mathrm{Dirichlet}(a + C)` per group and :math:`\mathrm{Dirichlet}(b +
D_{j,k,\cdot})` per (input, child level), all drawn exactly on the log scale
(:func:`~pseudopost.models.parts.bin_points.log_dirichlet`); the rows of child levels no record
holds are drawn from their prior, so the draws are the full model's posterior.

**Privacy.** The accountant takes the record's whole term above (Savitsky, Williams & Hu 2022,
eq. 3); the inputs' terms enlarge the Lipschitz bound of a record whose child level is rare
among its inputs' values, and the risk weights shrink its counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from pseudopost.models.parts.bin_points import BinPointsPart, log_dirichlet
from pseudopost.models.parts.layout import Layout, Param

__all__ = ["TiltedLevelsPart"]


@dataclass(frozen=True)
class TiltedLevelsPart(BinPointsPart):
    """Group shares tilted by coded inputs (module docstring). ``predictors`` name the J inputs,
    whose design columns hold codes 0..``n_codes[j]``-1; ``child`` is each level's child level
    (-1 for a group's rest), ``n_child`` the child's K levels and ``concentration`` b.
    Parameters ``log_p`` (dims ``level``) and ``log_phi_j`` (dims ``child``, ``x{j}``)."""

    child: tuple[int, ...] = field(default=(), kw_only=True)
    n_child: int = field(default=1, kw_only=True)
    n_codes: tuple[int, ...] = field(default=(), kw_only=True)
    concentration: float = field(default=1.0, kw_only=True)

    family = "tilted_levels"
    codes_as_predictors = True

    def __post_init__(self) -> None:
        super().__post_init__()
        kid = np.asarray(self.child, dtype=np.int64)
        if kid.shape != (self.n_levels,) or np.any(kid >= self.n_child) or np.any(kid < -1):
            raise ValueError(
                f"Part '{self.name}': 'child' needs one child level in -1..{self.n_child - 1} "
                f"per level ({self.n_levels}); got {len(self.child)} entries."
            )
        if len(self.n_codes) != self.p or any(int(m) < 1 for m in self.n_codes):
            raise ValueError(
                f"Part '{self.name}': 'n_codes' needs a positive number of codes per input "
                f"({self.p}); got {list(self.n_codes)}."
            )
        b = self.concentration
        if not (np.isfinite(b) and b > 0):
            raise ValueError(f"'concentration' must be a finite number > 0. Got {b!r}.")

    @cached_property
    def layout(self) -> Layout:
        tilt = tuple(
            Param(f"log_phi_{j}", (self.n_child, int(m)), "none",
                  ("dirichlet", (self.concentration,) * (self.n_child * int(m))))
            for j, m in enumerate(self.n_codes)
        )  # fmt: skip
        return Layout((*super().layout.params, *tilt))

    def dims(self):
        return {"log_p": ("level",), **{f"log_phi_{j}": ("child", f"x{j}") for j in range(self.p)}}

    def coords(self):
        out = {"level": [str(k) for k in range(self.n_levels)],
               "child": [str(k) for k in range(self.n_child)]}  # fmt: skip
        out.update({f"x{j}": [str(v) for v in range(int(m))] for j, m in enumerate(self.n_codes)})
        return out

    def _in_support(self, y):
        ok = super()._in_support(y)
        kid = np.asarray(self.child, dtype=np.int64)
        ok[ok] = kid[y[ok].astype(np.int64)] >= 0  # a record holds a held level, never a rest
        return ok

    def check_data(self, data):
        data = super().check_data(data)
        Xa = data.X[data.active]
        for j, m in enumerate(self.n_codes):
            x = Xa[:, j]
            bad = (x != np.round(x)) | (x < 0) | (x >= m)
            if bad.any():
                raise ValueError(
                    f"Part '{self.name}': input {self.predictors[j]!r} must hold codes in "
                    f"0..{int(m) - 1}; got {float(x[bad][0])!r}."
                )
        return data

    def _statistics(self, y, X, w) -> dict:
        out = super()._statistics(y, X, w)
        kid = np.asarray(self.child, dtype=np.int64)[y.astype(np.int64)]
        for j, m in enumerate(self.n_codes):
            cell = kid * int(m) + X[:, j].astype(np.int64)
            d = np.bincount(cell, weights=w, minlength=self.n_child * int(m))
            out[f"tilt_{j}"] = d.reshape(self.n_child, int(m)).astype(np.float64)
        return out

    def _loglik_grad(self, values, arrays):
        ll, grads = super()._loglik_grad(values, arrays)
        for j in range(self.p):
            lphi, d = values[f"log_phi_{j}"], arrays[f"tilt_{j}"]
            ll += float(np.sum(np.where(d > 0, d * lphi, 0.0)))
            grads[f"log_phi_{j}"] = d.copy()
        return ll, grads

    def _key_table(self, params, rows, key_row, key_y):
        y = key_y.astype(np.int64)
        kid = np.asarray(self.child, dtype=np.int64)[y]
        out = params["log_p"][:, y]
        for j in range(self.p):
            x = rows[key_row, j].astype(np.int64)
            out = out + params[f"log_phi_{j}"][:, kid, x]
        return out

    def exact_draws(self, stats, n_draws, rng) -> dict:
        """Exact draws of every group's and every (input, child level)'s Dirichlet."""
        out = super().exact_draws(stats, n_draws, rng)
        for j, m in enumerate(self.n_codes):
            d = np.asarray(stats.arrays[f"tilt_{j}"], np.float64).ravel()
            rows = np.repeat(np.arange(self.n_child), int(m))
            flat = log_dirichlet(self.concentration + d, rows, n_draws, rng)
            out[f"log_phi_{j}"] = flat.reshape(n_draws, self.n_child, int(m))
        return out

    def sample_tilted(
        self, params, group_table: np.ndarray, groups: np.ndarray, X: np.ndarray,
        u: np.ndarray, chunk: int = 4096,
    ) -> np.ndarray:  # fmt: skip
        r"""A child level (n,) of each record by inversion at ``u`` of
        :math:`P(k \mid g, x) \propto \exp(\text{group\_table}[g, k] + \sum_j
        \log\phi_{j, k, x_j})`, with ``group_table`` (G, K) the log shares of each group's
        child levels (a nested column's, from its parent's groups)."""
        n, K = groups.shape[0], self.n_child
        out = np.empty(n, dtype=np.int64)
        phis = [np.asarray(params[f"log_phi_{j}"], np.float64) for j in range(self.p)]
        for s in range(0, n, chunk):
            e = slice(s, min(n, s + chunk))
            logit = group_table[groups[e]].copy()
            for j, lphi in enumerate(phis):
                logit += lphi[:, X[e, j].astype(np.int64)].T
            logit -= logit.max(axis=1, keepdims=True)
            c = np.cumsum(np.exp(logit), axis=1)
            target = u[e] * c[:, -1]
            out[e] = np.minimum((c < target[:, None]).sum(axis=1), K - 1)
        return out
