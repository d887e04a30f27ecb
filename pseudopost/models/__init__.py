"""Synthesizing models: the :class:`SynthModel` protocol, ready models, and user PyMC models."""

from pseudopost.models.base import Prepared, SynthModel, synthesis_stream
from pseudopost.models.binary import LogisticRegression
from pseudopost.models.categorical import CategoricalRegression, DirichletCategorical
from pseudopost.models.counts import NegativeBinomialRegression, PoissonRegression
from pseudopost.models.custom import PyMCModel
from pseudopost.models.hurdle import HurdleLogNormal, HurdleNegativeBinomial
from pseudopost.models.loglik import RecordFunction
from pseudopost.models.mixture import FiniteMixture
from pseudopost.models.ordinal import OrdinalRegression
from pseudopost.models.regression import LogNormalRegression, NormalRegression
from pseudopost.models.weighting import record_logp, weighted_model

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
