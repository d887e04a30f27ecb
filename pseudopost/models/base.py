r"""The model protocol, split by capability.

Every model subclasses :class:`SynthModel`, the base protocol the mechanism uses on any model:

* :attr:`~SynthModel.columns` and :attr:`~SynthModel.observed` name the data columns and the
  synthesized outcomes;
* :meth:`~SynthModel.prepare` validates the data (before any sampling) and returns
  :class:`Prepared` arrays; the caller's frame is never modified;
* :meth:`~SynthModel.simulate` draws synthetic frames from chosen posterior draws and
  :meth:`~SynthModel.to_frame` maps one draw's values back to the data's columns.

How a model is fitted is a capability, each a runtime-checkable protocol (``isinstance``
answers; :func:`capabilities` lists a model's by name). A model has ``"pymc"`` or ``"parts"``:

* ``"pymc"`` (:class:`BuiltModel`): :meth:`~BuiltModel.build` returns one ordinary (unweighted)
  PyMC model whose observed variables hold one record per row, its per-record data in
  ``pm.Data`` without fixed ``dims`` so that the accountant can evaluate any slice of records.
  Sensitive ranges are of this capability, and :class:`SynthModel` gives their defaults:
  :meth:`~SynthModel.outcome_values`, the single sensitive outcome (a model with none, or
  with no order, refuses ranges there with the reason), and
  :meth:`~SynthModel.log_prob_range_graph`, :math:`\log P_\theta(a_i \le X_i \le b_i)` from
  the model's log-CDF in log space (:math:`\log(e^{\log F(b)} - e^{\log F(a)})` by
  ``logdiffexp``; for a discrete outcome both endpoints count: :math:`F(b) - F(a - 1)`).
  Every ready model, a user's PyMC model (:class:`~pseudopost.models.PyMCModel`) and a
  composite of ready models.
* ``"parts"`` (:class:`PartsModel`): fitted part by part in NumPy from each part's grouped
  statistics, with no joint PyMC model: :meth:`~PartsModel.parts` and
  :meth:`~PartsModel.iter_part_data` (:meth:`~PartsModel.part_data`). The whole-file model
  (:class:`~pseudopost.models.file.FileModel`).

and, besides, ``"levels"`` (:class:`LevelsModel`): :meth:`~LevelsModel.level_groups`, each
record's level of every categorical part, the groups a weight floor keeps (the whole-file model).
The mechanism asks for a capability, never for a class, and
:func:`pseudopost.checks.check_model` checks each capability a model has.

A built model that can invert its conditional CDF also defines
:meth:`~SynthModel.sample_outcome`, :math:`x^*_i = F^{-1}_\theta(u_i \mid z_i)`, from
record-indexed uniforms (``pseudopost._streams.record_uniforms``); :meth:`SynthModel.simulate`
then synthesizes dataset j from the uniforms of stream :func:`synthesis_stream` (j, column), so
synthesis is identical however the records are chunked. A composite (sequential) model declares
each column model inside one ``pm.Model`` with :meth:`~SynthModel.declare` and a name
``prefix``.

The weighting (:func:`~pseudopost.models.weighting.weighted_model`), the per-record
log-likelihood (:class:`~pseudopost.models.loglik.RecordFunction`) and synthesis are generic over
the built models, so a later backend can change how a model is built and evaluated without
changing the mechanism's public API.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

__all__ = [
    "CAPABILITIES",
    "BuiltModel",
    "LevelsModel",
    "PartsModel",
    "Prepared",
    "SynthModel",
    "capabilities",
    "log_diff",
    "synthesis_stream",
]

#: streams per synthetic dataset: column j of dataset d uses stream ``d * STREAMS_PER_DATASET + j``
STREAMS_PER_DATASET = 2**16


def log_diff(a: pt.TensorVariable, b: pt.TensorVariable) -> pt.TensorVariable:
    r""":math:`\log(e^a - e^b)` for :math:`a \ge b` (``logdiffexp``), and :math:`-\infty` when
    both are :math:`-\infty` (an empty or underflowed range; ``logdiffexp`` gives NaN there)."""
    return pt.switch(pt.eq(a, -np.inf), -np.inf, pm.math.logdiffexp(a, b))


def synthesis_stream(dataset: int, column: int) -> int:
    """The ``record_uniforms`` stream of ``column`` in synthetic
    ``dataset``: ``dataset * 2**16 + column`` (distinct for every pair with column < 2**16)."""
    for name, v in (("dataset", dataset), ("column", column)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"'{name}' must be a non-negative integer; got {v!r}.")
    if column >= STREAMS_PER_DATASET:
        raise ValueError(f"'column' must be below {STREAMS_PER_DATASET}; got {column}.")
    return int(dataset) * STREAMS_PER_DATASET + int(column)


@dataclass(frozen=True)
class Prepared:
    """Validated data for one model: float64 arrays by column name and the record count.

    A categorical, binary or ordinal column is held as its integer codes 0..K-1 (as float64 in
    ``arrays``); ``categories[column]`` lists its K levels in code order, so synthetic output
    maps codes back to exactly the input's levels and ``dtypes[column]``.
    """

    arrays: dict[str, np.ndarray]
    n: int
    index: pd.Index
    dtypes: dict[str, object] = field(default_factory=dict)
    categories: dict[str, tuple] = field(default_factory=dict)


@runtime_checkable
class BuiltModel(Protocol):
    """Capability ``"pymc"``: built as one PyMC model (every ready model, a user's
    :class:`~pseudopost.models.PyMCModel`). Sensitive ranges are of this capability, by the
    defaults of :meth:`SynthModel.outcome_values` and :meth:`SynthModel.log_prob_range_graph`."""

    def build(self, prepared: Prepared) -> pm.Model:
        """The unweighted PyMC model for the prepared data."""


@runtime_checkable
class PartsModel(Protocol):
    """Capability ``"parts"``: fitted part by part in NumPy, with no joint PyMC model (the
    whole-file :class:`~pseudopost.models.file.FileModel`).

    Its parameters are its parts' (``"{part}::{parameter}"``); for fixed weights the pseudo
    posterior factorises over the parts, each fitted alone from its grouped statistics.
    """

    def parts(self, prepared: Prepared) -> list:
        """The model's parts (:class:`~pseudopost.models.parts.Part`), in fitting order."""

    def part_data(self, prepared: Prepared) -> list:
        """Each part's record data (:class:`~pseudopost.models.parts.PartData`), in
        :meth:`parts` order."""

    def iter_part_data(self, prepared: Prepared) -> Iterator[tuple]:
        """``(part, data)`` pairs, as :meth:`parts` and :meth:`part_data`, built one at a time."""


