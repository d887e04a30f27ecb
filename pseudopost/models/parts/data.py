"""One part's data and the grouping of its records: :class:`PartData` ``(y, X, active)``,
records keyed by distinct design row (:func:`row_keys`, :func:`group_keys`,
:func:`group_rows`) and the weights' check (:func:`check_weights`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PartData", "check_weights", "group_keys", "group_rows", "row_keys"]


@dataclass(frozen=True, eq=False)
class PartData:
    """One part's data: outcome ``y`` (n,), design ``X`` (n, p) and ``active`` mask (n,).

    ``y`` holds codes 0..K-1 (as float64) for categorical families and values otherwise; it is
    ignored where ``active`` is False (any value, NaN included). ``X`` is the encoded design
    without an intercept column (p may be 0); it must be finite on active records. Records
    that are not active contribute exactly 0 to the part's likelihood.
    """

    y: np.ndarray
    X: np.ndarray
    active: np.ndarray

    def __post_init__(self) -> None:
        y = np.asarray(self.y, dtype=np.float64)
        if y.ndim != 1:
            raise ValueError(f"'y' must be 1-d (one value per record); got shape {y.shape}.")
        n = y.shape[0]
        X = np.asarray(self.X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != n:
            raise ValueError(f"'X' must have shape ({n}, p) to match 'y'; got {X.shape}.")
        active = np.asarray(self.active)
        if active.dtype != np.bool_:
            raise TypeError(f"'active' must be a bool array; got dtype {active.dtype}.")
        if active.shape != (n,):
            raise ValueError(f"'active' must have shape ({n},) to match 'y'; got {active.shape}.")
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "active", active)

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    def take(self, records: slice | np.ndarray) -> PartData:
        """The data of ``records`` (a slice or an index array)."""
        if isinstance(records, slice):
            return PartData(self.y[records], self.X[records], self.active[records])
        idx = np.asarray(records)
        return PartData(self.y[idx], self.X[idx], self.active[idx])


#: integer values spanning fewer than this many codes are ranked by counting, not sorting
_COUNTING_SPAN = 2**22


def _rank(v: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of distinct values, each value's rank among them) of a 1-d array.

    Integer values within a span of :data:`_COUNTING_SPAN` (the codes of a discrete design)
    are ranked by counting, in O(n); others by sorting (``np.unique``).
    """
    if v.size:
        lo, hi = v.min(), v.max()
        span = hi - lo
        if np.isfinite(span) and span < _COUNTING_SPAN:
            iv = (v - lo).astype(np.int64)
            if np.array_equal(iv, v - lo):  # integer-valued
                present = np.bincount(iv, minlength=int(span) + 1) > 0
                rank = np.cumsum(present) - 1
                return int(rank[-1]) + 1, rank[iv]
    values, inv = np.unique(v, return_inverse=True)
    return int(values.size), inv.reshape(-1).astype(np.int64)


def row_keys(X: np.ndarray) -> np.ndarray:
    """An int64 key per row of ``X`` (n, p) whose order is the rows' lexicographic order.

    Mixed radix over the ranks of each column's distinct values (``-0.0`` equals ``0.0``);
    when the radix would overflow, the key so far is replaced by its rank first, so any number
    of columns works. Cost: a count (integer codes) or a sort per column, never a structured
    ``np.unique(axis=0)``.
    """
    n, p = X.shape
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for j in range(p):
        k, inv = _rank(X[:, j])
        k = max(k, 1)
        if radix > (2**62) // k:
            radix, key = _rank(key)
        key = key * k + inv
        radix *= k
    return key


def group_keys(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a record of each distinct key, in sorted key order; each record's group index).

    Any member represents its group (they share the key), here the last one.
    """
    u, inv = _rank(key.astype(np.float64)) if key.size and key.max() < 2**53 else _rank(key)
    rep = np.empty(u, dtype=np.int64)
    rep[inv] = np.arange(key.size)
    return rep, inv


def group_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (lexicographic) distinct rows (U, p) of ``X`` and each record's row index (n,).

    With p = 0 every record shares one (empty) row. ``-0.0`` and ``0.0`` are one row.
    """
    n, p = X.shape
    if p == 0:
        return np.zeros((1 if n else 0, 0)), np.zeros(n, dtype=np.int64)
    if n == 0:
        return np.zeros((0, p)), np.zeros(0, dtype=np.int64)
    rep, inv = group_keys(row_keys(X))
    return X[rep] + 0.0, inv


def check_weights(weights: np.ndarray, n: int) -> np.ndarray:
    """Weights as float64 (n,), finite and >= 0 (error names the first bad record)."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"'weights' must have shape ({n},), one per record; got {w.shape}.")
    bad = ~(np.isfinite(w) & (w >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"'weights' must be finite and >= 0; record {i} has {float(w[i])!r}.")
    return w
