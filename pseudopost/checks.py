r"""The contract every synthesizing model passes, checked like scikit-learn's ``check_estimator``.

:func:`check_model` runs one model (a ready model or a whole-file model on a DataFrame, or any
``pm.Model``) through the whole pseudo posterior mechanism on small data and tiny draws (or,
faster, on random points of its parameter space) and checks each promise against something that
can fail. The promises are those of the model's capabilities (:data:`CAPABILITIES`): the table
below is for a model built as one PyMC model (``"pymc"``, :class:`BuiltModel`):

================  =================================================================================
check             what is compared
================  =================================================================================
validation        the model wraps and its data validate (a clear error otherwise, before compiling)
weighting         the weighted model's log density at random points equals
                  :math:`\log\xi(\theta) + \sum_i \alpha_i \log p(x_i\mid\theta)` (eq. 1 of the
                  range-restricted paper), and with censoring
                  :math:`\log\xi(\theta) + \sum_i \mathrm{clip}(\alpha_i \log p(x_i\mid\theta), -B, B)`,
                  the reference log densities from PyMC's own ``model.logp(sum=False)``
loglik            the mechanism's per-record log-likelihood (fused kernel or compiled graph) on the
                  posterior draws equals ``pm.compute_log_likelihood`` on the same draws (and
                  SciPy's, when a ``reference`` is given)
accountant        the fit's :math:`\Delta_i` equal :math:`\alpha_i \max_m |f_{\theta_m}(x_i)|` over
                  its kept draws, brute force on the (draws x records) matrix, and
                  ``pseudopost.privacy.accountant.account`` equals brute force for every
                  decomposition (unrestricted, range-averaged, censored, range-truncated)
ranges            :math:`\log P_\theta(a_i \le X_i \le b_i)` equals SciPy's (``reference``), is at
                  most 0, is the sum over the range's two halves, grows with the range, is 0 on
                  the whole line, and for a discrete outcome is at least :math:`p(x_i)`; the
                  range-truncated accountant equals brute force (skipped where no CDF exists).
                  Probabilities below 1e-12 are compared to 1e-15 absolute: PyMC derives the
                  log-survival of several families (Gamma, Weibull, Poisson, negative binomial,
                  truncated, mixtures) as :math:`\log(1 - F)`, which holds no more (a known
                  limitation: a record beyond it gets :math:`\Delta_i = \infty` under range
                  truncation)
synthesis         the synthetic frames keep column names, index, dtypes and categories (and a
                  ready model's predictors as given); values lie in the support
seed              the same seed gives the same synthetic data (and, with ``refit``, the same fit);
                  another seed gives other data
input_unchanged   the DataFrame, or the PyMC model's data and variables, are left as they were
================  =================================================================================

A model fitted by parts (``"parts"``, :class:`PartsModel`, the whole-file model) has no joint
PyMC model; its checks compare its parts' own computations, on the data the mechanism fits:

================  =================================================================================
check             what is compared
================  =================================================================================
validation        :meth:`~PartsModel.parts`, :meth:`~PartsModel.part_data` and
                  :meth:`~PartsModel.iter_part_data` agree, one record per row, each part's data
                  valid; with ``"levels"`` (:class:`LevelsModel`), each level group equals its
                  part's outcome (-1 where the part is not active)
weighting         each part's density from the grouped statistics the mechanism fits, at random
                  points, equals its density with every weight 0 (the prior) plus
                  :math:`\sum_i \alpha_i \log p_q(x_i\mid\theta_q)` from the part's per-record
                  log-likelihood
loglik            the mechanism's fused per-column log-likelihood on the draws equals the sum of
                  the parts' per-record log-likelihoods
accountant        as above, for the plain weighted pseudo posterior; the decompositions a record of
                  several outcomes cannot have (range-averaged, censored) are refused
ranges            skipped: sensitive ranges need a single outcome of a built model
synthesis, seed,  as above
input_unchanged
================  =================================================================================

A failure names the check, the model and the capability (or the base protocol) it breaks.

This module is a test harness over the whole package (models, fitting, the accountant and the
mechanism), so it sits on the top floor beside the command line, like scikit-learn's
``utils.estimator_checks``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import xarray as xr

from pseudopost.fitting.columns import file_part_data, statistics_data
from pseudopost.mechanisms.pseudo_posterior import PseudoPosterior
from pseudopost.models.base import (
    CAPABILITIES,
    BuiltModel,
    LevelsModel,
    PartsModel,
    Prepared,
    SynthModel,
    capabilities,
)
from pseudopost.models.custom import PyMCModel
from pseudopost.models.loglik import RecordFunction, stack_draws
from pseudopost.models.parts import SEP, Stats, dim_name
from pseudopost.models.weighting import n_records, rv_logprob, value_of, weighted_model
from pseudopost.privacy.accountant import account, sensitive_function
from pseudopost.privacy.decomposition import Censored, RangeAveraged, RangeTruncated, Unrestricted
from pseudopost.privacy.fused import record_function
from pseudopost.privacy.kernels.parts import PartAccountant

__all__ = [
    "CAPABILITIES",
    "CHECKS",
    "PROB_ATOL",
    "BuiltModel",
    "CheckReport",
    "LevelsModel",
    "ModelCheckError",
    "PartsModel",
    "capabilities",
    "check_model",
]

CHECKS = (
    "validation",
    "weighting",
    "loglik",
    "accountant",
    "ranges",
    "synthesis",
    "seed",
    "input_unchanged",
)
#: tolerance of "the same seed gives the same fit" (see :func:`_check_seed`)
_REFIT_RTOL = 1e-6
#: absolute precision of a probability PyMC computes as 1 - F (see ``_Run.close_prob``)
PROB_ATOL = 1e-15
#: the symptom of a log density derived on lifted copies of the model's variables
_LIFTED = "were found in the derived graph"


class ModelCheckError(AssertionError):
    """A model broke its contract: ``check`` names the promise, ``capability`` the capability
    it belongs to (None: the base protocol), the message says how."""

    def __init__(self, check: str, model: str, message: str, capability: str | None = None) -> None:
        of = "the base protocol" if capability is None else f"capability {capability!r}"
        super().__init__(f"[{check}] {model} ({of}): {message}")
        self.check = check
        self.capability = capability


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_model` found: checks passed, checks skipped (with the reason), the
    fit's local epsilon, seconds per check, the warnings the fits raised and the model's
    capabilities (each checked)."""

    model: str
    passed: tuple[str, ...]
    skipped: dict[str, str]
    epsilon: float
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()


