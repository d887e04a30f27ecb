r"""Class-conditional Gaussian naive Bayes from weighted clipped sufficient statistics.

The synthesizer of REPS instantiation A (Asiaee et al., section 5.3 and appendix B.3). Each
record :math:`z = (x, y)` is encoded as one vector

.. math:: \phi(z) = e_y \otimes u(x), \qquad
          u(x) = \big(1,\ \text{onehot}(x_{c_1}), \dots, \text{onehot}(x_{c_q}),\
          \tilde x / B,\ \tilde x^2 / B^2\big),

with :math:`\tilde x` the standardised numeric features clipped to :math:`[-B, B]` (:math:`B = 3`,
appendix B.1) and :math:`e_y` the indicator of the record's label. One Gaussian release of

.. math:: f_w(D) = \frac1n \sum_i w_i\,\mathrm{clip}(\phi(z_i), C)        \qquad (2)

therefore carries, per label, the weighted label count, the label-conditional categorical counts
and the label-conditional first and second moments (appendix B.3's query blocks, released here as
one vector with one noise scale so Lemma 1 applies to the whole release). Because the constant 1
is part of :math:`u`, clipping rescales a record's whole contribution and every block is a
:math:`v_i = w_i\min(1, C/\|\phi_i\|)`-weighted sum; dividing by the count block gives
:math:`v`-weighted means. :math:`\|u(x)\|_2 \le \sqrt{1 + q + 2p}` for :math:`q` categorical and
:math:`p` numeric features, so at that :math:`C` (the default in REPS) clipping never binds.

Fitting the naive Bayes model is post-processing of the noisy vector: label and categorical
frequencies are clamped at 0 and normalised, means are divided by the noisy count, variances are
:math:`E[\tilde x^2] - E[\tilde x]^2` floored at ``var_floor``.

Sampling (post-processing) draws the label from the class frequencies, then each feature given
the label, and hands every column back in the dtype it had in the training frame (labels and
levels as the original values, integer columns rounded and kept in their integer type, so the
output goes through the package's evaluation functions like the input would).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_columns, check_finite_numeric, check_frame, check_positive
from pseudopost.mechanisms.reps.rarity import resolve_levels, resolve_scaling
from pseudopost.models.columns import ColumnInfo, decode_column

__all__ = [
    "NaiveBayesParameters",
    "NaiveBayesSchema",
    "clip_rows",
    "weighted_clipped_mean",
]


@dataclass(frozen=True)
class NaiveBayesSchema:
    """Columns, label classes, levels and standardisation: all that encoding and decoding need.

    ``levels`` are the categorical levels as strings (how records are encoded);
    ``level_values`` the value each level stands for in the training frame, and ``dtypes`` the
    dtype of each of ``columns``, so that samples come back in the input's types.
    """

    label: str
    classes: tuple
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    centre: tuple[float, ...]
    scale: tuple[float, ...]
    integer: tuple[bool, ...]
    columns: tuple[str, ...]
    bound: float = 3.0
    dtypes: tuple = ()
    level_values: tuple[tuple, ...] = ()

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        label: str,
        numeric: Sequence[str],
        categorical: Sequence[str],
        *,
        scaling: Mapping[str, tuple[float, float]] | None = None,
        categories: Mapping[str, Sequence] | None = None,
        bound: float = 3.0,
    ) -> NaiveBayesSchema:
        """Schema of ``frame``; ``scaling``/``categories`` given there are taken as public."""
        check_frame(frame, "frame")
        numeric, categorical = tuple(numeric), tuple(categorical)
        check_columns(frame, (label, *numeric, *categorical), "frame")
        for c in (label, *numeric, *categorical):
            _check_dtype(frame[c], c)
        if frame[label].isna().any():
            raise ValueError(f"The label column '{label}' has missing values.")
        classes = tuple(sorted(frame[label].unique(), key=str))
        if categories is not None and label in categories:
            classes = tuple(categories[label])
        if len(classes) < 2:
            raise ValueError(
                f"The label column '{label}' must have at least 2 classes; got {list(classes)}."
            )
        centre, scale = resolve_scaling(frame, numeric, scaling)
        levels = resolve_levels(frame, categorical, categories)
        integer = tuple(frame[c].dtype.kind in "iu" for c in numeric)
        columns = tuple(c for c in frame.columns if c in {label, *numeric, *categorical})
        values = tuple(
            tuple(categories[c]) if categories is not None and c in categories
            else _level_values(frame[c], lv)
            for c, lv in zip(categorical, levels, strict=True)
        )  # fmt: skip
        return cls(label, classes, numeric, categorical, levels, centre, scale, integer, columns,
                   check_positive(bound, "bound"), tuple(frame[c].dtype for c in columns),
                   values)  # fmt: skip

    def dtype_of(self, name: str) -> object:
        """The training dtype of column ``name`` (object for labels and levels, int64 or float64
        for numeric columns when the schema was built without ``dtypes``)."""
        if self.dtypes:
            return dict(zip(self.columns, self.dtypes, strict=True))[name]
        if name in self.numeric:
            return np.dtype(np.int64 if self.integer[self.numeric.index(name)] else np.float64)
        return np.dtype(object)

    def values_of(self, name: str) -> tuple:
        """The value each level of categorical column ``name`` stands for."""
        k = self.categorical.index(name)
        return self.level_values[k] if self.level_values else self.levels[k]

    @property
    def width(self) -> int:
        """Length of :math:`u(x)`: 1 + total levels + 2 per numeric column."""
        return 1 + sum(len(lv) for lv in self.levels) + 2 * len(self.numeric)

    @property
    def max_norm(self) -> float:
        r"""Largest possible :math:`\|\phi(z)\|_2 = \sqrt{1 + q + 2p}`."""
        return float(np.sqrt(1 + len(self.categorical) + 2 * len(self.numeric)))

    def encode(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """``(u, y)``: the ``(n, width)`` matrix :math:`u(x_i)` and label codes in ``classes``."""
        check_columns(frame, (self.label, *self.numeric, *self.categorical), "frame")
        y = pd.Index(self.classes).get_indexer(frame[self.label])
        if (y < 0).any():
            bad = frame[self.label][y < 0].iloc[0]
            raise ValueError(f"Label value {bad!r} is not one of the classes {list(self.classes)}.")
        u = np.zeros((len(frame), self.width))
        u[:, 0] = 1.0
        col = 1
        for c, lv in zip(self.categorical, self.levels, strict=True):
            codes = pd.Index(lv).get_indexer(frame[c].astype(str))
            rows = np.flatnonzero(codes >= 0)
            u[rows, col + codes[rows]] = 1.0  # a level outside the schema contributes nothing
            col += len(lv)
        values = check_finite_numeric(frame, self.numeric)
        p, b = len(self.numeric), self.bound
        for j, c in enumerate(self.numeric):
            z = np.clip((values[c] - self.centre[j]) / self.scale[j], -b, b)
            u[:, col + j] = z / b
            u[:, col + p + j] = (z / b) ** 2
        return u, y.astype(np.int64)


def clip_rows(phi: np.ndarray, clip: float) -> np.ndarray:
    r""":math:`\mathrm{clip}(u, C) = u\min\{1, C/\|u\|_2\}` row by row (eq. 2); ``inf`` = no-op."""
    c = float(clip)
    norms = np.linalg.norm(phi, axis=1)
    with np.errstate(divide="ignore"):
        factor = np.where(norms > c, c / np.where(norms > 0, norms, 1.0), 1.0)
    return phi * factor[:, None]


def weighted_clipped_mean(
    u: np.ndarray, y: np.ndarray, weights: np.ndarray, clip: float, n_classes: int
) -> np.ndarray:
    r"""Eq. 2: :math:`\frac1n\sum_i w_i\,\mathrm{clip}(e_{y_i}\otimes u_i, C)`, shape (K, width).

    :math:`\|e_y \otimes u\|_2 = \|u\|_2`, so rows of ``u`` are clipped directly. A null record
    :math:`\perp` is a zero row of ``u`` (or weight 0); ``n`` is the number of rows.
    """
    n = u.shape[0]
    v = clip_rows(u, clip) * (np.asarray(weights, dtype=float) / n)[:, None]
    out = np.zeros((n_classes, u.shape[1]))
    np.add.at(out, y, v)
    return out


@dataclass(frozen=True)
class NaiveBayesParameters:
    """Fitted class-conditional model on the standardised scale (post-processing of a release)."""

    schema: NaiveBayesSchema
    class_prob: np.ndarray
    category_prob: tuple[np.ndarray, ...]
    mean: np.ndarray
    var: np.ndarray

    @classmethod
    def from_statistics(
        cls, stats: np.ndarray, schema: NaiveBayesSchema, var_floor: float = 1e-3
    ) -> NaiveBayesParameters:
        """Estimate the model from a (noisy) ``(K, width)`` statistics array."""
        b, p = schema.bound, len(schema.numeric)
        count = stats[:, 0]
        class_prob = _normalise(count[None, :])[0]
        cats, col = [], 1
        for lv in schema.levels:
            cats.append(_normalise(stats[:, col : col + len(lv)]))
            col += len(lv)
        safe = np.where(count > 0, count, 1.0)[:, None]
        m1 = np.clip(stats[:, col : col + p] * b / safe, -b, b)
        m2 = np.clip(stats[:, col + p : col + 2 * p] * b**2 / safe, 0.0, b**2)
        empty = (count <= 0)[:, None]
        mean = np.where(empty, 0.0, m1)
        var = np.where(empty, 1.0, np.clip(m2 - m1**2, var_floor, b**2))
        return cls(schema, class_prob, tuple(cats), mean, var)

    def sample(self, n: int, seed: SeedLike = None) -> pd.DataFrame:
        """Draw ``n`` records: label, then each feature independently given the label; every
        column in the dtype of the training frame (:meth:`NaiveBayesSchema.from_frame`)."""
        rng = as_generator(seed)
        s = self.schema
        y = _categorical_draw(np.broadcast_to(self.class_prob, (n, self.class_prob.size)), rng)
        codes = {s.label: y}
        for c, prob in zip(s.categorical, self.category_prob, strict=True):
            codes[c] = _categorical_draw(prob[y], rng)
        z = rng.normal(self.mean[y], np.sqrt(self.var[y]))
        z = np.clip(z, -s.bound, s.bound)
        x = {c: s.centre[j] + s.scale[j] * z[:, j] for j, c in enumerate(s.numeric)}
        return pd.DataFrame({c: self._column(c, codes, x, n) for c in s.columns})

    def _column(self, name: str, codes: dict, x: dict, n: int) -> pd.Series:
        """One output column from its label/level codes or its values, in the input's dtype."""
        s, index = self.schema, pd.RangeIndex(n)
        dtype = s.dtype_of(name)
        if name in codes:
            values = s.classes if name == s.label else s.values_of(name)
            return decode_column(codes[name], ColumnInfo("categorical", dtype, values), index)
        if not s.integer[s.numeric.index(name)]:
            return decode_column(x[name], ColumnInfo("continuous", dtype), index)
        limits = np.iinfo(getattr(dtype, "numpy_dtype", dtype))  # stay in the integer type
        v = np.clip(np.round(x[name]), limits.min, limits.max)
        return decode_column(v, ColumnInfo("integer", dtype), index)


