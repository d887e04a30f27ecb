"""TSTR AUROC, scorer quality measures and the shared feature encoder."""

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from pseudopost.evaluate import recall_at_top, scorer_spearman, tstr_auroc
from pseudopost.evaluate._features import FeatureEncoder


def logistic_frame(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    c = rng.choice(["p", "q"], n)
    eta = 1.5 * x + (c == "q") - 0.3
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-eta)), "yes", "no")
    return pd.DataFrame({"x": x, "c": c, "y": y})


def test_tstr_equals_a_direct_logistic_regression():
    syn, test = logistic_frame(800, 0), logistic_frame(500, 1)
    enc = FeatureEncoder(["x"], ["c"]).fit(syn)
    lr = LogisticRegression(max_iter=2000).fit(enc.transform(syn), syn["y"] == "yes")
    direct = roc_auc_score(test["y"] == "yes", lr.predict_proba(enc.transform(test))[:, 1])
    assert tstr_auroc(syn, test, "y") == pytest.approx(direct, abs=1e-9)
    assert tstr_auroc(syn, test, "y") > 0.75


def test_tstr_single_class_synthetic_is_chance():
    syn, test = logistic_frame(100, 0).assign(y="no"), logistic_frame(100, 1)
    assert tstr_auroc(syn, test, "y") == 0.5


def test_tstr_rejects_a_one_class_test_set():
    syn, test = logistic_frame(100, 0), logistic_frame(100, 1).assign(y="no")
    with pytest.raises(ValueError, match="2 classes"):
        tstr_auroc(syn, test, "y")


def test_scorer_quality_closed_forms():
    a = np.arange(100.0)
    assert scorer_spearman(a, a**3) == pytest.approx(1.0)
    assert scorer_spearman(a, -a) == pytest.approx(-1.0)
    assert recall_at_top(a, a) == 1.0
    assert recall_at_top(a, -a) == 0.0
    b = a.copy()
    b[[95, 96]] = [0.5, 1.5]  # two of the oracle's top ten demoted
    assert recall_at_top(b, a) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="equal length"):
        recall_at_top(a, a[:5])


def test_encoder_is_fitted_on_the_reference_only():
    ref = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "c": ["p", "p", "q", "q"]})
    other = pd.DataFrame({"x": [100.0], "c": ["new"]})
    enc = FeatureEncoder(["x"], ["c"]).fit(ref)
    x = enc.transform(ref)
    assert x[:, 0].mean() == pytest.approx(0.0) and x[:, 0].std() == pytest.approx(1.0)
    assert enc.transform(other)[0, 1:].tolist() == [0.0, 0.0]  # unseen level -> zeros
    assert enc.transform(other)[0, 0] == pytest.approx((100 - 2.5) / np.std([1, 2, 3, 4]))