@runtime_checkable
class LevelsModel(Protocol):
    """Capability ``"levels"``: categorical levels that ``weight_floor``, ``rake_min_weight``
    and ``part_rake`` of :class:`~pseudopost.PseudoPosterior` keep."""

    def level_groups(
        self, prepared: Prepared, *, values: int = 0, runs: int = 0
    ) -> dict[str, np.ndarray]:
        """Per level part, each record's level as an integer code (-1 where the part is not
        active); with ``values`` > 0 also each value part over at most that many outcome
        points, each record's point, and with ``runs`` > 0 each value part over more points,
        each record's run of consecutive points (what ``part_rake`` rakes)."""


#: capability name -> its protocol
CAPABILITIES: dict[str, type] = {"pymc": BuiltModel, "parts": PartsModel, "levels": LevelsModel}


def capabilities(model: object) -> tuple[str, ...]:
    """The names of the capabilities (:data:`CAPABILITIES`) ``model`` has."""
    return tuple(name for name, protocol in CAPABILITIES.items() if isinstance(model, protocol))


class SynthModel(ABC):
    """Base protocol of a pseudopost synthesizing model; its capabilities (``"pymc"``,
    ``"parts"``, ``"levels"``) say how it is fitted (module docstring)."""

    #: names of the synthesized outcomes (a built model's observed variables, one record per row)
    observed: tuple[str, ...]
    #: True when the outcome is integer-valued (ranges then count both endpoints)
    discrete: bool = False
    #: uniforms per record that :meth:`sample_outcome` consumes (2 for a hurdle or mixture)
    uniforms_per_record: int = 1

    @property
    @abstractmethod
    def columns(self) -> list[str]:
        """Data columns the model uses."""

    @abstractmethod
    def prepare(self, data: pd.DataFrame | None) -> Prepared:
        """Validate ``data`` and return its arrays; raise a clear error on bad input."""

    def coords(self, prefix: str = "", prepared: Prepared | None = None) -> dict[str, list]:
        """Coordinates :meth:`declare` uses, with dimension names prefixed by ``prefix``."""
        return {}

    def declare(self, prepared: Prepared, prefix: str = "") -> None:
        """Declare the model inside the active ``pm.Model``: parameters named ``prefix + name``,
        the observed variable named after the outcome (not prefixed). Composite models use it."""
        raise NotImplementedError(f"{type(self).__name__} cannot be declared inside another model.")

    @abstractmethod
    def to_frame(self, prepared: Prepared, predictive: dict[str, np.ndarray]) -> pd.DataFrame:
        """A synthetic DataFrame from one posterior-predictive draw of each observed variable."""

    def outcome_values(self, prepared: Prepared) -> np.ndarray:
        """The values of the (single) sensitive outcome, used for sensitive ranges (capability
        ``"pymc"``)."""
        if not isinstance(self, BuiltModel):
            raise ValueError(
                f"Sensitive ranges need a model built as one PyMC model (capability 'pymc'); "
                f"{type(self).__name__} has {list(capabilities(self))}."
            )
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
        from pseudopost.models.weighting import rv_logprob

        rv = model[self.observed[0]]
        lo = lower - 1.0 if self.discrete else lower
        log_lo = rv_logprob(model, rv, lo, "logcdf")
        left = log_diff(rv_logprob(model, rv, upper, "logcdf"), log_lo)
        if type(self).log_survival is SynthModel.log_survival:

            def survival(v):  # PyMC's logccdf, on the model; where PyMC derives it as
                # log1mexp(logcdf) and the log-CDF rounds above 0 it is NaN: the survival is 0
                s = rv_logprob(model, rv, v, "logccdf")
                c = pt.minimum(rv_logprob(model, rv, v, "logcdf"), 0.0)
                return pt.switch(pt.isnan(s), pt.log1mexp(c), s)

        else:  # a model's stabler closed form
            survival = lambda v: self.log_survival(rv, v)  # noqa: E731
        right = log_diff(survival(lo), survival(upper))
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

        ``base`` is the built model of a ``"pymc"`` model (a ``"parts"`` model, which has
        none, overrides this method and ignores it). A model with :meth:`sample_outcome` draws
        dataset j by inversion under flat draw ``chosen[j]`` from the record-indexed uniforms of
        stream ``synthesis_stream(j, 0)`` (``seed`` is the release's integer seed), so the
        result does not depend on how records are chunked. Otherwise (e.g. a user's PyMC model): a posterior-predictive draw of every
        observed variable under that draw. Either way :meth:`to_frame` maps it back. A
        sequential model overrides this to draw its columns in order, each conditioned on the
        synthetic values of the columns before it.
        """
        if self.inverts:
            return self._simulate_by_inversion(prepared, base, posterior, chosen, seed)
        from pseudopost.models.predictive import predictive_draws

        pp = predictive_draws(base, posterior, self.observed, chosen, seed)
        return [
            self.to_frame(prepared, {k: v[j] for k, v in pp.items()}) for j in range(len(chosen))
        ]

    def _simulate_by_inversion(
        self, prepared: Prepared, base: pm.Model, posterior: xr.Dataset, chosen, seed: int
    ) -> list[pd.DataFrame]:
        from pseudopost._streams import record_uniforms
        from pseudopost.models.loglik import stack_draws

        if len(self.observed) != 1:
            raise ValueError("Synthesis by inversion needs exactly one observed outcome.")
        flat = stack_draws(posterior, [rv.name for rv in base.free_RVs])
        predictors = {k: v for k, v in prepared.arrays.items() if k not in self.observed}
        frames = []
        for j, m in enumerate(np.asarray(chosen, dtype=np.int64)):
            u = record_uniforms(
                int(seed), synthesis_stream(j, 0), 0, prepared.n, self.uniforms_per_record
            )
            params = {k: v[m] for k, v in flat.items()}
            x = self.sample_outcome(params, predictors, u)
            frames.append(self.to_frame(prepared, {self.observed[0]: x}))
        return frames

    @property
    def inverts(self) -> bool:
        """Whether the model synthesizes by inversion (defines :meth:`sample_outcome`)."""
        return type(self).sample_outcome is not SynthModel.sample_outcome

    def sample_outcome(
        self,
        params: Mapping[str, np.ndarray],
        predictors: Mapping[str, np.ndarray],
        u: np.ndarray,
    ) -> np.ndarray:
        r"""Synthesis by inversion, :math:`x_i = F^{-1}(u_i \mid \theta, z_i)`.

        ``params``: one posterior draw keyed by the unprefixed parameter names; ``predictors``:
        float64 arrays, one value per record; ``u``: uniforms in (0, 1) of shape
        ``(n, uniforms_per_record)``. Returns float64 values of shape ``(n,)`` on the prepared
        scale (codes 0..K-1 for a categorical, binary or ordinal outcome; :meth:`to_frame`
        maps them back). Not every model defines it (see :attr:`inverts`).
        """
        raise NotImplementedError(f"{type(self).__name__} does not synthesize by inversion.")

    def log_survival(self, rv: pt.TensorVariable, value: pt.TensorVariable) -> pt.TensorVariable:
        r""":math:`\log P_\theta(X > x)`; PyMC's ``logccdf`` unless a model has a stabler form
        (:meth:`log_prob_range_graph` derives the default on the model's own variables)."""
        return pm.logccdf(rv, value)
