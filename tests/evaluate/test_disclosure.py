"""Identification and attribute disclosure measures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pseudopost.evaluate import attribute_risk, identification_risk

REAL = pd.DataFrame({"k": [1, 1, 2], "y": [10.0, 20.0, 30.0]})
SYN = pd.DataFrame({"k": [1, 1, 2], "y": [10.5, 100.0, 31.0]})


def test_identification_risk_by_hand():
    r = identification_risk(REAL, SYN, ["k"], "y", radius=0.1)
    # record 0: one match (itself); record 1: none; record 2: one match (itself)
    assert r["expected_match_risk"] == 2.0
    assert r["true_match_rate"] == pytest.approx(2 / 3)


def test_attribute_risk_by_hand():
    r = attribute_risk(REAL, SYN, ["k"], "y", radius=0.1)
    # guesses: median(10.5, 100) for k = 1 (misses 10 and 20), 31 for k = 2 (hits 30)
    assert r["attribute_risk"] == pytest.approx(1 / 3)
    assert r["baseline"] == pytest.approx(1 / 3)  # median 31 of the whole column


def test_no_keys_means_everyone_matches():
    r = identification_risk(REAL, REAL, [], "y", radius=10.0)
    assert r["expected_match_risk"] == pytest.approx(1.0)  # 3 records x 1/3
    assert r["true_match_rate"] == 0.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((REAL, SYN.iloc[:2], ["k"], "y"), "one row per real record"),
        ((REAL, SYN, ["z"], "y"), "Column 'z' is missing"),
        ((REAL, SYN, ["k"], "y", -0.1), "'radius'"),
    ],
)
def test_bad_inputs_are_named(args, message):
    with pytest.raises(ValueError, match=message):
        identification_risk(*args)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0.5, 100.0), min_size=2, max_size=15, unique=True),
    st.floats(0.0, 0.5),
    st.integers(0, 2**31),
)
def test_measures_stay_in_range(values, radius, seed):
    real = pd.DataFrame({"y": values, "k": np.arange(len(values)) % 2})
    rng = np.random.default_rng(seed)
    syn = real.assign(y=real.y * rng.uniform(0.5, 1.5, len(real)))
    r = identification_risk(real, syn, ["k"], "y", radius)
    assert 0 <= r["expected_match_risk"] <= len(real)
    assert 0 <= r["true_match_rate"] <= 1
    exact = identification_risk(real, real, ["k"], "y", 0.0)
    assert exact["true_match_rate"] == 1.0  # distinct values, radius 0: unique true matches
    a = attribute_risk(real, syn, ["k"], "y", radius)
    assert 0 <= a["attribute_risk"] <= 1 and 0 <= a["baseline"] <= 1
