"""Disclosure measures for fully synthetic rows: a hand-worked case and a brute-force check."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pseudopost.evaluate.disclosure import match_risk, synthetic_attribute_risk

REAL = pd.DataFrame({"x": [10.0, 10.5, 30.0, 40.0], "c": list("aabb"), "y": [1.0, 2, 3, 4],
                     "g": list("uvvw")})  # fmt: skip
SYN = pd.DataFrame({"x": [10.2, 30.5, 100.0, 40.0], "c": list("abaa"), "y": [1.05, 3, 9, 9],
                    "g": list("vvuu")})  # fmt: skip


def test_match_risk_by_hand():
    # s1 matches real 0 and 1 (within 10 %), s2 only real 2, s3 nothing, s4 has the wrong key c
    r = match_risk(REAL, SYN, ["x", "c"], radius=0.1)
    assert r["unique_match_share"] == 0.25  # s2
    assert r["singled_out_share"] == 0.25  # real 2
    assert r["matched_share"] == 0.75  # real 0, 1, 2
    assert match_risk(REAL, SYN, ["x", "c"], radius=0.0)["matched_share"] == 0.0


def test_attribute_risk_by_hand():
    r = synthetic_attribute_risk(REAL, SYN, ["x", "c"], "y", radius=0.1)
    # real 0 guesses 1.05 (hit), real 1 guesses 1.05 (miss), real 2 guesses 3 (hit),
    # real 3 matches nothing and falls back to the column median 6 (miss)
    assert r["attribute_risk"] == 0.5 and r["baseline"] == 0.0
    cat = synthetic_attribute_risk(REAL, SYN, ["x", "c"], "g", radius=0.1)
    # categorical: guesses v, v, v and the column mode u for real 3 -> hits at 1 and 2
    assert cat["attribute_risk"] == 0.5 and cat["baseline"] == 0.25


def _brute(real, syn, keys, radius):
    rows = [real[k].tolist() for k in keys]
    srows = [syn[k].tolist() for k in keys]

    def match(i, j):
        for r, q in zip(rows, srows, strict=True):
            a, b = r[i], q[j]
            if isinstance(a, str):
                if a != b:
                    return False
            elif abs(b - a) > radius * abs(a):
                return False
        return True

    m = np.array([[match(i, j) for j in range(len(syn))] for i in range(len(real))])
    c = m.sum(axis=0)
    return (c == 1).mean(), (m[:, c == 1].any(axis=1)).mean(), m.any(axis=1).mean()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_match_risk_agrees_with_brute_force(seed):
    rng = np.random.default_rng(seed)
    real = pd.DataFrame({"x": rng.uniform(1, 50, 700), "c": rng.choice(list("ab"), 700)})
    syn = pd.DataFrame({"x": rng.uniform(1, 60, 90), "c": rng.choice(list("abc"), 90)})
    r = match_risk(real, syn, ["x", "c"], radius=0.004)  # 700 rows: two blocks of 512
    u, s, m = _brute(real, syn, ["x", "c"], 0.004)
    assert (r["unique_match_share"], r["singled_out_share"], r["matched_share"]) == (u, s, m)
    assert 0 < u < 1 and 0 < s < m < 1  # every case occurs


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="Column 'z' is missing from 'synthetic'"):
        match_risk(REAL.assign(z=1), SYN, ["z"])
    with pytest.raises(ValueError, match="'radius' parameter must be a finite float >= 0"):
        match_risk(REAL, SYN, ["x"], radius=-1)
    with pytest.raises(ValueError, match="sensitive column 'x' cannot also be a key"):
        synthetic_attribute_risk(REAL, SYN, ["x"], "x")
