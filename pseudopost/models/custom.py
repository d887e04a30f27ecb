r"""Wrap any user-written PyMC model as a pseudopost synthesizer (:class:`PyMCModel`).

Everything the mechanism does with the model (weighting, risk, the accountant, synthesis) is
generic over PyMC's distributions, symbolic ones included (``pm.Censored``, ``pm.Truncated``,
``pm.Mixture``, ``pm.CustomDist`` with ``dist=``): the per-record log density is derived on the
model's own variables (``rv_logprob``).

Masked (imputed) outcomes
-------------------------
An observed array with NaN values makes PyMC split the variable ``y`` into an observed part
``y_observed`` (the records with a value), a free variable ``y_unobserved`` (the missing values,
imputed by sampling) and a deterministic ``y`` that joins them. pseudopost treats them so:

* the **records** of the likelihood are the records with a value: a missing value carries no
  likelihood contribution, so a record whose value is missing has no weight (there is nothing to
  weight), no risk and no Lipschitz bound (:math:`\Delta_i = 0`); it does not enter
  :math:`\varepsilon_x`. Adding or removing such a record leaves the posterior of the
  parameters unchanged (its imputed value integrates to one), so this is exact, not a relaxation.
  The weights, risk and Lipschitz bounds of the result are labelled by the records' row
  positions in the user's array;
* **synthesis** writes the column under the user's name ``y``, with a value for *every* record:
  each record's synthetic value is drawn from :math:`p(y \mid \theta_m)` under the same
  posterior draw :math:`\theta_m` (for a record whose value was missing too; the posterior's
  imputed values are not released). The missingness pattern is not reproduced (it is not
  covered by the accountant). The synthetic frame says so in ``frame.attrs["imputed"]``.

Unsupported constructs raise a ``ValueError`` naming them when the model is wrapped, before any
compilation: an observed variable without a record dimension, record variables of different
lengths, a ``pm.Potential`` built from per-record data (it would enter the posterior unweighted
and outside the accountant), ``pm.Minibatch`` data (``total_size``), ``pm.Simulator``, a
``pm.CustomDist`` with a log density but no way to draw (synthesis needs one), a vector-valued
record with some of its entries missing, imputed values that feed another variable, and a
masked variable alongside other record variables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytensor.tensor as pt
import xarray as xr
from pymc.distributions.distribution import PartialObservedRV
from pytensor.graph.traversal import ancestors

from pseudopost.models.base import Prepared, SynthModel
from pseudopost.models.weighting import n_records, observed_names, value_of

__all__ = ["IMPUTED_NOTE", "MaskedOutcome", "PyMCModel"]

#: what a synthetic frame of a model with a masked outcome says about the imputed records
IMPUTED_NOTE = (
    "Records whose value of this column was missing carry no likelihood contribution: they "
    "have no weight, no risk and no Lipschitz bound (Delta_i = 0) and do not enter epsilon. "
    "Every record's synthetic value, theirs included, is drawn from p(y | theta) under the "
    "same posterior draw; the posterior's imputed values and the missingness pattern are "
    "not released."
)


@dataclass(frozen=True)
class MaskedOutcome:
    """PyMC's split of a variable observed with NaN values (see the module docstring).

    ``name`` is the user's name (PyMC's joining deterministic), ``observed`` and ``unobserved``
    the observed part and the free variable of the imputed values, ``missing`` the mask over
    the user's records (True where the value was missing) and ``dtype`` the variable's dtype.
    """

    name: str
    observed: str
    unobserved: str
    missing: np.ndarray
    dtype: np.dtype


class PyMCModel(SynthModel):
    """A user's PyMC model, with its data inside it, used as a synthesizer.

    Parameters
    ----------
    model
        Any ``pm.Model`` whose observed variables share a leading record dimension. It is never
        modified: weighting works on a clone (:func:`~pseudopost.models.weighted_model`).
    observed
        The observed variables that make up a record (default: all). A record's weight
        multiplies the sum of their log-likelihoods, and the accountant uses that sum. For a
        variable observed with NaN values, its user name (``"y"``) or PyMC's ``"y_observed"``.
    discrete
        Whether the (single) outcome is integer-valued, for sensitive ranges (default: from the
        variable's dtype).

    Notes
    -----
    For the accountant to slice records, keep per-record data in ``pm.Data`` without ``dims``
    (use ``shape=data.shape`` on the observed variable); otherwise it chunks over draws only.
    A masked (imputed) outcome is treated as the module docstring states: records with a missing
    value have no weight, no risk and :math:`\\Delta_i = 0`; synthesis writes every record under
    the user's column name.
    """

    def __init__(
        self,
        model: pm.Model,
        observed: Sequence[str] | None = None,
        *,
        discrete: bool | None = None,
    ) -> None:
        if not isinstance(model, pm.Model):
            raise TypeError(f"'model' must be a pymc.Model. Got {type(model).__name__}.")
        self.model = model
        names = observed_names(model, _pymc_names(model, observed))
        self.masked = _masked_outcomes(model, names)
        _check_supported(model, names, self.masked)
        self.observed = tuple(names)
        self._n = n_records(model, self.observed)
        if discrete is None:
            discrete = all(model[o].dtype.startswith(("int", "uint", "bool")) for o in names)
        self.discrete = bool(discrete)

    def __repr__(self) -> str:
        return f"PyMCModel(observed={list(self.observed)!r}, n={self._n})"

    @property
    def columns(self) -> list[str]:
        """The synthetic frame's variables: the user's names (a masked ``y``, not ``y_observed``)."""
        return [self.masked[o].name if o in self.masked else o for o in self.observed]

    def prepare(self, data: pd.DataFrame | None) -> Prepared:
        if data is not None:
            raise ValueError(
                "A PyMCModel holds its own data; call fit() without 'data' (or "
                "rebuild the model on new data)."
            )
        arrays = {}
        for name in self.observed:
            v = value_of(self.model.rvs_to_values[self.model[name]]).astype(float)
            if not np.all(np.isfinite(v)):
                raise ValueError(f"Observed variable '{name}' holds non-finite values.")
            arrays[name] = v
        if self._n < 2:
            raise ValueError(f"The model has {self._n} record(s); at least 2 are needed.")
        index = pd.RangeIndex(self._n)
        if self.masked:  # the records are the rows with a value, labelled by their position
            mask = next(iter(self.masked.values())).missing  # one masked variable at most
            index = pd.Index(np.flatnonzero(~mask))
        return Prepared(arrays, self._n, index)

    def build(self, prepared: Prepared) -> pm.Model:
        return self.model

    def simulate(
        self,
        prepared: Prepared,
        base: pm.Model,
        posterior: xr.Dataset,
        chosen: np.ndarray,
        seed: int,
    ) -> list[pd.DataFrame]:
        """One synthetic frame per chosen flat posterior draw: a posterior-predictive draw of
        every record variable; for a masked outcome also a fresh draw of the missing records
        from :math:`p(y \\mid \\theta_m)` (the posterior's imputed values are not used)."""
        from pseudopost.models.predictive import predictive_draws

        wanted = list(self.observed)
        fresh = [m.unobserved for m in self.masked.values()]
        pp = predictive_draws(base, posterior, [*wanted, *fresh], chosen, seed, fresh=fresh)
        return [
            self.to_frame(prepared, {k: v[j] for k, v in pp.items()}) for j in range(len(chosen))
        ]

    def to_frame(self, prepared: Prepared, predictive: dict[str, np.ndarray]) -> pd.DataFrame:
        """Columns named as the user named them; a vector-valued record ``y`` of k entries
        becomes ``y[0]..y[k-1]``; a masked outcome fills every record (module docstring)."""
        cols, index, notes = {}, pd.RangeIndex(self._n), {}
        for name in self.observed:
            v = np.asarray(predictive[name])
            if name in self.masked:
                m = self.masked[name]
                if m.unobserved not in predictive:
                    raise ValueError(
                        f"The synthetic values of '{m.name}' need draws of both '{name}' and "
                        f"'{m.unobserved}' (the records whose value was missing)."
                    )
                full = np.empty((m.missing.size, *v.shape[1:]), dtype=m.dtype)
                full[~m.missing] = v
                full[m.missing] = np.asarray(predictive[m.unobserved])
                v, name, index = full, m.name, pd.RangeIndex(m.missing.size)
                notes[name] = IMPUTED_NOTE
            if v.ndim == 1:
                cols[name] = v
            else:
                flat = v.reshape(len(v), -1)
                cols.update({f"{name}[{j}]": flat[:, j] for j in range(flat.shape[1])})
        frame = pd.DataFrame(cols, index=index if self.masked else prepared.index.copy())
        if notes:
            frame.attrs["imputed"] = notes
        return frame


def _pymc_names(model: pm.Model, observed: Sequence[str] | str | None) -> list[str] | None:
    """``observed`` with a masked variable's user name ``y`` mapped to ``y_observed``."""
    if observed is None:
        return None
    chosen = [observed] if isinstance(observed, str) else list(observed)
    observed_rvs = {rv.name for rv in model.observed_RVs}
    return [
        f"{o}_observed" if o not in observed_rvs and f"{o}_observed" in observed_rvs else o
        for o in chosen
    ]


def _masked_outcomes(model: pm.Model, names: Sequence[str]) -> dict[str, MaskedOutcome]:
    """PyMC's masked variables among ``names``, with their masks (module docstring)."""
    out = {}
    deterministics = {d.name: d for d in model.deterministics}
    free = {rv.name: rv for rv in model.free_RVs}
    for name in names:
        user = name.removesuffix("_observed")
        if not (name.endswith("_observed") and user in deterministics):
            continue
        if f"{user}_unobserved" not in free or isinstance(model[name].owner.op, PartialObservedRV):
            raise ValueError(
                f"Observed variable '{name}' holds part of '{user}' whose entries are missing "
                f"within a record (PyMC split it with a PartialObservedRV): a vector-valued "
                f"record with some entries missing is not supported. Drop those records or "
                f"impute them before building the model."
            )
        unobserved = free[f"{user}_unobserved"]
        joined = deterministics[user]
        # the user's array: observed values, NaN where PyMC imputes
        value = model.rvs_to_values[unobserved]
        shape = tuple(int(s) for s in unobserved.shape.eval())
        (graph,) = model.replace_rvs_by_values([joined])
        fn = pytensor.function([value], graph, on_unused_input="ignore", mode="FAST_COMPILE")
        full = np.asarray(fn(np.full(shape, np.nan, dtype=value.dtype)))
        missing = np.isnan(full)
        missing = missing.reshape(missing.shape[0], -1).any(axis=1)
        out[name] = MaskedOutcome(user, name, unobserved.name, missing, np.dtype(joined.dtype))
    return out


def _check_supported(
    model: pm.Model, names: Sequence[str], masked: dict[str, MaskedOutcome]
) -> None:
    """Raise a ValueError naming the first construct pseudopost cannot weight, account for or
    synthesize (module docstring); nothing is compiled."""
    for name in names:
        rv = model[name]
        op = rv.owner.op
        kind = type(op).__name__
        if "Minibatch" in kind:
            raise ValueError(
                f"Observed variable '{name}' uses pm.Minibatch data (total_size): the mechanism "
                f"needs every record in every evaluation. Pass the full data."
            )
        if "Simulator" in kind:
            raise ValueError(
                f"Observed variable '{name}' is a pm.Simulator: it has no log density, so it "
                f"can be neither weighted nor accounted for."
            )
        random = getattr(op, "_random_fn", None)
        if "default_not_implemented" in getattr(random, "__qualname__", ""):
            raise ValueError(
                f"Observed variable '{name}' is a pm.CustomDist with a log density but no "
                f"'random' (or 'dist'): synthesis cannot draw from it. Give it random= or dist=."
            )
    if masked and len(names) > 1:
        raise ValueError(
            f"Observed variable(s) {[m.name for m in masked.values()]} have missing values and "
            f"a record holds {list(names)}: records of several variables with a masked one are "
            f"not supported. Model the masked variable alone."
        )
    n = n_records(model, names)
    _check_potentials(model, n)
    _check_imputed_leaves(model, masked)


def _check_potentials(model: pm.Model, n: int) -> None:
    """A potential built from per-record data is a likelihood the weighting cannot reach."""
    per_record = {
        id(v)
        for v in [*model.data_vars, *(model.rvs_to_values[rv] for rv in model.observed_RVs)]
        if np.ndim(value_of(v)) >= 1 and np.shape(value_of(v))[0] == n
    }
    per_record |= {id(rv) for rv in model.observed_RVs}
    for pot in model.potentials:
        for a in ancestors([pot]):
            is_constant = isinstance(a, pt.TensorConstant) and a.ndim >= 1 and a.data.shape[0] == n
            if id(a) in per_record or is_constant:
                raise ValueError(
                    f"pm.Potential '{pot.name}' is built from per-record data: it would enter "
                    f"the posterior unweighted and outside the accountant. Write that part of "
                    f"the likelihood as an observed variable (pm.CustomDist with observed=)."
                )


def _check_imputed_leaves(model: pm.Model, masked: dict[str, MaskedOutcome]) -> None:
    """Imputed values that feed another variable would enter other records' likelihoods."""
    for m in masked.values():
        sources = {id(model[m.unobserved]), id(model[m.name])}
        others = [v for v in model.basic_RVs if v.name not in (m.observed, m.unobserved)]
        others += [*model.potentials, *(d for d in model.deterministics if d.name != m.name)]
        for v in others:
            if any(id(a) in sources for a in ancestors([v])):
                raise ValueError(
                    f"The imputed values of '{m.name}' feed '{v.name}': a variable with missing "
                    f"values must not be a parent of another variable (its imputed values "
                    f"would enter other likelihood terms). Model it as a leaf."
                )
