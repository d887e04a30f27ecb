"""REPS accounting: budget split, Theorem 1, Corollaries 1-2 against their closed forms."""

import numpy as np
import pytest

from pseudopost.mechanisms.reps.accounting import (
    compose,
    default_delta,
    end_to_end_epsilon,
    gaussian_pdp_epsilon,
    split_budget,
    synthesis_epsilon,
    synthesis_sigma,
    weighted_release_epsilon,
)
from pseudopost.privacy.noise import gaussian_delta


def test_default_split_is_the_papers():
    # appendix B.2: (0.1 eps, delta/2) scoring, (0.9 eps, delta/2) synthesis, delta = 1/n^2
    b = split_budget(2.0, default_delta(1000))
    assert b.delta == pytest.approx(1e-6, rel=1e-15)
    assert (b.epsilon_s, b.epsilon_t) == pytest.approx((0.2, 1.8), rel=1e-15)
    assert (b.delta_s, b.delta_t) == pytest.approx((5e-7, 5e-7), rel=1e-15)
    assert compose(b.epsilon_s, b.delta_s, b.epsilon_t, b.delta_t) == pytest.approx((2.0, 1e-6))


def test_no_scoring_gives_whole_budget_to_synthesis():
    b = split_budget(1.0, 1e-5, scoring_share=0.0)
    assert (b.epsilon_s, b.delta_s, b.epsilon_t, b.delta_t) == (0.0, 0.0, 1.0, 1e-5)


def test_sigma_and_per_instance_epsilon_equal_their_formulas():
    n, clip, eps_t, delta_t = 500, 2.5, 0.9, 1e-6
    sigma = synthesis_sigma(n, clip, eps_t, delta_t)
    root = np.sqrt(2 * np.log(1.25 / delta_t))
    assert sigma == pytest.approx(clip / n * root / eps_t, rel=1e-14)  # section 7.4
    w = np.array([1.0, 0.5, 0.01, 0.0])
    eps_i = weighted_release_epsilon(w, clip=clip, n=n, sigma=sigma, delta=delta_t)
    assert eps_i == pytest.approx(w * clip * root / (n * sigma), rel=1e-14)  # Corollary 2
    assert eps_i[0] == pytest.approx(eps_t, rel=1e-14)  # Proposition 1 (3)
    assert synthesis_epsilon(n, clip, sigma, delta_t) == pytest.approx(eps_t, rel=1e-14)
    assert end_to_end_epsilon(0.1, eps_i) == pytest.approx(0.1 + eps_i)  # Corollary 1


def test_analytic_map_is_the_exact_gaussian_curve():
    n, clip, eps_t, delta_t = 200, 1.0, 1.5, 1e-5
    sigma = synthesis_sigma(n, clip, eps_t, delta_t, method="analytic")
    assert sigma < synthesis_sigma(n, clip, eps_t, delta_t)  # analytic needs less noise
    eps_i = weighted_release_epsilon(
        np.array([1.0, 0.3]), clip=clip, n=n, sigma=sigma, delta=delta_t, method="analytic"
    )
    assert eps_i[0] == pytest.approx(eps_t, rel=1e-6)
    # record 2: its own curve meets delta exactly at eps_i
    assert gaussian_delta(sigma, 0.3 * clip / n, eps_i[1]) == pytest.approx(delta_t, rel=1e-5)
    assert eps_i[1] < eps_i[0]


def test_zero_influence_has_zero_epsilon():
    assert gaussian_pdp_epsilon(np.zeros(3), 1.0, 1e-5, method="analytic").tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0, "delta": 1e-5}, "epsilon"),
        ({"epsilon": 1.0, "delta": 1.0}, "delta"),
        ({"epsilon": 1.0, "delta": 0.0}, "delta"),
        ({"epsilon": 1.0, "delta": 1e-5, "scoring_share": 1.0}, "scoring_share"),
    ],
)
def test_split_rejects_bad_budgets(kwargs, match):
    with pytest.raises(ValueError, match=match):
        split_budget(**kwargs)


def test_weights_outside_unit_interval_are_rejected():
    with pytest.raises(ValueError, match="weights"):
        weighted_release_epsilon(np.array([1.2]), clip=1.0, n=10, sigma=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="clip"):
        synthesis_sigma(10, 0.0, 1.0, 1e-5)


def test_the_old_paths_of_the_mechanisms_pieces_forward_with_a_warning():
    """REPS's rarity, weight maps and accounting moved into the mechanism (issue 29); their old
    modules and the names the risk and privacy packages exported forward for one version."""
    import importlib
    import sys

    import pseudopost.privacy
    import pseudopost.risk
    from pseudopost.mechanisms.reps import accounting, dp_quantile, rarity, targeted_weights

    with pytest.warns(DeprecationWarning, match="'pseudopost.risk.dp_quantile' moved"):
        assert pseudopost.risk.dp_quantile is dp_quantile
    with pytest.warns(DeprecationWarning, match="moved to 'pseudopost.mechanisms.reps.weight"):
        assert pseudopost.risk.targeted_weights is targeted_weights
    with pytest.warns(DeprecationWarning, match="'pseudopost.privacy.synthesis_sigma' moved"):
        assert pseudopost.privacy.synthesis_sigma is accounting.synthesis_sigma
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        pseudopost.risk.nothing  # noqa: B018
    for old, new in (("pseudopost.risk.rarity", rarity),
                     ("pseudopost.privacy.reps_accounting", accounting)):  # fmt: skip
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=f"'{old}' moved"):
            assert importlib.import_module(old) is new
