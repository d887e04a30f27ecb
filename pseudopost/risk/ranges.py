r"""Sensitive ranges :math:`R_i = [l_i, u_i]` declared by the data owner around each value.

The range-restricted paper (Hu, Williams & Savitsky; ``papers/range-restricted-pseudo-posterior``)
lets the owner state that the public already knows :math:`x_i \in R_i`; only the part of the
likelihood *inside* the range needs protection (sections 2-3). Every range kind maps the outcome
vector x to per-record bounds ``(lower, upper)`` with :math:`l_i \le x_i \le u_i`, checked
record by record (a clear error names the first record outside its own range). Bounds may be
infinite (an open bracket); they may not be NaN.

* :class:`MultiplicativeRange` ``(a, b)``: :math:`[a x_i, b x_i]` (the paper's default; needs
  :math:`0 \le a \le 1 \le b`; for negative values the ends swap so that :math:`x_i` stays inside).
* :class:`AdditiveRange` ``(below, above)``: :math:`[x_i - \text{below}, x_i + \text{above}]`.
* :class:`ArrayRange` ``(lower, upper)``: per-record arrays given by the owner.
* :class:`BracketRange` ``(cuts)``: the bracket :math:`[c_k, c_{k+1}]` holding :math:`x_i`
  (published income brackets, say); a value on a cut belongs to the bracket above it.
* :class:`TailRange` ``(a, b, a_tail, b_tail, q)``: multiplicative, with the wider
  :math:`(a', b')` for the top ``q`` fraction of the outcome (section 4.3). The cut-off is the
  empirical :math:`1-q` quantile of the confidential outcome: it is data-dependent and is
  reported with the release.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pseudopost._validation import check_in_interval, check_real

__all__ = [
    "AdditiveRange",
    "ArrayRange",
    "BracketRange",
    "MultiplicativeRange",
    "SensitiveRange",
    "TailRange",
]


class SensitiveRange(ABC):
    """Maps outcome values to per-record sensitive bounds (see the module docstring)."""

    @abstractmethod
    def _bounds(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw bounds for ``x``, before validation."""

    def bounds(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Validated ``(lower, upper)`` arrays with ``lower <= x <= upper`` for every record."""
        x = np.asarray(x, dtype=float)
        lower, upper = (
            np.broadcast_to(np.asarray(b, dtype=float), x.shape).copy() for b in self._bounds(x)
        )
        for name, b in (("lower", lower), ("upper", upper)):
            if np.isnan(b).any():
                i = int(np.flatnonzero(np.isnan(b))[0])
                raise ValueError(f"{self!r}: the {name} bound of record {i} is NaN.")
        outside = (x < lower) | (x > upper)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise ValueError(
                f"{self!r}: record {i} has value {x[i]:g} outside its own sensitive range "
                f"[{lower[i]:g}, {upper[i]:g}] ({int(outside.sum())} record(s) outside); "
                "every value must lie in its range."
            )
        return lower, upper

    def describe(self) -> dict:
        """A JSON-friendly description for reports and manifests."""
        return {
            "kind": type(self).__name__,
            **{k: v for k, v in vars(self).items() if not isinstance(v, np.ndarray)},
        }


@dataclass(frozen=True)
class MultiplicativeRange(SensitiveRange):
    """:math:`[a x_i, b x_i]` with :math:`0 \\le a \\le 1 \\le b` (paper sections 2 and 4)."""

    a: float
    b: float

    def __post_init__(self) -> None:
        a, b = check_real(self.a, "a"), check_real(self.b, "b")
        if a > b:
            raise ValueError(f"MultiplicativeRange needs a <= b; got a={a}, b={b}.")
        if not (0 <= a <= 1 <= b):
            raise ValueError(
                f"MultiplicativeRange needs 0 <= a <= 1 <= b so that every x_i "
                f"lies in [a x_i, b x_i]; got a={a}, b={b}."
            )

    def _bounds(self, x):
        lo, hi = self.a * x, self.b * x
        return np.minimum(lo, hi), np.maximum(lo, hi)


@dataclass(frozen=True)
class AdditiveRange(SensitiveRange):
    """:math:`[x_i - \\text{below}, x_i + \\text{above}]` with non-negative offsets."""

    below: float
    above: float

    def __post_init__(self) -> None:
        for name in ("below", "above"):
            if check_real(getattr(self, name), name) < 0:
                raise ValueError(
                    f"AdditiveRange offset '{name}' must be >= 0; got {getattr(self, name)}."
                )

    def _bounds(self, x):
        return x - self.below, x + self.above


class ArrayRange(SensitiveRange):
    """Per-record bounds given as arrays (one pair per record, in the data's row order)."""

    def __init__(self, lower: Sequence[float], upper: Sequence[float]) -> None:
        self.lower = np.asarray(lower, dtype=float).copy()
        self.upper = np.asarray(upper, dtype=float).copy()
        if self.lower.shape != self.upper.shape or self.lower.ndim != 1:
            raise ValueError(
                f"ArrayRange needs two 1-d arrays of equal length; got shapes "
                f"{self.lower.shape} and {self.upper.shape}."
            )
        bad = self.lower > self.upper
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"ArrayRange: record {i} has lower {self.lower[i]:g} > upper {self.upper[i]:g}."
            )

    def __repr__(self) -> str:
        return f"ArrayRange(n={self.lower.size})"

    def _bounds(self, x):
        if self.lower.shape != x.shape:
            raise ValueError(
                f"ArrayRange has {self.lower.size} records but the data have {x.size}."
            )
        return self.lower, self.upper

    def describe(self) -> dict:
        return {"kind": "ArrayRange", "n": int(self.lower.size)}


class BracketRange(SensitiveRange):
    """The published bracket :math:`[c_k, c_{k+1}]` holding each value (cut points ``cuts``)."""

    def __init__(self, cuts: Sequence[float]) -> None:
        c = np.asarray(cuts, dtype=float)
        if c.ndim != 1 or c.size < 2:
            raise ValueError(f"BracketRange needs at least two cut points; got {list(c)}.")
        if np.isnan(c).any() or np.any(np.diff(c) <= 0):
            raise ValueError(
                f"BracketRange cut points must be strictly increasing and not NaN; got {list(c)}."
            )
        self.cuts = c

    def __repr__(self) -> str:
        return f"BracketRange(cuts={self.cuts.tolist()})"

    def _bounds(self, x):
        c = self.cuts
        k = np.searchsorted(c, x, side="right") - 1
        k = np.where(x == c[-1], c.size - 2, k)  # the top cut closes the last bracket
        inside = (k >= 0) & (k <= c.size - 2)
        if not inside.all():
            i = int(np.flatnonzero(~inside)[0])
            raise ValueError(
                f"{self!r}: record {i} has value {x[i]:g} outside every bracket "
                f"[{c[0]:g}, {c[-1]:g}]."
            )
        return c[k], c[k + 1]

    def describe(self) -> dict:
        return {"kind": "BracketRange", "cuts": self.cuts.tolist()}


@dataclass(frozen=True)
class TailRange(SensitiveRange):
    """Multiplicative :math:`(a, b)`, widened to :math:`(a', b')` for the top ``q`` fraction of
    the outcome (paper section 4.3; ``q = 0.05`` is "Top 5%")."""

    a: float
    b: float
    a_tail: float
    b_tail: float
    q: float

    def __post_init__(self) -> None:
        check_in_interval(self.q, "q", 0.0, 1.0, closed="neither")
        MultiplicativeRange(self.a, self.b)
        MultiplicativeRange(self.a_tail, self.b_tail)

    def cutoff(self, x: np.ndarray) -> float:
        """The empirical :math:`1 - q` quantile: values above it get the tail range."""
        return float(np.quantile(np.asarray(x, dtype=float), 1.0 - self.q))

    def _bounds(self, x):
        tail = x > self.cutoff(x)
        a = np.where(tail, self.a_tail, self.a)
        b = np.where(tail, self.b_tail, self.b)
        lo, hi = a * x, b * x
        return np.minimum(lo, hi), np.maximum(lo, hi)
