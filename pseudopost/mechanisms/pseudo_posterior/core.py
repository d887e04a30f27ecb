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

import json
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_in_interval, check_positive, check_positive_int
from pseudopost.fitting.cache import statistics_sampler
from pseudopost.fitting.sampler import (
    SAMPLERS,
    FitDiagnostics,
    Sampler,
    SamplingWarning,
    interactive,
)
from pseudopost.fitting.sufficient import SufficientSampler, total_statistics, unsupported_reason
from pseudopost.models.base import Prepared, SynthModel
from pseudopost.models.custom import PyMCModel
from pseudopost.models.loglik import RecordFunction, stack_draws
from pseudopost.models.weighting import value_of, weighted_model
from pseudopost.privacy.accountant import Accounting, account, sensitive_function
from pseudopost.privacy.calibration import KHAT_MAX, CalibrationReport, psis_scale_search
from pseudopost.privacy.decomposition import (
    Censored,
    Decomposition,
    RangeAveraged,
    RangeTruncated,
    Unrestricted,
)
from pseudopost.privacy.lipschitz import (
    DEFAULT_MAX_BYTES,
    local_epsilon,
    reduce_abs,
    reduce_sum,
)
from pseudopost.privacy.statement import ADD_REMOVE, PrivacyStatement
from pseudopost.risk.inclusion import inclusion_lambda
from pseudopost.risk.ranges import SensitiveRange
from pseudopost.risk.weights import Normalisation, check_weight_knobs, normalise_risk, risk_weights

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
    data: dict[str, np.ndarray] = field(default_factory=dict)

    def restore_data(self) -> None:
        """Put this fit's data back into the (cached, shared) model before using it again."""
        if self.data:
            pm.set_data(self.data, model=self.base)
            self.loglik.refresh()


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
    calibration: CalibrationReport | None = None

    @property
    def global_epsilon(self) -> float | None:
        """2B under censoring (a global guarantee, given the weights); None otherwise."""
        value = self.datatree["privacy"].attrs.get("global_epsilon")
        return None if value is None else float(value)

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """The guarantee of one synthetic dataset (m datasets compose to m epsilon)."""
        return pseudo_posterior_statement(self.datatree["privacy"].attrs)

    @property
    def lambda_(self) -> xr.DataArray | None:
        """Range-averaged lambda_i (None unless ``range_method="averaged"``)."""
        w = self.datatree["weights"]
        return w["lambda"].copy() if "lambda" in w else None

    @property
    def alpha_star(self) -> xr.DataArray:
        """Weights of the fitted posterior (alpha*; equals alpha unless range-averaged)."""
        return self.datatree["weights"]["alpha_star"].copy()

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

    @property
    def likelihood(self) -> str:
        """``"sufficient"`` or ``"full"``: how the posteriors were fitted."""
        return str(self.datatree.attrs["likelihood"])

    def summary(self) -> pd.DataFrame:
        """ArviZ summary of the weighted posterior (raw numbers)."""
        import arviz as az

        return az.summary(self.datatree, round_to="none")

    def synthesize_datasets(self, m: int, seed: SeedLike = None) -> list[pd.DataFrame]:
        """``m`` synthetic datasets, each under its own posterior draw (see :meth:`synthesize`)."""
        out = self.synthesize(m, seed)
        return [out] if isinstance(out, pd.DataFrame) else out

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
        fitted = self._fitted
        fitted.restore_data()  # a later fit may have swapped other data into the cached model
        frames = fitted.model.simulate(
            fitted.prepared, fitted.base, self.posterior, chosen, int(rng.integers(2**31 - 1))
        )
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
    sensitive_range
        A :class:`~pseudopost.risk.SensitiveRange` declaring what the public already knows about
        each outcome value (range-restricted paper); ``None`` for the plain mechanism.
    range_method
        ``"truncated"`` (default: an amplification without relaxation, section 3) or
        ``"averaged"`` (section 2: also a relaxation, averaging over data sets; better utility).
    lambda_draws
        S, the posterior-predictive draws per record for the range-averaged :math:`\lambda_i`.
    target_epsilon
        Calibrate the weights by a scale s in (0, 1] so that the local epsilon is within
        ``rtol`` (2 %) of this target (:mod:`pseudopost.privacy.calibration`).
    censor_epsilon
        Global DP by censoring (Hu, Williams & Savitsky 2025): every record's weighted
        log-likelihood contribution is censored to :math:`[-\varepsilon/2, \varepsilon/2]`
        (:class:`~pseudopost.privacy.decomposition.Censored` states the assumptions).
    normalisation
        ``"linear"`` (the papers) or ``"logistic"`` risk normalisation.
    reweight
        Apply the Lipschitz re-weighting :math:`\alpha_i' = \mathrm{clip}(c\alpha_i\Delta/\Delta_i)`
        and refit once (public R code, LipschitzWeights).
    exclude_quantile
        If given (e.g. 0.95), drop weighted draws whose :math:`\max_i c_i |g|` exceeds this
        quantile before accounting and synthesis.
    sampler
        ``"nutpie"`` (default). On the sufficient-statistics path nutpie evaluates the
        statistics model's density written out in NumPy (nothing to compile); on the
        per-record path nutpie compiles the model with numba once and refits swap the weights.
        ``"nutpie-jax"`` (recompiles each fit in well under a second) or ``"pymc"``.
    max_bytes
        Memory budget of the accountant's blocks (float64 values alive at once).
    likelihood
        How the posterior is fitted. ``"auto"`` (default): from weighted sufficient statistics
        when the model has them (normal, log-normal, Poisson with few unique predictor rows:
        :mod:`pseudopost.fitting.sufficient`) and there is no censoring, so MCMC cost does not
        grow with n; otherwise the full per-record model. ``"full"`` forces the per-record
        model; ``"sufficient"`` requires the fast path (error if unavailable). Both give the same
        posterior; the accountant visits every record either way. The path used is in
        ``result.likelihood`` and ``datatree.attrs["likelihood"]``.
    """

    def __init__(
        self,
        model: SynthModel | pm.Model,
        scale: float = 1.0,
        shift: float = 0.0,
        *,
        sensitive_range: SensitiveRange | None = None,
        range_method: Literal["truncated", "averaged"] = "truncated",
        lambda_draws: int = 1000,
        target_epsilon: float | None = None,
        censor_epsilon: float | None = None,
        rtol: float = 0.02,
        max_refits: int = 4,
        normalisation: Normalisation = "linear",
        reweight: bool = False,
        exclude_quantile: float | None = None,
        sampler: Literal["nutpie", "nutpie-jax", "pymc"] = "nutpie",
        max_bytes: int = DEFAULT_MAX_BYTES,
        likelihood: Literal["auto", "full", "sufficient"] = "auto",
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
        if sensitive_range is not None and not isinstance(sensitive_range, SensitiveRange):
            raise TypeError(
                f"'sensitive_range' must be a pseudopost.risk SensitiveRange (e.g. "
                f"MultiplicativeRange(0.4, 1.8)). Got {sensitive_range!r}."
            )
        if sensitive_range is not None and len(model.observed) != 1:
            raise ValueError("'sensitive_range' needs a model with exactly one observed outcome.")
        if range_method not in ("truncated", "averaged"):
            raise ValueError(
                f"The 'range_method' parameter must be 'truncated' or 'averaged'. "
                f"Got {range_method!r}."
            )
        self.sensitive_range = sensitive_range
        self.range_method = range_method
        self.lambda_draws = check_positive_int(lambda_draws, "lambda_draws")
        self.target_epsilon = (
            None if target_epsilon is None else check_positive(target_epsilon, "target_epsilon")
        )
        self.censor_epsilon = (
            None if censor_epsilon is None else check_positive(censor_epsilon, "censor_epsilon")
        )
        if self.censor_epsilon is not None and (
            sensitive_range is not None or self.target_epsilon is not None
        ):
            raise ValueError(
                "'censor_epsilon' sets a global epsilon directly; it cannot be "
                "combined with 'sensitive_range' or 'target_epsilon'."
            )
        self.rtol = check_in_interval(rtol, "rtol", 0.0, 1.0, closed="neither")
        self.max_refits = check_positive_int(max_refits, "max_refits")
        normalise_risk(np.array([0.0, 1.0]), normalisation)  # validates the name
        self.normalisation = normalisation
        self.reweight = bool(reweight)
        if exclude_quantile is not None:
            check_in_interval(exclude_quantile, "exclude_quantile", 0.0, 1.0, closed="right")
        self.exclude_quantile = exclude_quantile
        if sampler not in SAMPLERS:
            raise ValueError(f"The 'sampler' parameter must be one of {SAMPLERS}. Got {sampler!r}.")
        self.sampler = sampler
        self.max_bytes = check_positive_int(max_bytes, "max_bytes", minimum=8)
        if likelihood not in LIKELIHOODS:
            raise ValueError(
                f"The 'likelihood' parameter must be one of {LIKELIHOODS}. Got {likelihood!r}."
            )
        if likelihood == "sufficient":
            reason = (
                "censoring clips each record's contribution, which no sum preserves"
                if self.censor_epsilon is not None
                else unsupported_reason(model)
            )
            if reason is not None:
                raise ValueError(f"likelihood='sufficient' is not available: {reason}.")
        self.likelihood = likelihood

    def __repr__(self) -> str:
        extra = ""
        if self.sensitive_range is not None:
            extra += (
                f", sensitive_range={self.sensitive_range!r}, range_method={self.range_method!r}"
            )
        if self.target_epsilon is not None:
            extra += f", target_epsilon={self.target_epsilon}"
        if self.censor_epsilon is not None:
            extra += f", censor_epsilon={self.censor_epsilon}"
        return (
            f"PseudoPosterior({self.model!r}, scale={self.scale}, shift={self.shift}"
            f"{extra}, normalisation={self.normalisation!r}, reweight={self.reweight})"
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
        """Run the mechanism: unweighted fit, risk, weights, weighted fit(s), accountant.

        ``weights`` fixes :math:`\\alpha` instead of deriving it from risk (the unweighted fit is
        still run, for :attr:`~PseudoPosteriorResult.unweighted_epsilon`). All validation (data,
        arguments, sensitive ranges) happens before any compilation or sampling.

        ``data`` may also be a Dask DataFrame or a Parquet path: the mechanism then runs chunked
        over records (:func:`pseudopost.mechanisms.pseudo_posterior.dask.backend.fit_dask`, same seeds and numbers).
        """
        from pseudopost._io import is_dask_input

        if is_dask_input(data):
            from pseudopost.mechanisms.pseudo_posterior.dask.backend import fit_dask

            return fit_dask(self, data, draws=draws, tune=tune, chains=chains, seed=seed,
                            weights=weights, progress=progress)  # fmt: skip
        draws = check_positive_int(draws, "draws")
        tune = check_positive_int(tune, "tune", minimum=0)
        chains = check_positive_int(chains, "chains")
        prepared = self.model.prepare(data)
        bounds = None
        if self.sensitive_range is not None:
            bounds = self.sensitive_range.bounds(self.model.outcome_values(prepared))
        fixed = None if weights is None else _check_weights(weights, prepared.n)
        rng = as_generator(seed)
        seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=5 + self.max_refits)]
        progress = interactive() if progress is None else bool(progress)
        timings: dict[str, float] = {}

        t0 = time.perf_counter()
        bound = None if self.censor_epsilon is None else self.censor_epsilon / 2.0
        path, path_note = self._likelihood_path(prepared)
        base, sampler, loglik = _compiled(
            self.model, prepared, bound is not None, self.sampler, path == "sufficient"
        )
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
            {v.name: value_of(v).copy() for v in base.data_vars},
        )

        t0 = time.perf_counter()
        unweighted = sampler.sample(
            np.ones(prepared.n),
            draws=draws,
            tune=tune,
            chains=chains,
            seed=seeds[0],
            progress=progress,
            censor_bound=_NO_CENSOR,
        )
        timings["unweighted_fit"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        risk = reduce_abs(loglik, _draws(fitted, unweighted), max_bytes=self.max_bytes).per_record
        alpha = (
            fixed
            if fixed is not None
            else risk_weights(risk, self.scale, self.shift, self.normalisation)
        )
        timings["risk"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        decomp = self._decomposition(fitted, unweighted, bounds, bound, seeds[3])
        sens = sensitive_function(decomp, self.model, base, loglik)
        timings["decomposition"] = time.perf_counter() - t0

        fit = _weighted_fit(fitted, decomp, sens, alpha, seeds[1], bound)
        timings["weighted_fit"], timings["accountant"] = fit.seconds
        if self.reweight:
            alpha = _lipschitz_reweight(alpha, fit.lipschitz, self.scale)
            fit = _weighted_fit(fitted, decomp, sens, alpha, seeds[2], bound)
            timings["reweighted_fit"], timings["accountant"] = fit.seconds
        calibration = None
        if self.target_epsilon is not None:
            t0 = time.perf_counter()
            fit, calibration = self._calibrate(fitted, decomp, sens, alpha, fit, seeds[4:])
            timings["calibration"] = time.perf_counter() - t0
        kept, lip = _exclude_draws(fitted, fit, decomp, sens, self.exclude_quantile)
        diagnostics = {
            "unweighted": FitDiagnostics.from_fit(
                "unweighted",
                unweighted["posterior"].to_dataset(),
                _maybe(unweighted, "sample_stats"),
            ),
            "weighted": FitDiagnostics.from_fit(
                "weighted", fit.tree["posterior"].to_dataset(), _maybe(fit.tree, "sample_stats")
            ),
        }
        for d in diagnostics.values():
            d.warn()
        tree = _assemble(
            self, fitted, unweighted, fit, risk, decomp, lip, kept, bounds, calibration
        )
        tree.attrs.update(likelihood=path, likelihood_note=path_note)
        return PseudoPosteriorResult(tree, diagnostics, timings, fitted, kept, calibration)

    def _likelihood_path(self, prepared: Prepared) -> tuple[str, str]:
        """("sufficient" | "full", why): the fast path whenever allowed and available."""
        if self.likelihood == "full":
            return "full", "per-record likelihood (likelihood='full')"
        if self.censor_epsilon is not None:
            reason = "censoring clips each record's contribution, which no sum preserves"
        else:
            reason = unsupported_reason(self.model, prepared)
        if reason is None:
            return "sufficient", "fitted from weighted sufficient statistics (exact)"
        if self.likelihood == "sufficient":
            raise ValueError(f"likelihood='sufficient' is not available: {reason}.")
        return "full", f"per-record likelihood: {reason}"

    def _decomposition(self, fitted, unweighted, bounds, bound, seed) -> Decomposition:
        if bound is not None:
            return Censored(bound)
        if bounds is None:
            return Unrestricted()
        if self.range_method == "truncated":
            return RangeTruncated(*bounds)
        lam = inclusion_lambda(
            fitted.base,
            unweighted["posterior"].to_dataset(),
            self.model.observed[0],
            *bounds,
            draws=self.lambda_draws,
            seed=seed,
            max_bytes=self.max_bytes,
        )
        return RangeAveraged(lam)

    def _calibrate(self, fitted, decomp, sens, alpha, fit, seeds):
        """Scale alpha by s so that epsilon is within rtol of the target (module
        :mod:`pseudopost.privacy.calibration`); at most ``max_refits`` refits."""
        target = float(self.target_epsilon)
        report = CalibrationReport(target)
        s_cur, eps_cur = 1.0, fit.epsilon
        if eps_cur <= target * (1 + self.rtol):
            report.achieved, report.within_tolerance = eps_cur, True
            report.note = (
                "already at or below the target with s = 1; weights are not raised "
                "above the risk-based ones"
            )
            return fit, report
        u = float(as_generator(seeds[0]).uniform())
        shape = (fit.tree["posterior"].sizes["chain"], fit.tree["posterior"].sizes["draw"])
        for j in range(self.max_refits):
            draws = _draws(fitted, fit.tree)
            total = reduce_sum(
                fitted.loglik, draws, decomp.coefficient(s_cur * alpha), max_bytes=fitted.max_bytes
            )
            s_new, khat = psis_scale_search(total, fit.accounting.per_draw, s_cur, target, shape, u)
            report.khat.append(khat)
            if khat > KHAT_MAX:  # importance sampling unreliable: proportional update instead
                s_new = s_cur * target / eps_cur
            s_new = float(min(1.0, max(s_new, 1e-6)))
            fit = _weighted_fit(fitted, decomp, sens, s_new * alpha, seeds[1 + j], None)
            report.refits += 1
            s_cur, eps_cur = s_new, fit.epsilon
            if abs(eps_cur - target) <= self.rtol * target:
                report.within_tolerance = True
                break
        report.scale, report.achieved = s_cur, eps_cur
        if not report.within_tolerance:
            warnings.warn(
                f"Calibration reached epsilon {eps_cur:.4g} (target {target:.4g}) "
                f"after {report.refits} refit(s); raise max_refits.",
                SamplingWarning,
                stacklevel=3,
            )
        return fit, report


@dataclass
class _Fit:
    """One weighted fit and its accounting."""

    tree: xr.DataTree
    alpha: np.ndarray
    accounting: Accounting
    seconds: tuple[float, float]

    @property
    def lipschitz(self) -> np.ndarray:
        return self.accounting.lipschitz

    @property
    def epsilon(self) -> float:
        return self.accounting.epsilon


_NO_CENSOR = 1e300  # censor bound used for the unweighted (ordinary) posterior
_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 8
LIKELIHOODS = ("auto", "full", "sufficient")


class _StatisticsFit:
    """The mechanism's sampler interface (weights in, draws out) on the sufficient-statistics
    fast path: each fit reduces the records to weighted statistics, then samples from them."""

    def __init__(self, model: SynthModel, stats_sampler: SufficientSampler) -> None:
        self.model = model
        self.stats_sampler = stats_sampler
        self.arrays: dict[str, np.ndarray] = {}
        self.data: dict[str, np.ndarray] = {}  # set by _compiled; unused here

    @property
    def kind(self) -> str:
        return self.stats_sampler.kind

    @property
    def compilations(self) -> int:
        return self.stats_sampler.compilations

    def sample(self, weights, *, draws, tune, chains, seed, progress=False, censor_bound=None):
        stats = total_statistics(self.model, self.arrays, weights)
        return self.stats_sampler.sample(stats, draws, tune, chains, seed, progress)


def _compiled(
    model: SynthModel, prepared: Prepared, censored: bool, kind: str, sufficient: bool = False
):
    """The model's PyMC graph, compiled sampler and record function, reused across fits.

    Compilation (~10 s) is keyed by the model's *structure* (its repr, the record count, the
    columns, censoring, sampler, likelihood path); a later fit on other data of the same shape
    swaps every data variable in place (``pm.set_data`` and nutpie's ``with_data``) instead of
    recompiling. On the sufficient-statistics path the sampler is compiled once per structure
    for every n (:func:`~pseudopost.fitting.cache.statistics_sampler`) and reads the current records at each fit.
    """
    entry = _compiled_entry(model, prepared, censored, kind, sufficient)
    if sufficient:
        entry[1].arrays = prepared.arrays
    return entry


def _compiled_entry(model, prepared, censored, kind, sufficient):
    fresh = model.build(prepared)
    struct = id(model.model) if isinstance(model, PyMCModel) else repr(model)
    key = (
        type(model).__name__,
        struct,
        prepared.n,
        tuple(prepared.arrays),
        censored,
        kind,
        sufficient,
    )
    if key in _CACHE:
        base, sampler, loglik = _CACHE[key]
        _CACHE.move_to_end(key)
        values = {v.name: value_of(v) for v in fresh.data_vars}
        if values:
            pm.set_data(values, model=base)
            sampler.data = values
            loglik.refresh()
        return base, sampler, loglik
    bound = 1.0 if censored else None  # the bound itself is data, set per fit
    if sufficient:
        sampler = _StatisticsFit(model, statistics_sampler(model, prepared.arrays, kind))
    else:
        sampler = Sampler(weighted_model(fresh, model.observed, censor_bound=bound), kind)
    from pseudopost.privacy.fused import record_function  # fused Numba kernel for the ready models

    entry = (fresh, sampler, record_function(model, fresh))
    _CACHE[key] = entry
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return entry


def _draws(fitted: _Fitted, tree: xr.DataTree) -> dict[str, np.ndarray]:
    free = [rv.name for rv in fitted.base.free_RVs]
    return stack_draws(tree["posterior"].to_dataset(), free)


def _weighted_fit(fitted, decomp, sens, alpha, seed, bound) -> _Fit:
    t0 = time.perf_counter()
    tree = fitted.sampler.sample(
        decomp.fit_weights(alpha),
        draws=fitted.draws,
        tune=fitted.tune,
        chains=fitted.chains,
        seed=seed,
        progress=fitted.progress,
        censor_bound=bound,
    )
    t1 = time.perf_counter()
    acc = account(sens, _draws(fitted, tree), alpha, decomp, max_bytes=fitted.max_bytes)
    return _Fit(tree, alpha, acc, (t1 - t0, time.perf_counter() - t1))


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


def _exclude_draws(fitted, fit: _Fit, decomp, sens, q):
    """Drop draws whose max_i c_i |g| exceeds the q-quantile; re-account on the kept draws."""
    n_draws = fit.accounting.per_draw.size
    if q is None or q >= 1.0:
        return np.ones(n_draws, dtype=bool), fit.lipschitz
    kept = fit.accounting.per_draw <= np.quantile(fit.accounting.per_draw, q)
    draws = {k: v[kept] for k, v in _draws(fitted, fit.tree).items()}
    again = account(sens, draws, fit.alpha, decomp, max_bytes=fitted.max_bytes)
    return kept, again.lipschitz


def pseudo_posterior_statement(attrs) -> PrivacyStatement:
    """The :class:`~pseudopost.privacy.PrivacyStatement` of a fit from its ``privacy`` attrs:
    under censoring, epsilon = 2B, a worst-case bound given the weights (Hu, Williams & Savitsky
    2025); otherwise the local :math:`\\varepsilon_x = 2\\max_i\\Delta_i` of this database
    (Savitsky, Williams & Hu 2022, Theorem 3; range-restricted paper eq. 7 / Definition 4)."""
    censored = attrs.get("global_epsilon") is not None
    assumptions = ["exact sampling from the pseudo posterior (MCMC error is not accounted)"]
    if attrs.get("decomposition") in ("truncated", "averaged"):
        assumptions.append("the declared sensitive ranges are public")
    if censored:
        assumptions.append("the weights were fixed before the data were seen")
        return PrivacyStatement(
            mechanism="pseudo_posterior",
            epsilon=float(attrs["global_epsilon"]),
            delta=0.0,
            neighbouring=ADD_REMOVE,
            scope="global",
            unit="dataset",
            assumptions=tuple(assumptions),
            source="Hu, Williams & Savitsky (2025), censored pseudo posterior",
        )
    assumptions.append("local to this database: epsilon_x contracts to a global epsilon as n grows")
    return PrivacyStatement(
        mechanism="pseudo_posterior",
        epsilon=float(attrs["epsilon"]),
        delta=0.0,
        neighbouring=ADD_REMOVE,
        scope="local",
        unit="dataset",
        assumptions=tuple(assumptions),
        source="Savitsky, Williams & Hu (2022), Theorem 3; range-restricted paper eqs. 7, 20-21",
    )


def _guarantee(decomp, bounds) -> str:
    if isinstance(decomp, Censored):
        return (
            f"global epsilon = 2B = {2 * decomp.bound:g} by censoring (Hu, Williams & "
            "Savitsky 2025), given the weights and exact posterior sampling"
        )
    text = "local epsilon_x = 2 max_i Delta_i (asymptotic DP), per synthetic dataset"
    return text if bounds is None else text + ", conditional on the declared sensitive ranges"


def _assemble(
    mech, fitted, unweighted, fit: _Fit, risk, decomp, lip, kept, bounds, calibration
) -> xr.DataTree:
    record = {"record": np.asarray(fitted.prepared.index)}
    rec = lambda v: xr.DataArray(np.asarray(v, dtype=float), dims="record", coords=record)  # noqa: E731
    post = fit.tree["posterior"].to_dataset()
    shape = (post.sizes["chain"], post.sizes["draw"])
    weights = {
        "alpha": rec(fit.alpha),
        "alpha_star": rec(decomp.fit_weights(fit.alpha)),
        "risk": rec(risk),
        "r": rec(normalise_risk(risk, mech.normalisation)),
    }
    if isinstance(decomp, RangeAveraged):
        weights["lambda"] = rec(decomp.lam)
    privacy_vars = {
        "lipschitz": rec(lip),
        "unweighted_lipschitz": rec(risk),
        "draw_kept": (("chain", "draw"), kept.reshape(shape)),
    }
    if bounds is not None:
        privacy_vars["range_lower"], privacy_vars["range_upper"] = rec(bounds[0]), rec(bounds[1])
    attrs = {
        "epsilon": local_epsilon(lip),
        "unweighted_epsilon": local_epsilon(risk),
        "mechanism": "risk-weighted pseudo posterior (Savitsky, Williams & Hu 2022)",
        "decomposition": decomp.name,
        "neighbouring_relation": "add/remove one record",
        "guarantee": _guarantee(decomp, bounds),
        "scale": mech.scale,
        "shift": mech.shift,
        "normalisation": mech.normalisation,
        "reweight": int(mech.reweight),
        "exclude_quantile": -1.0 if mech.exclude_quantile is None else mech.exclude_quantile,
        "units": "log density of the outcome as given (log-normal includes -log x)",
    }
    if isinstance(decomp, Censored):
        attrs["global_epsilon"] = 2.0 * decomp.bound
    if mech.sensitive_range is not None:
        attrs["sensitive_range"] = json.dumps(mech.sensitive_range.describe(), default=float)
    if calibration is not None:
        attrs["calibration"] = json.dumps(calibration.as_dict())
    privacy = xr.Dataset(
        privacy_vars, coords={"chain": post["chain"], "draw": post["draw"]}, attrs=attrs
    )
    observed = xr.Dataset(
        {  # a record may hold a vector (e.g. a multivariate outcome): extra dims per variable
            k: xr.DataArray(
                np.asarray(v, dtype=float),
                dims=("record", *(f"{k}_dim_{j}" for j in range(1, np.ndim(v)))),
                coords=record,
            )
            for k, v in fitted.prepared.arrays.items()
        }
    )
    groups = {
        "posterior": post,
        "risk_posterior": unweighted["posterior"].to_dataset(),
        "observed_data": observed,
        "weights": xr.Dataset(weights),
        "privacy": privacy,
    }
    if "sample_stats" in fit.tree.children:
        groups["sample_stats"] = fit.tree["sample_stats"].to_dataset()
    if "sample_stats" in unweighted.children:
        groups["risk_sample_stats"] = unweighted["sample_stats"].to_dataset()
    return xr.DataTree.from_dict(groups)
