"""Entropy-calibrated histogram release: calibration, empirical audits, statements, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pseudopost._rng import spawn_seeds
from pseudopost.mechanisms.entropy.histogram import (
    EntropyHistogram,
    count_sensitivity,
    synthetic_counts,
)
from pseudopost.mechanisms.entropy.joint import JointHistogramRelease
from pseudopost.privacy.audit import epsilon_lower_bound
from pseudopost.privacy.entropy import shannon_entropy, shannon_entropy_sensitivity
from pseudopost.privacy.noise import gaussian_epsilon, gaussian_sigma, laplace_epsilon
from pseudopost.privacy.statement import ADD_REMOVE, REPLACE_ONE

D = np.array([50.0, 30.0, 20.0])
D_REPLACE = np.array([49.0, 31.0, 20.0])  # one record moved from bin 0 to bin 1
D_REMOVE = np.array([50.0, 30.0, 19.0])  # one record of bin 2 removed


def _laplace_llr(outputs: np.ndarray, c: np.ndarray, c2: np.ndarray, b: float) -> np.ndarray:
    """Log-likelihood ratio log p_D(y) / p_D'(y) of Laplace outputs: the most powerful score."""
    return (np.abs(outputs - c2).sum(axis=1) - np.abs(outputs - c).sum(axis=1)) / b


def _runs(mech: EntropyHistogram, counts: np.ndarray, n_runs: int, seed: int) -> np.ndarray:
    return np.array([mech.release_counts(counts, seed=s).counts for s in spawn_seeds(seed, n_runs)])


def test_calibration_matches_closed_forms():
    r = EntropyHistogram(0.5, bins=3).release_counts(D, seed=1)
    assert r.scale == 4.0 and r.sensitivity == 2.0 and r.delta == 0.0 and r.n == 100
    assert r.entropy_bound == shannon_entropy_sensitivity(100)
    r = EntropyHistogram(0.5, bins=3, neighbouring="add-remove").release_counts(D, seed=1)
    assert r.scale == 2.0 and r.n is None and r.entropy_bound is None
    g = EntropyHistogram(1.0, bins=3, mechanism="gaussian", delta=1e-5).release_counts(D, seed=1)
    assert g.scale == pytest.approx(gaussian_sigma(np.sqrt(2), 1.0, 1e-5, method="analytic"))
    assert count_sensitivity("gaussian", "add-remove") == 1.0


def test_release_is_clipped_reproducible_and_leaves_input_alone():
    data = np.array([0, 0, 1, 2, 2, 2, 3])
    before = data.copy()
    mech = EntropyHistogram(0.05, bins=4)
    a, b = mech.release(data, seed=7), mech.release(data, seed=7)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert (a.counts >= 0).all() and (a.counts == 0).any()  # heavy noise: some bins clipped
    assert a.entropy == pytest.approx(shannon_entropy(a.counts))
    np.testing.assert_array_equal(data, before)
    assert not np.array_equal(a.counts, mech.release(data, seed=8).counts)


def test_numeric_binning_counts_every_record_once():
    mech = EntropyHistogram(1.0, bins=4, bounds=(0.0, 4.0))
    np.testing.assert_array_equal(mech.counts([-3.0, 0.5, 1.5, 3.9, 4.0, 99.0]), [2, 1, 0, 3])
    edges = EntropyHistogram(1.0, bins=[0.0, 1.0, 10.0])
    np.testing.assert_array_equal(edges.counts([0.2, 5.0, 7.0]), [1, 2])


def test_laplace_release_audit_replace_one():
    """Empirical audit: epsilon lower bound <= claimed 1, and the audit has power (> 0.6)."""
    mech = EntropyHistogram(1.0, bins=3)
    a, b = _runs(mech, D, 6000, 1), _runs(mech, D_REPLACE, 6000, 2)
    res = epsilon_lower_bound(
        _laplace_llr(a, D, D_REPLACE, 2.0), _laplace_llr(b, D, D_REPLACE, 2.0)
    )
    assert 0.6 < res.epsilon_lower <= 1.0


def test_audit_detects_paper_scale_under_replace_one():
    """Lap(1/eps) (Algorithm 1 line 4) claims eps=1 but leaks 2 on a replace-one pair."""
    mech = EntropyHistogram(1.0, bins=3, neighbouring="add-remove")  # scale 1
    a, b = _runs(mech, D, 6000, 3), _runs(mech, D_REPLACE, 6000, 4)
    res = epsilon_lower_bound(
        _laplace_llr(a, D, D_REPLACE, 1.0), _laplace_llr(b, D, D_REPLACE, 1.0)
    )
    assert res.epsilon_lower > 1.0
    # on an add/remove pair the same mechanism is within its claim
    a, b = _runs(mech, D, 6000, 5), _runs(mech, D_REMOVE, 6000, 6)
    res = epsilon_lower_bound(_laplace_llr(a, D, D_REMOVE, 1.0), _laplace_llr(b, D, D_REMOVE, 1.0))
    assert res.epsilon_lower <= 1.0


