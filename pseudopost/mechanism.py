r"""The risk-weighted pseudo posterior mechanism (Savitsky, Williams & Hu, JMLR 2022).

Algorithm (range-restricted paper, section 1.1; design notes section 2):

1. Fit the unweighted posterior; risk :math:`L_i = \max_m |f_{\theta_m}(x_i)|`.
2. Weights :math:`\alpha_i = \mathrm{clip}(c(1 - r_i) + g, 0, 1)` (:mod:`pseudopost.risk`).
3. Refit the pseudo posterior :math:`\xi^\alpha(\theta\mid x) \propto
   \prod_i p(x_i\mid\theta)^{\alpha_i}\xi(\theta)` (eq. 1), same compiled model, new weights.
4. Accountant: :math:`\Delta_i = \max_m |\alpha_i f_{\theta_m}(x_i)|` over the weighted draws,
   :math:`\varepsilon_x = 2\max_i \Delta_i` (local to x; asymptotic DP; add/remove neighbours).
5. Optional, as in the public R code: re-weighting
   :math:`\alpha_i' = \mathrm{clip}(c\,\alpha_i \Delta / \Delta_i)` then refit (raises utility at a
   similar epsilon), and exclusion of draws whose :math:`\max_i|\alpha_i f_{\theta_m}(x_i)|`
   exceeds a quantile before synthesis (epsilon is then computed on the kept draws only).
6. Synthesize: each dataset is a posterior-predictive draw under one kept weighted draw.

Privacy of the release: each synthetic dataset is one draw from the mechanism and carries
:math:`\varepsilon_x`; releasing m datasets from m posterior draws composes to
:math:`m\,\varepsilon_x` under basic composition. The risk step and the weights use the data and
are covered only through the local accountant (the papers' convention), not by a separate budget.
"""

from __future__ import annotations

import logging
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from ._rng import SeedLike, as_generator
from ._validation import check_in_interval, check_positive_int
from .models.base import Prepared, SynthModel
from .models.custom import PyMCModel
from .models.loglik import RecordFunction, stack_draws
from .models.weighting import weighted_model
from .privacy.lipschitz import DEFAULT_MAX_BYTES, AbsReduction, local_epsilon, reduce_abs
from .risk.weights import Normalisation, check_weight_knobs, normalise_risk, risk_weights
from .sampling import FitDiagnostics, Sampler, interactive

__all__ = ["PseudoPosterior", "PseudoPosteriorResult"]


@dataclass
class _Fitted:
    """What a refit needs: the model, its data, the compiled sampler and record function."""

    model: SynthModel
    prepared: Prepared
    base: pm.Model
    sampler: Sampler
    loglik: RecordFunction
    draws: int
    tune: int
    chains: int
    progress: bool
    max_bytes: int


