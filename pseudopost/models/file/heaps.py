r"""Heaping (digit preference): declared multiples of a column's grid step where answers pile up.

Self-reported numbers heap: 56% of YRBSS weights are whole multiples of 5 lb and 32% of 10 lb,
where a smooth density on the 1-lb grid puts about 20% and 10%. A column with a declared grid
(:mod:`pseudopost.models.file.grid`, points :math:`g_k`) declares its heaps as multiples
:math:`m_1 > m_2 > \dots` of grid steps (``{"weight": [10, 5]}``). Every observed value then has
a *heap label* read from its grid index :math:`k`:

.. math::
    H(k) = \min\{\, j : m_j \mid k \,\}\ \ (\text{"multiple of } m_j \text{ steps"}),
    \qquad H(k) = 0\ (\text{"off the heaps"}) \text{ if no } m_j \text{ divides } k,

the coarsest declared multiple first. The column's model gains one part (guide: *Whole files*),
a categorical ``k.heap`` over the labels present, conditioned on the same earlier columns and
active on the records whose status is observed; the value part stays active on every observed
value. Record i's log-likelihood for column k is therefore

.. math::
    \log p(S_{ik} \mid z_{ik}) + 1[S_{ik} = \text{obs}]\bigl(\log p(H_{ik} \mid z_{ik})
    + \log f(x_{ik} \mid z_{ik})\bigr),

a categorical status times (for observed values) a categorical heap label times the value
density: the status and heap parts together are one categorical over "observed off the heaps",
"observed on heap j", missing and each code (the product :math:`p(S=\text{obs})\,p(H=j \mid
\text{obs})`), and every term is a part's own, so one record's log-likelihood is still the sum
of its parts and the accountant (which sums parts) covers it exactly. :math:`H` is a function
of the recorded value, so the data determine it: nothing is latent and nothing is approximated
beyond what the value part already does (its density is evaluated at the recorded value, as
without heaps).

A binned column's heap part also takes the value's position, the group of its bin
(:func:`position_features`): the label's probabilities then change along the values; and it is
a categorical over the labels *the bin holds a grid point of* (:meth:`Heaps.bin_labels`, a
masked categorical, :mod:`~pseudopost.models.parts.masked_categorical`, in the likelihood and
in generation alike: the bins and the grid are public, so the mask is too). SLID's years of
schooling in tenths heap on whole and half years; a bin of the half year 12.5 holds no whole
year, and without the mask its draws labelled "whole year" went to 12 or 13. Then
synthesis draws the bin first, the label given it (a fourth record uniform) and the position
in the bin. Otherwise synthesis draws the status, the heap label (a third record uniform) and
the value from the value part, then snaps the value to the nearest grid point *with the drawn label*
(:meth:`Heaps.snap`: for label j the nearest :math:`g_k` with :math:`H(k) = j`, for 0 the
nearest with no declared multiple dividing k), inside the family's support and off codes and
spikes. The synthetic value's label is then the drawn one, so heap shares are reproduced as
fitted. Snapping is post-processing (no privacy cost, :mod:`pseudopost.models.file.grid`); the
heap part is fitted under the record weights like every part.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pseudopost.models.file.grid import Grid

__all__ = ["POSITION_GROUPS", "Heaps", "parse_heaps", "position_features"]

#: a binned column's heap part also takes the value's position: its bins in this many
#: consecutive groups (one-hot), since the heap shares change along the values (whole dollars
#: are commoner among low wages than among high ones)
POSITION_GROUPS = 6


def position_features(column: str, n_bins: int, bin_index: np.ndarray):
    r"""(features, names): the one-hot of each value's bin group (bins
    :math:`\lfloor jG/B \rfloor`, G = :data:`POSITION_GROUPS`, the first group the baseline),
    the extra predictors of a binned column's heap part (module docstring)."""
    g = min(POSITION_GROUPS, n_bins)
    group = (np.asarray(bin_index, dtype=np.int64) * g) // n_bins
    features = (group[:, None] == np.arange(1, g)[None, :]).astype(np.float64)
    return features, tuple(f"{column} (bin group {k + 1} of {g})" for k in range(1, g))


