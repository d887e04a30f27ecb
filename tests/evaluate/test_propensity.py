"""Propensity-score utility with synthpop's definitions: hand values, nulls by simulation."""

import numpy as np
import pandas as pd
import pytest

from pseudopost.evaluate import propensity_utility, utility_tab

# one categorical variable: real a, a, a, b and synthetic a, b, b, b (N = 8, c = 1/2)
REAL = pd.DataFrame({"g": ["a", "a", "a", "b"]})
SYN = pd.DataFrame({"g": ["a", "b", "b", "b"]})


def test_logit_by_hand():
    r = propensity_utility(REAL, SYN, method="logit", maxorder=0)
    # a saturated model scores each level with its synthetic share: 1/4 for a, 3/4 for b,
    # so pMSE = (4 (1/4)^2 + 4 (1/4)^2) / 8 = 1/16; k - 1 = 1
    assert r.pMSE == pytest.approx(1 / 16, rel=1e-9)
    assert r.df == 1 and r.converged
    assert r.null_pMSE == pytest.approx(1 * 0.5 * 0.5 / 8)  # (k-1) c (1-c) / N
    assert r.S_pMSE == pytest.approx(2.0, rel=1e-9)
    assert r.null_pMSE_synthpop == pytest.approx(1 * 0.5**2 * 0.5 / 8)  # (k-1)(1-c)^2 c / N
    assert r.S_pMSE_synthpop == pytest.approx(4.0, rel=1e-9)
    # scores: synthetic 1/4 once and 3/4 three times; real 1/4 three times and 3/4 once
    assert r.SPECKS == pytest.approx(0.5)
    assert r.U == 1 * 1.5 + 3 * (3 + 0.5)  # pairs won plus half ties
    assert r.PO50 == pytest.approx(6 / 8 * 100 - 50)


def test_cart_by_hand_and_its_permutation_null():
    r = propensity_utility(REAL, SYN, method="cart", minbucket=1, nperms=20, seed=4)
    # minsplit 3: the root splits a from b, leaves score 1/4 and 3/4 as the logit model does
    assert r.pMSE == pytest.approx(1 / 16, rel=1e-12)
    assert r.n_splits == 1 and len(r.permutation_pMSE) == 20
    assert r.null_pMSE == pytest.approx(np.mean(r.permutation_pMSE))
    assert r.null_pMSE_synthpop == pytest.approx(r.null_pMSE / 2)  # synthpop's halved null
    assert r.S_pMSE == pytest.approx(r.pMSE / r.null_pMSE)
    assert r.S_pMSE_synthpop == pytest.approx(2 * r.S_pMSE)
    # with synthpop's minbucket 5 (minsplit 15) eight records never split: pMSE 0
    assert propensity_utility(REAL, SYN, nperms=2, seed=0).pMSE == 0.0
    same = propensity_utility(REAL, SYN, minbucket=1, nperms=20, seed=4)
    assert same.permutation_pMSE == r.permutation_pMSE  # same seed, same null


NUM_REAL = pd.DataFrame({"x": [5.0, 5, 5, 7, np.nan, np.nan]})
NUM_SYN = pd.DataFrame({"x": [5.0, 7, 7, 7, np.nan, np.nan]})
# levels 5, 7 and missing hold (3, 1), (1, 3), (2, 2) real and synthetic records: a saturated
# model scores 1/4, 3/4 and 1/2, so pMSE = (4 (1/4)^2 + 4 (1/4)^2 + 0) / 12 = 1/24, k - 1 = 2


def test_missing_numeric_cells_get_an_indicator():
    r = propensity_utility(NUM_REAL, NUM_SYN, method="logit", maxorder=0)
    assert r.variables == ("x", "x_NA")
    assert r.pMSE == pytest.approx(1 / 24, rel=1e-9) and r.df == 2
    # the interaction x * x_NA is identically 0 (aliased): still k - 1 = 2
    assert propensity_utility(NUM_REAL, NUM_SYN, method="logit", maxorder=1).df == 2
    # the same cells as categories, the missing cells a level: the same pMSE
    as_text = propensity_utility(
        NUM_REAL.astype(object).where(NUM_REAL.notna(), None),
        NUM_SYN.astype(object).where(NUM_SYN.notna(), None),
        method="logit",
        maxorder=0,
    )
    assert as_text.pMSE == pytest.approx(1 / 24, rel=1e-9) and as_text.variables == ("x",)


def test_codes_are_kept_apart_from_values():
    real, syn = NUM_REAL.fillna(-8.0), NUM_SYN.fillna(-8.0)
    r = propensity_utility(real, syn, method="logit", maxorder=0, missing_codes={"x": [-8]})
    assert r.variables == ("x", "x_cna_1")
    assert r.pMSE == pytest.approx(1 / 24, rel=1e-9) and r.df == 2
    # undeclared, -8 is an amount: a straight line in x cannot score three groups freely
    plain = propensity_utility(real, syn, method="logit", maxorder=0)
    assert plain.df == 1 and plain.pMSE < 1 / 24 - 1e-3