@dataclass
class PseudoPosteriorResult:
    """A fitted pseudo posterior: weights, privacy figures, both fits, and synthesis.

    Attributes
    ----------
    epsilon, unweighted_epsilon : float
        Local :math:`\\varepsilon_x = 2\\max_i\\Delta_i` of the weighted and unweighted fits.
    lipschitz, unweighted_lipschitz : xarray.DataArray
        Per-record bounds :math:`\\Delta_i` (dimension ``record``).
    alpha : xarray.DataArray
        Weights used in the weighted fit.
    risk : xarray.DataArray
        :math:`L_i = \\max_m |f_{\\theta_m}(x_i)|` under the unweighted fit.
    posterior : xarray.Dataset
        The weighted posterior.
    datatree : xarray.DataTree
        Everything above in groups ArviZ understands (``posterior``, ``sample_stats``,
        ``risk_posterior``, ``risk_sample_stats``, ``observed_data``, ``weights``, ``privacy``).
    diagnostics : dict[str, FitDiagnostics]
        R-hat/ESS/divergences of the ``weighted`` and ``unweighted`` fits.
    """

    datatree: xr.DataTree
    diagnostics: dict[str, FitDiagnostics]
    timings: dict[str, float]
    _fitted: _Fitted = field(repr=False)
    _kept: np.ndarray = field(repr=False)

    @property
    def epsilon(self) -> float:
        return float(self.datatree["privacy"].attrs["epsilon"])

    @property
    def unweighted_epsilon(self) -> float:
        return float(self.datatree["privacy"].attrs["unweighted_epsilon"])

    @property
    def lipschitz(self) -> xr.DataArray:
        return self.datatree["privacy"]["lipschitz"].copy()

    @property
    def unweighted_lipschitz(self) -> xr.DataArray:
        return self.datatree["privacy"]["unweighted_lipschitz"].copy()

    @property
    def alpha(self) -> xr.DataArray:
        return self.datatree["weights"]["alpha"].copy()

    @property
    def risk(self) -> xr.DataArray:
        return self.datatree["weights"]["risk"].copy()

    @property
    def posterior(self) -> xr.Dataset:
        return self.datatree["posterior"].to_dataset()

    @property
    def model(self) -> SynthModel:
        return self._fitted.model

    def summary(self) -> pd.DataFrame:
        """ArviZ summary of the weighted posterior (raw numbers)."""
        import arviz as az

        return az.summary(self.datatree, round_to="none")

    def synthesize(self, m: int = 1, seed: SeedLike = None) -> pd.DataFrame | list[pd.DataFrame]:
        """Synthetic data: ``m`` posterior-predictive datasets, each under its own posterior draw.

        Draws are chosen without replacement among the kept draws of the weighted posterior.
        Modelled outcomes are synthetic; predictors of a ready model are kept as given
        (partially synthetic data, as in the papers). Returns a DataFrame for ``m == 1``, a list
        otherwise. Each dataset carries :attr:`epsilon`; m of them compose to ``m * epsilon``.
        """
        m = check_positive_int(m, "m")
        rng = as_generator(seed)
        kept = np.flatnonzero(self._kept)
        if m > kept.size:
            raise ValueError(f"'m'={m} exceeds the {kept.size} kept posterior draws.")
        chosen = np.sort(rng.choice(kept, size=m, replace=False))
        post = self.posterior
        free = [rv.name for rv in self._fitted.base.free_RVs]
        flat = post[free].stack(sample=("chain", "draw")).isel(sample=chosen)
        flat = flat.drop_vars(["sample", "chain", "draw"]).rename({"sample": "draw"})
        flat = flat.assign_coords(draw=np.arange(m)).expand_dims(chain=[0])
        trace = xr.DataTree.from_dict({"posterior": flat})
        fitted = self._fitted
        with warnings.catch_warnings(), _quiet_pymc():
            warnings.simplefilter("ignore", UserWarning)
            pp = pm.sample_posterior_predictive(
                trace,
                model=fitted.base,
                var_names=list(fitted.model.observed),
                random_seed=int(rng.integers(2**31 - 1)),
                progressbar=False,
            )
        group = pp["posterior_predictive"]
        frames = []
        for j in range(m):
            draw = {k: group[k].isel(chain=0, draw=j).to_numpy() for k in fitted.model.observed}
            frames.append(fitted.model.to_frame(fitted.prepared, draw))
        return frames[0] if m == 1 else frames


