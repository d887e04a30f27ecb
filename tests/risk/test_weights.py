import numpy as np
import pytest

from pseudopost.risk import check_weight_knobs, normalise_risk, risk_weights
from pseudopost.risk.weights import RiskSummary, risk_summary, weights_from_risk


def test_linear_normalisation_and_weights():
    L = np.array([2.0, 4.0, 6.0, 10.0])
    np.testing.assert_allclose(normalise_risk(L), [0, 0.25, 0.5, 1.0])
    np.testing.assert_allclose(risk_weights(L), [1, 0.75, 0.5, 0.0])
    np.testing.assert_allclose(risk_weights(L, scale=0.5, shift=0.2), [0.7, 0.575, 0.45, 0.2])
    np.testing.assert_allclose(risk_weights(L, scale=2.0), [1, 1, 1, 0])


def test_logistic_normalisation_is_monotone_in_0_1():
    L = np.array([1.0, 2.0, 3.0, 50.0])
    r = normalise_risk(L, "logistic")
    assert np.all(np.diff(r) > 0) and r.min() > 0 and r.max() < 1


def test_constant_risk_gives_full_weight():
    np.testing.assert_allclose(risk_weights(np.full(4, 3.0)), 1.0)


@pytest.mark.parametrize(
    ("c", "g", "msg"),
    [
        (0.0, 0.0, "scale"),
        (-1.0, 0.5, "scale"),
        (1.0, -1.0, "every weight 0"),
        (0.5, -0.7, "every weight 0"),
        (1.0, np.nan, "shift"),
        (np.inf, 0, "scale"),
    ],
)
def test_bad_knobs(c, g, msg):
    with pytest.raises(ValueError, match=msg):
        check_weight_knobs(c, g)


def test_non_finite_risk_names_the_record():
    with pytest.raises(ValueError, match="record 1"):
        normalise_risk(np.array([1.0, np.inf]))


@pytest.mark.parametrize("method", ["linear", "logistic"])
def test_one_weights_function_on_blocks_given_the_global_summary(method):
    """Blocks weighted with the summary of all risks give the whole array's weights, bit for
    bit (what the Dask backend relies on)."""
    L = np.random.default_rng(1).gamma(2.0, 2.0, 1001)
    summary = risk_summary(L, method)
    blocks = [weights_from_risk(b, summary, 0.7, 0.2) for b in np.array_split(L, 7)]
    np.testing.assert_array_equal(np.concatenate(blocks), risk_weights(L, 0.7, 0.2, method))
    # the summary is the normalisation's: (min, range) or (mean, sd)
    if method == "linear":
        assert (summary.center, summary.spread) == (L.min(), L.max() - L.min())
    else:
        assert (summary.center, summary.spread) == (L.mean(), L.std())
    r = normalise_risk(L, method)
    assert r.min() >= 0 and r.max() <= 1


def test_risk_summary_refuses_bad_input():
    with pytest.raises(ValueError, match="'method' parameter must be 'linear' or 'logistic'"):
        RiskSummary("rank", 0.0, 1.0)
    with pytest.raises(ValueError, match="'method' parameter"):
        risk_summary(np.array([1.0, 2.0]), "rank")
    with pytest.raises(ValueError, match="non-empty vector"):
        risk_summary(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="record 2"):
        risk_summary(np.array([1.0, 2.0, np.nan]))


def test_level_rake_lowers_weights_to_the_data_shares():
    """Raking downwards: each grouping's weighted shares become the data's, no weight rises,
    the most under-represented level keeps its weights (one grouping), and ``keep`` bounds
    the total weight lost (two groupings, checked against the shares by hand)."""
    from pseudopost.risk.weights import level_rake

    rng = np.random.default_rng(0)
    n = 600
    g = rng.choice(3, n, p=[0.6, 0.3, 0.1])
    h = rng.choice(2, n)
    alpha = np.clip(np.where(g == 0, 0.95, np.where(g == 1, 0.6, 0.3)) + rng.normal(0, 0.05, n),
                    0, 1)  # fmt: skip
    a1 = level_rake(alpha, [g], keep=0.0)
    assert np.all(a1 <= alpha + 1e-15)
    np.testing.assert_allclose(a1[g == 2], alpha[g == 2])  # the scale-setting level
    for k in range(3):
        assert a1[g == k].sum() / a1.sum() == pytest.approx(np.mean(g == k), rel=1e-9)
    both = level_rake(alpha, {"g": g, "h": np.where(rng.random(n) < 0.1, -1, h)}, keep=0.0)
    for grouping in (g, np.where(rng.random(n) < 0, -1, g)):
        for k in range(3):
            assert both[grouping == k].sum() / both.sum() == pytest.approx(
                np.mean(grouping == k), rel=1e-3)
    kept = level_rake(alpha, [g], keep=0.9)  # one step would keep ~55 %: not taken
    np.testing.assert_array_equal(kept, alpha)
    assert level_rake(alpha, [g], keep=0.5).sum() >= 0.5 * alpha.sum() - 1e-9
    assert np.array_equal(level_rake(alpha, [], keep=0.0), alpha)
    with pytest.raises(ValueError, match=r"'keep' must be in \[0, 1\]"):
        level_rake(alpha, [g], keep=1.5)
    with pytest.raises(ValueError, match="one level per record"):
        level_rake(alpha, [g[:-1]], keep=0.5)


