"""Lighter, non-Bayesian releases: REPS, PRISM and the entropy-calibrated release.

Each release is a frozen record of what was measured, with its privacy figures, neighbouring
relation and budget split stated on it.
"""

from .entropy import (
    EntropyHistogram,
    EntropyRelease,
    HistogramRelease,
    HistogramUtility,
    count_sensitivity,
    synthetic_counts,
)
from .prism import (
    MST,
    PRISM,
    AllFeaturesUniform,
    CorrelationTopK,
    IndependenceOnly,
    PRISMRelease,
    markov_blanket,
)
from .privacy_test import (
    PrivacyTestResult,
    PrivacyTestSynthesizer,
    ResampleProposal,
    discrete_laplace_tail,
)
from .reps import REPS, RepsRelease, release_weighted_statistics
from .reps_baselines import (
    METHODS,
    HardRemoval,
    NonPrivateNaiveBayes,
    RandomDownweighting,
    make_method,
)
from .wiener import WienerMean, WienerMeanRelease, wiener_kernel

__all__ = [
    "METHODS",
    "MST",
    "PRISM",
    "REPS",
    "AllFeaturesUniform",
    "CorrelationTopK",
    "EntropyHistogram",
    "EntropyRelease",
    "HardRemoval",
    "HistogramRelease",
    "HistogramUtility",
    "IndependenceOnly",
    "NonPrivateNaiveBayes",
    "PRISMRelease",
    "PrivacyTestResult",
    "PrivacyTestSynthesizer",
    "RandomDownweighting",
    "RepsRelease",
    "ResampleProposal",
    "WienerMean",
    "WienerMeanRelease",
    "count_sensitivity",
    "discrete_laplace_tail",
    "make_method",
    "markov_blanket",
    "release_weighted_statistics",
    "synthetic_counts",
    "wiener_kernel",
]