def test_saturated_logit_equals_the_table_pmse():
    rng = np.random.default_rng(8)
    real = pd.DataFrame({"a": rng.choice(list("xyz"), 300), "b": rng.choice(list("pq"), 300)})
    syn = pd.DataFrame(
        {"a": rng.choice(list("xyz"), 200, p=[0.5, 0.3, 0.2]), "b": rng.choice(list("pq"), 200)}
    )
    logit = propensity_utility(real, syn, method="logit", maxorder=1)  # all cells: saturated
    tab = utility_tab(real, syn, ["a", "b"]).statistics
    assert logit.pMSE == pytest.approx(tab["pMSE"], rel=1e-8)
    assert logit.df == tab["df"] == 5
    assert logit.S_pMSE_synthpop == pytest.approx(tab["S_pMSE"], rel=1e-8)


def test_constant_columns_are_dropped_and_inputs_untouched():
    real = NUM_REAL.assign(k=1.0, s="u")
    syn = NUM_SYN.assign(k=1.0, s="u")
    before = (real.copy(), syn.copy())
    r = propensity_utility(real, syn, method="logit", maxorder=0)
    assert r.dropped == ("k", "s") and r.pMSE == pytest.approx(1 / 24, rel=1e-9)
    pd.testing.assert_frame_equal(real, before[0])
    pd.testing.assert_frame_equal(syn, before[1])


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"method": "glm"}, ValueError, "'cart' or 'logit'"),
        ({"variables": "g"}, TypeError, "not the string 'g'"),
        ({"variables": ["zz"]}, ValueError, r"\['zz'\] of 'variables' are not in 'real'"),
        ({"method": "logit", "maxorder": 1}, ValueError, "must be below the number of model"),
        ({"nperms": 0}, ValueError, "'nperms'"),
        ({"cp": 2.0}, ValueError, "'cp'"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        propensity_utility(REAL, SYN, **kwargs)


def test_bad_frames_are_named():
    with pytest.raises(TypeError, match="numeric in 'real'"):
        propensity_utility(pd.DataFrame({"g": [1.0, 2.0]}), SYN)
    with pytest.raises(TypeError, match="'real' argument must be a pandas DataFrame"):
        propensity_utility(REAL.to_numpy(), SYN)
    wide_r = pd.DataFrame({c: list("abcd") for c in "uvwxyz"})
    with pytest.raises(ValueError, match="max_params"):
        propensity_utility(wide_r, wide_r, method="logit", max_params=50)


def _null_pmse(n_real, n_syn, resample, replicates, seed):
    """Mean of N pMSE / (c (1-c)) over replicates: the null expectation of k - 1 = 3 times."""
    rng = np.random.default_rng(seed)
    n, c = n_real + n_syn, n_syn / (n_real + n_syn)
    out = []
    for _ in range(replicates):
        real = pd.DataFrame(rng.normal(size=(n_real, 3)), columns=list("abc"))
        if resample:  # synthetic records drawn from the real ones (a model that fits them)
            syn = real.iloc[rng.integers(0, n_real, n_syn)].reset_index(drop=True)
        else:  # an independent sample of the same population
            syn = pd.DataFrame(rng.normal(size=(n_syn, 3)), columns=list("abc"))
        r = propensity_utility(real, syn, method="logit", maxorder=0)
        assert r.df == 3
        out.append(r.pMSE * n / (c * (1 - c)))
    out = np.asarray(out)
    return out.mean(), out.std(ddof=1) / np.sqrt(replicates)


@pytest.mark.parametrize(("n_real", "n_syn"), [(200, 200), (300, 100)])
def test_logit_null_of_two_independent_samples_is_k_minus_1_c_1_minus_c(n_real, n_syn):
    mean, se = _null_pmse(n_real, n_syn, resample=False, replicates=200, seed=n_syn)
    # E[pMSE] = (k-1) c (1-c) / N, so the scaled mean is k - 1 = 3 within Monte Carlo error;
    # synthpop's (k-1)(1-c)^2 c / N would put it at 3 (1-c) = 1.5 or 2.25, many se away
    assert abs(mean - 3) < 4 * se
    assert abs(mean - 3 * n_real / (n_real + n_syn)) > 4 * se


def test_synthpop_null_is_the_expectation_for_records_drawn_from_the_real_ones():
    mean, se = _null_pmse(200, 200, resample=True, replicates=200, seed=5)
    # variance Sigma / n_syn instead of Sigma (1/n_syn + 1/n_real): the factor 1 - c = 1/2
    assert abs(mean - 3 * 0.5) < 4 * se
    assert abs(mean - 3) > 4 * se
