r"""Dirichlet-categorical part: a categorical column without predictors (:class:`DirichletCategorical`).

:math:`p \sim \mathrm{Dirichlet}(a\mathbf 1_K)`, :math:`y_i \sim \mathrm{Categorical}(p)`,
``concentration`` a = 1 by default. Conjugate: with weighted counts
:math:`C_k = \sum_i w_i 1[y_i = k]` the pseudo posterior is exactly
:math:`\mathrm{Dirichlet}(a + C)` (the weighted likelihood :math:`\prod_k p_k^{C_k}` has the
Dirichlet kernel's form for any real :math:`C_k \ge 0`), so :meth:`exact_draws` samples it
without MCMC. For completeness the density is also written out on PyMC's simplex transform
(:math:`p = \mathrm{softmax}(y_1, \dots, y_{K-1}, -\sum_k y_k)`, log-Jacobian
:math:`\log K + \sum_k \log p_k`). Inversion: the smallest code k with
:math:`\sum_{l \le k} p_l \ge u`, as the ready model.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from pseudopost.models.parts.base import Part
from pseudopost.models.parts.categorical import check_levels, code_support
from pseudopost.models.parts.layout import Layout, Param
from pseudopost.models.parts.statistics import Stats

__all__ = ["ConjugateLevelsPart", "DirichletCategoricalPart"]


@dataclass(frozen=True)
class ConjugateLevelsPart(Part):
    """A part over the codes 0..``n_levels``-1 without predictors whose statistics are the
    weighted counts of its levels and whose pseudo posterior is drawn exactly
    (:meth:`exact_draws` checks the request, :meth:`_exact` draws): the Dirichlet parts."""

    n_levels: int = field(default=2, kw_only=True)

    conjugate = True
    #: whether the design's columns are coded inputs of the part's own (the tilted-levels part)
    codes_as_predictors: ClassVar[bool] = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_levels(self, self.n_levels)
        if self.predictors and not self.codes_as_predictors:
            raise ValueError(
                f"Part '{self.name}': a {self.family} part takes no predictors; got "
                f"{list(self.predictors)}{self._predictors_hint}."
            )

    _predictors_hint = ""

    @property
    def support(self) -> str:
        return f"an integer code in 0..{self.n_levels - 1}"

    def _in_support(self, y):
        return code_support(y, self.n_levels)

    def coords(self):
        return {"level": [str(k) for k in range(self.n_levels)]}

    def _statistics(self, y, X, w) -> dict:
        counts = np.bincount(y.astype(np.int64), weights=w, minlength=self.n_levels)
        return {"counts": counts.astype(np.float64)}

    def exact_draws(self, stats: Stats, n_draws: int, rng: np.random.Generator) -> dict:
        """``n_draws`` exact draws of the pseudo posterior given the weighted counts."""
        self._check_stats(stats)
        if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer) or n_draws < 1:
            raise ValueError(f"'n_draws' must be a positive integer. Got {n_draws!r}.")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"'rng' must be a numpy Generator. Got {type(rng).__name__}.")
        return self._exact(np.asarray(stats.arrays["counts"], np.float64), int(n_draws), rng)

    @abstractmethod
    def _exact(self, counts: np.ndarray, n_draws: int, rng: np.random.Generator) -> dict:
        """The draws (parameter -> array with a leading draw axis) given the counts."""


@dataclass(frozen=True)
class DirichletCategoricalPart(ConjugateLevelsPart):
    """Dirichlet-categorical part with ``n_levels`` levels and no predictors (see the module
    docstring). Parameter ``p`` (dims ``level``: all K levels)."""

    concentration: float = field(default=1.0, kw_only=True)

    family = "dirichlet_categorical"
    _predictors_hint = " (use 'categorical')"

    def __post_init__(self) -> None:
        super().__post_init__()
        a = self.concentration
        if (
            isinstance(a, bool)
            or not isinstance(a, int | float | np.integer | np.floating)
            or not (np.isfinite(a) and a > 0)
        ):
            raise ValueError(f"'concentration' must be a finite number > 0. Got {a!r}.")
        object.__setattr__(self, "concentration", float(a))

    @cached_property
    def layout(self) -> Layout:
        a = (self.concentration,) * self.n_levels
        return Layout((Param("p", (self.n_levels,), "simplex", ("dirichlet", a)),))

    def dims(self):
        return {"p": ("level",)}

    def _loglik_grad(self, values, arrays):
        p, counts = values["p"], arrays["counts"]
        used = counts > 0
        ll = float(np.sum(np.where(used, counts * np.log(p), 0.0)))
        return ll, {"p": np.where(used, counts / p, 0.0)}

    def _key_table(self, params, rows, key_row, key_y):
        return np.log(params["p"][:, key_y.astype(np.int64)])

    def _exact(self, counts, n_draws, rng) -> dict:
        r"""Draws of the pseudo posterior :math:`\mathrm{Dirichlet}(a + C)`."""
        return {"p": rng.dirichlet(self.concentration + counts, size=n_draws)}

    def sample(self, params, X, u):
        params, X, u = self.check_sample_inputs(params, X, u)
        cdf = np.cumsum(params["p"], axis=-1)[..., :-1]
        cdf = np.broadcast_to(cdf, (u.size, cdf.shape[-1]))
        return (cdf < u[:, None]).sum(axis=1).astype(np.float64)
