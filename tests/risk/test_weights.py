import numpy as np
import pytest

from pseudopost.risk import check_weight_knobs, normalise_risk, risk_weights


def test_linear_normalisation_and_weights():
    L = np.array([2.0, 4.0, 6.0, 10.0])
    np.testing.assert_allclose(normalise_risk(L), [0, 0.25, 0.5, 1.0])
    np.testing.assert_allclose(risk_weights(L), [1, 0.75, 0.5, 0.0])
    np.testing.assert_allclose(risk_weights(L, scale=0.5, shift=0.2), [0.7, 0.575, 0.45, 0.2])
    np.testing.assert_allclose(risk_weights(L, scale=2.0), [1, 1, 1, 0])


def test_logistic_normalisation_is_monotone_in_0_1():
    L = np.array([1.0, 2.0, 3.0, 50.0])
    r = normalise_risk(L, "logistic")
    assert np.all(np.diff(r) > 0) and r.min() > 0 and r.max() < 1


def test_constant_risk_gives_full_weight():
    np.testing.assert_allclose(risk_weights(np.full(4, 3.0)), 1.0)


@pytest.mark.parametrize(
    ("c", "g", "msg"),
    [
        (0.0, 0.0, "scale"),
        (-1.0, 0.5, "scale"),
        (1.0, -1.0, "every weight 0"),
        (0.5, -0.7, "every weight 0"),
        (1.0, np.nan, "shift"),
        (np.inf, 0, "scale"),
    ],
)
def test_bad_knobs(c, g, msg):
    with pytest.raises(ValueError, match=msg):
        check_weight_knobs(c, g)


def test_non_finite_risk_names_the_record():
    with pytest.raises(ValueError, match="record 1"):
        normalise_risk(np.array([1.0, np.inf]))
