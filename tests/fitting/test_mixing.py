"""The vectorised R-hat and ESS equal arviz-stats' own, parameter by parameter."""

import arviz_stats as azs
import numpy as np
import pytest
import xarray as xr
from arviz_stats.base import array_stats

from pseudopost.fitting import mixing


def _draws(chains: int, draws: int, seed: int = 0) -> np.ndarray:
    """Draws of 40 parameters: autocorrelated, independent, constant, tied, one chain shifted
    (not mixed), heavy-tailed, and one with a NaN."""
    rng = np.random.default_rng(seed)
    k = 40
    x = rng.standard_normal((chains, draws, k))
    x[:, :, :10] = x[:, :, :10].cumsum(axis=1) * 0.2 + rng.standard_normal((chains, draws, 10))
    x[:, :, 10] = 3.0
    x[:, :, 11] = np.round(x[:, :, 11])
    x[-1, :, 12] += 4.0
    x[:, :, 13] = rng.standard_cauchy((chains, draws))
    x[0, 1, 14] = np.nan
    return x


@pytest.mark.parametrize(("chains", "draws"), [(2, 250), (4, 101), (1, 60)])
def test_rhat_and_ess_equal_arviz_stats(chains, draws):
    x = _draws(chains, draws)
    ref_rhat = array_stats.rhat(x, chain_axis=0, draw_axis=1)
    ref_bulk = array_stats.ess(x, chain_axis=0, draw_axis=1, method="bulk")
    ds = xr.Dataset({"a": (("chain", "draw", "k"), x)})
    ref_tail = azs.ess(ds, method="tail")["a"].to_numpy()
    np.testing.assert_allclose(mixing.rhat(x), ref_rhat, rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(mixing.ess_bulk(x), ref_bulk, rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(mixing.ess_tail(x), ref_tail, rtol=1e-10, equal_nan=True)
    if chains > 1:  # the checks can fail: the shifted chain is flagged, the NaN is NaN
        assert mixing.rhat(x)[12] > 1.5 and np.isnan(mixing.rhat(x)[14])
        assert np.all(mixing.rhat(x)[15:] < 1.1)
    assert mixing.ess_bulk(x)[10] == 2 * chains * (draws // 2)  # a constant: every split draw


def test_fit_diagnostics_table_is_arviz_stats_by_label():
    """The diagnostics table (labels from the coordinates) against arviz-stats' Dataset path."""
    from pseudopost.fitting.sampler import FitDiagnostics

    rng = np.random.default_rng(3)
    post = xr.Dataset(
        {
            "mu": (("chain", "draw"), rng.standard_normal((2, 200))),
            "beta": (("chain", "draw", "predictor"), rng.standard_normal((2, 200, 3)).cumsum(1)),
        },
        coords={"predictor": ["age", "sex", "educ"]},
    )
    table = FitDiagnostics.from_fit("weighted", post, None).table.set_index("parameter")
    assert list(table.index) == ["mu", "beta[age]", "beta[sex]", "beta[educ]"]
    for method, column in (("bulk", "ess_bulk"), ("tail", "ess_tail")):
        ref = azs.ess(post, method=method)
        np.testing.assert_allclose(table.loc["beta[sex]", column], ref["beta"][1], rtol=1e-10)
        np.testing.assert_allclose(table.loc["mu", column], ref["mu"], rtol=1e-10)
    ref = azs.rhat(post)
    np.testing.assert_allclose(table["r_hat"].to_numpy()[1:], ref["beta"], rtol=1e-10)
    assert table.loc["beta[age]", "r_hat"] > 1.05  # random walks: not mixed, and said so