class PseudoPosterior:
    r"""The risk-weighted pseudo posterior mechanism on a :class:`~pseudopost.models.SynthModel`.

    Parameters
    ----------
    model
        A ready model (e.g. :class:`~pseudopost.models.LogNormalRegression`), a
        :class:`~pseudopost.models.PyMCModel`, or a ``pm.Model`` (wrapped as one).
    scale, shift
        c and g of :math:`\alpha_i = \mathrm{clip}(c(1 - r_i) + g, 0, 1)`.
    normalisation
        ``"linear"`` (the papers) or ``"logistic"`` risk normalisation.
    reweight
        Apply the Lipschitz re-weighting :math:`\alpha_i' = \mathrm{clip}(c\alpha_i\Delta/\Delta_i)`
        and refit once (public R code, LipschitzWeights).
    exclude_quantile
        If given (e.g. 0.95), drop weighted draws whose :math:`\max_i |\alpha_i f|` exceeds this
        quantile before accounting and synthesis.
    sampler
        ``"nutpie"`` (default) or ``"pymc"``.
    max_bytes
        Memory budget of the accountant's blocks (float64 values alive at once).
    """

    def __init__(
        self,
        model: SynthModel | pm.Model,
        scale: float = 1.0,
        shift: float = 0.0,
        *,
        normalisation: Normalisation = "linear",
        reweight: bool = False,
        exclude_quantile: float | None = None,
        sampler: Literal["nutpie", "pymc"] = "nutpie",
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if isinstance(model, pm.Model):
            model = PyMCModel(model)
        if not isinstance(model, SynthModel):
            raise TypeError(
                f"'model' must be a pseudopost SynthModel or a pymc.Model. "
                f"Got {type(model).__name__}."
            )
        self.model = model
        self.scale, self.shift = check_weight_knobs(scale, shift)
        normalise_risk(np.array([0.0, 1.0]), normalisation)  # validates the name
        self.normalisation = normalisation
        self.reweight = bool(reweight)
        if exclude_quantile is not None:
            check_in_interval(exclude_quantile, "exclude_quantile", 0.0, 1.0, closed="right")
        self.exclude_quantile = exclude_quantile
        if sampler not in ("nutpie", "pymc"):
            raise ValueError(
                f"The 'sampler' parameter must be 'nutpie' or 'pymc'. Got {sampler!r}."
            )
        self.sampler = sampler
        self.max_bytes = check_positive_int(max_bytes, "max_bytes", minimum=8)

    def __repr__(self) -> str:
        return (
            f"PseudoPosterior({self.model!r}, scale={self.scale}, shift={self.shift}, "
            f"normalisation={self.normalisation!r}, reweight={self.reweight})"
        )

    def fit(
        self,
        data: pd.DataFrame | None = None,
        *,
        draws: int = 1000,
        tune: int = 1000,
        chains: int = 2,
        seed: SeedLike = None,
        weights: np.ndarray | None = None,
        progress: bool | None = None,
    ) -> PseudoPosteriorResult:
        """Run the mechanism: unweighted fit, risk, weights, weighted fit, accountant.

        ``weights`` fixes :math:`\\alpha` instead of deriving it from risk (the unweighted fit is
        still run, for :attr:`~PseudoPosteriorResult.unweighted_epsilon`).
        """
        draws = check_positive_int(draws, "draws")
        tune = check_positive_int(tune, "tune", minimum=0)
        chains = check_positive_int(chains, "chains")
        prepared = self.model.prepare(data)
        fixed = None if weights is None else _check_weights(weights, prepared.n)
        rng = as_generator(seed)
        seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=3)]
        progress = interactive() if progress is None else bool(progress)
        timings: dict[str, float] = {}

        t0 = time.perf_counter()
        base = self.model.build(prepared)
        sampler = Sampler(weighted_model(base, self.model.observed), self.sampler)
        loglik = RecordFunction(base, self.model.observed)
        timings["compile"] = time.perf_counter() - t0
        fitted = _Fitted(
            self.model,
            prepared,
            base,
            sampler,
            loglik,
            draws,
            tune,
            chains,
            progress,
            self.max_bytes,
        )

        t0 = time.perf_counter()
        unweighted = sampler.sample(
            np.ones(prepared.n),
            draws=draws,
            tune=tune,
            chains=chains,
            seed=seeds[0],
            progress=progress,
        )
        timings["unweighted_fit"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        free = [rv.name for rv in base.free_RVs]
        risk = reduce_abs(
            loglik,
            stack_draws(unweighted["posterior"].to_dataset(), free),
            max_bytes=self.max_bytes,
        ).per_record
        alpha = (
            fixed
            if fixed is not None
            else risk_weights(risk, self.scale, self.shift, self.normalisation)
        )
        timings["risk"] = time.perf_counter() - t0

        weighted, red, alpha, t_w = self._weighted_fit(fitted, alpha, seeds[1])
        timings["weighted_fit"], timings["accountant"] = t_w
        if self.reweight:
            alpha = _lipschitz_reweight(alpha, alpha * red.per_record, self.scale)
            weighted, red, alpha, t_w = self._weighted_fit(fitted, alpha, seeds[2])
            timings["reweighted_fit"], timings["accountant"] = t_w
        kept, lip = _exclude_draws(fitted, weighted, alpha, red, self.exclude_quantile)
        diagnostics = {
            "unweighted": FitDiagnostics.from_fit(
                "unweighted",
                unweighted["posterior"].to_dataset(),
                _maybe(unweighted, "sample_stats"),
            ),
            "weighted": FitDiagnostics.from_fit(
                "weighted", weighted["posterior"].to_dataset(), _maybe(weighted, "sample_stats")
            ),
        }
        for d in diagnostics.values():
            d.warn()
        tree = _assemble(self, fitted, unweighted, weighted, risk, alpha, lip, kept)
        return PseudoPosteriorResult(tree, diagnostics, timings, fitted, kept)

    def _weighted_fit(self, fitted: _Fitted, alpha: np.ndarray, seed: int):
        t0 = time.perf_counter()
        weighted = fitted.sampler.sample(
            alpha,
            draws=fitted.draws,
            tune=fitted.tune,
            chains=fitted.chains,
            seed=seed,
            progress=fitted.progress,
        )
        t1 = time.perf_counter()
        free = [rv.name for rv in fitted.base.free_RVs]
        red = reduce_abs(
            fitted.loglik,
            stack_draws(weighted["posterior"].to_dataset(), free),
            alpha,
            max_bytes=fitted.max_bytes,
        )
        return weighted, red, alpha, (t1 - t0, time.perf_counter() - t1)


@contextmanager
def _quiet_pymc():
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _maybe(tree: xr.DataTree, group: str) -> xr.Dataset | None:
    return tree[group].to_dataset() if group in tree.children else None


def _check_weights(weights: np.ndarray, n: int) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"'weights' must have shape ({n},), one per record; got {w.shape}.")
    bad = ~np.isfinite(w) | (w < 0) | (w > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"'weights' must lie in [0, 1]; record {i} has {float(w[i])}.")
    if not w.any():
        raise ValueError("'weights' are all 0: the pseudo posterior would equal the prior.")
    return w.copy()