def parse_heaps(value: object, column: str) -> tuple[int, ...]:
    """Declared heap multiples of ``column``: integers >= 2, distinct, coarsest first."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        raise TypeError(
            f"The heaps of column {column!r} must be a non-empty list of whole numbers of grid "
            f"steps, e.g. [10, 5]. Got {value!r}."
        )
    out = []
    for v in value:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 2:
            raise ValueError(
                f"The heaps of column {column!r} must be whole numbers of grid steps >= 2. Got "
                f"{v!r}."
            )
        out.append(int(v))
    if len(set(out)) != len(out):
        raise ValueError(f"The heaps of column {column!r} list a multiple twice: {list(value)}.")
    return tuple(sorted(out, reverse=True))


@dataclass(frozen=True)
class Heaps:
    """A column's heaps (module docstring): its grid and multiples of its step, coarsest
    first."""

    grid: Grid
    multiples: tuple[int, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Label names: label 0 then one per multiple."""
        return ("off the heaps", *(f"multiple of {m} steps" for m in self.multiples))

    def label_of_index(self, k: np.ndarray) -> np.ndarray:
        """:math:`H(k)` of grid indices (float-held integers)."""
        k = np.asarray(k, dtype=np.float64)
        out = np.zeros(k.shape, dtype=np.int64)
        todo = np.ones(k.shape, dtype=bool)
        for j, m in enumerate(self.multiples, start=1):
            hit = todo & (np.mod(k, m) == 0)
            out[hit] = j
            todo &= ~hit
        return out

    def bin_labels(self, edges) -> np.ndarray:
        """(B, L + 1) booleans: whether label l (0 "off the heaps", then each multiple) has a
        grid point in bin j, :math:`[e_j, e_{j+1})` (the last bin closed), from the public
        edges and grid alone. A window of the coarsest multiple's many grid indices holds every
        label, so at most that many indices are looked at per bin; computed once per edges
        (read-only: the fit's mask, each synthesis's mask and its snap share it)."""
        return _bin_labels(self, tuple(float(v) for v in np.asarray(edges).ravel()))

    def _bin_labels(self, edges: tuple[float, ...]) -> np.ndarray:
        e = np.asarray(edges, dtype=np.float64)
        period = max(self.multiples)
        out = np.zeros((e.size - 1, len(self.multiples) + 1), dtype=bool)
        for j in range(e.size - 1):
            a = float(self.grid.index(e[j]))
            if float(self.grid.point(a)) < e[j]:
                a += 1.0
            b = float(self.grid.index(e[j + 1]))
            top = float(self.grid.point(b))
            if top > e[j + 1] or (top == e[j + 1] and j < e.size - 2):
                b -= 1.0
            if b >= a:
                ks = np.arange(a, min(b, a + period - 1.0) + 1.0)
                out[j, np.unique(self.label_of_index(ks))] = True
        out.flags.writeable = False
        return out

    def labels(self, x: np.ndarray) -> np.ndarray:
        """:math:`H` of values (by their nearest grid index)."""
        return self.label_of_index(self.grid.index(x))

    def snap(
        self,
        y: np.ndarray,
        labels: np.ndarray,
        low: float = -math.inf,
        high: float = math.inf,
        *,
        low_open: bool = False,
        forbidden: tuple = (),
        bins: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Each value moved to the nearest grid point of its drawn label (module docstring),
        inside the support (``[low, high]``) and off ``forbidden``; with ``bins`` (the edges and
        each value's drawn bin) the nearest such point inside the value's bin when the bin
        holds one (a bin of half years' catchments holds 21.0, a whole year, whose own
        catchment reaches down to 20.5: without this, draws labelled "whole year" from the top
        of the bin of 18-20 years went to 21, beyond every real value)."""
        y = np.asarray(y, dtype=np.float64)
        labels = np.asarray(labels, dtype=np.int64)
        out = np.empty(y.shape)
        for j in np.unique(labels):
            hit = labels == j
            out[hit] = self.grid.snap(
                y[hit], low, high, low_open=low_open, forbidden=forbidden,
                index_ok=lambda k, j=j: self.label_of_index(k) == j,
            )  # fmt: skip
        if bins is None:
            return out
        edges, b = np.asarray(bins[0], dtype=np.float64), np.asarray(bins[1], dtype=np.int64)
        holds = self.bin_labels(edges)
        moved = np.searchsorted(edges, out, side="right") - 1 != b
        moved &= ~((b == edges.size - 2) & (out == edges[-1]))  # the last bin is closed
        moved &= holds[b, labels]  # else the nearest point outside the bin stays
        for j, k in set(zip(labels[moved].tolist(), b[moved].tolist(), strict=True)):
            hit = moved & (labels == j) & (b == k)
            a = max(float(edges[k]), low)
            z = min(float(np.nextafter(edges[k + 1], -np.inf)) if k < edges.size - 2
                    else float(edges[-1]), high)  # fmt: skip
            try:
                inside = self.grid.snap(
                    y[hit], a, z, low_open=low_open and a == low, forbidden=forbidden,
                    index_ok=lambda i, j=j: self.label_of_index(i) == j,
                )  # fmt: skip
            except ValueError:  # the bin's points of the label are all forbidden (codes)
                continue
            ok = (inside >= edges[k]) & (inside <= edges[k + 1])
            out[np.flatnonzero(hit)[ok]] = inside[ok]
        return out

    def describe(self) -> str:
        return ", ".join(str(m) for m in self.multiples) + " grid steps"


@functools.lru_cache(maxsize=64)
def _bin_labels(heaps: Heaps, edges: tuple[float, ...]) -> np.ndarray:
    return heaps._bin_labels(edges)