def check_model(
    model: SynthModel | pm.Model,
    data: pd.DataFrame | None = None,
    *,
    reference: Callable[[Mapping[str, np.ndarray]], Any] | None = None,
    ranges: tuple[np.ndarray, np.ndarray] | Literal["auto"] | None = "auto",
    draws: Literal["mechanism", "points"] = "mechanism",
    n_draws: int = 20,
    tune: int = 20,
    chains: int = 1,
    sampler: str = "pymc",
    refit: bool = True,
    seed: int = 0,
    rtol: float = 1e-7,
    mode: str | None = "FAST_COMPILE",
) -> CheckReport:
    """Check ``model`` against the contract (module docstring); raise on the first failure.

    Parameters
    ----------
    model
        A ready or whole-file model (with ``data``) or a ``pm.Model`` / :class:`PyMCModel`
        (``data=None``).
    data
        The DataFrame of a ready or whole-file model.
    reference
        Optional ``reference(draws) -> dist``: for flat draws (by free-variable name, leading
        draw axis) a SciPy-like distribution of the outcome with arrays of shape
        (draws, records), with ``logpdf`` (or ``logpmf``), ``logcdf`` and ``logsf``; the
        log-likelihood and the range probabilities are then compared with it (a built model
        only).
    ranges
        ``(lower, upper)`` per record for the range checks, ``"auto"`` (around each value) or
        None to skip them (a built model only; ``"auto"`` skips them for a model fitted by
        parts).
    draws
        ``"mechanism"`` (default): run :class:`~pseudopost.PseudoPosterior` end to end (both
        fits, risk, weights, accountant, synthesis) and check its figures; ``"points"``: no
        MCMC, the checks run on random points around the model's initial point (drawn in the
        unconstrained space, so every constraint holds) with random weights, and synthesis
        goes through the model's :meth:`~SynthModel.simulate`, the code ``result.synthesize``
        calls (a fraction of the time; the fit and the mechanism's own figures are not
        checked).
    n_draws, tune, chains, sampler
        The size of the fits, or the number of points (tiny: the contract is about exactness).
    refit
        With the mechanism, also fit twice with the same seed and require the same draws.
    seed
        Seed of the fits, the random points and the synthesis.
    rtol
        Relative tolerance of every numerical comparison (absolute: ``rtol`` too).
    mode
        PyTensor mode of every compilation inside the check (default ``"FAST_COMPILE"``: on
        tiny data compiling dominates; None keeps the configured mode, as in production). nutpie
        compiles with Numba whatever the mode.

    Returns
    -------
    CheckReport

    Raises
    ------
    ModelCheckError
        Naming the check that failed and how.
    ValueError, TypeError
        From validation: an unsupported construct, or an option the model's capabilities
        cannot honour, named, before anything is compiled.
    """
    if draws not in ("mechanism", "points"):
        raise ValueError(f"'draws' must be 'mechanism' or 'points'. Got {draws!r}.")
    config = _Config(reference, ranges, draws, n_draws, tune, chains, sampler, refit, seed, rtol)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if mode is None:
            return _check(model, data, config, caught)
        with pytensor.config.change_flags(mode=mode):
            return _check(model, data, config, caught)


@dataclass(frozen=True)
class _Config:
    reference: Callable | None
    ranges: Any
    draws: str
    n_draws: int
    tune: int
    chains: int
    sampler: str
    refit: bool
    seed: int
    rtol: float


@dataclass
class _Source:
    """The draws the checks run on: the mechanism's weighted posterior (with its own figures)
    or random points; ``synthesize(m, seed)`` gives m synthetic frames."""

    posterior: xr.Dataset
    alpha: np.ndarray
    kept: np.ndarray
    synthesize: Callable[[int, int], list[pd.DataFrame]]
    result: Any = None  # the PseudoPosteriorResult, with the mechanism
    flat: dict = field(default_factory=dict)  # the posterior's flat draws, once checked


