r"""How an earlier column enters a later column's design: public features of its status and value.

Column j is a predictor of a later column k through features that depend on the declarations
only, never on the confidential data's moments (guide: *Whole files*):

* a **categorical** column (levels: values, then missing and each code): one-hot of every level
  but the first (the reference), so a missing cell or a code shifts the later column's model
  like any other level;
* a **numeric** column: one-hot of each non-observed status it holds (missing, each code, each
  spike; the reference is "observed"), plus its value :math:`t(x)` through the declared public
  transform (``log``, ``log1p``, ``(centre, scale)``; ``log`` by default for a log-normal
  column), 0 when the value is not observed, plus **linear-spline** terms
  :math:`(t(x) - t(\kappa))_+` at each declared knot :math:`\kappa` (0 when not observed;
  named ``"{column}>{knot}"``). When the column's support :math:`[\ell, h]` is public (a
  bounded grid, listed values or bins: declared, or from the structure stage) the value is
  measured in units of the support's width, :math:`u = (t(x) - t(\ell)) / (t(h) - t(\ell))`
  in [0, 1] (``span``), so the coefficients' priors (sd 2.5 on the logit scale) read as
  effects across the support whatever the column's unit, and its spline enters as **hat
  functions** of :math:`u` at the knots and at :math:`h` (named ``"{column}@{knot}"`` and
  ``"{column}@high"``): the same functions as the value and hinge terms, but each
  coefficient is the effect *at* its knot relative to :math:`\ell`. A prior on slopes would
  forbid a steep change over a short stretch of the support (Adult: no degree at 17, many at
  22, a slope of about 180 logits per support width under a prior sd of 2.5); a prior on
  the effects at the knots does not. Gelman, Jakulin,
  Pittau & Su (2008) scale inputs by their sd, which is confidential; the support's width is
  public. Without it an income in dollars made a location-scale part's
  :math:`e^{-z^\top\gamma}` overflow (a dispersion coefficient of 0.01 per dollar is
  :math:`e^{1000}` at 10^5 dollars) and a record's log-likelihood reach -10^274.
  Knots are public: declared (e.g. from a codebook's bands) or released by the structure
  stage at the column's noisy quantiles (:mod:`pseudopost.mechanisms.structure`, paid from
  ``structure_epsilon``); knots read off the data's quantiles here would be outside every
  budget. They may be declared for some later columns only; the others take the value alone
  (each knot costs one coefficient per level of a categorical column's model).
* an **interaction** of two declared categorical columns: the products of their one-hot
  indicators (statuses included), which lets a later column's model differ by cell (income by
  sex and marital status) the way a tree's splits do.

Why these: a generalised linear model in each column is linear in its design; spline terms
capture non-linear effects of continuous predictors (hours at 40, income by age) and
interactions capture effects that differ by group, the two places where CART beats a plain GLM,
while every basis function is fixed before the data are seen, so the model's only contact with
the data is its likelihood, which the accountant covers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pseudopost.models.file.encoding import EncodedColumn

__all__ = ["ColumnFeatures", "Design", "public_span"]


def _apply(t: object, x: np.ndarray) -> np.ndarray:
    if t is None:
        return x
    if t == "log":
        return np.log(x)
    if t == "log1p":
        return np.log1p(x)
    return (x - t[0]) / t[1]


def _text(t: object, name: str) -> str:
    if t is None:
        return name
    if isinstance(t, str):
        return f"{t}({name})"
    return f"({name} - {t[0]:g}) / {t[1]:g}"


@dataclass(frozen=True, eq=False)
class ColumnFeatures:
    """The features of one column as a predictor (module docstring)."""

    column: EncodedColumn
    transform: object = None
    knots: tuple[float, ...] = ()
    #: (t(low), t(high)) of the public support, the unit of the value and spline terms
    span: tuple[float, float] | None = None
    #: clip the value to the span (a derived column's span, :mod:`.derived`, may not hold
    #: every value its definition gives)
    clip: bool = False

    def __post_init__(self) -> None:
        c = self.column
        if (self.transform is not None or self.knots) and not self._has_value:
            what = "transform" if self.transform is not None else "knots"
            raise ValueError(
                f"Column {c.name!r} has a {what} but enters later columns as one-hot levels "
                f"(it is modelled categorical or holds no observed number); drop the {what}."
            )
        if self._has_value:
            x = np.asarray(c.values, dtype=np.float64)[c.status == 0]
            low = {"log": 0.0, "log1p": -1.0}.get(self.transform) if isinstance(
                self.transform, str
            ) else None  # fmt: skip
            if low is not None and x.size and np.any(x <= low):
                i = int(np.flatnonzero(c.status == 0)[np.flatnonzero(x <= low)[0]])
                raise ValueError(
                    f"The transform {self.transform!r} of column {c.name!r} needs observed "
                    f"values > {low:g}; record {i} has {x[x <= low][0]:g} (declare it a spike "
                    f"or a code, or choose another transform)."
                )
            if self.knots and low is not None and min(self.knots) <= low:
                raise ValueError(
                    f"The knots of column {c.name!r} must be > {low:g} for its transform "
                    f"{self.transform!r}. Got {list(self.knots)}."
                )

    def _unit(self, t: np.ndarray) -> np.ndarray:
        """Transformed values in units of the support's width (module docstring)."""
        if self.span is None:
            return t
        lo, hi = self.span
        return (t - lo) / (hi - lo)

    @property
    def _has_value(self) -> bool:
        c = self.column
        return not (c.categorical or c.ordered) and 0 in c.statuses

    @property
    def _indicator_levels(self) -> list[tuple[str, object]]:
        """(name, level code or status code) of each indicator."""
        c = self.column
        if c.categorical or c.ordered:
            return [(_name(c, lv.status, lv.label), k) for k, lv in enumerate(c.levels)][1:]
        ref = 0 if 0 in c.statuses else c.statuses[0]
        return [(f"{c.name}:{c.status_label(s)}", s) for s in c.statuses if s != ref]

    @property
    def indicator_names(self) -> list[str]:
        return [n for n, _ in self._indicator_levels]

    @property
    def _hats(self) -> bool:
        """Whether the value enters as hat functions (knots on a public support)."""
        return bool(self.knots) and self.span is not None

    @property
    def _spline_knots(self) -> list[tuple[float, float]]:
        """(knot, its position on the value's scale) of each spline term. For hat functions
        only the knots strictly inside the support: a hinge at or beyond an end is constant or
        linear there, so dropping it leaves the span unchanged."""
        t = self._unit(_apply(self.transform, np.asarray(self.knots, dtype=np.float64)))
        pairs = [(float(k), float(v)) for k, v in zip(self.knots, t, strict=True)]
        return [(k, v) for k, v in pairs if 0.0 < v < 1.0] if self._hats else pairs

    @property
    def names(self) -> list[str]:
        out = self.indicator_names
        if not self._has_value:
            return out
        name = self.column.name
        if self._hats:
            return [*out, *(f"{name}@{k:g}" for k, _ in self._spline_knots), f"{name}@high"]
        return [*out, _text(self.transform, name),
                *(f"{name}>{k:g}" for k, _ in self._spline_knots)]  # fmt: skip

    @property
    def width(self) -> int:
        return len(self.names)

    @property
    def hat_names(self) -> list[str]:
        """The names of the value's hat functions (none when it enters as value and hinges)."""
        return self.names[len(self.indicator_names):] if self._hats and self._has_value else []

    def indicators(self, status: np.ndarray, values: np.ndarray) -> np.ndarray:
        """(n, w) one-hot indicators of the levels or statuses."""
        c = self.column
        levels = self._indicator_levels
        out = np.zeros((status.shape[0], len(levels)))
        key = c.level_codes(status, values) if (c.categorical or c.ordered) else status
        for j, (_, code) in enumerate(levels):
            out[:, j] = key == code
        return out

    def matrix(self, status: np.ndarray, values: np.ndarray) -> np.ndarray:
        """(n, width) features of a column given as its status codes and values."""
        ind = self.indicators(status, values)
        if not self._has_value:
            return ind
        obs = status == 0
        x = np.zeros(status.shape[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            x[obs] = self._unit(_apply(self.transform, np.asarray(values, dtype=np.float64)[obs]))
        if self.clip and self.span is not None:
            x[obs] = np.clip(x[obs], 0.0, 1.0)
        tk = [t for _, t in self._spline_knots]
        if self._hats:
            cols = [ind, np.where(obs[:, None], _hat_basis(x, tk), 0.0)]
        else:
            cols = [ind, x[:, None]]
            cols += [np.where(obs, np.maximum(x - t, 0.0), 0.0)[:, None] for t in tk]
        out = np.concatenate(cols, axis=1)
        if not np.isfinite(out).all():
            i = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
            raise ValueError(
                f"Column {self.column.name!r}: record {i}'s value has no finite "
                f"{_text(self.transform, self.column.name)}."
            )
        return out


def _hat_basis(x: np.ndarray, knots: list[float]) -> np.ndarray:
    r"""(n, m + 1) hat functions of unit values ``x`` in [0, 1] at the ``m`` interior knots
    and at 1: :math:`h_j(x)` is 1 at knot j, 0 at the knots beside it, linear between
    (the first rises from 0 at the support's low end; the last, at 1, from the last knot). Their
    span is the hinge basis' (continuous piecewise-linear functions, 0 at the low end, breaks
    at the knots); each coefficient is the effect *at* its knot."""
    grid = np.concatenate([[0.0], np.asarray(knots, dtype=np.float64), [1.0]])
    eye = np.eye(grid.size)[:, 1:]
    return np.stack([np.interp(x, grid, eye[:, j]) for j in range(grid.size - 1)], axis=1)


def public_span(transform: object, low: float, high: float) -> tuple[float, float] | None:
    """:attr:`ColumnFeatures.span` of a public support [low, high] under ``transform``, or
    None when it has no finite positive width there (a log of 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = _apply(transform, np.array([low, high], dtype=np.float64))
    if not np.all(np.isfinite(t)) or t[1] <= t[0]:
        return None
    return float(t[0]), float(t[1])


def _name(c: EncodedColumn, status: int, label: str) -> str:
    return f"{c.name}={label}" if status == 0 else f"{c.name}:{label}"


@dataclass(frozen=True, eq=False)
class Design:
    """The design of one modelled column: the features of its inputs, in order, then the
    declared interactions among them (both columns an input)."""

    inputs: tuple[ColumnFeatures, ...]
    interactions: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        names = self.names
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(
                f"Predictor names {dup} occur twice (two levels with the same label); rename "
                f"the levels."
            )

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(f.column.name for f in self.inputs)

    def _feature(self, name: str) -> ColumnFeatures:
        return next(f for f in self.inputs if f.column.name == name)

    @property
    def names(self) -> list[str]:
        out = [n for f in self.inputs for n in f.names]
        for a, b in self.interactions:
            fa, fb = self._feature(a), self._feature(b)
            out += [f"{x}&{y}" for x in fa.indicator_names for y in fb.indicator_names]
        return out

    @property
    def width(self) -> int:
        return len(self.names)

    def scale_centre(self, names: Sequence[str]) -> tuple[float, ...]:
        r"""The centre :math:`z_0` of a location-scale part's log-spread design over the
        predictors ``names`` (:mod:`pseudopost.models.parts.cumulative`, *Centred spread*): 1/h
        on each of the h hat functions of a column among them, 0 on every other feature. A
        column's hats and its status indicators sum to 1 on nearly every record, so without a
        centre their coefficients in :math:`\gamma` trade against the cutpoints' scale along a
        curved ridge; centred, that direction leaves the likelihood unchanged. Public: it
        depends on the design's names only."""
        names = list(names)
        out = np.zeros(len(names))
        for f in self.inputs:
            hats = set(f.hat_names)
            at = [j for j, n in enumerate(names) if n in hats]
            if at:
                out[at] = 1.0 / len(at)
        return tuple(float(v) for v in out)

    def matrix(self, states: Mapping[str, tuple[np.ndarray, np.ndarray]], n: int) -> np.ndarray:
        """(n, width) design from each input's (status, values)."""
        blocks = [f.matrix(*states[f.column.name]) for f in self.inputs]
        for a, b in self.interactions:
            ia = self._feature(a).indicators(*states[a])
            ib = self._feature(b).indicators(*states[b])
            blocks.append((ia[:, :, None] * ib[:, None, :]).reshape(n, -1))
        return np.concatenate(blocks, axis=1) if blocks else np.zeros((n, 0))


def interactions_for(
    inputs: Sequence[str], interactions: Sequence[tuple[str, str]]
) -> tuple[tuple[str, str], ...]:
    """The declared interactions whose two columns are both among ``inputs``."""
    have = set(inputs)
    return tuple(p for p in interactions if p[0] in have and p[1] in have)
