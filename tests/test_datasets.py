import numpy as np
import pytest

from pseudopost import datasets


def test_shipped_data_shapes():
    assert datasets.load_fatigue().shape == (22, 2)
    assert datasets.load_adult("train").shape == (32561, 15)
    assert datasets.load_adult("all").shape == (48842, 15)
    assert datasets.load_german_credit().shape == (1000, 21)
    assert datasets.load_breast_cancer().shape == (569, 31)
    with pytest.raises(ValueError, match="split"):
        datasets.load_adult("validation")


def test_simulation_matches_section_41_and_is_seeded():
    a = datasets.simulate_lognormal(20000, seed=3)
    assert a.equals(datasets.simulate_lognormal(20000, seed=3))
    assert abs(a.z.mean() - 2) < 0.03 and abs(a.z.std() - 1) < 0.03
    resid = np.log(a.x) - (a.z + 1)
    assert abs(resid.mean()) < 0.03 and abs(resid.std() - 1) < 0.03