def test_entropy_release_audit_on_worst_pair():
    """(n, 0) -> (n-1, 1) is the worst replace-one pair for H; released H stays within eps."""
    mech = EntropyHistogram(1.0, bins=2)
    d, d2 = np.zeros(20), np.r_[np.zeros(19), 1.0]
    seeds = spawn_seeds(11, 8000)
    a = np.array([mech.release_entropy(d, seed=s).entropy for s in seeds[:4000]])
    b = np.array([mech.release_entropy(d2, seed=s).entropy for s in seeds[4000:]])
    res = epsilon_lower_bound(a, b)
    assert res.epsilon_lower <= 1.0
    r = mech.release_entropy(d2, seed=1)
    assert r.sensitivity == shannon_entropy_sensitivity(20) and r.scale == r.sensitivity
    assert 0.0 <= r.entropy <= 1.0


def test_renyi_entropy_release_uses_the_valid_bound():
    from pseudopost.privacy.entropy import renyi_entropy_sensitivity

    r = EntropyHistogram(1.0, bins=4).release_entropy([0, 1, 2, 3, 3], seed=0, order=2.0)
    assert r.sensitivity == renyi_entropy_sensitivity(5, 2.0, bins=4)


def test_gaussian_release_empirical_variance():
    mech = EntropyHistogram(1.0, bins=3, mechanism="gaussian", delta=1e-5)
    out = _runs(mech, D, 2000, 9)
    sigma = mech.release_counts(D, seed=0).scale
    # sd of 2000 draws: relative standard error ~ 1/sqrt(2 * 2000) = 1.6 %
    np.testing.assert_allclose(out.std(axis=0), sigma, rtol=0.06)
    np.testing.assert_allclose(out.mean(axis=0), D, atol=4 * sigma / np.sqrt(2000))


def test_opendp_backend_runs():
    r = EntropyHistogram(1.0, bins=3, backend="opendp").release_counts(D)
    assert r.backend == "opendp" and r.counts.shape == (3,) and (r.counts >= 0).all()
    assert np.abs(r.counts - D).max() < 40  # P(|Lap(2)| > 40) = e^-20


def test_utility_and_synthetic_counts():
    data = np.repeat(np.arange(3), D.astype(int))
    mech = EntropyHistogram(2.0, bins=3)
    rel = mech.release(data, seed=3)
    u = mech.utility(data, rel)
    assert u.entropy_original == pytest.approx(shannon_entropy(D))
    assert u.entropy_error == pytest.approx(abs(u.entropy_original - rel.entropy))
    assert u.count_mae == pytest.approx(np.mean(np.abs(D - rel.counts)))
    syn = synthetic_counts(rel, 100, seed=1)
    assert syn.sum() == 100 and np.array_equal(syn, synthetic_counts(rel, 100, seed=1))


@pytest.mark.parametrize(
    ("kwargs", "data", "match"),
    [
        ({"epsilon": 0.0, "bins": 3}, None, "'epsilon'"),
        ({"epsilon": 1.0, "bins": 0}, None, "'bins'"),
        ({"epsilon": 1.0, "bins": [1.0]}, None, "'bins'"),
        ({"epsilon": 1.0, "bins": [0.0, 2.0, 1.0]}, None, "increasing"),
        ({"epsilon": 1.0, "bins": 3, "bounds": (2.0, 1.0)}, None, "'bounds'"),
        ({"epsilon": 1.0, "bins": 3, "mechanism": "gaussian"}, None, "delta"),
        ({"epsilon": 1.0, "bins": 3, "delta": 1e-5}, None, "pure"),
        ({"epsilon": 1.0, "bins": 3, "mechanism": "exp"}, None, "'mechanism'"),
        ({"epsilon": 1.0, "bins": 3, "backend": "torch"}, None, "'backend'"),
        ({"epsilon": 1.0, "bins": 3}, [], "empty"),
        ({"epsilon": 1.0, "bins": 3}, [0, 1, 5], "category codes"),
        ({"epsilon": 1.0, "bins": 3}, [0.0, np.nan], "finite"),
        ({"epsilon": 1.0, "bins": 3}, ["a", "b"], "numeric"),
    ],
)
def test_bad_input_is_refused(kwargs, data, match):
    with pytest.raises((ValueError, TypeError), match=match):
        EntropyHistogram(**kwargs).release(data if data is not None else [0, 1], seed=0)


