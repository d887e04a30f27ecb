"""Synthesizing models: the :class:`SynthModel` protocol, ready models, and user PyMC models."""

from .base import Prepared, SynthModel, synthesis_stream
from .binary import LogisticRegression
from .categorical import CategoricalRegression, DirichletCategorical
from .counts import NegativeBinomialRegression, PoissonRegression
from .custom import PyMCModel
from .hurdle import HurdleLogNormal, HurdleNegativeBinomial
from .loglik import RecordFunction
from .mixture import FiniteMixture
from .ordinal import OrdinalRegression
from .regression import LogNormalRegression, NormalRegression
from .weighting import record_logp, weighted_model

__all__ = [
    "CategoricalRegression",
    "DirichletCategorical",
    "FiniteMixture",
    "HurdleLogNormal",
    "HurdleNegativeBinomial",
    "LogNormalRegression",
    "LogisticRegression",
    "NegativeBinomialRegression",
    "NormalRegression",
    "OrdinalRegression",
    "PoissonRegression",
    "Prepared",
    "PyMCModel",
    "RecordFunction",
    "SynthModel",
    "record_logp",
    "synthesis_stream",
    "weighted_model",
]
