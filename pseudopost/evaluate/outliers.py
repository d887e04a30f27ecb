r"""Non-private k-NN outlier scores: the oracle the REPS paper stratifies attacks by (section 7.2).

The outlier score of a record is its mean Euclidean distance to its :math:`k` nearest *other*
records (:math:`k = 10`) in standardised feature space (numeric columns standardised,
categoricals one-hot, :class:`~pseudopost.evaluate._features.FeatureEncoder` fitted on the same
frame). Deciles are ranks cut into ten equal groups; decile 10 holds the most outlying 10 %.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.neighbors import NearestNeighbors

from pseudopost._validation import check_frame, check_positive_int
from pseudopost.evaluate._features import FeatureEncoder, infer_feature_types, shared_features

__all__ = ["decile_labels", "knn_outlier_scores", "mean_knn_distance"]


def mean_knn_distance(
    queries: np.ndarray, points: np.ndarray, k: int, *, exclude_self: bool = False
) -> np.ndarray:
    """Mean distance from each query to its ``k`` nearest points (dropping the query's own match
    when ``exclude_self`` and ``queries`` are ``points``)."""
    extra = 1 if exclude_self else 0
    kk = min(k + extra, points.shape[0])
    dist, _ = NearestNeighbors(n_neighbors=kk).fit(points).kneighbors(queries)
    return dist[:, extra:].mean(axis=1)


def knn_outlier_scores(
    frame: pd.DataFrame, *, k: int = 10, features: Sequence[str] | None = None
) -> np.ndarray:
    """Mean distance of each row to its ``k`` nearest other rows (standardised features)."""
    check_frame(frame, "frame", min_rows=2)
    k = check_positive_int(k, "k")
    if k >= len(frame):
        raise ValueError(f"The 'k' parameter must be < the number of rows {len(frame)}. Got {k}.")
    cols = shared_features(frame, features=features)
    enc = FeatureEncoder(*infer_feature_types(frame, cols)).fit(frame)
    x = enc.transform(frame)
    return mean_knn_distance(x, x, k, exclude_self=True)


def decile_labels(scores: np.ndarray, n_groups: int = 10) -> np.ndarray:
    """Group 1..``n_groups`` of each score by rank (ties broken by order); top group = largest."""
    s = np.asarray(scores, dtype=float)
    ranks = stats.rankdata(s, method="ordinal") - 1
    return (ranks * n_groups // s.size).astype(np.int64) + 1
