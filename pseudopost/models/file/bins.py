r"""A numeric column's declared public bins: a histogram density with free bin probabilities.

``bins={"fnlwgt": [e_0, e_1, ..., e_B]}`` (increasing, finite; a codebook's bands, or a
geometric sequence over the column's public range) models the column's observed values by the
binned part (:class:`~pseudopost.models.parts.cumulative.BinnedPart`): the bin
:math:`j` with :math:`e_j \le y < e_{j+1}` (the last bin closed) follows an ordered logit on the
earlier columns, and the value is uniform inside its bin, so

.. math:: \log f(y \mid z) = \log P(j \mid z) - \log(e_{j+1} - e_j).

A synthetic value is :math:`e_j + u\,(e_{j+1} - e_j)` for the drawn bin and a uniform u, then
rounded as the column's values are (integers, or the declared grid: post-processing). The edges
are declared, never read from the data (quantile edges would be read outside the accountant); a
real observed value outside :math:`[e_0, e_B]` is an error.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_BINS", "Bins"]

#: most bins a column may declare (each is a level of the binned part)
MAX_BINS = 5000


@dataclass(frozen=True)
class Bins:
    """Increasing finite ``edges`` :math:`e_0 < \\dots < e_B` (module docstring)."""

    edges: tuple[float, ...]

    @classmethod
    def parse(cls, value: object, column: str) -> Bins:
        if isinstance(value, Bins):
            return value
        if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
            raise TypeError(
                f"The bins of column {column!r} must be a list of increasing edges, e.g. "
                f"[0, 10, 100, 1000]. Got {value!r}."
            )
        edges = list(value)
        ok = all(
            isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
            and math.isfinite(float(v)) for v in edges
        )  # fmt: skip
        if not ok or len(edges) < 3 or any(b <= a for a, b in itertools.pairwise(edges)):
            raise ValueError(
                f"The bins of column {column!r} must be at least 3 finite, strictly increasing "
                f"edges (2 bins or more). Got {value!r}."
            )
        if len(edges) - 1 > MAX_BINS:
            raise ValueError(
                f"Column {column!r} declares {len(edges) - 1} bins, more than {MAX_BINS}."
            )
        return cls(tuple(float(v) for v in edges))

    @property
    def n_bins(self) -> int:
        return len(self.edges) - 1

    @property
    def log_widths(self) -> tuple[float, ...]:
        return tuple(np.log(np.diff(self.edges)).tolist())

    def index(self, x: np.ndarray) -> np.ndarray:
        """The bin of each value in :math:`[e_0, e_B]` (the last bin closed)."""
        e = np.asarray(self.edges)
        j = np.searchsorted(e, np.asarray(x, dtype=np.float64), side="right") - 1
        return np.clip(j, 0, self.n_bins - 1).astype(np.int64)

    def inner_index(self, x: np.ndarray, step: float | None = None) -> np.ndarray:
        """:meth:`index`, but a value in an end bin that holds its end grid point alone (at
        most ``step`` wide, :func:`~pseudopost.mechanisms.structure._end_bins`) goes to the next
        bin in: a value beyond a truncated support, coded to its end, is censored into the
        outermost bin of the support's interior rather than piled on the end point."""
        j = self.index(x)
        if step is None or self.n_bins < 3:
            return j
        w = np.diff(np.asarray(self.edges))
        first, last = w[0] <= step * (1 + 1e-9), w[-1] <= step * (1 + 1e-9)
        j = np.where((j == 0) & first, 1, j)
        return np.where((j == self.n_bins - 1) & last, self.n_bins - 2, j)

    def draw(self, j: np.ndarray, u: np.ndarray) -> np.ndarray:
        """A uniform position ``u`` in (0, 1) inside each bin ``j``."""
        e = np.asarray(self.edges)
        j = np.asarray(j, dtype=np.int64)
        return e[j] + u * (e[j + 1] - e[j])

    def describe(self) -> str:
        e = self.edges
        return f"{self.n_bins} bins from {e[0]:g} to {e[-1]:g}"
