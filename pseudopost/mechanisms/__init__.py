"""Everything that turns confidential data into a private release.

* :mod:`~pseudopost.mechanisms.pseudo_posterior`: the risk-weighted pseudo posterior
  (:class:`PseudoPosterior`), in memory or over Dask records;
* :mod:`~pseudopost.mechanisms.reps`: REPS, risk-equalized Gaussian release of weighted clipped
  sufficient statistics, with its baselines;
* :mod:`~pseudopost.mechanisms.prism`: PRISM, prediction-centric marginal release, with MST and
  other baselines;
* :mod:`~pseudopost.mechanisms.entropy`: the entropy-calibrated histogram release;
* :mod:`~pseudopost.mechanisms.wiener`: the Wiener-kernel private mean of functional data;
* :mod:`~pseudopost.mechanisms.privacy_testing`: the privacy-test synthesizer.

Each release is a frozen record of what was measured and carries one
:class:`~pseudopost.privacy.PrivacyStatement`. Names are loaded on first use, so importing the
pseudo posterior does not import JAX (PRISM) or scikit-learn (REPS).
"""

import importlib

_WHERE = {
    "PseudoPosterior": "pseudo_posterior",
    "PseudoPosteriorResult": "pseudo_posterior",
    "EntropyHistogram": "entropy",
    "EntropyRelease": "entropy",
    "HistogramRelease": "entropy",
    "HistogramUtility": "entropy",
    "JointHistogramRelease": "entropy",
    "count_sensitivity": "entropy",
    "synthetic_counts": "entropy",
    "MST": "prism",
    "PRISM": "prism",
    "AllFeaturesUniform": "prism",
    "CorrelationTopK": "prism",
    "IndependenceOnly": "prism",
    "PRISMRelease": "prism",
    "markov_blanket": "prism",
    "PrivacyTestResult": "privacy_testing",
    "PrivacyTestSynthesizer": "privacy_testing",
    "ResampleProposal": "privacy_testing",
    "discrete_laplace_tail": "privacy_testing",
    "REPS": "reps",
    "RepsRelease": "reps",
    "release_weighted_statistics": "reps",
    "METHODS": "reps",
    "HardRemoval": "reps",
    "NonPrivateNaiveBayes": "reps",
    "RandomDownweighting": "reps",
    "make_method": "reps",
    "WienerMean": "wiener",
    "WienerMeanRelease": "wiener",
    "wiener_kernel": "wiener",
}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = sorted(_WHERE)
