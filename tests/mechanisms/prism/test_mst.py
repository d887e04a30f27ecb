"""The MST baseline on mbi 2.x."""

import numpy as np
import pytest

from pseudopost.mechanisms.prism import MST


def test_mst_fit_sample_and_accounting(small_frame):
    m = MST(1.0, bins={"Z": [0, 40, 50, 60, 100]}, iters=100, seed=2).fit(small_frame)
    assert len(m.tree_) == small_frame.shape[1] - 1
    nodes = {c for e in m.tree_ for c in e}
    assert nodes == set(small_frame.columns)
    rep = m.privacy_report()
    assert rep["epsilon"] == pytest.approx(1.0, rel=1e-9)
    assert rep["rho_zcdp"] == pytest.approx(rep["pools"]["one_way"]["rho"] * 3, rel=1e-9)
    syn = m.sample(500, seed=0)
    assert list(syn.columns) == list(small_frame.columns) and len(syn) == 500
    assert syn.equals(m.sample(500, seed=0))


def test_mst_bad_epsilon():
    with pytest.raises(ValueError, match="epsilon"):
        MST(0.0)
    with pytest.raises(TypeError, match="DataFrame"):
        MST(1.0).fit(np.zeros((3, 2)))
