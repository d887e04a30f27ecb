r"""The model protocol every synthesizer follows (:class:`SynthModel`).

A SynthModel turns a DataFrame into an ordinary (unweighted) PyMC model whose observed variables
hold one record per row. Everything pseudopost does with a model goes through four methods:

* :meth:`~SynthModel.prepare` validates the data (before any sampling) and returns
  :class:`Prepared` arrays; the caller's frame is never modified.
* :meth:`~SynthModel.build` returns the PyMC model. Per-record data live in ``pm.Data`` without
  fixed ``dims`` so that the accountant can evaluate any slice of records.
* :meth:`~SynthModel.log_prob_range_graph` gives :math:`\log P_\theta(a_i \le X_i \le b_i)`
  from the model's log-CDF, computed in log space
  (:math:`\log(e^{\log F(b)} - e^{\log F(a)})` by ``logdiffexp``); for a discrete outcome
  both endpoints count: :math:`F(b) - F(a - 1)`.
* :meth:`~SynthModel.to_frame` maps posterior-predictive draws back to the data's columns.

The weighting (:func:`~pseudopost.models.weighting.weighted_model`), the per-record
log-likelihood (:class:`~pseudopost.models.loglik.RecordFunction`) and synthesis are generic over
this protocol, so a later sufficient-statistics or Dask backend can change how a model is built
and evaluated without changing the mechanism's public API.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

__all__ = ["Prepared", "SynthModel"]


@dataclass(frozen=True)
class Prepared:
    """Validated data for one model: float64 arrays by column name and the record count."""

    arrays: dict[str, np.ndarray]
    n: int
    index: pd.Index
    dtypes: dict[str, object] = field(default_factory=dict)


class SynthModel(ABC):
    """Protocol of a pseudopost synthesizing model (see the module docstring)."""

    #: names of the observed variables of the built model (one record per row)
    observed: tuple[str, ...]
    #: True when the outcome is integer-valued (ranges then count both endpoints)
    discrete: bool = False

    @property
    @abstractmethod
    def columns(self) -> list[str]:
        """Data columns the model uses."""

    @abstractmethod
    def prepare(self, data: pd.DataFrame | None) -> Prepared:
        """Validate ``data`` and return its arrays; raise a clear error on bad input."""

    @abstractmethod
    def build(self, prepared: Prepared) -> pm.Model:
        """The unweighted PyMC model for the prepared data."""

    @abstractmethod
    def to_frame(self, prepared: Prepared, predictive: dict[str, np.ndarray]) -> pd.DataFrame:
        """A synthetic DataFrame from one posterior-predictive draw of each observed variable."""

    def outcome_values(self, prepared: Prepared) -> np.ndarray:
        """The values of the (single) sensitive outcome, used for sensitive ranges."""
        if len(self.observed) != 1:
            raise ValueError("Sensitive ranges need a model with exactly one observed outcome.")
        return prepared.arrays[self.observed[0]]

    def log_prob_range_graph(
        self, model: pm.Model, lower: pt.TensorVariable, upper: pt.TensorVariable
    ) -> pt.TensorVariable:
        r"""Per-record :math:`\log P_\theta(\text{lower}_i \le X_i \le \text{upper}_i)`.

        Computed in log space, from the left tail
        (:math:`\log F(b) \ominus \log F(a)`) when the range lies below the median and from
        the right tail (:math:`\log S(a) \ominus \log S(b)`, S = 1 - F) above it, so that
        neither tail cancels to :math:`-\infty`. Discrete outcomes use :math:`a - 1` for the
        lower endpoint (both endpoints count).
        """
        rv = model[self.observed[0]]
        lo = lower - 1.0 if self.discrete else lower
        log_lo = pm.logcdf(rv, lo)
        left = pm.math.logdiffexp(pm.logcdf(rv, upper), log_lo)
        right = pm.math.logdiffexp(self.log_survival(rv, lo), self.log_survival(rv, upper))
        return pt.switch(pt.gt(log_lo, np.log(0.5)), right, left)

    def simulate(
        self,
        prepared: Prepared,
        base: pm.Model,
        posterior: xr.Dataset,
        chosen: np.ndarray,
        seed: int,
    ) -> list[pd.DataFrame]:
        """One synthetic DataFrame per chosen flat posterior draw (chain-major index).

        Default: a posterior-predictive draw of every observed variable under that draw, mapped
        back by :meth:`to_frame`. A sequential model overrides this to draw its columns in order,
        each conditioned on the synthetic values of the columns before it.
        """
        from .predictive import predictive_draws

        pp = predictive_draws(base, posterior, self.observed, chosen, seed)
        return [
            self.to_frame(prepared, {k: v[j] for k, v in pp.items()}) for j in range(len(chosen))
        ]

    def log_survival(self, rv: pt.TensorVariable, value: pt.TensorVariable) -> pt.TensorVariable:
        r""":math:`\log P_\theta(X > x)`; PyMC's ``logccdf`` unless a model has a stabler form."""
        return pm.logccdf(rv, value)
