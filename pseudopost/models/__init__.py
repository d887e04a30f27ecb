"""Synthesizing models: the :class:`SynthModel` protocol, ready models, and user PyMC models."""

from .base import Prepared, SynthModel, synthesis_stream
from .counts import NegativeBinomialRegression, PoissonRegression
from .custom import PyMCModel
from .loglik import RecordFunction
from .regression import LogNormalRegression, NormalRegression
from .weighting import record_logp, weighted_model

__all__ = [
    "LogNormalRegression",
    "NegativeBinomialRegression",
    "NormalRegression",
    "PoissonRegression",
    "Prepared",
    "PyMCModel",
    "RecordFunction",
    "SynthModel",
    "record_logp",
    "synthesis_stream",
    "weighted_model",
]
