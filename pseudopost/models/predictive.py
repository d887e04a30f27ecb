"""Posterior-predictive draws of a model's observed variables under chosen posterior draws."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np
import pymc as pm
import xarray as xr

__all__ = ["predictive_draws"]


@contextmanager
def _quiet_pymc():
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def predictive_draws(
    base: pm.Model,
    posterior: xr.Dataset,
    observed: Sequence[str],
    draws: np.ndarray,
    seed: int,
    fresh: Sequence[str] = (),
) -> dict[str, np.ndarray]:
    """``x* ~ p(x | theta_m)`` for each flat draw index m in ``draws`` (chain-major order).

    ``observed`` names the variables to return (observed ones are always drawn afresh);
    ``fresh`` names free variables that are drawn afresh given the others instead of being
    taken from the posterior (a masked outcome's imputed values). Returns one array per name
    in ``observed`` with a leading axis over ``draws``.
    """
    free = [rv.name for rv in base.free_RVs if rv.name not in set(fresh)]
    flat = posterior[free].stack(sample=("chain", "draw")).isel(sample=np.asarray(draws))
    flat = flat.drop_vars(["sample", "chain", "draw"]).rename({"sample": "draw"})
    flat = flat.assign_coords(draw=np.arange(len(draws))).expand_dims(chain=[0])
    with warnings.catch_warnings(), _quiet_pymc():
        warnings.simplefilter("ignore", UserWarning)
        pp = pm.sample_posterior_predictive(
            xr.DataTree.from_dict({"posterior": flat}),
            model=base,
            var_names=list(observed),
            random_seed=int(seed),
            progressbar=False,
        )
    group = pp["posterior_predictive"]
    return {k: group[k].isel(chain=0).to_numpy() for k in observed}