def test_entropy_release_refuses_add_remove():
    with pytest.raises(ValueError, match="replace-one"):
        EntropyHistogram(1.0, bins=2, neighbouring="add-remove").release_entropy([0, 1])


# --------------------------------------------------------------------------- statements
def test_release_statements_follow_the_relation_and_budget():
    r = EntropyHistogram(0.5, bins=3).release_counts(D, seed=1)
    st = r.privacy_statement
    assert (st.epsilon, st.delta, st.neighbouring) == (0.5, 0.0, REPLACE_ONE)
    assert st.scope == "global" and "n is public" in st.assumptions
    assert laplace_epsilon(r.sensitivity, r.scale) == st.epsilon  # the noise's own privacy map
    a = EntropyHistogram(0.5, bins=3, neighbouring="add-remove").release_counts(D, seed=1)
    assert a.privacy_statement.neighbouring == ADD_REMOVE
    assert "n is public" not in a.privacy_statement.assumptions
    g = EntropyHistogram(1.0, bins=3, mechanism="gaussian", delta=1e-5).release_counts(D, seed=1)
    assert (g.privacy_statement.epsilon, g.privacy_statement.delta) == (1.0, 1e-5)
    assert gaussian_epsilon(g.scale, g.sensitivity, 1e-5) == pytest.approx(1.0, rel=1e-6)
    h = EntropyHistogram(0.7, bins=2, backend="opendp").release_entropy([0, 0, 1, 1, 1])
    assert (h.privacy_statement.epsilon, h.privacy_statement.neighbouring) == (0.7, REPLACE_ONE)
    assert "Theorem 3" in h.privacy_statement.source
    assert not any("NumPy" in a for a in h.privacy_statement.assumptions)


def test_classic_gaussian_is_refused_where_the_formula_fails():
    with pytest.raises(ValueError, match="classic Gaussian calibration"):
        EntropyHistogram(20.0, bins=3, mechanism="gaussian", delta=1e-5, gaussian_method="classic")
    EntropyHistogram(20.0, bins=3, mechanism="gaussian", delta=1e-5)  # analytic: fine
    EntropyHistogram(0.9, bins=3, mechanism="gaussian", delta=1e-5, gaussian_method="classic")


# --------------------------------------------------------------------------- joint release
@pytest.fixture
def frame():
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, 400).astype(np.int16),
            "smoker": rng.random(400) < 0.3,
            "region": pd.Categorical(rng.choice(["n", "s"], 400)),
        }
    )


def test_joint_release_statement_equals_its_stages(frame):
    rel = JointHistogramRelease(
        1.0, None, ("age", "smoker", "region"), bins={"age": 4}, bounds={"age": (18, 80)},
        entropy_share=0.25,
    ).fit(frame, seed=0)  # fmt: skip
    st = rel.privacy_statement
    assert st.epsilon == sum(s["epsilon"] for s in rel.stages()) == pytest.approx(1.0)
    assert [s["epsilon"] for s in rel.stages()] == [0.75, 0.25, 0.0]
    assert st.delta == 0.0 and st.neighbouring == REPLACE_ONE
    assert any("['smoker', 'region']" in a for a in st.assumptions)  # levels read from data
    syn = rel.sample(300, seed=1)
    assert syn.dtypes.to_dict() == frame.dtypes.to_dict()
    assert syn["age"].between(18, 80).all()
    with pytest.warns(DeprecationWarning, match="rows"):
        old = rel.sample(rows=300, seed=1)
    pd.testing.assert_frame_equal(old, syn)


def test_joint_release_refuses_bad_settings_before_the_data(frame):
    with pytest.raises(ValueError, match=r"entropy_share.*replace-one"):
        JointHistogramRelease(1.0, None, ("smoker",), neighbouring="add-remove", entropy_share=0.1)
    with pytest.raises(ValueError, match="classic Gaussian calibration"):
        JointHistogramRelease(
            40.0, 1e-6, ("smoker",), noise="gaussian", calibration="classic"
        )  # fmt: skip
    rel = JointHistogramRelease(1.0, None, ("smoker", "region"))
    with pytest.raises(RuntimeError, match="not fitted"):
        rel.sample(5)
    with pytest.raises(ValueError, match=r"Unknown column.*'weight'"):
        JointHistogramRelease(1.0, None, ("weight",)).fit(frame)
    with pytest.raises(ValueError, match="'region' has 1 missing"):
        rel.fit(frame.assign(region=frame["region"].where(frame.index != 3)))
