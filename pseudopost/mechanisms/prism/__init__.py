"""PRISM: prediction-centric DP marginal release (Asiaee et al.), with its baselines.

Public API: :class:`PRISM` and its frozen :class:`PRISMRelease`; :func:`allocate_budget`
(Theorem 6.3); :func:`markov_blanket`; the baselines :class:`MST`, :class:`IndependenceOnly`,
:class:`AllFeaturesUniform`, :class:`CorrelationTopK`.
"""

from pseudopost.mechanisms.prism.baselines import (
    AllFeaturesUniform,
    CorrelationTopK,
    IndependenceOnly,
)
from pseudopost.mechanisms.prism.budget import PrivacyLedger, allocate_budget
from pseudopost.mechanisms.prism.core import PRISM
from pseudopost.mechanisms.prism.mst import MST
from pseudopost.mechanisms.prism.regimes import markov_blanket
from pseudopost.mechanisms.prism.release import PRISMRelease

__all__ = [
    "MST",
    "PRISM",
    "AllFeaturesUniform",
    "CorrelationTopK",
    "IndependenceOnly",
    "PRISMRelease",
    "PrivacyLedger",
    "allocate_budget",
    "markov_blanket",
]
