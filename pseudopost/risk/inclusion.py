r"""Range-averaged inclusion probabilities (range-restricted paper, section 2, eq. 2).

.. math:: \lambda_i = \Pr_{\mathcal M}(x^*_i \notin R_i),

estimated from S draws of the posterior predictive of the *unweighted* model
:math:`\mathcal M` (the paper uses S = 1000): for each of S posterior draws one predictive value
per record, and :math:`\hat\lambda_i` the fraction outside :math:`[l_i, u_i]`. Draws are
processed in blocks so that no more than ``max_bytes`` of predictive values are held at once.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import xarray as xr

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive_int
from pseudopost.models.predictive import predictive_draws

__all__ = ["inclusion_lambda"]


def inclusion_lambda(
    base: pm.Model,
    posterior: xr.Dataset,
    outcome: str,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    draws: int = 1000,
    seed: SeedLike = None,
    max_bytes: int = 256 * 2**20,
) -> np.ndarray:
    """Monte Carlo :math:`\\lambda_i` from ``draws`` posterior-predictive values per record."""
    draws = check_positive_int(draws, "lambda_draws")
    rng = as_generator(seed)
    total = posterior.sizes["chain"] * posterior.sizes["draw"]
    idx = rng.choice(total, size=draws, replace=draws > total)
    n = lower.size
    outside = np.zeros(n)
    block = max(1, int(max_bytes) // (8 * n))
    for start in range(0, draws, block):
        chunk = idx[start : start + block]
        x = predictive_draws(base, posterior, [outcome], chunk, int(rng.integers(2**31 - 1)))
        x = x[outcome].reshape(len(chunk), n)
        outside += ((x < lower) | (x > upper)).sum(axis=0)
    return outside / draws
