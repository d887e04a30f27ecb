"""Weight maps of section 5.2 and the targeted schedule of Proposition 1."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pseudopost.mechanisms.reps.accounting import synthesis_sigma, weighted_release_epsilon
from pseudopost.mechanisms.reps.weight_maps import (
    cap_weights,
    hinge_exp_weights,
    targeted_clip_share,
    targeted_weights,
)

scores = arrays(float, st.integers(1, 40), elements=st.floats(0, 50))


def test_closed_forms():
    s = np.array([0.0, 1.0, 3.0, 7.0])
    assert cap_weights(s, 2.0) == pytest.approx([1.0, 2 / 3, 2 / 5, 2 / 9])
    assert hinge_exp_weights(s, 0.5, 3.0) == pytest.approx([1, 1, 1, np.exp(-2.0)])
    assert hinge_exp_weights(s, 0.0, 3.0).tolist() == [1.0] * 4


@given(scores, st.floats(0.01, 10), st.floats(0, 10))
def test_maps_are_weights_and_decrease_with_risk(s, gamma, t):
    for w in (cap_weights(s, 1.0 + t), hinge_exp_weights(s, gamma, t)):
        assert ((w > 0) & (w <= 1)).all()
        order = np.argsort(s)
        assert (np.diff(w[order]) <= 1e-15).all()


def test_targeted_schedule_caps_high_risk_records():
    # Proposition 1: eps_i = eps_out on H, eps_t elsewhere; global sensitivity unchanged
    n, clip, eps_t, delta_t, eps_out = 1000, 3.0, 1.8, 5e-7, 0.25
    sigma = synthesis_sigma(n, clip, eps_t, delta_t)
    h = np.zeros(n, bool)
    h[:37] = True
    tau_out = targeted_clip_share(eps_out, n=n, sigma=sigma, delta=delta_t)
    w = targeted_weights(h, tau_out, clip)
    eps_i = weighted_release_epsilon(w, clip=clip, n=n, sigma=sigma, delta=delta_t)
    assert eps_i[h] == pytest.approx(eps_out, rel=1e-12)
    assert eps_i[~h] == pytest.approx(eps_t, rel=1e-12)
    assert w.max() == 1.0


def test_bad_inputs():
    with pytest.raises(ValueError, match="scores"):
        hinge_exp_weights(np.array([1.0, np.nan]), 1.0, 0.0)
    with pytest.raises(ValueError, match="scores"):
        cap_weights(np.array([-1.0]), 1.0)
    with pytest.raises(ValueError, match="tau_out"):
        targeted_weights(np.array([True]), 2.0, 1.0)
    with pytest.raises(ValueError, match="gamma"):
        hinge_exp_weights(np.array([1.0]), -1.0, 0.0)
    with pytest.raises(TypeError, match="boolean"):
        targeted_weights(np.array([1, 0]), 0.5, 1.0)
