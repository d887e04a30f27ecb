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

Privacy of the ablations. Neighbouring relation as in REPS (null-record replacement, public
:math:`n`). A shuffle is a data-independent permutation of weights, and hard removal is the
weight map :math:`w = 1[\hat s \le t]`; both keep :math:`w_i \in [0, 1]`, so Lemma 1 and
Theorem 1 apply unchanged. Hard removal here keeps :math:`n` and the noise of the matched split
(a removed record is replaced by :math:`\perp`), rather than re-normalising by the data-dependent
number of remaining records. For the shuffle, record :math:`i`'s weight is no longer a function
of record :math:`i` alone, so its per-instance figures use the global bound.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator, spawn_seeds
from pseudopost._validation import check_frame, check_positive, check_positive_int
from pseudopost.mechanisms.reps.core import REPS, split_feature_types
from pseudopost.mechanisms.reps.gaussian_nb import (
    NaiveBayesParameters,
    NaiveBayesSchema,
    weighted_clipped_mean,
)

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
    """Ablation: REPS's weights, randomly permuted across records (tests targeting)."""

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


class HardRemoval(REPS):
    """Ablation: records scoring above the threshold are replaced by the null record (w = 0)."""

    def _adjust_weights(
        self, weights: np.ndarray, scores: np.ndarray | None, threshold: float, seed: int
    ) -> np.ndarray:
        return (scores <= threshold).astype(float)


class NonPrivateNaiveBayes:
    """The naive Bayes synthesizer without noise or clipping (utility ceiling; no privacy)."""

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
        return self

    def sample(self, m: int, seed: SeedLike = None) -> pd.DataFrame:
        if not hasattr(self, "model_"):
            raise RuntimeError("This NonPrivateNaiveBayes instance is not fitted yet.")
        seed = spawn_seeds(self.seed, 1)[0] if seed is None else seed
        return self.model_.sample(check_positive_int(m, "m"), seed)


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
