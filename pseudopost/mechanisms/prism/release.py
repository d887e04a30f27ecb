r"""The frozen PRISM release: what was measured, at what cost, and how to sample from it.

Everything a data user needs is in the record: the public coding of the columns, the selected
features S, the workload, every noisy marginal with its sigma and budget, the released noisy
(conditional) mutual informations, and the privacy ledger. The fitted backend (graphical model or
naive Bayes) is post-processing of these and is stored alongside for sampling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from pseudopost._cards import ReleaseCard
from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import (
    check_in_interval,
    check_positive,
    check_positive_int,
    check_probability,
)
from pseudopost.mechanisms.prism.budget import PrivacyLedger
from pseudopost.mechanisms.prism.discretize import Encoding
from pseudopost.mechanisms.prism.measure import MarginalMeasurement
from pseudopost.mechanisms.prism.workload import Workload
from pseudopost.privacy.statement import REPLACE_ONE, PrivacyStatement

__all__ = ["MarginalEstimator", "PRISMRelease", "prism_statement", "sample_decoded"]


def prism_statement(
    mechanism: str,
    report: dict[str, Any],
    encoding: Encoding,
    extra: tuple[str, ...] = (),
) -> PrivacyStatement:
    """The :class:`~pseudopost.privacy.PrivacyStatement` of a marginal release from its privacy
    report: global (epsilon, delta) for the whole release (exactly the report's ``epsilon`` and
    ``delta``), replace-one neighbours (PRISM section 3.2), with the column domains that were
    read from the data named as assumed public."""
    read = [c.name for c in encoding.columns if c.source.startswith("data")]
    return PrivacyStatement(
        mechanism=mechanism,
        epsilon=float(report["epsilon"]),
        delta=float(report["delta"]),
        neighbouring=REPLACE_ONE,
        scope="global",
        unit="release",
        assumptions=(
            "n is public",
            "the column domains (levels, bin edges, DP-bin bounds) are public"
            + (f"; the levels of {read} were read from the data" if read else ""),
            *extra,
        ),
        source="PRISM (Asiaee et al.), Theorem 6.1 (basic composition; zCDP, Bun & Steinke "
        "2016, Prop. 1.3, when accounting='zcdp')",
    )


def sample_decoded(
    model: Any, encoding: Encoding, n: int, seed: SeedLike, columns: Sequence[str]
) -> pd.DataFrame:
    """``n`` records from a fitted backend: codes drawn by ``model``, decoded by ``encoding``
    and returned in ``columns``' order (post-processing of the release)."""
    n = check_positive_int(n, "n")
    rng = as_generator(seed)
    codes = model.sample(n, rng.spawn(1)[0])
    return encoding.decode(codes, rng.spawn(1)[0])[list(columns)]


class MarginalEstimator(ReleaseCard):
    """An estimator whose ``fit`` keeps a noisy marginal release (``ledger_``, ``model_``,
    ``encoding_``, ``columns_``) and a sampling stream: :class:`~pseudopost.mechanisms.prism.MST`,
    :class:`~pseudopost.mechanisms.prism.IndependenceOnly`."""

    _mechanism: ClassVar[str]
    ledger_: PrivacyLedger
    model_: Any
    encoding_: Encoding
    columns_: tuple[str, ...]
    _sample_rng: np.random.Generator

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        bins: Mapping[str, Any] | None = None,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        domain: Mapping[str, Sequence] | None = None,
        bins_fraction: float = 0.05,
        seed: SeedLike = None,
    ) -> None:
        self.epsilon = check_positive(epsilon, "epsilon")
        self.delta = None if delta is None else check_probability(delta, "delta")
        self.bins, self.bounds, self.domain, self.seed = bins, bounds, domain, seed
        self.bins_fraction = check_in_interval(
            bins_fraction, "bins_fraction", 0.0, 1.0, closed="neither"
        )

    def _released(self) -> str:
        """The card's line on what the fitted release holds."""
        raise NotImplementedError

    def _card_details(self) -> list[tuple[str, str]]:
        if not hasattr(self, "ledger_"):
            return [("state", "not fitted")]
        return [("released", self._released())]

    def _fitted(self) -> None:
        if not hasattr(self, "ledger_"):
            raise RuntimeError(
                f"This {self._mechanism} instance is not fitted yet; call fit(frame) first."
            )

    def sample(self, n: int, seed: SeedLike = None) -> pd.DataFrame:
        """``n`` synthetic records in the frame's columns and dtypes (post-processing);
        ``seed=None`` continues the fit seed's stream."""
        self._fitted()
        n = check_positive_int(n, "n")  # before the stream advances
        seed = self._sample_rng.spawn(1)[0] if seed is None else seed
        return sample_decoded(self.model_, self.encoding_, n, seed, self.columns_)

    def privacy_report(self) -> dict[str, object]:
        """Both accountings of the release (basic composition and zCDP)."""
        self._fitted()
        return {"mechanism": self._mechanism, **self.ledger_.summary()}


@dataclass(frozen=True, repr=False)
class PRISMRelease(ReleaseCard):
    """A PRISM release (section 5, Algorithm 1) as a frozen record."""

    encoding: Encoding
    target: str
    regime: str
    features: tuple[str, ...]
    workload: Workload
    measurements: tuple[MarginalMeasurement, ...]
    ledger: PrivacyLedger
    backend: str
    n: int
    allocation: str
    released_scores: Mapping[str, Any] = field(default_factory=dict)
    model: Any = None
    column_order: tuple[str, ...] = ()

    def sample(self, n: int, seed: SeedLike = None) -> pd.DataFrame:
        """``n`` synthetic records in the original columns and types (post-processing)."""
        columns = self.column_order or self.encoding.names
        return sample_decoded(self.model, self.encoding, n, seed, columns)

    def _card_lines(self) -> list[tuple[str, str]]:
        s = self.ledger.summary()
        eps, delta = s.get("epsilon"), s.get("delta")
        return [
            ("privacy", f"global ({eps:.4g}, {delta:.3g})-DP for the whole release, "
                        "neighbours: replace-one"),
            ("released", f"{len(self.measurements)} noisy marginals of {self.n} records "
                         f"({self.allocation} allocation, {self.regime})"),
            ("target", f"{self.target}; features: {', '.join(self.features) or '-'}"),
        ]  # fmt: skip

    def report(self) -> dict[str, Any]:
        """The privacy report: guarantee, neighbouring relation, budget per pool and per query."""
        out = dict(self.ledger.summary())
        out.update(
            mechanism="PRISM",
            regime=self.regime,
            backend=self.backend,
            allocation=self.allocation,
            target=self.target,
            selected_features=list(self.features),
            n_records=self.n,
            measurements=[
                {
                    "clique": list(m.clique),
                    "pool": m.pool,
                    "weight": m.weight,
                    "cells": m.cells,
                    "sigma": m.sigma,
                    "epsilon": m.epsilon,
                    "delta": m.delta,
                    "rho": m.rho,
                }
                for m in self.measurements
            ],
            column_domains={
                c.name: {"size": c.size, "kind": c.kind, "source": c.source}
                for c in self.encoding.columns
            },
        )
        return out
