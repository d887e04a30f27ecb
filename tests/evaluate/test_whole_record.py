"""Whole-record utility and risk: closed forms and hand-computed values."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pseudopost.evaluate.whole_record import (
    association_difference,
    association_matrix,
    column_utility,
    correlation_ratio,
    cramers_v,
    identification_risk_table,
    plot_association_difference,
    plot_marginals,
    total_variation,
    whole_record_utility,
)


@pytest.fixture
def frames(rng):
    n = 300
    g = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    x = rng.normal(size=n) + 2.0 * (g == "b")
    real = pd.DataFrame({"g": g, "x": x, "k": rng.poisson(3, n)})
    syn = pd.DataFrame(
        {"g": rng.choice(["a", "b", "c"], n), "x": rng.normal(size=n), "k": rng.poisson(3, n)}
    )
    return real, syn


def test_total_variation_closed_form():
    a = pd.Series(["x"] * 6 + ["y"] * 4)
    b = pd.Series(["x"] * 3 + ["y"] * 5 + ["z"] * 2)
    # |0.6-0.3| + |0.4-0.5| + |0-0.2| = 0.6 -> TV 0.3
    assert total_variation(a, b) == pytest.approx(0.3)
    assert total_variation(a, a) == 0.0


def test_cramers_v_and_correlation_ratio_by_hand():
    x = pd.Series(["a", "a", "b", "b"] * 10)
    assert cramers_v(x, x) == pytest.approx(1.0)
    y = pd.Series(["u", "v"] * 20)  # independent of x by construction
    assert cramers_v(x, y) == pytest.approx(0.0)
    g = pd.Series(["p", "p", "q", "q"])
    v = pd.Series([1.0, 3.0, 5.0, 7.0])
    # grand mean 4; between = 2*(2-4)^2 + 2*(6-4)^2 = 16; total = 9+1+1+9 = 20
    assert correlation_ratio(g, v) == pytest.approx(np.sqrt(16 / 20))


def test_association_matrix_mixed_types(frames):
    real, _ = frames
    a = association_matrix(real)
    assert list(a.index) == ["g", "x", "k"]
    np.testing.assert_allclose(np.diag(a), 1.0)
    np.testing.assert_allclose(a.to_numpy(), a.to_numpy().T)
    r = abs(stats.pearsonr(real.x, real.k)[0])
    assert a.loc["x", "k"] == pytest.approx(r)
    assert a.loc["g", "x"] == pytest.approx(correlation_ratio(real.g, real.x))
    assert a.loc["g", "x"] > 0.5  # x depends strongly on g


def test_association_difference_detects_lost_dependence(frames):
    real, syn = frames
    d = association_difference(real, syn)
    assert d.loc["g", "x"] < -0.4  # the synthetic x ignores g
    assert association_difference(real, real).abs().to_numpy().max() == 0.0


def test_column_utility_and_whole_record(frames):
    real, syn = frames
    cu = column_utility(real, syn)
    assert cu.loc["g", "kind"] == "categorical" and np.isnan(cu.loc["g", "U_m"])
    want = stats.ks_2samp(real.x, syn.x).statistic
    assert cu.loc["x", "U_m"] == pytest.approx(want)
    assert cu.loc["g", "tv"] == pytest.approx(total_variation(real.g, syn.g))
    w = whole_record_utility(real, syn, seed=0)
    same = whole_record_utility(real, real.sample(frac=1, random_state=1), seed=0)
    assert w.pmse.pmse > same.pmse.pmse  # the independent synthesizer is easier to tell apart
    assert w.mean_abs_association_difference > same.mean_abs_association_difference


def test_identification_risk_table_by_hand():
    real = pd.DataFrame({"sex": ["f", "f", "m", "m"], "y": [10.0, 20.0, 30.0, 40.0],
                         "c": ["u", "v", "u", "v"]})  # fmt: skip
    syn = pd.DataFrame({"sex": ["f", "m", "m", "m"], "y": [10.5, 20.0, 31.0, 80.0],
                        "c": ["u", "v", "v", "v"]})  # fmt: skip
    t = identification_risk_table(real, {"s": syn}, ["sex"], ["y", "c"], radius=0.1)
    ry = t[t.outcome == "y"].iloc[0]
    # y: record 0 matched only by its own row (unique); record 2 matched by its own row (31 within
    # 10 % of 30) only; records 1 and 3 unmatched by their own rows.
    assert ry.expected_match_risk == pytest.approx(2.0)
    assert ry.true_match_rate == pytest.approx(0.5)
    rc = t[t.outcome == "c"].iloc[0]
    # c (exact levels): record 0 (f,u) matched by row 0 only -> 1; record 3 (m,v) matched by rows
    # 1, 2, 3 -> 1/3; record 1 (f,v) and record 2 (m,u) not matched by their own rows.
    assert rc.expected_match_risk == pytest.approx(1 + 1 / 3)
    assert rc.true_match_rate == pytest.approx(0.25)


def test_plots_return_figures(frames):
    real, syn = frames
    fig = plot_marginals(real, {"weighted": syn, "unweighted": syn}, ncols=2)
    assert len([a for a in fig.axes if a.get_visible()]) == 3
    ax = plot_association_difference(real, syn)
    assert ax.get_title().startswith("association")


def test_bad_input(frames):
    real, syn = frames
    with pytest.raises(ValueError, match=r"Unknown column\(s\) \['nope'\]"):
        column_utility(real, syn, ["nope"])
    with pytest.raises(TypeError, match="not the string"):
        column_utility(real, syn, "x")
    with pytest.raises(ValueError, match="at least 2 rows"):
        whole_record_utility(real.iloc[:0], syn)
    with pytest.raises(TypeError, match="mapping label"):
        identification_risk_table(real, {}, ["g"], ["x"])


def test_match_risk_table_by_hand():
    from pseudopost.evaluate.whole_record import match_risk_table

    real = pd.DataFrame({"sex": ["f", "m"], "age": [30.0, 40.0]})
    syn = pd.DataFrame({"sex": ["f", "f", "m"], "age": [31.0, 30.5, 80.0]})
    t = match_risk_table(real, syn, ["sex", "age"], radius=0.1).iloc[0]
    assert t.unique_match_share == pytest.approx(2 / 3)  # rows 0, 1 match record 0 only
    assert t.singled_out_share == pytest.approx(0.5)
    assert t.matched_share == pytest.approx(0.5)