def test_level_rake_stops_within_the_posterior_noise():
    """With ``noise`` = 1 raking stops at the first step after which every grouping's Pearson
    statistic W sum_k (s_k - t_k)^2 / t_k (W the total weight) is at most K - 1, by hand: it
    keeps more weight than raking to the shares, and weights already within the noise are
    returned as they are."""
    from pseudopost.risk.weights import level_rake

    def pearson(w, grouping):
        t = np.bincount(grouping) / grouping.size
        s = np.bincount(grouping, weights=w) / w.sum()
        return w.sum() * np.sum((s - t) ** 2 / t) / (t.size - 1)

    rng = np.random.default_rng(1)
    n = 5000
    g = rng.choice(4, n, p=[0.5, 0.3, 0.15, 0.05])
    h = np.where(rng.random(n) < 0.7, np.minimum(g, 2), rng.choice(3, n))  # tied to g
    alpha = np.clip(0.9 - 0.04 * g - 0.03 * h + rng.normal(0, 0.05, n), 0.0, 1.0)
    assert pearson(alpha, g) > 1 and pearson(alpha, h) > 1
    exact = level_rake(alpha, [g, h], keep=0.0)
    near = level_rake(alpha, [g, h], keep=0.0, noise=1.0)
    assert np.all(near <= alpha + 1e-15) and np.all(near >= exact - 1e-12)
    assert near.sum() > exact.sum() + 1.0
    assert pearson(near, g) <= 1.0 + 1e-9 and pearson(near, h) <= 1.0 + 1e-9
    assert pearson(near, g) > 1e-6 or pearson(near, h) > 1e-6  # stopped short of the shares
    # within the noise already: untouched
    fair = np.full(n, 0.8)
    np.testing.assert_array_equal(level_rake(fair, [g, h], keep=0.0, noise=1.0), fair)
    with pytest.raises(ValueError, match="'noise' must be a number >= 0"):
        level_rake(alpha, [g], keep=0.0, noise=-1.0)


def test_part_rake_gives_each_part_the_data_shares_by_its_own_factors():
    """Per grouping alone: the part's weights alpha * r restore its level shares exactly, no
    factor exceeds 1 (weights never rise), the most under-represented level keeps factor 1,
    inactive records keep 1, the input is not changed, and a grouping with one weighted level
    needs no factor; shares computed by hand."""
    from pseudopost.risk.weights import part_rake

    rng = np.random.default_rng(3)
    n = 800
    g = rng.choice(3, n, p=[0.6, 0.3, 0.1])
    h = np.where(rng.random(n) < 0.3, -1, rng.choice(2, n))  # inactive for 30 % of records
    one = np.where(rng.random(n) < 0.5, 0, -1)  # a single level
    alpha = np.clip(np.where(g == 0, 0.95, np.where(g == 1, 0.6, 0.3)) + rng.normal(0, 0.05, n),
                    0, 1)  # fmt: skip
    alpha[:5] = 0.0
    before = alpha.copy()
    factors = part_rake(alpha, {"g": g, "h": h, "one": one})
    np.testing.assert_array_equal(alpha, before)
    assert set(factors) == {"g", "h"}
    for name, grouping in (("g", g), ("h", h)):
        r = factors[name]
        assert np.all((r > 0) & (r <= 1.0))
        w = alpha * r
        on = grouping >= 0
        for k in np.unique(grouping[on]):
            share = w[grouping == k].sum() / w[on].sum()
            assert share == pytest.approx(np.mean(grouping[on] == k), rel=1e-12)
        np.testing.assert_array_equal(r[~on], 1.0)
    # the scale-setting level of g is its most under-represented one: level 2 (weights 0.3)
    np.testing.assert_array_equal(factors["g"][g == 2], 1.0)
    ratio = (np.bincount(g) / n) / (np.bincount(g, weights=alpha) / alpha.sum())
    np.testing.assert_allclose(factors["g"][g == 0], ratio[0] / ratio.max(), rtol=1e-12)
    assert part_rake(alpha, {}) == {}
    with pytest.raises(TypeError, match="map part names"):
        part_rake(alpha, [g])
    with pytest.raises(ValueError, match="one level per record"):
        part_rake(alpha, {"g": g[:-1]})