def _check(model, data, config: _Config, caught: list) -> CheckReport:
    run = _Run(model, config.rtol, caught)
    synth = run.timed("validation", lambda: _as_synth(model), False)
    run.label = repr(synth)
    caps = capabilities(synth)
    _check_options(run, synth, caps, config)
    before = _snapshot(synth, data)
    rng = np.random.default_rng(config.seed)
    if "parts" in caps:
        prepared, base, src = _check_parts(run, synth, data, caps, config, rng)
    else:
        prepared, base, src = _check_built(run, synth, data, caps, config, rng)
    run.capability = None  # the base protocol
    frames = run.timed("synthesis", lambda: _check_synthesis(run, synth, base, prepared, data, src))
    run.timed("seed", lambda: _check_seed(run, synth, data, src, frames, config))
    run.timed("input_unchanged", lambda: _check_unchanged(run, synth, data, before))
    eps = src.result.epsilon if src.result is not None else run.epsilon
    return CheckReport(
        run.label,
        tuple(run.passed),
        dict(run.skipped),
        float(eps),
        dict(run.seconds),
        tuple(sorted({str(w.message) for w in caught})),
        caps,
    )


def _check_options(run: _Run, synth: SynthModel, caps: tuple[str, ...], config: _Config) -> None:
    """The model is fitted one way (``"pymc"`` or ``"parts"``), and the options asked for are
    those its capabilities can honour (else an error before any work)."""
    if ("pymc" in caps) == ("parts" in caps):
        which = "both" if caps else "neither"
        run.fail(
            "validation",
            f"has {which} of the capabilities 'pymc' ({BuiltModel.__name__}: build) and "
            f"'parts' ({PartsModel.__name__}: parts, part_data, iter_part_data); a model is "
            f"fitted one way.",
        )
    if "parts" in caps and (config.reference is not None or not _auto(config.ranges)):
        raise ValueError(
            f"{type(synth).__name__} is fitted by parts (capability 'parts'): 'reference' and "
            f"explicit 'ranges' compare a single outcome of a model built as one PyMC model "
            f"(capability 'pymc')."
        )


def _auto(ranges) -> bool:
    return ranges is None or (isinstance(ranges, str) and ranges == "auto")


def _check_built(run, synth, data, caps, config: _Config, rng):
    """The checks of a model built as one PyMC model (capability ``"pymc"``)."""
    run.capability = "pymc"
    prepared, base = run.timed("validation", lambda: _prepare(synth, data))
    run.timed("weighting", lambda: _check_weighting(run, synth, base, rng))
    src = run.timed(
        "fit",
        lambda: _source(synth, data, prepared, base, config, rng,
                        lambda: _point_draws(base, rng, config.n_draws)),
        False,
    )  # fmt: skip
    flat = stack_draws(src.posterior, [rv.name for rv in base.free_RVs])
    L = run.timed("loglik", lambda: _check_loglik(run, synth, base, prepared, src, flat, config))
    run.timed("accountant", lambda: _check_accountant(run, synth, base, src, flat, L, rng))
    run.timed("ranges", lambda: _check_ranges(run, synth, base, prepared, src, flat, L, config))
    src.flat = flat
    return prepared, base, src


def _source(synth, data, prepared, base, config: _Config, rng, points: Callable) -> _Source:
    """The mechanism's fit, or ``points()`` (random draws) with random weights."""
    if config.draws == "mechanism":
        res = _fit(synth, data, config)
        kept = res.datatree["privacy"]["draw_kept"].to_numpy().ravel()
        return _Source(res.posterior, res.alpha.to_numpy(), kept, res.synthesize_datasets, res)
    posterior = points()
    alpha = rng.uniform(0.05, 1.0, prepared.n)

    def synthesize(m: int, seed: int) -> list[pd.DataFrame]:
        return synth.simulate(prepared, base, posterior, np.arange(m), seed)

    return _Source(posterior, alpha, np.ones(config.n_draws, dtype=bool), synthesize)


# -- the run ---------------------------------------------------------------------------------
class _Run:
    """Bookkeeping of one :func:`check_model` call: checks passed and skipped, seconds, and the
    warnings caught so far (a log density derived on lifted copies fails the loglik check)."""

    def __init__(self, model, rtol: float, caught: list) -> None:
        self.label = type(model).__name__
        self.rtol = rtol
        self.caught = caught
        self.passed: list[str] = []
        self.skipped: dict[str, str] = {}
        self.seconds: dict[str, float] = {}
        self.epsilon = float("nan")
        self.capability: str | None = None  # of the checks running (None: the base protocol)

    def timed(self, check: str, fn: Callable, record: bool = True):
        t0 = time.perf_counter()
        out = fn()
        self.seconds[check] = time.perf_counter() - t0
        lifted = [str(w.message) for w in self.caught if _LIFTED in str(w.message)]
        if lifted:
            self.fail(check, f"a log density was derived on lifted copies: {lifted[0]}")
        if record and check not in self.skipped:
            self.passed.append(check)
        return out

    def fail(self, check: str, message: str):
        raise ModelCheckError(check, self.label, message, self.capability)

    def skip(self, check: str, reason: str) -> None:
        self.skipped[check] = reason

    def close_prob(self, check: str, what: str, got, want) -> None:
        r"""Log probabilities equal within ``max(rtol, 1e-6)`` (PyMC's log-CDFs against SciPy's),
        or, both below 1e-12, within :data:`PROB_ATOL` as probabilities: the precision of a
        CDF difference that PyMC computes as :math:`\log(1 - F)` (module docstring)."""
        got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
        tiny = (want < np.log(1e-12)) & (got < np.log(1e-12))
        with np.errstate(over="ignore", invalid="ignore"):
            ok = tiny & (np.abs(np.exp(got) - np.exp(want)) <= PROB_ATOL)
        self.close(check, what, np.where(ok, want, got), want, max(self.rtol, 1e-6))

    def close(self, check: str, what: str, got, want, rtol: float | None = None) -> None:
        """``got`` equals ``want`` within rtol (same infinities and NaNs)."""
        tol = self.rtol if rtol is None else rtol
        got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
        if got.shape != want.shape:
            self.fail(check, f"{what}: shape {got.shape}, expected {want.shape}.")
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        near = np.isclose(got, want, rtol=tol, atol=tol)
        bad = ~(same | near)
        if bad.any():
            i = np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape)
            self.fail(
                check,
                f"{what} differs at {tuple(int(j) for j in i)}: {got[i]!r} != {want[i]!r} "
                f"({int(bad.sum())} of {bad.size} entries; rtol {tol:g}).",
            )


