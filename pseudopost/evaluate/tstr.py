"""Train on synthetic, test on real: AUROC of a logistic regression.

A scikit-learn ``LogisticRegression`` is trained on the synthetic records and scored by ROC AUC
on the real held-out records (REPS paper, section 7.5; PRISM appendix C.3). Two encodings:

* ``"auto"`` (REPS): numeric features standardised and categorical ones one-hot encoded by
  :class:`~pseudopost.evaluate._features.FeatureEncoder`, fitted on the synthetic data only;
* ``"categorical"`` (PRISM, whose features are discretised): every feature one-hot encoded as a
  category over the union of the synthetic and test levels, so the downstream learner is the
  same for every synthesizer.

If the synthetic data hold a single class, the classifier is constant and the AUROC is 0.5
(chance). The score is the probability of the class sorted last (AUROC does not depend on which
class is called positive).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from pseudopost._validation import check_columns, check_frame
from pseudopost.evaluate._features import FeatureEncoder, infer_feature_types, shared_features

__all__ = ["tstr_auroc"]


def tstr_auroc(
    synthetic: pd.DataFrame,
    test: pd.DataFrame,
    label: str,
    *,
    features: Sequence[str] | None = None,
    encoding: Literal["auto", "categorical"] = "auto",
    max_iter: int = 2000,
) -> float:
    """AUROC on ``test`` of a logistic regression of ``label`` trained on ``synthetic``.

    ``test[label]`` must hold exactly two classes. ``encoding`` chooses the feature encoding
    (module docstring).
    """
    check_frame(synthetic, "synthetic")
    check_frame(test, "test")
    check_columns(synthetic, [label], "synthetic")
    check_columns(test, [label], "test")
    if encoding not in ("auto", "categorical"):
        raise ValueError(
            f"The 'encoding' parameter must be 'auto' or 'categorical'. Got {encoding!r}."
        )
    if encoding == "categorical":
        return _categorical_auroc(synthetic, test, label, features, max_iter)
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


def _categorical_auroc(synthetic, test, label, features, max_iter) -> float:
    classes = np.sort(test[label].unique())
    if len(classes) != 2:
        raise ValueError(
            f"The label '{label}' in 'test' must have 2 classes; got {classes.tolist()}."
        )
    if synthetic[label].nunique() < 2:
        return 0.5
    feats = [c for c in (features or test.columns) if c != label]
    both = pd.concat([synthetic[feats], test[feats]], ignore_index=True).astype(str)
    x = pd.get_dummies(both, dtype=float).to_numpy()
    xs, xt = x[: len(synthetic)], x[len(synthetic) :]
    ys = (synthetic[label].to_numpy() == classes[-1]).astype(int)
    yt = (test[label].to_numpy() == classes[-1]).astype(int)
    model = LogisticRegression(max_iter=max_iter).fit(xs, ys)
    return float(roc_auc_score(yt, model.predict_proba(xt)[:, 1]))
