"""The compiled-sampler cache: one sampler per model *structure*, reused across fits.

Compiling a model costs seconds (numba, about 10 s for a regression); refitting it with other
data of the same structure costs nothing more, because a :class:`~pseudopost.fitting.sampler.
Sampler` takes every fit's data as an argument. So the cache is keyed by what the compiled
function depends on, never by data values:

* :func:`weighted_sampler` (the per-record path): the model's class and description (its
  ``repr``; the model object itself for a user's PyMC model), the names of the built model's
  variables, the names, shapes and dtypes of its data variables, its coordinates (e.g. the levels of a categorical outcome),
  whether the likelihood is censored, and the sampler;
* :func:`statistics_sampler` (the sufficient-statistics path): the model's description, its
  columns and the sampler; one sampler serves every n.

A cached sampler holds no data of any fit (the model it was compiled from keeps the values of
the fit that built it, which no later fit reads), so a result never depends on data a later fit
passed. The per-record *log-likelihood* function is not cached here: the mechanism composes it
on each fit's own model (:func:`pseudopost.privacy.fused.record_function`; PyTensor reuses its
compilation of an identical graph).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping

import numpy as np
import pymc as pm

from pseudopost.fitting.sampler import Sampler, make_sampler
from pseudopost.fitting.sufficient import sufficient_sampler, total_statistics
from pseudopost.models.base import SynthModel
from pseudopost.models.custom import PyMCModel
from pseudopost.models.weighting import value_of, weighted_model

__all__ = ["CACHE_SIZE", "clear", "statistics_sampler", "structure", "weighted_sampler"]

CACHE_SIZE = 8
#: censoring bound the weighted model is compiled with; the bound itself is data, set per fit
_COMPILE_BOUND = 1.0
_STATISTICS: OrderedDict[Hashable, Sampler] = OrderedDict()
_WEIGHTED: OrderedDict[Hashable, tuple[object, Sampler]] = OrderedDict()


def structure(model: SynthModel, built: pm.Model) -> tuple:
    """What a compiled weighted model of ``model`` depends on besides data values (module
    docstring): equal for two builds of the same model on data of the same shape and levels."""
    token = id(model.model) if isinstance(model, PyMCModel) else repr(model)
    data = tuple((v.name, np.shape(value_of(v)), str(value_of(v).dtype)) for v in built.data_vars)
    coords = tuple((k, tuple(map(str, v))) for k, v in built.coords.items() if v is not None)
    return (type(model).__name__, token, tuple(built.named_vars), data, coords)


def weighted_sampler(model: SynthModel, built: pm.Model, *, censored: bool, kind: str) -> Sampler:
    """The sampler of the weighted model (:func:`~pseudopost.models.weighting.weighted_model`)
    of ``built`` (``model.build(prepared)``), compiled once per :func:`structure`, censoring and
    sampler ``kind``. Its data are ``built``'s data variables, the weights ``alpha`` and, when
    ``censored``, the bound ``censor_bound``."""
    key = (*structure(model, built), bool(censored), kind)
    if key not in _WEIGHTED:
        bound = _COMPILE_BOUND if censored else None
        weighted = weighted_model(built, model.observed, censor_bound=bound)
        # a user's model object is kept with its entry so that its id (in the key) stays unique
        owner = model.model if isinstance(model, PyMCModel) else None
        _WEIGHTED[key] = (owner, make_sampler(weighted, kind))
        _trim(_WEIGHTED)
    _WEIGHTED.move_to_end(key)
    return _WEIGHTED[key][1]


def statistics_sampler(model: SynthModel, arrays: Mapping[str, np.ndarray], kind: str) -> Sampler:
    """The sufficient-statistics sampler of ``model`` for sampler ``kind``
    (:func:`~pseudopost.fitting.sufficient.sufficient_sampler`), built once per model structure
    whatever n (``arrays``, any records of the model's columns, give the statistics' shapes on
    first use)."""
    key = (repr(model), tuple(arrays), kind)
    if key not in _STATISTICS:
        n = len(next(iter(arrays.values())))
        stats = total_statistics(model, arrays, np.ones(n))
        _STATISTICS[key] = sufficient_sampler(model, stats, kind)
        _trim(_STATISTICS)
    _STATISTICS.move_to_end(key)
    return _STATISTICS[key]


def _trim(cache: OrderedDict) -> None:
    while len(cache) > CACHE_SIZE:
        cache.popitem(last=False)


def clear() -> None:
    """Forget every compiled sampler (tests; freeing memory)."""
    _STATISTICS.clear()
    _WEIGHTED.clear()
