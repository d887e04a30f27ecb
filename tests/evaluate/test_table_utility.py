"""Table utility with synthpop's definitions (utility.tab, utility.tables): hand values."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pseudopost.evaluate import TABLE_STATISTICS, utility_tab, utility_tables

# real counts d = (3, 1) and synthetic counts s = (1, 3) of levels a, b: N = 8, c = 1/2
REAL = pd.DataFrame({"g": ["a", "a", "a", "b"]})
SYN = pd.DataFrame({"g": ["a", "b", "b", "b"]})


def test_one_way_table_by_hand():
    t = utility_tab(REAL, SYN, ["g"])
    s = t.statistics
    assert list(s.index) == list(TABLE_STATISTICS)
    # e = (s + d) c = (2, 2); delta = s - d c / (1 - c) = (-2, 2)
    assert s["VW"] == pytest.approx(4 / 2 + 4 / 2)
    assert s["df"] == 1 and s["nempty"] == 0
    assert s["S_VW"] == s["S_pMSE"] == pytest.approx(4.0)
    assert s["pMSE"] == pytest.approx(4 * 0.5 * 0.25 / 8)  # VW c (1-c)^2 / N = 1/16
    assert s["FT"] == pytest.approx(4 * 2 * (np.sqrt(3) - 1) ** 2)
    # shares (3/4, 1/4) and (1/4, 3/4) around their mean (1/2, 1/2)
    assert s["JSD"] == pytest.approx(0.75 * np.log2(1.5) - 0.25)
    assert s["S_JSD"] == pytest.approx(s["JSD"] * 2 * 8 / 1 / np.log(2))
    assert s["G"] == pytest.approx(2 * (1 * np.log(1 / 3) + 3 * np.log(3)))
    assert s["dfG"] == 1
    # cell scores s / (s + d) = (1/4, 3/4), as the saturated propensity model
    assert s["SPECKS"] == pytest.approx(0.5)
    assert s["U"] == 1 * 1.5 + 3 * 3.5
    assert s["PO50"] == pytest.approx(6 / 8 * 100 - 50)
    assert s["MabsDD"] == pytest.approx(4 / 4)
    assert s["WMabsDD"] == pytest.approx(2 * np.sqrt(np.pi))
    assert s["S_WMabsDD"] == pytest.approx(2 * np.sqrt(np.pi))
    assert s["dBhatt"] == pytest.approx(np.sqrt(1 - np.sqrt(3) / 2))
    assert t.table_real.tolist() == [3, 1] and t.table_synthetic.tolist() == [1, 3]


def test_missing_cells_and_codes_are_categories():
    real = pd.DataFrame({"x": [1.0, 2.0, -8.0, np.nan, 3.0], "g": ["u", None, "u", "v", ""]})
    syn = pd.DataFrame({"x": [2.0, -8.0, -8.0, 1.0, 3.0], "g": ["u", "v", "v", None, "u"]})
    t = utility_tab(real, syn, ["x"], missing_codes={"x": [-8]})
    # three distinct amounts (a group each), the code -8 and the missing level
    assert list(t.table_real.index)[3:] == ["-8", "NA"]
    assert t.table_real.tolist() == [1, 1, 1, 1, 1]
    assert t.table_synthetic.tolist() == [1, 1, 1, 2, 0]
    g = utility_tab(real, syn, ["g"])
    assert list(g.table_real.index) == ["u", "v", "NA"]  # None and "" are both missing
    assert g.table_real.tolist() == [2, 1, 2] and g.table_synthetic.tolist() == [2, 2, 1]
    two = utility_tab(real, syn, ["x", "g"], missing_codes={"x": [-8]})
    assert two.table_real.sum() == 5 and two.statistics["nempty"] == 15 - 9


def test_identical_frames_have_no_difference():
    rng = np.random.default_rng(2)
    real = pd.DataFrame({"x": rng.normal(size=200), "g": rng.choice(list("abc"), 200)})
    s = utility_tab(real, real.copy(), ["x", "g"]).statistics
    for name in ("VW", "FT", "JSD", "G", "pMSE", "MabsDD", "WMabsDD", "SPECKS", "dBhatt"):
        assert s[name] == pytest.approx(0.0, abs=1e-12), name
    assert s["PO50"] == pytest.approx(0.0, abs=1e-9)


def test_utility_tables_runs_over_every_pair():
    rng = np.random.default_rng(3)
    real = pd.DataFrame(
        {"x": rng.normal(size=100), "g": rng.choice(list("ab"), 100), "h": rng.integers(0, 3, 100)}
    )
    syn = real.sample(frac=1.0, replace=True, random_state=1).reset_index(drop=True)
    two = utility_tables(real, syn)
    assert list(two.index) == ["x:g", "x:h", "g:h"]
    assert list(two.columns) == list(TABLE_STATISTICS)
    assert two.loc["g:h", "S_pMSE"] == pytest.approx(
        utility_tab(real, syn, ["g", "h"]).statistics["S_pMSE"]
    )
    one = utility_tables(real, syn, tables="oneway")
    assert list(one.index) == ["x", "g", "h"] and one["df"].dtype == np.int64
    assert list(utility_tables(real, syn, tables="threeway").index) == ["x:g:h"]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: utility_tab(REAL, SYN, "g"), TypeError, "not the string 'g'"),
        (lambda: utility_tab(REAL, SYN, ["g"], ngroups=1), ValueError, "'ngroups'"),
        (lambda: utility_tables(REAL, SYN, tables="four"), ValueError, "'oneway', 'twoway'"),
        (lambda: utility_tables(REAL, SYN), ValueError, "at least 2 variables"),
        (lambda: utility_tab(REAL, SYN, ["g"], max_table=1), ValueError, "max_table"),
    ],
)
def test_bad_arguments_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=30),
    st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=30),
)
def test_vw_is_pearson_chi_square_over_one_minus_c(xs, ys):
    real, syn = pd.DataFrame({"g": xs}), pd.DataFrame({"g": ys})
    s = utility_tab(real, syn, ["g"]).statistics
    t = utility_tab(real, syn, ["g"])
    d = t.table_real.to_numpy(float)
    y = t.table_synthetic.to_numpy(float)
    keep = d + y > 0
    table = np.vstack([y[keep], d[keep]])
    n, c = table.sum(), y.sum() / table.sum()
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = float(np.sum((table - expected) ** 2 / expected))
    assert s["VW"] == pytest.approx(chi2 / (1 - c), rel=1e-9, abs=1e-12)
    assert s["pMSE"] >= 0 and 0 <= s["SPECKS"] <= 1 and -50 <= s["PO50"] <= 50
