"""The compiled-sampler cache: one compiled sampler per model *structure*, reused across fits.

Compilation is keyed by what the compiled function depends on (the model's repr, its columns,
the sampler), never by the data: every fit passes its own data and weights to the sampler, so a
result never depends on data a later fit swapped in. On the sufficient-statistics path one
sampler serves every n (the statistics are swapped in at each fit, see
:class:`~pseudopost.fitting.sufficient.SufficientSampler`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping

import numpy as np

from pseudopost.fitting.sufficient import SufficientSampler, total_statistics
from pseudopost.models.base import SynthModel

__all__ = ["CACHE_SIZE", "clear", "statistics_sampler"]

CACHE_SIZE = 8
_STATISTICS: OrderedDict[Hashable, SufficientSampler] = OrderedDict()


def statistics_sampler(
    model: SynthModel, arrays: Mapping[str, np.ndarray], kind: str
) -> SufficientSampler:
    """The sufficient-statistics sampler of ``model`` for sampler ``kind``, built once per model
    structure whatever n (``arrays``, any records of the model's columns, give the statistics'
    shapes on first use)."""
    key = (repr(model), tuple(arrays), kind)
    if key not in _STATISTICS:
        n = len(next(iter(arrays.values())))
        stats = total_statistics(model, arrays, np.ones(n))
        _STATISTICS[key] = SufficientSampler(model, stats, kind)
        while len(_STATISTICS) > CACHE_SIZE:
            _STATISTICS.popitem(last=False)
    _STATISTICS.move_to_end(key)
    return _STATISTICS[key]


def clear() -> None:
    """Forget every compiled sampler (tests; freeing memory)."""
    _STATISTICS.clear()
