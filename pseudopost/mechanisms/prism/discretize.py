r"""Integer coding of a frame for marginal measurement, and mapping codes back on output.

Every column becomes codes :math:`0..K-1` over a domain that must be public:

* categorical columns: levels given by the caller (``domain``), or read from the data, which is
  recorded as ``source="data (assumed public)"`` in the release because the level set itself is
  then not protected;
* binned numeric columns: public edges given by the caller, or edges chosen under DP.

DP bins (an extension; the paper assumes public bins, section 3.1). For a column with public
bounds :math:`[lo, hi]`, count the records on a fine grid (one cell per integer for integer
columns with at most 512 values, else 256 equal cells), add Laplace noise, clip at zero, and put
the bin edges at the :math:`i/K` quantiles of the noisy CDF (post-processing). Replace-one
neighbours move one record between two cells, so the count vector has :math:`\ell_1` sensitivity
2 and Laplace scale :math:`2/\varepsilon_c` gives :math:`\varepsilon_c`-DP per column; the
columns compose to the sum (basic composition). Ties collapse, so heavy atoms (e.g. a capital
gain of 0) become their own bin.

Decoding: a categorical code maps to its level; a bin code to a uniform draw inside the bin
(an integer draw for integer columns); each column is then cast back to the dtype it had in the
confidential frame (``ColumnCoding.dtype``: int32 stays int32, bool stays bool, a pandas
categorical keeps its categories), so synthetic frames go wherever the input frame would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive, check_positive_int
from pseudopost.mechanisms.prism.budget import LedgerEntry
from pseudopost.models.columns import ColumnInfo, decode_column
from pseudopost.privacy.noise import laplace_noise

__all__ = ["ColumnCoding", "Encoding", "dp_quantile_edges", "encode_frame", "fit_encoding"]

_FINE_CELLS = 256
_MAX_UNIT_CELLS = 512


@dataclass(frozen=True)
class ColumnCoding:
    """How one column maps to integer codes: categorical levels or bin edges; ``dtype`` is the
    column's dtype in the confidential frame (``None``: the decoded values' own)."""

    name: str
    kind: str  # "categorical" or "binned"
    levels: tuple = ()
    edges: tuple[float, ...] = ()
    integer: bool = False
    source: str = "public"
    dtype: object = None

    @property
    def size(self) -> int:
        """Number of codes (the column's domain size)."""
        return len(self.levels) if self.kind == "categorical" else len(self.edges) - 1

    def encode(self, values: pd.Series) -> np.ndarray:
        """Codes for ``values``; unknown categorical levels raise ``ValueError``."""
        if self.kind == "categorical":
            codes = pd.Index(list(self.levels)).get_indexer(values).astype(np.int64)
            if (codes < 0).any():
                bad = values[codes < 0].unique()[:5].tolist()
                raise ValueError(
                    f"Column '{self.name}' holds value(s) {bad} outside its declared domain "
                    f"{list(self.levels)[:10]}."
                )
            return codes
        x = values.to_numpy(dtype=float)
        inner = np.asarray(self.edges[1:-1], dtype=float)
        return np.searchsorted(inner, x, side="right").astype(np.int64)

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.Series:
        """Values for ``codes``: the level, or a uniform draw inside the bin, as a Series in
        ``dtype`` (or, for a coding without one, in the decoded values' own dtype)."""
        codes = np.asarray(codes, dtype=np.int64)
        index = pd.RangeIndex(codes.size)
        if self.kind == "categorical":
            if self.dtype is None:
                dtype = object if _is_object(self.levels) else None
                return pd.Series(np.asarray(self.levels, dtype=dtype)[codes], index=index)
            info = ColumnInfo("categorical", self.dtype, tuple(self.levels))
            return decode_column(codes, info, index)
        e = np.asarray(self.edges, dtype=float)
        lo, hi = e[codes], e[codes + 1]
        if self.integer:
            values = rng.integers(np.ceil(lo), np.maximum(np.ceil(hi), np.ceil(lo) + 1))
            info = ColumnInfo("integer", np.dtype(np.int64) if self.dtype is None else self.dtype)
        else:
            values = lo + (hi - lo) * rng.random(codes.size)
            info = ColumnInfo("continuous", np.dtype(float) if self.dtype is None else self.dtype)
        return decode_column(values, info, index)


def _is_object(levels: tuple) -> bool:
    return any(not isinstance(v, (int, float, np.integer, np.floating, bool)) for v in levels)


@dataclass(frozen=True)
class Encoding:
    """The coding of every released column; a frozen, public part of the release."""

    columns: tuple[ColumnCoding, ...]

    @property
    def names(self) -> list[str]:
        """Column names in release order."""
        return [c.name for c in self.columns]

    @property
    def sizes(self) -> dict[str, int]:
        """Domain size of each column."""
        return {c.name: c.size for c in self.columns}

    def __getitem__(self, name: str) -> ColumnCoding:
        return next(c for c in self.columns if c.name == name)

    def encode(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        """Integer codes of every column (the frame is not modified)."""
        return {c.name: c.encode(frame[c.name]) for c in self.columns}

    def decode(self, codes: Mapping[str, np.ndarray], seed: SeedLike = None) -> pd.DataFrame:
        """A DataFrame in the original column order and types."""
        rng = as_generator(seed)
        return pd.DataFrame({c.name: c.decode(codes[c.name], rng) for c in self.columns})


def dp_quantile_edges(
    values: np.ndarray,
    n_bins: int,
    bounds: tuple[float, float],
    epsilon: float,
    *,
    integer: bool,
    seed: SeedLike = None,
) -> tuple[float, ...]:
    r"""Bin edges at the quantiles of a Laplace-noised fine histogram (:math:`\varepsilon`-DP).

    Replace-one: the fine count vector has :math:`\ell_1` sensitivity 2, noise
    ``laplace_scale = 2 / epsilon`` (module docstring). Returns strictly increasing edges from
    ``lo`` to ``hi`` (``hi + 1`` for integers so the top value has a bin).
    """
    n_bins = check_positive_int(n_bins, "n_bins", minimum=2)
    eps = check_positive(epsilon, "epsilon")
    lo, hi = float(bounds[0]), float(bounds[1])
    if not hi > lo:
        raise ValueError(f"The 'bounds' must satisfy lo < hi. Got {bounds!r}.")
    if integer and hi - lo + 1 <= _MAX_UNIT_CELLS:
        grid = np.arange(np.floor(lo), np.floor(hi) + 2, dtype=float)
    else:
        grid = np.linspace(lo, hi, _FINE_CELLS + 1)
        if integer:
            grid = np.unique(np.round(grid))
            grid[-1] = np.floor(hi) + 1
    x = np.clip(np.asarray(values, dtype=float), grid[0], np.nextafter(grid[-1], -np.inf))
    counts = np.bincount(np.searchsorted(grid[1:-1], x, side="right"), minlength=grid.size - 1)
    noisy = np.clip(laplace_noise(counts.astype(float), 2.0 / eps, seed), 0.0, None)
    if noisy.sum() <= 0:
        noisy = np.ones_like(noisy)
    cdf = np.cumsum(noisy) / noisy.sum()
    qs = np.arange(1, n_bins) / n_bins
    cut = grid[np.minimum(np.searchsorted(cdf, qs, side="left") + 1, grid.size - 1)]
    edges = np.unique(np.concatenate([[grid[0]], cut, [grid[-1]]]))
    return tuple(float(e) for e in edges)


def fit_encoding(
    frame: pd.DataFrame,
    columns: Sequence[str],
    *,
    bins: Mapping[str, int | Sequence[float]] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    domain: Mapping[str, Sequence] | None = None,
    epsilon: float | None = None,
    max_levels: int = 100,
    seed: SeedLike = None,
) -> tuple[Encoding, list[str]]:
    """Build the coding of ``columns``; return it and the names of the DP-binned columns.

    ``bins[col]`` is either a sequence of public edges or an int K (K DP quantile bins, which
    needs ``bounds[col]`` and a share of ``epsilon``, split evenly over such columns).
    ``domain[col]`` lists a categorical column's public levels. Any other column is categorical
    with the levels found in the data (at most ``max_levels``).
    """
    bins, bounds, domain = dict(bins or {}), dict(bounds or {}), dict(domain or {})
    unknown = [c for c in [*bins, *domain] if c not in columns]
    if unknown:
        raise ValueError(f"The 'bins'/'domain' arguments name unknown column(s) {unknown}.")
    dp_cols = [c for c, b in bins.items() if isinstance(b, (int, np.integer))]
    missing = [c for c in dp_cols if c not in bounds]
    if missing:
        raise ValueError(
            f"DP bins for column(s) {missing} need public 'bounds' (lo, hi); bounds read from "
            "the data would not be private."
        )
    if dp_cols and epsilon is None:
        raise ValueError("DP bins need a budget share; got epsilon=None.")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"Unknown column(s) {missing} in 'frame'; available columns are {list(frame.columns)}."
        )
    for c in columns:  # every check before any noise is drawn
        s = frame[c]
        if s.isna().any():
            raise ValueError(f"Column '{c}' has missing values; fill or drop them before release.")
        if c in bins and not (
            pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        ):
            raise TypeError(
                f"Column '{c}' has bins, so it must be numeric; got dtype {s.dtype}. Give it a "
                "categorical domain instead, or convert it to numbers."
            )
    rng = as_generator(seed)
    coded = []
    for c in columns:
        s = frame[c]
        integer = pd.api.types.is_integer_dtype(s)
        if c in dp_cols:
            edges = dp_quantile_edges(
                s.to_numpy(),
                int(bins[c]),
                bounds[c],
                epsilon / len(dp_cols),
                integer=integer,
                seed=rng.spawn(1)[0],
            )
            coded.append(
                ColumnCoding(c, "binned", edges=edges, integer=integer, source="dp", dtype=s.dtype)
            )
        elif c in bins:
            edges = np.asarray(bins[c], dtype=float)
            if edges.ndim != 1 or edges.size < 2 or not np.all(np.diff(edges) > 0):
                raise ValueError(
                    f"The bins for column '{c}' must be >= 2 increasing edges. Got {bins[c]!r}."
                )
            coded.append(
                ColumnCoding(c, "binned", edges=tuple(edges), integer=integer, dtype=s.dtype)
            )
        else:
            levels = tuple(domain[c]) if c in domain else tuple(pd.unique(s.sort_values()))
            if len(levels) > max_levels:
                raise ValueError(
                    f"Column '{c}' has {len(levels)} distinct values (> max_levels={max_levels}); "
                    "give it bins (public edges or a DP bin count with bounds)."
                )
            src = "public" if c in domain else "data (assumed public)"
            coded.append(ColumnCoding(c, "categorical", levels=levels, source=src, dtype=s.dtype))
    return Encoding(tuple(coded)), dp_cols


def encode_frame(
    frame: pd.DataFrame,
    *,
    bins: Mapping[str, int | Sequence[float]] | None,
    bounds: Mapping[str, tuple[float, float]] | None,
    domain: Mapping[str, Sequence] | None,
    epsilon: float,
    seed: SeedLike = None,
) -> tuple[Encoding, list[LedgerEntry]]:
    r""":func:`fit_encoding` of every column of ``frame`` and the ledger entries of its DP bins.

    ``epsilon`` is the DP bins' share (unused when no column has DP bins); each of the :math:`k`
    DP-binned columns is a Laplace release at :math:`\varepsilon/k`, charged
    :math:`\rho = (\varepsilon/k)^2/2` under zCDP.
    """
    encoding, dp_cols = fit_encoding(
        frame,
        list(frame.columns),
        bins=bins,
        bounds=bounds,
        domain=domain,
        epsilon=epsilon,
        seed=seed,
    )
    entries: list[LedgerEntry] = []
    for c in dp_cols:
        e = epsilon / len(dp_cols)
        entries.append(LedgerEntry(f"bins:{c}", "bins", "laplace", e, 0.0, e**2 / 2))
    return encoding, entries
