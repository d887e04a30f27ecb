r"""A part's records grouped once by (design row, outcome): statistics for any weights in O(n).

A part's weighted log-likelihood depends on the records only through their (design row,
outcome) pairs, so records that share one may be merged, their weights summed:

.. math::
    \sum_i w_i a_i f(y_i \mid z_i) = \sum_g \Bigl(\sum_{i \in g} w_i\Bigr) f(y_g \mid z_g).

:class:`GroupedData` groups a part's active records once (``row_keys`` over the design and the
outcome); :meth:`GroupedData.statistics` then gives the exact grouped statistics for any weights
from one ``bincount`` (equal to :meth:`Part.statistics <pseudopost.models.parts.base.Part.
statistics>` on the records, up to the order of floating-point sums), and the per-record
evaluation of the accountant maps each record to its group (:attr:`GroupedData.records`). The
whole-file synthesizer refits each part several times (unweighted, weighted, calibration) and
holds only one design matrix at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pseudopost.models.parts.base import Encoded, Part
from pseudopost.models.parts.data import PartData, check_weights, group_keys, row_keys
from pseudopost.models.parts.statistics import Stats

__all__ = ["GroupedData", "encode_records"]


@dataclass(frozen=True, eq=False)
class GroupedData:
    """One record per distinct (design row, outcome) of a part's active records.

    Attributes
    ----------
    data : PartData
        The groups' design rows and outcomes (all active).
    records : numpy.ndarray
        int64 (n,): each record's group, -1 where the record is not active.
    """

    data: PartData
    records: np.ndarray

    @classmethod
    def of(cls, part: Part, data: PartData) -> GroupedData:
        """Group ``data``'s active records (checked against ``part``)."""
        data = part.check_data(data)
        act = data.active
        records = np.full(data.n, -1, dtype=np.int64)
        ya, Xa = data.y[act], data.X[act]
        if not ya.size:
            return cls(PartData(ya, Xa, np.zeros(0, bool)), records)
        rep, inv = group_keys(row_keys(np.column_stack([Xa, ya])))
        records[act] = inv
        return cls(PartData(ya[rep], Xa[rep], np.ones(rep.size, bool)), records)

    @property
    def n(self) -> int:
        """Number of records (not groups)."""
        return int(self.records.shape[0])

    @property
    def n_groups(self) -> int:
        return self.data.n

    def group_weights(self, weights: np.ndarray) -> np.ndarray:
        """Each group's summed weight."""
        w = check_weights(weights, self.n)
        act = self.records >= 0
        return np.bincount(self.records[act], weights=w[act], minlength=self.n_groups)

    def statistics(self, part: Part, weights: np.ndarray) -> Stats:
        """The part's exact grouped statistics under record weights ``weights`` (n,)."""
        return part.statistics(self.data, self.group_weights(weights))

    def expand(self) -> PartData:
        """The records' data again (for references and tests)."""
        act = self.records >= 0
        n, p = self.n, self.data.X.shape[1]
        y = np.full(n, np.nan)
        X = np.zeros((n, p))
        y[act] = self.data.y[self.records[act]]
        X[act] = self.data.X[self.records[act]]
        return PartData(y, X, act)


def encode_records(part: Part, data: PartData | GroupedData) -> Encoded:
    """A part's records encoded for per-record evaluation (:meth:`Part.encode
    <pseudopost.models.parts.base.Part.encode>`); grouped data: encoded per group, mapped back
    to the records (the same values record by record)."""
    if isinstance(data, PartData):
        return part.encode(data)
    e = part.encode(data.data)
    rec = data.records
    act = rec >= 0
    index = np.full(data.n, -1, dtype=np.int64)
    index[act] = e.index[rec[act]]
    if part.kind != "gauss":
        return Encoded(data.n, e.rows, index, e.key_row, e.key_y, e.y, e.aux)
    y, aux = np.zeros(data.n), np.zeros(data.n)
    y[act], aux[act] = e.y[rec[act]], e.aux[rec[act]]
    return Encoded(data.n, e.rows, index, e.key_row, e.key_y, y, aux)
