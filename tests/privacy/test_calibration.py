"""PSIS pieces of the calibration: sign of the importance weights, resampling, the search."""

import numpy as np
import pytest

from pseudopost.fitting.importance import psis_log_weights, systematic_resample
from pseudopost.privacy.calibration import psis_scale_search


def test_psis_weights_are_proportional_to_exp_log_ratio():
    # draws from N(0, 1); log ratio to N(1, 1) is theta - 1/2: the reweighted mean is 1
    rng = np.random.default_rng(0)
    theta = rng.normal(size=4000)
    lw, khat = psis_log_weights(theta - 0.5, (2, 2000))
    w = np.exp(lw)
    assert w.sum() == pytest.approx(1.0)
    assert np.sum(w * theta) == pytest.approx(1.0, abs=0.08)
    assert khat < 0.7


def test_systematic_resample():
    lw = np.log(np.array([0.0, 1.0, 0.0, 0.0]) + 1e-300)
    np.testing.assert_array_equal(systematic_resample(lw, 0.3), [1, 1, 1, 1])
    idx = systematic_resample(np.zeros(8), 0.5)
    np.testing.assert_array_equal(np.sort(idx), np.arange(8))


def test_scale_search_is_exact_when_draws_do_not_move():
    # no log-likelihood change across draws (total = 0): epsilon(s) = 2 s max(per_draw), linear
    per_draw = np.linspace(1.0, 3.0, 400)
    s, khat = psis_scale_search(np.zeros(400), per_draw, 1.0, target=3.0, shape=(2, 200), u=0.5)
    assert s == pytest.approx(0.5, rel=1e-6)
    assert khat <= 0.7
    s1, _ = psis_scale_search(np.zeros(400), per_draw, 1.0, target=10.0, shape=(2, 200), u=0.5)
    assert s1 == 1.0  # target above epsilon at s = 1: weights are not raised
