r"""How each column of a file is modelled: categorical, ordinal, or a numeric family with spikes.

The choice is read from the column's dtype and, for a numeric column, from its *observed* values
(not its empty cells, codes or spikes) by :func:`~pseudopost.models.registry.choose_model` (a
float column whose observed values are all integers is read as integers), unless a model name
is declared. Registry names map to a column's parts:

=====================================  ===========================================================
model                                  parts
=====================================  ===========================================================
``categorical``, ``logistic``,         one categorical over the column's levels (values, then
``dirichlet_categorical``              missing and each code as levels of their own)
``ordinal``                            status (if any) + ordered logit over the observed levels
``normal``, ``lognormal``,             status (if any) + the family on the observed values that are
``poisson``, ``negative_binomial``     not spikes
``hurdle_lognormal``                   a spike at 0 + log-normal on the positive values
``hurdle_count``                       a spike at 0 + zero-truncated negative binomial
``grid_ordinal``                       status (if any) + the cumulative part: an ordered logit over
                                       the points of the column's declared bounded grid
``binned``                             status (if any) + the binned part: a histogram density over
                                       the column's declared bins (:mod:`~pseudopost.models.file.
                                       bins`), its default when bins are declared
=====================================  ===========================================================

``grid_ordinal`` is the default of a numeric column whose declared grid has ``bounds``: its
values can only be the grid's points, so their probabilities are modelled directly (a
cumulative probability model, :mod:`pseudopost.models.parts.cumulative`): any marginal shape,
heaping included, with the predictors shifting it; declare another model to keep a parametric
family (its draws are then snapped to the grid and bounds).

**Many levels.** A categorical column with more than :data:`MANY_LEVELS` (50) observed levels
(an occupation or industry code, a place of birth) is modelled by default without predictors,
``dirichlet_categorical``: its levels' shares drawn exactly from their conjugate posterior (no
MCMC), shrunk toward equal shares by the Dirichlet(1) prior (one pseudo-record per level). A
categorical model conditioned on the earlier columns would have (K - 1)(p + 1) coefficients
sampled by NUTS (264 levels and 8 predictors: 2,367), which takes minutes to hours and is mostly
prior on a file of a few thousand records. Such a column (kept or synthesized) is also left out
of later columns' predictors by default (:mod:`pseudopost.models.file.plan`), which would
otherwise each gain K - 1 one-hot columns. A declared ``predictor_matrix`` row for the column,
a declared model, or a declared interaction naming it, overrides either default; planning
warns, naming them, of the synthesized columns left with no relation to it. A declared
``hierarchy`` (the codebook's classification: occupation within its major group) draws the
column after its group, one Dirichlet over its levels per group level
(:mod:`pseudopost.models.file.nesting`), so it keeps the group's relations with every other
column; a column assigned from it (a prestige score) can be nested in it the same way. With
no declaration, :func:`pseudopost.synthesize`'s structure stage chooses such a parent among
the other categorical columns of public levels by the exponential mechanism (step 7 of
:mod:`pseudopost.mechanisms.structure`), or none.

**Many coefficients.** Below that, an unordered categorical column's multinomial logit has
(K - 1)(p + 1) coefficients; beyond :data:`~pseudopost.models.file.plan.MAX_COEFFICIENTS` (400)
the knots of its numeric inputs are thinned where that keeps more inputs
(:func:`~pseudopost.models.file.plan.knots_fitting`), and its widest inputs are left out of its
predictors, one at a time, until it fits (:func:`~pseudopost.models.file.plan.trimmed_inputs`; Adult's native-country, 42 levels after
columns with 72 design columns, would otherwise have 2,960). The choices table names them; a
declared ``predictor_matrix`` row overrides.

The hurdle models are thus the special case "one spike at zero" of declared spikes (synthpop's
``semicont``). **Privacy note**: like synthpop and the papers, an automatic choice reads the
confidential data outside the accountant; state the choices as public (they are listed in the
choices table) or declare them with ``models=``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from pseudopost.models.families import FAMILIES
from pseudopost.models.registry import choose_model
from pseudopost.models.status import column_kind, split_status

__all__ = ["MANY_LEVELS", "VALUE_FAMILIES", "ColumnChoice", "choose", "many_level_reason"]

#: a categorical column with more observed levels than this is modelled without predictors and
#: left out of later columns' predictors by default (module docstring)
MANY_LEVELS = 50

#: registry name -> value-part family of a numeric column (a view of
#: :data:`pseudopost.models.families.FAMILIES`)
VALUE_FAMILIES = {
    f.name: f.part for f in FAMILIES.values() if f.part is not None and not f.categorical
}
_CATEGORICAL = ("categorical", "logistic", "dirichlet_categorical")


@dataclass(frozen=True)
class ColumnChoice:
    """How one column is modelled.

    Attributes
    ----------
    column, detected, model, reason : str
        The column, the detected type, the registry model name and why.
    categorical : bool
        One categorical part over the column's levels.
    ordered : bool
        An ordered logit on the observed levels (with a status part when needed).
    family : str or None
        The value part's family of a numeric column.
    spikes : tuple
        The column's spikes: declared ones, plus 0 for a hurdle model.
    """

    column: str
    detected: str
    model: str
    reason: str
    categorical: bool
    ordered: bool = False
    family: str | None = None
    spikes: tuple = ()

    @property
    def as_predictor(self) -> str:
        return "one-hot" if self.categorical or self.ordered else "value and status"


def _observed_series(series: pd.Series, codes: tuple, spikes: tuple, name: str) -> pd.Series:
    """The observed values that are not spikes, as integers when they all are."""
    status, values, _ = split_status(series, codes, spikes, name=name)
    x = np.asarray(values, dtype=np.float64)[status == 0]
    if x.size and np.all(x == np.round(x)) and np.all(np.abs(x) < 2**53):
        return pd.Series(x.astype(np.int64), name=name)
    return pd.Series(x, name=name)


def many_level_reason(n_levels: int) -> str:
    """The choices table's reason for a many-level categorical column (module docstring)."""
    return (
        f"{n_levels} unordered levels, more than {MANY_LEVELS}: Dirichlet-categorical without "
        f"predictors (shares shrunk toward equal by a Dirichlet(1) prior), left out of later "
        f"columns' predictors"
    )


