"""Wrap any user-written PyMC model as a pseudopost synthesizer."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pymc as pm

from pseudopost.models.base import Prepared, SynthModel
from pseudopost.models.weighting import n_records, observed_names, value_of

__all__ = ["PyMCModel"]


class PyMCModel(SynthModel):
    """A user's PyMC model, with its data inside it, used as a synthesizer.

    Parameters
    ----------
    model
        Any ``pm.Model`` whose observed variables share a leading record dimension. It is never
        modified: weighting works on a clone (:func:`~pseudopost.models.weighted_model`).
    observed
        The observed variables that make up a record (default: all). A record's weight
        multiplies the sum of their log-likelihoods, and the accountant uses that sum.
    discrete
        Whether the (single) outcome is integer-valued, for sensitive ranges.

    Notes
    -----
    For the accountant to slice records, keep per-record data in ``pm.Data`` without ``dims``
    (use ``shape=data.shape`` on the observed variable); otherwise it chunks over draws only.
    """

    def __init__(
        self, model: pm.Model, observed: Sequence[str] | None = None, *, discrete: bool = False
    ) -> None:
        if not isinstance(model, pm.Model):
            raise TypeError(f"'model' must be a pymc.Model. Got {type(model).__name__}.")
        self.model = model
        self.observed = tuple(observed_names(model, observed))
        self.discrete = bool(discrete)
        self._n = n_records(model, self.observed)

    def __repr__(self) -> str:
        return f"PyMCModel(observed={list(self.observed)!r}, n={self._n})"

    @property
    def columns(self) -> list[str]:
        return list(self.observed)

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
        return Prepared(arrays, self._n, pd.RangeIndex(self._n))

    def build(self, prepared: Prepared) -> pm.Model:
        return self.model

    def to_frame(self, prepared: Prepared, predictive: dict[str, np.ndarray]) -> pd.DataFrame:
        cols = {}
        for name in self.observed:
            v = np.asarray(predictive[name])
            if v.ndim == 1:
                cols[name] = v
            else:
                flat = v.reshape(len(v), -1)
                cols.update({f"{name}[{j}]": flat[:, j] for j in range(flat.shape[1])})
        return pd.DataFrame(cols, index=prepared.index.copy())
