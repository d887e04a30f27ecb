"""A part's exact grouped statistics (:class:`Stats`): the weighted log-likelihood's sums by
design row (and by outcome value where the family needs it); statistics of record blocks add."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from pseudopost.models.parts.data import group_rows

__all__ = ["ROW_FIELDS", "VALUE_FIELDS", "Stats"]

#: statistics keyed by design row (first axis aligned with ``rows``)
ROW_FIELDS = ("w", "wy", "counts")
#: statistics keyed by distinct outcome value (aligned with ``values``)
VALUE_FIELDS = ("vweights",)


def _merge_keyed(keys: list[np.ndarray], fields: list[dict[str, np.ndarray]]):
    """Union of sorted key arrays (rows (U, p) or values (V,)) and per-key sums of fields."""
    allk = np.concatenate(keys, axis=0)
    if allk.ndim == 2 and allk.shape[1] == 0:
        uniq = np.zeros((1 if allk.shape[0] else 0, 0))
        inv = np.zeros(allk.shape[0], dtype=np.int64)
    elif allk.shape[0] == 0:
        uniq, inv = allk, np.zeros(0, dtype=np.int64)
    else:
        uniq, inv = group_rows(allk if allk.ndim == 2 else allk[:, None])
        uniq = uniq if allk.ndim == 2 else uniq[:, 0]
    merged = {}
    for name in fields[0]:
        stacked = np.concatenate([f[name] for f in fields], axis=0)
        out = np.zeros((uniq.shape[0], *stacked.shape[1:]))
        np.add.at(out, inv, stacked)
        merged[name] = out
    return uniq, merged


@dataclass(frozen=True, eq=False)
class Stats:
    """Exact grouped statistics of one part's weighted log-likelihood (float64 arrays).

    Keys by family (U distinct design rows ``rows`` (U, p), K levels, V distinct outcomes):

    ========================  ====================================================================
    bernoulli                 ``rows``, ``w`` (U) :math:`\\sum w_i`, ``wy`` (U) :math:`\\sum w_i y_i`
    categorical, ordinal      ``rows``, ``counts`` (U, K) :math:`\\sum w_i 1[y_i = k]`
    poisson                   ``rows``, ``w``, ``wy``, ``const`` :math:`-\\sum w_i \\log y_i!`
    (zero-truncated) neg.bin  ``rows``, ``w``, ``wy``, ``values`` (V), ``vweights`` (V), ``const``
    normal, lognormal         ``sw, swy, swyy, ztwz, ztwy, const``
                              (``pseudopost.fitting.sufficient.block_statistics``' keys)
    dirichlet_categorical     ``counts`` (K)
    ========================  ====================================================================

    ``a + b`` is the statistics of the union of the two blocks: ``rows`` (and ``values``) are
    united (sorted, distinct) and the per-row (per-value) sums added; every other array is
    added. Exact up to floating-point rounding of the sums.
    """

    family: str
    arrays: Mapping[str, np.ndarray] = field(repr=False)

    def __add__(self, other: Stats) -> Stats:
        if not isinstance(other, Stats):
            return NotImplemented
        if other.family != self.family or set(other.arrays) != set(self.arrays):
            raise ValueError(
                f"Cannot add statistics of '{other.family}' ({sorted(other.arrays)}) to "
                f"'{self.family}' ({sorted(self.arrays)})."
            )
        a, b = self.arrays, other.arrays
        out: dict[str, np.ndarray] = {}
        done = set()
        if "rows" in a:
            names = [k for k in ROW_FIELDS if k in a]
            out["rows"], merged = _merge_keyed(
                [a["rows"], b["rows"]], [{k: a[k] for k in names}, {k: b[k] for k in names}]
            )
            out.update(merged)
            done |= {"rows", *names}
        if "values" in a:
            names = [k for k in VALUE_FIELDS if k in a]
            out["values"], merged = _merge_keyed(
                [a["values"], b["values"]], [{k: a[k] for k in names}, {k: b[k] for k in names}]
            )
            out.update(merged)
            done |= {"values", *names}
        for k in a:
            if k not in done:
                out[k] = np.asarray(a[k] + b[k], dtype=np.float64)
        return Stats(self.family, out)

    @property
    def n_patterns(self) -> int:
        """Number of distinct design rows (1 for families without rows)."""
        return int(self.arrays["rows"].shape[0]) if "rows" in self.arrays else 1