def _as_synth(model) -> SynthModel:
    if isinstance(model, SynthModel):
        return model
    if isinstance(model, pm.Model):
        return PyMCModel(model)
    raise TypeError(f"'model' must be a SynthModel or a pymc.Model. Got {type(model).__name__}.")


def _prepare(synth: SynthModel, data) -> tuple[Prepared, pm.Model]:
    prepared = synth.prepare(data)
    return prepared, synth.build(prepared)


def _fit(synth, data, config: _Config):
    return PseudoPosterior(synth, sampler=config.sampler).fit(
        data, draws=config.n_draws, tune=config.tune, chains=config.chains, seed=config.seed,
        progress=False,
    )  # fmt: skip


# -- weighting -------------------------------------------------------------------------------
def _per_record(terms) -> np.ndarray:
    """Sum of the observed variables' elementwise log densities, trailing axes summed."""
    out = 0.0
    for t in terms:
        t = np.asarray(t, dtype=float)
        out = out + (t.reshape(t.shape[0], -1).sum(axis=1) if t.ndim > 1 else t)
    return np.asarray(out)


def _points(model: pm.Model, rng: np.random.Generator, k: int) -> list[dict[str, np.ndarray]]:
    """k points of the model's (transformed) value space around its initial point."""
    start = model.initial_point(random_seed=int(rng.integers(2**31 - 1)))
    out = []
    for _ in range(k):
        p = {}
        for name, v in start.items():
            v = np.asarray(v)
            jitter = rng.normal(0.0, 0.3, v.shape) if v.dtype.kind == "f" else 0
            p[name] = (v + jitter).astype(v.dtype)
        out.append(p)
    return out


def _point_draws(model: pm.Model, rng: np.random.Generator, k: int) -> xr.Dataset:
    """k random points (:func:`_points`) on the free variables' own scale, as a one-chain
    posterior with the model's dimensions: they respect every constraint (ordered cut-points,
    simplices, positive scales), which prior draws do not (PyMC draws ignore transforms)."""
    free = list(model.free_RVs)
    constrained = model.replace_rvs_by_values(free)
    fn = model.compile_fn(constrained, inputs=model.value_vars, on_unused_input="ignore")
    values = [fn(p) for p in _points(model, rng, k)]
    data = {}
    for j, rv in enumerate(free):
        arr = np.stack([np.asarray(v[j]) for v in values])[None]  # (chain, draw, ...)
        dims = model.named_vars_to_dims.get(rv.name) or tuple(
            f"{rv.name}_dim_{i}" for i in range(arr.ndim - 2)
        )
        coords = {d: np.asarray(model.coords[d]) for d in dims if model.coords.get(d) is not None}
        data[rv.name] = xr.DataArray(arr, dims=("chain", "draw", *dims), coords=coords)
    return xr.Dataset(data, coords={"chain": [0], "draw": np.arange(k)})


def _check_weighting(run: _Run, synth: SynthModel, base: pm.Model, rng) -> None:
    names = list(synth.observed)
    n = n_records(base, names)
    alpha = rng.uniform(0.05, 1.0, n)
    record_rvs = [base[o] for o in names]
    rest = [v for v in base.basic_RVs if v.name not in names]
    loglik = base.compile_logp(vars=record_rvs, sum=False, jacobian=False)
    prior = base.compile_logp(vars=rest, jacobian=True) if rest else (lambda p: 0.0)
    points = _points(base, rng, 3)
    lp0 = _per_record(loglik(points[0]))
    finite = np.abs(alpha * lp0)[np.isfinite(lp0)]
    bound = float(np.median(finite)) if finite.size and np.median(finite) > 0 else 1.0
    weighted = weighted_model(base, names, weights=alpha).compile_logp()
    censored = weighted_model(base, names, weights=alpha, censor_bound=bound).compile_logp()
    for j, p in enumerate(points):
        lp, lp_prior = _per_record(loglik(p)), float(prior(p))
        if lp.shape != (n,):
            run.fail("weighting", f"per-record log density has shape {lp.shape}; expected ({n},)")
        run.close("weighting", f"weighted log density at point {j}", weighted(p),
                  lp_prior + np.sum(alpha * lp))  # fmt: skip
        run.close("weighting", f"censored (B={bound:.3g}) log density at point {j}", censored(p),
                  lp_prior + np.sum(np.clip(alpha * lp, -bound, bound)))  # fmt: skip


