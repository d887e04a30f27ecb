"""PRISM: prediction-centric DP marginal release (Asiaee et al.), with its baselines.

Public API: :class:`PRISM` and its frozen :class:`PRISMRelease`; :func:`allocate_budget`
(Theorem 6.3); :func:`markov_blanket`; the baselines :class:`MST`, :class:`IndependenceOnly`,
:class:`AllFeaturesUniform`, :class:`CorrelationTopK`.
"""

from .baselines import AllFeaturesUniform, CorrelationTopK, IndependenceOnly
from .budget import PrivacyLedger, allocate_budget
from .mst import MST
from .prism import PRISM
from .regimes import markov_blanket
from .release import PRISMRelease

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
