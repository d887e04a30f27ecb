"""REPS release: Lemma 1, the Stage-2 audit, the release contract, baselines and the sim check."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pseudopost.evaluate import run_attacks
from pseudopost.mechanisms.reps.accounting import synthesis_sigma
from pseudopost.mechanisms.reps.baselines import METHODS, make_method
from pseudopost.mechanisms.reps.core import REPS, release_weighted_statistics
from pseudopost.mechanisms.reps.data import (
    load_adult,
    simulate_outliers,
    split_train_validation_test,
)
from pseudopost.mechanisms.reps.gaussian_nb import NaiveBayesSchema, weighted_clipped_mean
from pseudopost.privacy.audit import epsilon_lower_bound
from pseudopost.privacy.noise import gaussian_delta, gaussian_sigma
from pseudopost.privacy.statement import REPLACE_WITH_NULL


@pytest.fixture(scope="module")
def sim():
    return simulate_outliers(800, seed=11).frame


# ---------------------------------------------------------------- Lemma 1 (property-based)
@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 12).flatmap(
        lambda n: st.tuples(
            arrays(float, (n, 4), elements=st.floats(-50, 50)),
            arrays(float, n, elements=st.floats(0, 1)),
            arrays(np.int64, n, elements=st.integers(0, 2)),
        )
    ),
    st.floats(0.01, 20),
)
def test_lemma1_influence_bound_record_by_record(data, clip):
    u, w, y = data
    n = u.shape[0]
    full = weighted_clipped_mean(u, y, w, clip, 3)
    for i in range(n):
        null = u.copy()
        null[i] = 0.0  # D^(-i): z_i replaced by the null record, phi(null) = 0
        diff = np.linalg.norm(full - weighted_clipped_mean(null, y, w, clip, 3))
        assert diff <= w[i] * clip / n * (1 + 1e-9) + 1e-12  # Lemma 1
        exact = w[i] * min(np.linalg.norm(u[i]), clip) / n
        assert diff == pytest.approx(exact, rel=1e-9, abs=1e-12)


# ---------------------------------------------------------------- Stage-2 empirical audit
def _stage2_scores(u, y, w, clip, sigma, target, runs, offset):
    base = weighted_clipped_mean(u, y, w, clip, 2)
    diff = base - weighted_clipped_mean(_null(u, target), y, w, clip, 2)
    direction = diff.ravel() / np.linalg.norm(diff)
    out = {}
    for name, uu in (("d", u), ("n", _null(u, target))):
        out[name] = np.array(
            [
                release_weighted_statistics(uu, y, w, clip=clip, sigma=sigma, n_classes=2,
                                            seed=offset + 2 * r + (name == "n")).ravel()
                @ direction
                for r in range(runs)
            ]
        )  # fmt: skip
    return out["d"], out["n"]


def _null(u, i):
    v = u.copy()
    v[i] = 0.0
    return v


def test_stage2_release_passes_an_empirical_dp_audit(sim):
    schema = NaiveBayesSchema.from_frame(sim.iloc[:60], "y", [f"x{j}" for j in range(1, 7)],
                                         ["cat1", "cat2", "cat3"])  # fmt: skip
    u, y = schema.encode(sim.iloc[:60])
    n, clip, eps_t, delta_t = len(u), schema.max_norm, 2.0, 1e-5
    sigma = synthesis_sigma(n, clip, eps_t, delta_t)
    w = np.ones(n)
    target = int(np.argmax(np.linalg.norm(u, axis=1)))  # the largest contribution
    sd, sn = _stage2_scores(u, y, w, clip, sigma, target, 3000, 0)
    res = epsilon_lower_bound(sd, sn, delta=delta_t)
    assert 0.0 < res.epsilon_lower <= eps_t
    # a down-weighted record (w = 0.25) is audited against its own Corollary 2 bound
    w2 = w.copy()
    w2[target] = 0.25
    sd, sn = _stage2_scores(u, y, w2, clip, sigma, target, 3000, 10_000)
    assert epsilon_lower_bound(sd, sn, delta=delta_t).epsilon_lower <= 0.25 * eps_t
    # the audit has teeth: a tenth of the noise is caught exceeding the claim
    sd, sn = _stage2_scores(u, y, w, clip, sigma / 10, target, 3000, 20_000)
    assert epsilon_lower_bound(sd, sn, delta=delta_t).epsilon_lower > eps_t


# ---------------------------------------------------------------- release contract
def test_fit_sample_and_privacy_figures(sim):
    before = sim.copy()
    reps = REPS(epsilon=2.0, seed=3).fit(sim, label="y")
    pd.testing.assert_frame_equal(sim, before)
    rel = reps.release_
    n = len(sim)
    assert reps.epsilon_ == pytest.approx(2.0) and reps.delta_ == pytest.approx(1 / n**2)
    assert (rel.budget.epsilon_s, rel.budget.epsilon_t) == pytest.approx((0.2, 1.8))
    w = reps.weights_
    assert ((w > 0) & (w <= 1)).all() and (w < 1).any()
    root = np.sqrt(2 * np.log(1.25 / rel.budget.delta_t))
    expected = 0.2 + w * rel.clip * root / (n * rel.sigma)  # Corollaries 1 and 2
    assert reps.per_instance_epsilon_ == pytest.approx(expected, rel=1e-12)
    assert reps.per_instance_epsilon_.max() <= reps.epsilon_ + 1e-12
    # high scores, lower epsilon: the risk-equalizing direction
    hi = reps.scores_ > rel.threshold
    assert reps.per_instance_epsilon_[hi].max() < reps.per_instance_epsilon_[~hi].min()
    syn = reps.sample(500)
    assert list(syn.columns) == list(sim.columns) and len(syn) == 500
    assert set(syn["cat1"]) <= set(rel.schema.levels[0])
    assert syn["x1"].dtype.kind == "f" and set(syn["y"]) <= {"0", "1"}
    assert rel.noisy_statistics.shape == (2, rel.schema.width)


def test_same_seed_same_release(sim):
    a = REPS(epsilon=1.0, seed=7).fit(sim, label="y")
    b = REPS(epsilon=1.0, seed=7).fit(sim, label="y")
    c = REPS(epsilon=1.0, seed=8).fit(sim, label="y")
    assert np.array_equal(a.release_.noisy_statistics, b.release_.noisy_statistics)
    pd.testing.assert_frame_equal(a.sample(50), b.sample(50))
    assert not np.array_equal(a.release_.noisy_statistics, c.release_.noisy_statistics)


def test_noise_free_limit_recovers_naive_bayes_moments(sim):
    np_model = make_method("non_private", 1.0).fit(sim, "y").model_
    frac = (sim["y"] == "1").mean()
    assert np_model.class_prob == pytest.approx([1 - frac, frac])
    s = np_model.schema
    ones = sim[sim["y"] == "1"]
    z = np.clip((ones["x2"] - s.centre[1]) / s.scale[1], -3, 3)
    assert np_model.mean[1, 1] == pytest.approx(z.mean())
    assert np_model.var[1, 1] == pytest.approx(z.var(ddof=0))
    p_cat = ones["cat2"].value_counts(normalize=True).reindex(s.levels[1], fill_value=0)
    assert np_model.category_prob[1][1] == pytest.approx(p_cat.to_numpy())


def test_targeted_map_caps_the_high_risk_set(sim):
    reps = REPS(epsilon=2.0, weight_map="targeted", epsilon_out=0.3, seed=1).fit(sim, "y")
    hi = reps.scores_ > reps.release_.threshold
    assert hi.any()
    assert reps.per_instance_epsilon_[hi] == pytest.approx(0.2 + 0.3)  # Corollary 1 + Prop 1
    assert reps.per_instance_epsilon_[~hi] == pytest.approx(2.0)
    assert reps.release_.threshold_epsilon == pytest.approx(0.5 * 0.2)
    assert reps.release_.rarity.epsilon == pytest.approx(0.5 * 0.2)  # Stage 1 sums to eps_s


def test_baselines_and_ablations(sim):
    fitted = {m: make_method(m, 2.0, seed=4).fit(sim, "y") for m in METHODS}
    for m, est in fitted.items():
        assert len(est.sample(20)) == 20, m
    assert fitted["dp_uniform"].release_.budget.epsilon_t == pytest.approx(2.0)
    assert fitted["dp_uniform_split"].release_.budget.epsilon_t == pytest.approx(1.8)
    reps, shuf = fitted["reps"], fitted["random_downweight"]
    assert np.sort(shuf.weights_) == pytest.approx(np.sort(reps.weights_))  # same weights
    assert not np.array_equal(shuf.weights_, reps.weights_)  # different records
    hard = fitted["hard_removal"]
    assert set(np.unique(hard.weights_)) <= {0.0, 1.0}
    assert np.array_equal(hard.weights_ == 0, hard.scores_ > hard.release_.threshold)
    # sigma is set by the global sensitivity C/n only: equal for all split-budget methods
    assert hard.release_.sigma == pytest.approx(fitted["dp_uniform_split"].release_.sigma)


def test_empirical_threshold_option_uses_training_percentile(sim):
    reps = REPS(epsilon=2.0, threshold="empirical", seed=2).fit(sim, "y")
    assert reps.release_.threshold == pytest.approx(np.percentile(reps.scores_, 90))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": 1.0, "delta": 1.0}, "delta"),
        ({"epsilon": 1.0, "delta": 0.0}, "delta"),
        ({"epsilon": 1.0, "clip": 0.0}, "clip"),
        ({"epsilon": 1.0, "weight_map": "magic"}, "weight_map"),
        ({"epsilon": 1.0, "scoring_share": 0.0}, "scoring_share"),
        ({"epsilon": 1.0, "weight_map": "targeted"}, "epsilon_out"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        REPS(**kwargs)


def test_bad_frames(sim):
    bad = sim.copy()
    bad.loc[5, "x3"] = np.nan
    with pytest.raises(ValueError, match="x3"):
        REPS(1.0).fit(bad, "y")
    with pytest.raises(ValueError, match="at least 2 classes"):
        REPS(1.0).fit(sim.assign(y="1"), "y")
    with pytest.raises(ValueError, match="nope"):
        REPS(1.0).fit(sim, "nope")
    with pytest.raises(ValueError, match="nope"):
        REPS(1.0).fit(sim, "y", features=["x1", "nope"])
    with pytest.raises(TypeError, match="DataFrame"):
        REPS(1.0).fit(sim.to_numpy(), "y")
    with pytest.raises(RuntimeError, match="fit"):
        REPS(1.0).sample(3)


# ---------------------------------------------------------------- data
def test_adult_and_simulator_match_the_paper():
    adult = load_adult()
    assert adult.frame.shape == (45_222, 15)  # section 7.2
    assert len(adult.numeric) == 6 and len(adult.categorical) == 8
    task = simulate_outliers(6000, seed=0)
    assert task.is_outlier.sum() == 120
    rare = task.frame["cat1"].isin(["Z"]) | task.frame["cat3"].isin(["R"])
    assert np.array_equal(rare.to_numpy(), task.is_outlier)
    tr, va, te = split_train_validation_test(task.frame, "y", seed=0)
    assert (len(tr), len(va), len(te)) == (3360, 840, 1800)


# ---------------------------------------------------------------- the paper's main claim
def test_reps_lowers_top_decile_advantage_on_simulated_data():
    """Section 7.6 Q1 at eps = 4: mean over 12 fixed seeds, both attacks (n = 3000)."""
    top = {"dp_uniform": [], "reps": []}
    for seed in range(12):
        task = simulate_outliers(3000, seed=1000 + seed)
        tr, _, te = split_train_validation_test(task.frame, "y", seed=seed)
        for m in top:
            syn = make_method(m, 4.0, gamma=4.0, seed=seed).fit(tr, "y").sample(len(tr))
            res = run_attacks(tr, te, syn)
            top[m].append(np.mean([r.top_decile_advantage for r in res.values()]))
    assert np.mean(top["reps"]) < np.mean(top["dp_uniform"])


def test_cap_map_and_public_threshold(sim):
    reps = REPS(epsilon=2.0, weight_map="cap", threshold=6.0, seed=0).fit(sim, "y")
    s = reps.scores_
    assert reps.release_.threshold == 6.0 and reps.release_.threshold_epsilon == 0.0
    assert reps.weights_ == pytest.approx(np.minimum(1.0, 6.0 / (s + 6.0)))  # tau = t
    assert reps.release_.rarity.epsilon == pytest.approx(0.2)  # all of eps_s on histograms


def test_opendp_backend_records_itself(sim):
    reps = REPS(epsilon=2.0, noise_backend="opendp", seed=0).fit(sim, "y")
    assert reps.release_.backend == "opendp" and reps.release_.rarity.backend == "opendp"
    assert np.isfinite(reps.release_.noisy_statistics).all()
    assert len(reps.sample(10)) == 10


# ---------------------------------------------------------------- privacy statement
def test_privacy_statement_scope_follows_lemma_1(sim):
    reps = REPS(epsilon=2.0, seed=3).fit(sim, "y")
    st = reps.privacy_statement
    assert (st.epsilon, st.delta) == (reps.epsilon_, reps.delta_)
    assert (st.mechanism, st.scope, st.unit) == ("reps", "global", "release")
    assert st.neighbouring == REPLACE_WITH_NULL and "n is public" in st.assumptions
    assert any("standardisation" in a and "x1" in a for a in st.assumptions)
    assert any("'cat1'" in a and "'y'" in a for a in st.assumptions)
    # scaling and levels declared public: nothing read from the data is left to assume
    num = [f"x{j}" for j in range(1, 7)]
    public = REPS(
        epsilon=2.0,
        scaling={c: (0.0, 1.5) for c in num},
        categories={c: sorted(sim[c].unique()) for c in ("cat1", "cat2", "cat3", "y")},
        noise_backend="opendp",
        seed=3,
    ).fit(sim, "y")
    assert public.privacy_statement.assumptions == ("n is public",)
    # the raw training percentile makes every weight depend on every record: not Lemma 1
    emp = REPS(epsilon=2.0, threshold="empirical", seed=2).fit(sim, "y").privacy_statement
    assert emp.scope == "global given the weights" and not emp.is_global
    assert any("threshold='empirical'" in a for a in emp.assumptions)
    fixed = REPS(epsilon=2.0, threshold=6.0, seed=0).fit(sim, "y").privacy_statement
    assert fixed.scope == "global" and any("t = 6 is public" in a for a in fixed.assumptions)


def test_ablation_statements(sim):
    shuf = make_method("random_downweight", 2.0, seed=4).fit(sim, "y").privacy_statement
    assert shuf.scope == "global given the weights" and shuf.mechanism == "reps/random_downweight"
    assert any("2C/n" in a for a in shuf.assumptions)
    hard = make_method("hard_removal", 2.0, seed=4).fit(sim, "y")
    assert hard.privacy_statement.scope == "global"
    assert hard.privacy_statement.epsilon == hard.epsilon_ == pytest.approx(2.0)
    uni = make_method("dp_uniform", 2.0, seed=4).fit(sim, "y").privacy_statement
    assert (uni.scope, uni.epsilon) == ("global", 2.0)
    with pytest.raises(RuntimeError, match=r"NonPrivateNaiveBayes.*no privacy guarantee"):
        _ = make_method("non_private", 2.0).fit(sim, "y").privacy_statement
    with pytest.raises(RuntimeError, match="not fitted"):
        _ = REPS(1.0).privacy_statement


def test_classic_calibration_is_refused_where_it_does_not_hold(sim):
    """Dwork & Roth's formula (the paper's) fails the exact curve at eps_t = 9, delta_t = 1/2n^2."""
    n = len(sim)
    delta_t = 1 / n**2 / 2
    sigma = gaussian_sigma(1.0, 9.0, delta_t, method="classic")
    assert gaussian_delta(sigma, 1.0, 9.0) > delta_t  # the refusal below is justified
    with pytest.raises(ValueError, match=r"classic Gaussian calibration.*Stage 2"):
        REPS(epsilon=10.0, seed=0).fit(sim, "y")
    ok = REPS(epsilon=10.0, calibration="analytic", seed=0).fit(sim, "y")
    assert ok.privacy_statement.epsilon == pytest.approx(10.0)
    # at the paper's largest budget the classic formula does hold on the exact curve
    rel = REPS(epsilon=4.0, seed=0).fit(sim, "y").release_
    exact = gaussian_delta(rel.sigma, rel.clip / n, rel.budget.epsilon_t)
    assert exact <= rel.budget.delta_t


# ---------------------------------------------------------------- records and dtypes
def test_sample_takes_n_and_m_is_deprecated(sim):
    reps = REPS(epsilon=2.0, seed=3).fit(sim, "y")
    with pytest.warns(DeprecationWarning, match="'m' counts synthetic datasets"):
        old = reps.sample(m=40, seed=1)
    pd.testing.assert_frame_equal(old, reps.sample(n=40, seed=1))
    pd.testing.assert_frame_equal(old, reps.release_.sample(40, seed=1))
    with pytest.raises(TypeError, match="both 'n' and the deprecated 'm'"):
        reps.sample(40, m=40)
    with pytest.raises(TypeError, match="needs 'n'"):
        reps.sample()
    with pytest.raises(ValueError, match="'n'"):
        reps.sample(0)
    nb = make_method("non_private", 1.0, seed=0).fit(sim, "y")
    with pytest.warns(DeprecationWarning):
        assert len(nb.sample(m=5)) == 5


def test_every_column_keeps_its_dtype():
    """Issue 17: the label and every feature come back in the training frame's dtype."""
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 6, n).astype(np.uint8),  # near 0: draws below must not wrap
            "w": rng.normal(size=n).astype(np.float32),
            "flag": rng.random(n) < 0.3,
            "g": pd.Categorical(rng.choice(["p", "q", "r"], n)),
            "code": rng.integers(10, 13, n),  # an integer column declared categorical
            "y": rng.integers(0, 2, n),
        }
    )
    reps = REPS(4.0, seed=1).fit(frame, "y", categorical=["code"])
    syn = reps.sample(2000, seed=2)
    assert syn.dtypes.to_dict() == frame.dtypes.to_dict()
    assert set(syn["y"]) <= {0, 1} and set(syn["code"]) <= {10, 11, 12}
    assert set(syn["flag"]) <= {True, False} and set(syn["g"]) <= {"p", "q", "r"}
    assert (syn["age"] <= 6 + 3 * frame["age"].std()).all()  # no uint8 wrap-around from < 0
    assert list(syn["g"].cat.categories) == ["p", "q", "r"]


def test_unsupported_dtype_is_refused():
    frame = pd.DataFrame({"t": pd.date_range("2024-01-01", periods=20), "y": [0, 1] * 10})
    with pytest.raises(TypeError, match="Column 't' has dtype datetime64"):
        REPS(1.0).fit(frame, "y")


def test_successive_samples_without_a_seed_are_new_datasets(sim):
    a = REPS(epsilon=2.0, seed=5).fit(sim, "y")
    b = REPS(epsilon=2.0, seed=5).fit(sim, "y")
    first, second = a.sample(50), a.sample(50)
    assert not first.equals(second)  # m datasets from m calls are not copies of one another
    pd.testing.assert_frame_equal(first, b.sample(50))  # the same fit seed, the same sequence
    pd.testing.assert_frame_equal(second, b.sample(50))
    # the first call is the release's sample at the fit's sample seed (figures unchanged)
    pd.testing.assert_frame_equal(first, a.release_.sample(50, seed=a._sample_seed))
