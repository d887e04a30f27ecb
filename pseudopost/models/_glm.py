"""Shared machinery of the ready regression models: validation, design matrix, linear predictor."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from .._validation import check_columns, check_finite_numeric, check_frame, check_positive
from .base import Prepared, SynthModel

__all__ = ["GLM"]

RESERVED = {"intercept", "beta", "sigma", "phi", "alpha", "X", "weighted_loglik"}


class GLM(SynthModel):
    """Base of the ready models: an outcome column regressed on predictor columns.

    The linear predictor is :math:`\\eta_i = \\beta_0 + z_i^\\top \\beta` with
    ``intercept`` :math:`\\beta_0` and ``beta`` (dimension ``predictor``); with no predictors the
    model is intercept-only. Priors are fixed numbers (``prior_scale``), never estimated from
    the confidential data: a data-dependent prior would leak outside the accountant.
    """

    family = "glm"

    def __init__(
        self, outcome: str, predictors: Sequence[str] = (), *, prior_scale: float | None = None
    ) -> None:
        if not isinstance(outcome, str) or not outcome:
            raise TypeError(f"'outcome' must be a column name (str). Got {outcome!r}.")
        preds = (predictors,) if isinstance(predictors, str) else tuple(predictors)
        if any(not isinstance(p, str) for p in preds):
            raise TypeError(f"'predictors' must be column names (str). Got {predictors!r}.")
        if outcome in preds:
            raise ValueError(f"Column '{outcome}' cannot be both the outcome and a predictor.")
        if len(set(preds)) != len(preds):
            raise ValueError(f"'predictors' has duplicates: {list(preds)}.")
        clash = sorted(RESERVED & {outcome, *preds})
        if clash:
            raise ValueError(
                f"Column name(s) {clash} clash with model parameter names "
                f"{sorted(RESERVED)}; rename the column(s)."
            )
        self.outcome = outcome
        self.predictors = preds
        self.observed = (outcome,)
        default = type(self).default_prior_scale
        self.prior_scale = check_positive(
            default if prior_scale is None else prior_scale, "prior_scale"
        )

    default_prior_scale = 10.0

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(outcome={self.outcome!r}, "
            f"predictors={list(self.predictors)!r}, prior_scale={self.prior_scale})"
        )

    @property
    def columns(self) -> list[str]:
        return [*self.predictors, self.outcome]

    def check_outcome(self, y: np.ndarray, data: pd.DataFrame) -> None:
        """Family-specific support check of the outcome (overridden)."""

    def prepare(self, data: pd.DataFrame | None) -> Prepared:
        if data is None:
            raise ValueError(
                f"{type(self).__name__} needs a DataFrame with columns {self.columns}."
            )
        check_frame(data, "data", min_rows=2)
        check_columns(data, self.columns, "data")
        arrays = check_finite_numeric(data, self.columns)
        self.check_outcome(arrays[self.outcome], data)
        return Prepared(
            arrays, len(data), data.index.copy(), {c: data[c].dtype for c in self.columns}
        )

    def _first_bad(self, data: pd.DataFrame, mask: np.ndarray, expected: str) -> None:
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            raise ValueError(
                f"Column '{self.outcome}' must be {expected} for {type(self).__name__}; row "
                f"{data.index[i]!r} has {data[self.outcome].iloc[i]!r} "
                f"({int(mask.sum())} such value(s))."
            )

    def linear_predictor(self, prepared: Prepared, scale: float) -> pt.TensorVariable:
        """Declare intercept and beta in the current model and return eta (shape (n,))."""
        intercept = pm.Normal("intercept", 0.0, scale)
        if not self.predictors:
            return intercept + pt.zeros(prepared.n)
        X = pm.Data("X", np.column_stack([prepared.arrays[p] for p in self.predictors]))
        beta = pm.Normal("beta", 0.0, scale, dims="predictor")
        return intercept + X @ beta

    def model_context(self) -> pm.Model:
        return pm.Model(coords={"predictor": list(self.predictors)} if self.predictors else {})

    def to_frame(self, prepared: Prepared, predictive: dict[str, np.ndarray]) -> pd.DataFrame:
        out = {p: prepared.arrays[p] for p in self.predictors}
        y = np.asarray(predictive[self.outcome])
        out[self.outcome] = y
        frame = pd.DataFrame(out, index=prepared.index.copy())
        for c in self.predictors:  # predictors are kept as given: restore their dtype
            frame[c] = frame[c].astype(prepared.dtypes[c])
        if self.discrete:
            frame[self.outcome] = frame[self.outcome].astype(np.int64)
        return frame[self.columns]
