r"""Synthetic records from one entropy-calibrated histogram release (REAEDP, Algorithm 1).

The listed columns are coded on public bins (numeric: edges, or a count over public bounds;
categorical: public levels, or the levels found in the data, recorded as assumed public) and
crossed into one joint histogram with :math:`M = \prod_j m_j` cells. Two releases, each through
:class:`~pseudopost.mechanisms.EntropyHistogram`:

1. the noisy joint counts :math:`\tilde c = \max(c + \eta, 0)`, Laplace (pure
   :math:`\varepsilon_1`-DP) or Gaussian (:math:`(\varepsilon_1, \delta_1)`), L1 / L2
   sensitivity 2 / :math:`\sqrt 2` under replace-one, 1 under add/remove (the module table of
   :mod:`pseudopost.mechanisms.entropy.histogram`);
2. optionally (``entropy_share`` s > 0) the Shannon entropy of the joint counts,
   :math:`H(c) + \mathrm{noise}(\Delta_H/\varepsilon_2)` with Theorem 3's bound
   :math:`\Delta_H \le \frac1n(2 + 1/\ln 2 + 2\log_2 n)` (replace-one, n public).

:math:`\varepsilon_1 = (1-s)\varepsilon`, :math:`\varepsilon_2 = s\varepsilon` (and the same
split of :math:`\delta`); basic composition gives :math:`(\varepsilon, \delta)` (Theorem 1).
Each synthetic dataset is a multinomial draw of ``rows`` records from
:math:`\tilde c / \sum\tilde c` (``synthetic_counts``), each record decoded to its cell's levels
and a uniform value inside each numeric bin (integers for integer columns): post-processing, no
budget. ``rows`` must be public: the data's n under replace-one, else the rounded noisy total.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive, check_positive_int
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
        self._histogram(1, 1.0)  # constructor checks of EntropyHistogram (noise, delta, ...)

    def _histogram(self, cells: int, share: float):
        from pseudopost.mechanisms.entropy.histogram import EntropyHistogram

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
        """Release the noisy joint histogram (and optionally its entropy) of ``frame``."""
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

    def public_rows(self) -> int:
        """Rows per synthetic dataset: n under replace-one, else the rounded noisy total."""
        if self.neighbouring == "replace-one":
            return self.n_
        return max(1, round(float(self.histogram_.counts.sum())))

    def sample(self, rows: int, seed: SeedLike = None) -> pd.DataFrame:
        """``rows`` synthetic records drawn from the released histogram (post-processing)."""
        from pseudopost.mechanisms.entropy.histogram import synthetic_counts

        rows = check_positive_int(rows, "rows")
        rng = as_generator(seed)
        counts = synthetic_counts(self.histogram_, rows, seed=rng.spawn(1)[0]).astype(np.int64)
        cell = rng.permutation(np.repeat(np.arange(counts.size), counts))
        codes = np.unravel_index(cell, self.sizes_)
        out = {}
        for col, code in zip(self.coding_, codes, strict=True):
            if col["kind"] == "categorical":
                out[col["name"]] = np.asarray(col["levels"], dtype=object)[code]
            else:
                e = col["edges"]
                lo, hi = e[code], e[code + 1]
                if col["integer"]:
                    low = np.ceil(lo)
                    out[col["name"]] = rng.integers(low, np.maximum(np.ceil(hi), low + 1))
                else:
                    out[col["name"]] = lo + (hi - lo) * rng.random(code.size)
        frame = pd.DataFrame(out)
        for col in self.coding_:
            if col["kind"] == "categorical":
                levels = col["levels"]
                if all(isinstance(v, int | np.integer) for v in levels):
                    frame[col["name"]] = frame[col["name"]].astype(np.int64)
                elif all(isinstance(v, float | np.floating) for v in levels):
                    frame[col["name"]] = frame[col["name"]].astype(float)
                else:
                    frame[col["name"]] = frame[col["name"]].astype(str)
        return frame

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """Global (epsilon, delta)-DP of the whole release (REAEDP Theorems 1 and 3): the noisy
        joint counts and, optionally, their entropy, composed; replace-one (add/remove for the
        counts alone when ``neighbouring="add/remove"``)."""
        stages = self.stages()
        replace = self.neighbouring == "replace-one"
        return PrivacyStatement(
            mechanism="entropy",
            epsilon=sum(s["epsilon"] for s in stages),
            delta=sum(s["delta"] for s in stages),
            neighbouring=REPLACE_ONE if replace else ADD_REMOVE,
            scope="global",
            unit="release",
            assumptions=("n is public",) if replace else (),
            source="REAEDP, Theorems 1 and 3 (basic composition)",
        )

    def stages(self) -> list[dict[str, Any]]:
        """Per-stage budgets (for ``privacy.json``)."""
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