def choose(
    series: pd.Series,
    name: str,
    *,
    declared: str = "auto",
    codes: tuple = (),
    spikes: tuple = (),
    conditioned: bool = True,
    max_levels: int = 10,
    bounded_grid: bool = False,
    binned: bool = False,
    many_levels: int | None = MANY_LEVELS,
) -> ColumnChoice:
    """The model of column ``name`` (module docstring); ``declared`` a registry name or auto;
    ``bounded_grid``: the column declares a grid with bounds; ``binned``: it declares bins;
    ``many_levels``: an automatic categorical choice with more observed levels than this is
    ``dirichlet_categorical`` (None: never; the column's predictors are declared).

    Raises
    ------
    ValueError
        A declared model that cannot hold the column (a numeric family for a text column,
        ``ordinal`` for an unordered text column).
    """
    kind = column_kind(series)
    numeric = kind in ("integer", "float")
    ordered_cat = kind == "category" and bool(series.cat.ordered)
    if not numeric:
        if declared in ("auto", *_CATEGORICAL):
            if ordered_cat and declared == "auto":
                return ColumnChoice(name, "ordinal", "ordinal", "ordered categorical", False, True)
            if declared != "auto":
                return ColumnChoice(name, "categorical", declared, "given by the user", True)
            status, values, _ = split_status(series, codes, (), name=name)
            observed = pd.Series(np.asarray(values, dtype=object)[status == 0], name=name)
            if observed.nunique() < 2:
                return ColumnChoice(name, "constant", "categorical", "one observed level", True)
            if kind == "category":  # its used categories only, in category order
                used = [c for c in series.cat.categories if c in set(observed)]
                observed = pd.Series(pd.Categorical(observed, categories=used), name=name)
            elif kind == "bool":
                observed = observed.astype(bool)
            auto = choose_model(observed, name, conditioned=conditioned)
            k = int(observed.nunique())
            if many_levels is not None and k > many_levels and auto.model in _CATEGORICAL:
                auto = replace(auto, model="dirichlet_categorical", reason=many_level_reason(k))
            extra = ""
            if (status != 0).any():
                extra = "; missing cells and codes are levels of their own"
            return ColumnChoice(name, auto.detected, auto.model, auto.reason + extra, True)
        if declared == "ordinal":
            if not ordered_cat:
                raise ValueError(
                    f"The model 'ordinal' of column {name!r} needs an ordered categorical "
                    f"column (pandas Categorical with ordered=True) or numbers; it is {kind}."
                )
            return ColumnChoice(name, "ordinal", "ordinal", "given by the user", False, True)
        raise ValueError(
            f"The model {declared!r} of column {name!r} is numeric, but the column is {kind} "
            f"({series.dtype}); declare 'categorical' or convert the column."
        )
    spikes = tuple(spikes)
    if declared == "grid_ordinal" and not bounded_grid:
        raise ValueError(
            f"The model 'grid_ordinal' of column {name!r} needs a declared grid with bounds, "
            f"e.g. grid={{{name!r}: {{'step': 1, 'bounds': [0, 99]}}}}."
        )
    if declared == "binned" and not binned:
        raise ValueError(
            f"The model 'binned' of column {name!r} needs declared bins, e.g. "
            f"bins={{{name!r}: [0, 10, 100, 1000]}}."
        )
    if declared != "auto":
        model, detected, reason = declared, "declared", "given by the user"
    elif binned:
        model, detected = "binned", "declared bins"
        reason = "a histogram density over the declared bins"
    elif bounded_grid:
        model, detected = "grid_ordinal", "on a bounded grid"
        reason = "values on the declared bounded grid: ordered logit over its points"
    else:
        observed = _observed_series(series, codes, spikes, name)
        if observed.size == 0:
            return ColumnChoice(name, "empty", "categorical", "no observed value", True)
        if observed.nunique() < 2:
            return ColumnChoice(name, "constant", "categorical", "one observed value", True)
        auto = choose_model(observed, name, conditioned=conditioned, max_levels=max_levels)
        model, detected, reason = auto.model, auto.detected, auto.reason
        k = int(observed.nunique())
        if many_levels is not None and k > many_levels and model in _CATEGORICAL:
            model, reason = "dirichlet_categorical", many_level_reason(k)
    if model in _CATEGORICAL:
        return ColumnChoice(name, detected, model, reason, True)
    if model == "ordinal":
        return ColumnChoice(name, detected, model, reason, False, True)
    family = VALUE_FAMILIES[model]
    if model.startswith("hurdle") and not any(float(s) == 0.0 for s in spikes):
        spikes = (*spikes, 0)
        reason += "; zeros are a spike"
    return ColumnChoice(name, detected, model, reason, False, False, family, spikes)
