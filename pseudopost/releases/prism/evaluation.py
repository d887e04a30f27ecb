"""Train-on-synthetic, test-on-real ROC-AUC with logistic regression (PRISM appendix C.3).

Every feature is one-hot encoded (as a category) over the union of the synthetic and test
levels, so the downstream learner is the same for every synthesizer.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

__all__ = ["tstr_auc"]


def tstr_auc(synthetic: pd.DataFrame, test: pd.DataFrame, target: str) -> float:
    """ROC-AUC on ``test`` of a logistic regression trained on ``synthetic``.

    The positive class is the larger target level. A synthetic set with a single target level
    cannot train a classifier and scores 0.5 (chance).
    """
    classes = np.sort(test[target].unique())
    if synthetic[target].nunique() < 2:
        return 0.5
    feats = [c for c in test.columns if c != target]
    both = pd.concat([synthetic[feats], test[feats]], ignore_index=True).astype(str)
    x = pd.get_dummies(both, dtype=float).to_numpy()
    xs, xt = x[: len(synthetic)], x[len(synthetic) :]
    ys = (synthetic[target].to_numpy() == classes[-1]).astype(int)
    yt = (test[target].to_numpy() == classes[-1]).astype(int)
    model = LogisticRegression(max_iter=2000).fit(xs, ys)
    return float(roc_auc_score(yt, model.predict_proba(xt)[:, 1]))
