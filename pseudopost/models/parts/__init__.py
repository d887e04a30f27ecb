"""Column parts: one column's conditional model, fitted alone from grouped statistics.

See ``pseudopost.models.parts.base`` for the factorisation and the API (a part's data and
grouping in ``data``, its parameters in ``layout``, its statistics in ``statistics``). Families (one module
each), with the priors of the ready model they stand for:

======================================  ==========================================  ==========================
family                                  class                                       ready model
======================================  ==========================================  ==========================
``bernoulli``                           :class:`BernoulliPart`                      LogisticRegression
``categorical`` (status parts too)      :class:`CategoricalPart`                    CategoricalRegression
``ordinal``                             :class:`OrdinalPart`                        OrdinalRegression
``cumulative`` (bounded grids)          :class:`CumulativePart`                     (ordinal likelihood; CPM prior)
``binned`` (declared bins)              :class:`BinnedPart`                         (cumulative over bins, uniform inside)
``normal``                              :class:`NormalPart`                         NormalRegression
``lognormal``                           :class:`LogNormalPart`                      LogNormalRegression
``poisson``                             :class:`PoissonPart`                        PoissonRegression
``negative_binomial``                   :class:`NegativeBinomialPart`               NegativeBinomialRegression
``zero_truncated_negative_binomial``    :class:`ZeroTruncatedNegativeBinomialPart`  HurdleNegativeBinomial's count part
``dirichlet_categorical``               :class:`DirichletCategoricalPart`           DirichletCategorical (conjugate)
``masked_categorical``                  :class:`MaskedCategoricalPart`              (structural zeros: a categorical over allowed levels)
``bin_points``                          :class:`BinPointsPart`                      (a binned value's grid point inside its bin; conjugate)
``tilted_levels``                       :class:`TiltedLevelsPart`                   (a nested child's levels, tilted by coded inputs; conjugate)
======================================  ==========================================  ==========================
"""

from __future__ import annotations

from pseudopost.models.parts.base import SEP, Encoded, Part, PartDensity, dim_name
from pseudopost.models.parts.bernoulli import BernoulliPart
from pseudopost.models.parts.bin_points import BinPointsPart
from pseudopost.models.parts.categorical import CategoricalPart
from pseudopost.models.parts.cumulative import BinnedPart, CumulativePart
from pseudopost.models.parts.data import PartData, group_rows, row_keys
from pseudopost.models.parts.dirichlet_categorical import DirichletCategoricalPart
from pseudopost.models.parts.grouped import GroupedData
from pseudopost.models.parts.layout import Layout, Param
from pseudopost.models.parts.lognormal import LogNormalPart
from pseudopost.models.parts.masked_categorical import MaskedCategoricalPart
from pseudopost.models.parts.negative_binomial import NegativeBinomialPart
from pseudopost.models.parts.normal import NormalPart
from pseudopost.models.parts.ordinal import OrdinalPart
from pseudopost.models.parts.poisson import PoissonPart
from pseudopost.models.parts.statistics import Stats
from pseudopost.models.parts.tilted_levels import TiltedLevelsPart
from pseudopost.models.parts.zero_truncated_negative_binomial import (
    ZeroTruncatedNegativeBinomialPart,
)

__all__ = [
    "FAMILIES",
    "SEP",
    "BernoulliPart",
    "BinPointsPart",
    "BinnedPart",
    "CategoricalPart",
    "CumulativePart",
    "DirichletCategoricalPart",
    "Encoded",
    "GroupedData",
    "Layout",
    "LogNormalPart",
    "MaskedCategoricalPart",
    "NegativeBinomialPart",
    "NormalPart",
    "OrdinalPart",
    "Param",
    "Part",
    "PartData",
    "PartDensity",
    "PoissonPart",
    "Stats",
    "TiltedLevelsPart",
    "ZeroTruncatedNegativeBinomialPart",
    "dim_name",
    "group_rows",
    "make_part",
    "row_keys",
]

#: family name -> part class (the one table of part families)
FAMILIES: dict[str, type[Part]] = {
    cls.family: cls
    for cls in (
        BernoulliPart,
        CategoricalPart,
        OrdinalPart,
        CumulativePart,
        BinnedPart,
        NormalPart,
        LogNormalPart,
        PoissonPart,
        NegativeBinomialPart,
        ZeroTruncatedNegativeBinomialPart,
        DirichletCategoricalPart,
        BinPointsPart,
        TiltedLevelsPart,
        MaskedCategoricalPart,
    )
}


def make_part(family: str, outcome: str, predictors=(), **options) -> Part:
    """The part of ``family`` (a key of :data:`FAMILIES`) with the given options
    (``prior_scale``, ``name``, ``n_levels``, ``concentration``)."""
    if family not in FAMILIES:
        raise ValueError(f"Unknown part family {family!r}; expected one of {sorted(FAMILIES)}.")
    return FAMILIES[family](outcome, tuple(predictors), **options)
