"""Train on synthetic, test on real: AUROC of a logistic regression (REPS paper, section 7.5).

A scikit-learn ``LogisticRegression`` is trained on the synthetic records (features encoded by
:class:`~pseudopost.evaluate._features.FeatureEncoder`, fitted on the synthetic training data
only) and scored by ROC AUC on the real held-out records. If the synthetic data hold a single
class, the classifier is constant and the AUROC is 0.5.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from .._validation import check_columns, check_frame
from ._features import FeatureEncoder, infer_feature_types, shared_features

__all__ = ["tstr_auroc"]


def tstr_auroc(
    synthetic: pd.DataFrame,
    test: pd.DataFrame,
    label: str,
    *,
    features: Sequence[str] | None = None,
    max_iter: int = 2000,
) -> float:
    """AUROC on ``test`` of a logistic regression of ``label`` trained on ``synthetic``.

    ``test[label]`` must hold exactly two classes; the classifier's probability of the class
    sorted last is the score (AUROC does not depend on which class is called positive).
    """
    check_frame(synthetic, "synthetic")
    check_frame(test, "test")
    check_columns(synthetic, [label], "synthetic")
    check_columns(test, [label], "test")
    classes = sorted(test[label].astype(str).unique())
    if len(classes) != 2:
        raise ValueError(f"The label '{label}' in 'test' must have 2 classes; got {classes}.")
    cols = [c for c in shared_features(synthetic, test, features=features) if c != label]
    y_syn = synthetic[label].astype(str).to_numpy() == classes[1]
    y_test = test[label].astype(str).to_numpy() == classes[1]
    if y_syn.all() or not y_syn.any():
        return 0.5
    enc = FeatureEncoder(*infer_feature_types(synthetic, cols)).fit(synthetic)
    model = LogisticRegression(max_iter=max_iter).fit(enc.transform(synthetic), y_syn)
    prob = model.predict_proba(enc.transform(test))[:, 1]
    return float(roc_auc_score(y_test, prob))
