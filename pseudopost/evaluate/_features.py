"""The one feature encoder of the evaluation toolkit: standardise numerics, one-hot categoricals.

Fitted on reference data only (the attacker's or evaluator's own data), then applied to every
frame being compared, so that no evaluated frame shapes the metric's geometry. Built from
scikit-learn's ``StandardScaler`` and ``OneHotEncoder`` (unknown levels encode as all zeros).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from pseudopost._validation import check_columns, check_finite_numeric, check_frame

__all__ = ["FeatureEncoder", "infer_feature_types", "shared_features"]


def infer_feature_types(
    frame: pd.DataFrame, columns: Sequence[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(numeric, categorical): numeric non-boolean dtypes are numeric, the rest categorical."""
    check_columns(frame, columns, "frame")
    num = tuple(
        c
        for c in columns
        if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
    )
    return num, tuple(c for c in columns if c not in num)


def shared_features(*frames: pd.DataFrame, features: Sequence[str] | None = None) -> list[str]:
    """``features`` checked against every frame, or the columns of the first frame all share."""
    for k, f in enumerate(frames):
        check_frame(f, f"frame {k}")
    if features is not None:
        for k, f in enumerate(frames):
            check_columns(f, features, f"frame {k}")
        return list(features)
    cols = [c for c in frames[0].columns if all(c in f.columns for f in frames[1:])]
    if not cols:
        raise ValueError("The frames share no column to compare on.")
    return cols


class FeatureEncoder:
    """Standardise ``numeric`` and one-hot ``categorical`` columns, fitted on one frame."""

    def __init__(self, numeric: Sequence[str], categorical: Sequence[str]) -> None:
        self.numeric = tuple(numeric)
        self.categorical = tuple(categorical)

    def _prepare(self, frame: pd.DataFrame) -> pd.DataFrame:
        check_columns(frame, self.numeric + self.categorical, "frame")
        values = check_finite_numeric(frame, self.numeric)
        out = pd.DataFrame(values, index=range(len(frame)))
        for c in self.categorical:
            out[c] = frame[c].astype(str).to_numpy()
        return out

    def fit(self, reference: pd.DataFrame) -> FeatureEncoder:
        """Learn means, scales and levels from ``reference`` only."""
        check_frame(reference, "reference")
        self.transformer_ = ColumnTransformer(
            [
                ("num", StandardScaler(), list(self.numeric)),
                (
                    "cat",
                    OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                    list(self.categorical),
                ),
            ],
            sparse_threshold=0.0,
        ).fit(self._prepare(reference))
        return self

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        """Dense float matrix of ``frame`` in the fitted encoding."""
        if not hasattr(self, "transformer_"):
            raise RuntimeError("FeatureEncoder is not fitted; call fit(reference) first.")
        return np.asarray(self.transformer_.transform(self._prepare(frame)), dtype=float)
