r"""The risk-utility frontier from one fit: what each weight setting would give, before refitting.

The weights of the pseudo posterior mechanism are
:math:`\alpha_i = \mathrm{clip}(c(1 - r_i) + g, 0, 1)` (:mod:`pseudopost.risk.weights`):
the ``scale`` c and the ``shift`` g move epsilon, utility and disclosure together.
:func:`frontier` estimates all three for a grid of (c, g) from the draws of one fit, by
Pareto-smoothed importance sampling (PSIS) where the Pareto :math:`\hat k` allows and by a refit
where it does not; :func:`plot_frontier` draws epsilon against utility, coloured by disclosure.

Importance ratio. The fit's draws :math:`\theta_m` are of the pseudo posterior
:math:`\xi^{\alpha^*}(\theta\mid x) \propto \prod_i p(x_i\mid\theta)^{\alpha^*_i}\xi(\theta)`,
with :math:`\alpha^* = \alpha` (unrestricted, range-truncated) or
:math:`\lambda + (1 - \lambda)\alpha` (range-averaged;
:meth:`~pseudopost.privacy.decomposition.Decomposition.fit_weights`). The pseudo posterior of
new weights :math:`\alpha'` differs by the factor
:math:`\prod_i p(x_i\mid\theta)^{\alpha'^*_i - \alpha^*_i}` up to a constant, so

.. math:: \log w_m = \sum_i (\alpha'^*_i - \alpha^*_i)\, f_{\theta_m}(x_i),

:math:`f = \log p(x_i\mid\theta)`, the record log-likelihood of the fit
(:func:`~pseudopost.privacy.lipschitz.reduce_sum`, as the calibration to a target epsilon does,
:mod:`pseudopost.privacy.calibration`, which is the scale-only case of this).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_frame, check_positive, check_positive_int
from pseudopost.evaluate.disclosure_tables import disclosure_measures
from pseudopost.evaluate.membership import membership_inference
from pseudopost.evaluate.propensity import propensity_utility
from pseudopost.evaluate.table_utility import utility_tables
from pseudopost.fitting.importance import psis_log_weights, systematic_resample
from pseudopost.mechanisms.pseudo_posterior import PseudoPosterior, PseudoPosteriorResult
from pseudopost.models.custom import PyMCModel
from pseudopost.models.loglik import stack_draws
from pseudopost.privacy.accountant import account, sensitive_function
from pseudopost.privacy.calibration import KHAT_MAX
from pseudopost.privacy.decomposition import RangeAveraged, RangeTruncated, Unrestricted
from pseudopost.privacy.fused import record_function
from pseudopost.privacy.lipschitz import local_epsilon, reduce_sum
from pseudopost.risk.ranges import ArrayRange
from pseudopost.risk.weights import risk_summary, weights_from_risk

__all__ = ["FRONTIER_COLUMNS", "frontier", "plot_frontier"]

#: the columns of every frontier, in order (the measures asked for follow ``S_pMSE``)
FRONTIER_COLUMNS = ("scale", "shift", "epsilon", "S_pMSE", "method", "khat", "ess",
                    "weight_total")  # fmt: skip
#: disclosure measures a frontier may carry, in the order :func:`plot_frontier` colours by
DISCLOSURE_COLUMNS = ("DiSCO", "repU", "mia_advantage")
#: permutations of the CART S_pMSE's null (as the release report's utility table)
_NPERMS = 20


def frontier(
    result: PseudoPosteriorResult,
    scales: Sequence[float] | float | None = None,
    shifts: Sequence[float] | float | None = None,
    *,
    data: pd.DataFrame | None = None,
    datasets: int = 1,
    keys: Sequence[str] | None = None,
    target: str | None = None,
    ngroups: int | None = 5,
    holdout: pd.DataFrame | None = None,
    khat_max: float = KHAT_MAX,
    refit: bool = True,
    tune: int | None = None,
    seed: SeedLike = None,
) -> pd.DataFrame:
    r"""Epsilon, utility and disclosure of the release each weight setting (c, g) would give.

    For every pair of the grid ``scales`` x ``shifts``, the weights
    :math:`\alpha'_i = \mathrm{clip}(c(1 - r_i) + g, 0, 1)` are computed from the fit's own
    risks :math:`r_i` (same risk summary and normalisation as the fit:
    ``pseudopost.risk.weights.weights_from_risk``), and the fit's weighted draws are moved
    to them by PSIS with log ratio (module docstring)

    .. math:: \log w_m = \sum_i (\alpha'^*_i - \alpha^*_i)\, f_{\theta_m}(x_i).

    **k-hat rule.** The Pareto :math:`\hat k` of the smoothed weights says whether they can be
    trusted (Vehtari, Simpson, Gelman, Yao & Gabry 2024, *Pareto smoothed importance
    sampling*, JMLR 25): below ``khat_max`` (0.7, the calibration's rule) the point is
    estimated from the fit's draws (``method="psis"``); otherwise the mechanism is refitted
    with the weights :math:`\alpha'` (``method="refit"``, ``fit(weights=alpha')``, so the
    refit differs from the estimate only by the draws, not by the risk step), or, with
    ``refit=False``, the row's measures are NaN (``method="none"``).

    **Epsilon** is the accountant's, :math:`\varepsilon = 2\max_i c_i\max_m|g_{\theta_m}(x_i)|`
    with the record coefficient :math:`c_i` and sensitive part g of the fit's decomposition
    (``pseudopost.privacy.accountant.account``): the *local* epsilon, for this database
    and its add/remove-one neighbours, asymptotic (Savitsky, Williams & Hu 2022, Theorem 3),
    per synthetic dataset. A maximum is not an expectation, so it is not a weighted mean of the
    draws: it is taken over a systematic resample of the draws by their PSIS weights (as many
    equally weighted draws as the fit has, as the calibration does), which is a sample of the
    new pseudo posterior as the fit's draws are of its own. With the fit's draw exclusion
    (``exclude_quantile``), the same rule is applied to the resample. At the fit's own weights
    the ratio is constant, the resample is every draw once and epsilon is the fit's exactly.

    **Utility and disclosure** of ``datasets`` synthetic datasets per setting, each drawn
    under one draw of the resample (of the refit), without replacement, by the fit's own
    synthesis (partially synthetic: the predictors of a ready model are kept as given),
    averaged over the datasets: ``S_pMSE`` (CART propensity score, two-sample null from
    20 label permutations: :func:`~pseudopost.evaluate.propensity.propensity_utility`; about 1
    is as close as a fresh sample), ``table_S_pMSE`` (median S_pMSE of the two-way tables,
    :func:`~pseudopost.evaluate.table_utility.utility_tables`; data of at least two columns);
    with ``keys`` and ``target``, ``repU`` and ``DiSCO`` in % of the records
    (:func:`~pseudopost.evaluate.disclosure_tables.disclosure_measures`); with ``holdout``,
    ``mia_advantage``, the DOMIAS membership-inference advantage
    :math:`|2\,\mathrm{AUC} - 1|` (:func:`~pseudopost.evaluate.membership.membership_inference`,
    members the data, non-members the holdout).

    Parameters
    ----------
    result : PseudoPosteriorResult
        One in-memory fit of :class:`~pseudopost.PseudoPosterior`, unrestricted,
        range-truncated or range-averaged. Not: censored fits (their epsilon is 2B at every
        setting), Lipschitz re-weighted fits (the release re-weights after a fit), whole-file
        fits (``likelihood="parts"``) and Dask results.
    scales, shifts : float or sequence of float, optional
        The grid's c (> 0) and g (finite, c + g > 0); default the fit's own.
    data : pandas.DataFrame, optional
        The confidential data the result was fitted on (checked: the model must prepare them
        to the fit's arrays); default the fit's own records rebuilt by its model.
    datasets : int, default 1
        Synthetic datasets per setting for the utility and disclosure measures.
    keys, target : optional
        Columns of the intruder's keys and target for repU and DiSCO. For a single-outcome
        model: the predictors and the outcome. The predictors are kept as given, so with keys
        among them only, repU equals the share of real uniques (UiO) at every setting; DiSCO is
        the informative one.
    ngroups : int or None, default 5
        Numeric keys and target are grouped into this many groups first (synthpop's
        ``ngroups_keys``/``ngroups_target``; a continuous value is otherwise unique to its
        record); None: no grouping.
    holdout : pandas.DataFrame, optional
        Records of the same population not in the fit, for ``mia_advantage``.
    khat_max : float, default 0.7
        The largest k-hat at which PSIS is trusted.
    refit : bool, default True
        Refit the settings whose k-hat is ``khat_max`` or more.
    tune : int, optional
        Tuning steps of a refit (default: as many as the fit's draws per chain); draws and
        chains are the fit's.
    seed : int, Generator or None
        All randomness (resampling offsets, synthesis, CART permutations, refits); the same
        seed gives the same frame.

    Returns
    -------
    pandas.DataFrame
        One row per setting, scales varying slowest: ``scale``, ``shift``, ``epsilon``,
        ``S_pMSE``, ``table_S_pMSE`` (if any), ``repU`` and ``DiSCO`` (if asked),
        ``mia_advantage`` (if asked), ``method`` (``"psis"``, ``"refit"`` or ``"none"``),
        ``khat``, ``ess`` (the PSIS effective sample size :math:`1/\sum_m w_m^2`) and
        ``weight_total`` (:math:`\sum_i\alpha'_i`). ``attrs`` hold the fit's epsilon,
        ``khat_max`` and the decomposition.
    """
    ctx = _Context.checked(result, data, keys, target, ngroups, holdout)
    grid = _grid(result, scales, shifts)
    datasets = check_positive_int(datasets, "datasets")
    if datasets > ctx.shape[0] * ctx.shape[1]:
        raise ValueError(
            f"'datasets'={datasets} exceeds the fit's {ctx.shape[0] * ctx.shape[1]} draws."
        )
    khat_max = check_positive(khat_max, "khat_max")
    if not isinstance(refit, bool):
        raise TypeError(f"The 'refit' argument must be True or False. Got {refit!r}.")
    tune = ctx.shape[1] if tune is None else check_positive_int(tune, "tune", minimum=0)
    rng = as_generator(seed)
    # per row, whatever its method: resampling offset, synthesis, measures, refit
    seeds = rng.integers(0, 2**31 - 1, size=(len(grid), 4))
    ctx.load()  # every input checked: the work starts here

    rows = []
    for (c, g), row_seeds in zip(grid, seeds, strict=True):
        alpha = weights_from_risk(ctx.risk, ctx.summary, c, g)
        khat, lw = ctx.psis(alpha)
        row = {"scale": c, "shift": g}
        if khat < khat_max:
            u = float(as_generator(int(row_seeds[0])).uniform())
            epsilon, frames = ctx.estimate(alpha, lw, u, datasets, int(row_seeds[1]))
            method = "psis"
        elif refit:
            epsilon, frames = ctx.refit(alpha, c, g, datasets, tune, int(row_seeds[3]))
            method = "refit"
        else:
            epsilon, frames, method = float("nan"), [], "none"
        row["epsilon"] = epsilon
        row.update(ctx.measures(frames, int(row_seeds[2])))
        ess = 1.0 / float(np.sum(np.exp(2.0 * lw))) if lw is not None else float("nan")
        row.update(method=method, khat=khat, ess=ess, weight_total=float(alpha.sum()))
        rows.append(row)
    out = pd.DataFrame(rows)
    measured = [c for c in ("table_S_pMSE", *DISCLOSURE_COLUMNS) if c in out]
    out = out[[*FRONTIER_COLUMNS[:4], *measured, *FRONTIER_COLUMNS[4:]]]
    out.attrs.update(
        fit_epsilon=result.epsilon, khat_max=khat_max, decomposition=ctx.decomposition.name,
        neighbouring_relation=result.privacy_statement.neighbouring,
    )  # fmt: skip
    return out


def _values(value, name: str) -> list[float]:
    vals = [value] if np.ndim(value) == 0 else list(value)
    if not vals:
        raise ValueError(f"'{name}' must hold at least one value. Got {value!r}.")
    out = []
    for j, v in enumerate(vals):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise TypeError(f"'{name}'[{j}] must be a real number. Got {v!r}.") from None
        if not np.isfinite(x):
            raise ValueError(f"'{name}'[{j}] must be finite. Got {v!r}.")
        out.append(x)
    return out


def _grid(result, scales, shifts) -> list[tuple[float, float]]:
    attrs = result.datatree["privacy"].attrs
    cs = _values(float(attrs["scale"]) if scales is None else scales, "scales")
    gs = _values(float(attrs["shift"]) if shifts is None else shifts, "shifts")
    for j, c in enumerate(cs):
        if c <= 0:
            raise ValueError(f"'scales'[{j}] must be > 0 (the weights' c). Got {c}.")
    grid = [(c, g) for c in cs for g in gs]
    for c, g in grid:
        if c + g <= 0:
            raise ValueError(
                f"scale={c} and shift={g} make every weight 0 (alpha_i <= c + g = {c + g}); "
                f"every pair of 'scales' and 'shifts' must have scale + shift > 0."
            )
    return grid


class _Context:
    """What every setting of one frontier shares: the fit's draws, weights, record functions,
    decomposition and data (read once, validated before any work)."""

    @classmethod
    def checked(cls, result, data, keys, target, ngroups, holdout) -> _Context:
        if not isinstance(result, PseudoPosteriorResult):
            raise TypeError(
                "The 'result' argument must be an in-memory PseudoPosteriorResult (the fit of "
                f"pseudopost.PseudoPosterior). Got {type(result).__name__}."
            )
        attrs = result.datatree["privacy"].attrs
        refused = None
        if result.likelihood == "parts":
            refused = "a whole-file fit (likelihood='parts') is not supported yet"
        elif attrs.get("decomposition") == "censored":
            refused = (
                "a censored fit's epsilon is 2B whatever the weights; its frontier in epsilon is "
                "flat (refit with another censor_epsilon instead)"
            )
        elif int(attrs.get("reweight", 0)):
            refused = (
                "a Lipschitz re-weighted fit's weights come from a first weighted fit's bounds, "
                "not from (scale, shift) alone"
            )
        if refused is not None:
            raise ValueError(f"frontier: {refused}.")
        self = cls()
        self.result = result
        self.model = result.model
        observed = {o: result.prepared.arrays[o] for o in result.model.observed}
        rebuilt = result.model.to_frame(result.prepared, observed)
        # what a refit's fit() is given: a user's PyMC model holds its own data
        holds = isinstance(result.model, PyMCModel)
        if holds and data is not None:
            raise ValueError(
                "frontier: the result's PyMCModel holds its own data; call it without 'data'."
            )
        self.data = None if holds else rebuilt if data is None else check_frame(data, "data")
        self._check_data(data is None)
        self.real = (rebuilt if self.data is None else self.data)[list(result.model.columns)]
        self._check_measures(keys, target, ngroups, holdout)
        self.keys, self.target, self.ngroups, self.holdout = keys, target, ngroups, holdout
        post = result.posterior
        self.shape = (post.sizes["chain"], post.sizes["draw"])
        self.risk = result.risk.to_numpy()
        self.normalisation = str(attrs["normalisation"])
        self.summary = risk_summary(self.risk, self.normalisation)
        self.alpha = result.alpha.to_numpy()
        q = float(attrs.get("exclude_quantile", -1.0))
        self.exclude = None if q < 0 or q >= 1 else q
        self.range, self.decomposition = self._decomposition(result, attrs)
        return self

    def load(self) -> None:
        """The fit's flat draws, its record log-likelihood f and sensitive part g (the
        accountant's, :func:`~pseudopost.privacy.accountant.sensitive_function`), and
        :math:`\\sum_i \\alpha^*_i f_{\\theta_m}(x_i)` per draw."""
        result = self.result
        self.draws = stack_draws(result.posterior, [rv.name for rv in result.built.free_RVs])
        self.loglik = record_function(result.model, result.built)
        self.sensitive = sensitive_function(
            self.decomposition, result.model, result.built, self.loglik
        )
        self.fitted_total = reduce_sum(
            self.loglik, self.draws, self.decomposition.fit_weights(self.alpha)
        )

    def _check_data(self, rebuilt: bool) -> None:
        prepared = self.result.prepared
        mine = self.model.prepare(self.data)
        same = mine.n == prepared.n and all(
            np.array_equal(mine.arrays[k], v, equal_nan=True) for k, v in prepared.arrays.items()
        )
        if not same:
            what = "the fit's records rebuilt by its model" if rebuilt else "'data'"
            if self.data is None:
                what = "the data the PyMCModel holds now"
            raise ValueError(
                f"frontier: {what} are not the data the result was fitted on (the model "
                f"prepares them to other values); pass the data given to fit() as 'data'."
            )

    def _check_measures(self, keys, target, ngroups, holdout) -> None:
        cols = list(self.real.columns)
        if (keys is None) != (target is None):
            raise ValueError(
                "frontier: repU and DiSCO need both 'keys' and 'target' (or neither). "
                f"Got keys={keys!r}, target={target!r}."
            )
        if keys is not None:
            if isinstance(keys, str):
                raise TypeError(f"'keys' must be a sequence of column names; use [{keys!r}].")
            bad = [k for k in [*keys, target] if k not in cols]
            if bad:
                raise ValueError(f"'keys'/'target' name {bad}, not columns of the data {cols}.")
            if target in keys:
                raise ValueError(f"'target'={target!r} is also one of the 'keys' {list(keys)}.")
        if ngroups is not None:
            check_positive_int(ngroups, "ngroups", minimum=2)
        if holdout is not None:
            check_frame(holdout, "holdout")
            missing = [c for c in cols if c not in holdout.columns]
            if missing:
                raise ValueError(f"'holdout' lacks the data's column(s) {missing}.")

    @staticmethod
    def _decomposition(result, attrs):
        name = attrs["decomposition"]
        if name == "weighted":
            return None, Unrestricted()
        privacy = result.datatree["privacy"]
        bounds = privacy["range_lower"].to_numpy(), privacy["range_upper"].to_numpy()
        if name == "truncated":
            return bounds, RangeTruncated(*bounds)
        return bounds, RangeAveraged(result.lambda_.to_numpy())

    def psis(self, alpha: np.ndarray) -> tuple[float, np.ndarray | None]:
        """(k-hat, PSIS log weights) of moving the fit's draws to weights ``alpha``."""
        new = reduce_sum(self.loglik, self.draws, self.decomposition.fit_weights(alpha))
        try:
            lw, khat = psis_log_weights(new - self.fitted_total, self.shape)
        except ValueError:  # too short a tail to fit a Pareto: not to be trusted
            return float("inf"), None
        return (float("inf"), None) if not np.isfinite(khat) else (khat, lw)

    def estimate(self, alpha, lw, u, datasets, seed) -> tuple[float, list[pd.DataFrame]]:
        """Epsilon on the systematic resample by the PSIS weights, and datasets drawn under
        draws of it (the fit's draw exclusion applied to the resample)."""
        idx = systematic_resample(lw, u)
        draws = {k: v[idx] for k, v in self.draws.items()}
        acc = account(self.sensitive, draws, alpha, self.decomposition)
        kept = np.ones(idx.size, dtype=bool)
        if self.exclude is not None:
            kept = acc.per_draw <= np.quantile(acc.per_draw, self.exclude)
            acc = account(
                self.sensitive, {k: v[kept] for k, v in draws.items()}, alpha, self.decomposition
            )
        rng = as_generator(seed)
        chosen = np.sort(idx[rng.choice(np.flatnonzero(kept), size=datasets, replace=False)])
        frames = self.result.synthesize_draws(chosen, int(rng.integers(2**31 - 1)))
        return local_epsilon(acc.lipschitz), frames

    def refit(self, alpha, c, g, datasets, tune, seed) -> tuple[float, list[pd.DataFrame]]:
        """The mechanism refitted with the weights ``alpha`` (its risk step is run but not
        used), and ``datasets`` of its synthetic datasets."""
        attrs = self.result.datatree["privacy"].attrs
        kw = {"normalisation": self.normalisation, "exclude_quantile": self.exclude,
              "likelihood": self.result.likelihood}  # fmt: skip
        if self.range is not None:
            kw.update(sensitive_range=ArrayRange(*self.range),
                      range_method=str(attrs["decomposition"]))  # fmt: skip
        mech = PseudoPosterior(self.model, c, g, **kw)
        rng = as_generator(seed)
        fit = mech.fit(
            self.data, draws=self.shape[1], tune=tune, chains=self.shape[0],
            seed=int(rng.integers(2**31 - 1)), weights=alpha, progress=False,
        )  # fmt: skip
        return fit.epsilon, fit.synthesize_datasets(datasets, int(rng.integers(2**31 - 1)))

    def measures(self, frames: list[pd.DataFrame], seed: int) -> dict[str, float]:
        """Utility and disclosure of ``frames`` against the data, averaged over the frames."""
        names = ["S_pMSE"]
        if self.real.shape[1] >= 2:
            names.append("table_S_pMSE")
        if self.keys is not None:
            names += ["repU", "DiSCO"]
        if self.holdout is not None:
            names.append("mia_advantage")
        if not frames:
            return dict.fromkeys(names, float("nan"))
        rows = []
        for j, syn in enumerate(frames):
            syn = syn[list(self.real.columns)]
            row = {"S_pMSE": propensity_utility(
                self.real, syn, method="cart", nperms=_NPERMS, seed=seed + j).S_pMSE}  # fmt: skip
            if "table_S_pMSE" in names:
                tabs = utility_tables(self.real, syn, tables="twoway")
                row["table_S_pMSE"] = float(tabs["S_pMSE"].median())
            if self.keys is not None:
                d = disclosure_measures(
                    self.real, syn, list(self.keys), self.target,
                    ngroups_keys=self.ngroups, ngroups_target=self.ngroups,
                )  # fmt: skip
                row.update(repU=d.repU, DiSCO=d.DiSCO)
            if self.holdout is not None:
                cols = list(self.real.columns)
                mia = membership_inference(self.real, self.holdout[cols], syn, attack="domias")
                row["mia_advantage"] = mia.advantage
            rows.append(row)
        return {k: float(np.mean([r[k] for r in rows])) for k in names}


def plot_frontier(
    frame: pd.DataFrame,
    *,
    utility: str = "S_pMSE",
    color: str | None = None,
    title: str = "",
    ax=None,
):
    """Epsilon against utility, one point per setting of :func:`frontier`, coloured by a
    disclosure measure (default the first of DiSCO, repU and mia_advantage in ``frame``; none
    if it has none); circles are PSIS estimates, squares refits, each labelled ``c, g``.
    Returns the axes."""
    import matplotlib.pyplot as plt

    if not isinstance(frame, pd.DataFrame) or not {"epsilon", "method"} <= set(frame.columns):
        raise TypeError("'frame' must be the DataFrame returned by pseudopost.evaluate.frontier.")
    if utility not in frame.columns:
        raise ValueError(f"'utility'={utility!r} is not a column of the frontier {list(frame)}.")
    if color is None:
        color = next((c for c in DISCLOSURE_COLUMNS if c in frame.columns), None)
    elif color not in frame.columns:
        raise ValueError(f"'color'={color!r} is not a column of the frontier {list(frame)}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4.0))
    vmin = vmax = None
    if color is not None:
        vmin, vmax = np.nanmin(frame[color]), np.nanmax(frame[color])
    points = None
    for method, marker in (("psis", "o"), ("refit", "s")):
        part = frame[frame["method"] == method]
        if part.empty:
            continue
        colors = part[color] if color is not None else None
        points = ax.scatter(
            part["epsilon"], part[utility], c=colors, marker=marker, vmin=vmin, vmax=vmax,
            cmap="viridis" if color is not None else None, edgecolors="black", linewidths=0.5,
            label=method,
        )  # fmt: skip
    for _, r in frame.iterrows():
        if np.isfinite(r["epsilon"]) and np.isfinite(r[utility]):
            ax.annotate(f"{r['scale']:g}, {r['shift']:g}", (r["epsilon"], r[utility]),
                        textcoords="offset points", xytext=(4, 4), fontsize=7)  # fmt: skip
    if color is not None and points is not None:
        ax.figure.colorbar(points, ax=ax, label=color)
    ax.set_xlabel("local epsilon (per synthetic dataset)")
    closer = "about 1: as close as a fresh sample" if "S_pMSE" in utility else "lower is closer"
    ax.set_ylabel(f"{utility} ({closer})")
    legend = ax.legend(title="method", fontsize=8)
    for handle in legend.legend_handles:  # the marker says the method; the colour does not
        handle.set_array(None)  # a colour-mapped handle is re-coloured from its array at draw
        handle.set_facecolor("white")
    ax.set_title(title)
    return ax