# -- per-record log-likelihood ---------------------------------------------------------------
def _pymc_loglik(base: pm.Model, observed, post: xr.Dataset) -> np.ndarray:
    """(draws, records) log-likelihood from ``pm.compute_log_likelihood``, chain-major."""
    tree = xr.DataTree.from_dict({"posterior": post})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ll = pm.compute_log_likelihood(
            tree, var_names=list(observed), model=base, extend_inferencedata=False,
            progressbar=False,
        )  # fmt: skip
    if isinstance(ll, xr.DataTree):
        ll = (
            ll["log_likelihood"].to_dataset()
            if "log_likelihood" in ll.children
            else ll.to_dataset()
        )
    ds = ll
    terms = []
    for name in observed:
        da = ds[name]
        other = [d for d in da.dims if d not in ("chain", "draw")]
        arr = da.transpose("chain", "draw", *other).to_numpy()
        arr = arr.reshape(-1, *arr.shape[2:])
        terms.append(arr.reshape(arr.shape[0], arr.shape[1], -1).sum(axis=2))
    return np.sum(terms, axis=0)


def _mechanism_loglik(synth: SynthModel, base: pm.Model):
    return record_function(synth, base)


def _check_loglik(run, synth, base, prepared, src: _Source, flat, config) -> np.ndarray:
    reference = config.reference
    L = _pymc_loglik(base, synth.observed, src.posterior)
    G = np.asarray(_mechanism_loglik(synth, base)(flat))
    run.close("loglik", "per-record log-likelihood vs pm.compute_log_likelihood", G, L)
    if reference is not None:
        x = synth.outcome_values(prepared)
        dist = reference(flat)
        want = dist.logpmf(x) if hasattr(dist, "logpmf") else dist.logpdf(x)
        run.close("loglik", "per-record log-likelihood vs the SciPy reference", G, want)
    return L


# -- accountant ------------------------------------------------------------------------------
def _abs(g: np.ndarray) -> np.ndarray:
    a = np.abs(g)
    a[np.isnan(a)] = np.inf  # the accountant's convention: an undefined density is unbounded
    return a


def _check_lipschitz(run, src: _Source, L) -> None:
    r"""Brute force :math:`\Delta_i = \alpha_i \max_m |f(x_i \mid \theta_m)|` over the kept
    draws, and eq. 7's :math:`\varepsilon = 2 \max_i \Delta_i` (``run.epsilon``), against the
    fit's own when there is one."""
    want = src.alpha * _abs(L[src.kept]).max(axis=0)
    run.epsilon = 2.0 * float(want.max())
    if src.result is not None:
        res = src.result
        run.close("accountant", "the fit's Lipschitz bounds vs brute force", res.lipschitz, want)
        run.close("accountant", "the fit's epsilon vs 2 max_i Delta_i", res.epsilon, run.epsilon)


def _check_accountant(run, synth, base, src: _Source, flat, L, rng) -> None:
    alpha = src.alpha
    _check_lipschitz(run, src, L)
    loglik = _mechanism_loglik(synth, base)
    lam = rng.uniform(0.0, 0.9, alpha.size)
    bound = float(np.median(_abs(alpha * L)))
    cases = [
        (Unrestricted(), alpha, L),
        (RangeAveraged(lam), (1 - lam) * alpha, L),
        (Censored(bound), np.ones_like(alpha), np.clip(alpha * L, -bound, bound)),
    ]
    for decomp, c, g in cases:
        _compare_account(run, decomp, synth, base, loglik, flat, alpha, c, g)


def _compare_account(run, decomp, synth, base, loglik, flat, alpha, c, g) -> None:
    sens = sensitive_function(decomp, synth, base, loglik)
    acc = account(sens, flat, alpha, decomp)
    a = _abs(g)
    name = type(decomp).__name__
    run.close("accountant", f"{name} Lipschitz bounds vs brute force", acc.lipschitz,
              c * a.max(axis=0))  # fmt: skip
    run.close("accountant", f"{name} per-draw maxima vs brute force", acc.per_draw,
              (c * a).max(axis=1))  # fmt: skip


# -- sensitive ranges ------------------------------------------------------------------------
def _auto_ranges(x: np.ndarray, discrete: bool) -> tuple[np.ndarray, np.ndarray]:
    if discrete:
        return x - 1.0, x + 1.0
    if np.all(x > 0):
        return 0.6 * x, 1.2 * x
    s = float(np.std(x)) or 1.0
    return x - s, x + 0.5 * s


def _range_function(synth: SynthModel, base: pm.Model) -> RecordFunction:
    def graph(m, observed, extras):
        return synth.log_prob_range_graph(m, extras["lower"], extras["upper"])

    return RecordFunction(base, synth.observed, graph=graph, extra_inputs=("lower", "upper"))


def _reference_range(dist, lower, upper, discrete: bool) -> np.ndarray:
    """log P(lower <= X <= upper) from SciPy, in log space from the nearer tail."""
    lo = lower - 1.0 if discrete else lower
    with np.errstate(divide="ignore", invalid="ignore"):
        c_lo, c_hi = dist.logcdf(lo), dist.logcdf(upper)
        s_lo, s_hi = dist.logsf(lo), dist.logsf(upper)
        left = c_hi + np.log1p(-np.exp(c_lo - c_hi))
        right = s_lo + np.log1p(-np.exp(s_hi - s_lo))
    return np.where(c_lo > np.log(0.5), right, left)


