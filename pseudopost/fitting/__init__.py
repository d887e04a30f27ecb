"""How posteriors are sampled: one :class:`Sampler` protocol and its adapters (nutpie, nutpie's
JAX backend, PyMC) chosen by :func:`make_sampler`, the sufficient-statistics path
(:mod:`.sufficient`), and the compiled-sampler cache keyed by model structure (:mod:`.cache`)."""

from pseudopost.fitting.sampler import (
    SAMPLERS,
    FitDiagnostics,
    Sampler,
    SamplingWarning,
    make_sampler,
)

__all__ = ["SAMPLERS", "FitDiagnostics", "Sampler", "SamplingWarning", "make_sampler"]