def _lipschitz_reweight(alpha: np.ndarray, lipschitz: np.ndarray, scale: float) -> np.ndarray:
    r""":math:`\alpha_i' = \mathrm{clip}(c\,\alpha_i\,\Delta/\Delta_i, 0, 1)`; records with
    :math:`\Delta_i = 0` (weight 0) keep their weight."""
    top = lipschitz.max()
    ratio = np.divide(top, lipschitz, out=np.ones_like(lipschitz), where=lipschitz > 0)
    return np.clip(scale * alpha * ratio, 0.0, 1.0)


def _exclude_draws(fitted, weighted, alpha, red: AbsReduction, q):
    n_draws = red.per_draw.size
    if q is None or q >= 1.0:
        return np.ones(n_draws, dtype=bool), alpha * red.per_record
    kept = red.per_draw <= np.quantile(red.per_draw, q)
    free = [rv.name for rv in fitted.base.free_RVs]
    draws = {k: v[kept] for k, v in stack_draws(weighted["posterior"].to_dataset(), free).items()}
    again = reduce_abs(fitted.loglik, draws, alpha, max_bytes=fitted.max_bytes)
    return kept, alpha * again.per_record


def _assemble(mech, fitted, unweighted, weighted, risk, alpha, lip, kept) -> xr.DataTree:
    record = {"record": np.asarray(fitted.prepared.index)}
    rec = lambda v: xr.DataArray(np.asarray(v, dtype=float), dims="record", coords=record)  # noqa: E731
    post = weighted["posterior"].to_dataset()
    shape = (post.sizes["chain"], post.sizes["draw"])
    weights = xr.Dataset(
        {"alpha": rec(alpha), "risk": rec(risk), "r": rec(normalise_risk(risk, mech.normalisation))}
    )
    privacy = xr.Dataset(
        {
            "lipschitz": rec(lip),
            "unweighted_lipschitz": rec(risk),
            "draw_kept": (("chain", "draw"), kept.reshape(shape)),
        },
        coords={"chain": post["chain"], "draw": post["draw"]},
        attrs={
            "epsilon": local_epsilon(lip),
            "unweighted_epsilon": local_epsilon(risk),
            "mechanism": "risk-weighted pseudo posterior (Savitsky, Williams & Hu 2022)",
            "neighbouring_relation": "add/remove one record",
            "guarantee": "local epsilon_x = 2 max_i Delta_i (asymptotic DP), per synthetic dataset",
            "scale": mech.scale,
            "shift": mech.shift,
            "normalisation": mech.normalisation,
            "reweight": int(mech.reweight),
            "exclude_quantile": -1.0 if mech.exclude_quantile is None else mech.exclude_quantile,
            "units": "log density of the outcome as given (log-normal includes -log x)",
        },
    )
    observed = xr.Dataset({k: rec(v) for k, v in fitted.prepared.arrays.items()})
    groups = {
        "posterior": post,
        "risk_posterior": unweighted["posterior"].to_dataset(),
        "observed_data": observed,
        "weights": weights,
        "privacy": privacy,
    }
    if "sample_stats" in weighted.children:
        groups["sample_stats"] = weighted["sample_stats"].to_dataset()
    if "sample_stats" in unweighted.children:
        groups["risk_sample_stats"] = unweighted["sample_stats"].to_dataset()
    return xr.DataTree.from_dict(groups)