def _check_ranges(run, synth, base, prepared, src: _Source, flat, L, config) -> None:
    reference, ranges = config.reference, config.ranges
    if ranges is None:
        return run.skip("ranges", "not requested")
    try:
        x = synth.outcome_values(prepared)
    except ValueError as err:
        return run.skip("ranges", str(err))
    if x.ndim != 1:
        return run.skip("ranges", "a vector-valued record has no univariate CDF")
    lower, upper = _auto_ranges(x, synth.discrete) if ranges == "auto" else map(np.asarray, ranges)
    try:
        fn = _range_function(synth, base)
        got = fn(flat, lower=lower, upper=upper)
    except NotImplementedError as err:
        return run.skip("ranges", f"PyMC has no log-CDF for this model ({err})")
    if np.any(got > run.rtol):
        run.fail("ranges", f"log P(range) above 0: max {float(got.max())!r}")
    inf = np.full_like(x, np.inf)
    whole = fn(flat, lower=-inf, upper=inf)
    run.close("ranges", "log P(whole line)", whole, np.zeros_like(whole), rtol=1e-9)
    wider = fn(flat, lower=lower - np.abs(lower) - 1.0, upper=upper + np.abs(upper) + 1.0)
    if np.any(wider < got - run.rtol):
        run.fail("ranges", "log P(range) decreased when the range was widened")
    # additivity: P(a <= X <= b) = P(a <= X <= m) + P(m < X <= b), split inside the range
    mid = np.floor((lower + upper) / 2) if synth.discrete else (lower + upper) / 2
    above = mid + 1.0 if synth.discrete else mid
    parts = np.logaddexp(fn(flat, lower=lower, upper=mid), fn(flat, lower=above, upper=upper))
    run.close_prob("ranges", "log P(range) vs the sum over its two halves", got, parts)
    inside = (x >= lower) & (x <= upper)
    below = np.exp(got[:, inside]) < np.exp(L[:, inside]) * (1 - run.rtol) - PROB_ATOL
    if synth.discrete and np.any(below):
        run.fail("ranges", "P(range) below p(x_i) for a range holding x_i")
    if reference is not None:
        want = _reference_range(reference(flat), lower, upper, synth.discrete)
        run.close_prob("ranges", "log P(range) vs SciPy", got, want)
    g = L - got
    alpha = src.alpha
    decomp = RangeTruncated(lower, upper)
    loglik = _mechanism_loglik(synth, base)
    _compare_account(run, decomp, synth, base, loglik, flat, alpha, alpha, g)


# -- a model fitted by parts ----------------------------------------------------------------
@dataclass(frozen=True)
class _Parts:
    """A parts model's parts, their record data and the data the mechanism fits (grouped)."""

    parts: list
    records: list
    fitted: list


def _check_parts(run, synth, data, caps, config: _Config, rng):
    """The checks of a model fitted by parts (capability ``"parts"``); no built model."""
    run.capability = "parts"
    prepared, p = run.timed("validation", lambda: _prepare_parts(run, synth, data, caps))
    run.timed("weighting", lambda: _check_part_weighting(run, p, prepared.n, rng))
    src = run.timed(
        "fit",
        lambda: _source(synth, data, prepared, None, config, rng,
                        lambda: _part_points(p.parts, rng, config.n_draws)),
        False,
    )  # fmt: skip
    loglik = PartAccountant(p.parts, p.fitted)  # the mechanism's record function
    src.flat = stack_draws(src.posterior, loglik.free_names)
    L = run.timed("loglik", lambda: _check_part_loglik(run, p, loglik, src.flat))
    run.timed("accountant", lambda: _check_part_accountant(run, synth, src, loglik, L))
    run.skip("ranges", "a model fitted by parts has no single outcome of a built model")
    return prepared, None, src


def _prepare_parts(run, synth, data, caps) -> tuple[Prepared, _Parts]:
    prepared = synth.prepare(data)
    parts, records = list(synth.parts(prepared)), list(synth.part_data(prepared))
    pairs = list(synth.iter_part_data(prepared))
    names = [q.name for q in parts]
    if not parts or len(set(names)) != len(names):
        run.fail("validation", f"parts() gives no parts or repeats a name: {names}")
    if len(records) != len(parts) or len(pairs) != len(parts):
        run.fail("validation", f"{len(parts)} parts, {len(records)} part_data(), "
                               f"{len(pairs)} iter_part_data() pairs")  # fmt: skip
    for q, d, (q2, d2) in zip(parts, records, pairs, strict=True):
        if (q2.name, q2.family) != (q.name, q.family):
            run.fail("validation", f"iter_part_data() gives part '{q2.name}' ({q2.family}) where "
                                   f"parts() gives '{q.name}' ({q.family})")  # fmt: skip
        if d.n != prepared.n:
            run.fail("validation", f"part '{q.name}' has {d.n} records; the data {prepared.n}")
        for a in ("y", "X", "active"):
            if not np.array_equal(getattr(d, a), getattr(d2, a), equal_nan=a != "active"):
                run.fail("validation", f"part '{q.name}': iter_part_data() and part_data() "
                                       f"give other '{a}'")  # fmt: skip
        try:
            q.check_data(d)
        except ValueError as err:
            run.fail("validation", f"part '{q.name}' refuses its own data: {err}")
    fitted_parts, fitted = file_part_data(synth, prepared)
    if [q.name for q in fitted_parts] != names:
        run.fail("validation", "the mechanism's parts differ from parts()")
    if "levels" in caps:
        _check_levels(run, synth, prepared, dict(zip(names, records, strict=True)))
    return prepared, _Parts(parts, records, fitted)


