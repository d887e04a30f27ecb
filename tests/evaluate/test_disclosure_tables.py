"""repU, DiSCO and synthpop's other disclosure measures: hand values and identities."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pseudopost.evaluate import disclosure_measures, multi_disclosure

# keys (sex, age) and target y; the missing target of key M50 is a level of its own
REAL = pd.DataFrame(
    {
        "sex": ["M", "M", "F", "F", "M", "F"],
        "age": [20, 20, 30, 40, 50, 60],
        "y": ["a", "a", "b", "c", None, "b"],
    }
)
SYN = pd.DataFrame(
    {
        "sex": ["M", "F", "F", "M", "F", "F"],
        "age": [20, 30, 40, 50, 30, 70],
        "y": ["a", "b", "d", None, "c", "b"],
    }
)


def test_measures_by_hand():
    r = disclosure_measures(REAL, SYN, ["sex", "age"], "y")
    # real key counts: M20 2, F30 1, F40 1, M50 1, F60 1; synthetic: M20 1, F30 2, F40 1,
    # M50 1, F70 1
    assert r.UiO == pytest.approx(100 * 4 / 6)  # F30, F40, M50, F60 unique in the real data
    assert r.UiS == pytest.approx(100 * 4 / 6)  # M20, F40, M50, F70 unique in the synthetic
    assert r.UiOiS == pytest.approx(100 * 3 / 6)  # F30, F40, M50 also in the synthetic data
    assert r.repU == pytest.approx(100 * 2 / 6)  # F40 and M50 unique in both
    # synthetic-disclosive keys: M20 (a), F40 (d), M50 (missing), F70 (b); F30 has b and c
    assert r.Dorig == pytest.approx(100.0)  # every real key has one target value
    assert r.Dsyn == pytest.approx(100 * 4 / 6)
    assert r.iS == pytest.approx(100 * 5 / 6)  # all but F60
    assert r.DiS == pytest.approx(100 * 4 / 6)  # M20 twice, F40, M50
    assert r.DiSCO == pytest.approx(100 * 3 / 6)  # M20 twice (a) and M50 (missing); F40 wrong
    assert r.DiSDiO == pytest.approx(100 * 3 / 6)
    assert r.max_denom == 2 and r.mean_denom == pytest.approx(1.5)
    assert r.baseCAPd == pytest.approx(100 * (4 + 4 + 1 + 1) / 36)  # a 2, b 2, c 1, missing 1
    assert r.CAPd == pytest.approx(100.0)
    assert r.CAPs == pytest.approx(100 * 5 / 6)  # F30 contributes 2 (1/4 + 1/4)
    assert r.DCAP == pytest.approx(100 * 3.5 / 6)  # 1 + 1 + 1/2 + 0 + 1 + 0
    assert r.TCAP == pytest.approx(100 * 3 / 5)  # DiSCO records per records found in iS
    assert r.n_real == 6 and r.keys == ("sex", "age")


def test_multi_disclosure_per_target():
    out = multi_disclosure(REAL, SYN, ["sex"])
    assert list(out.index) == ["age", "y"]
    assert out["repU"].nunique() == 1  # identity measures do not depend on the target
    assert out.loc["y", "DiSCO"] == pytest.approx(
        disclosure_measures(REAL, SYN, ["sex"], "y").DiSCO
    )


def test_grouped_numeric_target():
    real = REAL.assign(w=[1.0, 2.0, 3.0, 4.0, 5.0, -8.0])
    syn = SYN.assign(w=[1.5, 2.5, 3.5, 4.5, -8.0, -8.0])
    exact = disclosure_measures(real, syn, ["sex", "age"], "w")
    assert exact.DiSCO == 0.0  # no synthetic amount equals a real one
    grouped = disclosure_measures(
        real, syn, ["sex", "age"], "w", ngroups_target=2, missing_codes={"w": [-8]}
    )
    assert grouped.DiSCO > 0  # M20 holds the lower group in both frames


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((["sex"], "sex"), {}, ValueError, "cannot also be one of the keys"),
        (("sex", "y"), {}, TypeError, "not the string 'sex'"),
        ((["zz"], "y"), {}, ValueError, r"\['zz'\] of 'keys' are not in 'real'"),
        ((["sex", "sex"], "y"), {}, ValueError, "more than once"),
        ((["sex"], ["y"]), {}, TypeError, "one column name"),
        ((["sex"], "y"), {"ngroups_keys": 1}, ValueError, "'ngroups_keys'"),
    ],
)
def test_bad_arguments_are_named(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        disclosure_measures(REAL, SYN, *args, **kwargs)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_measures_bound_each_other(n_real, n_syn, seed):
    rng = np.random.default_rng(seed)

    def frame(n):
        return pd.DataFrame(
            {
                "k1": rng.choice(["a", "b", None], n),
                "k2": rng.integers(0, 3, n).astype(float),
                "t": rng.choice(["x", "y", None], n),
            }
        )

    real, syn = frame(n_real), frame(n_syn)
    r = disclosure_measures(real, syn, ["k1", "k2"], "t")
    for name in ("UiO", "UiS", "UiOiS", "repU", "Dorig", "Dsyn", "iS", "DiS", "DiSCO"):
        assert 0 <= getattr(r, name) <= 100 + 1e-9, name
    assert r.repU <= r.UiOiS <= r.UiO + 1e-9
    assert r.DiSDiO <= r.DiSCO <= r.DiS + 1e-9 and r.DiS <= r.iS + 1e-9
    # releasing the real data itself: every real unique is replicated, every key disclosive
    # in the real data is disclosive and correct
    same = disclosure_measures(real, real.copy(), ["k1", "k2"], "t")
    assert same.repU == pytest.approx(same.UiO)
    assert same.DiSCO == pytest.approx(same.Dorig) == pytest.approx(same.DiSDiO)
    assert same.DCAP == pytest.approx(same.CAPd) and same.CAPs == pytest.approx(same.CAPd)
