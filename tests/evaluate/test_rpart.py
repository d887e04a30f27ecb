"""The rpart-compatible tree behind synthpop's CART propensity score: hand cases, brute force."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pseudopost.evaluate._rpart import CartDesign


def test_separable_numeric_split():
    x = np.arange(30.0)
    y = (x >= 15).astype(int)
    prob, n_splits = CartDesign([x]).leaf_probabilities(y, cp=1e-3, minbucket=5)
    assert n_splits == 1
    np.testing.assert_array_equal(prob, y.astype(float))


def test_minbucket_keeps_five_records_per_leaf():
    x = np.arange(30.0)
    y = (x >= 27).astype(int)
    prob, n_splits = CartDesign([x]).leaf_probabilities(y, cp=1e-3, minbucket=5)
    # the three 1s cannot form a leaf of their own: the top leaf holds x = 25..29, share 3/5
    assert n_splits == 1
    np.testing.assert_allclose(prob, np.where(x >= 25, 3 / 5, 0.0))


def test_cp_prunes_a_split_that_gains_too_little():
    x = np.arange(30.0)
    y = (x >= 27).astype(int)
    # root risk 3 (three 1s); the split above lowers it to 0 + 2, a gain of 1 < cp * 3 = 1.5
    prob, n_splits = CartDesign([x]).leaf_probabilities(y, cp=0.5, minbucket=5)
    assert n_splits == 0
    np.testing.assert_allclose(prob, 0.1)
    # cp = 1 forbids every split (alpha equals the root risk)
    prob, n_splits = CartDesign([x]).leaf_probabilities((x >= 15).astype(int), cp=1.0)
    assert n_splits == 0 and np.all(prob == 0.5)


def test_categorical_split_orders_levels_by_their_share():
    # levels a, b, c, d with 0, 10, 1 and 9 ones out of 10 records each
    codes = np.repeat(np.arange(4), 10)
    y = np.zeros(40, dtype=int)
    y[10:20] = 1
    y[20] = 1
    y[30:39] = 1
    prob, n_splits = CartDesign([(codes, 4)]).leaf_probabilities(y, cp=1e-3, minbucket=5)
    # {a, c} against {b, d}; splitting a from c lowers the Gini index but not the risk
    # (1 misclassified either way), so rpart prunes it back
    assert n_splits == 1
    np.testing.assert_allclose(prob, np.repeat([1 / 20, 19 / 20, 1 / 20, 19 / 20], 10))


def test_equal_values_are_never_separated_and_labels_are_checked():
    x = np.r_[np.zeros(20), np.ones(20)]
    y = np.r_[np.zeros(10), np.ones(10), np.zeros(20)].astype(int)
    prob, _ = CartDesign([x]).leaf_probabilities(y, cp=0.0, minbucket=5)
    assert np.unique(prob[x == 0]).size == 1
    with pytest.raises(ValueError, match="one label per row"):
        CartDesign([x]).leaf_probabilities(y[:5])


def _gini(n0, n1):
    n = n0 + n1
    return 0.0 if n == 0 else n * (1 - (n0 / n) ** 2 - (n1 / n) ** 2)


def _brute_force_stumps(columns, y, minbucket):
    """Every best root split by exhaustive search, as leaf probabilities.

    Splits whose Gini impurity ties the best one in exact arithmetic (within 1e-9) are all
    returned: which of them a floating-point implementation picks depends on rounding.
    """
    n1, n = int(y.sum()), y.size
    root = np.full(n, n1 / n)
    candidates = []
    for x in columns:
        for cut in np.unique(x)[1:]:
            left = x < cut
            nl = int(left.sum())
            if nl < minbucket or n - nl < minbucket:
                continue
            l1, r1 = int(y[left].sum()), int(y[~left].sum())
            g = _gini(nl - l1, l1) + _gini(n - nl - r1, r1)
            candidates.append((g, left, l1, r1))
    if not candidates:
        return [root]
    best = min(c[0] for c in candidates)
    out = []
    for g, left, l1, r1 in candidates:
        if g > best + 1e-9:
            continue
        risk = min(n1, n - n1)
        child_risk = min(l1, left.sum() - l1) + min(r1, (~left).sum() - r1)
        if risk - child_risk <= 0:  # complexity <= alpha = 0: pruned
            out.append(root)
        else:
            out.append(np.where(left, l1 / left.sum(), r1 / (~left).sum()))
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.integers(15, 60),
    st.integers(1, 6),
    st.integers(0, 2**32 - 1),
)
def test_root_split_matches_exhaustive_search(n, minbucket, seed):
    rng = np.random.default_rng(seed)
    columns = [rng.integers(0, 6, n).astype(float), rng.normal(size=n).round(1)]
    y = (rng.uniform(size=n) < 0.2 + 0.6 * (columns[0] > 2)).astype(int)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    prob, _ = CartDesign(columns).leaf_probabilities(
        y, cp=0.0, minbucket=minbucket, minsplit=2 * minbucket, maxdepth=1
    )
    expected = _brute_force_stumps(columns, y, minbucket)
    assert any(np.allclose(prob, e, rtol=0, atol=1e-12) for e in expected), (prob, expected)


def test_root_split_on_a_floating_point_tie_is_one_of_the_best():
    # two splits with the same Gini impurity (4.8) in exact arithmetic: x0 < 3 and x0 < 4
    x0 = np.array([1, 4, 5, 2, 3, 4, 4, 3, 0, 3, 0, 3, 3, 0, 4], dtype=float)
    y = np.array([0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 0, 1])
    prob, n_splits = CartDesign([x0]).leaf_probabilities(
        y, cp=0.0, minbucket=1, minsplit=2, maxdepth=1
    )
    assert n_splits == 1
    ties = _brute_force_stumps([x0], y, 1)
    assert len(ties) == 2
    assert any(np.allclose(prob, e) for e in ties)