def _check_levels(run, synth, prepared, records: Mapping) -> None:
    """Each level group: one integer per record, -1 where its part is not active, else the
    part's outcome (capability ``"levels"``)."""
    run.capability = "levels"
    groups = synth.level_groups(prepared)
    for name, g in groups.items():
        g = np.asarray(g)
        if g.shape != (prepared.n,) or g.dtype.kind not in "iu":
            run.fail("validation", f"level group '{name}' has shape {g.shape} and dtype "
                                   f"{g.dtype}; expected ({prepared.n},) integers")  # fmt: skip
        if name not in records:
            run.fail("validation", f"level group '{name}' names no part ({sorted(records)})")
        d = records[name]
        want = np.where(d.active, np.nan_to_num(d.y, nan=-1.0), -1.0)
        bad = g != want
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            run.fail("validation", f"level group '{name}' has {int(g[i])} at record {i}; its "
                                   f"part's outcome is {want[i]:g} (-1: not active)")  # fmt: skip
    run.capability = "parts"


def _part_draws(part, x: np.ndarray) -> dict[str, np.ndarray]:
    """A part's constrained values of unconstrained points ``x`` (k, size), leading axis k."""
    return part.layout.unpack(np.atleast_2d(x))


def _own(arrays: Mapping[str, np.ndarray], part) -> dict[str, np.ndarray]:
    head = f"{part.name}{SEP}"
    return {k[len(head) :]: v for k, v in arrays.items() if k.startswith(head)}


def _check_part_weighting(run, p: _Parts, n: int, rng) -> None:
    """Each part's density from the statistics the mechanism fits, minus its density with
    every weight 0 (the prior), equals the weighted sum of its per-record log-likelihood, at
    random points."""
    alpha = rng.uniform(0.05, 1.0, n)
    arrays = statistics_data(p.parts, p.fitted, alpha)
    none = statistics_data(p.parts, p.fitted, np.zeros(n))  # the prior's
    for q, d in zip(p.parts, p.records, strict=True):
        weighted = q.log_density(Stats(q.family, _own(arrays, q)))
        prior = q.log_density(Stats(q.family, _own(none, q)))
        for j in range(3):
            x = q.initial_point(int(rng.integers(2**31 - 1))) + rng.normal(0, 0.3, q.layout.size)
            f = q.loglik(_part_draws(q, x), d)[0]
            run.close("weighting", f"part '{q.name}' weighted log density at point {j}",
                      weighted.logp_grad(x)[0], prior.logp_grad(x)[0] + np.sum(alpha * f))  # fmt: skip


def _part_points(parts, rng, k: int) -> xr.Dataset:
    """k random points of every part (around its initial point) as a one-chain posterior of
    variables ``"{part}::{parameter}"``, as the mechanism's."""
    data = {}
    for q in parts:
        x = q.initial_point(int(rng.integers(2**31 - 1))) + rng.normal(0, 0.3, (k, q.layout.size))
        dims = q.dims()
        for name, v in _part_draws(q, x).items():
            own = [dim_name(q.name, d) for d in dims.get(name, ())]
            own += [f"{q.name}{SEP}{name}_dim_{i}" for i in range(len(own), v.ndim - 1)]
            data[f"{q.name}{SEP}{name}"] = (("chain", "draw", *own), v[None])
    return xr.Dataset(data, coords={"chain": [0], "draw": np.arange(k)})


def _check_part_loglik(run, p: _Parts, loglik, flat) -> np.ndarray:
    """The mechanism's fused record log-likelihood vs the sum of the parts' own."""
    L = sum(q.loglik(_own(flat, q), d) for q, d in zip(p.parts, p.records, strict=True))
    run.close("loglik", "per-record log-likelihood vs the sum of the parts' own",
              np.asarray(loglik(flat)), L)  # fmt: skip
    return L


def _check_part_accountant(run, synth, src: _Source, loglik, L) -> None:
    alpha = src.alpha
    _check_lipschitz(run, src, L)
    _compare_account(run, Unrestricted(), synth, None, loglik, src.flat, alpha, alpha, L)
    for decomp in (RangeAveraged(np.zeros(alpha.size)), Censored(1.0)):
        try:
            sensitive_function(decomp, synth, None, loglik)
        except ValueError:
            continue
        run.fail("accountant", f"the '{decomp.name}' decomposition was accepted; a record of "
                               f"several outcomes has no range, and censoring its sum breaks the "
                               f"factorisation over parts")  # fmt: skip


# -- synthesis -------------------------------------------------------------------------------
def _expected_columns(synth: SynthModel, prepared: Prepared, data) -> tuple[dict, pd.Index]:
    """{column: dtype} and the index a synthetic frame must have."""
    if isinstance(synth, PyMCModel):
        out, n = {}, prepared.n
        for name in synth.observed:
            rv = synth.model[name]
            if name in synth.masked:
                m = synth.masked[name]
                name, dtype, n = m.name, m.dtype, m.missing.size
            else:
                dtype = np.dtype(rv.dtype)
            k = int(np.prod(np.shape(value_of(synth.model.rvs_to_values[rv]))[1:], dtype=int))
            if rv.ndim > 1:
                out.update({f"{name}[{j}]": dtype for j in range(k)})
            else:
                out[name] = dtype
        return out, pd.RangeIndex(n)
    # a whole file's prepared frame carries its own columns (its plan's): preparing a frame
    # never changes the model
    columns = getattr(getattr(prepared, "plan", None), "columns", None) or synth.columns
    return {c: data[c].dtype for c in columns}, data.index


