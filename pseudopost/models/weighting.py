r"""Turn observed variables of any PyMC model into risk-weighted ones.

The pseudo posterior (Savitsky, Williams & Hu 2022; range-restricted paper eq. 1) is

.. math:: \xi^{\alpha}(\theta \mid x) \propto \prod_{i=1}^n p(x_i \mid \theta)^{\alpha_i}\, \xi(\theta).

:func:`weighted_model` clones a user's model and adds one potential per observed variable,

.. math:: \sum_i (\alpha_i - 1) \log p(x_i \mid \theta),

so the model's total log density becomes :math:`\sum_i \alpha_i \log p(x_i\mid\theta) +
\log\xi(\theta)`. The observed variables stay in the model, so posterior-predictive sampling and
the per-record log-likelihood keep working and stay *unweighted* (which the accountant needs).
The weights live in ``pm.Data("alpha")``: a compiled model refits with new weights without
recompiling (``nutpie``'s ``with_data``). A record may hold several observed variables (a joint or
sequential model): its single weight multiplies the sum of their log-likelihoods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.model.fgraph import clone_model
from pytensor.graph.replace import graph_replace

__all__ = [
    "CENSOR_NAME",
    "WEIGHTS_NAME",
    "n_records",
    "observed_names",
    "record_logp",
    "rv_logprob",
    "value_of",
    "weighted_model",
]

WEIGHTS_NAME = "alpha"
CENSOR_NAME = "censor_bound"


def value_of(var) -> np.ndarray:
    """The current value of a data variable, constant, or constant expression of them."""
    if hasattr(var, "get_value"):
        return np.asarray(var.get_value())
    if hasattr(var, "data"):
        return np.asarray(var.data)
    return np.asarray(var.eval())


def observed_names(model: pm.Model, observed: Sequence[str] | None = None) -> list[str]:
    """The observed variables to weight (all of them by default), validated."""
    names = [rv.name for rv in model.observed_RVs]
    if not names:
        raise ValueError("The model has no observed variables: nothing to weight.")
    if observed is None:
        return names
    chosen = [observed] if isinstance(observed, str) else list(observed)
    unknown = [o for o in chosen if o not in names]
    if unknown:
        raise ValueError(f"Unknown observed variable(s) {unknown}; the model observes {names}.")
    return chosen


def n_records(model: pm.Model, observed: Sequence[str]) -> int:
    """Number of records: the common leading length of the observed variables."""
    lengths = {}
    for name in observed:
        shape = np.shape(value_of(model.rvs_to_values[model[name]]))
        if len(shape) == 0:
            raise ValueError(
                f"Observed variable '{name}' is a scalar; a record dimension is needed."
            )
        lengths[name] = shape[0]
    if len(set(lengths.values())) != 1:
        raise ValueError(f"Observed variables must share the record dimension; got {lengths}.")
    return next(iter(lengths.values()))


def rv_logprob(
    model: pm.Model,
    rv: pt.TensorVariable,
    value: pt.TensorVariable,
    kind: Literal["logp", "logcdf", "logccdf"] = "logp",
) -> pt.TensorVariable:
    r"""Elementwise :math:`\log p`, :math:`\log F` or :math:`\log S` of the model's variable
    ``rv`` at ``value``, as a graph in terms of the model's random variables.

    ``pm.logp(rv, value)`` derives the density of a *symbolic* random variable (``pm.Censored``,
    ``pm.Truncated``, ``pm.Mixture``, ...) on a clone of its whole graph, so the parameters it
    depends on come back as "lifted" copies that match no variable of the model (PyMC warns
    "RandomVariables ... were found in the derived graph") and no later replacement (posterior
    draws, the weighted model's values) reaches them. Here every other random variable of the
    model is first replaced by a plain stand-in, the density is derived, and the stand-ins are
    put back: the graph then depends on the model's own variables, whatever the distribution.
    """
    others = [v for v in model.basic_RVs if v is not rv]
    stand = {v: v.type() for v in others}
    local = graph_replace(rv, stand, strict=False) if stand else rv
    fn = {"logp": pm.logp, "logcdf": pm.logcdf, "logccdf": pm.logccdf}[kind]
    out = fn(local, value)
    return graph_replace(out, {s: v for v, s in stand.items()}, strict=False) if stand else out


def record_logp(model: pm.Model, observed: Sequence[str]) -> pt.TensorVariable:
    """Per-record log-likelihood graph: the sum over ``observed`` of each variable's
    elementwise log density (``rv_logprob``, so symbolic distributions such as
    ``pm.Censored`` work too), trailing (non-record) axes summed. Shape ``(n,)``, in terms of
    the model's random variables."""
    terms = []
    for name in observed:
        rv = model[name]
        lp = rv_logprob(model, rv, model.rvs_to_values[rv])
        if lp.ndim > 1:
            lp = lp.sum(axis=tuple(range(1, lp.ndim)))
        terms.append(lp)
    return terms[0] if len(terms) == 1 else pt.add(*terms)


def weighted_model(
    model: pm.Model,
    observed: Sequence[str] | str | None = None,
    weights: np.ndarray | None = None,
    censor_bound: float | None = None,
) -> pm.Model:
    r"""A copy of ``model`` whose ``observed`` likelihood is weighted by ``pm.Data("alpha")``.

    Parameters
    ----------
    model
        Any PyMC model with observed variables sharing a leading record dimension. It is not
        modified.
    observed
        Names of the observed variables that make up a record (default: all).
    weights
        Initial weights (default: ones, i.e. the ordinary posterior).
    censor_bound
        If given (B > 0), each record's weighted contribution is censored to [-B, B]:
        the potential becomes :math:`\sum_i \mathrm{clip}(\alpha_i f_i, -B, B) - \sum_i f_i`
        (Hu, Williams & Savitsky 2025), with B in ``pm.Data("censor_bound")``.

    Returns
    -------
    pm.Model
        The clone, with data variable ``alpha`` (length n) and potential ``weighted_loglik``.
    """
    names = observed_names(model, observed)
    n = n_records(model, names)
    if WEIGHTS_NAME in model.named_vars:
        raise ValueError(f"The model already has a variable named '{WEIGHTS_NAME}'.")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"'weights' must have shape ({n},) to match the records; got {w.shape}.")
    clone = clone_model(model)
    with clone:
        alpha = pm.Data(WEIGHTS_NAME, w)
        lp = record_logp(clone, names)
        if censor_bound is None:
            pm.Potential("weighted_loglik", ((alpha - 1.0) * lp).sum())
        else:
            if not (np.isfinite(censor_bound) and censor_bound > 0):
                raise ValueError(
                    f"'censor_bound' must be a finite positive number; got {censor_bound!r}."
                )
            bound = pm.Data(CENSOR_NAME, float(censor_bound))
            pm.Potential("weighted_loglik", (pt.clip(alpha * lp, -bound, bound) - lp).sum())
    return clone
