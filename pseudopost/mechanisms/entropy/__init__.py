"""The entropy-calibrated release (papers/reaedp-entropy-calibrated-dp-release.md).

:class:`EntropyHistogram` releases a Laplace or Gaussian histogram with its Shannon and Renyi
entropies before and after; :class:`JointHistogramRelease` is the joint-histogram synthesizer
the release command runs on a frame.
"""

from pseudopost.mechanisms.entropy.histogram import (
    EntropyHistogram,
    EntropyRelease,
    HistogramRelease,
    HistogramUtility,
    count_sensitivity,
    synthetic_counts,
)
from pseudopost.mechanisms.entropy.joint import JointHistogramRelease

__all__ = [
    "EntropyHistogram",
    "EntropyRelease",
    "HistogramRelease",
    "HistogramUtility",
    "JointHistogramRelease",
    "count_sensitivity",
    "synthetic_counts",
]