def _check_synthesis(run, synth, base, prepared, data, src: _Source) -> list[pd.DataFrame]:
    frames = src.synthesize(2, 1)
    columns, index = _expected_columns(synth, prepared, data)
    for j, f in enumerate(frames):
        if list(f.columns) != list(columns):
            run.fail(
                "synthesis", f"frame {j} has columns {list(f.columns)}; expected {list(columns)}"
            )
        if not f.index.equals(index):
            run.fail("synthesis", f"frame {j} index {f.index!r}; expected {index!r}")
        for c, dtype in columns.items():
            if f[c].dtype != dtype:
                run.fail("synthesis", f"column '{c}' has dtype {f[c].dtype}; expected {dtype}")
            if isinstance(dtype, pd.CategoricalDtype):
                continue  # dtype equality includes the categories and their order
            numeric = pd.api.types.is_numeric_dtype(f[c].dtype) and f[c].dtype != bool
            x = f[c].to_numpy(dtype=float) if numeric else np.zeros(0)
            empty = data is not None and c in data and bool(data[c].isna().any())
            if np.isinf(x).any() or (not empty and np.isnan(x).any()):
                run.fail("synthesis", f"column '{c}' holds non-finite synthetic values")
        if not isinstance(synth, PyMCModel):
            for p in getattr(synth, "predictors", ()):
                if not f[p].equals(data[p]):
                    run.fail("synthesis", f"predictor '{p}' was not kept as given")
        else:
            _check_support(run, synth, base, f, src.flat)
    return frames


def _check_support(run, synth: PyMCModel, base, frame: pd.DataFrame, flat) -> None:
    """Each synthetic record has a finite log density under some posterior draw."""
    if len(synth.observed) != 1 or base[synth.observed[0]].ndim != 1:
        return
    name = synth.observed[0]
    column = synth.columns[0]
    x = frame[column].to_numpy(dtype=float)
    if name in synth.masked:
        x = x[~synth.masked[name].missing]

    def graph(m, observed, extras):
        return rv_logprob(m, m[name], extras["x"].astype(m[name].dtype))

    lp = RecordFunction(base, [name], graph=graph, extra_inputs=("x",))(flat, x=x)
    outside = ~np.isfinite(lp).any(axis=0)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        run.fail("synthesis", f"synthetic '{column}' value {x[i]!r} lies outside the support")


# -- seed ------------------------------------------------------------------------------------
def _check_seed(run, synth, data, src: _Source, frames, config: _Config) -> None:
    again = src.synthesize(2, 1)
    for a, b in zip(frames, again, strict=True):
        try:
            pd.testing.assert_frame_equal(a, b, check_exact=True)
        except AssertionError as err:
            run.fail("seed", f"the same seed gave different synthetic data: {err}")
    other = src.synthesize(2, 2)
    if all(a.equals(b) for a, b in zip(frames, other, strict=True)):
        run.fail("seed", "another seed gave the same synthetic data")
    if not config.refit or src.result is None:
        return
    res, seed = src.result, config.seed
    res2 = _fit(synth, data, config)
    # equal up to rounding: BLAS and NumPy reductions may round differently from call to call
    # (memory alignment), which NUTS carries along at the 1e-13 level
    for k in res.posterior.data_vars:
        run.close("seed", f"draws of '{k}' of two fits with seed {seed}",
                  res2.posterior[k].to_numpy(), res.posterior[k].to_numpy(), rtol=_REFIT_RTOL)  # fmt: skip
    for a, b in zip(frames, res2.synthesize_datasets(2, 1), strict=True):
        for c in a.columns:
            if not pd.api.types.is_float_dtype(a[c].dtype):
                same = a[c].equals(b[c])
            else:
                same = np.allclose(a[c], b[c], rtol=_REFIT_RTOL, atol=_REFIT_RTOL, equal_nan=True)
            if not same:
                run.fail("seed", f"two fits with the same seed gave different synthetic '{c}'")


# -- inputs ----------------------------------------------------------------------------------
def _model_state(model: pm.Model) -> dict:
    values = {v.name: value_of(v).copy() for v in model.data_vars}
    values |= {
        f"observed:{rv.name}": value_of(model.rvs_to_values[rv]).copy() for rv in model.observed_RVs
    }
    return {
        "values": values,
        "names": sorted(model.named_vars),
        "potentials": len(model.potentials),
    }


def _snapshot(synth: SynthModel, data) -> dict:
    out = {"data": None if data is None else data.copy(deep=True)}
    if isinstance(synth, PyMCModel):
        out["model"] = _model_state(synth.model)
    return out


def _check_unchanged(run, synth, data, before) -> None:
    if before["data"] is not None:
        try:
            pd.testing.assert_frame_equal(data, before["data"], check_exact=True)
        except AssertionError as err:
            run.fail("input_unchanged", f"the DataFrame was modified: {err}")
    if "model" in before:
        now = _model_state(synth.model)
        if (
            now["names"] != before["model"]["names"]
            or now["potentials"] != before["model"]["potentials"]
        ):
            run.fail("input_unchanged", "variables were added to or removed from the user's model")
        for k, v in before["model"]["values"].items():
            if not np.array_equal(now["values"][k], v, equal_nan=v.dtype.kind == "f"):
                run.fail("input_unchanged", f"the model's data '{k}' was modified")
