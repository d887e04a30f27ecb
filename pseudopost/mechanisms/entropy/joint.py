r"""Synthetic records from one entropy-calibrated histogram release (REAEDP, Algorithm 1).

Algorithm 1 on a frame, as :meth:`JointHistogramRelease.fit` and :meth:`~.sample` run it:

1. Line 1 (binning, no budget): the listed columns are coded on *public* bins (numeric: edges, or
   a count over public bounds; categorical: public levels, or the levels found in the data,
   recorded as assumed public) and crossed into one joint histogram
   :math:`c \in \mathbb N^K`, :math:`K = \prod_j K_j` cells.
2. Lines 2-4, budget :math:`(\varepsilon_1, \delta_1) = ((1-s)\varepsilon, (1-s)\delta)`: the
   noisy joint counts :math:`\tilde c = \max(c + \eta, 0)` through
   :class:`~pseudopost.mechanisms.EntropyHistogram`, Laplace (pure :math:`\varepsilon_1`) or
   Gaussian, L1 / L2 sensitivity 2 / :math:`\sqrt 2` under replace-one, 1 under add/remove
   (the table of :mod:`pseudopost.mechanisms.entropy.histogram`).
3. Lines 3 and 5, budget :math:`(\varepsilon_2, \delta_2) = (s\varepsilon, s\delta)`, only when
   ``entropy_share`` :math:`s > 0`: the Shannon entropy of the joint counts,
   :math:`H(c) + \mathrm{noise}(\Delta_H/\varepsilon_2)` with Theorem 3's bound
   :math:`\Delta_H \le \frac1n(2 + 1/\ln 2 + 2\log_2 n)` (eq. 4; replace-one, n public).
4. Synthesis (post-processing, no budget): each synthetic dataset is a multinomial draw of ``n``
   records from :math:`\tilde c / \sum\tilde c` (:func:`synthetic_counts`, the "DP synthetic"
   baseline of Fig. 5), each record decoded to its cell's levels and a uniform value inside each
   numeric bin (integers for integer columns), every column in its input dtype. ``n`` must be
   public: the data's n under replace-one, else the rounded noisy total (:meth:`public_rows`).

Privacy (:attr:`JointHistogramRelease.privacy_statement`): basic composition of steps 2 and 3
(Theorem 1) gives :math:`(\varepsilon, \delta)` for the whole release, globally, under
replace-one neighbours (add/remove for the counts alone with ``neighbouring="add-remove"``); it
equals the sum over :meth:`JointHistogramRelease.stages`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_columns, check_frame, check_positive, check_positive_int
from pseudopost.mechanisms.entropy.histogram import (
    EntropyHistogram,
    _exact_noise_note,
    synthetic_counts,
)
from pseudopost.models.columns import ColumnInfo, decode_column
from pseudopost.privacy.statement import ADD_REMOVE, REPLACE_ONE, PrivacyStatement

__all__ = ["JointHistogramRelease"]


@dataclass
class JointHistogramRelease:
    """The joint-histogram release of ``columns`` (module docstring); ``fit`` then ``sample``."""

    epsilon: float
    delta: float | None
    columns: tuple[str, ...]
    bins: Mapping[str, Any] = field(default_factory=dict)
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    domain: Mapping[str, Sequence] = field(default_factory=dict)
    noise: str = "laplace"
    neighbouring: str = "replace-one"
    calibration: str = "analytic"
    entropy_share: float = 0.0
    max_cells: int = 1_000_000

    def __post_init__(self) -> None:
        check_positive(self.epsilon, "epsilon")
        check_positive_int(self.max_cells, "max_cells")
        if not 0.0 <= self.entropy_share < 1.0:
            raise ValueError(f"'entropy_share' must be in [0, 1). Got {self.entropy_share!r}.")
        for c, b in self.bins.items():
            if np.ndim(b) == 0 and c not in self.bounds:
                raise ValueError(f"A bin count for column '{c}' needs public bounds.")
        if self.entropy_share > 0 and self.neighbouring != "replace-one":
            raise ValueError(
                f"'entropy_share' = {self.entropy_share!r} needs neighbouring='replace-one': the "
                "entropy bound needs a public n (Theorem 3). Set entropy_share=0."
            )
        # the constructor checks of EntropyHistogram (noise, delta, calibration) for each release
        self._histogram(1, 1.0 - self.entropy_share)
        if self.entropy_share > 0:
            self._histogram(1, self.entropy_share)

    def _histogram(self, cells: int, share: float) -> EntropyHistogram:
        delta = None if self.delta is None else self.delta * share
        return EntropyHistogram(
            self.epsilon * share,
            cells,
            mechanism=self.noise,
            delta=delta,
            neighbouring=self.neighbouring,
            gaussian_method=self.calibration,
        )

    # ------------------------------------------------------------------ coding
    def _coding(self, frame: pd.DataFrame) -> list[dict[str, Any]]:
        coding = []
        for c in self.columns:
            if c in self.bins:
                b = self.bins[c]
                if np.ndim(b) == 0:
                    lo, hi = self.bounds[c]
                    edges = np.linspace(lo, hi, int(b) + 1)
                else:
                    edges = np.asarray(b, dtype=float)
                integer = pd.api.types.is_integer_dtype(frame[c])
                coding.append(
                    {
                        "name": c,
                        "kind": "binned",
                        "edges": edges,
                        "integer": integer,
                        "source": "public",
                        "dtype": frame[c].dtype,
                    }
                )
            else:
                public = c in self.domain
                levels = list(self.domain[c]) if public else sorted(pd.unique(frame[c]), key=str)
                coding.append(
                    {
                        "name": c,
                        "kind": "categorical",
                        "levels": levels,
                        "source": "public" if public else "data (assumed public)",
                        "dtype": frame[c].dtype,
                    }
                )
        return coding

    @staticmethod
    def _size(col: Mapping[str, Any]) -> int:
        return len(col["levels"]) if col["kind"] == "categorical" else len(col["edges"]) - 1

    def _codes(self, frame: pd.DataFrame, coding) -> np.ndarray:
        out = []
        for col in coding:
            s = frame[col["name"]]
            if col["kind"] == "categorical":
                codes = pd.Index(col["levels"]).get_indexer(s)
                if (codes < 0).any():
                    bad = s[codes < 0].unique()[:5].tolist()
                    raise ValueError(
                        f"Column '{col['name']}' holds value(s) {bad} outside its declared domain."
                    )
            else:
                e = col["edges"]
                x = np.clip(s.to_numpy(float), e[0], e[-1])  # outside values count in end bins
                codes = np.clip(np.searchsorted(e[1:-1], x, side="right"), 0, e.size - 2)
            out.append(codes.astype(np.int64))
        return np.stack(out)

    def check(self, frame: pd.DataFrame) -> int:
        """Check that ``frame`` can be coded within ``max_cells``; returns the cell count."""
        check_frame(frame, "frame", min_rows=1)
        check_columns(frame, self.columns, "frame")
        for c in self.columns:
            s = frame[c]
            if s.isna().any():
                raise ValueError(
                    f"Column '{c}' has {int(s.isna().sum())} missing value(s); fill or drop them "
                    "before release."
                )
            if c in self.bins and not (
                pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
            ):
                raise TypeError(
                    f"Column '{c}' has bins, so it must be numeric; got dtype {s.dtype}. Give it "
                    "a domain of levels instead, or convert it to numbers."
                )
        coding = self._coding(frame)
        cells = int(np.prod([self._size(c) for c in coding], dtype=float))
        if cells > self.max_cells:
            raise ValueError(
                f"The joint histogram of {list(self.columns)} has {cells} cells, more than "
                f"max_cells = {self.max_cells}; use fewer columns or coarser bins."
            )
        self._codes(frame, coding)
        return cells

    # ------------------------------------------------------------------ release
    def fit(self, frame: pd.DataFrame, seed: SeedLike = None) -> JointHistogramRelease:
        """Release the noisy joint histogram (and optionally its entropy) of ``frame`` (not
        modified); ``seed`` drives the release and, by default, the samples."""
        from pseudopost.privacy.entropy import shannon_entropy

        cells = self.check(frame)
        coding = self._coding(frame)
        sizes = [self._size(c) for c in coding]
        cell = np.ravel_multi_index(tuple(self._codes(frame, coding)), sizes)
        rng = as_generator(seed)
        s_hist, s_ent, self._sample_seed = rng.spawn(3)
        share = self.entropy_share
        hist = self._histogram(cells, 1.0 - share)
        self.histogram_ = hist.release(cell, seed=s_hist)
        self.entropy_ = None
        if share > 0:
            self.entropy_ = self._histogram(cells, share).release_entropy(cell, seed=s_ent)
        self.coding_, self.sizes_, self.n_ = coding, sizes, len(frame)
        # evaluation only (reads the confidential counts): entropy before and after
        self.utility_ = hist.utility(cell, self.histogram_)
        self.entropy_original_ = shannon_entropy(self.utility_.original_counts)
        return self

    def _fitted(self) -> None:
        if not hasattr(self, "histogram_"):
            raise RuntimeError(
                "This JointHistogramRelease instance is not fitted yet; call fit(frame) first."
            )

    def public_rows(self) -> int:
        """Rows per synthetic dataset: n under replace-one, else the rounded noisy total."""
        self._fitted()
        if self.neighbouring == "replace-one":
            return self.n_
        return max(1, round(float(self.histogram_.counts.sum())))

    def sample(
        self, n: int | None = None, seed: SeedLike = None, *, rows: int | None = None
    ) -> pd.DataFrame:
        """``n`` synthetic records drawn from the released histogram (post-processing), in the
        frame's columns and dtypes. ``rows`` is a deprecated alias of ``n``."""
        self._fitted()
        if rows is not None:
            if n is not None:
                raise TypeError("sample() got both 'n' and the deprecated 'rows'; pass n only.")
            warnings.warn(
                "JointHistogramRelease.sample(rows=...) is deprecated: pass the number of records "
                "as n=... (the alias is removed in the next version).",
                DeprecationWarning,
                stacklevel=2,
            )
            n = rows
        if n is None:
            raise TypeError("JointHistogramRelease.sample() needs 'n', the number of records.")
        n = check_positive_int(n, "n")
        rng = as_generator(seed)
        counts = synthetic_counts(self.histogram_, n, seed=rng.spawn(1)[0]).astype(np.int64)
        cell = rng.permutation(np.repeat(np.arange(counts.size), counts))
        codes = np.unravel_index(cell, self.sizes_)
        index = pd.RangeIndex(n)
        out = {}
        for col, code in zip(self.coding_, codes, strict=True):
            if col["kind"] == "categorical":
                info = ColumnInfo("categorical", col["dtype"], tuple(col["levels"]))
                out[col["name"]] = decode_column(code, info, index)
                continue
            e = col["edges"]
            lo, hi = e[code], e[code + 1]
            if col["integer"]:
                low = np.ceil(lo)
                values = rng.integers(low, np.maximum(np.ceil(hi), low + 1))
                info = ColumnInfo("integer", col["dtype"])
            else:
                values = lo + (hi - lo) * rng.random(code.size)
                info = ColumnInfo("continuous", col["dtype"])
            out[col["name"]] = decode_column(values, info, index)
        return pd.DataFrame(out)

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """Global (epsilon, delta)-DP of the whole release (REAEDP Theorems 1 and 3): the noisy
        joint counts and, optionally, their entropy, composed; replace-one (add/remove for the
        counts alone when ``neighbouring="add-remove"``). Equal to the sum over :meth:`stages`."""
        stages = self.stages()
        replace = self.neighbouring == "replace-one"
        read = [c["name"] for c in self.coding_ if c["source"].startswith("data")]
        return PrivacyStatement(
            mechanism="entropy",
            epsilon=sum(s["epsilon"] for s in stages),
            delta=sum(s["delta"] for s in stages),
            neighbouring=REPLACE_ONE if replace else ADD_REMOVE,
            scope="global",
            unit="release",
            assumptions=(
                *(("n is public",) if replace else ()),
                "the bins and levels are public (fixed before seeing the data)"
                + (f"; the levels of {read} were read from the data" if read else ""),
                *_exact_noise_note(self.histogram_.backend),
            ),
            source="REAEDP, Algorithm 1, Theorems 1 and 3 (basic composition)",
        )

    def stages(self) -> list[dict[str, Any]]:
        """Per-stage budgets (for ``privacy.json``)."""
        self._fitted()
        h = self.histogram_
        out = [
            {
                "stage": f"noisy joint histogram ({len(h.counts)} cells, {h.mechanism}, "
                f"sensitivity {h.sensitivity:.4g}, scale {h.scale:.4g})",
                "epsilon": h.epsilon,
                "delta": h.delta,
            }
        ]
        if self.entropy_ is not None:
            e = self.entropy_
            out.append(
                {
                    "stage": f"Shannon entropy of the joint counts (Theorem 3 bound "
                    f"{e.sensitivity:.4g}, scale {e.scale:.4g})",
                    "epsilon": e.epsilon,
                    "delta": e.delta,
                }
            )
        out.append(
            {
                "stage": "m synthetic datasets sampled from the released histogram",
                "epsilon": 0.0,
                "delta": 0.0,
                "note": "post-processing",
            }
        )
        return out
