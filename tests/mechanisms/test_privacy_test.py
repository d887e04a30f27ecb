"""Privacy-test synthesizer F: exact enumeration of Pr[F(D) = y] on a tiny universe."""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import pandas as pd
import pytest

from pseudopost.mechanisms.privacy_testing import (
    PrivacyTestSynthesizer,
    ResampleProposal,
    discrete_laplace_tail,
)
from pseudopost.privacy.statement import ADD_REMOVE

UNIVERSE = np.array(list(itertools.product(range(2), range(2), range(2))))
MARGINALS = (np.array([0.7, 0.3]), np.array([0.55, 0.45]), np.array([0.8, 0.2]))


def _hockey_stick(p: np.ndarray, q: np.ndarray, epsilon: float) -> float:
    """max over output sets S of P(S) - e^eps Q(S); the maximising S is {o : p(o) > e^eps q(o)}.

    So checking this one number checks the (epsilon, delta) inequality for every output set.
    """
    return float(np.maximum(p - np.exp(epsilon) * q, 0.0).sum())


def _worst_deltas(mech: PrivacyTestSynthesizer) -> dict[str, float]:
    """Worst hockey-stick over all D (|D| in {k, k+1}, multisets of U) and D' = D + {d'}."""
    k = mech.k
    probs = {
        d: mech.output_probabilities(UNIVERSE[list(d)], UNIVERSE, check_size=False)
        for n in (k, k + 1, k + 2)
        for d in itertools.combinations_with_replacement(range(len(UNIVERSE)), n)
    }
    worst = {"single_shot": 0.0, "resample_until_pass": 0.0, "log_ratio_d_to_d_prime": -np.inf}
    eps = mech.epsilon
    for n in (k, k + 1):
        for d in itertools.combinations_with_replacement(range(len(UNIVERSE)), n):
            p = probs[d]
            for extra in range(len(UNIVERSE)):
                q = probs[tuple(sorted((*d, extra)))]
                a, b = np.r_[p, 1 - p.sum()], np.r_[q, 1 - q.sum()]  # last entry: no output
                pos = p > 0  # Lemma 4 (1): Pr[F(D) = y] <= e^eps Pr[F(D') = y], no delta
                worst["log_ratio_d_to_d_prime"] = max(
                    worst["log_ratio_d_to_d_prime"], float(np.log(p[pos] / q[pos]).max())
                )
                worst["single_shot"] = max(
                    worst["single_shot"], _hockey_stick(a, b, eps), _hockey_stick(b, a, eps)
                )
                la, lb = p / p.sum(), q / q.sum()  # the appendix's "else resample" loop
                worst["resample_until_pass"] = max(
                    worst["resample_until_pass"],
                    _hockey_stick(la, lb, eps),
                    _hockey_stick(lb, la, eps),
                )
    return worst


@pytest.mark.parametrize(
    ("k", "t", "gamma", "epsilon0", "n_resample", "loop_breaks"),
    [(4, 1, 2.0, 1.0, 1, True), (4, 1, 4.0, 2.0, 1, True), (4, 2, 3.0, 1.0, 2, False)],
)
def test_theorem4_holds_exactly(k, t, gamma, epsilon0, n_resample, loop_breaks):
    mech = PrivacyTestSynthesizer(k, t, gamma, epsilon0, ResampleProposal(MARGINALS, n_resample))
    worst = _worst_deltas(mech)
    # single-shot F (output y or nothing) satisfies (eps, delta) for every output set
    assert worst["single_shot"] <= mech.delta
    assert worst["log_ratio_d_to_d_prime"] <= mech.epsilon
    if loop_breaks:
        # gap: the appendix's "if pass output y, else resample" loop is not (eps, delta)-DP
        assert worst["resample_until_pass"] > mech.delta


def test_privacy_figures_closed_form():
    mech = PrivacyTestSynthesizer(10, 2, 4.0, 0.5, ResampleProposal(MARGINALS, 1))
    assert mech.epsilon == pytest.approx(0.5 + np.log(3.0))
    assert mech.delta == pytest.approx(np.exp(-4.0))


def test_discrete_laplace_tail_conditions():
    for e0 in (0.1, 0.5, 1.0, 3.0):
        ell = np.arange(-400, 401)
        pmf = np.exp(-e0 * np.abs(ell))
        pmf /= pmf.sum()
        xs = np.arange(-30, 31)
        brute = np.array([pmf[ell >= x].sum() for x in xs])
        tail = discrete_laplace_tail(xs, e0)
        np.testing.assert_allclose(tail, brute, rtol=1e-10, atol=1e-15)
        # Lemma 2 / eq. (21): Pr{L >= x-1} <= e^eps0 Pr{L >= x}; eq. (20): Pr{L >= m} <= e^-eps0 m
        assert (discrete_laplace_tail(xs - 1, e0) <= np.exp(e0) * tail * (1 + 1e-12)).all()
        pos = xs[xs >= 0]
        assert (discrete_laplace_tail(pos, e0) <= np.exp(-e0 * pos)).all()


