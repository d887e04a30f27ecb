r"""One column of a file as the synthesizer holds it: status, value, and (categorical) levels.

Every column is split by :func:`~pseudopost.models.status.split_status` into a status
(observed, missing, each declared code, each spike) and its value where observed. A column
modelled **categorical** (strings, categories, booleans, numbers with few values) is then one
variable whose *levels* are its observed values (category order, else sorted) followed by the
non-observed statuses the data hold (``missing``, each code, in declaration order): a missing
cell and each code are levels of their own. A **numeric** column keeps status and value apart
(a status part and a value part, :mod:`pseudopost.models.file.plan`).

Levels and statuses are those present in the data (as synthpop and the package's column
encoding do: a level absent from the data is never modelled or synthesized); they are part of
the public codebook. :class:`EncodedColumn` maps a column (real or synthetic, in its own dtype)
to status codes, values and level codes, and back (:meth:`EncodedColumn.decode`, the exact
inverse keeping the input's dtype and categories).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from pseudopost.models.status import StatusInfo, join_status, split_status

__all__ = ["EncodedColumn", "Level", "encode"]


@dataclass(frozen=True)
class Level:
    """One level of a categorical column: a status code and, for an observed value, the value."""

    status: int
    value: object
    label: str
    cell: object = None  # the cell as the frame holds it: the value, a code, or None (missing)


def _sort_key(v: object) -> tuple:
    if isinstance(v, (bool, np.bool_)):
        return (0, int(v), "")
    if isinstance(v, (int, float, np.integer, np.floating)):
        return (1, float(v), "")
    return (2, 0.0, str(v))


def _label(v: object) -> str:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


@dataclass(frozen=True, eq=False)
class EncodedColumn:
    """A column split into status and value (module docstring).

    Attributes
    ----------
    name : str
    position : int
        The column's position in the frame (its synthesis stream).
    info : StatusInfo
        How :func:`split_status` split it (levels, codes, spikes, dtype, empty-cell marker).
    status : numpy.ndarray
        int64 status codes of the real records.
    values : numpy.ndarray
        float64 (numeric) or object values, NaN where not observed.
    categorical : bool
        Whether the column is modelled as one variable over :attr:`levels`.
    ordered : bool
        Ordered categories (an ordinal value part).
    levels : tuple of Level
        The levels present (categorical columns): observed values first, then statuses.
    statuses : tuple of int
        The status codes present, in increasing order.
    beyond : numpy.ndarray or None
        Observed records whose value lay beyond a declared ``truncate`` support: their values
        hold the nearer end (the later columns' designs) and the column's value parts leave
        them out (:attr:`valued`).
    """

    name: str
    position: int
    info: StatusInfo
    status: np.ndarray
    values: np.ndarray
    categorical: bool
    ordered: bool
    levels: tuple[Level, ...]
    statuses: tuple[int, ...]
    beyond: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.status.shape[0])

    @property
    def numeric(self) -> bool:
        return self.info.kind in ("integer", "float")

    @property
    def valued(self) -> np.ndarray:
        """The records the column's value parts model: observed, and not beyond a truncated
        support."""
        obs = self.status == 0
        return obs if self.beyond is None else obs & ~self.beyond

    def truncated(self, low: float, high: float) -> EncodedColumn:
        """This column with its observed values beyond ``[low, high]`` coded to the nearer end
        and marked :attr:`beyond` (a numeric column; the input is not changed). When every
        observed value lies beyond (a support that missed the data: a small file's guess),
        they are coded to the ends and modelled there, as there is nothing inside to model."""
        v = np.asarray(self.values, dtype=np.float64)
        obs = self.status == 0
        beyond = obs & ((v < low) | (v > high))
        if not beyond.any():
            return self
        values = np.where(beyond, np.clip(v, low, high), v)
        if np.array_equal(beyond, obs):
            return replace(self, values=values)
        return replace(self, values=values, beyond=beyond)

    @property
    def observed_levels(self) -> tuple[Level, ...]:
        return tuple(lv for lv in self.levels if lv.status == 0)

    @property
    def other_statuses(self) -> tuple[int, ...]:
        """Non-observed statuses present (missing, codes, spikes)."""
        return tuple(s for s in self.statuses if s != 0)

    def status_label(self, s: int) -> str:
        return self.info.levels[s]

    # -- level codes ---------------------------------------------------------------------
    def level_codes(self, status: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Level code 0..K-1 of each record (categorical columns)."""
        codes = np.full(status.shape[0], -1, dtype=np.int64)
        obs = status == 0
        vals = [lv.value for lv in self.observed_levels]
        if obs.any() and vals:
            if self.numeric:
                table = np.asarray(vals, dtype=np.float64)
                v = np.asarray(values, dtype=np.float64)[obs]
                idx = np.searchsorted(table, v) if _increasing(table) else None
                if idx is None:
                    lookup = {float(x): k for k, x in enumerate(table)}
                    hit = np.array([lookup.get(float(x), -1) for x in v], dtype=np.int64)
                else:
                    idx = np.clip(idx, 0, table.size - 1)
                    hit = np.where(table[idx] == v, idx, -1)
            else:
                cat = pd.Categorical(np.asarray(values, dtype=object)[obs], categories=vals)
                hit = cat.codes.astype(np.int64)
            codes[obs] = hit
        for k, lv in enumerate(self.levels):
            if lv.status != 0:
                codes[status == lv.status] = k
        if (codes < 0).any():
            i = int(np.flatnonzero(codes < 0)[0])
            raise ValueError(
                f"Column {self.name!r}: record {i} holds a value that is not one of the column's "
                f"levels {[lv.label for lv in self.levels]}."
            )
        return codes

    def from_level_codes(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(status, values) of level codes."""
        codes = np.asarray(codes, dtype=np.int64)
        status = np.array([lv.status for lv in self.levels], dtype=np.int64)[codes]
        if self.numeric:
            table = np.array([float(lv.value) if lv.status == 0 else np.nan for lv in self.levels])
            return status, table[codes]
        table = np.empty(len(self.levels), dtype=object)
        table[:] = [lv.value if lv.status == 0 else np.nan for lv in self.levels]
        return status, table[codes]

    # -- columns -------------------------------------------------------------------------
    def split(self, series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
        """(status, values) of a column of this column's dtype (real or synthetic)."""
        status, values, _ = split_status(series, self.info.codes, self.info.spikes, name=self.name)
        return status, values

    def decode(self, status: np.ndarray, values: np.ndarray, index: pd.Index) -> pd.Series:
        """The column in its own dtype (and categories) from status and values."""
        return join_status(status, values, self.info, index)


def _increasing(a: np.ndarray) -> bool:
    return bool(a.size < 2 or np.all(np.diff(a) > 0))


def encode(
    series: pd.Series,
    name: str,
    position: int,
    *,
    codes: tuple = (),
    spikes: tuple = (),
    categorical: bool,
    ordered: bool = False,
) -> EncodedColumn:
    """Split ``series`` (never modified) and, for a categorical column, find its levels."""
    status, values, info = split_status(series, codes, spikes, name=name)
    present = tuple(int(s) for s in np.unique(status))
    levels: list[Level] = []
    if categorical:
        obs = status == 0
        if info.kind == "category":
            used = set(pd.unique(np.asarray(values, dtype=object)[obs]).tolist())
            held = [c for c in series.cat.categories if c in used]
        else:
            cells = np.asarray(values, dtype=object)[obs]
            if info.kind in ("integer", "float"):
                held = sorted({float(v) for v in cells})
            else:
                held = sorted(set(pd.unique(cells).tolist()), key=_sort_key)
        levels = [Level(0, v, _label(v), v) for v in held]
        targets = (None, None, *info.codes, *info.spikes)
        levels += [Level(s, None, info.levels[s], targets[s]) for s in present if s != 0]
    return EncodedColumn(
        name=name,
        position=position,
        info=info,
        status=status,
        values=values,
        categorical=categorical,
        ordered=ordered,
        levels=tuple(levels),
        statuses=present,
    )
