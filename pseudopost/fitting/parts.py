r"""Fitting one column part: nutpie on its written-out density, or exact draws when conjugate.

For fixed weights the pseudo posterior of a sequential model is a product of one posterior per
column part (:mod:`pseudopost.models.parts.base`), so each part is fitted alone, with
its own step size and mass matrix. :func:`nutpie_model` hands nutpie the part's log density and
gradient written out in NumPy (:meth:`Part.logp_grad <pseudopost.models.parts.base.Part.
logp_grad>`: grouped statistics, priors, log-Jacobians; cached Numba kernels for the large
multinomial and logistic parts) through :func:`nutpie.from_pyfunc`, also for the ready models'
sufficient statistics (:func:`~pseudopost.fitting.sufficient.part_model`): no model is compiled
(the Numba kernels are compiled once ever and loaded from Numba's disk cache). The statistics
are nutpie's shared data, so a refit with new weights (or new records) swaps them in with ``with_data`` (their
shapes may change: the number of patterns depends on the data) and never rebuilds the model.

:func:`sample_part` returns a ``DataTree`` with ``posterior`` (dims ``chain``, ``draw`` and the
part's own: ``predictor``, ``level``, ``cutpoint``) and ``sample_stats``; a conjugate part
(``dirichlet_categorical``) is drawn exactly (:meth:`Part.exact_draws`) with no MCMC.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from pseudopost.fitting import mixing
from pseudopost.fitting.callback_model import callback_model
from pseudopost.fitting.importance import psis_log_weights, systematic_resample
from pseudopost.fitting.sampler import NUTPIE_MAXDEPTH, posterior_tree, run_nutpie
from pseudopost.models.parts import Part, Stats
from pseudopost.models.parts.callback import has_callback

__all__ = [
    "APPROXIMATE_MIN_PATTERNS",
    "HOW_DRAWN",
    "IMH_MIN_ACCEPTANCE",
    "PartSampler",
    "drawn_by",
    "independence_draws",
    "laplace_draws",
    "laplace_khat_max",
    "nutpie_model",
    "preconditioned_model",
    "sample_part",
    "shared_data",
    "split_normal_scales",
]


def shared_data(part: Part, stats: Stats) -> dict[str, np.ndarray]:
    """The statistics' arrays and their derived ones (:meth:`Part.derived
    <pseudopost.models.parts.base.Part.derived>`, e.g. the design rows' non-zeros) as nutpie's
    shared data (float64), checked against the part: swapped together, never out of step."""
    density = part.log_density(stats)  # checks the family
    return {k: np.asarray(v, dtype=np.float64) for k, v in density.arrays.items()}


def nutpie_model(part: Part, stats: Stats):
    """A nutpie model of the part's weighted posterior (``nutpie.from_pyfunc``) whose shared
    data are the statistics' arrays: ``model.with_data(**shared_data(part, new_stats))``
    refits without rebuilding."""
    density = part.log_density(stats)
    return pyfunc_model(part, lambda: density.logp_data, shared_data(part, stats))


def pyfunc_model(part: Part, make_logp, shared: Mapping[str, np.ndarray] | None = None):
    """``nutpie.from_pyfunc`` over the part's packed parameters (its layout, initial point,
    dims and coordinates), the log density and gradient from ``make_logp()``, with ``shared``
    data (none: the density holds its own)."""
    from nutpie.compiled_pyfunc import from_pyfunc

    layout = part.layout

    def make_expand(seed1, seed2, chain):
        return lambda x, **_: layout.unpack(x)

    extra = {} if shared is None else {"shared_data": shared}
    return from_pyfunc(
        ndim=layout.size,
        make_logp_fn=make_logp,
        make_expand_fn=make_expand,
        make_initial_point_fn=part.initial_point,
        expanded_dtypes=[np.dtype("float64")] * len(layout.names),
        expanded_shapes=layout.shapes,
        expanded_names=layout.names,
        dims=part.dims(),
        coords=part.coords(),
        **extra,
    )


#: shared-data names of the preconditioner (mode and factor) beside the statistics
_X0, _L = "__laplace_x0", "__laplace_L"


def preconditioned_model(part: Part, stats: Stats):
    """A nutpie model of the same posterior in the variables :math:`z` of
    :mod:`pseudopost.fitting.laplace` (:math:`x = x_0 + L z`, a constant Jacobian): shared data
    are the statistics' arrays and the preconditioner's ``x0`` and ``L``, swapped together
    with ``with_data``; the draws are expanded back to the part's parameters. For the grouped
    GLM parts (:func:`~pseudopost.models.parts.callback.has_callback`) nutpie calls the density
    as compiled code, without the GIL (:mod:`pseudopost.fitting.callback_model`: the same
    density and draws, 3.6x faster on a German credit part; that file's synthesis 49.7 s ->
    20.3 s); the others through ``nutpie.from_pyfunc``."""
    from nutpie.compiled_pyfunc import from_pyfunc

    if has_callback(part):
        return callback_model(part, shared_data(part, stats))
    density = part.log_density(stats)
    layout = part.layout
    d = layout.size

    def make_logp():
        def logp(z, **arrays):
            x0, L = arrays.pop(_X0), arrays.pop(_L)
            lp, grad = density.logp_data(x0 + L @ z, **arrays)
            return lp, L.T @ grad

        return logp

    def make_expand(seed1, seed2, chain):
        return lambda z, **arrays: layout.unpack(arrays[_X0] + arrays[_L] @ z)

    def initial(seed):
        return np.random.default_rng(seed).uniform(-1.0, 1.0, d)

    data = {**shared_data(part, stats), _X0: np.zeros(d), _L: np.eye(d)}
    return from_pyfunc(
        ndim=d,
        make_logp_fn=make_logp,
        make_expand_fn=make_expand,
        make_initial_point_fn=initial,
        expanded_dtypes=[np.dtype("float64")] * len(layout.names),
        expanded_shapes=layout.shapes,
        expanded_names=layout.names,
        shared_data=data,
        dims=part.dims(),
        coords=part.coords(),
    )


#: the deepest NUTS tree (2**3 - 1 = 7 leapfrog steps) in variables whitened by a dense
#: Laplace factor: there the posterior is close to a standard normal, and 7 steps at the step
#: sizes of 0.3 to 0.4 the parts adapt to move a draw some 2.5 units, past the quarter period
#: (pi / 2) at which a normal's draws decorrelate. nutpie's 10 (1,023 steps) let the first
#: warm-up windows, whose mass matrix comes from a few draws, grow 1,023-step trees (80 % of
#: the gradients of Adult's occupation part); the U-turn criterion at depth 6 stopped at 15
#: steps, twice the gradients for the same draws (YRBSS, 13 parts drawn by NUTS: the weighted
#: fit 69.7 s at depth 6 and 250 tuning steps, 26.3 s at depth 3 and 100). A capped tree is
#: still an exact NUTS kernel: the cap changes how far a draw moves, never what is sampled.
#: Where the Laplace factor is far from the posterior the short trees get stuck, and
#: :data:`STUCK_RHAT` / :data:`STUCK_ESS` send the part to a second run. A diagonal or identity
#: fallback (no dense Hessian) keeps nutpie's depth.
WHITENED_MAXDEPTH = 3
#: a NUTS run is stuck when some parameter's rank-normalised split R-hat exceeds this (Gelman
#: and Rubin's 1.1: at 1.05 the largest of 385 well-mixed parameters crossed it by chance, as
#: YRBSS's hours of sleep did at 1.057 with least bulk ESS 147 of 500, and its second run, 27 s,
#: mixed worse; the stuck runs found hold R-hats of 1.3 to 2.8) ...
STUCK_RHAT = 1.1
#: ... or its bulk ESS is below this share of the draws (far looser than the diagnostics'
#: warning thresholds, :data:`~pseudopost.fitting.sampler.RHAT_MAX` and ``ESS_MIN``, which
#: 500 draws of a well-mixed chain miss by chance)
STUCK_ESS = 0.1
#: the second run of a stuck part: nutpie's low-rank mass matrix adaptation on top of the
#: whitening (it learns the directions the Laplace factor has wrong: the ridge of a
#: location-scale part, where the posterior spreads 11 times the Laplace sd), trees up to 15
#: steps, at least this many tuning steps. YRBSS strength training (139 parameters): least bulk
#: ESS 7 of 500 in the first run, 148 in the second (6.2 s; 152 in 11.8 s at depth 6 and 250)
RETRY_MAXDEPTH, RETRY_MIN_TUNE = 4, 150


def _is_dense(L: np.ndarray) -> bool:
    """Whether the Laplace factor has off-diagonal entries (a dense Hessian's factor, not the
    diagonal fallback)."""
    return L.shape[0] > 1 and bool(np.any(L[~np.eye(L.shape[0], dtype=bool)] != 0.0))


def _check_counts(draws: int, tune: int, chains: int) -> None:
    for name, v, low in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
            raise ValueError(f"'{name}' must be an integer >= {low}. Got {v!r}.")


class PartSampler:
    """Samples one part's weighted posterior from its statistics, the nutpie model built once.

    Parameters
    ----------
    part
        The column part.
    stats
        Statistics of the shape to build for (any weights); every :meth:`sample` swaps its own.
    precondition
        Sample in the Laplace-preconditioned variables (:mod:`pseudopost.fitting.laplace`: the
        same posterior, far fewer leapfrog steps for parts with many correlated parameters);
        the mode and Hessian are recomputed from each fit's statistics.
    """

    def __init__(self, part: Part, stats: Stats, *, precondition: bool = True) -> None:
        self.part = part
        self.precondition = bool(precondition)
        if part.conjugate:
            self.compiled = None
        elif self.precondition:
            self.compiled = preconditioned_model(part, stats)
        else:
            self.compiled = nutpie_model(part, stats)

    def sample(
        self,
        stats: Stats,
        *,
        draws: int,
        tune: int,
        chains: int,
        seed: int,
        progress: bool = False,
        start: np.ndarray | None = None,
    ) -> xr.DataTree:
        """Posterior draws (groups ``posterior`` and, for MCMC, ``sample_stats``); ``start``
        (packed parameters) is where the preconditioner's mode search starts (see
        :func:`~pseudopost.fitting.laplace.laplace_transform`)."""
        return self.sample_with_mode(
            stats, draws=draws, tune=tune, chains=chains, seed=seed, progress=progress,
            start=start,
        )[0]  # fmt: skip

    def sample_with_mode(
        self,
        stats: Stats,
        *,
        draws: int,
        tune: int,
        chains: int,
        seed: int,
        progress: bool = False,
        start: np.ndarray | None = None,
        laplace: bool = False,
        independence: bool = False,
        hard: bool = False,
    ) -> tuple[xr.DataTree, np.ndarray | None]:
        """:meth:`sample`, and the preconditioner's mode (packed; None for a conjugate or an
        unpreconditioned part), which a refit under other weights can ``start`` from.

        ``laplace``: draws from the Laplace approximation :math:`N(\\hat x, H^{-1})` on the
        unconstrained scale, instead of NUTS, when the mode was reached by Newton steps on the
        exact Hessian (:func:`laplace_draws` with ``approximate``): importance-resampled where
        the ratios' Pareto :math:`\\hat k` is small enough, else the split-normal
        approximation's own draws (:func:`split_normal_scales`) on a part with
        :data:`APPROXIMATE_MIN_PATTERNS` records per parameter; a smaller part runs NUTS, and
        a stuck run (:func:`_stuck`) is kept without a second run (``sample_stats`` attribute
        ``stuck``); a mode not reached: as without it (conjugate parts are drawn exactly). For
        draws that need not be an exact posterior mechanism only (the risk step's).

        ``independence``: draws by the independence Metropolis-Hastings sampler with that
        Laplace approximation as its proposal (:func:`independence_draws`: an exact MCMC kernel
        of the posterior) when the mode was reached, falling back to NUTS when the chains
        accept too few proposals or :math:`\\hat k` is too large.

        NUTS runs with trees of at most :data:`WHITENED_MAXDEPTH` levels in whitened variables;
        a run that has not mixed (:func:`_stuck`) is drawn again, but for ``laplace`` (next
        seed, low-rank mass matrix, :data:`RETRY_MAXDEPTH`, at least :data:`RETRY_MIN_TUNE`
        tuning steps) and the run with the larger least bulk ESS is kept;
        ``sample_stats.attrs["rerun"]`` says so. Either run is an exact MCMC kernel of the same
        posterior: the choice changes how well the draws mix, never what they sample, so the
        accountant's reading of the draws keeps its meaning. The tree's attribute ``sampler``
        says which of these drew it (:func:`drawn_by`).

        ``hard``: a part known to be far from its Laplace approximation (the risk step drew it
        from the split-normal form: its importance ratios' :math:`\\hat k` failed) runs NUTS
        with the second run's settings from the start (``nuts low-rank``; drawn again as above
        when stuck): on YRBSS each of the three such parts was stuck in the whitened short-tree
        run, whose gradients were then wasted."""
        _check_counts(draws, tune, chains)
        if self.part.conjugate:
            return _drawn(_exact_tree(self.part, stats, draws, chains, seed), EXACT), None
        data = shared_data(self.part, stats)
        depth = NUTPIE_MAXDEPTH
        mode = None
        if self.precondition or laplace:
            from pseudopost.fitting.laplace import laplace_approximation

            x0, L, exact = laplace_approximation(self.part, stats, start=start)
            if laplace and exact:
                tree = laplace_draws(self.part, stats, x0, L, draws, chains, seed,
                                     approximate=True)  # fmt: skip
                if tree is not None:
                    resampled = tree["posterior"].attrs["laplace_resampled"]
                    return _drawn(tree, LAPLACE if resampled else SPLIT_NORMAL), x0
            elif independence and exact:
                tree = independence_draws(self.part, stats, x0, L, draws, tune, chains, seed)
                if tree is not None:
                    return _drawn(tree, IMH), x0
            if self.precondition:
                data[_X0], data[_L], mode = x0, L, x0
                if _is_dense(L):
                    depth = WHITENED_MAXDEPTH
        compiled = self.compiled.with_data(**data)
        adaptation = "diag" if self.precondition else "low_rank"
        hard = hard and not laplace
        if hard:
            tune, adaptation, depth = max(tune, RETRY_MIN_TUNE), "low_rank", max(depth, RETRY_MAXDEPTH)
        tree = self._nuts(compiled, draws, tune, chains, seed, progress, adaptation, depth)
        stuck = _stuck(tree)
        if laplace and stuck:  # the risk step's draws: kept, no second run
            # (not its split-normal draws: on cps91 the near-deterministic experience and
            # non-wife income parts, R-hat 2.5, gave risks that doubled the weighted epsilon)
            tree["sample_stats"].attrs["stuck"] = "stuck (R-hat or ESS): kept (risk step)"
            return _drawn(tree, NUTS_STUCK), mode
        if stuck:
            again = self._nuts(compiled, draws, max(tune, RETRY_MIN_TUNE), chains, seed + 1,
                               progress, "low_rank", max(depth, RETRY_MAXDEPTH))  # fmt: skip
            if _least_ess(again) > _least_ess(tree):
                tree = again
            tree["sample_stats"].attrs["rerun"] = "stuck (R-hat or ESS): second NUTS run"
            return _drawn(tree, NUTS_RERUN_UNMIXED if _stuck(tree) else NUTS_RERUN), mode
        return _drawn(tree, NUTS_LOW_RANK if hard else NUTS), mode

    def _nuts(self, compiled, draws, tune, chains, seed, progress, adaptation, depth):
        trace = run_nutpie(
            compiled, draws=draws, tune=tune, chains=chains, seed=seed, progress=progress,
            adaptation=adaptation, maxdepth=depth,
        )  # fmt: skip
        return posterior_tree(trace, self.part.layout.names)


#: how a part's draws were made (:func:`drawn_by`): exact conjugate draws; importance-resampled
#: Laplace draws; the split-normal approximation's own draws (both the risk step's only);
#: independence Metropolis-Hastings; NUTS; NUTS drawn a second time because the first run had
#: not mixed (and the kept run had not mixed either: ``nuts twice unmixed``); a NUTS run that
#: had not mixed, kept without a second (the risk step's only); NUTS with the second run's
#: settings from the start, for a part known to be hard (``hard``), which mixed
EXACT, LAPLACE, SPLIT_NORMAL, IMH = "exact", "laplace", "split-normal", "imh"
NUTS, NUTS_RERUN, NUTS_STUCK = "nuts", "nuts twice", "nuts unmixed"
NUTS_RERUN_UNMIXED, NUTS_LOW_RANK = "nuts twice unmixed", "nuts low-rank"
HOW_DRAWN = (EXACT, LAPLACE, SPLIT_NORMAL, IMH, NUTS, NUTS_LOW_RANK, NUTS_RERUN,
             NUTS_RERUN_UNMIXED, NUTS_STUCK)  # fmt: skip


def _drawn(tree: xr.DataTree, how: str) -> xr.DataTree:
    tree.attrs["sampler"] = how
    return tree


def drawn_by(tree: xr.DataTree) -> str | None:
    """How :meth:`PartSampler.sample_with_mode` drew a part's tree (one of :data:`HOW_DRAWN`),
    None for a tree it did not make. Only the draws labelled ``imh`` or ``nuts...`` are MCMC;
    only ``exact``, ``imh`` and ``nuts...`` serve the accountant."""
    return tree.attrs.get("sampler")


def _stacked(tree: xr.DataTree) -> np.ndarray:
    """Every scalar of the posterior as (chain, draw, k)."""
    post = tree["posterior"].to_dataset()
    c, d = post.sizes["chain"], post.sizes["draw"]
    return np.concatenate([post[v].to_numpy().reshape(c, d, -1) for v in post.data_vars], axis=2)


def _mixing(tree: xr.DataTree) -> tuple[float, float]:
    """(largest rank-normalised split R-hat, least bulk ESS) over the parameters that vary
    across the draws (a level no record holds, drawn at its bound, is left out); (nan, draws)
    when there are too few draws to split or nothing varies (:mod:`pseudopost.fitting.mixing`
    on the stacked draws, all parameters at once)."""
    x = _stacked(tree)
    c, d = x.shape[:2]
    x = x[:, :, np.ptp(x.reshape(c * d, -1), axis=0) > 0]
    if c * d < 8 or x.shape[2] == 0:
        return float("nan"), float(c * d)
    with np.errstate(all="ignore"):
        rhat, ess = mixing.rhat(x), mixing.ess_bulk(x)
    # an undefined R-hat or ESS says nothing: left out
    rhat, ess = rhat[np.isfinite(rhat)], ess[np.isfinite(ess)]
    return (float(rhat.max()) if rhat.size else float("nan"),
            float(ess.min()) if ess.size else float(c * d))  # fmt: skip


def _least_ess(tree: xr.DataTree) -> float:
    return _mixing(tree)[1]


def _stuck(tree: xr.DataTree) -> bool:
    """Whether a NUTS run has not mixed: :data:`STUCK_RHAT`, :data:`STUCK_ESS`."""
    rhat, ess = _mixing(tree)
    c, d = tree["posterior"].sizes["chain"], tree["posterior"].sizes["draw"]
    return bool(rhat > STUCK_RHAT or ess < STUCK_ESS * c * d)


#: fewer draws than this are drawn by NUTS: the Pareto k-hat of so few ratios is unreliable
LAPLACE_MIN_DRAWS = 100
#: the least number of normal proposals whose importance ratios are checked and resampled:
#: :func:`laplace_khat_max` rises with their number (0.565 at 200, 0.63 at 500), so a part
#: asked for fewer draws (the risk step's 2 x 100) is judged, and resampled, as at 500
#: (a proposal costs one log density: no gradient, no chain)
LAPLACE_PROPOSALS = 500


def laplace_khat_max(size: int) -> float:
    r"""The largest Pareto :math:`\hat k` at which ``size`` importance draws are trusted:
    :math:`\min(1 - 1/\log_{10} S, 0.7)` (Vehtari, Simpson, Gelman, Yao & Gabry 2024, *Pareto
    smoothed importance sampling*, JMLR 25, section 3)."""
    return float(min(1.0 - 1.0 / np.log10(max(size, 11)), 0.7))


def laplace_draws(
    part: Part,
    stats: Stats,
    x0: np.ndarray,
    L: np.ndarray,
    draws: int,
    chains: int,
    seed: int,
    *,
    approximate: bool = False,
) -> xr.DataTree | None:
    r"""``chains`` x ``draws`` draws of the part's posterior from its Laplace approximation
    :math:`q = N(\hat x, H^{-1})` on the unconstrained scale (:math:`L L^\top = H^{-1}`),
    corrected by Pareto-smoothed importance resampling, or None when the approximation is too
    far from the posterior for that.

    S independent draws :math:`x_s = \hat x + L z_s`, :math:`z_s \sim N(0, I)` (S the draws
    asked for, at least :data:`LAPLACE_PROPOSALS`), get the log importance ratios
    :math:`\log p(x_s) - \log q(x_s) = \log p(x_s) + \tfrac12 \lVert z_s \rVert^2 + c`; PSIS
    smooths them (ArviZ's ``psislw``) and S draws are taken by systematic resampling with those
    weights, as Pathfinder does (Zhang, Carpenter, Gelman & Vehtari 2022, JMLR 23, section
    2.3), of which a random subset of the size asked for is returned. When the Pareto
    :math:`\hat k` exceeds :func:`laplace_khat_max`
    (a rare level's logistic intercept, whose posterior is skewed far beyond a normal's tails)
    the weights cannot be trusted and None is returned: the caller runs NUTS; with
    ``approximate``, the draws of the split-normal approximation (:func:`split_normal_scales`)
    are returned instead, not resampled, when the part has :data:`APPROXIMATE_MIN_PATTERNS`
    distinct records per parameter (None otherwise). A DataTree with the group ``posterior``
    only (no sampler statistics); its attributes ``laplace_khat`` (:math:`\hat k` of the normal
    proposal; NaN when a ratio was not finite) and ``laplace_resampled`` (whether the draws
    were importance-resampled). The ratios are judged on the first proposals first
    (:data:`PROBE_KHAT`): ratios whose k-hat is already far too large there end the attempt,
    and ``laplace_khat`` is then theirs; any draws that pass are those of the whole check. Fewer than :data:`LAPLACE_MIN_DRAWS` draws: None. Used where
    draws only need to show the posterior's spread, not to be an exact mechanism (the risk
    step's unweighted posterior, :func:`pseudopost.synthesize`'s ``risk_fit``)."""
    size = chains * draws
    if size < LAPLACE_MIN_DRAWS:
        return None
    rng = np.random.default_rng(seed)
    proposals = max(size, LAPLACE_PROPOSALS)
    z = rng.standard_normal((proposals, x0.size))
    probes = [(n, lambda lr, k=k: not _khat(lr) > k) for n, k in PROBE_KHAT]
    proposed = _proposals(part, stats, x0, L, z, probes=probes)
    khat = float("nan") if proposed is None else proposed[3]
    if proposed is not None and proposed[2] is not None and khat <= laplace_khat_max(proposals):
        x, _, lw, _ = proposed
        pick = systematic_resample(lw, rng.uniform())
        x, resampled = x[rng.permutation(pick)[:size]], True  # in random order
    elif approximate and stats.n_patterns >= APPROXIMATE_MIN_PATTERNS * x0.size:
        z = z[:size]
        lower, upper = split_normal_scales(part, stats, x0, L)
        left = rng.uniform(size=z.shape) < lower / (lower + upper)
        x, resampled = x0 + np.where(left, -lower, upper) * np.abs(z) @ L.T, False
    else:
        return None
    tree = _packed_tree(part, x, draws, chains)
    tree["posterior"].attrs.update(laplace_khat=khat, laplace_resampled=resampled)
    return tree


#: the split-normal draws stand in for a posterior sample only where the part has at least this
#: many distinct records (design row and outcome) per parameter: there its posterior is near
#: normal but for some skew (Bernstein-von Mises), and NUTS on it is costly (its gradient reads
#: every pattern). A smaller part, whose rare levels or grid points hold a handful of records,
#: is drawn by NUTS. At 20: on 400 YRBSS records the unweighted synthesizer gave 7.3 % missing
#: answers to a question 3 % left unanswered, and SLID's education over 197 grid points (28
#: per parameter) lost utility (S_pMSE 4.64 / 4.38 -> 5.39 / 5.09, unweighted / weighted);
#: at 50 SLID is as before and YRBSS keeps most of the saving (147 s -> 116 s)
APPROXIMATE_MIN_PATTERNS = 50

#: where along each whitened axis (in Laplace sds) the split-normal scales are read, and the
#: range (in Laplace sds) they are kept within
SPLIT_REACH, SPLIT_SCALES = 2.0, (0.2, 5.0)


def split_normal_scales(
    part: Part, stats: Stats, x0: np.ndarray, L: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""The scales :math:`(\sigma^-_j, \sigma^+_j)` of the split-normal approximation along
    each whitened axis :math:`l_j` (column of :math:`L`) of the Laplace approximation (Geweke
    1989, *Bayesian inference in econometric models using Monte Carlo integration*,
    Econometrica 57, section 3: the multivariate split-normal importance density).

    With :math:`x = \hat x + L z`, :math:`z_j` has density :math:`\propto
    \exp(-z_j^2 / 2\sigma_j^{\mp 2})` left and right of 0 (so :math:`P(z_j < 0) =
    \sigma^-_j / (\sigma^-_j + \sigma^+_j)`). A normal of sd :math:`\sigma` drops by
    :math:`r^2 / 2\sigma^2` at :math:`r` sds; the log density's drop :math:`\delta^\pm_j =
    \log p(\hat x) - \log p(\hat x \pm r\, l_j)` at :math:`r` = :data:`SPLIT_REACH` gives
    :math:`\sigma^\pm_j = r / \sqrt{2 \delta^\pm_j}`, clipped to :data:`SPLIT_SCALES` (a
    point outside the support: the lower clip; no drop: the upper). A rare level's logistic
    intercept, whose posterior falls steeply towards frequent and slowly towards rarer, gets a
    short right and a long left side, where the normal puts as much mass on each. Costs
    :math:`2d` log densities."""
    density = part.log_density(stats)
    lo, hi = SPLIT_SCALES
    with np.errstate(all="ignore"):
        top = density.logp_grad(x0)[0]
        out = []
        for sign in (-1.0, 1.0):
            drop = np.array([top - _finite_or(-np.inf, density, x0 + sign * SPLIT_REACH * axis)
                             for axis in L.T])  # fmt: skip
            sigma = np.where(drop > 0, SPLIT_REACH / np.sqrt(2.0 * drop), hi)
            out.append(np.clip(np.nan_to_num(sigma, nan=lo), lo, hi))
    return out[0], out[1]


def _finite_or(value: float, density, x: np.ndarray) -> float:
    """The log density at ``x``, or ``value`` where it is not finite or refused."""
    try:
        lp = float(density.logp_grad(x)[0])
    except (ValueError, FloatingPointError):
        return value
    return lp if np.isfinite(lp) else value


#: the importance ratios of the first proposals (in the order they are drawn) are judged before
#: the others are computed, and an attempt that already fails on them ends there: each ratio
#: costs one log density of the whole part (1 to 8 ms on YRBSS's and Adult's multinomial parts),
#: and the parts whose Laplace approximation is far from the posterior (k-hat 1.0 to 2.6, an
#: independence chain accepting 1 to 9 % of its moves, on their 500 or 700 proposals) were then
#: drawn otherwise after all. The first :data:`PROBE` states of an independence chain's first
#: chain are judged ...
PROBE = 100
#: ... and stop it when they accept fewer than this share of their moves (on the three benchmark
#: files every part whose chains passed :data:`IMH_MIN_ACCEPTANCE` had accepted at least 0.44;
#: a chain's acceptance falls as it meets the heavier ratios, it does not rise); ...
PROBE_ACCEPTANCE = 0.2
#: ... and importance ratios stop when the Pareto k-hat of their first n exceeds k, for each
#: (n, k) in turn: far past :func:`laplace_khat_max`'s threshold (0.63 at 500), at which k-hat's
#: spread on so few ratios still leaves a margin. On 606 draws of 500 ratios of the parts of
#: YRBSS, CPS 1991 and Adult (3 to 12 seeds each), the 263 that passed had k-hat at most 1.09 on
#: their first 100 and 0.78 on their first 250 (one passed after 1.09 at 100); these rules stop
#: 181 of the 343 that failed
PROBE_KHAT = ((100, 1.5), (250, 1.2))


def _ratios(density, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    r"""Log importance ratios :math:`\log p(x) + \tfrac12\lVert z\rVert^2` of rows."""
    with np.errstate(all="ignore"):
        lp = np.array([density.logp_grad(row)[0] for row in x])
        return lp + 0.5 * np.einsum("...i,...i->...", z, z)


def _khat(log_ratio: np.ndarray) -> float:
    """PSIS k-hat of flat log ratios; NaN when no tail can be fitted."""
    try:
        return float(psis_log_weights(log_ratio, (1, log_ratio.size))[1])
    except ValueError:
        return float("nan")


def _proposals(
    part: Part, stats: Stats, x0: np.ndarray, L: np.ndarray, z: np.ndarray, probes=()
):
    r"""Draws :math:`x = \hat x + L z` of the Laplace approximation (``z`` standard normal,
    shape ``(..., d)``), their log importance ratios :math:`\log p(x) + \tfrac12\lVert
    z\rVert^2` (same leading shape), the flat PSIS log weights and :math:`\hat k`; None when a
    ratio is not finite or no :math:`\hat k` can be fitted. The callers compare
    :math:`\hat k` with :func:`laplace_khat_max`.

    ``probes``: pairs ``(n, keep)``, n increasing: once the ratios of the first n proposals (C
    order: for ``z`` of shape (chains, size, d) and n at most size, the first chain's) are
    computed, ``keep`` is called with them (flat); when it returns False the rest are not
    computed and ``(x, None, None, khat)`` is returned, ``khat`` the k-hat of those first n. A
    probe at or past the number of proposals is not run. The ratios computed never depend on
    whether a probe ran."""
    x = x0 + z @ L.T
    d = x0.size
    density = part.log_density(stats)
    flat_x, flat_z = x.reshape(-1, d), z.reshape(-1, d)
    total = flat_x.shape[0]
    done = np.zeros(0)
    for n, keep in [*((n, k) for n, k in probes if n < total), (total, None)]:
        done = np.concatenate([done, _ratios(density, flat_x[done.size : n],
                                             flat_z[done.size : n])])  # fmt: skip
        if not np.all(np.isfinite(done)):
            return None
        if keep is not None and not keep(done):
            return x, None, None, _khat(done)
    log_ratio = done.reshape(z.shape[:-1])
    try:
        lw, khat = psis_log_weights(log_ratio.ravel(), (1, log_ratio.size))
    except ValueError:  # a tail too short to fit: no k-hat, no trust
        return None
    return x, log_ratio, lw, khat


def _imh_chain(log_ratio: np.ndarray, log_u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of the state after each step, accepted) of one independence chain over proposals
    with log ratios ``log_ratio`` and log uniforms ``log_u``; it starts at the first proposal."""
    size = log_ratio.shape[0]
    index = np.empty(size, dtype=np.int64)
    accepted = np.zeros(size, dtype=bool)
    cur = 0
    for s in range(size):
        if s > 0 and log_u[s] < log_ratio[s] - log_ratio[cur]:
            cur = s
            accepted[s] = True
        index[s] = cur
    return index, accepted


def _packed_tree(part: Part, x: np.ndarray, draws: int, chains: int) -> xr.DataTree:
    """A ``posterior``-only DataTree of packed draws ``x`` (chains x draws rows, chain-major)."""
    layout = part.layout
    values = [layout.unpack(row) for row in x]
    return _tree(part, {k: np.stack([v[k] for v in values]) for k in layout.names}, draws, chains)


#: the least acceptance rate of the independence sampler's chains at which its draws are kept
#: (below it the Laplace proposal is too far from the posterior: NUTS instead)
IMH_MIN_ACCEPTANCE = 0.5


def independence_draws(
    part: Part,
    stats: Stats,
    x0: np.ndarray,
    L: np.ndarray,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
) -> xr.DataTree | None:
    r"""``chains`` x ``draws`` draws of the part's posterior by the independence
    Metropolis-Hastings sampler with the Laplace approximation :math:`q = N(\hat x, H^{-1})`
    as its proposal (Tierney 1994, *Markov chains for exploring posterior distributions*, Ann.
    Statist. 22, section 2.3.2), or None when the proposal is too far from the posterior.

    Each chain draws ``tune + draws`` proposals :math:`x_s = \hat x + L z_s`, :math:`z_s \sim
    N(0, I)`, with importance ratios :math:`w_s = p(x_s)/q(x_s)` (:math:`\log w_s = \log
    p(x_s) + \tfrac12\lVert z_s\rVert^2 + c`), starts at its first proposal and moves to
    :math:`x_s` with probability :math:`\min(1, w_s / w_{cur})`; the first ``tune`` states are
    discarded. Unlike importance resampling (:func:`laplace_draws`) this is an exact MCMC kernel
    of the posterior itself, as NUTS is: its stationary distribution is the weighted pseudo
    posterior whatever the proposal (the proposal, built from the fit's own statistics, changes
    how fast the chain mixes, never what it samples), so its draws serve the accountant and the
    synthetic data. Each state costs one log density and no gradient; a proposal close to the
    posterior (the log-concave GLM parts, whose Laplace approximation is near exact) accepts
    most moves. When an acceptance rate falls below :data:`IMH_MIN_ACCEPTANCE`, or the
    ratios' Pareto :math:`\hat k` exceeds :func:`laplace_khat_max` (heavy-tailed ratios,
    where the chain would stick), None is returned and the caller runs NUTS; a first chain that
    accepts fewer than :data:`PROBE_ACCEPTANCE` of its first :data:`PROBE` moves ends the
    attempt before the other proposals' densities are computed (a chain that passes is the
    same either way). The tree has
    ``posterior`` and ``sample_stats`` (``diverging`` all False, ``n_steps`` 1 and
    ``accepted`` per draw; the attribute ``acceptance_rate``)."""
    size = tune + draws
    if chains * size < LAPLACE_MIN_DRAWS:
        return None
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((chains, size, x0.size))
    log_u = np.log(rng.uniform(size=(chains, size)))

    def probe(first):  # the first chain's first PROBE moves
        return _imh_chain(first, log_u[0, : first.size])[1][1:].mean() >= PROBE_ACCEPTANCE

    proposed = _proposals(part, stats, x0, L, z, probes=[(min(PROBE, size), probe)])
    if proposed is None or proposed[1] is None:
        return None
    if not proposed[3] <= laplace_khat_max(chains * size):
        return None
    x, log_ratio, _, khat = proposed
    index = np.empty((chains, size), dtype=np.int64)
    accepted = np.zeros((chains, size), dtype=bool)
    for c in range(chains):
        index[c], accepted[c] = _imh_chain(log_ratio[c], log_u[c])
    rate = accepted[:, 1:].mean(axis=1)
    if float(rate.min()) < IMH_MIN_ACCEPTANCE:
        return None
    kept = np.take_along_axis(x, index[:, tune:, None], axis=1).reshape(chains * draws, -1)
    tree = _packed_tree(part, kept, draws, chains)
    coords = {"chain": np.arange(chains), "draw": np.arange(draws)}
    tree["sample_stats"] = xr.DataTree(xr.Dataset(
        {
            "diverging": (("chain", "draw"), np.zeros((chains, draws), dtype=bool)),
            "n_steps": (("chain", "draw"), np.ones((chains, draws))),
            "accepted": (("chain", "draw"), accepted[:, tune:]),
        },
        coords=coords,
        attrs={"acceptance_rate": rate.tolist(), "laplace_khat": khat},
    ))  # fmt: skip
    return tree


def _exact_tree(part: Part, stats: Stats, draws: int, chains: int, seed: int) -> xr.DataTree:
    rng = np.random.default_rng(seed)
    return _tree(part, part.exact_draws(stats, draws * chains, rng), draws, chains)


def _tree(part: Part, flat: dict, draws: int, chains: int) -> xr.DataTree:
    """A ``posterior``-only DataTree of flat draws (chain-major, first axis chains x draws)."""
    dims, coords = part.dims(), part.coords()
    data = {}
    for name, v in flat.items():
        d = dims.get(name, tuple(f"{name}_dim_{j}" for j in range(v.ndim - 1)))
        data[name] = (("chain", "draw", *d), v.reshape(chains, draws, *v.shape[1:]))
    used = {d for name in data for d in data[name][0]}
    post = xr.Dataset(
        data,
        coords={
            "chain": np.arange(chains),
            "draw": np.arange(draws),
            **{k: v for k, v in coords.items() if k in used},
        },
    )
    return xr.DataTree.from_dict({"posterior": post})


def sample_part(
    part: Part,
    stats: Stats,
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    progress: bool = False,
) -> xr.DataTree:
    """One-off fit of ``part`` given ``stats`` (see :class:`PartSampler`)."""
    return PartSampler(part, stats).sample(
        stats, draws=draws, tune=tune, chains=chains, seed=seed, progress=progress
    )
