"""Membership inference toolkit: attacks, advantage, decile stratification."""

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from pseudopost.evaluate import (
    advantage,
    decile_labels,
    domias_attack_scores,
    knn_outlier_scores,
    membership_inference,
    run_attacks,
)


def population(n, seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.normal(0, 1, n),
            "b": rng.standard_t(3, n),
            "c": rng.choice(["u", "v", "w"], n),
        }
    )


@pytest.fixture(scope="module")
def split():
    return population(600, 1), population(400, 2), population(600, 3)


def test_advantage_formula():
    assert advantage(0.5) == 0.0
    assert advantage(0.8) == pytest.approx(0.6)
    assert advantage(0.1) == pytest.approx(0.8)


def test_copying_the_training_data_is_caught(split):
    train, test, _ = split
    res = run_attacks(train, test, train.copy())
    assert res["distance"].auc == pytest.approx(1.0)
    assert res["domias"].advantage > 0.3  # one of five synthetic neighbours at distance 0
    assert np.nanmin(res["distance"].decile_advantage) > 0.99


def test_independent_synthetic_data_leak_nothing(split):
    train, test, fresh = split
    res = run_attacks(train, test, fresh)
    for r in res.values():
        assert r.advantage < 0.1
        assert r.scores.shape == (1000,) and r.is_member.sum() == 600


def test_domias_leaves_each_test_record_out_of_its_own_reference(split):
    train, test, fresh = split
    default = membership_inference(train, test, fresh, attack="domias")
    # the same computation by hand, own row excluded for test candidates
    from pseudopost.evaluate._features import FeatureEncoder

    enc = FeatureEncoder(["a", "b"], ["c"]).fit(test)
    pool = enc.transform(pd.concat([train, test], ignore_index=True))
    ref, syn = enc.transform(test), enc.transform(fresh)
    d_ref = np.sort(cdist(pool, ref), axis=1)
    own = np.r_[np.zeros(600, bool), np.ones(400, bool)]
    d_ref = np.where(own[:, None], d_ref[:, 1:6], d_ref[:, :5]).mean(1)
    d_syn = np.sort(cdist(pool, syn), axis=1)[:, :5].mean(1)
    assert default.scores == pytest.approx(d_ref / d_syn, rel=1e-9)
    # with its own row kept, a non-member finds itself at distance 0: a spurious attack
    naive = domias_attack_scores(pool, syn, ref, 5)
    from sklearn.metrics import roc_auc_score

    assert advantage(roc_auc_score(~own, naive)) > 0.3 > 0.1 > default.advantage


def test_outlier_leak_shows_in_the_top_decile_only(split):
    train, test, fresh = split
    res0 = membership_inference(train, test, fresh, attack="distance")
    top = res0.outlier_scores[:600] >= np.quantile(res0.outlier_scores, 0.9)
    leaky = pd.concat([fresh, train[top]], ignore_index=True)  # copies of outlying members
    res = membership_inference(train, test, leaky, attack="distance")
    assert res.top_decile_advantage > 0.5
    assert np.nanmax(res.decile_advantage[:5]) < 0.25
    assert res.top_median_ratio > 3


def test_decile_labels_are_equal_rank_groups():
    s = np.random.default_rng(0).normal(size=1000)
    g = decile_labels(s)
    assert np.bincount(g)[1:].tolist() == [100] * 10
    assert g[np.argmax(s)] == 10 and g[np.argmin(s)] == 1


def test_knn_outlier_scores_match_brute_force():
    f = population(80, 5)
    f.loc[0, ["a", "b"]] = [8.0, -9.0]  # a planted outlier
    s = knn_outlier_scores(f, k=10)
    from pseudopost.evaluate._features import FeatureEncoder

    x = FeatureEncoder(["a", "b"], ["c"]).fit(f).transform(f)
    d = np.sort(cdist(x, x), axis=1)[:, 1:11].mean(1)
    assert s == pytest.approx(d)
    assert np.argmax(s) == 0


def test_bad_inputs(split):
    train, test, fresh = split
    with pytest.raises(ValueError, match="attack"):
        membership_inference(train, test, fresh, attack="shadow")
    with pytest.raises(ValueError, match="outlier_scores"):
        membership_inference(train, test, fresh, outlier_scores=np.zeros(3))
    with pytest.raises(ValueError, match="zz"):
        membership_inference(train, test, fresh, features=["a", "zz"])
    with pytest.raises(ValueError, match="finite"):
        membership_inference(train.assign(a=np.inf), test, fresh)
