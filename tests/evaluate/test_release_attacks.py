"""Membership inference and linkage attacks on histogram releases (Fig. 7)."""

from __future__ import annotations

import numpy as np
import pytest

from pseudopost.evaluate.release_attacks import (
    dp_accuracy_bound,
    histogram_features,
    linkage_attack,
    release_membership_inference,
)
from pseudopost.mechanisms.entropy.histogram import EntropyHistogram

D_IN = np.repeat(np.arange(5), [20, 12, 8, 6, 4])  # 50 records, 5 categories
D_OUT = D_IN[1:]  # the target (a record of category 0) removed: add/remove neighbours


def _release(epsilon: float):
    mech = EntropyHistogram(epsilon, bins=5, neighbouring="add-remove")
    return lambda data, seed: mech.release(data, seed).counts


def test_dp_accuracy_bound_closed_form():
    assert dp_accuracy_bound(0.0) == 0.5
    assert dp_accuracy_bound(np.log(3.0)) == pytest.approx(0.75)
    assert dp_accuracy_bound(1.0, 1.0) == 1.0
    # reached by randomised response with p = e^eps / (1 + e^eps)
    assert dp_accuracy_bound(2.0) == pytest.approx(np.exp(2) / (1 + np.exp(2)))


def test_histogram_features():
    np.testing.assert_allclose(histogram_features([2.0, 2.0, -1.0]), [1.0, 4.0])
    np.testing.assert_allclose(histogram_features([0.0, 0.0]), [0.0, 0.0])


def test_attacks_succeed_without_real_noise():
    mia = release_membership_inference(_release(50.0), D_IN, D_OUT, n_releases=60, seed=1)
    assert mia.accuracy > 0.95 and mia.auc > 0.98
    link = linkage_attack(
        _release(50.0),
        D_IN,
        D_OUT,
        np.bincount(D_IN, minlength=5),
        np.bincount(D_OUT, minlength=5),
        n_trials=100,
        seed=2,
    )
    assert link.accuracy > 0.95


def test_attacks_stay_below_the_dp_bound_at_small_epsilon():
    eps = 0.05
    bound = dp_accuracy_bound(eps)
    mia = release_membership_inference(_release(eps), D_IN, D_OUT, n_releases=200, seed=3)
    assert mia.accuracy_ci[0] <= bound
    assert mia.auc_ci[0] <= bound  # the ROC of an eps-DP test has AUC <= e^eps / (1 + e^eps)
    assert mia.accuracies.shape == (5,)
    link = linkage_attack(
        _release(eps),
        D_IN,
        D_OUT,
        np.bincount(D_IN, minlength=5),
        np.bincount(D_OUT, minlength=5),
        n_trials=400,
        seed=4,
    )
    assert link.accuracy_ci[0] <= bound <= 1.0
    assert link.accuracy_ci[0] <= link.accuracy <= link.accuracy_ci[1]


def test_seeded_attacks_are_reproducible():
    a = release_membership_inference(_release(1.0), D_IN, D_OUT, n_releases=20, n_repeats=2, seed=9)
    b = release_membership_inference(_release(1.0), D_IN, D_OUT, n_releases=20, n_repeats=2, seed=9)
    np.testing.assert_array_equal(a.accuracies, b.accuracies)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: dp_accuracy_bound(-1.0), "'epsilon'"),
        (
            lambda: release_membership_inference(_release(1.0), D_IN, D_OUT, n_releases=2),
            "n_releases",
        ),
        (
            lambda: release_membership_inference(_release(1.0), D_IN, D_OUT, n_repeats=1),
            "n_repeats",
        ),
        (lambda: release_membership_inference("no", D_IN, D_OUT), "callable"),
        (
            lambda: linkage_attack(_release(1.0), D_IN, D_OUT, np.zeros(5), np.zeros(4)),
            "same shape",
        ),
        (lambda: linkage_attack(_release(1.0), D_IN, D_OUT, np.zeros(3), np.zeros(3)), "shape"),
    ],
)
def test_bad_input_is_refused(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
