"""Shared machinery of the ready regression models: validation, design matrix, linear predictor."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from pseudopost._validation import check_columns, check_finite_numeric, check_frame, check_positive
from pseudopost.models.base import Prepared, SynthModel
from pseudopost.models.families import FAMILIES
from pseudopost.models.parts import Part, make_part

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
    #: parameter names beyond the common ones (a column may not take them)
    parameter_names: tuple[str, ...] = ()

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
        reserved = RESERVED | set(type(self).parameter_names)
        clash = sorted(reserved & {outcome, *preds})
        if clash:
            raise ValueError(
                f"Column name(s) {clash} clash with model parameter names "
                f"{sorted(reserved)}; rename the column(s)."
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
            value = data[self.outcome].iloc[i]
            value = value.item() if isinstance(value, np.generic) else value
            raise ValueError(
                f"Column '{self.outcome}' must be {expected} for {type(self).__name__}; row "
                f"{data.index[i]!r} has {value!r} "
                f"({int(mask.sum())} such value(s))."
            )

    def coords(self, prefix: str = "", prepared: Prepared | None = None) -> dict[str, list]:
        """Dimension names (prefixed) and labels: ``predictor``, and for a model with levels
        or components those too (they need ``prepared`` when they depend on the data)."""
        return {f"{prefix}predictor": list(self.predictors)} if self.predictors else {}

    def model_context(self, prepared: Prepared | None = None) -> pm.Model:
        return pm.Model(coords=self.coords("", prepared))

    def build(self, prepared: Prepared) -> pm.Model:
        with self.model_context(prepared) as model:
            self.declare(prepared)
        return model

    def declare(self, prepared: Prepared, prefix: str = "") -> None:
        """Declare parameters ``prefix + name`` and the observed outcome (named after the
        column, not prefixed) in the active ``pm.Model``; missing coords are added."""
        model = pm.modelcontext(None)
        for name, values in self.coords(prefix, prepared).items():
            if name not in model.coords:
                model.add_coord(name, values)
        self.declare_variables(prepared, prefix)

    def declare_variables(self, prepared: Prepared, prefix: str) -> None:
        """Declare parameters and the observed outcome (coords already exist)."""
        raise NotImplementedError

    def design(self, prepared: Prepared, prefix: str = "") -> pt.TensorVariable | None:
        """The predictor matrix as ``pm.Data(prefix + "X")`` (None without predictors)."""
        if not self.predictors:
            return None
        return pm.Data(f"{prefix}X", np.column_stack([prepared.arrays[p] for p in self.predictors]))

    def linear_predictor(
        self,
        prepared: Prepared,
        scale: float,
        prefix: str = "",
        *,
        intercept_scale: float | None = None,
        X: pt.TensorVariable | None = None,
        names: tuple[str, str] = ("intercept", "beta"),
    ) -> pt.TensorVariable:
        """Declare ``intercept`` ~ N(0, intercept_scale) and ``beta`` ~ N(0, scale) (names
        prefixed) in the current model and return eta (shape (n,)); ``X`` reuses a design."""
        s0 = scale if intercept_scale is None else intercept_scale
        intercept = pm.Normal(f"{prefix}{names[0]}", 0.0, s0)
        if not self.predictors:
            return intercept + pt.zeros(prepared.n)
        if X is None:
            X = self.design(prepared, prefix)
        beta = pm.Normal(f"{prefix}{names[1]}", 0.0, scale, dims=f"{prefix}predictor")
        return intercept + X @ beta

    def design_matrix(self, predictors: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """The (n, p) predictor matrix for :meth:`sample_outcome`, checked."""
        missing = [p for p in self.predictors if p not in predictors]
        if missing:
            raise ValueError(
                f"{type(self).__name__} of '{self.outcome}' needs predictor(s) {missing}; "
                f"got {sorted(predictors)}."
            )
        cols = [np.asarray(predictors[p], dtype=np.float64) for p in self.predictors]
        bad = [p for p, c in zip(self.predictors, cols, strict=True) if c.shape != (n,)]
        if bad:
            raise ValueError(f"Predictor(s) {bad} must have shape ({n},) to match 'u'.")
        return np.column_stack(cols) if cols else np.zeros((n, 0))

    def eta(
        self,
        params: Mapping[str, np.ndarray],
        predictors: Mapping[str, np.ndarray],
        n: int,
        names: tuple[str, str] = ("intercept", "beta"),
    ) -> np.ndarray:
        """Linear predictor of one posterior draw in NumPy (shape (n,))."""
        out = np.full(n, float(np.asarray(params[names[0]])))
        if self.predictors:
            out += self.design_matrix(predictors, n) @ np.asarray(params[names[1]], np.float64)
        return out

    def family_part(self, params: Mapping[str, np.ndarray]) -> Part:
        """The part of this model's family (:data:`~pseudopost.models.families.FAMILIES`) with
        its prior, sized to one draw's ``params`` (outcome ``"y"``, predictors ``x0..``): the
        family's numbers are the part's, which the ready model declares to PyMC and through
        which it synthesizes."""
        predictors = [f"x{j}" for j in range(len(self.predictors))]
        return make_part(FAMILIES[self.family].part, "y", predictors,
                         prior_scale=self.prior_scale, **self.part_options(params))  # fmt: skip

    def part_options(self, params: Mapping[str, np.ndarray]) -> dict:
        """The part's options read off one draw's ``params`` (a level count)."""
        return {}

    def sample_outcome(
        self,
        params: Mapping[str, np.ndarray],
        predictors: Mapping[str, np.ndarray],
        u: np.ndarray,
    ) -> np.ndarray:
        """Outcomes by inversion of one draw's ``params``: the family part's
        :meth:`~pseudopost.models.parts.Part.sample`."""
        u = self.check_uniforms(u)
        X = self.design_matrix(predictors, len(u))
        return self.family_part(params).sample(params, X, u[:, 0])

    def check_uniforms(self, u: np.ndarray) -> np.ndarray:
        """``u`` as float64 (n, uniforms_per_record) inside (0, 1)."""
        u = np.asarray(u, dtype=np.float64)
        k = self.uniforms_per_record
        if u.ndim != 2 or u.shape[1] != k:
            raise ValueError(
                f"'u' must have shape (n, {k}) for {type(self).__name__}; got {u.shape}."
            )
        if not np.all((u > 0) & (u < 1)):
            raise ValueError("'u' must hold uniforms strictly inside (0, 1).")
        return u

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
