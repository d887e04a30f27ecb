r"""Baselines and ablations of the REPS paper (section 7.3), on the same naive Bayes pipeline.

=====================  ==========================================================================
``non_private``        :class:`NonPrivateNaiveBayes`: same synthesizer, no noise, no clipping.
``dp_uniform``         all :math:`w_i = 1`, the whole :math:`(\varepsilon, \delta)` on synthesis.
``dp_uniform_split``   all :math:`w_i = 1`, synthesis at :math:`(0.9\varepsilon, \delta/2)`; the
                       scoring share is left unspent (matched noise).
``reps``               :class:`~pseudopost.mechanisms.reps.core.REPS` with hinge-exp weights.
``random_downweight``  :class:`RandomDownweighting`: REPS's weights shuffled across records.
``hard_removal``       :class:`HardRemoval`: weight 0 (the null record) above the threshold.
=====================  ==========================================================================

Privacy (:attr:`privacy_statement` of each). Neighbouring relation as in REPS (one record
replaced by the null record, public :math:`n`); every DP method reports Theorem 1's
:math:`(\varepsilon_s + \varepsilon_t, \delta_s + \delta_t)` as ``epsilon_``/``delta_``.

* ``dp_uniform``, ``dp_uniform_split``: :math:`w_i = 1`, Stage 2 alone (or with the unspent
  scoring share): global.
* ``hard_removal``: the weight map :math:`w_i = 1[\hat s_i \le t]` with a DP threshold is a
  function of record :math:`i` and DP releases, so Lemma 1 and Theorem 1 hold: global. It keeps
  :math:`n` and the noise of the matched split (a removed record is replaced by :math:`\perp`)
  rather than re-normalising by the data-dependent number of remaining records.
* ``random_downweight``: record :math:`i` gets the weight :math:`g(\hat s_{\pi(i)})` of another
  record. Replacing record :math:`k` by :math:`\perp` then also changes the weight of record
  :math:`\pi^{-1}(k)`, so Lemma 1 does not hold (the Stage-2 influence can reach :math:`2C/n`).
  The figures hold for the weights taken as fixed: the statement is "global given the
  weights", and the per-instance figures are the global Stage-2 bound.
* ``non_private``: no noise and no clipping, no guarantee; its ``privacy_statement`` raises.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator, spawn_seeds
from pseudopost._validation import check_frame, check_positive
from pseudopost.mechanisms.reps.core import (
    REPS,
    next_sample_seed,
    records_argument,
    split_feature_types,
)
from pseudopost.mechanisms.reps.gaussian_nb import (
    NaiveBayesParameters,
    NaiveBayesSchema,
    weighted_clipped_mean,
)
from pseudopost.privacy.statement import PrivacyStatement

__all__ = [
    "METHODS",
    "HardRemoval",
    "NonPrivateNaiveBayes",
    "RandomDownweighting",
    "make_method",
]

METHODS = (
    "non_private",
    "dp_uniform",
    "dp_uniform_split",
    "reps",
    "random_downweight",
    "hard_removal",
)


class RandomDownweighting(REPS):
    """Ablation: REPS's weights, randomly permuted across records (tests targeting).

    Its privacy statement is "global given the weights" (module docstring): a shuffled weight
    depends on another record's score, which Lemma 1 does not cover.
    """

    _statement_name = "reps/random_downweight"

    def _adjust_weights(
        self, weights: np.ndarray, scores: np.ndarray | None, threshold: float, seed: int
    ) -> np.ndarray:
        return as_generator(seed).permutation(weights)

    def fit(self, frame: pd.DataFrame, label: str, **kwargs) -> RandomDownweighting:
        super().fit(frame, label, **kwargs)
        # a shuffled weight depends on every record's score: report the global Stage-2 bound
        budget = self.release_.budget
        self.per_instance_epsilon_synthesis_ = np.full(len(frame), budget.epsilon_t)
        self.per_instance_epsilon_ = budget.epsilon_s + self.per_instance_epsilon_synthesis_
        return self

    def _weights_scope(self) -> tuple[str, tuple[str, ...]]:
        _, notes = super()._weights_scope()
        return "global given the weights", (
            *notes,
            "the weights are treated as fixed: a shuffled weight is another record's, so "
            "replacing one record can move two records' contributions (Lemma 1 does not hold; "
            "the Stage-2 influence can reach 2C/n)",
        )


class HardRemoval(REPS):
    """Ablation: records scoring above the threshold are replaced by the null record (w = 0)."""

    _statement_name = "reps/hard_removal"

    def _adjust_weights(
        self, weights: np.ndarray, scores: np.ndarray | None, threshold: float, seed: int
    ) -> np.ndarray:
        return (scores <= threshold).astype(float)


class NonPrivateNaiveBayes:
    """The naive Bayes synthesizer without noise or clipping (utility ceiling; no privacy).

    It carries no privacy guarantee: :attr:`privacy_statement` raises ``RuntimeError``.
    """

    def __init__(self, seed: SeedLike = None) -> None:
        self.seed = seed

    def fit(
        self,
        frame: pd.DataFrame,
        label: str,
        *,
        features: Sequence[str] | None = None,
        categorical: Sequence[str] | None = None,
    ) -> NonPrivateNaiveBayes:
        check_frame(frame, "frame")
        numeric, cats = split_feature_types(frame, label, features, categorical)
        schema = NaiveBayesSchema.from_frame(frame, label, numeric, cats)
        u, y = schema.encode(frame)
        stats = weighted_clipped_mean(u, y, np.ones(len(frame)), np.inf, len(schema.classes))
        self.model_ = NaiveBayesParameters.from_statistics(stats, schema)
        self._sample_calls = 0
        return self

    def sample(
        self, n: int | None = None, seed: SeedLike = None, *, m: int | None = None
    ) -> pd.DataFrame:
        """``n`` records from the fitted model (``m`` is a deprecated alias of ``n``); without a
        seed, successive calls continue the ``seed`` stream as :meth:`REPS.sample` does."""
        if not hasattr(self, "model_"):
            raise RuntimeError("This NonPrivateNaiveBayes instance is not fitted yet.")
        n = records_argument(n, m, "NonPrivateNaiveBayes.sample")
        if seed is None:
            seed = next_sample_seed(spawn_seeds(self.seed, 1)[0], self._sample_calls)
            self._sample_calls += 1
        return self.model_.sample(n, seed)

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """Always raises: the non-private baseline has no privacy guarantee to state."""
        raise RuntimeError(
            "NonPrivateNaiveBayes (the 'non_private' baseline) fits the naive Bayes model to the "
            "raw statistics, with no noise and no clipping: it carries no privacy guarantee and "
            "has no privacy statement."
        )


def make_method(
    name: str,
    epsilon: float,
    *,
    gamma: float = 4.0,
    delta: float | None = None,
    seed: SeedLike = None,
    **kwargs,
) -> REPS | NonPrivateNaiveBayes:
    """An unfitted synthesizer for one of :data:`METHODS` at total budget ``epsilon``.

    ``gamma`` applies to ``reps``, ``random_downweight`` and ``hard_removal`` (the latter uses it
    only through the shared scoring); ``kwargs`` go to :class:`REPS`.
    """
    if name not in METHODS:
        raise ValueError(f"The 'name' parameter must be one of {METHODS}. Got {name!r}.")
    if name == "non_private":
        return NonPrivateNaiveBayes(seed=seed)
    check_positive(epsilon, "epsilon")
    if name == "dp_uniform":
        return REPS(epsilon, delta, weight_map="uniform", scoring_share=0.0, seed=seed, **kwargs)
    if name == "dp_uniform_split":
        return REPS(epsilon, delta, weight_map="uniform", seed=seed, **kwargs)
    cls = {"reps": REPS, "random_downweight": RandomDownweighting, "hard_removal": HardRemoval}
    return cls[name](epsilon, delta, weight_map="hinge_exp", gamma=gamma, seed=seed, **kwargs)
