"""Utility measures: ECDF U_m / U_a, pMSE, estimates with intervals, CI overlap."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pseudopost.evaluate.utility import (
    ci_overlap,
    ecdf_utility,
    estimate_summary,
    interval_overlap,
    pmse,
    pmse_result,
)


def mixed_frame(n, seed, shift=0.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n) + shift
    z = rng.normal(size=n)
    g = rng.choice(["a", "b", "c"], n)
    y = 1.0 + 2.0 * x - 0.5 * z + rng.normal(size=n)
    return pd.DataFrame({"x": x, "z": z, "g": g, "y": y})


# ------------------------------------------------------------------------------------ ECDF


def test_ecdf_hand_example_with_a_tie():
    real = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    syn = pd.DataFrame({"a": [2.0, 4.0]})
    # merged records z = 1, 2, 3, 2, 4
    # F_orig(z) = 1/3, 2/3, 1,   2/3, 1
    # F_syn(z)  = 0,   1/2, 1/2, 1/2, 1
    # diff      = 1/3, 1/6, 1/2, 1/6, 0
    # U_m = 1/2; U_a = (4/36 + 1/36 + 9/36 + 1/36 + 0) / 5 = (15/36) / 5 = 1/12
    out = ecdf_utility(real, syn)
    assert list(out.index) == ["a"]
    assert out.loc["a", "U_m"] == pytest.approx(1 / 2)
    assert out.loc["a", "U_a"] == pytest.approx(1 / 12)


def test_ecdf_hand_example_disjoint_and_two_columns():
    real = pd.DataFrame({"a": [0.0, 1.0], "b": [5.0, 6.0]})
    syn = pd.DataFrame({"a": [2.0, 3.0], "b": [6.0, 5.0]})
    # column a: merged z = 0, 1, 2, 3
    #   F_orig = 1/2, 1, 1, 1;  F_syn = 0, 0, 1/2, 1;  diff = 1/2, 1, 1/2, 0
    #   U_m = 1;  U_a = (1/4 + 1 + 1/4 + 0) / 4 = 3/8
    # column b: the same values in another order, so both ECDFs agree: U_m = U_a = 0
    out = ecdf_utility(real, syn, columns=["a", "b"])
    assert out.loc["a"].tolist() == pytest.approx([1.0, 3 / 8])
    assert out.loc["b"].tolist() == pytest.approx([0.0, 0.0])


def test_ecdf_identical_is_zero_and_shift_is_larger():
    real = mixed_frame(300, 1)
    same = ecdf_utility(real, real.copy())
    assert (same[["U_m", "U_a"]].to_numpy() == 0).all()
    assert list(same.index) == ["x", "z", "y"]  # categorical 'g' skipped by default
    base = ecdf_utility(real, mixed_frame(300, 2), ["x"])
    shifted = ecdf_utility(real, mixed_frame(300, 2, shift=1.0), ["x"])
    assert shifted.loc["x", "U_m"] > base.loc["x", "U_m"] + 0.2
    assert shifted.loc["x", "U_a"] > 5 * base.loc["x", "U_a"]


@pytest.mark.filterwarnings("ignore:ks_2samp. Exact calculation:RuntimeWarning")  # p-value only
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(-5, 5), min_size=1, max_size=15),
    st.lists(st.integers(-5, 5), min_size=1, max_size=15),
)
def test_ecdf_bounds_symmetry_and_ks(xs, ys):
    real = pd.DataFrame({"v": np.asarray(xs, dtype=float)})
    syn = pd.DataFrame({"v": np.asarray(ys, dtype=float)})
    u_m, u_a = ecdf_utility(real, syn).loc["v"]
    assert 0 <= u_a <= u_m**2 + 1e-12 and u_m <= 1
    assert ecdf_utility(syn, real).loc["v"].tolist() == pytest.approx([u_m, u_a])
    assert u_m == pytest.approx(stats.ks_2samp(xs, ys).statistic)


# ------------------------------------------------------------------------------------ pMSE


def test_pmse_about_its_null_for_the_same_distribution():
    # 20 pairs from one distribution; k = 1 + x + z + y + 2 levels of g = 6 parameters.
    # Each ratio is about chi2_5 / 5 (sd 0.63); the mean of 20 has sd 0.14.
    res = [pmse_result(mixed_frame(300, 2 * r), mixed_frame(300, 2 * r + 1)) for r in range(20)]
    assert {r.n_parameters for r in res} == {6}
    assert res[0].null_mean == pytest.approx(5 * 0.5 * 0.5 / 600)
    assert np.mean([r.ratio for r in res]) == pytest.approx(1.0, abs=0.45)
    assert max(r.pmse for r in res) < 0.02


def test_pmse_larger_for_shifted_data_and_bounded():
    real = mixed_frame(300, 3)
    near = pmse(real, mixed_frame(300, 4), seed=0)
    far = pmse_result(real, mixed_frame(300, 4, shift=1.0))
    assert far.pmse > 10 * near
    assert far.standardized > 10
    assert 0 <= near < far.pmse <= far.c * (1 - far.c)


def test_pmse_permutation_null_agrees_with_the_formula():
    real, syn = mixed_frame(200, 5), mixed_frame(400, 6)
    asym = pmse_result(real, syn)
    perm = pmse_result(real, syn, n_permutations=20, seed=1)
    assert perm.pmse == asym.pmse and perm.null_method == "permutation"
    assert asym.c == pytest.approx(2 / 3)
    assert perm.null_mean == pytest.approx(asym.null_mean, rel=0.5)
    again = pmse_result(real, syn, n_permutations=20, seed=1)
    assert again == perm  # seeded permutations reproduce


def test_pmse_column_subset_and_unbalanced_sizes():
    real, syn = mixed_frame(150, 7), mixed_frame(450, 8)
    res = pmse_result(real, syn, ["g"])
    assert res.n_parameters == 3  # intercept + 2 free levels of g
    assert res.n_real == 150 and res.n_synthetic == 450


# ------------------------------------------------------------------------------------ estimates


def test_estimate_summary_hand_values():
    real = pd.DataFrame({"v": np.arange(1.0, 11.0)})  # 1, ..., 10
    syn = pd.DataFrame({"v": [1.0, 2.0, 3.0, 4.0, 5.0]})
    out = estimate_summary(real, syn, "v", level=0.9).set_index(["dataset", "statistic"])
    # median of 1..10 at level 0.9: B ~ Bin(10, 0.5); l = ppf(0.05) = 2 (cdf(1) = 0.0107,
    # cdf(2) = 0.0547); u = ppf(0.95) + 1 = 8 + 1 = 9 (cdf(7) = 0.9453, cdf(8) = 0.9893);
    # interval [x_(2), x_(9)] = [2, 9], coverage cdf(8) - cdf(1) = 0.9893 - 0.0107 = 0.9785
    med = out.loc[("real", "median")]
    assert (med.estimate, med.lower, med.upper) == (5.5, 2.0, 9.0)
    assert med.coverage == pytest.approx(1002 / 1024)
    # mean of 1..5 = 3, s^2 = 10/4 = 2.5, se = sqrt(2.5 / 5) = 0.70711, t_{4, 0.95} = 2.13185
    # half width 1.50744
    mean = out.loc[("synthetic", "mean")]
    assert mean.estimate == 3.0
    assert [mean.lower, mean.upper] == pytest.approx([3 - 1.50744, 3 + 1.50744], abs=1e-5)
    assert mean.coverage == 0.9 and mean.n == 5
    assert list(out.index.get_level_values("statistic")[:3]) == ["mean", "median", "q90"]


def test_estimate_summary_coverage_in_simulation():
    # 200 repetitions x 2 datasets = 400 intervals per statistic from N(0, 1), n = 60.
    # Expected rate p: level for the t interval, the exact binomial coverage for quantiles.
    # Tolerance: 4 binomial standard deviations, 4 * sqrt(p (1 - p) / 400) (about 0.044).
    rng = np.random.default_rng(11)
    truth = {"mean": 0.0, "median": 0.0, "q90": stats.norm.ppf(0.9)}
    hits = {k: 0 for k in truth}
    expected = {}
    for _ in range(200):
        real = pd.DataFrame({"v": rng.normal(size=60)})
        syn = pd.DataFrame({"v": rng.normal(size=60)})
        out = estimate_summary(real, syn, "v")
        for row in out.itertuples():
            hits[row.statistic] += row.lower <= truth[row.statistic] <= row.upper
            expected[row.statistic] = row.coverage
    for k, p in expected.items():
        assert p >= 0.95
        assert hits[k] / 400 == pytest.approx(p, abs=4 * np.sqrt(p * (1 - p) / 400)), k


def test_estimate_summary_reports_undercoverage_for_small_samples():
    # n = 20, q = 0.9: u = ppf(0.975; 20, 0.9) + 1 = 21 > n, clipped to 20 -> below level
    x = pd.DataFrame({"v": np.linspace(0, 1, 20)})
    out = estimate_summary(x, x, "v").set_index(["dataset", "statistic"])
    row = out.loc[("real", "q90")]
    assert row.upper == 1.0 and row.coverage < 0.95


# ------------------------------------------------------------------------------------ CI overlap


def test_interval_overlap_hand_values():
    # [0, 2] vs [1, 4]: common = min(2, 4) - max(0, 1) = 1; IO = (1/2 + 1/3) / 2 = 5/12
    assert interval_overlap(0, 2, 1, 4) == pytest.approx(5 / 12)
    # [0, 4] contains [1, 2]: common = 1; IO = (1/4 + 1/1) / 2 = 5/8
    assert interval_overlap(0, 4, 1, 2) == pytest.approx(5 / 8)
    # disjoint [0, 1] vs [2, 3]: common = 1 - 2 = -1; IO = (-1/1 + -1/1) / 2 = -1 (negative)
    assert interval_overlap(0, 1, 2, 3) == pytest.approx(-1.0)
    vec = interval_overlap([0, 0, 0], [2, 4, 1], [1, 1, 2], [4, 2, 3])
    assert vec == pytest.approx([5 / 12, 5 / 8, -1.0])
    assert interval_overlap(1.5, 2.5, 1.5, 2.5) == 1.0


def test_ci_overlap_identical_data_is_one():
    real = mixed_frame(200, 9)
    out = ci_overlap(real, real.copy(), "y", ["x", "z"])
    assert list(out.index) == ["const", "x", "z"]
    assert out["overlap"].to_numpy() == pytest.approx(1.0)


def test_ci_overlap_matches_a_direct_fit_and_the_formula():
    real, syn = mixed_frame(200, 9), mixed_frame(150, 10, shift=0.3)
    syn["y"] = np.exp(syn["y"] / 4)
    real["y"] = np.exp(real["y"] / 4)
    out = ci_overlap(real, syn, "y", ["x"], level=0.9, log_outcome=True)
    cis = []
    for frame in (real, syn):
        fit = sm.OLS(np.log(frame["y"]), sm.add_constant(frame[["x"]])).fit()
        cis.append(np.asarray(fit.conf_int(alpha=0.1)))
        est = fit.params.to_numpy()
    (lo_o, hi_o), (lo_s, hi_s) = cis[0][1], cis[1][1]
    common = min(hi_o, hi_s) - max(lo_o, lo_s)
    expected = 0.5 * (common / (hi_o - lo_o) + common / (hi_s - lo_s))
    assert out.loc["x", "overlap"] == pytest.approx(expected)
    assert out["estimate_synthetic"].to_numpy() == pytest.approx(est)
    assert out.loc["x", ["lower_real", "upper_real"]].tolist() == pytest.approx([lo_o, hi_o])


def test_ci_overlap_negative_when_intervals_are_apart():
    real = mixed_frame(300, 12)
    syn = real.assign(y=real["y"] + 3 * real["x"])  # slope 2 -> 5
    assert ci_overlap(real, syn, "y", ["x"]).loc["x", "overlap"] < 0


# ------------------------------------------------------------------------------------ errors


@pytest.fixture
def pair():
    return mixed_frame(30, 13), mixed_frame(30, 14)


def test_bad_input_raises_clear_errors(pair):
    real, syn = pair
    empty = real.iloc[:0]
    with pytest.raises(ValueError, match=r"Unknown column\(s\) \['w'\] in 'synthetic'"):
        ecdf_utility(real.assign(w=1.0), syn, ["w"])
    with pytest.raises(TypeError, match="Column 'g' must be numeric"):
        ecdf_utility(real, syn, ["g"])
    with pytest.raises(ValueError, match="'real' DataFrame must have at least 1 rows"):
        ecdf_utility(empty, syn)
    with pytest.raises(TypeError, match="'synthetic' argument must be a pandas DataFrame"):
        pmse(real, syn.to_numpy())
    with pytest.raises(ValueError, match="'synthetic' DataFrame must have at least 1 rows"):
        pmse(real, empty)
    with pytest.raises(ValueError, match=r"Unknown column\(s\) \['nope'\]"):
        pmse(real, syn, ["nope"])
    with pytest.raises(TypeError, match="Column 'x' must be numeric"):
        pmse(real, syn.assign(x=syn["x"].astype(str)))
    with pytest.raises(ValueError, match="'n_permutations' parameter must be an integer >= 0"):
        pmse_result(real, syn, n_permutations=-1)
    for level in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"'level' parameter must be in the interval \(0"):
            estimate_summary(real, syn, "x", level=level)
        with pytest.raises(ValueError, match=r"'level' parameter must be in the interval \(0"):
            ci_overlap(real, syn, "y", ["x"], level=level)
    with pytest.raises(ValueError, match="'quantiles' parameter must be in the interval"):
        estimate_summary(real, syn, "x", quantiles=(0.5, 1.0))
    with pytest.raises(TypeError, match="Column 'g' must be numeric"):
        estimate_summary(real, syn, "g")
    with pytest.raises(ValueError, match="'synthetic' DataFrame must have at least 2 rows"):
        estimate_summary(real, syn.iloc[:1], "x")
    with pytest.raises(ValueError, match="must hold finite values"):
        estimate_summary(real, syn.assign(x=np.nan), "x")
    with pytest.raises(TypeError, match="Column 'g' must be numeric"):
        ci_overlap(real, syn, "y", ["x", "g"])
    with pytest.raises(ValueError, match=r"Unknown column\(s\) \['q'\] in 'real'"):
        ci_overlap(real, syn, "q", ["x"])
    with pytest.raises(TypeError, match="sequence of column names, not the string 'x'"):
        ci_overlap(real, syn, "y", "x")
    with pytest.raises(ValueError, match="log_outcome=True needs 'y' > 0 in 'real'"):
        ci_overlap(real, syn, "y", ["x"], log_outcome=True)
    with pytest.raises(ValueError, match="rank deficient"):
        ci_overlap(real, syn.assign(x=1.0), "y", ["x"])
    with pytest.raises(ValueError, match=r"real intervals must be finite with lower < upper"):
        interval_overlap(2, 1, 0, 1)


def test_inputs_are_not_modified(pair):
    real, syn = pair
    before = real.copy(), syn.copy()
    ecdf_utility(real, syn)
    pmse_result(real, syn, n_permutations=2, seed=0)
    estimate_summary(real, syn, "x")
    ci_overlap(real, syn, "y", ["x", "z"])
    pd.testing.assert_frame_equal(real, before[0])
    pd.testing.assert_frame_equal(syn, before[1])
