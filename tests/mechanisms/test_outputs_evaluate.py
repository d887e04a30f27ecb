"""Every lighter mechanism's synthetic records go through the package's own evaluation functions.

Issue 17: ``REPS.sample()`` returned the label as ``object`` dtype holding numpy integers, so
``pp.evaluate.membership_inference(train, test, synthetic)`` refused it ("Column 'y' must be
numeric"). Each mechanism now hands back the training frame's dtypes; this runs REPS, PRISM,
its baselines, MST and the joint-histogram release through ``membership_inference``, ``pmse``,
``tstr_auroc`` and ``ecdf_utility`` on a frame with an int64 label, an int32 feature, a bool, a
string and a pandas categorical.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pseudopost as pp
from pseudopost.mechanisms import (
    MST,
    PRISM,
    REPS,
    AllFeaturesUniform,
    EntropyHistogram,
    IndependenceOnly,
    JointHistogramRelease,
    make_method,
    synthetic_counts,
)

EDGES = {"x": [-4.0, -1.0, 0.0, 1.0, 4.0]}


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 5, n)
    y = (rng.random(n) < 0.2 + 0.15 * k).astype(np.int64)
    return pd.DataFrame(
        {
            "x": rng.normal(y, 1.0),
            "k": k.astype(np.int32),
            "b": rng.random(n) < 0.4,
            "c": rng.choice(["u", "v", "w"], n),
            "g": pd.Categorical(rng.choice(["p", "q"], n)),
            "y": y,
        }
    )


@pytest.fixture(scope="module")
def split():
    return _frame(300, 1), _frame(200, 2)


MECHANISMS = {
    "reps": lambda tr: REPS(4.0, seed=0).fit(tr, "y"),
    "reps/hard_removal": lambda tr: make_method("hard_removal", 4.0, seed=0).fit(tr, "y"),
    "prism": lambda tr: PRISM(
        2.0, target="y", parents=["k"], backend="naive_bayes", bins=EDGES, seed=0
    ).fit(tr),
    "all_features_uniform": lambda tr: AllFeaturesUniform(
        2.0, target="y", backend="naive_bayes", bins=EDGES, seed=0
    ).fit(tr),
    "independence": lambda tr: IndependenceOnly(2.0, bins=EDGES, seed=0).fit(tr),
    "mst": lambda tr: MST(2.0, bins=EDGES, iters=30, seed=0).fit(tr),
    "joint_histogram": lambda tr: JointHistogramRelease(
        2.0, None, ("x", "k", "b", "g", "y"), bins=EDGES
    ).fit(tr, seed=0),
}


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_synthetic_records_pass_the_evaluation_functions(name, split):
    train, test = split
    syn = MECHANISMS[name](train).sample(len(train), seed=1)
    assert syn.dtypes.to_dict() == train[syn.columns].dtypes.to_dict()
    for attack in ("distance", "domias"):
        res = pp.evaluate.membership_inference(train, test, syn, attack=attack)
        assert 0.0 <= res.auc <= 1.0 and 0.0 <= res.advantage <= 1.0
        assert res.scores.shape == (len(train) + len(test),)
    value = pp.evaluate.pmse(train, syn)
    assert 0.0 <= value <= 0.25  # c(1 - c) with c = 1/2 is the largest possible pMSE
    auc = pp.evaluate.tstr_auroc(syn, test, "y")
    assert 0.0 <= auc <= 1.0
    ecdf = pp.evaluate.ecdf_utility(train, syn)
    numeric = [c for c in ("x", "k", "y") if c in syn.columns]
    assert list(ecdf.index) == numeric  # int32 k and int64 y count as numeric again
    assert ((ecdf["U_m"] >= 0) & (ecdf["U_m"] <= 1)).all()


def test_reps_label_regression_issue_17(split):
    """The exact call of issue 17, and proof that it refuses an object-dtype label."""
    train, test = split
    syn = REPS(4.0, seed=0).fit(train, "y").sample(len(train))
    assert syn["y"].dtype == np.int64 and set(syn["y"]) <= {0, 1}
    assert isinstance(syn["y"].iloc[0], np.integer)
    pp.evaluate.membership_inference(train, test, syn)
    # what REPS used to return: the same labels as numpy integers in an object column
    old = syn.assign(y=syn["y"].astype(object))
    with pytest.raises(TypeError, match="Column 'y' must be numeric"):
        pp.evaluate.membership_inference(train, test, old)


def test_entropy_histogram_synthetic_counts_as_records(split):
    """The 1-D release's synthetic counts, expanded to records, compare with the real column."""
    train, _ = split
    rel = EntropyHistogram(2.0, bins=5).release(train["k"].to_numpy(), seed=0)
    counts = synthetic_counts(rel, len(train), seed=1).astype(np.int64)
    records = pd.DataFrame({"k": np.repeat(np.arange(5), counts).astype(train["k"].dtype)})
    assert len(records) == len(train)
    ecdf = pp.evaluate.ecdf_utility(train[["k"]], records)
    assert 0.0 <= ecdf.loc["k", "U_m"] <= 1.0