def test_proposal_probability_matches_enumeration():
    prop = ResampleProposal(MARGINALS, 2)
    rng = np.random.default_rng(0)
    for s in UNIVERSE:
        exact = np.zeros(len(UNIVERSE))
        for subset in itertools.combinations(range(3), 2):
            for vals in itertools.product(*(range(2) for _ in subset)):
                y = s.copy()
                y[list(subset)] = vals
                w = np.prod([MARGINALS[a][v] for a, v in zip(subset, vals, strict=True)])
                exact[np.flatnonzero((UNIVERSE == y).all(axis=1))[0]] += w / comb(3, 2)
        got = np.array([prop.probability(s[None, :], y)[0] for y in UNIVERSE])
        np.testing.assert_allclose(got, exact, atol=1e-15)
        assert got.sum() == pytest.approx(1.0)
        draws = np.array([prop.sample(s, rng) for _ in range(3000)])
        freq = np.array([(draws == y).all(axis=1).mean() for y in UNIVERSE])
        np.testing.assert_allclose(freq, exact, atol=0.04)


def test_sampler_matches_exact_output_distribution():
    mech = PrivacyTestSynthesizer(3, 1, 2.0, 1.0, ResampleProposal(MARGINALS, 1))
    data = UNIVERSE[[0, 0, 0, 1, 2, 4]]
    exact = mech.output_probabilities(data, UNIVERSE)
    res = mech.sample(data, 20_000, seed=5)
    freq = np.array([(res.records == y).all(axis=1).sum() for y in UNIVERSE]) / res.n_candidates
    # binomial sd at 20k draws <= 0.0036; 5 sd
    np.testing.assert_allclose(freq, exact, atol=0.018)
    assert res.pass_rate == pytest.approx(exact.sum(), abs=0.018)
    assert res.epsilon_total == pytest.approx(20_000 * mech.epsilon)


def test_sample_is_reproducible_and_keeps_frame_columns():
    frame = pd.DataFrame(UNIVERSE[[0, 0, 1, 1, 2, 3, 5, 5]], columns=["a", "b", "c"])
    before = frame.copy()
    mech = PrivacyTestSynthesizer(3, 1, 2.0, 1.0, ResampleProposal(MARGINALS, 1))
    r1, r2 = mech.sample(frame, 300, seed=1), mech.sample(frame, 300, seed=1)
    pd.testing.assert_frame_equal(r1.records, r2.records)
    assert list(r1.records.columns) == ["a", "b", "c"] and 0 < r1.n_passed < 300
    pd.testing.assert_frame_equal(frame, before)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": 2, "t": 3}, "t < k"),
        ({"k": 3, "t": 3}, "t < k"),
        ({"gamma": 1.0}, "gamma > 1"),
        ({"gamma": 0.5}, "gamma > 1"),
        ({"epsilon0": 0.0}, "'epsilon0'"),
        ({"t": 0}, "'t'"),
        ({"k": 2.5}, "'k'"),
        ({"proposal": object()}, "proposal"),
    ],
)
def test_parameters_outside_the_sufficient_domain_are_refused(kwargs, match):
    args = {
        "k": 5,
        "t": 2,
        "gamma": 2.0,
        "epsilon0": 1.0,
        "proposal": ResampleProposal(MARGINALS, 1),
    }
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        PrivacyTestSynthesizer(**args)


def test_bad_data_is_refused():
    mech = PrivacyTestSynthesizer(5, 2, 2.0, 1.0, ResampleProposal(MARGINALS, 1))
    with pytest.raises(ValueError, match="more than k=5"):
        mech.sample(UNIVERSE[:5], 10, seed=0)
    with pytest.raises(ValueError, match="non-empty"):
        mech.sample(np.empty((0, 3), dtype=int), 10, seed=0)
    with pytest.raises(ValueError, match="columns"):
        mech.sample(np.zeros((10, 2), dtype=int), 10, seed=0)
    with pytest.raises(TypeError, match="integer"):
        mech.sample(np.full((10, 3), 0.5), 10, seed=0)
    with pytest.raises(ValueError, match="n_resample"):
        ResampleProposal(MARGINALS, 4)
    with pytest.raises(ValueError, match="marginals"):
        ResampleProposal((np.array([0.5, 0.6]),), 1)


def test_privacy_statements_per_invocation_and_for_the_release():
    mech = PrivacyTestSynthesizer(3, 1, 2.0, 1.0, ResampleProposal(MARGINALS, 1))
    one = mech.privacy_statement
    assert (one.epsilon, one.delta) == (mech.epsilon, mech.delta)
    assert one.neighbouring == ADD_REMOVE and one.scope == "global"
    data = UNIVERSE[[0, 0, 0, 1, 2, 4]]
    res = mech.sample(data, 40, seed=2)
    total = res.privacy_statement
    assert (total.epsilon, total.delta) == (res.epsilon_total, res.delta_total)
    assert total.epsilon == pytest.approx(40 * mech.epsilon)
    assert total.delta == min(1.0, 40 * mech.delta)
    assert total.assumptions == one.assumptions and "40 invocations" in total.source
    # an array input still gives a frame of codes (one return type), columns 0..d-1
    assert isinstance(res.records, pd.DataFrame) and list(res.records.columns) == [0, 1, 2]
    assert (res.records.dtypes == np.int64).all()
