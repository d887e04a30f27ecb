r"""The one table of model families: every facet of a family in one row.

A family (as in statsmodels' ``genmod.families``) is one object that every estimator reuses. Its
row says, for the names a user writes (``pp.synthesize(models=...)``, ``[model] family = ...``
in a release spec, a whole file's ``models=``):

* ``name`` and ``aliases``: the name and the other spellings accepted;
* ``outcome``: the kind of outcome it models (``choose_model``'s detected types);
* ``model``: the ready model (its PyMC declaration), by class name (``None``: no ready model;
  a whole file's bounded grid or bins only);
* ``part``: the column part (:data:`pseudopost.models.parts.FAMILIES`) that carries its numbers
  (statistics, density, gradient, Hessian, inversion) in the part-by-part fit and, for a ready
  model, its synthetic draws; ``None``: no part (the finite mixture);
* ``log_scale``: modelled on the log scale (later columns see it through ``log1p``);
* ``kernel``: the accountant's fused kernel of a one-outcome regression
  (``pseudopost.privacy.kernels.glm``: ``"cont"``, ``"poisson"``, ``"negbin"``; ``None``:
  the record function of the PyMC model, or the part kernels of a whole file);
* ``categorical``: its outcome is held as level codes 0..K-1;
* ``component``: a component family of the finite mixture.

The other tables the package once had (the registry's names, aliases, log-scale and categorical
sets, the whole file's value parts and accepted names, the accountant's kernels, the mixture's
components) are views of this one. The table imports nothing, so every layer may read it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FAMILIES", "Family", "family"]


@dataclass(frozen=True)
class Family:
    """One model family (module docstring)."""

    name: str
    outcome: str
    model: str | None
    part: str | None
    aliases: tuple[str, ...] = ()
    log_scale: bool = False
    kernel: str | None = None
    categorical: bool = False
    component: bool = False


#: family name -> :class:`Family` (the one table)
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("normal", "real", "NormalRegression", "normal", kernel="cont", component=True),
        Family("lognormal", "positive skewed", "LogNormalRegression", "lognormal",
               ("log_normal",), log_scale=True, kernel="cont", component=True),
        Family("poisson", "count", "PoissonRegression", "poisson", kernel="poisson"),
        Family("negative_binomial", "count", "NegativeBinomialRegression", "negative_binomial",
               ("negbin", "nb"), kernel="negbin"),
        Family("logistic", "binary", "LogisticRegression", "bernoulli", categorical=True),
        Family("categorical", "categorical", "CategoricalRegression", "categorical",
               categorical=True),
        Family("dirichlet_categorical", "categorical", "DirichletCategorical",
               "dirichlet_categorical", categorical=True),
        Family("ordinal", "ordinal", "OrdinalRegression", "ordinal", categorical=True),
        Family("hurdle_lognormal", "zero-inflated amount", "HurdleLogNormal", "lognormal",
               log_scale=True),
        Family("hurdle_count", "zero-inflated count", "HurdleNegativeBinomial",
               "zero_truncated_negative_binomial"),
        Family("mixture", "real", "FiniteMixture", None),
        Family("grid_ordinal", "on a bounded grid", None, "cumulative"),
        Family("binned", "binned", None, "binned"),
    )
}

_SPELLINGS = {a: f.name for f in FAMILIES.values() for a in (f.name, *f.aliases)}


def family(name: str) -> Family | None:
    """The family of ``name`` (a name or alias, any case), None when there is none."""
    if not isinstance(name, str):
        return None
    return FAMILIES.get(_SPELLINGS.get(name.lower(), ""))
