"""How posteriors are sampled: one :class:`Sampler` interface and its adapters, the
sufficient-statistics path, and the compiled-model cache."""

from pseudopost.fitting.sampler import SAMPLERS, FitDiagnostics, Sampler, SamplingWarning

__all__ = ["SAMPLERS", "FitDiagnostics", "Sampler", "SamplingWarning"]
