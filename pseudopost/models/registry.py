r"""The one table of ready-model names, and the automatic choice of a model for a column.

:data:`MODEL_NAMES` maps the names used in ``pp.synthesize(models=...)``, in sequential models
and in release specs (``[model] family = "lognormal"``) to ready-model classes;
:func:`model_class` resolves a name (or alias). :func:`choose_model` picks a model for one column
from its dtype and values, the first rule that applies (detected type -> model):

* ordered pandas ``Categorical`` -> ordinal -> ``ordinal``;
* two levels (bool, two strings, two numbers) -> binary -> ``logistic``;
* strings, unordered ``Categorical``, integers with at most ``max_levels`` (5) distinct values
  -> categorical -> ``categorical`` (``dirichlet_categorical`` when the column has no
  predictors);
* any negative value -> real -> ``normal``;
* zeros and positive amounts (floats, or integers reaching ``amount_threshold`` = 1000, such as
  capital gains) -> zero-inflated amount -> ``hurdle_lognormal``;
* positive amounts with skewness > 0.5 -> positive skewed -> ``lognormal``; other positive
  amounts -> positive -> ``normal``;
* non-negative integers with more than half zeros -> zero-inflated count -> ``hurdle_count``;
* other non-negative integers -> count -> ``negative_binomial``.

**Privacy note**: the choices (model family, category levels, which transform) are read from
the confidential data and are not covered by the accountant, as in synthpop and the papers;
state them as public (a codebook) or fix them with ``models=``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from pseudopost.models.base import SynthModel
from pseudopost.models.binary import LogisticRegression
from pseudopost.models.categorical import CategoricalRegression, DirichletCategorical
from pseudopost.models.columns import encode_column
from pseudopost.models.counts import NegativeBinomialRegression, PoissonRegression
from pseudopost.models.families import FAMILIES
from pseudopost.models.hurdle import HurdleLogNormal, HurdleNegativeBinomial
from pseudopost.models.mixture import FiniteMixture
from pseudopost.models.ordinal import OrdinalRegression
from pseudopost.models.regression import LogNormalRegression, NormalRegression

__all__ = [
    "CATEGORICAL_FAMILIES",
    "CLASS_DEFAULTS",
    "LOG_SCALE",
    "MODEL_NAMES",
    "Choice",
    "categorical_spec",
    "choose_model",
    "model_class",
    "takes_predictors",
]

_CLASSES = {
    cls.__name__: cls
    for cls in (
        NormalRegression,
        LogNormalRegression,
        PoissonRegression,
        NegativeBinomialRegression,
        LogisticRegression,
        CategoricalRegression,
        DirichletCategorical,
        OrdinalRegression,
        HurdleLogNormal,
        HurdleNegativeBinomial,
        FiniteMixture,
    )
}
#: model names understood by ``models=``, sequential models, release specs and
#: :func:`model_class`: the families of :data:`pseudopost.models.families.FAMILIES` with a ready
#: model
MODEL_NAMES: dict[str, type[SynthModel]] = {
    f.name: _CLASSES[f.model] for f in FAMILIES.values() if f.model is not None
}
_ALIASES = {a: f.name for f in FAMILIES.values() if f.model is not None for a in f.aliases}
#: models of a numeric column on the log scale (later columns see it through ``log1p``)
LOG_SCALE = frozenset(f.name for f in FAMILIES.values() if f.log_scale)
#: families of the ready models whose outcome is categorical (held as codes 0..K-1)
CATEGORICAL_FAMILIES = frozenset(f.name for f in FAMILIES.values() if f.categorical)
#: constructor arguments of ready models built from a class or a name
CLASS_DEFAULTS = {"FiniteMixture": {"k": 2}}


def model_class(name: str, column: str | None = None) -> type[SynthModel]:
    """The ready-model class for a model ``name`` (see :data:`MODEL_NAMES`; case and the aliases
    ``negbin``, ``nb``, ``log_normal`` are accepted)."""
    key = _ALIASES.get(str(name).lower(), str(name).lower()) if isinstance(name, str) else name
    if key not in MODEL_NAMES:
        where = f" for column '{column}'" if column is not None else ""
        raise ValueError(
            f"Unknown model name {name!r}{where}; expected one of {sorted(MODEL_NAMES)} "
            f"(or a ready-model class or instance)."
        )
    return MODEL_NAMES[key]


def takes_predictors(cls: type) -> bool:
    """Whether a ready-model class accepts ``predictors`` (e.g. a mixture does not)."""
    return "predictors" in inspect.signature(cls.__init__).parameters


def categorical_spec(spec) -> bool:
    """Whether a model spec (instance, class or name) has a categorical outcome."""
    if isinstance(spec, str):
        spec = model_class(spec)
    cls = spec if isinstance(spec, type) else type(spec)
    return getattr(cls, "family", "") in CATEGORICAL_FAMILIES


@dataclass(frozen=True)
class Choice:
    """The model chosen for one column, with the type detected and the reason."""

    column: str
    detected: str
    model: object
    reason: str


def _skewness(x: np.ndarray) -> float:
    return float(stats.skew(x)) if x.size > 2 and np.ptp(x) > 0 else 0.0


def choose_model(
    series: pd.Series,
    column: str,
    *,
    conditioned: bool = True,
    max_levels: int = 5,
    amount_threshold: float = 1000.0,
) -> Choice:
    """A ready model for one column from its dtype and values (rules in the module docstring).

    ``conditioned`` says whether the column has predictors (a categorical column without any
    gets the Dirichlet-categorical).
    """
    _, info = encode_column(series, column)
    n_levels = len(info.levels)
    if info.kind == "ordinal":
        return Choice(column, "ordinal", "ordinal", f"ordered categorical, {n_levels} levels")
    if info.categorical:
        if n_levels == 2:
            return Choice(column, "binary", "logistic", f"two levels {list(info.levels)}")
        return _categorical(column, f"{n_levels} unordered levels", conditioned)
    x = series.to_numpy(dtype=np.float64)
    distinct = np.unique(x)
    if distinct.size == 2:
        return Choice(column, "binary", "logistic", f"two values {distinct.tolist()}")
    if info.kind == "integer" and distinct.size <= max_levels:
        return _categorical(column, f"integer with {distinct.size} values", conditioned)
    if x.min() < 0:
        return Choice(column, "real", "normal", f"takes negative values (min {x.min():g})")
    zeros = float(np.mean(x == 0))
    amount = info.kind == "continuous" or x.max() >= amount_threshold
    if amount:
        if zeros > 0:
            return Choice(
                column,
                "zero-inflated amount",
                "hurdle_lognormal",
                f"{100 * zeros:.1f} % zeros, positive amounts otherwise",
            )
        skew = _skewness(x)
        if skew > 0.5:
            return Choice(column, "positive skewed", "lognormal", f"positive, skewness {skew:.2f}")
        return Choice(column, "positive", "normal", f"positive, skewness {skew:.2f} <= 0.5")
    if zeros > 0.5:
        return Choice(column, "zero-inflated count", "hurdle_count", f"{100 * zeros:.1f} % zeros")
    return Choice(
        column,
        "count",
        "negative_binomial",
        f"non-negative integers (mean {x.mean():.3g}, variance {x.var():.3g})",
    )


def _categorical(column: str, reason: str, conditioned: bool) -> Choice:
    if not conditioned:
        return Choice(column, "categorical", "dirichlet_categorical", reason + ", no predictors")
    return Choice(column, "categorical", "categorical", reason)