def _check_dtype(series: pd.Series, name: str) -> None:
    """Numeric, bool, string/object and categorical columns can be encoded; others cannot."""
    kind = series.dtype.kind
    if kind in "mMcV":  # timedelta, datetime, complex, raw bytes
        raise TypeError(
            f"Column '{name}' has dtype {series.dtype}, which REPS cannot encode; expected a "
            "numeric, bool, string/object or categorical column. Convert it first (e.g. a "
            "date to a number of days)."
        )


def _level_values(series: pd.Series, levels: tuple[str, ...]) -> tuple:
    """The training value behind each string level (the first value with that string)."""
    seen: dict[str, object] = {}
    for v in pd.unique(series.to_numpy(dtype=object)):
        seen.setdefault(str(v), v)
    return tuple(seen.get(lv, lv) for lv in levels)


def _normalise(counts: np.ndarray) -> np.ndarray:
    pos = np.maximum(counts, 0.0)
    tot = pos.sum(axis=1, keepdims=True)
    uniform = np.full_like(pos, 1.0 / pos.shape[1])
    return np.where(tot > 0, pos / np.where(tot > 0, tot, 1.0), uniform)


def _categorical_draw(prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    cdf = np.cumsum(prob, axis=1)
    u = rng.random(prob.shape[0])[:, None] * cdf[:, -1:]
    return np.minimum((u >= cdf).sum(axis=1), prob.shape[1] - 1)
