r"""The risk-weighted pseudo posterior mechanism (Savitsky, Williams & Hu, JMLR 2022).

:meth:`PseudoPosterior.fit` runs the algorithm box below top to bottom (range-restricted paper,
section 1.1; guide: *The pseudo posterior mechanism*); its comments carry the step numbers and
equations:

1. Fit the unweighted posterior; risk :math:`L_i = \max_m |f_{\theta_m}(x_i)|`.
2. Weights :math:`\alpha_i = \mathrm{clip}(c(1 - r_i) + g, 0, 1)` (:mod:`pseudopost.risk`), or
   weights given to ``fit``.
3. Split the pseudo likelihood into public and sensitive parts (eqs. 20-21,
   :mod:`pseudopost.privacy.decomposition`): unrestricted, range-truncated, range-averaged or
   censored.
4. Refit the pseudo posterior :math:`\xi^{\alpha^*}(\theta\mid x) \propto
   \prod_i p(x_i\mid\theta)^{\alpha^*_i}\xi(\theta)` (eq. 1), same compiled model, new weights;
   accountant :math:`\Delta_i = c_i\max_m |g_{\theta_m}(x_i)|` over the weighted draws,
   :math:`\varepsilon_x = 2\max_i \Delta_i` (eq. 7; local to x; asymptotic DP; add/remove
   neighbours).
5. Optional, as in the public R code: re-weighting
   :math:`\alpha_i' = \mathrm{clip}(c\,\alpha_i \Delta / \Delta_i)` then refit (raises utility at a
   similar epsilon); calibration of the weights' scale to a target epsilon; exclusion of draws
   whose :math:`\max_i c_i|g_{\theta_m}(x_i)|` exceeds a quantile (epsilon is then computed on
   the kept draws only).
6. Synthesize (:mod:`.result`): each dataset is a posterior-predictive draw under one kept
   weighted draw.

Privacy of the release: each synthetic dataset is one draw from the mechanism and carries
:math:`\varepsilon_x`; releasing m datasets from m posterior draws composes to
:math:`m\,\varepsilon_x` under basic composition. The risk step and the weights use the data and
are covered only through the local accountant (the papers' convention), not by a separate
budget; :func:`~pseudopost.mechanisms.pseudo_posterior.result.pseudo_posterior_statement` says
what each fit guarantees.

Data never stay in shared state: each fit builds its own PyMC model of its own data (kept by
the result for synthesis), borrows a compiled sampler by model structure
(:mod:`pseudopost.fitting.cache`) and passes every sample its data explicitly.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr
from pymc.model.fgraph import clone_model

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_in_interval, check_positive, check_positive_int
from pseudopost.fitting.cache import statistics_sampler, weighted_sampler
from pseudopost.fitting.censored import CENSOR_SPLITS, censored_part_draws, split_bound
from pseudopost.fitting.columns import ColumnSampler, file_part_data, pair_draws, part_seed
from pseudopost.fitting.columns import statistics_data as part_statistics
from pseudopost.fitting.sampler import SAMPLERS, Sampler, SamplingWarning, model_data
from pseudopost.fitting.sufficient import statistics_data, total_statistics, unsupported_reason
from pseudopost.mechanisms.pseudo_posterior.result import (
    PseudoPosteriorResult,
    fit_groups,
    guarantee_text,
    privacy_attrs,
    weights_origin,
)
from pseudopost.mechanisms.pseudo_posterior.settings import FitSettings, diagnose, fit_seeds
from pseudopost.models.base import BuiltModel, LevelsModel, PartsModel, Prepared, SynthModel
from pseudopost.models.custom import PyMCModel
from pseudopost.models.loglik import stack_draws
from pseudopost.models.parts import BinPointsPart
from pseudopost.models.weighting import CENSOR_NAME, WEIGHTS_NAME
from pseudopost.privacy.accountant import Accounting, account, sensitive_function
from pseudopost.privacy.calibration import KHAT_MAX, CalibrationReport, psis_scale_search
from pseudopost.privacy.decomposition import (
    Censored,
    Decomposition,
    PartsCensored,
    RangeAveraged,
    RangeTruncated,
    Unrestricted,
)
from pseudopost.privacy.fused import record_function
from pseudopost.privacy.kernels.parts import PartAccountant
from pseudopost.privacy.lipschitz import (
    DEFAULT_MAX_BYTES,
    PerRecordFunction,
    local_epsilon,
    reduce_abs,
    reduce_sum,
)
from pseudopost.risk.inclusion import inclusion_lambda
from pseudopost.risk.ranges import SensitiveRange
from pseudopost.risk.weights import (
    Normalisation,
    check_weight_knobs,
    level_floor,
    level_rake,
    normalise_risk,
    part_rake,
    risk_weights,
)

__all__ = ["LIKELIHOODS", "PseudoPosterior", "PseudoPosteriorResult"]

LIKELIHOODS = ("auto", "full", "sufficient", "parts")
#: how the risk step's unweighted posterior is drawn (PseudoPosterior's ``risk_fit``)
RISK_FITS = ("nuts", "laplace")
#: the risk step of a whole-file release (pseudopost.synthesize and the whole_file spec)
FILE_RISK_FIT = "laplace"
#: how the weighted (pseudo) posterior is drawn (PseudoPosterior's ``weighted_fit``)
WEIGHTED_FITS = ("nuts", "imh")
#: the weighted fit of a whole-file release
FILE_WEIGHTED_FIT = "imh"
#: the weight floor of a whole-file release (see :func:`~pseudopost.risk.weights.level_floor`)
FILE_WEIGHT_FLOOR = 0.5
#: raking of a whole-file release's weights to the data's level shares (see
#: :func:`~pseudopost.risk.weights.level_rake`): off by default. Raking to the shares lowers the
#: total weight far: on Adult (39,074 records) to about 2,000-3,000, where one posterior draw is
#: as noisy as a sample of that size. With a floor of 2,000 (the default at 643ee45) the
#: weighted epsilon fell from 56.8 to 14.2 but the weighted release's CI overlap from 0.652 to
#: 0.218 and its quality from 0.982 to 0.972 (benchmarks/defaults.py); at 1 chain x 60 draws,
#: three synthetic files each: CI overlap 0.18 (floor 2,000, epsilon 10.7), 0.58 (floor
#: 19,537, half the records, epsilon 41.9) and 0.68 (no raking, epsilon 39.9)
FILE_RAKE_MIN_WEIGHT = None
#: the sampling of every part of a whole-file release: draws, tuning steps, chains (sized for
#: what the mechanism needs from the draws: pseudopost.synthesize's ``draws``)
FILE_DRAWS, FILE_TUNE, FILE_CHAINS = 250, 100, 2
#: the most draws per chain of the risk step under ``risk_fit="laplace"``: its draws only rank
#: the records' risks :math:`L_i = \max_m |f(x_i \mid \theta_m)|`, which 100 draws per chain
#: rank as 250 do: on YRBSS the weights alpha from 100 and from 250 draws (seed 1) correlate
#: 0.997 (mean absolute difference 0.010), those from 250 draws under seeds 1 and 2 0.994
#: (0.010): the cut is within the draws' own noise; CPS 1991: 0.994 (0.013). The whole call is
#: 10-16 % shorter (the risk step's NUTS runs: YRBSS 25 -> 16 s, CPS 22 -> 17 s)
RISK_DRAWS = 100
#: part raking of a whole-file release (PseudoPosterior's ``part_rake``): on
FILE_PART_RAKE = True
#: value parts over at most this many points or bins are raked point by point too (a 0/1
#: answer, days of the week), with the categorical, status and heap parts
PART_RAKE_VALUES = 20
#: ... and a value part over more points or bins is raked over this many runs of consecutive
#: points (FileModel.level_groups' ``runs``): the risk weights of a census file move its
#: grids' margins too. Fertility (1980 PUMS, 203,723 records), weeks worked on the grid 0-52:
#: 47.1 % of the records work 0 weeks, 53.4 % of the weighted release's before (its one-way
#: S_pMSE 53, the unweighted release's 0.5)
PART_RAKE_RUNS = 20
_NO_CENSOR = 1e300  # censor bound of the unweighted (ordinary) posterior of a censored model


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
        (:class:`~pseudopost.privacy.decomposition.Censored` states the assumptions). A global
        guarantee only when the weights are fixed before the data are seen (``shift >= 1``,
        which makes every weight 1, or ``fit(weights=..., public_weights=True)``); with
        risk-based weights it holds given the weights (``result.privacy_statement.scope``).
        A whole-file model (:class:`~pseudopost.models.file.FileModel`) is censored part by
        part: part k's weighted contribution of each record to :math:`[-B_k, B_k]`,
        :math:`\sum_k B_k = \varepsilon/2`, split equally over the parts
        (``pseudopost.privacy.decomposition.PartsCensored`` states the composition;
        ``datatree["privacy"].attrs["censor_bounds"]`` the split); each censored part is drawn
        by NUTS on its exact censored density (``pseudopost.fitting.censored``; not by
        ``weighted_fit="imh"``). With every weight 1 the weight floor, raking and part raking,
        identities then, are skipped, so the weights stay fixed before the data. Refused:
        bin-point and nested (hierarchy) parts, drawn only from their conjugate Dirichlet.
    normalisation
        ``"linear"`` (the papers) or ``"logistic"`` risk normalisation.
    reweight
        Apply the Lipschitz re-weighting :math:`\alpha_i' = \mathrm{clip}(c\alpha_i\Delta/\Delta_i)`
        and refit once (public R code, LipschitzWeights).
    exclude_quantile
        If given (e.g. 0.95), drop weighted draws whose :math:`\max_i c_i |g|` exceeds this
        quantile before accounting and synthesis (not with ``censor_epsilon``: a data-dependent
        choice of draws that its global guarantee does not cover).
    sampler
        ``"nutpie"`` (default). On the sufficient-statistics path nutpie evaluates the
        statistics model's density written out in NumPy (nothing to compile); on the
        per-record path nutpie compiles the model with numba once per model structure and
        every fit passes its data and weights (:mod:`pseudopost.fitting.cache`).
        ``"nutpie-jax"`` (recompiles each fit in well under a second) or ``"pymc"`` (PyMC's
        NUTS; its chains run one after the other in this process, so no child process imports
        the user's script again).
    max_bytes
        Memory budget of the accountant's blocks (float64 values alive at once).
    likelihood
        How the posterior is fitted. ``"auto"`` (default): from weighted sufficient statistics
        when the model has them (normal, log-normal, Poisson with few unique predictor rows:
        :mod:`pseudopost.fitting.sufficient`) and there is no censoring, so MCMC cost does not
        grow with n; otherwise the full per-record model. ``"full"`` forces the per-record
        model; ``"sufficient"`` requires the fast path (error if unavailable). Both give the same
        posterior; the accountant visits every record either way. The path used is in
        ``result.likelihood`` and ``datatree.attrs["likelihood"]``. A whole-file model
        (:class:`~pseudopost.models.file.FileModel`) takes the ``"parts"`` path: every column
        part's weighted posterior fitted alone from its grouped statistics
        (:mod:`pseudopost.fitting.columns`; ``sampler`` is not used), the parts' draws paired
        by index, risk and accountant from the fused per-column kernel
        (:class:`~pseudopost.privacy.kernels.parts.PartAccountant`, no n x M matrix).
    weight_floor
        f in [0, 1]: after the risk weights, raise (never lower) weights so that every level of
        every categorical part keeps at least f times its share of the weighted likelihood
        (:func:`~pseudopost.risk.weights.level_floor`; a model with categorical levels, such as
        a whole-file model). 0 (default) is the papers' weights.
    part_rake
        After the floor, give each categorical, status and heap part of a whole-file model
        (each value part over at most :data:`PART_RAKE_VALUES` points point by point, a wider
        one over :data:`PART_RAKE_RUNS` runs of consecutive points) its own weights
        :math:`\alpha_i r_{iq}`, lowered (never raised) inside that part alone so that its
        weighted level shares are the data's (:func:`~pseudopost.risk.weights.part_rake`):
        the risk weights no longer move the synthetic margins of those columns (SLID: wages
        present for 46 % of the weighted release's records against 56 % in the data; 56 % with
        part raking). The accountant bounds each record's term of that pseudo likelihood,
        :math:`\Delta_i = \alpha_i\max_m|\sum_q r_{iq} f_q(x_i;\theta_{q,m})|`
        (:meth:`~pseudopost.privacy.kernels.parts.PartAccountant.with_factors`); the factors
        are in the ``weights`` group (``part_factor``). Off by default here; on for
        :func:`pseudopost.synthesize` (``FILE_PART_RAKE``).
    rake_min_weight
        After the floor, lower (never raise) weights so that the levels of every categorical,
        status and heap part keep their shares in the data (raking downwards,
        :func:`~pseudopost.risk.weights.level_rake`), stopping before the total weight
        :math:`\sum_i \alpha_i` (the weighted likelihood's effective number of records) would
        fall below this; ``privacy`` attributes ``weight_total_before_rake`` and
        ``weight_total``. None (default): no raking; 0: to convergence.
    floor_cost
        Also record the epsilon of the pseudo posterior with the weights before the floor
        (``privacy`` attribute ``epsilon_without_floor``; the number of weights the floor raised
        is ``weights_raised_by_floor``): the floor's cost in epsilon. When the floor raised a
        weight this is one more weighted fit (same seed); when it raised none, the fit is the
        same and so is its epsilon.
    workers
        Threads that fit a whole-file model's parts in parallel (default: the machine's
        cores); a ``distributed`` client, when active, fits them as Dask tasks instead.
    risk_fit
        How the risk step's unweighted posterior is drawn: ``"nuts"`` (default: MCMC, as the
        papers) or, for a whole-file model, ``"laplace"``: each part's independent draws from
        its Laplace approximation :math:`N(\hat\theta, H^{-1})` on the unconstrained scale
        (:func:`~pseudopost.fitting.parts.laplace_draws`), importance-resampled where the
        Pareto k-hat allows, else its split-normal form's own draws; NUTS for a part whose
        mode Newton's method on the exact Hessian did not reach. The risk step only sets the weights
        :math:`\alpha`, which the accountant takes as given (eq. 7 is computed on the
        weighted fit's MCMC draws either way), so the approximation changes which weights are
        chosen, not what the stated epsilon means; it removes one of the two MCMC fits.
        ``unweighted_epsilon`` and ``synthesize(weighted=False)`` then describe the
        approximation, and the unweighted fit has no MCMC diagnostics. Its draws are at most
        ``RISK_DRAWS`` (100, in this module) per chain: they rank the risks; ``draws`` sizes
        the weighted fit.
    weighted_fit
        How the weighted pseudo posterior (eq. 1), whose draws the accountant (eq. 7) and the
        synthetic data use, is drawn: ``"nuts"`` (default) or, for a whole-file model,
        ``"imh"``: each part's independence Metropolis-Hastings chain with its Laplace
        approximation as the proposal (``pseudopost.fitting.parts.independence_draws``),
        NUTS for a part whose mode Newton's method did not reach or whose chain accepts too
        few proposals. Both are exact MCMC kernels of the same pseudo posterior (the
        stationary distribution does not depend on the proposal), so the accountant's
        :math:`\epsilon_x` keeps its meaning; the independence chain costs one log density
        per draw instead of a NUTS trajectory of gradients.
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
        likelihood: Literal["auto", "full", "sufficient", "parts"] = "auto",
        weight_floor: float = 0.0,
        floor_cost: bool = False,
        workers: int | None = None,
        risk_fit: Literal["nuts", "laplace"] = "nuts",
        rake_min_weight: float | None = None,
        weighted_fit: Literal["nuts", "imh"] = "nuts",
        part_rake: bool = False,
    ) -> None:
        if isinstance(model, pm.Model):
            model = PyMCModel(model)
        if not isinstance(model, SynthModel):
            raise TypeError(
                f"'model' must be a pseudopost SynthModel or a pymc.Model. "
                f"Got {type(model).__name__}."
            )
        if not isinstance(model, (BuiltModel, PartsModel)):
            raise TypeError(
                f"{type(model).__name__} has neither capability the mechanism fits: 'pymc' "
                f"(a 'build' method giving one PyMC model) or 'parts' ('parts', 'part_data' and "
                f"'iter_part_data'; pseudopost.checks.capabilities names a model's)."
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
            if self.censor_epsilon is not None and exclude_quantile < 1.0:
                raise ValueError(
                    f"'exclude_quantile'={exclude_quantile} drops posterior draws by a rule that "
                    "depends on the data, which the global epsilon of 'censor_epsilon' (exact "
                    "draws of the censored posterior) does not cover; use one or the other."
                )
        self.exclude_quantile = exclude_quantile
        if sampler not in SAMPLERS:
            raise ValueError(f"The 'sampler' parameter must be one of {SAMPLERS}. Got {sampler!r}.")
        self.sampler = sampler
        self.max_bytes = check_positive_int(max_bytes, "max_bytes", minimum=8)
        if likelihood not in LIKELIHOODS:
            raise ValueError(
                f"The 'likelihood' parameter must be one of {LIKELIHOODS}. Got {likelihood!r}."
            )
        self.weight_floor = check_in_interval(weight_floor, "weight_floor", 0.0, 1.0)
        if self.weight_floor > 0 and not isinstance(model, LevelsModel):
            raise ValueError(
                f"'weight_floor' keeps the levels of a model's categorical parts; "
                f"{type(model).__name__} has none (use a whole-file model, FileModel)."
            )
        self.floor_cost = bool(floor_cost)
        if rake_min_weight is not None:
            if isinstance(rake_min_weight, bool) or not isinstance(rake_min_weight, (int, float)) \
                    or not rake_min_weight >= 0:  # fmt: skip
                raise ValueError(
                    f"'rake_min_weight' must be a number >= 0 or None. Got {rake_min_weight!r}."
                )
            if not isinstance(model, LevelsModel):
                raise ValueError(
                    f"'rake_min_weight' rakes the levels of a model's categorical parts; "
                    f"{type(model).__name__} has none (use a whole-file model, FileModel)."
                )
        self.rake_min_weight = None if rake_min_weight is None else float(rake_min_weight)
        if not isinstance(part_rake, bool):
            raise TypeError(f"'part_rake' must be True or False. Got {part_rake!r}.")
        if part_rake and not (isinstance(model, LevelsModel) and isinstance(model, PartsModel)):
            raise ValueError(
                f"'part_rake' gives each categorical part of a whole-file model its own weights; "
                f"{type(model).__name__} has no such parts (use a whole-file model, FileModel)."
            )
        self.part_rake = part_rake
        if workers is not None:
            check_positive_int(workers, "workers")
        self.workers = workers
        parts = isinstance(model, PartsModel)
        if risk_fit not in RISK_FITS:
            raise ValueError(f"'risk_fit' must be one of {RISK_FITS}. Got {risk_fit!r}.")
        if risk_fit == "laplace" and not parts:
            raise ValueError(
                "risk_fit='laplace' draws each column part's Laplace approximation: it needs a "
                "whole-file model (FileModel); other models' risk step runs NUTS."
            )
        self.risk_fit = risk_fit
        if weighted_fit not in WEIGHTED_FITS:
            raise ValueError(
                f"'weighted_fit' must be one of {WEIGHTED_FITS}. Got {weighted_fit!r}."
            )
        if weighted_fit == "imh" and not parts:
            raise ValueError(
                "weighted_fit='imh' proposes from each column part's Laplace approximation: it "
                "needs a whole-file model (FileModel); other models' weighted fit runs NUTS."
            )
        self.weighted_fit = weighted_fit
        if parts and likelihood not in ("auto", "parts"):
            raise ValueError(
                f"A whole-file model is fitted part by part (likelihood='parts'); "
                f"likelihood={likelihood!r} is not available for it."
            )
        if parts and sensitive_range is not None:
            raise ValueError(
                "A whole-file model supports no sensitive ranges: they need a single outcome."
            )
        if parts and self.censor_epsilon is not None and self.reweight:
            raise ValueError(
                f"censor_epsilon={self.censor_epsilon} with reweight=True: the Lipschitz "
                "re-weighting reads the accountant's bounds, which censoring caps at B_k for "
                "every record; use one or the other."
            )
        if likelihood == "parts" and not parts:
            raise ValueError("likelihood='parts' needs a whole-file model (FileModel).")
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
        public_weights: bool = False,
        progress: bool | None = None,
    ) -> PseudoPosteriorResult:
        """Run the mechanism (module docstring): unweighted fit, risk, weights, weighted fit(s),
        accountant. All validation (data, arguments, sensitive ranges) happens before any
        compilation or sampling; ``data`` is never modified.

        ``weights`` fixes :math:`\\alpha` instead of deriving it from risk (the unweighted fit is
        still run, for :attr:`~PseudoPosteriorResult.unweighted_epsilon`). ``public_weights=True``
        declares them public (fixed before the data were seen), which makes a censored fit's
        epsilon a global guarantee rather than one given the weights.

        ``data`` may also be a Dask DataFrame or a Parquet path: the mechanism then runs chunked
        over records (:func:`pseudopost.mechanisms.pseudo_posterior.dask.backend.fit_dask`, same
        seeds and numbers).
        """
        from pseudopost._io import is_dask_input

        if public_weights and weights is None:
            raise ValueError(
                "'public_weights=True' declares the given 'weights' public, but no 'weights' "
                "were given."
            )
        if is_dask_input(data):
            if isinstance(self.model, PartsModel):
                raise ValueError(
                    "A whole-file model is fitted in memory (its parts run as Dask tasks when a "
                    "distributed client is active); pass a pandas DataFrame."
                )
            from pseudopost.mechanisms.pseudo_posterior.dask.backend import fit_dask

            return fit_dask(self, data, draws=draws, tune=tune, chains=chains, seed=seed,
                            weights=weights, progress=progress)  # fmt: skip
        settings = FitSettings.checked(draws, tune, chains, progress)
        prepared = self.model.prepare(data)
        bounds = None
        if self.sensitive_range is not None:
            bounds = self.sensitive_range.bounds(self.model.outcome_values(prepared))
        fixed = None if weights is None else _check_weights(weights, prepared.n)
        origin = weights_origin(self.reweight, self.shift, fixed, bool(public_weights))
        seeds = fit_seeds(seed, self.max_refits)
        clock = _Clock()
        with clock("compile"):
            fitted = self._fitted(prepared, settings)

        # 1. unweighted posterior; risk L_i = max_m |f_theta_m(x_i)|
        with clock("unweighted_fit"):
            unweighted = fitted.sample(np.ones(prepared.n), seeds[0], unweighted=True)
        with clock("risk"):
            risk = reduce_abs(fitted.loglik, fitted.draws(unweighted), max_bytes=self.max_bytes)
            risk = risk.per_record
            # 2. weights alpha_i = clip(c (1 - r_i) + g, 0, 1), or the given ones
            if fixed is None:
                alpha = risk_weights(risk, self.scale, self.shift, self.normalisation)
            else:
                alpha = fixed
            #    and the floor that keeps every level of a categorical part
            unfloored = alpha
            # censored with every weight 1: floor and raking are identities; skipped, so that
            # the weights stay exactly 1 (fixed before the data; no rounding of theirs)
            fixed_ones = fitted.bound is not None and origin == "ones"
            if self.weight_floor > 0 and not fixed_ones:
                alpha = level_floor(alpha, self.model.level_groups(prepared), self.weight_floor)
            raised = int(np.count_nonzero(alpha != unfloored))
            #    and raking down to the data's level shares (never below rake_min_weight)
            before_rake = float(alpha.sum())
            if self.rake_min_weight is not None and before_rake > 0 and not fixed_ones:
                keep = min(1.0, self.rake_min_weight / before_rake)
                alpha = level_rake(alpha, self.model.level_groups(prepared), keep)
        # 3. public/sensitive split (eqs. 20-21): alpha*, c_i and the sensitive part g
        with clock("decomposition"):
            decomp = self._decomposition(fitted, unweighted, bounds, seeds[3])
            sens = sensitive_function(decomp, self.model, fitted.built, fitted.loglik)
        # 4. the pseudo posterior (eq. 1) and its accountant, eps_x = 2 max_i Delta_i (eq. 7)
        fit = _weighted_fit(fitted, decomp, sens, alpha, seeds[1])
        clock.timings["weighted_fit"], clock.timings["accountant"] = fit.seconds
        floor_eps = None
        if self.floor_cost and raised == 0:
            floor_eps = fit.epsilon  # the floor raised no weight: the same fit, no cost
        elif self.floor_cost:
            with clock("floor_cost"):  # the same fit without the floor: its cost in epsilon
                floor_eps = _weighted_fit(fitted, decomp, sens, unfloored, seeds[1]).epsilon
        # 5. optional: Lipschitz re-weighting, calibration to a target, draw exclusion
        if self.reweight:
            alpha = _lipschitz_reweight(alpha, fit.lipschitz, self.scale)
            fit = _weighted_fit(fitted, decomp, sens, alpha, seeds[2])
            clock.timings["reweighted_fit"], clock.timings["accountant"] = fit.seconds
        calibration = None
        if self.target_epsilon is not None:
            with clock("calibration"):
                fit, calibration = self._calibrate(fitted, decomp, sens, alpha, fit, seeds[4:])
        kept, lip = _exclude_draws(fitted, fit, decomp, sens, self.exclude_quantile)

        if fixed_ones and not (np.all(fit.alpha == 1.0) and not fit.factors):
            origin = "risk"  # censored and the weights moved after all: they read the data
        labels = getattr(self.model, "coordinate_labels", None)
        if labels is not None:  # levels by their labels ('Male'), not positions ('1')
            names = labels(prepared)
            unweighted, fit.tree = _labelled(unweighted, names), _labelled(fit.tree, names)
        diagnostics = diagnose(unweighted, fit.tree)
        tree = _assemble(
            self, fitted, unweighted, fit, risk, decomp, lip, kept, bounds, calibration, origin
        )
        tree["privacy"].attrs["weight_floor"] = self.weight_floor
        tree["privacy"].attrs["weights_raised_by_floor"] = raised
        tree["privacy"].attrs["rake_min_weight"] = (
            -1.0 if self.rake_min_weight is None else float(self.rake_min_weight))
        tree["privacy"].attrs["weight_total_before_rake"] = before_rake
        tree["privacy"].attrs["weight_total"] = float(np.sum(alpha))
        tree["privacy"].attrs["raked_parts"] = len(fit.factors)
        if floor_eps is not None:
            tree["privacy"].attrs["epsilon_without_floor"] = floor_eps
        return PseudoPosteriorResult(
            tree, diagnostics, clock.timings, self.model, prepared, fitted.built, calibration
        )

    def _fitted(self, prepared: Prepared, settings: FitSettings) -> _Fitted:
        """This fit's own model and record function, and a compiled sampler borrowed from the
        cache by structure (:mod:`pseudopost.fitting.cache`)."""
        path, note = self._likelihood_path(prepared)
        if path == "parts":
            parts, data = file_part_data(self.model, prepared)
            groups = None
            if self.part_rake:
                groups = self.model.level_groups(prepared, values=PART_RAKE_VALUES,
                                                  runs=PART_RAKE_RUNS)
            bound = part_bounds = None
            if self.censor_epsilon is not None:
                _check_censorable(parts, self.censor_epsilon)
                bound = self.censor_epsilon / 2.0
                part_bounds = split_bound(parts, bound, CENSOR_SPLITS[0])
            return _Fitted(
                model=self.model,
                prepared=prepared,
                built=None,
                data={},
                sampler=ColumnSampler(parts, workers=self.workers),
                loglik=PartAccountant(parts, data, max_bytes=self.max_bytes),
                settings=settings,
                max_bytes=self.max_bytes,
                path=path,
                path_note=note,
                bound=bound,
                part_data=tuple(data),
                part_bounds=part_bounds,
                risk_fit=self.risk_fit,
                weighted_fit=self.weighted_fit,
                rake_groups=groups,
            )
        built = self.model.build(prepared)
        if isinstance(self.model, PyMCModel):  # the user's own model object: keep a copy of
            built = clone_model(built)  # its data now, whatever is set in it later
        censored = self.censor_epsilon is not None
        if path == "sufficient":
            sampler = statistics_sampler(self.model, prepared.arrays, self.sampler)
        else:
            sampler = weighted_sampler(self.model, built, censored=censored, kind=self.sampler)
        return _Fitted(
            model=self.model,
            prepared=prepared,
            built=built,
            data=model_data(built),
            sampler=sampler,
            loglik=record_function(self.model, built),
            settings=settings,
            max_bytes=self.max_bytes,
            path=path,
            path_note=note,
            bound=self.censor_epsilon / 2.0 if censored else None,
        )

    def _likelihood_path(self, prepared: Prepared) -> tuple[str, str]:
        """("sufficient" | "full" | "parts", why): the fast path whenever allowed and available."""
        if isinstance(self.model, PartsModel):
            return "parts", (
                "fitted part by part from grouped statistics (per-column posteriors paired by "
                "draw; exact)"
            )
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

    def _decomposition(self, fitted, unweighted, bounds, seed) -> Decomposition:
        if fitted.part_bounds is not None:
            return PartsCensored(fitted.bound, part_bounds=dict(fitted.part_bounds),
                                 split=CENSOR_SPLITS[0])  # fmt: skip
        if fitted.bound is not None:
            return Censored(fitted.bound)
        if bounds is None:
            return Unrestricted()
        if self.range_method == "truncated":
            return RangeTruncated(*bounds)
        lam = inclusion_lambda(
            fitted.built,
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
            draws = fitted.draws(fit.tree)
            total = reduce_sum(  # the fit's full record log-likelihood (its parts' factors)
                fit.loglik, draws, decomp.coefficient(s_cur * alpha), max_bytes=fitted.max_bytes
            )
            s_new, khat = psis_scale_search(total, fit.accounting.per_draw, s_cur, target, shape, u)
            report.khat.append(khat)
            if khat > KHAT_MAX:  # importance sampling unreliable: proportional update instead
                s_new = s_cur * target / eps_cur
            s_new = float(min(1.0, max(s_new, 1e-6)))
            fit = _weighted_fit(fitted, decomp, sens, s_new * alpha, seeds[1 + j])
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


@dataclass(frozen=True)
class _Fitted:
    """One fit's own state: its data and model (never shared), the sampler borrowed from the
    cache, the record function on its model, the sampling settings and the likelihood path."""

    model: SynthModel
    prepared: Prepared
    built: pm.Model | None
    data: dict[str, np.ndarray]
    sampler: Sampler
    loglik: PerRecordFunction
    settings: FitSettings
    max_bytes: int
    path: str
    path_note: str
    bound: float | None
    part_data: tuple | None = None  # the "parts" path: each part's (grouped) data
    risk_fit: str = "nuts"  # the "parts" path: how the unweighted fit is drawn
    weighted_fit: str = "nuts"  # the "parts" path: how the weighted fits are drawn
    # the "parts" path: the unweighted fit's mode of each part, where every weighted refit's
    # mode search starts (ColumnSampler.sample_with_modes)
    modes: dict = field(default_factory=dict)
    # the "parts" path with part raking: each raked part's levels (model.level_groups)
    rake_groups: dict | None = None
    # the "parts" path with censoring: each part's bound B_k (sum: bound)
    part_bounds: dict | None = None

    def part_factors(self, alpha: np.ndarray) -> dict[str, np.ndarray]:
        """Each raked part's factors :math:`r_{iq}` for the record weights ``alpha``
        (:func:`~pseudopost.risk.weights.part_rake`; none without part raking, and none when
        censored with every weight 1: raking is then the identity, skipped so that the weights
        stay exactly 1)."""
        if not self.rake_groups:
            return {}
        if self.part_bounds is not None and np.all(alpha == 1.0):
            return {}
        return part_rake(alpha, self.rake_groups)

    def sampler_data(
        self, weights: np.ndarray, unweighted: bool = False, factors: dict | None = None
    ) -> dict:
        """Everything the sampler's model reads for the given weights: the weighted sufficient
        statistics (a raked part's weights times its ``factors``), or this fit's record data,
        the weights and the censoring bound."""
        if self.path == "parts":
            factors = factors or {}
            return {
                k: v
                for part, d in zip(self.sampler.parts, self.part_data, strict=True)
                for k, v in part_statistics(
                    [part], [d], weights * factors[part.name] if part.name in factors else weights
                ).items()
            }
        if self.path == "sufficient":
            return statistics_data(
                self.model, total_statistics(self.model, self.prepared.arrays, weights)
            )
        data = {**self.data, WEIGHTS_NAME: np.asarray(weights, dtype=float)}
        if self.bound is not None:
            data[CENSOR_NAME] = np.asarray(_NO_CENSOR if unweighted else self.bound)
        return data

    def sample(
        self, weights: np.ndarray, seed: int, unweighted: bool = False,
        factors: dict | None = None,
    ) -> xr.DataTree:  # fmt: skip
        """Draws of the pseudo posterior with weights ``weights`` (eq. 1; a raked part's times
        its ``factors``); ``unweighted`` lifts the censoring (the ordinary posterior of the
        risk step)."""
        data = self.sampler_data(weights, unweighted, factors)
        if self.path != "parts":
            return self.sampler.sample(data, seed=seed, **self.settings.sampling())
        # weighted refits start their mode searches at the unweighted fit's modes (a few
        # Newton steps away): always those, never the last refit's, so that a refit's draws do
        # not depend on which refits ran before it (floor cost, re-weighting, calibration)
        if self.part_bounds is not None and not unweighted:
            return self._censored_sample(weights, seed, factors or {})
        laplace = unweighted and self.risk_fit == "laplace"
        sampling = self.settings.sampling()
        if laplace:
            sampling["draws"] = min(sampling["draws"], RISK_DRAWS)
        tree, modes = self.sampler.sample_with_modes(
            data, seed=seed, start=None if unweighted else self.modes, laplace=laplace,
            independence=not unweighted and self.weighted_fit == "imh", **sampling,
        )  # fmt: skip
        # a part the risk step drew from its split-normal form is drawn like any other (the
        # short-tree run first): the robust settings from the start (``hard``) saved 12 s on
        # YRBSS's two location-scale grids but got stuck on Adult's eight such parts of
        # 36,000-39,000 keys, each then drawn twice at 15 steps (education 165 s, 35 s in the
        # short-tree run, which mixed: R-hat 1.04, least bulk ESS 122 of 500)
        if unweighted:
            self.modes.clear()
            self.modes.update(modes)
        return tree

    def _censored_sample(self, weights, seed, factors) -> xr.DataTree:
        """Paired draws of every part's censored posterior (:mod:`pseudopost.fitting.
        censored`), part j seeded by :func:`~pseudopost.fitting.columns.part_seed` as the
        uncensored fits are; one part after another (the densities are Python)."""
        sampling = self.settings.sampling()
        trees, seconds = [], {}
        for j, (part, d) in enumerate(zip(self.sampler.parts, self.part_data, strict=True)):
            t0 = time.perf_counter()
            w = weights * factors[part.name] if part.name in factors else weights
            trees.append(censored_part_draws(part, d, w, self.part_bounds[part.name],
                                             seed=part_seed(seed, j), **sampling))  # fmt: skip
            seconds[part.name] = round(time.perf_counter() - t0, 3)
        tree = pair_draws(self.sampler.parts, trees, sampling["chains"], sampling["draws"])
        tree["sample_stats"].attrs["seconds"] = json.dumps(seconds)
        return tree

    def draws(self, tree: xr.DataTree) -> dict[str, np.ndarray]:
        """Flat draws (chain-major) of the model's free variables."""
        if self.path == "parts":
            return stack_draws(tree["posterior"].to_dataset(), self.loglik.free_names)
        return stack_draws(tree["posterior"].to_dataset(), [rv.name for rv in self.built.free_RVs])


@dataclass
class _Fit:
    """One weighted fit and its accounting: the record function it was accounted with
    (``function``: the sensitive part's, eq. 7) and the full record log-likelihood it was
    sampled with (``loglik``: what the calibration's importance ratios reweight), both with
    the raked parts' ``factors`` (part name -> (n,)) when there are any."""

    tree: xr.DataTree
    alpha: np.ndarray
    accounting: Accounting
    seconds: tuple[float, float]
    function: object = None
    factors: dict = field(default_factory=dict)
    loglik: object = None

    @property
    def lipschitz(self) -> np.ndarray:
        return self.accounting.lipschitz

    @property
    def epsilon(self) -> float:
        return self.accounting.epsilon


class _Clock:
    """Seconds per step of a fit (``with clock("risk"): ...``)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        self.timings[step] = time.perf_counter() - t0


def _weighted_fit(fitted: _Fitted, decomp, sens, alpha, seed) -> _Fit:
    """Sample the alpha*-weighted pseudo posterior (eq. 1; a raked part weighted by
    :math:`\alpha_i r_{iq}`) and account it (eq. 7; each record's term with its parts'
    factors, :meth:`~pseudopost.privacy.kernels.parts.PartAccountant.with_factors`)."""
    t0 = time.perf_counter()
    factors = fitted.part_factors(alpha)
    tree = fitted.sample(decomp.fit_weights(alpha), seed, factors=factors)
    t1 = time.perf_counter()
    g = sens.with_factors(factors) if factors else sens
    if sens is fitted.loglik:
        full = g
    else:  # range-restricted: the sensitive part is not the likelihood sampled
        full = fitted.loglik.with_factors(factors) if factors else fitted.loglik
    acc = account(g, fitted.draws(tree), alpha, decomp, max_bytes=fitted.max_bytes)
    return _Fit(tree, alpha, acc, (t1 - t0, time.perf_counter() - t1), g, factors, full)


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


def _exclude_draws(fitted: _Fitted, fit: _Fit, decomp, sens, q):
    """Drop draws whose max_i c_i |g| exceeds the q-quantile; re-account on the kept draws."""
    n_draws = fit.accounting.per_draw.size
    if q is None or q >= 1.0:
        return np.ones(n_draws, dtype=bool), fit.lipschitz
    kept = fit.accounting.per_draw <= np.quantile(fit.accounting.per_draw, q)
    draws = {k: v[kept] for k, v in fitted.draws(fit.tree).items()}
    again = account(fit.function, draws, fit.alpha, decomp, max_bytes=fitted.max_bytes)
    return kept, again.lipschitz


def _labelled(tree: xr.DataTree, names: dict[str, list[str]]) -> xr.DataTree:
    """``tree`` with the coordinates of the dimensions in ``names`` relabelled (a model's
    ``coordinate_labels``); positions, values and every other coordinate unchanged."""
    groups = {}
    for key, node in tree.children.items():
        ds = node.to_dataset()
        own = {d: v for d, v in names.items() if d in ds.dims and ds.sizes[d] == len(v)}
        groups[key] = ds.assign_coords(own) if own else ds
    out = xr.DataTree.from_dict(groups)
    out.attrs.update(tree.attrs)
    return out


def _assemble(
    mech, fitted: _Fitted, unweighted, fit: _Fit, risk, decomp, lip, kept, bounds, calibration,
    origin,
) -> xr.DataTree:  # fmt: skip
    record = {"record": np.asarray(fitted.prepared.index)}
    rec = lambda v: xr.DataArray(np.asarray(v, dtype=float), dims="record", coords=record)  # noqa: E731
    groups = fit_groups(unweighted, fit.tree)
    post = groups["posterior"]
    shape = (post.sizes["chain"], post.sizes["draw"])
    weights = {
        "alpha": rec(fit.alpha),
        "alpha_star": rec(decomp.fit_weights(fit.alpha)),
        "risk": rec(risk),
        "r": rec(normalise_risk(risk, mech.normalisation)),
    }
    if isinstance(decomp, RangeAveraged):
        weights["lambda"] = rec(decomp.lam)
    if fit.factors:  # part raking: each raked part's factor r_iq (its weights alpha_i r_iq)
        names = list(fit.factors)
        weights["part_factor"] = xr.DataArray(
            np.column_stack([fit.factors[k] for k in names]),
            dims=("record", "raked_part"),
            coords={**record, "raked_part": names},
        )
    privacy_vars = {
        "lipschitz": rec(lip),
        "unweighted_lipschitz": rec(risk),
        "draw_kept": (("chain", "draw"), kept.reshape(shape)),
    }
    if bounds is not None:
        privacy_vars["range_lower"], privacy_vars["range_upper"] = rec(bounds[0]), rec(bounds[1])
    attrs = privacy_attrs(
        mech,
        epsilon=local_epsilon(lip),
        unweighted_epsilon=local_epsilon(risk),
        decomposition=decomp.name,
        guarantee=guarantee_text(decomp, bounds is not None, origin),
        weights_origin=origin,
    )
    if isinstance(decomp, Censored):
        attrs["global_epsilon"] = 2.0 * decomp.bound
    if isinstance(decomp, PartsCensored):
        attrs["censor_split"] = decomp.split
        attrs["censor_bounds"] = json.dumps(decomp.part_bounds)
    if mech.sensitive_range is not None:
        attrs["sensitive_range"] = json.dumps(mech.sensitive_range.describe(), default=float)
    if calibration is not None:
        attrs["calibration"] = json.dumps(calibration.as_dict())
    groups["privacy"] = xr.Dataset(
        privacy_vars, coords={"chain": post["chain"], "draw": post["draw"]}, attrs=attrs
    )
    groups["weights"] = xr.Dataset(weights)
    groups["observed_data"] = xr.Dataset(
        {  # a record may hold a vector (e.g. a multivariate outcome): extra dims per variable
            k: xr.DataArray(
                np.asarray(v, dtype=float),
                dims=("record", *(f"{k}_dim_{j}" for j in range(1, np.ndim(v)))),
                coords=record,
            )
            for k, v in fitted.prepared.arrays.items()
        }
    )
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update(likelihood=fitted.path, likelihood_note=fitted.path_note)
    return tree


def _check_censorable(parts, censor_epsilon) -> None:
    """Refuse the parts the censored fit cannot draw (before any work): the bin-point and
    nested (tilted-levels) parts, whose log shares are drawn only from their conjugate
    Dirichlet and have no unconstrained density for NUTS."""
    bad = [p.name for p in parts if isinstance(p, BinPointsPart)]
    if bad:
        raise ValueError(
            f"censor_epsilon={censor_epsilon}: part(s) {bad} hold the shares of grid points "
            f"inside bins or of a nested column's levels (hierarchy), drawn only from their "
            f"conjugate Dirichlet, which censoring breaks and NUTS cannot draw. Declare those "
            f"binned columns uniform inside their bins (uniform_in_bins) and drop the "
            f"hierarchy, or fit without censoring."
        )
