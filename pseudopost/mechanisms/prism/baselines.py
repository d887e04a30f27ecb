r"""The PRISM paper's internal baselines (section 7, appendix C.2).

* :class:`AllFeaturesUniform`: PRISM with :math:`S` = every feature and uniform allocation
  ("All Features (Unif)"). Same privacy as :class:`~.core.PRISM` (replace-one, Theorem 6.1).
* :class:`CorrelationTopK`: the **non-private** oracle that takes the k features with the largest
  absolute Pearson correlation with Y and then measures them like PRISM. The selection reads the
  data without noise, so this release is *not* differentially private: its report carries a
  note and its ``privacy_statement`` raises.
* :class:`IndependenceOnly`: every 1-way marginal, measured with Gaussian noise at an equal share
  of :math:`(\varepsilon, \delta)` (after the DP-bin share, if any), replace-one,
  :math:`\Delta_2 = \sqrt2/n`, basic composition; columns sampled independently.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pseudopost._rng import as_generator
from pseudopost._validation import check_frame, check_positive_int
from pseudopost.mechanisms.prism.budget import LedgerEntry, PrivacyLedger
from pseudopost.mechanisms.prism.core import PRISM
from pseudopost.mechanisms.prism.discretize import encode_frame
from pseudopost.mechanisms.prism.measure import measure_marginal, replace_one_l2
from pseudopost.mechanisms.prism.naive_bayes import fit_naive_bayes
from pseudopost.mechanisms.prism.release import MarginalEstimator, prism_statement
from pseudopost.privacy.noise import gaussian_sigma
from pseudopost.privacy.statement import PrivacyStatement

__all__ = ["AllFeaturesUniform", "CorrelationTopK", "IndependenceOnly", "correlation_ranking"]


class AllFeaturesUniform(PRISM):
    """PRISM on every feature with uniform allocation ("All Features (Unif)")."""

    def __init__(
        self, epsilon: float, delta: float | None = None, target: str | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("allocation", "uniform")
        super().__init__(epsilon, delta, target, regime="causal", parents=(), **kwargs)

    def _features(self, frame: pd.DataFrame, target: str) -> tuple[list[str], list[str]]:
        features = [c for c in frame.columns if c != target]
        return features, features


def correlation_ranking(frame: pd.DataFrame, target: str) -> list[str]:
    """Features by decreasing absolute Pearson correlation with ``target`` (non-private)."""

    def num(s: pd.Series) -> np.ndarray:
        if pd.api.types.is_numeric_dtype(s):
            return s.to_numpy(dtype=float)
        return pd.factorize(s, sort=True)[0].astype(float)

    y = num(frame[target])
    corr = {}
    for c in frame.columns:
        if c == target:
            continue
        x = num(frame[c])
        sx = x.std()
        corr[c] = 0.0 if sx == 0 else abs(float(np.corrcoef(x, y)[0, 1]))
    return sorted(corr, key=lambda c: (-corr[c], c))


class CorrelationTopK(PRISM):
    """Non-private oracle: top-k \\|correlation\\| features, then PRISM measurement (not DP).

    Its :attr:`privacy_statement` raises: the selection reads the data without noise, so the
    release carries no guarantee (its privacy report keeps the measurement ledger, with a note).
    """

    _notes = ("feature selection by correlation top-k is NOT private (oracle baseline)",)

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        target: str | None = None,
        *,
        k: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(epsilon, delta, target, regime="causal", parents=(), **kwargs)
        self.k = check_positive_int(k, "k")

    def _features(self, frame: pd.DataFrame, target: str) -> tuple[list[str], list[str]]:
        features = [c for c in frame.columns if c != target]
        if self.k > len(features):
            raise ValueError(f"The 'k' parameter must be <= d={len(features)}. Got {self.k}.")
        return features, correlation_ranking(frame, target)[: self.k]

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """Always raises: the oracle baseline is not differentially private."""
        raise RuntimeError(
            "CorrelationTopK (the 'Corr Top-k (Oracle)' baseline) selects its features by "
            "correlation with the target computed without noise: the release is not "
            "differentially private and has no privacy statement."
        )


class IndependenceOnly(MarginalEstimator):
    """Every 1-way marginal with Gaussian noise; columns drawn independently."""

    _mechanism = "IndependenceOnly"

    def fit(self, frame: pd.DataFrame) -> IndependenceOnly:
        """Measure the 1-way marginals of ``frame`` (not modified)."""
        check_frame(frame, "frame")
        n = len(frame)
        delta = self.delta if self.delta is not None else 1.0 / n**2
        rng = as_generator(self.seed)
        dp_bins = any(isinstance(b, (int, np.integer)) for b in (self.bins or {}).values())
        eps_bins = self.epsilon * self.bins_fraction if dp_bins else 0.0
        enc, entries = encode_frame(
            frame,
            bins=self.bins,
            bounds=self.bounds,
            domain=self.domain,
            epsilon=eps_bins,
            seed=rng.spawn(1)[0],
        )
        codes, sizes = enc.encode(frame), enc.sizes
        d = len(enc.names)
        eps_q, delta_q = (self.epsilon - eps_bins) / d, delta / d
        sigma = gaussian_sigma(replace_one_l2(n), eps_q, delta_q, method="analytic")
        ms = [
            measure_marginal(
                codes,
                (c,),
                sizes,
                sigma,
                epsilon=eps_q,
                delta=delta_q,
                pool="bg",
                seed=rng.spawn(1)[0],
            )
            for c in enc.names
        ]
        self.ledger_ = PrivacyLedger(
            tuple(entries)
            + tuple(
                LedgerEntry(f"measure:{m.clique[0]}", "bg", "gaussian", eps_q, delta_q, m.rho)
                for m in ms
            ),
            delta,
            "approx",
        )
        target = enc.names[-1]
        self.model_ = fit_naive_bayes(ms, target, enc.names)
        self.encoding_, self.columns_ = enc, tuple(frame.columns)
        self._sample_rng = rng.spawn(1)[0]
        return self

    def _released(self) -> str:
        return f"the noisy 1-way marginals of {', '.join(self.columns_)}"

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """Global (epsilon, delta)-DP of the whole release under replace-one neighbours (basic
        composition of the 1-way Gaussian measurements); equal to ``privacy_report()``'s."""
        return prism_statement("independence", self.privacy_report(), self.encoding_)
