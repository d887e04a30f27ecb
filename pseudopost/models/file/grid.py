r"""A numeric column's declared recording precision (its *grid*) and the snapping of synthetic
values to it.

Agencies record numbers on a grid: heights in whole inches stored as metres to 2 decimals
(every value is :math:`\mathrm{round}(0.0254\,k, 2)`), weights in whole pounds as kilograms
(:math:`\mathrm{round}(0.4536\,k, 2)`), incomes in whole dollars. A continuous model draws
values off that grid, and a classifier (synthpop's CART propensity score) tells synthetic from
real records by that alone. The grid is a public fact of the codebook, so it is *declared*:

.. math::
    G = \{\, g_k = \mathrm{round}(k\,s + o,\ d) : k \in \mathbb{Z} \,\},

with step :math:`s > 0`, origin :math:`o` (default 0) and digits :math:`d` (``None``: no
rounding; digits alone mean :math:`s = 10^{-d}`). Rounding is monotone, so :math:`g_k` is
non-decreasing in k; with :math:`s \ge 10^{-d}` (checked) the point nearest to x is one of
:math:`g_{k_0-1}, g_{k_0}, g_{k_0+1}` with :math:`k_0 = \mathrm{rint}((x - o)/s)`:
:math:`|g_{k_0} - x| \le s/2 + r` and :math:`|g_{k_0\pm j} - x| \ge (j - \tfrac12)s - r` for
:math:`r = \tfrac12 10^{-d}`, so :math:`j \ge 2` is never nearer when :math:`s \ge 2r`.

:meth:`Grid.snap` moves each value to the nearest grid point that lies in the column model's
support (e.g. :math:`> 0` for a log-normal) and is not a declared code or spike (those are
statuses, not values); ties go to the lower point. With codes and spikes excluded the nearest
allowed point may be further than :math:`k_0 \pm 1`; the search widens ring by ring until no
further point can be nearer (:meth:`Grid.snap`).

**Privacy**: snapping is post-processing. The synthetic values are a function of the posterior
draw (the mechanism's output), public declarations (the grid, the support, the codes) and
randomness independent of the data; by the post-processing property of differential privacy
(Dwork and Roth 2014, Prop. 2.1; it holds for the pseudo posterior's local
:math:`\varepsilon_x` bound too, since it is a statement about the distribution of the output
given the data) the released file costs no more than the draws it is made from. The check that
the real values lie on the grid (:meth:`Grid.share_off`) reads the data only to warn the data
holder; nothing of it is released.

**Listed values.** Some columns are not recorded on a regular grid but take one of a list of
amounts: a form's tick boxes, a benefit's rates, the capital-gain amounts of a tax extract.
``{"values": [v_1, ..., v_K]}`` declares that list (increasing after sorting, at most
:data:`MAX_POINTS`): its bounds are :math:`[v_1, v_K]`, a value model is the cumulative part
over the listed values (``grid_ordinal``), and a numeric family's draws are snapped to the
nearest listed value. The list is *public structure*, like a categorical column's levels: the
guarantee covers the values' probabilities, not which amounts exist. A list read off the
confidential file discloses its amounts outside the accountant (an amount held by one record
names that it exists); declare it from the codebook, or only amounts that are public.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_DIGITS", "MAX_POINTS", "Grid"]

#: digits are integers in [-MAX_DIGITS, MAX_DIGITS]
MAX_DIGITS = 12
_KEYS = ("step", "digits", "origin", "bounds", "values")
#: relative error of a decimal stored in single precision (2**-20, above float32's 2**-24): a
#: value this close to a grid point is on the grid
STORAGE_TOLERANCE = 2.0**-20
#: most points a bounded grid may have (each is a level of the cumulative value part)
MAX_POINTS = 5000
_MAX_RING = 1 << 16


def _real(v: object) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


@dataclass(frozen=True)
class Grid:
    r"""The grid :math:`g_k = \mathrm{round}(k\,s + o, d)`, or a list of values (module
    docstring).

    Parameters
    ----------
    step : float or None
        :math:`s > 0`; at least :math:`10^{-d}` when ``digits`` is given. None with ``values``.
    digits : int or None
        :math:`d`: decimals kept (negative: tens, hundreds, ...); None: no rounding.
    origin : float
        :math:`o`, a finite number (default 0).
    bounds : (float, float) or None
        The column's public range :math:`[l, u]` (a codebook's): synthetic values are snapped
        inside it, and a numeric column with a bounded grid is modelled by default by the
        cumulative part over the grid's points in it (:mod:`pseudopost.models.parts.
        cumulative`). Implied by ``values``.
    values : sequence of float or None
        The listed values the column takes (module docstring), instead of a step.
    """

    step: float | None = None
    digits: int | None = None
    origin: float = 0.0
    bounds: tuple[float, float] | None = None
    values: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.values is not None:
            self._listed()
            return
        if not _real(self.step) or not math.isfinite(self.step) or self.step <= 0:
            raise ValueError(f"A grid's 'step' must be a finite number > 0. Got {self.step!r}.")
        if self.digits is not None and (
            isinstance(self.digits, (bool, np.bool_))
            or not isinstance(self.digits, (int, np.integer))
            or abs(int(self.digits)) > MAX_DIGITS
        ):
            raise ValueError(
                f"A grid's 'digits' must be an integer in [-{MAX_DIGITS}, {MAX_DIGITS}]. "
                f"Got {self.digits!r}."
            )
        if not _real(self.origin) or not math.isfinite(self.origin):
            raise ValueError(f"A grid's 'origin' must be a finite number. Got {self.origin!r}.")
        object.__setattr__(self, "step", float(self.step))
        object.__setattr__(self, "origin", float(self.origin))
        if self.bounds is not None:
            b = self.bounds
            if (
                isinstance(b, (str, bytes))
                or not hasattr(b, "__len__")
                or len(b) != 2
                or not all(_real(v) and math.isfinite(v) for v in b)
                or not b[0] < b[1]
            ):
                raise ValueError(
                    f"A grid's 'bounds' must be two finite numbers [low, high] with low < high. "
                    f"Got {b!r}."
                )
            object.__setattr__(self, "bounds", (float(b[0]), float(b[1])))
        if self.digits is not None:
            object.__setattr__(self, "digits", int(self.digits))
            if self.step < self.resolution * (1 - 1e-12):
                raise ValueError(
                    f"A grid's 'step' ({self.step:g}) must be at least 10**-digits "
                    f"({self.resolution:g}): finer steps are lost to the rounding."
                )

    def _listed(self) -> None:
        """Checks and normalises a list of values (alone: no step, digits, origin or bounds)."""
        v = self.values
        if self.step is not None or self.digits is not None or self.origin or self.bounds:
            raise ValueError(
                "A grid's 'values' list the column's values; they cannot be combined with "
                "'step', 'digits', 'origin' or 'bounds' (their bounds are the smallest and the "
                "largest value)."
            )
        ok = (
            not isinstance(v, (str, bytes, Mapping))
            and hasattr(v, "__iter__")
            and all(_real(x) and math.isfinite(x) for x in v)
        )
        u = np.unique(np.asarray(list(v), dtype=np.float64)) if ok else np.empty(0)
        if not ok or u.size < 2:
            raise ValueError(
                f"A grid's 'values' must be at least 2 distinct finite numbers. Got {v!r}."
            )
        if u.size > MAX_POINTS:
            raise ValueError(f"A grid lists {u.size} values, more than {MAX_POINTS}.")
        object.__setattr__(self, "values", tuple(u.tolist()))
        object.__setattr__(self, "bounds", (float(u[0]), float(u[-1])))

    @property
    def listed(self) -> bool:
        """Whether the grid is a list of values rather than a step."""
        return self.values is not None

    def _stepped(self) -> None:
        if self.listed:
            raise ValueError(f"The grid {self.describe()} has no step, so no grid indices.")

    @classmethod
    def parse(cls, value: object, column: str) -> Grid:
        """A grid from a :class:`Grid` or a mapping with ``step``, ``digits`` and/or ``origin``
        (at least ``step`` or ``digits``; digits alone mean ``step = 10**-digits``)."""
        if isinstance(value, Grid):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(
                f"The grid of column {column!r} must be a mapping such as "
                f"{{'step': 0.0254, 'digits': 2}} or {{'digits': 1}}. Got {value!r}."
            )
        unknown = sorted(set(value) - set(_KEYS), key=str)
        if unknown:
            raise ValueError(
                f"The grid of column {column!r} has unknown key(s) {unknown}; expected "
                f"{list(_KEYS)}."
            )
        if "values" in value:
            try:
                return cls(
                    value.get("step"), value.get("digits"), value.get("origin", 0.0),
                    value.get("bounds"), value["values"],
                )  # fmt: skip
            except ValueError as exc:
                raise ValueError(f"Column {column!r}: {exc}") from None
        if "step" not in value and "digits" not in value:
            raise ValueError(
                f"The grid of column {column!r} needs a 'step', 'digits' or 'values'. Got "
                f"{dict(value)!r}."
            )
        digits = value.get("digits")
        step = value.get("step")
        try:
            if step is None:
                if (
                    isinstance(digits, (bool, np.bool_))
                    or not isinstance(digits, (int, np.integer))
                    or abs(int(digits)) > MAX_DIGITS
                ):
                    raise ValueError(
                        f"A grid's 'digits' must be an integer in [-{MAX_DIGITS}, "
                        f"{MAX_DIGITS}]. Got {digits!r}."
                    )
                step = 10.0 ** (-int(digits))
            bounds = value.get("bounds")
            if isinstance(bounds, list):
                bounds = tuple(bounds)
            return cls(step, digits, value.get("origin", 0.0), bounds)
        except ValueError as exc:
            raise ValueError(f"Column {column!r}: {exc}") from None

    # ------------------------------------------------------------------ points
    @property
    def resolution(self) -> float:
        """:math:`10^{-d}` (0 without digits)."""
        return 0.0 if self.digits is None else 10.0 ** (-self.digits)

    @property
    def integral(self) -> bool:
        """Whether every grid point is an integer (step and origin integers)."""
        if self.listed:
            return all(float(v).is_integer() for v in self.values)
        return float(self.step).is_integer() and float(self.origin).is_integer()

    def point(self, k: np.ndarray) -> np.ndarray:
        """:math:`g_k` for integer (float-held) ``k`` (a stepped grid)."""
        self._stepped()
        g = np.asarray(k, dtype=np.float64) * self.step + self.origin
        return g if self.digits is None else np.round(g, self.digits)

    def index(self, x: np.ndarray) -> np.ndarray:
        """:math:`k_0 = \\mathrm{rint}((x - o)/s)` (float-held integers; a stepped grid)."""
        self._stepped()
        return np.rint((np.asarray(x, dtype=np.float64) - self.origin) / self.step)

    def describe(self) -> str:
        if self.listed:
            return (
                f"{len(self.values)} listed values from {self.values[0]:g} to {self.values[-1]:g}"
            )
        core = f"k * {self.step:g}" + (f" + {self.origin:g}" if self.origin else "")
        core = core if self.digits is None else f"round({core}, {self.digits})"
        if self.bounds is not None:
            core += f" in [{self.bounds[0]:g}, {self.bounds[1]:g}]"
        return core

    def points(self, forbidden: tuple = ()) -> np.ndarray:
        """The distinct grid points inside the bounds that are not ``forbidden`` (codes and
        spikes are statuses, not values), increasing.

        Raises
        ------
        ValueError
            Without bounds, with more than :data:`MAX_POINTS` points, or with none.
        """
        if self.bounds is None:
            raise ValueError(f"The grid {self.describe()} has no bounds, so no finite points.")
        if self.listed:
            g = np.asarray(self.values, dtype=np.float64)
        else:
            k_low, k_high = self._support_indices(*self.bounds, False)
            count = k_high - k_low + 1
            if count > MAX_POINTS:
                raise ValueError(
                    f"The grid {self.describe()} has {count:.0f} points in its bounds, more "
                    f"than {MAX_POINTS}; declare a coarser step or narrower bounds, or a "
                    f"numeric model."
                )
            g = np.unique(self.point(np.arange(k_low, k_high + 1)))
        if forbidden:
            g = g[~np.isin(g, np.asarray([float(f) for f in forbidden], dtype=np.float64))]
        if g.size < 2:
            raise ValueError(
                f"The grid {self.describe()} has {g.size} allowed point(s) in its bounds; a "
                f"value model needs at least 2."
            )
        return g

    @staticmethod
    def nearest(points: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Index of the nearest of the increasing ``points`` to each ``x`` (ties: the lower)."""
        x = np.asarray(x, dtype=np.float64)
        j = np.clip(np.searchsorted(points, x), 1, points.size - 1)
        lower = (x - points[j - 1]) <= (points[j] - x)
        return np.where(lower, j - 1, j).astype(np.int64)

    def to_dict(self) -> dict:
        if self.listed:
            return {"values": list(self.values)}
        out: dict = {"step": self.step}
        if self.digits is not None:
            out["digits"] = self.digits
        if self.origin:
            out["origin"] = self.origin
        if self.bounds is not None:
            out["bounds"] = list(self.bounds)
        return out

    # ------------------------------------------------------------------ snapping
    def snap(
        self,
        x: np.ndarray,
        low: float = -math.inf,
        high: float = math.inf,
        *,
        low_open: bool = False,
        forbidden: tuple = (),
        index_ok: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> np.ndarray:
        r"""Each value of ``x`` moved to the nearest *allowed* grid point: inside the support
        ``[low, high]`` (``(low, high]`` with ``low_open``) and the declared bounds, not in ``forbidden`` and, with
        ``index_ok``, whose index k passes it (ties: the lower point); ``x`` is not modified.

        A value inside the support is settled by rings :math:`k_0 \pm j` around
        :math:`k_0 = \mathrm{rint}((x - o)/s)`: every point of ring :math:`j + 1` or beyond is
        at least :math:`(j + \tfrac12)s - r` away (module docstring), so the search stops once
        the best allowed point so far is nearer than that (ring 1 when nothing is excluded).
        A value below (above) the support is nearest to the lowest (highest) allowed point.

        Raises
        ------
        ValueError
            When a value is not finite or no allowed grid point exists near it.
        """
        x = np.asarray(x, dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise ValueError("Grid snapping needs finite values.")
        if self.bounds is not None:  # the declared range, inside the family's support
            if self.bounds[0] > low:
                low, low_open = self.bounds[0], False
            high = min(high, self.bounds[1])
        bad = np.asarray([float(f) for f in forbidden], dtype=np.float64)
        if self.listed:
            return self._snap_listed(x, low, high, low_open, bad, index_ok)

        def allowed(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            g = self.point(k)
            ok = (g > low) if low_open else (g >= low)
            ok &= g <= high
            if bad.size:
                ok &= ~np.isin(g, bad)
            if index_ok is not None:
                ok &= np.asarray(index_ok(k), dtype=bool)
            return g, ok

        out = np.empty(x.shape)
        k_low, k_high = self._support_indices(low, high, low_open)
        if k_low > k_high:
            raise ValueError(
                f"No point of the grid {self.describe()} lies in the support "
                f"{'(' if low_open else '['}{low:g}, {high:g}]."
            )
        below = (x <= low) if low_open else (x < low)
        above = x > high
        inner = ~(below | above)
        if inner.any():
            out[inner] = self._rings(x[inner], allowed)
        if below.any() or above.any():
            if below.any():
                out[below] = self._first(k_low, 1.0, k_high, allowed, low, high)
            if above.any():
                out[above] = self._first(k_high, -1.0, k_low, allowed, low, high)
        return out

    def _snap_listed(self, x, low, high, low_open, bad, index_ok) -> np.ndarray:
        """:meth:`snap` for listed values: the nearest allowed one (ties: the lower)."""
        if index_ok is not None:
            self._stepped()
        v = np.asarray(self.values, dtype=np.float64)
        ok = ((v > low) if low_open else (v >= low)) & (v <= high) & ~np.isin(v, bad)
        if not ok.any():
            raise ValueError(
                f"No value of the grid {self.describe()} lies in the support "
                f"{'(' if low_open else '['}{low:g}, {high:g}] outside the codes and spikes."
            )
        v = v[ok]
        if v.size == 1:
            return np.full(x.shape, v[0])
        return v[self.nearest(v, x)]

    def _rings(self, x: np.ndarray, allowed) -> np.ndarray:
        """The nearest allowed point to each value of ``x`` (inside the support), ring by ring."""
        k0 = self.index(x)
        best = np.full(x.shape, np.nan)
        dist = np.full(x.shape, np.inf)
        todo = np.arange(x.size)
        r = 0.5 * self.resolution
        for j in range(_MAX_RING):
            for dk in (0.0,) if j == 0 else (-float(j), float(j)):
                g, ok = allowed(k0[todo] + dk)
                d = np.abs(g - x[todo])
                better = ok & ((d < dist[todo]) | ((d == dist[todo]) & (g < best[todo])))
                idx = todo[better]
                best[idx], dist[idx] = g[better], d[better]
            todo = todo[~(dist[todo] < (j + 0.5) * self.step - r)]
            if todo.size == 0:
                return best
        raise ValueError(  # pragma: no cover  (2**16 excluded points in a row)
            f"No allowed point of the grid {self.describe()} near {x[todo][0]:g}."
        )

    def _first(self, start: float, direction: float, stop: float, allowed, low, high) -> float:
        """The first allowed point walking from index ``start`` in ``direction`` (the support's
        lowest or highest allowed point)."""
        if not (math.isfinite(start) and start * direction <= stop * direction):
            raise ValueError(
                f"No point of the grid {self.describe()} lies in the support [{low:g}, {high:g}]."
            )
        for j in range(_MAX_RING):
            k = start + direction * j
            if k * direction > stop * direction:
                break
            g, ok = allowed(np.array([k]))
            if ok[0]:
                return float(g[0])
        raise ValueError(
            f"No allowed point of the grid {self.describe()} in the support [{low:g}, {high:g}]."
        )

    def _support_indices(self, low: float, high: float, low_open: bool) -> tuple[float, float]:
        r"""(smallest, largest) k whose point lies in the support (grid points are monotone in
        k, and within :math:`r \le s/2` of :math:`ks + o`, so the bound is within 2 of the
        unrounded one)."""
        k_low, k_high = -math.inf, math.inf
        if math.isfinite(low):
            k = math.ceil((low - self.origin) / self.step) - 2
            above = (lambda g: g > low) if low_open else (lambda g: g >= low)
            while not above(float(self.point(np.array([k]))[0])):
                k += 1
            k_low = float(k)
        if math.isfinite(high):
            k = math.floor((high - self.origin) / self.step) + 2
            while float(self.point(np.array([k]))[0]) > high:
                k -= 1
            k_high = float(k)
        return k_low, k_high

    def share_off(self, x: np.ndarray) -> float:
        """Share of the values ``x`` that are not grid points (to a tolerance of 1e-9 of the
        step, or of the listed values' smallest gap, plus ``STORAGE_TOLERANCE`` of the
        value: decimals stored in single precision, 24.2 as 24.200000762939453, are on it)."""
        x = np.asarray(x, dtype=np.float64)
        x = x[np.isfinite(x)]
        if x.size == 0:
            return 0.0
        g = self.snap(x)
        step = np.min(np.diff(self.values)) if self.listed else self.step
        return float(np.mean(np.abs(g - x) > 1e-9 * step + STORAGE_TOLERANCE * np.abs(x)))
