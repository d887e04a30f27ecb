"""Stage-1 DP histogram rarity scorer (section 5.1, appendix B.2)."""

import numpy as np
import pandas as pd
import pytest

from pseudopost.mechanisms.reps.rarity import dp_quantile, release_histograms
from pseudopost.privacy.audit import epsilon_lower_bound


@pytest.fixture
def frame():
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "x": rng.normal(10, 2, 300),
            "k": rng.integers(0, 100, 300),
            "c": rng.choice(["a", "b", "c"], 300, p=[0.7, 0.25, 0.05]),
        }
    )


def _release(frame, **kw):
    args = {"numeric": ["x", "k"], "categorical": ["c"], "epsilon": 1.0, "delta": 1e-5}
    return release_histograms(frame, **(args | kw))


def test_sigma_is_sqrt_d_calibration(frame):
    rel = _release(frame, epsilon=0.3, delta=1e-6)
    d = 3
    assert rel.sensitivity == pytest.approx(np.sqrt(d))
    assert rel.sigma == pytest.approx(np.sqrt(d) * np.sqrt(2 * np.log(1.25 / 1e-6)) / 0.3)
    assert [c.size for c in rel.noisy_counts] == [16, 16, 3]


def test_counts_bins_and_scores_match_a_direct_computation(frame):
    rel = _release(frame, epsilon=1e9, scaling={"x": (10.0, 2.0)}, seed=0)  # noise ~ 1e-8
    z = np.clip((frame["x"] - 10.0) / 2.0, -3, 3)
    hist, _ = np.histogram(z, bins=np.linspace(-3, 3, 17))
    assert rel.noisy_counts[0] == pytest.approx(hist, abs=1e-6)
    assert rel.noisy_counts[2] == pytest.approx(
        frame["c"].value_counts().reindex(["a", "b", "c"]).to_numpy(), abs=1e-6
    )
    p = rel.probabilities
    idx = rel.bin_indices(frame)
    expected = -sum(np.log(np.maximum(p[j][idx[:, j]], 1e-4)) for j in range(3))
    assert rel.score(frame) == pytest.approx(expected)
    # the rare category gets the larger score, all else equal
    one = frame.iloc[[0, 0]].copy()
    one["c"] = ["a", "c"]
    s = rel.score(one)
    assert s[1] - s[0] == pytest.approx(np.log(p[2][0] / p[2][2]))


def test_unknown_level_and_empty_bins_get_the_floor(frame):
    rel = _release(frame, epsilon=1e9, categories={"c": ["a", "b", "c", "d"]}, p_min=1e-3)
    row = frame.iloc[[0]].copy()
    base = rel.score(row)[0]
    row["c"] = "zzz"  # not a declared level
    p_c = rel.probabilities[2][rel.bin_indices(frame.iloc[[0]])[0, 2]]
    assert rel.score(row)[0] == pytest.approx(base + np.log(p_c) - np.log(1e-3))
    assert rel.probabilities[2][3] == pytest.approx(0.0, abs=1e-8)  # 'd' never seen


def test_dp_quantile_is_near_the_quantile_at_large_epsilon():
    v = np.random.default_rng(0).exponential(2.0, 5000)
    t = dp_quantile(v, 0.9, epsilon=50.0, lower=0.0, upper=40.0, seed=1)
    assert abs(np.mean(v <= t) - 0.9) < 0.01
    with pytest.raises(ValueError, match="lower < upper"):
        dp_quantile(v, 0.9, epsilon=1.0, lower=1.0, upper=1.0)


def test_empirical_audit_of_the_dp_quantile():
    # neighbour: the largest value replaced by the null record (n public)
    v = np.r_[np.linspace(0, 5, 29), 30.0]
    eps, runs = 1.0, 2000
    kw = {"epsilon": eps, "lower": 0.0, "upper": 40.0, "n": 30, "n_candidates": 200}
    sd = [dp_quantile(v, 0.9, seed=r, **kw) for r in range(runs)]
    sn = [dp_quantile(v[:-1], 0.9, seed=runs + r, **kw) for r in range(runs)]
    assert epsilon_lower_bound(np.array(sd), np.array(sn)).epsilon_lower <= eps


def test_release_is_reproducible_and_leaves_input_alone(frame):
    before = frame.copy()
    a, b = _release(frame, seed=5), _release(frame, seed=5)
    assert all(np.array_equal(x, y) for x, y in zip(a.noisy_counts, b.noisy_counts, strict=True))
    pd.testing.assert_frame_equal(frame, before)


def test_empirical_audit_of_the_histogram_release(frame):
    # neighbour: record 0 replaced by the null record (it leaves every histogram)
    small = frame.iloc[:40]
    eps, delta = 1.0, 1e-5
    neighbour = small.iloc[1:]
    kw = {"numeric": ["x", "k"], "categorical": ["c"], "epsilon": eps, "delta": delta,
          "scaling": {"x": (10.0, 2.0), "k": (50.0, 30.0)}}  # fmt: skip
    ref = release_histograms(small, **kw, seed=0)
    direction = np.concatenate(
        [np.bincount(i, minlength=c.size) for i, c in
         zip(ref.bin_indices(small.iloc[[0]]).T, ref.noisy_counts, strict=True)]
    ).astype(float)  # fmt: skip
    runs = 1500
    sd, sn = np.empty(runs), np.empty(runs)
    for r in range(runs):
        sd[r] = np.concatenate(release_histograms(small, **kw, seed=r).noisy_counts) @ direction
        sn[r] = (
            np.concatenate(release_histograms(neighbour, **kw, seed=runs + r).noisy_counts)
            @ direction
        )
    res = epsilon_lower_bound(sd, sn, delta=delta)
    assert 0.0 < res.epsilon_lower <= eps


@pytest.mark.parametrize(
    ("kw", "err", "match"),
    [
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"delta": 1.5}, ValueError, "delta"),
        ({"numeric": ["nope"]}, ValueError, "nope"),
        ({"numeric": ["c"], "categorical": []}, TypeError, "numeric"),
    ],
)
def test_bad_inputs(frame, kw, err, match):
    with pytest.raises(err, match=match):
        _release(frame, **kw)


def test_non_finite_values_are_rejected(frame):
    bad = frame.copy()
    bad.loc[3, "x"] = np.inf
    with pytest.raises(ValueError, match="finite"):
        _release(bad)
